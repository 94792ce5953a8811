/**
 * Runs inside the real extension host: "GPU-MPI: Open Reproducer Result…" on the REAL H200 device result (path and
 * Uri arguments, as tests and the explorer context menu pass them) reaches the reproducer webview, which says ready;
 * a file that is not a result is refused; and "GPU-MPI: Run IPC-Pointer Reproducer" runs the real engine under
 * Debian's Open MPI (mpirun.openmpi, 4 ranks, host memory: this machine has no GPU) from inside VS Code; and "Run
 * Fallback Reproducer" driven through its real multi-step input (QuickPicks / InputBoxes answered by the test-mode
 * script) with "Also try UCX staging settings": the picks reach the run as --try-ucx settings under MPICH ch4:ucx and
 * the results that reach the panel carry one outcome per setting.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as vscode from 'vscode';
import type { ReproPanelData } from '../../../extension/shared/reproProtocol';
import { recordMetric } from './metrics';
import { firstBadRun } from './runEvidence';

const EXTENSION_ID = 'gpumpi.gpumpi-doctor';

interface PanelState { ready: boolean; delivered: string | null; ipcVariants: number; fallbackConfigs: number; busy: boolean; ucxSettings?: string[] }
type Answer = { pick: string[] } | { value: string } | 'back' | 'cancel';
interface Shown { title: string; items?: Array<{ label: string; description?: string; detail?: string; picked: boolean }>; typed?: Array<{ value: string; validation: string }> }
interface DoctorApi {
	reproPanelState?(): PanelState | null; scriptInputs?(answers: Answer[]): Shown[];
	reproBugReport(): string | null; hostReport(key?: string): { host: { label: string }; headline?: { text: string } } | undefined;
	statusBar(): { text: string; tooltip: string } | undefined; problemCount(): number;
	lastReport(): { host: { label: string; kind: string }; headline?: { text: string } } | undefined;
}

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

	it('Compare Reproducer Results: two real H200 runs side by side in the diff editor, each as the CLI summary', async () => {
		const { root } = await api();
		const dir = path.join(root, 'test-fixtures', 'repro', 'h200-testbed');
		const uris = await vscode.commands.executeCommand<[vscode.Uri, vscode.Uri] | undefined>('gpumpiDoctor.compareReproResults', path.join(dir, 'repro-2026-12-02.json'), path.join(dir, 'repro-2026-12-02-run2.json'));
		assert.ok(uris, 'compared');
		const [left, right] = await Promise.all(uris.map(u => vscode.workspace.openTextDocument(u)));
		assert.match(left.getText(), /^Source: repro-2026-12-02\.json \(saved device result\)\n/);
		assert.match(right.getText(), /^Source: repro-2026-12-02-run2\.json \(saved device result\)\n/);
		for (const d of [left, right]) {
			assert.match(d.getText(), /GPU-MPI Doctor: IPC-imported pointer reproducer\nMPI: Open MPI v5\.0\.7/);
			assert.match(d.getText(), /GPU-MPI Doctor: GPU-buffer fallback reproducer/);
			assert.doesNotMatch(d.getText(), /Every trial:/, 'the summary, not every trial');
		}
		assert.notEqual(left.getText(), right.getText());
		const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
		assert.ok(tab?.input instanceof vscode.TabInputTextDiff, `the active tab is a diff: ${tab?.label}`);
		assert.equal((tab.input as vscode.TabInputTextDiff).original.toString(), uris[0].toString());
		assert.equal((tab.input as vscode.TabInputTextDiff).modified.toString(), uris[1].toString());
		await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
	});

	it('Run IPC-Pointer Reproducer runs the real engine under mpirun.openmpi (host memory) and shows the result', async function () {
		this.timeout(180_000);
		const { doctor } = await api();
		const barBefore = doctor.statusBar();
		const problemsBefore = doctor.problemCount();
		const t0 = performance.now();
		const data = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.reproIpc', {
			mpirun: 'mpirun.openmpi', memory: 'host', size: '1M', variants: ['direct', 'bounce', 'host', 'send-from-import'], presets: [], loopback: true, baseline: true, trials: 2,
		});
		recordMetric('reproIpcRunMs', performance.now() - t0);
		assert.ok(data?.ipc, 'the command returned an ipc report (see the log on failure)');
		const runs = data.ipc.variants.flatMap(v => v.runs);
		const outcomes = data.ipc.variants.map(v => `${v.variant}:${v.class}:${v.counts.correct}/${v.trials}`);
		assert.deepEqual(outcomes, ['direct:works:2/2', 'bounce:works:2/2', 'host:works:2/2', 'send-from-import:works:2/2'], firstBadRun(runs));
		assert.ok(runs.every(v => v.memory === 'host'));
		assert.match(runs[0].command.join(' '), /mpirun\.openmpi .*-np 4 .*gpumpi repro ipc --variant direct --size 1048576 --memory host --json/);
		assert.equal(data.ipc.verdict.gpuVerdict, false);
		assert.match(data.ipc.verdict.answer, /No GPU verdict/);
		const s = await waitFor(doctor, x => x.ready && /^ipc run on this host/.test(x.delivered ?? ''));
		assert.match(s?.delivered ?? '', /^ipc run on this host .* with mpirun\.openmpi \(openmpi\)$/);
		assert.equal(s?.busy, false);
		// "Copy as bug report" holds one host: this machine's inspection (an earlier suite inspected it), never the one
		// the diagnostics panel shows now (the bundle suite left another host's there).
		const md = doctor.reproBugReport() ?? '';
		const local = doctor.hostReport();
		const shown = doctor.lastReport();
		assert.ok(local?.headline?.text, 'this machine was inspected earlier in the suite');
		assert.ok(md.includes(`- Host inspection: ${local.headline.text}`), md.split('\n').filter(l => l.includes('Host inspection')).join(' | '));
		if (shown && shown.host.kind !== 'local' && shown.headline?.text && shown.headline.text !== local.headline.text) {
			assert.ok(!md.includes(shown.headline.text), `the bug report carries ${shown.host.label}'s inspection`);
		}
		// "Save…" keeps the results; "Open Reproducer Result…" shows them again.
		const file = path.join(os.tmpdir(), `gpumpi-repro-saved-${process.pid}.json`);
		try {
			assert.equal(await vscode.commands.executeCommand('gpumpiDoctor.saveReproResult', file), file);
			const back = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.openReproResult', file);
			assert.equal(back?.ipc?.variants.length, data.ipc.variants.length);
			assert.deepEqual(back?.ipc?.variants.map(v => v.counts), data.ipc.variants.map(v => v.counts));
		} finally { fs.rmSync(file, { force: true }); }
		assert.equal(doctor.lastReport(), shown, 'a reproducer never changes the inspection shown');
		assert.deepEqual(doctor.statusBar(), barBefore, 'nor the status bar');
		assert.equal(doctor.problemCount(), problemsBefore, 'nor Problems');
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

	it('Run Fallback Reproducer through the picker: "Also try UCX staging settings" (measured + custom, hostile custom refused in the box) runs under MPICH ch4:ucx as --try-ucx, and the panel gets per-setting outcomes', async function () {
		this.timeout(420_000);
		const { doctor } = await api();
		assert.equal(typeof doctor.scriptInputs, 'function', 'the test-mode API scripts the multi-step input');
		const cfg = vscode.workspace.getConfiguration('gpumpiDoctor');
		await cfg.update('repro.trials', 2, vscode.ConfigurationTarget.Global);
		// The setting pre-selects its valid entry; the invalid one is left out with a warning (never a crash).
		await cfg.update('repro.tryUcx', ['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M', 'UCX_BAD=$(touch /tmp/pwned)'], vscode.ConfigurationTarget.Global);
		try {
			const shown = doctor.scriptInputs!([
				{ pick: ['mpirun.mpich'] }, { pick: ['host'] }, { value: '1M,4M' },
				{ pick: ['Baseline (no preset)', 'Every configuration: keep TCP on loopback (single node)'] },
				{ pick: ['UCX_RNDV_SCHEME=get_zcopy', 'Custom NAME=VALUE…'] },
				{ value: 'UCX_X=$(rm -rf ~)' }, { value: 'LD_PRELOAD=/tmp/x.so' }, { value: 'UCX_RNDV_THRESH=inf' },
			]);
			const t0 = performance.now();
			const data = await vscode.commands.executeCommand<ReproPanelData | undefined>('gpumpiDoctor.reproFallback', { kind: 'host', key: '$local' });
			recordMetric('reproFallbackTryUcxPickerMs', performance.now() - t0);
			// What the picker showed: the UCX step with the four measured settings (what each changes, what the H200
			// measured), the setting's entry pre-selected, then the custom box refusing the hostile values with a message.
			// The loopback item says it is a modifier of every configuration, not a configuration that runs on its own.
			const configs = shown.find(s => /configurations \(each runs separately\) and the loopback modifier/.test(s.title));
			assert.match(configs?.items?.find(i => /loopback/.test(i.label))?.description ?? '', /a modifier, not a configuration of its own/);
			const ucx = shown.find(s => /also try UCX staging settings/.test(s.title));
			assert.ok(ucx?.items, shown.map(s => s.title).join(' | '));
			assert.deepEqual(ucx.items.map(i => i.label), ['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M', 'UCX_RNDV_FRAG_ALLOC_COUNT=host:8,cuda:8', 'UCX_RNDV_SCHEME=get_zcopy', 'UCX_RNDV_FRAG_MEM_TYPE=cuda', 'Custom NAME=VALUE…']);
			assert.ok(ucx.items.slice(0, 4).every(i => (i.description ?? '').length > 0 && /^H200: .*GB\/s/.test(i.detail ?? '')), JSON.stringify(ucx.items));
			assert.deepEqual(ucx.items.filter(i => i.picked).map(i => i.label), ['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M']);
			assert.match(ucx.title, /\(5\/5\)$/);
			const box = shown[shown.length - 1];
			assert.deepEqual(box.typed?.map(t => t.value), ['UCX_X=$(rm -rf ~)', 'LD_PRELOAD=/tmp/x.so', 'UCX_RNDV_THRESH=inf']);
			assert.match(box.typed![0].validation, /UCX_NAME=VALUE, NAME starting with UCX_/);
			assert.match(box.typed![1].validation, /UCX_NAME=VALUE, NAME starting with UCX_/);
			assert.equal(box.typed![2].validation, '');
			// The run: the configuration's six modes, then the mpi mode once per picked setting, in every trial.
			assert.ok(data, 'the command returned results (see the log on failure)');
			assert.equal(data.fallback.length, 1);
			const f = data.fallback[0];
			const each = ['mpi', 'staged', 'host', 'lib-auto', 'lib-staged', 'lib-shm', 'mpi+UCX_RNDV_SCHEME=get_zcopy', 'mpi+UCX_RNDV_THRESH=inf'];
			assert.deepEqual(f.runs.map(r => `${r.trial}:${r.modes[0]}:${r.outcome}`), [1, 2].flatMap(t => each.map(m => `${t}:${m}:ok`)), f.runs.map(r => r.detail).join(' | '));
			const cmd = f.runs.find(r => r.modes[0] === 'mpi+UCX_RNDV_SCHEME=get_zcopy')!.command;
			assert.match(cmd.join(' '), /^mpirun\.mpich .*-genv UCX_NET_DEVICES lo -genv UCX_RNDV_SCHEME get_zcopy .*gpumpi repro fallback --modes mpi /, 'one argv item per name and value');
			assert.ok(!f.runs.some(r => r.command.join(' ').includes('rm -rf') || r.command.join(' ').includes('/tmp/pwned')));
			// Per-setting outcomes against MPI as configured, and the verdict's lines about them.
			const rk = f.ranking!;
			assert.deepEqual(rk.ucxSettings?.map(u => `${u.setting} ${u.ok}/${u.launched}`), ['UCX_RNDV_SCHEME=get_zcopy 2/2', 'UCX_RNDV_THRESH=inf 2/2']);
			assert.ok(rk.ucxSettings!.every(u => (u.bestGbps?.median ?? 0) > 0 && u.extraHostBytes !== null && u.bandwidth !== null && u.failure === null), JSON.stringify(rk.ucxSettings));
			assert.ok(f.results.filter(r => r.ucx_setting).every(r => r.status === 'ok' && r.verified.wrong === 0));
			assert.match(f.verdict.text.join('\n'), /UCX settings tried at 4 MiB \(MPI as configured .* GB\/s, .*\): UCX_RNDV_SCHEME=get_zcopy: .* GB\/s, .*; UCX_RNDV_THRESH=inf: /);
			assert.ok('ucxBest' in rk);
			const s = await waitFor(doctor, x => x.ready && /^fallback run on this host/.test(x.delivered ?? '') && (x.ucxSettings?.length ?? 0) === 2);
			assert.deepEqual(s?.ucxSettings, ['default: UCX_RNDV_SCHEME=get_zcopy 2/2', 'default: UCX_RNDV_THRESH=inf 2/2']);
			assert.equal(s?.busy, false);
		} finally {
			await cfg.update('repro.trials', undefined, vscode.ConfigurationTarget.Global);
			await cfg.update('repro.tryUcx', undefined, vscode.ConfigurationTarget.Global);
		}
	});

	it('refuses invalid options passed as the command argument (hostile values are data)', async () => {
		const r = await vscode.commands.executeCommand('gpumpiDoctor.reproIpc', { size: '1M; touch /tmp/pwned' });
		assert.equal(r, undefined);
		const u = await vscode.commands.executeCommand('gpumpiDoctor.reproFallback', { mpirun: 'mpirun.mpich', tryUcx: ['UCX_X=$(rm -rf ~)'] });
		assert.equal(u, undefined, 'a hostile --try-ucx value in the options is refused before anything runs');
	});
});
