#!/usr/bin/env node
// Numbers are generated, not copied: every measurement a rule's text states is read here from the recorded device
// results (the real captures under test-fixtures/, the same data docs/device-results.md describes) and written to
// extension/core/rules/measured.generated.ts, which the rules import. A new capture listed below changes the rules'
// numbers (and docs/rules.md, generated from the rules) the next time this runs.
//   node scripts/genMeasured.mjs           write the module
//   node scripts/genMeasured.mjs --check   exit 1 when the module differs from what the captures give (a unit test
//                                          runs this, so CI fails on a hand-edited or stale number)
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const OUT = path.join(root, 'extension/core/rules/measured.generated.ts');
const read = (rel) => {
	const bytes = fs.readFileSync(path.join(root, rel));
	return JSON.parse((rel.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8'));
};
const GiB = 1 << 30;
const MiB = 1 << 20;

/** A fixed number of decimals, the same everywhere a kind of number is printed. */
const fmt = (v, digits) => v.toFixed(digits);
/** One measurement: value (median or the one value), min, max, count, unit, text as the rules print it, where from. */
function m(values, unit, digits, from, n) {
	const vs = values.filter((v) => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b);
	if (vs.length === 0) { throw new Error(`genMeasured: no value for ${from}`); }
	const min = vs[0], max = vs[vs.length - 1];
	const mid = vs.length % 2 === 1 ? vs[(vs.length - 1) / 2] : (vs[vs.length / 2 - 1] + vs[vs.length / 2]) / 2;
	const lo = fmt(min, digits), hi = fmt(max, digits);
	const text = `${lo === hi ? lo : `${lo}–${hi}`} ${unit}`;
	return { value: Number(fmt(mid, digits)), min: Number(lo), max: Number(hi), n: n ?? vs.length, unit, text, from };
}
/** The min and max of a {median, min, max, n} statistic (the median lies between). */
const stat = (s) => [s.min, s.max];

// --- the captures -----------------------------------------------------------------------------------------------
const REPRO1 = 'test-fixtures/repro/h200-testbed/repro-2026-12-02.json';
const REPRO2 = 'test-fixtures/repro/h200-testbed/repro-2026-12-02-run2.json';
const EXP = 'test-fixtures/repro/h200-testbed/experiments-2026-12-03.json';
const RNDV2 = 'test-fixtures/repro/h200-testbed/experiments-rndv2-2026-12-04.json';
const LIB = 'test-fixtures/lib/h200-testbed/lib-2026-12-02.json';
const LAT = 'test-fixtures/map/h200-latency/explain-latency-2026-12-03.json';
const TRYUCX = 'test-fixtures/repro/h200-testbed/experiments-tryucx-2026-12-04.json';
const UCXV = 'test-fixtures/repro/h100-testbed/ucx-versions-2026-12-06.json.gz';
const SILENT = 'test-fixtures/tools/gpu-silentdata/silentData.json';

/** Best GB/s at 1 GiB of one mode of one fallback configuration, in both 2026-12-02 runs. */
function fallback1G(config, mode) {
	return [REPRO1, REPRO2].map((f) => {
		const run = read(f).find((x) => x.kind === 'fallback' && x.config === config);
		const r = run?.document?.results?.find((z) => z.mode === mode && z.size_bytes === GiB);
		if (!r) { throw new Error(`genMeasured: ${f}: no ${config} / ${mode} at 1 GiB`); }
		return r.best_gbps;
	});
}
const experiments = read(EXP);
const expDoc = (name) => {
	const run = experiments.runs.find((r) => r.name === name);
	if (!run?.doc) { throw new Error(`genMeasured: ${EXP}: no run ${name}`); }
	return run.doc;
};
const mpiAt = (doc, bytes) => doc.stats.find((s) => s.mode === 'mpi' && s.sizeBytes === bytes);
const variant = (doc, name, after) => doc.variants.find((v) => v.variant === name && /after-mpi-init/.test(v.config) === after);
const rndv2 = read(RNDV2);
const rndv2At1G = (name) => mpiAt(rndv2.runs.find((r) => r.name === name).doc, GiB).bestGbps;
const lib = read(LIB);
const tryucxAt1G = (mode) => read(TRYUCX).runs[0].doc.stats.find((s) => s.mode === mode && s.sizeBytes === GiB);
const latency = read(LAT).doc;
const ucxv = read(UCXV);
/** "crashed N of T" (or "correct N of T" when none failed) of one variant of one ucxVersions run. */
function ucxvCount(stack, run, variant, tls) {
	const doc = ucxv.runs.find((r) => r.stack === stack && r.name === run)?.doc;
	const v = doc?.variants.find((x) => x.variant === variant && (tls ? x.config.includes(tls) : !/UCX_TLS=/.test(x.config)));
	if (!v) { throw new Error(`genMeasured: ${UCXV}: no ${stack} / ${run} / ${variant} ${tls ?? ''}`); }
	const total = Object.values(v.counts).reduce((a, b) => a + b, 0);
	const bad = total - v.counts.correct;
	return { text: bad > 0 ? `${v.counts.crashed > 0 ? 'crashed' : 'failed'} in ${bad} of ${total}` : `correct in ${total} of ${total}`, from: `${UCXV}: UCX ${stack}, ${run}, ${variant}${tls ? `, ${tls}` : ''} (${v.class})` };
}
const mpsFactor = latency.factors.find((f) => /mps/i.test(f.id ?? '') || /mps/i.test(JSON.stringify(f.setting ?? '')));
if (!mpsFactor?.result?.latency_us) { throw new Error(`genMeasured: ${LAT}: no MPS factor with a latency`); }

const noGrowth = ['UCX_RNDV_SCHEME=put_zcopy', 'UCX_RNDV_SCHEME=get_zcopy', 'UCX_RNDV_FRAG_MEM_TYPE=cuda'].map((s) => mpiAt(expDoc(`rndv-${s}`), GiB));
const counts = (v) => `${v.counts.crashed} of ${v.trials ?? Object.values(v.counts).reduce((a, b) => a + b, 0)}`;
const ipcUcx = expDoc('cudainit-ipc-ucx');
const ipcOb1 = expDoc('cudainit-ipc-ob1');

const MEASURED = {
	// docs/device-results.md, "Fallback reproducer (the QuEST report)": two ranks on the H200's one GPU, 1 GiB, runs 1 and 2
	smcudaIpc1G: m(fallback1G('ob1', 'mpi'), 'GB/s', 0, `${REPRO1}, ${REPRO2}: ob1 (smcuda, CUDA IPC), mode mpi, 1 GiB, best of 3 iterations per run`),
	smcudaNoIpc1G: m(fallback1G('ob1 btl_smcuda_use_cuda_ipc=0', 'mpi'), 'GB/s', 2, `${REPRO1}, ${REPRO2}: ob1 with btl_smcuda_use_cuda_ipc 0, mode mpi, 1 GiB`),
	smcudaNoIpcStaged1G: m(fallback1G('ob1 btl_smcuda_use_cuda_ipc=0', 'staged'), 'GB/s', 2, `${REPRO1}, ${REPRO2}: ob1 with btl_smcuda_use_cuda_ipc 0, manual staging (4 × 16 MiB pinned), 1 GiB`),
	ucxSmStaged1G: m(fallback1G('ucx UCX_TLS=sm,cuda_copy,self', 'mpi'), 'GB/s', 1, `${REPRO1}, ${REPRO2}: pml ucx, UCX_TLS=sm,cuda_copy,self, mode mpi, 1 GiB`),
	// "CUDA first touched after MPI_Init" (experiments 2026-12-03)
	cudaAfterUcx1G: m(stat(mpiAt(expDoc('cudainit-fallback-ucx'), GiB).bestGbps), 'GB/s', 0, `${EXP}: cudainit-fallback-ucx, mode mpi, 1 GiB, 3 trials (min–max)`, 3),
	cudaAfterOb11G: m(stat(mpiAt(expDoc('cudainit-fallback-ob1'), GiB).bestGbps), 'GB/s', 1, `${EXP}: cudainit-fallback-ob1, mode mpi, 1 GiB, 3 trials (min–max)`, 3),
	// "UCX rendezvous settings and the host memory of the staging pipeline" (experiments 2026-12-03)
	rndvDefaultRss1G: m(stat(mpiAt(expDoc('rndv-default'), GiB).rssGrowth).map((b) => b / MiB), 'MiB', 0, `${EXP}: rndv-default, a rank's resident-memory growth for one 1 GiB device message, 3 trials (min–max)`, 3),
	rndvDefaultRss256M: m(stat(mpiAt(expDoc('rndv-default'), 256 * MiB).rssGrowth).map((b) => b / MiB), 'MiB', 0, `${EXP}: rndv-default, the same for 256 MiB`, 3),
	rndvDefaultGbps1G: m([mpiAt(expDoc('rndv-default'), GiB).bestGbps.median], 'GB/s', 1, `${EXP}: rndv-default, mode mpi, 1 GiB, median of 3 trials`),
	rndvNoGrowthGbps1G: m(noGrowth.map((s) => s.bestGbps.median), 'GB/s', 2, `${EXP}: UCX_RNDV_SCHEME=put_zcopy / get_zcopy and UCX_RNDV_FRAG_MEM_TYPE=cuda, 1 GiB, the median of 3 trials of each`),
	rndvNoGrowthRss1G: m(noGrowth.map((s) => s.rssGrowth.max / MiB), 'MiB', 0, `${EXP}: the same three settings, the largest resident-memory growth of any trial`),
	rndvNoGrowthCost: ((def, lo, hi) => ({ text: `${Math.round(def / hi)}–${Math.round(def / lo)}×`, from: `${EXP}: rndv-default's 1 GiB median over the slowest and fastest of the three settings' medians` }))(
		mpiAt(expDoc('rndv-default'), GiB).bestGbps.median, Math.min(...noGrowth.map((s) => s.bestGbps.median)), Math.max(...noGrowth.map((s) => s.bestGbps.median))),
	// "libgpumpi ranked beside MPI" (experiments 2026-12-04, tryucx): libgpumpi's shm path on the same transfers
	libShmRss1G: m([tryucxAt1G('lib-shm').rssGrowth.max / MiB], 'MiB', 0, `${TRYUCX}: tryucx-staging, mode lib-shm, 1 GiB, the largest resident-memory growth of 3 trials`),
	// "UCX rendezvous settings in their accepted forms" (experiments 2026-12-04, rndv2)
	protoEnable1G: m([rndv2At1G('rndv-UCX_PROTO_ENABLE=y').median], 'GB/s', 2, `${RNDV2}: UCX_PROTO_ENABLE=y on UCX 1.13.1, 1 GiB, median of 3 trials`),
	protoDefault1G: m([rndv2At1G('rndv-default').median], 'GB/s', 1, `${RNDV2}: the default engine in the same run, 1 GiB, median of 3 trials`),
	protoEnableSlower: { text: `${(rndv2At1G('rndv-default').median / rndv2At1G('rndv-UCX_PROTO_ENABLE=y').median).toFixed(1)}×`, from: `${RNDV2}: the default engine's 1 GiB median over UCX_PROTO_ENABLE=y's` },
	// "IPC-pointer reproducer" with CUDA first touched after MPI_Init (experiments 2026-12-03)
	ipcDirectCrashedAfter: { text: counts(variant(ipcUcx, 'direct', true)), from: `${EXP}: cudainit-ipc-ucx, direct, CUDA first touched after MPI_Init` },
	ipcDirectCrashedBefore: { text: counts(variant(ipcUcx, 'direct', false)), from: `${EXP}: cudainit-ipc-ucx, direct, CUDA first touched before MPI_Init` },
	ipcOb1Correct: { text: `${Math.min(...ipcOb1.variants.map((v) => v.counts.correct))} of ${Math.max(...ipcOb1.variants.map((v) => v.trials ?? v.counts.correct))}`, from: `${EXP}: cudainit-ipc-ob1, every variant and order` },
	// "UCX 1.20.0 beside 1.13.1" (ucxVersions 2026-12-06, H100, Open MPI 5.0.7, 4 ranks on one GPU, 4 trials each)
	ucx113PoolSend: ucxvCount('1.13.1', 'pool-64M', 'pool'),
	ucx120PoolSend: ucxvCount('1.20.0', 'pool-64M', 'pool'),
	ucx113VmmSend: ucxvCount('1.13.1', 'pool-64M', 'vmm'),
	ucx120VmmSend: ucxvCount('1.20.0', 'pool-64M', 'vmm'),
	ucx120Direct64M: ucxvCount('1.20.0', 'ipc-64M', 'direct'),
	ucx120SendFromImport64M: ucxvCount('1.20.0', 'ipc-64M', 'send-from-import'),
	ucx120Direct4M: ucxvCount('1.20.0', 'ipc-4M', 'direct'),
	ucx120NoIpcDirect64M: ucxvCount('1.20.0', 'ipc-64M', 'direct', 'UCX_TLS=^cuda_ipc'),
	ucx120NoIpcSendFromImport64M: ucxvCount('1.20.0', 'ipc-64M', 'send-from-import', 'UCX_TLS=^cuda_ipc'),
	// The static-cudart program under UCX's reloc CUDA hooks (silentData 2026-12-06, H100, Open MPI 5.0.7 + UCX 1.13.1)
	relocStaticCudart: ((runs) => ({ text: `passed in ${runs.filter((r) => r.rc === 0 && r.result === 'PASS').length} of ${runs.length}`, from: `${SILENT}: runs with setting reloc (cudaMalloc and pool buffers, UCX_MEMTYPE_CACHE left on)` }))(read(SILENT).runs.filter((r) => r.setting === 'reloc')),
	// "libgpumpi (gpumpi bench)": the pinned-copy limits the bench measured in each configuration
	pinnedD2H: m(lib.bench.map((b) => b.doc?.limits?.d2hGBps), 'GB/s', 1, `${LIB}: limits.d2hGBps of every bench run`),
	pinnedH2D: m(lib.bench.map((b) => b.doc?.limits?.h2dGBps), 'GB/s', 1, `${LIB}: limits.h2dGBps of every bench run`),
	// "MPS latency" (explain-latency 2026-12-03): 8-byte device latency, two ranks on one GPU
	latencyAsIs: m(stat(latency.baseline.latency_us), 'µs', 0, `${LAT}: baseline (as-is ob1 + smcuda), 3 trials (min–max)`, latency.baseline.latency_us.n),
	latencyMps: m(stat(mpsFactor.result.latency_us), 'µs', 1, `${LAT}: factor ${mpsFactor.id}, 3 trials (min–max)`, mpsFactor.result.latency_us.n),
};

function render() {
	const lines = [
		'// Generated by scripts/genMeasured.mjs from the recorded device results under test-fixtures/. Do not edit by hand:',
		'// run `node scripts/genMeasured.mjs` after adding a capture. Each entry: the value the rules print (`text`), and where',
		'// it was read (`from`: the capture file and the runs in it).',
		'',
		'/** One recorded measurement: `text` as the rules print it; `value` the median (or the one value), `min`/`max` over `n`. */',
		'export interface Measured { text: string; from: string; value?: number; min?: number; max?: number; n?: number; unit?: string }',
		'',
		'export const MEASURED = {',
	];
	for (const [k, v] of Object.entries(MEASURED)) {
		lines.push(`\t${k}: { ${Object.entries(v).map(([f, x]) => `${f}: ${JSON.stringify(x)}`).join(', ')} },`);
	}
	lines.push('} as const satisfies Record<string, Measured>;', '');
	return lines.join('\n');
}

const text = render();
if (process.argv.includes('--check')) {
	const now = fs.existsSync(OUT) ? fs.readFileSync(OUT, 'utf8') : '';
	if (now !== text) {
		process.stderr.write(`genMeasured: ${path.relative(root, OUT)} is not what the captures give; run node scripts/genMeasured.mjs\n`);
		process.exit(1);
	}
	process.stderr.write('genMeasured: up to date\n');
} else {
	fs.writeFileSync(OUT, text);
	process.stderr.write(`genMeasured: wrote ${path.relative(root, OUT)} (${Object.keys(MEASURED).length} measurements)\n`);
}
