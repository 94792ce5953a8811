/**
 * The engine's framed result document survives other ranks' output, for real: 4 ranks under Debian's Open MPI 4.1.4
 * and MPICH 4.0.2, where ranks 1–3 write 3000-byte lines of hostile bytes (control characters, NUL, quotes, braces,
 * a fake begin marker) every 5 ms while rank 0 prints its document (the engine's GPUMPI_TEST_NOISE test hook,
 * native/cli/main.cc — a fake only in what the noise says; the launchers, pipes and forwarding are the real ones).
 * Before the framing (one long JSON line), Open MPI's output forwarding cut the document where its 4 KiB reads ended
 * and the other ranks' lines landed inside it — the CI failure "Bad control character in string literal" under srun.
 * Each launcher runs 3 times; every run must give the whole document, and the noise must really be there.
 */
import * as assert from 'node:assert/strict';
import { findEngine, type EngineFlavor } from '../../extension/core/native';
import { extractJsonDocument } from '../../extension/core/parsers/framedDocument';
import { parseEngineInspect } from '../../extension/core/parsers/engineJson';
import { execute } from '../../extension/core/proc';
import { validateMapDocument } from '../../extension/shared/mapSchema';

const RUNS = 3;

function enginePath(flavor: EngineFlavor): string {
	const found = findEngine(flavor, {});
	assert.ok(found.path, `engine '${flavor}' not built; tried:\n  ${found.tried.join('\n  ')}`);
	return found.path;
}

function launcher(flavor: 'openmpi' | 'mpich', args: string[]): string[] {
	const engine = enginePath(flavor);
	return flavor === 'openmpi'
		? ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo', '-np', '4', engine, ...args]
		: ['mpirun.mpich', '-np', '4', engine, ...args];
}

async function noisy(argv: string[]): Promise<string> {
	const r = await execute(argv, { timeoutMs: 90_000, env: { ...process.env, GPUMPI_TEST_NOISE: '1', UCX_NET_DEVICES: 'lo' }, maxOutputBytes: 64 * 1024 * 1024 }).result;
	assert.equal(r.exitCode, 0, `${argv.join(' ')}: exit ${String(r.exitCode)} ${r.error ?? ''}\n${r.stderr.slice(-1500)}`);
	const noise = r.stdout.split('\n').filter(l => l.includes('noise from rank')).length;
	assert.ok(noise > 20, `only ${noise} noise lines: the test hook did not run, so this run proves nothing`);
	return r.stdout;
}

for (const flavor of ['openmpi', 'mpich'] as const) {
	describe(`framed documents amid other ranks' hostile output (${flavor}, 4 ranks, real mpirun)`, function () {
		this.timeout(240_000);

		it(`map --json: the whole document in each of ${RUNS} runs`, async () => {
			for (let i = 0; i < RUNS; i++) {
				const out = await noisy(launcher(flavor, ['map', '--json', '--memory', 'host', '--large', '1M', '--iters', '2']));
				const ex = extractJsonDocument(out);
				assert.ok('json' in ex, `run ${i + 1}: ${'error' in ex ? ex.error : ''}`);
				const d = validateMapDocument(ex.json);
				assert.ok(typeof d !== 'string', `run ${i + 1}: ${String(d)}`);
				assert.equal(d.ranks.length, 4);
				assert.equal(d.pairs.length, 6);
			}
		});

		it('inspect --framed: the report reads every rank', async () => {
			const out = await noisy(launcher(flavor, ['inspect', '--framed']));
			const { doc, issues } = parseEngineInspect(out);
			assert.ok(doc, issues.map(x => x.message).join('; '));
			assert.equal(doc.ranks.length, 4);
			assert.ok(issues.some(x => /line\(s\) besides its JSON/.test(x.message)), 'the noise lines are reported as extra lines');
		});
	});
}
