/**
 * The fallback verdict speaks about the modes the run had (core/repro/fallbackRunner.ts fallbackVerdict). Input: the
 * real H200 run `repro fallback --modes mpi,lib-shm --sizes 256M,1G --trials 3 --pml-ucx --preset
 * UCX_TLS=sm,cuda_copy,self --try-ucx staging` (test-fixtures/repro/h200-testbed/experiments-tryucx-2026-12-04.json,
 * every launch ok in 3 of 3 trials), whose saved verdict opened with "Not enough successful measurements to tell how
 * MPI moves GPU data to this peer": it had every measurement it asked for, but not the host and staged comparison
 * modes. The verdict is recomputed here from that run's own launches, results and transport lines.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fallbackVerdict } from '../../extension/core/repro/fallbackRunner';
import { renderFallbackReport } from '../../extension/core/repro/reproRender';
import type { FallbackRun, ReproFallbackReport } from '../../extension/shared/reproSchema';

const cap = JSON.parse(fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', 'repro', 'h200-testbed', 'experiments-tryucx-2026-12-04.json'), 'utf8')) as { runs: Array<{ name: string; doc: ReproFallbackReport }> };
const rep = cap.runs.find(r => r.name === 'tryucx-staging')!.doc;
/** The verdict of the configuration as given (the tried UCX settings aside), as combineFallback computes it. */
const ownRuns = rep.runs.filter(r => !r.modes.some(m => m.startsWith('mpi+')));
const own = rep.results.filter(r => !r.ucx_setting);
const verdict = (runs: FallbackRun[], results = own): ReturnType<typeof fallbackVerdict> =>
	fallbackVerdict(rep.memory, rep.gpuUnavailableReason, runs, results, rep.transports, rep.mpi?.cuda_aware.run_time ?? null);

describe('fallback verdict: about the modes the run had (real H200 run, --modes mpi,lib-shm)', () => {
	it('the capture: device memory, mpi and lib-shm ok in 3 of 3 trials, no host or staged launch, cuda_copy lanes logged', () => {
		assert.equal(rep.memory, 'device');
		assert.deepEqual(rep.modes.slice(0, 2).map(m => [m.mode, m.counts.ok, m.trials]), [['mpi', 3, 3], ['lib-shm', 3, 3]]);
		assert.deepEqual([...new Set(ownRuns.flatMap(r => r.modes))], ['mpi', 'lib-shm']);
		assert.match(rep.verdict.text[0], /^Not enough successful measurements/, 'what it said before');
	});

	it('says what MPI measured, what the transport lines show, and which comparison modes were not run — not "not enough measurements"', () => {
		const v = verdict(ownRuns);
		assert.equal(v.pathText, 'MPI moved GPU data to this peer at 35.86 (35.64–36.20) GB/s at 1 GiB (median (min–max) of 3 trials); '
			+ 'the transport evidence shows GPU data copied through host memory (cuda_copy / pipeline). This run\'s modes were mpi, lib-shm: '
			+ 'without the host and staged comparison modes there is no baseline to tell a direct path from host staging by bandwidth (add host,staged to --modes).');
		assert.equal(v.path, 'unknown', 'no bandwidth baseline: the path is not claimed');
		assert.ok(!v.text.some(t => /Not enough/.test(t)), v.text.join('\n'));
		assert.match(v.text[1], /^MPI needed 775\.1 MiB \(774\.8–775\.3\) extra resident host memory/);
		// The CLI's text (verdict first): the same line.
		const text = renderFallbackReport({ ...rep, verdict: { ...v, text: [...v.text, ...rep.ranking!.text] } });
		assert.match(text, /MPI moved GPU data to this peer at 35\.86 .*This run's modes were mpi, lib-shm/);
		assert.doesNotMatch(text, /Not enough successful measurements/);
	});

	it('without the mpi mode (lib-shm only): says this run says nothing about MPI', () => {
		const v = verdict(ownRuns.filter(r => !r.modes.includes('mpi')), own.filter(r => r.mode !== 'mpi'));
		assert.equal(v.pathText, 'The mpi mode was not run (this run\'s modes: lib-shm), so this says nothing about how MPI moves GPU data to this peer; the lines below are about the modes that ran.');
		assert.equal(v.path, 'unknown');
	});

	it('the host mode asked for but never measured: still "not enough successful measurements"', () => {
		const failedHost: FallbackRun[] = [1, 2, 3].map(trial => ({ ...ownRuns[0], trial, modes: ['host'], outcome: 'crashed', detail: 'rank 1 was killed by signal 9', exitCode: 137 }));
		const v = verdict([...ownRuns, ...failedHost]);
		assert.equal(v.pathText, 'Not enough successful measurements to tell how MPI moves GPU data to this peer.');
	});
});
