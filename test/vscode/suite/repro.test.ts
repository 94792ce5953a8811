/**
 * Runs inside the real extension host: "GPU-MPI: Open Reproducer Result…" on the REAL H200 device result (path and
 * Uri arguments, as tests and the explorer context menu pass them) reaches the reproducer webview, which says ready;
 * a file that is not a result is refused; and "GPU-MPI: Run IPC-Pointer Reproducer" runs the real engine under
 * Debian's Open MPI (mpirun.openmpi, 4 ranks, host memory: this machine has no GPU) from inside VS Code.
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as vscode from 'vscode';
import type { ReproPanelData } from '../../../extension/shared/reproProtocol';
import { recordMetric } from './metrics';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';

interface PanelState { ready: boolean; delivered: string | null; ipcVariants: number; fallbackConfigs: number; busy: boolean }
interface DoctorApi { reproPanelState?(): PanelState | null }

async function api(): Promise<{ doctor: DoctorApi; root: string }> {
	const ext = vscode.extensions.getExtension<DoctorApi>(EXTENSION_ID);
	assert.ok(ext, `${EXTENSION_ID} not installed`);
	return { doctor: await ext.activate(), root: ext.extensionPath };
}

async function waitFor(doctor: DoctorApi, pred: (s: PanelState) => boolean, ms = 30_000): Promise<PanelState | null> {
	const t0 = Date.now();
	let s = doctor.reproPanelState?.() ?? null;
	while (!(s && pred(s)) && Date.now() - t0 < ms) { await new Promise(r => setTimeout(r, 200)); s = doctor.reproPanelState?.() ?? null; }
	return s;
}

describe('reproducer commands', function () {
	this.timeout(120_000);

	it('Open Reproducer Result with a Uri: the device result reaches the webview (13 ipc runs, 6 fallback configurations)', async () => {
		const { doctor, root } = await api();
		assert.equal(typeof doctor.reproPanelState, 'function', 'API exposes reproPanelState()');
		const file = path.join(root, 'test-fixtures', 'repro', 'h200-testbed', 'repro-2026-12-02.json');
		const t0 = performance.now();
		const data = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.openReproResult', vscode.Uri.file(file));
		assert.ok(data, 'the command returned the loaded results');
		assert.equal(data.ipc?.mpi?.library_version.startsWith('Open MPI v5.0.7'), true);
		const s = await waitFor(doctor, x => x.ready && x.delivered === 'repro-2026-12-02.json (saved device result)');
		recordMetric('reproOpenResultMs', performance.now() - t0);
		assert.ok(s, 'panel open');
		assert.equal(s.ready, true, 'the reproducer webview sent ready');
		assert.equal(s.delivered, 'repro-2026-12-02.json (saved device result)');
		assert.equal(s.ipcVariants, 13);
		assert.equal(s.fallbackConfigs, 6);
	});

	it('Open Reproducer Result with a plain path works too; a file that is no result is refused and changes nothing', async () => {
		const { doctor, root } = await api();
		const data = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.openReproResult', path.join(root, 'test-fixtures', 'repro', 'h200-testbed', 'repro-2026-12-02.json'));
		assert.equal(data?.fallback.length, 6);
		const bad = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.openReproResult', vscode.Uri.file(path.join(root, 'package.json')));
		assert.equal(bad, undefined, 'package.json is not a reproducer result');
		assert.equal(doctor.reproPanelState?.()?.delivered, 'repro-2026-12-02.json (saved device result)');
	});

	it('Run IPC-Pointer Reproducer runs the real engine under mpirun.openmpi (host memory) and shows the result', async function () {
		this.timeout(180_000);
		const { doctor } = await api();
		const t0 = performance.now();
		const data = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.reproIpc', {
			mpirun: 'mpirun.openmpi', memory: 'host', size: '1M', variants: ['direct', 'bounce', 'host', 'send-from-import'], presets: [], loopback: true, baseline: true, trials: 2,
		});
		recordMetric('reproIpcRunMs', performance.now() - t0);
		assert.ok(data?.ipc, 'the command returned an ipc report (see the log on failure)');
		const runs = data.ipc.variants.flatMap(v => v.runs);
		const outcomes = data.ipc.variants.map(v => `${v.variant}:${v.class}:${v.counts.correct}/${v.trials}`);
		assert.deepEqual(outcomes, ['direct:works:2/2', 'bounce:works:2/2', 'host:works:2/2', 'send-from-import:works:2/2'], runs.map(v => v.detail).join(' | '));
		assert.ok(runs.every(v => v.memory === 'host'));
		assert.match(runs[0].command.join(' '), /mpirun\.openmpi .*-np 4 .*gpumpi repro ipc --variant direct --size 1048576 --memory host --json/);
		assert.equal(data.ipc.verdict.gpuVerdict, false);
		assert.match(data.ipc.verdict.answer, /No GPU verdict/);
		const s = await waitFor(doctor, x => x.ready && /^ipc run on this host/.test(x.delivered ?? ''));
		assert.match(s?.delivered ?? '', /^ipc run on this host .* with mpirun\.openmpi \(openmpi\)$/);
		assert.equal(s?.busy, false);
	});

	it('Run Fallback Reproducer: baseline and one preset side by side, each mode verified on host memory', async function () {
		this.timeout(180_000);
		const { doctor } = await api();
		const t0 = performance.now();
		const data = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.reproFallback', {
			mpirun: 'mpirun.openmpi', memory: 'host', sizes: '1M,4M', presets: ['--mca pml ob1'], loopback: true, baseline: true, trials: 1,
		});
		recordMetric('reproFallbackRunMs', performance.now() - t0);
		assert.ok(data, 'the command returned results');
		assert.deepEqual(data.fallback.map(f => f.config), ['default', '--mca pml ob1']);
		for (const f of data.fallback) {
			assert.deepEqual(f.runs.map(r => `${r.modes.join(',')}:${r.outcome}`), ['mpi', 'staged', 'host', 'lib-auto', 'lib-staged', 'lib-shm'].map(m => `${m}:ok`), f.runs.map(r => r.detail).join(' | '));
			assert.equal(f.results.length, 12, 'six modes (MPI, manual staging, host, libgpumpi auto/staged/shm) at two sizes');
			assert.ok(f.results.every(r => r.status === 'ok' && r.verified.wrong === 0 && (r.best_gbps ?? 0) > 0));
		}
		assert.ok(data.fallback[1].runs[0].command.includes('ob1'));
		const s = await waitFor(doctor, x => x.ready && /^fallback run on this host/.test(x.delivered ?? ''));
		assert.equal(s?.fallbackConfigs, 2);
	});

	it('refuses invalid options passed as the command argument (hostile values are data)', async () => {
		const r = await vscode.commands.executeCommand('gpumpiDoctor.reproIpc', { size: '1M; touch /tmp/pwned' });
		assert.equal(r, undefined);
	});
});
