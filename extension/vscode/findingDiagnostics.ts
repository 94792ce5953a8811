/**
 * The Problems panel and its quick fixes. Every finding of each host's last inspection is one vscode.Diagnostic
 * (shared/findingLocations.ts): on its file line when the evidence is a line of a file on this machine, otherwise on
 * its line of that host's findings document (a read-only virtual document, scheme `gpumpi-doctor`, one per host), so
 * Problems counts what the panel, the Hosts row and the status bar count. Guard and reproducer results never come here.
 * The code actions on a file line set or comment out the MCA parameter line, only where that can work: the file is
 * writable by this user (else the same setting goes to the per-user ~/.openmpi/mca-params.conf, which Open MPI reads
 * with higher precedence), and the fix needs no other parameter (else only "copy the fix"). Every entry can copy the
 * finding's fix command and show the finding in the GPU-MPI panel.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { diagnosticsOf, reportDocument, type DiagnosticSpec, type LineEdit } from '../shared/findingLocations';
import { findingCounts, findingCountsText } from '../shared/headline';
import type { Report, Severity } from '../shared/report';
import type { Logger } from '../core/logger';
import { Disposable } from './dispose';

/** What our diagnostics carry as `source` (code actions pick ours by it). */
export const DIAGNOSTIC_SOURCE = 'GPU-MPI Doctor';
/** Internal commands the code actions run (not in the palette). */
export const SHOW_FINDING_COMMAND = 'gpumpiDoctor.showFinding';
export const COPY_FIX_COMMAND = 'gpumpiDoctor.copyFixCommand';
/** The scheme of the per-host findings documents. */
export const FINDINGS_SCHEME = 'gpumpi-doctor';

const SEVERITY: Record<Severity, vscode.DiagnosticSeverity> = {
	error: vscode.DiagnosticSeverity.Error,
	warning: vscode.DiagnosticSeverity.Warning,
	info: vscode.DiagnosticSeverity.Information,
};

/**
 * Whether this process may write `file`, judged by its permission bits for this user (as VS Code marks a file whose
 * write bits are off as read-only, also for root), and by access(2). A missing file: whether its folder is writable.
 */
export function canWrite(file: string): boolean {
	try {
		const st = fs.statSync(file);
		const uid = process.getuid?.() ?? -1;
		const gids = new Set([process.getgid?.() ?? -1, ...(process.getgroups?.() ?? [])]);
		const bit = st.uid === uid ? 0o200 : gids.has(st.gid) ? 0o020 : 0o002;
		if ((st.mode & bit) === 0) { return false; }
		fs.accessSync(file, fs.constants.W_OK);
		return true;
	} catch (e) {
		if ((e as NodeJS.ErrnoException)?.code === 'ENOENT') {
			try { fs.accessSync(path.dirname(file), fs.constants.W_OK); return true; } catch { return false; }
		}
		return false;
	}
}

/** The per-user Open MPI parameter file (docs/mca.rst: "The user-supplied set of values takes the highest precedence"). */
export function userMcaFile(): string { return path.join(os.homedir(), '.openmpi', 'mca-params.conf'); }

/** One diagnostic collection following each host's last inspection, the findings documents, and the code actions. */
export class FindingDiagnostics extends Disposable implements vscode.CodeActionProvider, vscode.TextDocumentContentProvider {
	static readonly providedCodeActionKinds = [vscode.CodeActionKind.QuickFix];
	private readonly _collection = this._register(vscode.languages.createDiagnosticCollection('gpumpiDoctor'));
	/** The specs behind each diagnostic (code actions read their edits), and the host key each came from. */
	private readonly _specs = new WeakMap<vscode.Diagnostic, DiagnosticSpec & { key: string }>();
	/** Per host key: its inspection, its findings document and the diagnostics it put where. */
	private readonly _hosts = new Map<string, { report: Report; doc: vscode.Uri; text: string; byUri: Map<string, vscode.Diagnostic[]> }>();
	private readonly _onDidChange = this._register(new vscode.EventEmitter<vscode.Uri>());
	readonly onDidChange = this._onDidChange.event;

	constructor(private readonly _log: Logger) {
		super();
		this._register(vscode.languages.registerCodeActionsProvider([{ scheme: 'file' }, { scheme: FINDINGS_SCHEME }], this, { providedCodeActionKinds: FindingDiagnostics.providedCodeActionKinds }));
		this._register(vscode.workspace.registerTextDocumentContentProvider(FINDINGS_SCHEME, this));
	}

	/** How many diagnostics are shown now, over every host (tests). */
	get count(): number { let n = 0; for (const h of this._hosts.values()) { for (const l of h.byUri.values()) { n += l.length; } } return n; }

	/** How many diagnostics one host's inspection put in Problems (tests). */
	countFor(key: string): number { let n = 0; for (const l of this._hosts.get(key)?.byUri.values() ?? []) { n += l.length; } return n; }

	/** The findings document of a host (tests open it). */
	documentFor(key: string): vscode.Uri | undefined { return this._hosts.get(key)?.doc; }

	provideTextDocumentContent(uri: vscode.Uri): string {
		for (const h of this._hosts.values()) { if (h.doc.toString() === uri.toString()) { return h.text; } }
		return 'No GPU-MPI Doctor inspection of this host in this window.\n';
	}

	/** Replace host `key`'s diagnostics with those of its new inspection. */
	update(key: string, report: Report): void {
		// The same inspection shown again (a Hosts row clicked, the panel reopened): nothing to rebuild.
		if (this._hosts.get(key)?.report === report) { return; }
		this.forget(key);
		const label = (report.host.kind === 'local' ? 'this machine' : report.host.label || key).replace(/[\\/\0]/g, '_');
		const doc = vscode.Uri.from({ scheme: FINDINGS_SCHEME, path: `/${label} - GPU-MPI findings.txt`, query: `host=${encodeURIComponent(key)}` });
		const { text, lineOf } = reportDocument(report, findingCountsText(findingCounts(report.findings)));
		const byUri = new Map<string, vscode.Diagnostic[]>();
		const specs = diagnosticsOf(report, lineOf);
		for (const spec of specs) {
			const line = Math.max(0, spec.line - 1);
			const d = new vscode.Diagnostic(new vscode.Range(line, 0, line, Number.MAX_SAFE_INTEGER), spec.message, SEVERITY[spec.severity] ?? vscode.DiagnosticSeverity.Information);
			d.source = DIAGNOSTIC_SOURCE;
			d.code = spec.sourceUrl ? { value: spec.findingId, target: vscode.Uri.parse(spec.sourceUrl) } : spec.findingId;
			this._specs.set(d, { ...spec, key });
			const uri = spec.path === null ? doc : vscode.Uri.file(spec.path);
			const list = byUri.get(uri.toString()) ?? [];
			list.push(d);
			byUri.set(uri.toString(), list);
		}
		this._hosts.set(key, { report, doc, text, byUri });
		this._publish([...byUri.keys()]);
		this._onDidChange.fire(doc);
		this._log.debug(`problems: ${specs.length} diagnostic(s) for ${key} in ${byUri.size} document(s)`);
	}

	/** Drop a host's diagnostics (removed from the settings, or inspected again). */
	forget(key: string): void {
		const old = this._hosts.get(key);
		if (!old) { return; }
		this._hosts.delete(key);
		this._publish([...old.byUri.keys()]);
	}

	/**
	 * Set the collection's entries of these URIs from every key's diagnostics: keys can share a file (this machine's
	 * inspection and a saved or bundled one of this machine both put entries on its mca-params.conf line), so a
	 * URI's entries are the union, and forgetting one key leaves the others'.
	 */
	private _publish(uris: string[]): void {
		for (const u of uris) {
			const all = [...this._hosts.values()].flatMap(h => h.byUri.get(u) ?? []);
			this._collection.set(vscode.Uri.parse(u), all.length > 0 ? all : undefined);
		}
	}

	provideCodeActions(document: vscode.TextDocument, _range: vscode.Range, context: vscode.CodeActionContext): vscode.CodeAction[] {
		const out: vscode.CodeAction[] = [];
		for (const d of context.diagnostics) {
			if (d.source !== DIAGNOSTIC_SOURCE) { continue; }
			const spec = this._specs.get(d) ?? this._specFor(document.uri, d);
			if (!spec) { continue; }
			for (const edit of spec.edits) { const a = this._editAction(document, d, edit); if (a) { out.push(a); } }
			if (spec.fixCommand) {
				const copy = new vscode.CodeAction(vscode.l10n.t('Copy the fix: {0}', spec.fixCommand.length > 60 ? `${spec.fixCommand.slice(0, 57)}…` : spec.fixCommand), vscode.CodeActionKind.QuickFix);
				copy.command = { command: COPY_FIX_COMMAND, title: copy.title, arguments: [spec.fixCommand] };
				copy.diagnostics = [d];
				out.push(copy);
			}
			const show = new vscode.CodeAction(vscode.l10n.t('Show in GPU-MPI panel'), vscode.CodeActionKind.QuickFix);
			show.command = { command: SHOW_FINDING_COMMAND, title: show.title, arguments: [spec.findingId, spec.findingIndex, spec.key] };
			show.diagnostics = [d];
			out.push(show);
		}
		return out;
	}

	/** The action for one line edit: in the file when this user can write it; a "set" goes to the per-user file otherwise. */
	private _editAction(document: vscode.TextDocument, d: vscode.Diagnostic, edit: LineEdit): vscode.CodeAction | undefined {
		if (document.uri.scheme !== 'file' || edit.line > document.lineCount) { return undefined; }
		const current = document.lineAt(edit.line - 1);
		// The file changed since the inspection: the edit would land on another line; offer none.
		if (current.text.trim() !== edit.expected.trim()) { return undefined; }
		if (canWrite(document.uri.fsPath)) {
			const action = new vscode.CodeAction(edit.title, vscode.CodeActionKind.QuickFix);
			action.edit = new vscode.WorkspaceEdit();
			action.edit.replace(document.uri, current.range, edit.replacement);
			action.diagnostics = [d];
			action.isPreferred = edit.preferred;
			return action;
		}
		// Read-only for this user (a site file): only a setting can move to the per-user file, which Open MPI reads with
		// higher precedence; "comment out" has no per-user form.
		const set = /^([A-Za-z0-9_]+) = (.*)$/.exec(edit.replacement);
		const user = userMcaFile();
		if (!set || edit.replacement.startsWith('#') || !document.uri.fsPath.endsWith('mca-params.conf') || document.uri.fsPath === user || !canWrite(user)) { return undefined; }
		const action = new vscode.CodeAction(vscode.l10n.t('Set "{0} = {1}" in {2} (yours; overrides {3}, which you cannot write)', set[1], set[2], user, document.uri.fsPath), vscode.CodeActionKind.QuickFix);
		action.edit = userFileEdit(user, set[1], set[2]);
		action.diagnostics = [d];
		action.isPreferred = edit.preferred;
		return action;
	}

	/** A diagnostic handed back as a copy (VS Code may clone them): find ours by document, line and finding id. */
	private _specFor(uri: vscode.Uri, d: vscode.Diagnostic): (DiagnosticSpec & { key: string }) | undefined {
		const id = typeof d.code === 'object' ? String(d.code.value) : String(d.code);
		for (const mine of this._collection.get(uri) ?? []) {
			const spec = this._specs.get(mine);
			if (spec && spec.findingId === id && spec.line - 1 === d.range.start.line) { return spec; }
		}
		return undefined;
	}
}

/** The edit that sets `name = value` in the per-user file: replaces its `name` line, or appends one (creating the file). */
function userFileEdit(file: string, name: string, value: string): vscode.WorkspaceEdit {
	const edit = new vscode.WorkspaceEdit();
	const uri = vscode.Uri.file(file);
	let text: string | undefined;
	try { text = fs.readFileSync(file, 'utf8'); } catch { text = undefined; }
	const line = `${name} = ${value}`;
	if (text === undefined) {
		edit.createFile(uri, { ignoreIfExists: true, contents: Buffer.from(`# Open MPI parameters of this user (GPU-MPI Doctor)\n${line}\n`) });
		return edit;
	}
	const lines = text.split('\n');
	const at = lines.findIndex(l => new RegExp(`^\\s*${name}\\s*=`).test(l));
	if (at >= 0) {
		edit.replace(uri, new vscode.Range(at, 0, at, lines[at].length), line);
	} else {
		const last = lines.length - 1;
		edit.insert(uri, new vscode.Position(last, lines[last].length), `${lines[last].length > 0 ? '\n' : ''}${line}\n`);
	}
	return edit;
}
