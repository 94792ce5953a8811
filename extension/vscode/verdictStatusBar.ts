/**
 * The status bar item with the last verdict (shared/headline.ts) of the host inspected last: an icon and the verdict
 * in a word, the headline and host in the tooltip, a click opens the GPU-MPI panel. Hidden until a report exists.
 */
import * as vscode from 'vscode';
import { reportHeadline, type HeadlineVerdict } from '../shared/headline';
import type { Report } from '../shared/report';
import { Disposable } from './dispose';

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

export function verdictItemState(report: Report): VerdictItemState {
	const h = report.headline && typeof report.headline.text === 'string' ? report.headline : reportHeadline(report);
	const look = LOOK[h.verdict] ?? LOOK['not-checked'];
	const host = report.summary?.hostname || report.host.label;
	const when = new Date(report.createdAt);
	const at = Number.isNaN(when.getTime()) ? report.createdAt : when.toLocaleString();
	return {
		verdict: h.verdict,
		host,
		text: `${look.icon} ${vscode.l10n.t('GPU-MPI: {0}', vscode.l10n.t(look.word))}`,
		tooltip: `${host} (${at}): ${h.text}\n${vscode.l10n.t('Click to open the GPU-MPI panel.')}`,
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

	update(report: Report): void {
		const state = verdictItemState(report);
		this._state = state;
		this._item.text = state.text;
		this._item.tooltip = state.tooltip;
		const bg = LOOK[state.verdict]?.background;
		this._item.backgroundColor = bg ? new vscode.ThemeColor(bg) : undefined;
		this._item.accessibilityInformation = { label: `GPU-MPI Doctor: ${state.tooltip}` };
		this._item.show();
	}
}
