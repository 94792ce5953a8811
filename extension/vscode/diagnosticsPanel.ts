/**
 * The report panels (WebviewPanelHost: strict CSP, `ready` handshake, every message validated by PANEL_PROTOCOL):
 * - the diagnostics panel ("GPU-MPI Doctor") shows the host inspection the service holds and follows it;
 * - the guard panel ("GPU-MPI Guard") shows the last guarded run's result, in its own tab: a result about a program
 *   never replaces a host's inspection (nor its status bar item, Problems entries or Hosts row).
 * Both answer copy / openEvidence / rerun for the report they show.
 */
import * as vscode from 'vscode';
import { evidenceTarget } from '../shared/findingLocations';
import { escapeHtml } from '../shared/htmlEscape';
import { toolbarAndContent } from '../shared/webviewHtml';
import { PANEL_PROTOCOL, type PanelRequests, type ToWebviewMessage } from '../shared/protocol';
import type { RenderStrings } from '../shared/render';
import type { Report } from '../shared/report';
import type { Logger } from '../core/logger';
import { Disposable } from './dispose';
import type { InspectionChange, InspectionService } from './inspectionService';
import { WebviewPanelHost } from './webviewPanelHost';

/** The panels' view types (also what a future serializer registers). */
export const DIAGNOSTICS_VIEW_TYPE = 'gpumpiDoctor.diagnostics';
export const GUARD_VIEW_TYPE = 'gpumpiDoctor.guardResult';

/** Which report a panel shows: the service's inspection, or a guarded run's result it was handed. */
type PanelRole = { kind: 'inspection' } | { kind: 'guard'; report: Report; rerun: () => void };

/** One report panel of this window (one per role). */
export class DiagnosticsPanel extends Disposable {
	private static _current: DiagnosticsPanel | undefined;
	private static _guard: DiagnosticsPanel | undefined;
	private readonly _host: WebviewPanelHost<ToWebviewMessage, PanelRequests>;
	/** A finding to reveal once the webview is ready (asked for before it loaded). */
	private _pendingReveal: number | undefined;

	/** Show the inspection panel (creating it when needed). */
	static show(extensionUri: vscode.Uri, service: InspectionService, log: Logger): DiagnosticsPanel {
		if (DiagnosticsPanel._current) {
			DiagnosticsPanel._current._host.reveal();
			return DiagnosticsPanel._current;
		}
		DiagnosticsPanel._current = new DiagnosticsPanel(extensionUri, service, log, { kind: 'inspection' });
		return DiagnosticsPanel._current;
	}

	/** Show a guarded run's result in the guard panel (its own tab; the inspection panel is left as it is). */
	static showGuard(extensionUri: vscode.Uri, service: InspectionService, log: Logger, report: Report, rerun: () => void): DiagnosticsPanel {
		const open = DiagnosticsPanel._guard;
		if (open) {
			open._role = { kind: 'guard', report, rerun };
			open._host.reveal();
			open._host.post({ type: 'showReport', report });
			return open;
		}
		DiagnosticsPanel._guard = new DiagnosticsPanel(extensionUri, service, log, { kind: 'guard', report, rerun });
		return DiagnosticsPanel._guard;
	}

	/** The open inspection panel, if any (tests). */
	static get current(): DiagnosticsPanel | undefined { return DiagnosticsPanel._current; }
	/** The open guard panel, if any (tests). */
	static get guard(): DiagnosticsPanel | undefined { return DiagnosticsPanel._guard; }

	private constructor(extensionUri: vscode.Uri, private readonly _service: InspectionService, private readonly _log: Logger, private _role: PanelRole) {
		super();
		const guard = _role.kind === 'guard';
		this._host = this._register(new WebviewPanelHost<ToWebviewMessage, PanelRequests>(extensionUri, _log, {
			viewType: guard ? GUARD_VIEW_TYPE : DIAGNOSTICS_VIEW_TYPE,
			title: guard ? vscode.l10n.t('GPU-MPI Guard') : vscode.l10n.t('GPU-MPI Doctor'),
			bundle: 'panel',
			what: guard ? 'guard result webview' : 'diagnostics webview',
			protocol: PANEL_PROTOCOL,
			extraResourceRoots: ['media'],
			strings: panelStrings(),
			bodyHtml: toolbarAndContent(`<button type="button" id="rerun">${escapeHtml(vscode.l10n.t('Re-run'))}</button>`
				+ ` <button type="button" id="save">${escapeHtml(vscode.l10n.t('Save…'))}</button>`
				+ (guard ? '' : ` <button type="button" id="compare">${escapeHtml(vscode.l10n.t('Compare…'))}</button>`), vscode.l10n.t('Loading…')),
			handlers: {
				ready: () => {
					const reveal = this._pendingReveal;
					this._pendingReveal = undefined;
					return { type: 'readyResponse', report: this.report ?? null, busy: this._role.kind === 'inspection' && this._service.busy, ...(reveal !== undefined ? { revealFindingIndex: reveal } : {}) };
				},
				openEvidence: async msg => {
					// Indices into the report this panel shows; the host resolves the file itself, never a path from the webview.
					const report = this.report;
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
				save: async () => {
					const report = this.report;
					if (report) { await vscode.commands.executeCommand('gpumpiDoctor.saveInspection', { report }); }
				},
				compare: async () => {
					const report = this.report;
					if (report && this._role.kind === 'inspection') { await vscode.commands.executeCommand('gpumpiDoctor.compareInspections', { report }); }
				},
				rerun: () => {
					if (this._role.kind === 'guard') { this._role.rerun(); return; }
					void vscode.commands.executeCommand('gpumpiDoctor.inspectHost');
				},
			},
		}));
		this._register(this._host.onDidDispose(() => this.dispose()));
		if (!guard) { this._register(this._service.onDidChange(change => this._onServiceChange(change))); }
	}

	/** The report this panel shows (the inspection panel: the service's current one). */
	get report(): Report | undefined { return this._role.kind === 'guard' ? this._role.report : this._service.lastReport; }

	/** Whether the webview has sent `ready` since it was (re)loaded. */
	get isReady(): boolean { return this._host.isReady; }

	/** Scroll the panel to finding `index` of the shown report (now, or once the webview has loaded). */
	revealFinding(index: number): void {
		if (!this._host.post({ type: 'revealFinding', findingIndex: index })) { this._pendingReveal = index; }
	}

	override dispose(): void {
		if (DiagnosticsPanel._current === this) { DiagnosticsPanel._current = undefined; }
		if (DiagnosticsPanel._guard === this) { DiagnosticsPanel._guard = undefined; }
		super.dispose();
	}

	private _onServiceChange(change: InspectionChange): void {
		// Never posted before `ready` (WebviewPanelHost.post); the ready reply carries the state.
		if (change.kind === 'report') {
			this._host.post({ type: 'showReport', report: change.report });
		} else if (change.kind === 'busy') {
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
