/**
 * The fallback ranking (extension/core/repro/fallbackRanking.ts) on results shaped like the engine's documents.
 * The numbers are the H200 measurements of issue 19 (MPI under UCX sm,cuda_copy,self 36 GB/s with ~969 MiB host
 * growth at 1 GiB; libgpumpi's shm path 49 GB/s, +0.1 MiB): device results cannot be produced on this machine, so the
 * trials are built from them, with a small spread per trial. The engine test runs the same code on real output.
 */
import * as assert from 'node:assert/strict';
import { combineFallback, fallbackStats } from '../../extension/core/repro/fallbackRunner';
import { renderFallbackReport } from '../../extension/core/repro/reproRender';
import { renderReproHtml } from '../../media/repro/render';
import { rankFallback } from '../../extension/core/repro/fallbackRanking';
import type { FallbackTrialResult, ReproFallbackDocument } from '../../extension/shared/reproSchema';

const MiB = 1024 * 1024, GiB = 1024 * MiB;

function row(mode: string, size: number, trial: number, gbps: number, rss: number, dev = 0): FallbackTrialResult {
	const secs = size / (gbps * 1e9);
	return {
		trial, mode: mode as FallbackTrialResult['mode'], size_bytes: size, messages: 1, status: 'ok', seconds: [secs], best_gbps: gbps, median_gbps: gbps,
		verified: { words: size / 4, wrong: 0 },
		memory: [0, 1].map(rank => ({ rank, rss_baseline_bytes: 1, rss_peak_growth_bytes: rank === 1 ? rss : 0, pinned_peak_growth_bytes: 0,
			locked_peak_growth_bytes: 0, device_used_peak_growth_bytes: dev, library_pinned_bytes: 0, samples: 10 })),
	};
}

/** Three trials: MPI wins small messages (eager), libgpumpi (shm) from 64 MiB on; MPI's host memory grows with size. */
function h200Like(trials = 3): FallbackTrialResult[] {
	const out: FallbackTrialResult[] = [];
	for (let t = 1; t <= trials; t++) {
		const j = (t - 2) * 0.2;
		out.push(row('mpi', 1 * MiB, t, 12 + j, 2 * MiB), row('lib-shm', 1 * MiB, t, 6 + j, 0));
		out.push(row('mpi', 64 * MiB, t, 30 + j, 60 * MiB), row('lib-shm', 64 * MiB, t, 40 + j, 0));
		out.push(row('mpi', 1 * GiB, t, 36.3 + j, 969 * MiB), row('lib-shm', 1 * GiB, t, 49.2 + j, 0.1 * MiB));
		out.push(row('staged', 1 * GiB, t, 5.35 + j, 0), row('host', 1 * GiB, t, 20 + j, 0));
		// staged and host only at 1 GiB here: the ranking compares at the largest size every option has
		out.push(row('staged', 1 * MiB, t, 1 + j / 10, 0), row('staged', 64 * MiB, t, 4 + j, 0));
	}
	return out;
}

describe('fallback ranking', () => {
	it('recommends libgpumpi (shm) with bandwidth and memory beside MPI\'s, the crossover, and the out-of-memory size', () => {
		const results = h200Like();
		const r = rankFallback(fallbackStats(results), results, 60 * GiB, true, 16 * MiB, 4, 'openmpi');
		assert.equal(r.atBytes, GiB);
		assert.deepEqual(r.options.map(o => o.mode), ['lib-shm', 'mpi', 'staged'], 'host is a baseline, not ranked');
		assert.equal(r.best?.mode, 'lib-shm');
		const text = r.text.join('\n');
		assert.match(text, /Recommended: libgpumpi \(shm\): 49\.20 \(49\.00–49\.40\) GB\/s, \+0\.1 MiB — vs MPI 36\.30 \(36\.10–36\.50\) GB\/s, \+969\.0 MiB \(969 MiB per GiB of message\)\. libgpumpi \(shm\) is 1\.36× faster than MPI/);
		assert.match(text, /Crossover: below 64 MiB keep MPI \(at 1 MiB libgpumpi \(shm\) does not beat it\); from 64 MiB on, libgpumpi \(shm\)/);
		assert.ok(r.mpiGrowthPerGiB !== null && Math.abs(r.mpiGrowthPerGiB - 969 * MiB) < MiB);
		assert.ok(r.mpiOomBytes !== null && Math.abs(r.mpiOomBytes - 60 * GiB / 969 * 1024) < MiB, String(r.mpiOomBytes));
		assert.match(text, /a message of about 63\.4\d GiB would run it out of memory; libgpumpi \(shm\) did not grow/);
		assert.equal(r.fix?.mode, 'lib-shm');
		assert.match(r.fix!.code, /cfg\.flags = GPUMPI_FORCE_SHM/);
		assert.match(r.fix!.code, /gpumpi_isend_ex\(ctx, sendbuf, bytes, peer, tag, GPUMPI_FORCE_SHM, &reqs\[1\]\)/);
		assert.ok(r.fix!.build.some(l => l.includes('mpicc.openmpi app.c $(pkg-config --cflags --libs gpumpi)')));
	});

	it('one trial ranks but recommends nothing; overlapping ranges keep MPI', () => {
		const one = h200Like(1);
		const r1 = rankFallback(fallbackStats(one), one, 60 * GiB, true);
		assert.equal(r1.best, null);
		assert.match(r1.text.join('\n'), /One trial: the ranking has no spread and recommends nothing/);
		assert.equal(r1.mpiOomBytes, null, 'no out-of-memory claim from one trial');
		const close: FallbackTrialResult[] = [1, 2, 3].flatMap(t => [row('mpi', GiB, t, 36 + t, 0), row('lib-auto', GiB, t, 37 + t, 0)]);
		const r2 = rankFallback(fallbackStats(close), close, null, true);
		assert.equal(r2.best, null);
		assert.match(r2.text.join('\n'), /Keep MPI: no difference between libgpumpi \(auto\) and MPI: the ranges overlap/);
		assert.equal(r2.fix, null);
	});

	it('a mode skipped everywhere (lib-shm across hosts) is not ranked and does not block the comparison', () => {
		const res: FallbackTrialResult[] = [1, 2].flatMap(t => [row('mpi', GiB, t, 10 + t / 10, 900 * MiB), row('lib-staged', GiB, t, 20 + t / 10, 0),
			{ ...row('lib-shm', GiB, t, 1, 0), status: 'skipped' as const, best_gbps: null, median_gbps: null, seconds: [], skipped_reason: 'peer is on another host' }]);
		const r = rankFallback(fallbackStats(res), res, 8 * GiB, true, 16 * MiB, 4);
		assert.deepEqual(r.options.map(o => o.mode), ['lib-staged', 'mpi']);
		assert.equal(r.best?.mode, 'lib-staged');
		assert.match(r.fix!.code, /GPUMPI_FORCE_STAGED/);
	});
});

describe('fallback ranking in the reports', () => {
	it('the text report prints the fix and build lines; the panel has the ranked table, "Copy code" with exactly the fix, and "Open example"', () => {
		const results = h200Like();
		const docs = [1, 2, 3].map(trial => ({ trial, doc: {
			schema: 'gpumpi.repro.fallback/1', memory: 'device', requested_memory: 'device', gpu_unavailable_reason: null, np: 2,
			mpi: { library_version: 'Open MPI v5.0.7', implementation: 'openmpi', cuda_aware: { compile_time: true, run_time: true, query: 'MPIX' } },
			hosts: ['h', 'h'], same_node: true, device_ordinals: [0, 0], node_memory: [{ rank: 0, mem_total_bytes: 64 * GiB, mem_available_bytes: 60 * GiB }],
			chunk_bytes: 16 * MiB, nbuf: 4, iters: 3, max_message_bytes: GiB, results: results.filter(r => r.trial === trial).map(({ trial: _t, ...r }) => r),
			outcome: 'ok', detail: '',
		} as ReproFallbackDocument }));
		const rep = combineFallback('ucx UCX_TLS=sm,cuda_copy,self', [], docs, { lanes: [], protocols: [], btls: [], lines: [] }, 3);
		assert.equal(rep.ranking?.best?.mode, 'lib-shm');
		assert.ok(rep.verdict.text.some(t => t.startsWith('Recommended: libgpumpi (shm)')));
		const text = renderFallbackReport(rep);
		assert.match(text, /The fix \(lib-shm\): replace MPI_Isend\/MPI_Irecv/);
		assert.match(text, /mpicc\.openmpi app\.c \$\(pkg-config --cflags --libs gpumpi\)/);
		const html = renderReproHtml({ ipc: null, fallback: [rep], source: 'test' });
		assert.match(html, /<tr class="best"><td class="num">1<\/td><td>libgpumpi \(shm\)<\/td>/);
		const m = /class="copy-evidence copy-code" data-copy="([^"]*)"/.exec(html);
		assert.ok(m, 'Copy code button');
		const unescaped = m[1].replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&');
		assert.equal(unescaped, rep.ranking!.fix!.code);
		assert.match(html, /<button type="button" class="open-example">Open example \(native\/examples\/staged_exchange\.c\)<\/button>/);
	});
});
