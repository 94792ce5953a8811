/**
 * Runs inside the real extension host: "GPU-MPI: Run My Program With Guard…" with an options object (no questions)
 * runs the real guard_demo under the real mpirun (Open MPI on PATH here) with the guard preloaded: the command
 * resolves to the result with guard_demo's exact per-pair counts, the guard panel (its own tab) shows its findings
 * (the verdict as the headline, "not checked" for a host-buffer program), this machine's inspection, status bar item
 * and Problems stay as they were, and the map panel receives the program's traffic map. Bad options are refused.
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GuardResult } from '../../../extension/core/guard/guardResult';
import type { Report } from '../../../extension/shared/report';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';
interface MapState { ready: boolean; delivered: string | null; worldSize: number; pairs: number; classes: string[] }
interface DoctorApi {
	lastReport(): Report | undefined; transportMapState?(): MapState | null; lastCommandError?(): string | undefined;
	inspect(host?: string): Promise<Report>; statusBar(): { text: string; tooltip: string; verdict: string; host: string } | undefined;
	problemCountFor(key?: string): number; guardPanelReport(): Report | null;
}

describe('run my program with the guard', function () {
	this.timeout(120_000);
	it('options object: guard_demo on 2 ranks, exact counts, findings in the guard panel (not the inspection\'s), traffic in the map panel', async () => {
		const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
		assert.ok(ext);
		const doctor = await ext.activate();
		// This machine's inspection first: the guard's result must leave it, its status bar item and its Problems as they are.
		const inspection = await doctor.inspect();
		const bar = doctor.statusBar();
		const problems = doctor.problemCountFor();
		assert.equal(problems, inspection.findings.length, 'every finding of the inspection is in Problems');
		const program = path.join(ext.extensionPath, 'native', 'build', 'engine-openmpi', 'examples', 'guard_demo');
		const r = await vscode.commands.executeCommand<GuardResult | undefined>('gpumpiDoctor.runGuard', { program, np: 2, mode: 'report' });
		assert.ok(r, `no result: ${doctor.lastCommandError?.() ?? ''}`);
		assert.equal(r.exitCode, 0, r.notes.join('\n'));
		assert.deepEqual(r.traffic.map(t => [t.a, t.b, t.calls, t.bytes]), [[0, 1, 13, 1840], [1, 0, 13, 1840]]);
		const report = doctor.guardPanelReport();
		assert.ok(report?.headline?.text.startsWith(r.verdict), 'the guard panel shows the guard result');
		assert.deepEqual(report?.findings.map(f => f.id), ['guard-unsupported-calls', 'guard-no-dangers']);
		// guard_demo passes host buffers only: no claim about GPU buffers (it once turned the status bar to "work ✓").
		assert.equal(report?.headline?.verdict, 'not-checked');
		assert.equal(doctor.lastReport(), inspection, 'the inspection is still the one shown');
		assert.deepEqual(doctor.statusBar(), bar, 'the status bar still shows the inspection');
		assert.equal(doctor.problemCountFor(), problems, 'Problems still holds the inspection\'s findings');
		if (inspection.headline?.verdict !== 'works') { assert.ok(!doctor.statusBar()?.text.includes('$(pass)'), doctor.statusBar()?.text); }
		const t0 = Date.now();
		let s = doctor.transportMapState?.() ?? null;
		while (!(s?.ready && s.delivered?.startsWith('gpumpi-guard')) && Date.now() - t0 < 30_000) { await new Promise(res => setTimeout(res, 200)); s = doctor.transportMapState?.() ?? null; }
		assert.ok(s && s.delivered?.startsWith('gpumpi-guard'), JSON.stringify(s));
		assert.equal(s.worldSize, 2);
		assert.deepEqual(s.classes, ['host_memory']);
	});

	it('bad options are refused before anything runs', async () => {
		const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
		const doctor = await ext!.activate();
		const r = await vscode.commands.executeCommand<GuardResult | undefined>('gpumpiDoctor.runGuard', { program: '/bin/true', np: 0 });
		assert.equal(r, undefined);
		assert.match(doctor.lastCommandError?.() ?? '', /np must be an integer 1\.\.4096/);
	});
});
