/**
 * UCX settings tried beside the configuration (`repro fallback --try-ucx`, issue 16 item 8): the ranking and the
 * verdict lines (extension/core/repro/fallbackRanking.ts) on REAL H200 trials — the per-setting reports of
 * test-fixtures/repro/h200-testbed/experiments-rndv2-2026-12-04.json and experiments-2026-12-03.json, each run there as
 * its own `repro fallback --preset S`, combined here as `--try-ucx` combines them (the setting's mpi results tagged
 * with it) — and the command line's checks. The engine test (test/engine/repro.test.ts) runs the real thing.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseReproArgs } from '../../extension/cli/reproCli';
import { UsageError } from '../../extension/cli/io';
import { combineFallback } from '../../extension/core/repro/fallbackRunner';
import { UCX_STAGING_TRIES } from '../../extension/core/repro/reproChoices';
import { renderFallbackReport } from '../../extension/core/repro/reproRender';
import type { FallbackRun, ReproFallbackDocument, ReproFallbackReport } from '../../extension/shared/reproSchema';

type Capture = { runs: Array<{ name: string; doc: ReproFallbackReport }> };
const load = (f: string): Capture => JSON.parse(fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures/repro/h200-testbed', f), 'utf8')) as Capture;
const rndv2 = load('experiments-rndv2-2026-12-04.json');
const rndv1 = load('experiments-2026-12-03.json');

/** One saved report as the per-trial documents the runner would have had (results regrouped by trial). */
function docsOf(rep: ReproFallbackReport, setting?: string): Array<{ trial: number; doc: ReproFallbackDocument; setting?: string }> {
	const trials = [...new Set(rep.results.map(r => r.trial))];
	return trials.map(trial => ({
		trial, setting,
		doc: { schema: 'gpumpi.repro.fallback/1', memory: rep.memory, mpi: rep.mpi, results: rep.results.filter(r => r.trial === trial).map(({ trial: _t, ...r }) => r) } as unknown as ReproFallbackDocument,
	}));
}
function runsOf(rep: ReproFallbackReport, setting?: string): FallbackRun[] {
	return rep.runs.map(r => ({ ...r, modes: setting ? [`mpi+${setting}`] : r.modes }));
}
/** The default run of a capture plus the named settings' runs, combined as one --try-ucx report. */
function combined(cap: Capture, settings: string[]): ReproFallbackReport {
	const base = cap.runs.find(r => r.name === 'rndv-default')!.doc;
	const tried = settings.map(s => ({ s, rep: cap.runs.find(r => r.name === `rndv-${s}`)!.doc }));
	return combineFallback(base.config, [...runsOf(base), ...tried.flatMap(t => runsOf(t.rep, t.s))],
		[...docsOf(base), ...tried.flatMap(t => docsOf(t.rep, t.s))], base.transports, 3, settings);
}

describe('fallback --try-ucx: ranking on the real H200 trials', () => {
	it('host:4M fragments rank first and are named as faster, but the verdict says the host staging still grows', () => {
		const rep = combined(rndv2, ['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M', 'UCX_RNDV_FRAG_ALLOC_COUNT=host:8,cuda:8', 'UCX_RNDV_PIPELINE_SHM_ENABLE=n']);
		const rk = rep.ranking!;
		assert.equal(rk.atBytes, 1 << 30);
		assert.equal(rk.options[0].label, 'MPI with UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M');
		assert.equal(rk.best?.mode, 'mpi+UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M');
		const by = Object.fromEntries(rk.ucxSettings!.map(u => [u.setting, u]));
		assert.equal(by['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M'].bandwidth, 'faster');
		assert.equal(by['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M'].boundsMemory, false);
		assert.equal(by['UCX_RNDV_FRAG_ALLOC_COUNT=host:8,cuda:8'].bandwidth, 'same');
		assert.equal(by['UCX_RNDV_PIPELINE_SHM_ENABLE=n'].bandwidth, 'slower');
		for (const u of rk.ucxSettings!) { assert.equal(u.ok, 3); assert.equal(u.launched, 3); assert.equal(u.failure, null); }
		const text = rep.verdict.text.join('\n');
		assert.match(text, /UCX settings tried at 1 GiB \(MPI as configured 36\.\d+ \(36\.\d+–36\.\d+\) GB\/s, \+77\d\.\d MiB\)/);
		assert.match(text, /Best UCX setting measured: UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M is faster than MPI as configured, but the host staging still grows/);
		// the verdict on the configuration itself is computed from its own trials only
		assert.match(text, /MPI needed 774\.\d MiB \(774\.\d–775\.\d\) extra resident host memory/);
		assert.deepEqual(rep.stats.filter(s => s.mode === 'mpi').map(s => s.trials), [3, 3]);
		assert.match(renderFallbackReport(rep), /mpi\+UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M/);
	});

	it('settings that bound the memory but lose bandwidth (put_zcopy, FRAG_MEM_TYPE=cuda, 2026-12-03) are not recommended', () => {
		const rep = combined(rndv1, ['UCX_RNDV_SCHEME=put_zcopy', 'UCX_RNDV_FRAG_MEM_TYPE=cuda']);
		const rk = rep.ranking!;
		assert.equal(rk.best, null, 'MPI as configured stays first');
		for (const u of rk.ucxSettings!) { assert.equal(u.bandwidth, 'slower', u.setting); assert.equal(u.boundsMemory, true, u.setting); }
		assert.match(rep.verdict.text.join('\n'), /No tried UCX setting was faster than MPI as configured or bounded its host memory without losing bandwidth/);
	});

	it('a setting UCX rejected (UCX_RNDV_FRAG_SIZE=128K on 1.13, 2026-12-03) is reported with the error, not ranked', () => {
		const rep = combined(rndv1, ['UCX_RNDV_FRAG_SIZE=128K']);
		const u = rep.ranking!.ucxSettings![0];
		assert.equal(u.bestGbps, null);
		assert.equal(u.ok, 0);
		assert.ok(u.launched >= 2);
		assert.match(u.failure ?? '', /invalid memory type specifier|MPI_Init|exit status/);
		assert.ok(!rep.ranking!.options.some(o => o.mode.startsWith('mpi+')));
		assert.match(rep.verdict.text.join('\n'), /UCX_RNDV_FRAG_SIZE=128K: no result at 1 GiB in \d launches/);
	});
});

describe('repro fallback --try-ucx: the command line', () => {
	const parse = (...a: string[]) => parseReproArgs(['fallback', ...a]);
	const refused = (re: RegExp, ...a: string[]) => assert.throws(() => parse(...a), (e: unknown) => e instanceof UsageError && re.test(e.message));
	it('takes NAME=VALUE settings in order, "staging" as the measured list, duplicates once', () => {
		assert.deepEqual(parse('--try-ucx', 'UCX_RNDV_SCHEME=get_zcopy').tryUcx, [['UCX_RNDV_SCHEME', 'get_zcopy']]);
		const o = parse('--try-ucx', 'staging', '--try-ucx', 'UCX_RNDV_SCHEME=get_zcopy');
		assert.deepEqual(o.tryUcx.map(([k, v]) => `${k}=${v}`), [...UCX_STAGING_TRIES]);
		assert.deepEqual(parse('--try-ucx', 'UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M').tryUcx, [['UCX_RNDV_FRAG_SIZE', 'host:4M,cuda:4M']]);
	});
	it('refuses non-UCX names, shell text, too many settings, no mpi mode, and ipc', () => {
		refused(/--try-ucx needs UCX_NAME=VALUE/, '--try-ucx', 'LD_PRELOAD=/tmp/x.so');
		refused(/--try-ucx needs UCX_NAME=VALUE/, '--try-ucx', 'UCX_TLS=$(reboot)');
		refused(/--try-ucx needs UCX_NAME=VALUE/, '--try-ucx', 'UCX_TLS=a b');
		refused(/--try-ucx needs UCX_NAME=VALUE/, '--try-ucx', 'UCX_TLS=');
		refused(/at most 8/, ...Array.from({ length: 9 }, (_, i) => ['--try-ucx', `UCX_X${i}=1`]).flat());
		refused(/has no mpi/, '--modes', 'staged,host', '--try-ucx', 'staging');
		assert.throws(() => parseReproArgs(['ipc', '--try-ucx', 'staging']), (e: unknown) => e instanceof UsageError && /repro fallback option/.test(e.message));
	});
});
