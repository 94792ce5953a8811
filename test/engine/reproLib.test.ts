/**
 * `gpumpi repro fallback`'s libgpumpi modes (lib-auto, lib-staged, lib-shm; engine/libModes.cc) for real under
 * Open MPI 4.1.4 and MPICH 4.0.2 through the TypeScript runner, beside `mpi`: every size verified on both ranks,
 * the protocol each mode used, the library's own staging reported, each rank's MemTotal/MemAvailable in the
 * document, and the ranking of the report. No GPU here: host memory (the engine says so); the lib-shm cross-host
 * skip needs two hosts and is covered by the unit test of the ranking only.
 */
import * as assert from 'node:assert/strict';
import { findEngine, type EngineFlavor } from '../../extension/core/native';
import { execute } from '../../extension/core/proc';
import { runFallbackRepro } from '../../extension/core/repro/fallbackRunner';
import { defaultSpec, type LaunchConfig } from '../../extension/core/launch/launchSpec';
import { extractJsonDocument } from '../../extension/core/parsers/framedDocument';
import { renderFallbackReport } from '../../extension/core/repro/reproRender';
import type { ReproFallbackDocument } from '../../extension/shared/reproSchema';

const RUN_TIMEOUT_MS = 90_000;

function enginePath(flavor: EngineFlavor): string {
	const found = findEngine(flavor, {});
	assert.ok(found.path, `engine '${flavor}' not built: node scripts/ensure.mjs --all-mpis`);
	return found.path;
}

const FLAVORS: Array<{ flavor: 'openmpi' | 'mpich'; mpirun: string; launch: string[]; config: LaunchConfig }> = [
	{ flavor: 'openmpi', mpirun: 'mpirun.openmpi', launch: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo', '-np', '2'],
		config: { label: 'ob1 (Debian default)', env: [['UCX_NET_DEVICES', 'lo']], mca: [], extraArgs: [] } },
	{ flavor: 'mpich', mpirun: 'mpirun.mpich', launch: ['mpirun.mpich', '-np', '2'], config: { label: 'ch4:ucx', env: [['UCX_NET_DEVICES', 'lo']], mca: [], extraArgs: [] } },
];

for (const { flavor, mpirun, launch, config } of FLAVORS) {
	describe(`repro fallback lib modes under ${mpirun}`, function () {
		this.timeout(240_000);

		it('engine: lib-auto / lib-staged / lib-shm verified at every size, with their protocol, staging and node memory', async () => {
			const engine = enginePath(flavor);
			const r = await execute([...launch, engine, 'repro', 'fallback', '--sizes', '1M,3M', '--modes', 'lib-auto,lib-staged,lib-shm', '--chunk', '1M', '--nbuf', '2',
				'--iters', '2', '--json'], { timeoutMs: RUN_TIMEOUT_MS }).result;
			assert.equal(r.exitCode, 0, r.stderr.slice(-3000));
			const ex = extractJsonDocument(r.stdout);
			assert.ok('json' in ex, r.stdout.slice(-3000));
			const doc = ex.json as ReproFallbackDocument;
			assert.equal(doc.outcome, 'ok', doc.detail);
			assert.deepEqual(doc.results.map(x => `${x.mode}@${x.size_bytes >> 20}M:${x.status}:${x.protocol}`),
				['lib-auto@1M:ok:direct', 'lib-auto@3M:ok:direct', 'lib-staged@1M:ok:staged', 'lib-staged@3M:ok:staged', 'lib-shm@1M:ok:shm', 'lib-shm@3M:ok:shm']);
			for (const x of doc.results) {
				assert.deepEqual(x.verified, { words: x.size_bytes / 4, wrong: 0 }, x.mode);
				assert.equal(x.seconds.length, 2);
				// the user's 2 x 1 MiB staging buffer at least (plus the shared segments)
				for (const m of x.memory) { assert.ok(m.library_pinned_bytes >= 2 << 20, `${x.mode}: ${m.library_pinned_bytes}`); }
			}
			assert.equal(doc.node_memory?.length, 2);
			for (const m of doc.node_memory ?? []) {
				assert.ok(typeof m.mem_total_bytes === 'number' && typeof m.mem_available_bytes === 'number' && m.mem_available_bytes > 0 && m.mem_available_bytes <= m.mem_total_bytes, JSON.stringify(m));
			}
		});

		it('runner: the lib modes beside mpi over 2 trials, ranked in the report with a recommendation or "Keep MPI"', async () => {
			const engine = enginePath(flavor);
			const spec2 = { ...defaultSpec(flavor, mpirun, 2), loopbackOnly: flavor === 'openmpi' };
			const rep = await runFallbackRepro({
				engine, spec: spec2, config, modes: ['mpi', 'lib-auto', 'lib-shm'], sizes: '1M,4M', iters: 2, chunk: '1M', nbuf: 2,
				memory: 'device', timeoutMs: RUN_TIMEOUT_MS, protoInfo: false, trials: 2,
			});
			assert.deepEqual(rep.runs.map(r => r.outcome), ['ok', 'ok', 'ok', 'ok', 'ok', 'ok'], rep.runs.map(r => r.detail).join('; '));
			assert.equal(rep.results.length, 12);
			assert.ok(rep.results.every(r => r.status === 'ok' && r.verified.wrong === 0));
			const ranking = rep.ranking;
			assert.ok(ranking);
			assert.equal(ranking.atBytes, 4 << 20);
			assert.deepEqual([...ranking.options.map(o => o.mode)].sort(), ['lib-auto', 'lib-shm', 'mpi']);
			for (const o of ranking.options) { assert.equal(o.bestGbps.n, 2); }
			const text = rep.verdict.text.join('\n');
			assert.match(text, /Ranked at 4 MiB \(2 trials, host memory\)/);
			assert.match(text, /Recommended: libgpumpi|Keep MPI/);
			if (ranking.best) { assert.match(renderFallbackReport(rep), /The fix \(lib-/); }
		});
	});
}
