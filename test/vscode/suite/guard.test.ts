/**
 * Runs inside the real extension host: "GPU-MPI: Run My Program With Guard…" with an options object (no questions)
 * runs the real guard_demo under the real mpirun (Open MPI on PATH here) with the guard preloaded: the command
 * resolves to the result with guard_demo's exact per-pair counts, the diagnostics panel shows its findings (the
 * verdict as the headline) and the map panel receives the program's traffic map. Bad options are refused.
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GuardResult } from '../../../extension/core/guard/guardResult';
import type { Report } from '../../../extension/shared/report';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';
interface MapState { ready: boolean; delivered: string | null; worldSize: number; pairs: number; classes: string[] }
interface DoctorApi { lastReport(): Report | undefined; transportMapState?(): MapState | null; lastCommandError?(): string | undefined }

describe('run my program with the guard', function () {
	this.timeout(120_000);
	it('options object: guard_demo on 2 ranks, exact counts, findings in the diagnostics panel, traffic in the map panel', async () => {
		const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
		assert.ok(ext);
		const doctor = await ext.activate();
		const program = path.join(ext.extensionPath, 'native', 'build', 'engine-openmpi', 'examples', 'guard_demo');
		const r = await vscode.commands.executeCommand<GuardResult | undefined>('gpumpiDoctor.runGuard', { program, np: 2, mode: 'report' });
		assert.ok(r, `no result: ${doctor.lastCommandError?.() ?? ''}`);
		assert.equal(r.exitCode, 0, r.notes.join('\n'));
		assert.deepEqual(r.traffic.map(t => [t.a, t.b, t.calls, t.bytes]), [[0, 1, 13, 1840], [1, 0, 13, 1840]]);
		const report = doctor.lastReport();
		assert.equal(report?.headline?.text, r.verdict, 'the diagnostics panel shows the guard result');
		assert.deepEqual(report?.findings.map(f => f.id), ['guard-unsupported-calls', 'guard-no-dangers']);
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
