/**
 * The Problems panel and its quick fixes: every finding of the last report of this machine whose evidence is a line
 * of a file here (shared/findingLocations.ts) becomes a vscode.Diagnostic; the code actions on it set or comment out
 * the MCA parameter line, copy the finding's fix command, or show the finding in the GPU-MPI panel. Reports of SSH
 * hosts and bundles give no diagnostics (their files are not on this machine); a new report replaces the old ones.
 */
import * as vscode from 'vscode';
import { diagnosticsOf, type DiagnosticSpec } from '../shared/findingLocations';
import type { Report, Severity } from '../shared/report';
import type { Logger } from '../core/logger';
import { Disposable } from './dispose';

/** What our diagnostics carry as `source` (code actions pick ours by it). */
export const DIAGNOSTIC_SOURCE = 'GPU-MPI Doctor';
/** Internal commands the code actions run (not in the palette). */
export const SHOW_FINDING_COMMAND = 'gpumpiDoctor.showFinding';
export const COPY_FIX_COMMAND = 'gpumpiDoctor.copyFixCommand';

const SEVERITY: Record<Severity, vscode.DiagnosticSeverity> = {
	error: vscode.DiagnosticSeverity.Error,
	warning: vscode.DiagnosticSeverity.Warning,
	info: vscode.DiagnosticSeverity.Information,
};

/** One diagnostic collection following the inspection service's reports, and the code actions on it. */
export class FindingDiagnostics extends Disposable implements vscode.CodeActionProvider {
	static readonly providedCodeActionKinds = [vscode.CodeActionKind.QuickFix];
	private readonly _collection = this._register(vscode.languages.createDiagnosticCollection('gpumpiDoctor'));
	/** The specs behind each diagnostic (code actions read their edits). */
	private readonly _specs = new WeakMap<vscode.Diagnostic, DiagnosticSpec>();
	private _count = 0;

	constructor(private readonly _log: Logger) {
		super();
		this._register(vscode.languages.registerCodeActionsProvider({ scheme: 'file' }, this, { providedCodeActionKinds: FindingDiagnostics.providedCodeActionKinds }));
	}

	/** How many diagnostics are shown now (tests). */
	get count(): number { return this._count; }

	/** Replace the diagnostics with those of `report`. */
	update(report: Report): void {
		this._collection.clear();
		const byFile = new Map<string, vscode.Diagnostic[]>();
		const specs = diagnosticsOf(report);
		for (const spec of specs) {
			const line = Math.max(0, spec.line - 1);
			const d = new vscode.Diagnostic(new vscode.Range(line, 0, line, Number.MAX_SAFE_INTEGER), spec.message, SEVERITY[spec.severity] ?? vscode.DiagnosticSeverity.Information);
			d.source = DIAGNOSTIC_SOURCE;
			d.code = spec.sourceUrl ? { value: spec.findingId, target: vscode.Uri.parse(spec.sourceUrl) } : spec.findingId;
			this._specs.set(d, spec);
			const list = byFile.get(spec.path) ?? [];
			list.push(d);
			byFile.set(spec.path, list);
		}
		for (const [file, list] of byFile) { this._collection.set(vscode.Uri.file(file), list); }
		this._count = specs.length;
		this._log.debug(`problems: ${specs.length} diagnostic(s) in ${byFile.size} file(s) from the report of ${report.host.label}`);
	}

	provideCodeActions(document: vscode.TextDocument, _range: vscode.Range, context: vscode.CodeActionContext): vscode.CodeAction[] {
		const out: vscode.CodeAction[] = [];
		for (const d of context.diagnostics) {
			if (d.source !== DIAGNOSTIC_SOURCE) { continue; }
			const spec = this._specs.get(d) ?? this._specFor(document.uri, d);
			if (!spec) { continue; }
			for (const edit of spec.edits) {
				if (edit.line > document.lineCount) { continue; }
				const current = document.lineAt(edit.line - 1);
				// The file changed since the inspection: the edit would land on another line; offer none.
				if (current.text.trim() !== edit.expected.trim()) { continue; }
				const action = new vscode.CodeAction(edit.title, vscode.CodeActionKind.QuickFix);
				action.edit = new vscode.WorkspaceEdit();
				action.edit.replace(document.uri, current.range, edit.replacement);
				action.diagnostics = [d];
				action.isPreferred = edit.preferred;
				out.push(action);
			}
			if (spec.fixCommand) {
				const copy = new vscode.CodeAction(vscode.l10n.t('Copy the fix: {0}', spec.fixCommand.length > 60 ? `${spec.fixCommand.slice(0, 57)}…` : spec.fixCommand), vscode.CodeActionKind.QuickFix);
				copy.command = { command: COPY_FIX_COMMAND, title: copy.title, arguments: [spec.fixCommand] };
				copy.diagnostics = [d];
				out.push(copy);
			}
			const show = new vscode.CodeAction(vscode.l10n.t('Show in GPU-MPI panel'), vscode.CodeActionKind.QuickFix);
			show.command = { command: SHOW_FINDING_COMMAND, title: show.title, arguments: [spec.findingId, spec.findingIndex] };
			show.diagnostics = [d];
			out.push(show);
		}
		return out;
	}

	/** A diagnostic handed back as a copy (VS Code may clone them): find ours by file, line and finding id. */
	private _specFor(uri: vscode.Uri, d: vscode.Diagnostic): DiagnosticSpec | undefined {
		const id = typeof d.code === 'object' ? String(d.code.value) : String(d.code);
		for (const mine of this._collection.get(uri) ?? []) {
			const spec = this._specs.get(mine);
			if (spec && spec.findingId === id && spec.line - 1 === d.range.start.line) { return spec; }
		}
		return undefined;
	}
}
