/**
 * Runs inside the real extension host: an inspection of THIS machine puts the real
 * /etc/openmpi/openmpi-mca-params.conf "pml = ^ucx" line (Debian's packaging) into the Problems panel, with the quick
 * fixes VS Code's own code-action machinery returns for that line: no "set pml = ucx" where the same inspection says
 * pml ucx refuses every transport here (Debian 12 without InfiniBand), only the whole fix to copy; every other finding
 * sits on the host's findings document, so Problems counts what the panel counts. A per-user MCA file (a HOME made
 * for the test) that is read-only gets no edit, the same file writable gets the "set" edit (in the buffer, never
 * saved). "Show in GPU-MPI panel" opens the panel; the status bar item shows the headline verdict and the counts.
 * Skipped where the /etc file has no such line.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { reportFromBundle, writeBundle } from '../../../extension/core/bundle';
import type { Report } from '../../../extension/shared/report';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';
const MCA_PARAMS = '/etc/openmpi/openmpi-mca-params.conf';
const PML_RULE = 'ompi-pml-ucx-disabled-by-param-file';

interface DoctorApi {
	inspect(): Promise<Report>;
	panelReady(): boolean;
	problemCount(): number;
	problemCountFor(key?: string): number;
	findingsDocument(key?: string): string | undefined;
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

	it('no "set pml = ucx" where this inspection says pml ucx refuses every transport: the whole fix to copy, and "Show in GPU-MPI panel"', async () => {
		const refused = report.findings.some(f => f.id === 'ompi-pml-ucx-transport-defaults' && f.severity === 'warning');
		await vscode.workspace.openTextDocument(uri); // the provider command needs the document open
		const actions = await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', uri, new vscode.Range(line, 0, line, 1), vscode.CodeActionKind.QuickFix.value);
		const titles = actions.map(a => a.title);
		assert.ok(titles.includes('Show in GPU-MPI panel'), titles.join(' | '));
		if (refused) {
			assert.ok(!titles.some(t => /^Set "pml = ucx"|^Comment out/.test(t)), `an edit the same inspection contradicts: ${titles.join(' | ')}`);
			assert.ok(titles.some(t => t.startsWith('Copy the fix: mpirun --mca pml ucx --mca pml_ucx_tls any')), titles.join(' | '));
		} else {
			assert.ok(titles.some(t => /^Set "pml = ucx"/.test(t)), titles.join(' | '));
		}
	});

	it('every finding is one Problems entry: file lines where there is one, the rest on the host\'s findings document', async () => {
		const doctor = await api();
		assert.equal(doctor.problemCountFor(), report.findings.length);
		const docUri = doctor.findingsDocument();
		assert.ok(docUri, 'a findings document');
		const uriOf = vscode.Uri.parse(docUri);
		const onDoc = vscode.languages.getDiagnostics(uriOf).filter(d => d.source === 'GPU-MPI Doctor');
		const onFiles = vscode.languages.getDiagnostics().filter(([u]) => u.scheme === 'file').flatMap(([, ds]) => ds.filter(d => d.source === 'GPU-MPI Doctor'));
		assert.equal(onDoc.length + onFiles.length, report.findings.length, `${onDoc.length} on the document, ${onFiles.length} on files`);
		const sev = { error: vscode.DiagnosticSeverity.Error, warning: vscode.DiagnosticSeverity.Warning, info: vscode.DiagnosticSeverity.Information } as const;
		for (const k of ['error', 'warning', 'info'] as const) {
			assert.equal([...onDoc, ...onFiles].filter(d => d.severity === sev[k]).length, report.findings.filter(f => f.severity === k).length, k);
		}
		const doc = await vscode.workspace.openTextDocument(uriOf);
		for (const d of onDoc) {
			const id = String(typeof d.code === 'object' ? d.code.value : d.code);
			assert.ok(doc.lineAt(d.range.start.line).text.includes(`(${id})`), `line ${d.range.start.line}: ${doc.lineAt(d.range.start.line).text}`);
		}
	});

	it('a read-only MCA parameter file gets no edit; the same file writable gets "set" (the GPU testbed\'s real outputs with this test\'s own MCA file, opened as a saved inspection of this machine)', async () => {
		// Debian's Open MPI here is built without CUDA: it has no btl_smcuda_use_cuda_ipc, and a file setting it gets
		// no finding (core/params/fixParams.ts, ompi-smcuda-cuda-ipc-disabled). The GPU testbed's Open MPI 5.0.7 has
		// it: its captured tool outputs (test-fixtures/tools/h200-testbed) go into a bundle with the MCA file of a
		// test HOME on this machine, so the finding lands on that file's line, where the quick fixes are offered.
		const doctor = await api();
		const home = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-home-'));
		const bundleDir = path.join(home, 'bundle');
		const file = path.join(home, '.openmpi', 'mca-params.conf');
		fs.mkdirSync(path.dirname(file));
		fs.writeFileSync(file, '# a test\nbtl_smcuda_use_cuda_ipc = 0\n');
		fs.chmodSync(file, 0o444);
		const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
		const fx = (name: string) => fs.readFileSync(path.join(ext.extensionPath, 'test-fixtures', 'tools', 'h200-testbed', name), 'utf8');
		const raw = (id: string, stdout: string, command: string[]) => ({ id, command, exitCode: 0, stdout, stderr: '', durationMs: 1 });
		const base = await doctor.inspect();
		try {
			await writeBundle(bundleDir, { ...base, raw: [
				raw('ompi_info', fx('ompi_info.txt'), ['ompi_info', '--parsable', '--all']), raw('mpirun_version', fx('mpirun_version.txt'), ['mpirun', '--version']),
				raw('ucx_info_v', fx('ucx_info_v.txt'), ['ucx_info', '-v']), raw('ucx_info_d', fx('ucx_info_d.txt'), ['ucx_info', '-d']),
				raw(`mca_params:${file}`, fs.readFileSync(file, 'utf8'), ['read', file]),
			] });
			// Analysed as a bundle is (core reportFromBundle), then saved as an inspection of THIS machine and opened with
			// "Open Saved Inspection…": a bundle's own findings never go onto this machine's files (they are another
			// host's), a local inspection's do. Synthetic only in that composition: the outputs and the file are real.
			const analysed = await reportFromBundle(bundleDir);
			const saved = path.join(home, 'saved-inspection.json');
			fs.writeFileSync(saved, JSON.stringify({ ...analysed, host: base.host }));
			const r = await vscode.commands.executeCommand<Report | undefined>('gpumpiDoctor.openInspection', saved);
			const f = r?.findings.find(x => x.id === 'ompi-smcuda-cuda-ipc-disabled');
			assert.ok(f, `no smcuda finding from ${file}: ${r?.findings.map(x => x.id).join(', ')}`);
			const fileUri = vscode.Uri.file(file);
			const ours = vscode.languages.getDiagnostics(fileUri).filter(d => d.source === 'GPU-MPI Doctor');
			assert.equal(ours[0]?.range.start.line, 1, 'on the line of the file');
			await vscode.workspace.openTextDocument(fileUri);
			const titles = async (): Promise<string[]> => (await vscode.commands.executeCommand<vscode.CodeAction[]>('vscode.executeCodeActionProvider', fileUri, new vscode.Range(1, 0, 1, 1), vscode.CodeActionKind.QuickFix.value)).map(a => a.title);
			const ro = await titles();
			assert.ok(!ro.some(t => /^Set |^Comment out/.test(t)), `an edit on a read-only file: ${ro.join(' | ')}`);
			assert.ok(ro.some(t => t.startsWith('Copy the fix: mpirun --mca btl_smcuda_use_cuda_ipc 1')), ro.join(' | '));
			fs.chmodSync(file, 0o644);
			const rw = await titles();
			assert.ok(rw.some(t => t.startsWith('Set "btl_smcuda_use_cuda_ipc = 1"')), rw.join(' | '));
		} finally {
			await vscode.commands.executeCommand('workbench.action.closeAllEditors');
			fs.rmSync(home, { recursive: true, force: true });
			await doctor.inspect();
		}
	});

	it('"Show in GPU-MPI panel" opens the panel on that finding', async () => {
		const doctor = await api();
		await vscode.workspace.openTextDocument(uri);
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
		const c = (k: string): number => report.findings.filter(f => f.severity === k).length;
		assert.ok(state.tooltip.includes(`${c('error')} error`) && state.tooltip.includes(`${c('warning')} warning`) && state.tooltip.includes(`${c('info')} info`), state.tooltip);
	});
});
