/**
 * Runs inside the real extension host: an offline bundle written from this host's real inspection is analysed by
 * the "GPU-MPI: Analyze Bundle…" command and gives the same findings (the CLI's `analyze` is tested in
 * test/unit/bundle.test.ts; this is the extension side of "the same findings anywhere").
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { writeBundle } from '../../../extension/core/bundle';
import type { Report } from '../../../extension/shared/report';

interface DoctorApi { lastReport(): Report | undefined; inspect(): Promise<Report>; panelReady?(): boolean }

async function api(): Promise<DoctorApi> {
	const ext = vscode.extensions.getExtension<DoctorApi>('gpumpi.gpumpi-doctor');
	assert.ok(ext, 'extension gpumpi.gpumpi-doctor is installed in this window');
	return ext.activate();
}

describe('Analyze Bundle in VS Code', function () {
	this.timeout(120_000);
	let dir = '';
	after(() => { if (dir) { fs.rmSync(dir, { recursive: true, force: true }); } });

	it('shows a bundle of this host with the findings the live inspection gave', async () => {
		const doctor = await api();
		const live = doctor.lastReport() ?? await doctor.inspect();
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-bundle-'));
		await writeBundle(dir, live);
		const fromBundle = await vscode.commands.executeCommand<Report | undefined>('gpumpiDoctor.analyzeBundle', vscode.Uri.file(dir));
		assert.ok(fromBundle, 'the command returned a report');
		assert.equal(fromBundle.host.kind, 'bundle');
		assert.deepEqual(fromBundle.findings.map(f => f.id).sort(), live.findings.map(f => f.id).sort());
		assert.equal(doctor.lastReport()?.host.kind, 'bundle', 'the panel now shows the bundle');
	});

	it('a folder that is not a bundle gives an error, not a report', async () => {
		const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-notbundle-'));
		try {
			const before = (await api()).lastReport();
			const r = await vscode.commands.executeCommand<Report | undefined>('gpumpiDoctor.analyzeBundle', vscode.Uri.file(empty));
			assert.equal(r, undefined, 'the command wrapper reports the error and returns nothing');
			assert.equal((await api()).lastReport(), before);
		} finally { fs.rmSync(empty, { recursive: true, force: true }); }
	});
});
