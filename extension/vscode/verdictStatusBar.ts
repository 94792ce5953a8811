/**
 * The status bar item: the verdict (shared/headline.ts) of the inspection the GPU-MPI panel shows, naming its host
 * when it is not this machine; the headline and the finding counts (the same as the panel's, the Hosts row's and
 * Problems') in the tooltip; a click opens the panel. It follows host inspections only: a guarded run or a reproducer
 * never sets it. Hidden until an inspection exists.
 */
import * as vscode from 'vscode';
import { findingCounts, findingCountsText, reportHeadline, type HeadlineVerdict } from '../shared/headline';
import type { Report } from '../shared/report';
import { UNREACHABLE_ID } from '../core/unreachable';
import { Disposable } from './dispose';
import { LOCAL_HOST_KEY } from './inspectionService';

/** The command the item runs (opens the diagnostics panel with the last report). */
export const SHOW_PANEL_COMMAND = 'gpumpiDoctor.showPanel';

const LOOK: Record<HeadlineVerdict, { icon: string; word: string; background?: string }> = {
	'works': { icon: '$(pass)', word: 'GPU buffers work' },
	'fails': { icon: '$(error)', word: 'GPU buffers fail', background: 'statusBarItem.errorBackground' },
	'at-risk': { icon: '$(warning)', word: 'GPU buffers at risk', background: 'statusBarItem.warningBackground' },
	'not-checked': { icon: '$(question)', word: 'not checked' },
};

/** What the item shows for a report (pure apart from the l10n call; tests read it through the API). */
export interface VerdictItemState { text: string; tooltip: string; verdict: HeadlineVerdict; host: string }

/** `local`: the report is this machine's (the host is not named in the text then). */
export function verdictItemState(report: Report, local: boolean): VerdictItemState {
	const h = report.headline && typeof report.headline.text === 'string' ? report.headline : reportHeadline(report);
	const unreachable = report.findings.some(f => f.id === UNREACHABLE_ID);
	const look = LOOK[h.verdict] ?? LOOK['not-checked'];
	const word = unreachable ? vscode.l10n.t('cannot reach') : vscode.l10n.t(look.word);
	const host = report.host.kind === 'local' ? report.summary?.hostname || report.host.label : report.host.label || report.summary?.hostname;
	const when = new Date(report.createdAt);
	const at = Number.isNaN(when.getTime()) ? report.createdAt : when.toLocaleString();
	return {
		verdict: h.verdict,
		host,
		text: `${unreachable ? '$(debug-disconnect)' : look.icon} ${local ? vscode.l10n.t('GPU-MPI: {0}', word) : vscode.l10n.t('GPU-MPI {0}: {1}', host, word)}`,
		tooltip: `${host} (${at}): ${h.text}\n${findingCountsText(findingCounts(report.findings))}\n${vscode.l10n.t('Click to open the GPU-MPI panel.')}`,
	};
}

export class VerdictStatusBar extends Disposable {
	private readonly _item = this._register(vscode.window.createStatusBarItem('gpumpiDoctor.verdict', vscode.StatusBarAlignment.Left, 50));
	private _state: VerdictItemState | undefined;

	constructor() {
		super();
		this._item.name = vscode.l10n.t('GPU-MPI Doctor verdict');
		this._item.command = SHOW_PANEL_COMMAND;
	}

	/** What the item shows now; undefined while hidden (tests). */
	get state(): VerdictItemState | undefined { return this._state; }

	/** Show the inspection of host `key` (LOCAL_HOST_KEY is this machine). */
	update(report: Report, key: string): void {
		const state = verdictItemState(report, key === LOCAL_HOST_KEY);
		this._state = state;
		this._item.text = state.text;
		this._item.tooltip = state.tooltip;
		const bg = LOOK[state.verdict]?.background;
		this._item.backgroundColor = bg ? new vscode.ThemeColor(bg) : undefined;
		this._item.accessibilityInformation = { label: `GPU-MPI Doctor: ${state.tooltip}` };
		this._item.show();
	}
}
