/**
 * The diagnostics panel: shows the last report (WebviewPanelHost: strict CSP, `ready` handshake, every message
 * validated by PANEL_PROTOCOL), follows the inspection service, and answers copy / rerun.
 */
import * as vscode from 'vscode';
import { evidenceTarget } from '../shared/findingLocations';
import { escapeHtml } from '../shared/htmlEscape';
import { toolbarAndContent } from '../shared/webviewHtml';
import { PANEL_PROTOCOL, type PanelRequests, type ToWebviewMessage } from '../shared/protocol';
import type { RenderStrings } from '../shared/render';
import type { Logger } from '../core/logger';
import { Disposable } from './dispose';
import type { InspectionChange, InspectionService } from './inspectionService';
import { WebviewPanelHost } from './webviewPanelHost';

/** The panel's view type (also what a future serializer registers). */
export const DIAGNOSTICS_VIEW_TYPE = 'gpumpiDoctor.diagnostics';

/** The single diagnostics panel of this window. */
export class DiagnosticsPanel extends Disposable {
	private static _current: DiagnosticsPanel | undefined;
	private readonly _host: WebviewPanelHost<ToWebviewMessage, PanelRequests>;
	/** A finding to reveal once the webview is ready (asked for before it loaded). */
	private _pendingReveal: number | undefined;

	/** Show the panel (creating it when needed). */
	static show(extensionUri: vscode.Uri, service: InspectionService, log: Logger): DiagnosticsPanel {
		if (DiagnosticsPanel._current) {
			DiagnosticsPanel._current._host.reveal();
			return DiagnosticsPanel._current;
		}
		DiagnosticsPanel._current = new DiagnosticsPanel(extensionUri, service, log);
		return DiagnosticsPanel._current;
	}

	/** The open panel, if any (tests). */
	static get current(): DiagnosticsPanel | undefined { return DiagnosticsPanel._current; }

	private constructor(extensionUri: vscode.Uri, private readonly _service: InspectionService, private readonly _log: Logger) {
		super();
		this._host = this._register(new WebviewPanelHost<ToWebviewMessage, PanelRequests>(extensionUri, _log, {
			viewType: DIAGNOSTICS_VIEW_TYPE,
			title: vscode.l10n.t('GPU-MPI Doctor'),
			bundle: 'panel',
			what: 'diagnostics webview',
			protocol: PANEL_PROTOCOL,
			extraResourceRoots: ['media'],
			strings: panelStrings(),
			bodyHtml: toolbarAndContent(`<button type="button" id="rerun">${escapeHtml(vscode.l10n.t('Re-run'))}</button>`, vscode.l10n.t('Loading…')),
			handlers: {
				ready: () => {
					const reveal = this._pendingReveal;
					this._pendingReveal = undefined;
					return { type: 'readyResponse', report: this._service.lastReport ?? null, busy: this._service.busy, ...(reveal !== undefined ? { revealFindingIndex: reveal } : {}) };
				},
				openEvidence: async msg => {
					// Indices into the report this panel shows; the host resolves the file itself, never a path from the webview.
					const report = this._service.lastReport;
					const ev = report?.findings[msg.findingIndex]?.evidence[msg.evidenceIndex];
					const target = ev && report ? evidenceTarget(ev, report.raw, report.host.kind) : null;
					if (target?.kind !== 'file') {
						this._log.warn(`openEvidence: finding ${msg.findingIndex} evidence ${msg.evidenceIndex} is not a file line of this machine; ignored`);
						throw new Error('not a file line');
					}
					const line = Math.max(0, target.line - 1);
					try {
						await vscode.window.showTextDocument(vscode.Uri.file(target.path), { selection: new vscode.Range(line, 0, line, 0), viewColumn: vscode.ViewColumn.Beside, preview: true });
					} catch (e) {
						this._log.warn(`cannot open ${target.path}: ${e instanceof Error ? e.message : String(e)}`);
						void vscode.window.showWarningMessage(vscode.l10n.t('Cannot open {0}; the panel shows what the inspection read instead.', target.path));
						throw e;
					}
				},
				copy: async msg => {
					await vscode.env.clipboard.writeText(msg.text);
					this._log.debug(`copied ${msg.text.length} characters to the clipboard`);
				},
				rerun: () => { void vscode.commands.executeCommand('gpumpiDoctor.inspectHost'); },
			},
		}));
		this._register(this._host.onDidDispose(() => this.dispose()));
		this._register(this._service.onDidChange(change => this._onServiceChange(change)));
	}

	/** Whether the webview has sent `ready` since it was (re)loaded. */
	get isReady(): boolean { return this._host.isReady; }

	/** Scroll the panel to finding `index` of the shown report (now, or once the webview has loaded). */
	revealFinding(index: number): void {
		if (!this._host.post({ type: 'revealFinding', findingIndex: index })) { this._pendingReveal = index; }
	}

	override dispose(): void {
		if (DiagnosticsPanel._current === this) { DiagnosticsPanel._current = undefined; }
		super.dispose();
	}

	private _onServiceChange(change: InspectionChange): void {
		// Never posted before `ready` (WebviewPanelHost.post); the ready reply carries the state.
		if (change.kind === 'report') {
			this._host.post({ type: 'showReport', report: change.report });
		} else {
			this._host.post({ type: 'busy', busy: change.busy, message: change.message });
		}
	}
}

/** Localised strings handed to the webview as data (`<body data-strings>`), never as script. */
function panelStrings(): RenderStrings & { rerun: string; copied: string; waiting: string; copyFailed: string } {
	// Placeholders are passed through as themselves so the renderer fills them in later.
	const t = (message: string, ...args: string[]): string => vscode.l10n.t(message, ...args);
	return {
		title: t('GPU-MPI Doctor'),
		host: t('Host'),
		mpi: t('MPI'),
		cudaAware: t('CUDA-aware'),
		ucx: t('UCX'),
		ucxCuda: t('CUDA transports'),
		cudaDriver: t('CUDA driver'),
		gpus: t('GPUs'),
		noGpus: t('No GPU reported'),
		findings: t('Findings'),
		noFindings: t('No findings.'),
		severityError: t('Errors'),
		severityWarning: t('Warnings'),
		severityInfo: t('Information'),
		evidence: t('Evidence'),
		fix: t('Fix'),
		copy: t('Copy'),
		source: t('Source'),
		rawOutputs: t('Raw tool outputs'),
		exitCode: t('exit code {0}', '{0}'),
		notStarted: t('did not run: {0}', '{0}'),
		duration: t('{0} ms', '{0}'),
		notes: t('Notes'),
		stdout: t('stdout'),
		stderr: t('stderr'),
		empty: t('(empty)'),
		yes: t('yes'),
		no: t('no'),
		unknown: t('unknown'),
		createdLine: t('Created {0} by {1} {2} in {3} ms', '{0}', '{1}', '{2}', '{3}'),
		headlineBasis: t('Based on'),
		openEvidence: t('Open this line (the file, or the raw output below)'),
		rerun: t('Re-run'),
		copied: t('Copied'),
		waiting: t('No report yet. Run "GPU-MPI: Inspect Host".'),
		copyFailed: t('Copy failed'),
	};
}
