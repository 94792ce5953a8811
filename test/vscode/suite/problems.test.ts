/**
 * Runs inside the real extension host: an inspection of THIS machine puts the real
 * /etc/openmpi/openmpi-mca-params.conf "pml = ^ucx" line (Debian's packaging) into the Problems panel, with quick
 * fixes that VS Code's own code-action machinery returns for that line; applying the "set" fix changes exactly that
 * line (in the editor buffer; the test reverts it and never saves); "Show in GPU-MPI panel" opens the panel; the
 * status bar item shows the report's headline verdict. Skipped where the file has no such line.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { Report } from '../../../extension/shared/report';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';
const MCA_PARAMS = '/etc/openmpi/openmpi-mca-params.conf';
const PML_RULE = 'ompi-pml-ucx-disabled-by-param-file';

interface DoctorApi {
	inspect(): Promise<Report>;
	panelReady(): boolean;
	problemCount(): number;
	statusBar(): { text: string; tooltip: string; verdict: string; host: string } | undefined;
}

/** 0-based index of the last pml line that disables ucx, read from the file itself; -1 when none. */
function pmlLineIndex(): number {
	try {
		const lines = fs.readFileSync(MCA_PARAMS, 'utf8').split('\n');
		for (let i = lines.length - 1; i >= 0; i--) { if (/^\s*pml\s*=\s*\^.*\bucx\b/.test(lines[i])) { return i; } }
	} catch { /* no file */ }
	return -1;
}

async function api(): Promise<DoctorApi> {
	const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
	assert.ok(ext, `${EXTENSION_ID} not installed`);
	return ext.activate();
}

async function waitFor(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
	const t0 = Date.now();
	while (!ok() && Date.now() - t0 < ms) { await new Promise(r => setTimeout(r, 200)); }
	assert.ok(ok(), `${what} within ${ms} ms`);
}

describe('Problems panel, quick fixes and status bar', function () {
	this.timeout(180_000);
	const uri = vscode.Uri.file(MCA_PARAMS);
	let report: Report;
	let line = -1;

	before(async function () {
		line = pmlLineIndex();
		if (line < 0) { this.skip(); }
		report = await (await api()).inspect();
	});

	it('the pml = ^ucx line of the MCA parameter file is a warning in the Problems panel', async () => {
		const doctor = await api();
		assert.ok(doctor.problemCount() > 0);
		const ours = vscode.languages.getDiagnostics(uri).filter(d => d.source === 'GPU-MPI Doctor');
		const pml = ours.find(d => (typeof d.code === 'object' ? d.code.value : d.code) === PML_RULE);
		assert.ok(pml, `no ${PML_RULE} diagnostic on ${MCA_PARAMS}; got ${ours.map(d => `${String(typeof d.code === 'object' ? d.code.value : d.code)}@${d.range.start.line}`).join(', ')}`);
		assert.equal(pml.range.start.line, line, 'on the line the file itself has');
		assert.equal(pml.severity, report.findings.find(f => f.id === PML_RULE)?.severity === 'warning' ? vscode.DiagnosticSeverity.Warning : vscode.DiagnosticSeverity.Information);
		assert.ok(typeof pml.code === 'object' && pml.code.target.scheme === 'https', 'the code links to a public source');
	});

	it('VS Code offers "set pml = ucx", "comment out" and "Show in GPU-MPI panel"; the set fix rewrites exactly that line', async () => {
		const doc = await vscode.workspace.openTextDocument(uri);
		const before = doc.getText();
		const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', uri, new vscode.Range(line, 0, line, 1), vscode.CodeActionKind.QuickFix.value);
		const titles = actions.map(a => a.title);
		const set = actions.find(a => /^Set "pml = ucx"/.test(a.title));
		assert.ok(set?.edit, `no set fix among: ${titles.join(' | ')}`);
		assert.ok(titles.some(t => /^Comment out "pml = \^ucx"/.test(t)), titles.join(' | '));
		assert.ok(titles.includes('Show in GPU-MPI panel'), titles.join(' | '));
		assert.equal(set.isPreferred, true);
		try {
			assert.ok(await vscode.workspace.applyEdit(set.edit));
			const after = doc.getText().split('\n');
			const orig = before.split('\n');
			assert.equal(after.length, orig.length);
			const changed = after.map((l, i) => (l === orig[i] ? -1 : i)).filter(i => i >= 0);
			assert.deepEqual(changed, [line]);
			assert.equal(after[line], 'pml = ucx');
		} finally {
			// Never saved: revert the buffer so nothing of /etc changes.
			await vscode.window.showTextDocument(doc);
			await vscode.commands.executeCommand('workbench.action.files.revert');
			await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
		}
		assert.equal(fs.readFileSync(MCA_PARAMS, 'utf8'), before, 'the file on disk is untouched');
	});

	it('"Show in GPU-MPI panel" opens the panel on that finding', async () => {
		const doctor = await api();
		const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', uri, new vscode.Range(line, 0, line, 1), vscode.CodeActionKind.QuickFix.value);
		const show = actions.find(a => a.title === 'Show in GPU-MPI panel');
		assert.ok(show?.command);
		await vscode.commands.executeCommand(show.command.command, ...(show.command.arguments ?? []));
		await waitFor('panel ready', () => doctor.panelReady());
	});

	it('the status bar item shows the headline verdict of this host', async () => {
		const state = (await api()).statusBar();
		assert.ok(state, 'status bar item shown after a report');
		assert.equal(state.verdict, report.headline?.verdict);
		assert.match(state.text, /^\$\((pass|error|warning|question)\) GPU-MPI: /);
		assert.ok(state.tooltip.includes(report.headline?.text ?? '\0'), state.tooltip);
	});
});
