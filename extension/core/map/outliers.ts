/**
 * Anomaly-first reading of a transport map (docs/map-schema.md, "Outliers"): which node, GPU, NIC, link or pair is
 * slow or broken, judged against the job's own population — never against a datasheet.
 *
 * Failures first: ranks whose pairs failed (timeout, MPI error, corrupted data, not measured because the rank died
 * or went silent), each named once with its pairs and what was seen. Then the rule, per path class (class and
 * channel: "host memory only over network" is never compared with "P2P over shared memory"): a subject (a host, a
 * GPU, the NIC a rank's network pairs use, a link between two hosts, a pair) is an outlier when the median bandwidth
 * of its pairs is more than OUTLIER_MADS median absolute deviations below the median of the other pairs of its class
 * AND more than OUTLIER_FRACTION below it ("leave-one-out": a slow host does not drag its own reference down), with
 * at least OUTLIER_MIN_REFERENCE other pairs. Medians and MADs are taken of the logarithm of the bandwidth: slowdowns
 * and noise are ratios (a pair at half speed is as far below as one at double speed is above). Latency is judged the
 * same way upwards, and only where pairs were measured alone (sequential schedule): under a round's concurrent load
 * an 8-byte round trip measures the load. A subject with one pair is a `suspect`, never an outlier: one measurement
 * is no evidence on a shared machine (on the 2-core CI machine single pairs of an unshaped map sat up to 3x below
 * their class median). A coarser finding explains a finer one whose pairs it contains (a slow host explains its slow
 * links and pairs; its NIC, when all its pairs use that NIC, is named in its sentence). Pure; no I/O.
 * At scale (issue 36: 16 384 ranks, two million pairs) each class is sorted once and every subject's leave-one-out
 * median and MAD read from it (leaveOutStats, O(k log n) for a subject of k pairs): copying the rest for each of the
 * 16 384 GPUs was quadratic (256 nodes took 146 s). Links judged against their whole class get no summary.
 */
import { CHANNEL_LABELS, PATH_CLASS_LABELS, type MapDocument, type MapOutlier, type MapOutlierReport, type MapPair, type MapRank, type OutlierLevel, type PairStatus } from '../../shared/mapSchema';

/** MADs (of the logarithm) below — above for latency — the reference median a subject's median must be. */
export const OUTLIER_MADS = 3;
/** And the fraction of the reference median it must differ by. */
export const OUTLIER_FRACTION = 0.1;
/**
 * Other pairs of the same path class needed for a verdict. Measured on the CI machine's Slurm lab (no shaping, one
 * rank per host): with 3 reference pairs (4 hosts) 8 of 15 maps named a host; with 21 (8 hosts), 0 of 12.
 */
export const OUTLIER_MIN_REFERENCE = 8;

/**
 * Ranks per CPU up to which speed findings are named when ranks share CPUs (`schedule.wait` nap). Measured on the
 * 2-core CI machine's Slurm lab: 8 ranks on 2 CPUs (4 per CPU) named the shaped host in 12 of 12 maps and no host in
 * 12 of 12 unshaped ones; 32 ranks on 2 CPUs (16 per CPU) named a node in 3 of 4 unshaped maps (6-64x below their
 * class: the CPU scheduler's numbers, not the links'). Beyond it the findings are held back, not named.
 */
export const CROWDED_RANKS_PER_CPU = 4;

const LEVELS: OutlierLevel[] = ['node', 'nic', 'gpu', 'link', 'pair'];
const FAILED: ReadonlySet<PairStatus> = new Set<PairStatus>(['timeout', 'mpi_error', 'data_error', 'setup_error', 'not_measured']);

/** Classes larger than this compare links and pairs (a few pairs each) with the whole class, their own pairs included. */
export const EXACT_REFERENCE_LIMIT = 512;

/** Median of a non-empty list. */
export function median(v: readonly number[]): number {
	return medianSorted(Float64Array.from(v).sort());
}

function medianSorted(s: ArrayLike<number>): number {
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Median absolute deviation from the median. */
export function mad(v: readonly number[]): number {
	const s = Float64Array.from(v).sort();
	return madSorted(s, medianSorted(s));
}

/** MAD of a sorted list around m in O(n): the deviations left and right of m are two sorted runs, merged to the middle. */
function madSorted(s: ArrayLike<number>, m: number): number {
	let j = 0;
	while (j < s.length && s[j] < m) { j++; }
	let i = j - 1;
	const devs: number[] = [];
	const want = (s.length >> 1) + 1;
	while (devs.length < want) {
		const left = i >= 0 ? m - s[i] : Infinity;
		const right = j < s.length ? s[j] - m : Infinity;
		if (left <= right) { devs.push(left); i--; } else { devs.push(right); j++; }
	}
	return s.length % 2 ? devs[want - 1] : (devs[want - 2] + devs[want - 1]) / 2;
}

/** "1.93", "0.0213", "23.4" — three significant digits. */
function num(v: number): string {
	return v >= 100 ? v.toFixed(0) : Number(v.toPrecision(3)).toString();
}

/** The NIC a rank's network traffic uses: named by UCX's lanes when logged, else the only candidate, else the one on its GPU's NUMA node. */
export function rankNic(r: MapRank | undefined, ucxLanes: readonly string[] = []): string | null {
	if (!r) { return null; }
	for (const lane of ucxLanes) {
		const dev = /^[\w-]+\/([\w.-]+?)(?::\d+)?$/.exec(lane)?.[1];
		if (dev && r.nics.some(n => n.name === dev) && dev !== 'lo' && dev !== 'memory') { return dev; }
	}
	const ib = r.nics.filter(n => n.kind === 'ib');
	const pick = (list: typeof r.nics): string | null => {
		if (list.length === 1) { return list[0].name; }
		const numa = r.gpu?.numa_node ?? -1;
		const near = numa >= 0 ? list.filter(n => n.numa_node === numa) : [];
		return near.length === 1 ? near[0].name : null;
	};
	if (ib.length > 0) { return pick(ib); }
	const up = r.nics.filter(n => n.kind === 'net' && n.name !== 'lo' && n.state !== 'down');
	const real = up.filter(n => !n.virtual);
	return pick(real.length > 0 ? real : up);
}

interface View {
	pair: MapPair;
	cls: string;
	label: string;
	/** Per rank, shared between the pairs of that rank (a 2 048-node map has two million pairs and 16 384 ranks). */
	hostA: string;
	hostB: string;
	nicA: string | null;
	nicB: string | null;
	gpuA: string | null;
	gpuB: string | null;
}

/** Call `f` with each subject of a pair at one level (nodes, the NICs its network traffic uses, GPUs, the link of two hosts, the pair). */
function eachSubject(v: View, level: OutlierLevel, f: (subject: string) => void): void {
	const two = (x: string | null, y: string | null): void => { if (x !== null) { f(x); } if (y !== null && y !== x) { f(y); } };
	switch (level) {
		case 'node': two(v.hostA, v.hostB); break;
		case 'nic': two(v.nicA, v.nicB); break;
		case 'gpu': two(v.gpuA, v.gpuB); break;
		case 'link': if (v.hostA !== v.hostB) { f(v.hostA < v.hostB ? `${v.hostA} — ${v.hostB}` : `${v.hostB} — ${v.hostA}`); } break;
		default: f(`${v.pair.a}-${v.pair.b}`);
	}
}

function pathLabel(p: MapPair): { cls: string; label: string } {
	const channel = p.channel ?? (p.same_host ? 'shared_memory' : 'network');
	return { cls: `${p.class}/${channel}`, label: `${PATH_CLASS_LABELS[p.class]} over ${CHANNEL_LABELS[channel]}` };
}

function views(doc: MapDocument): View[] {
	const rank = new Map(doc.ranks.map(r => [r.rank, r]));
	const hosts = new Map<number, string>();
	const host = (n: number): string => {
		let h = hosts.get(n);
		if (h === undefined) { h = rank.get(n)?.host ?? `rank ${n}`; hosts.set(n, h); }
		return h;
	};
	const gpus = new Map<number, string | null>();
	const gpu = (n: number): string | null => {
		let s = gpus.get(n);
		if (s === undefined) { const g = rank.get(n)?.gpu; s = g ? `${host(n)} GPU ${g.ordinal} (${g.pci_bus_id})` : null; gpus.set(n, s); }
		return s;
	};
	// The NIC of a rank without UCX lanes is the same for all its pairs; lanes (rank a's) make it per pair.
	const nics = new Map<number, string | null>();
	const nic = (n: number, lanes: readonly string[]): string | null => {
		if (lanes.length > 0) { const name = rankNic(rank.get(n), lanes); return name ? `${host(n)} ${name}` : null; }
		let s = nics.get(n);
		if (s === undefined) { const name = rankNic(rank.get(n)); s = name ? `${host(n)} ${name}` : null; nics.set(n, s); }
		return s;
	};
	const labels = new Map<string, { cls: string; label: string }>();
	return doc.pairs.map(p => {
		const channel = p.channel ?? (p.same_host ? 'shared_memory' : 'network');
		const key = `${p.class}/${channel}`;
		let path = labels.get(key);
		if (!path) { path = pathLabel(p); labels.set(key, path); }
		const network = channel === 'network';
		return {
			pair: p, cls: path.cls, label: path.label, hostA: host(p.a), hostB: host(p.b),
			nicA: network ? nic(p.a, p.transport?.ucxLanes ?? []) : null, nicB: network ? nic(p.b, []) : null, gpuA: gpu(p.a), gpuB: gpu(p.b),
		};
	});
}

/**
 * The sorted values of a class without one subject's own (`removed`: their sorted positions): its median and the
 * MAD around it, in O(k log n) instead of copying the n others for each of thousands of subjects (the same numbers
 * as medianSorted and madSorted of the copy: the same order statistics of the same values).
 */
export function leaveOutStats(sorted: ArrayLike<number>, removed: Int32Array): { median: number; mad: number; count: number } {
	const n = sorted.length;
	const count = n - removed.length;
	if (count <= 0) { return { median: 0, mad: 0, count: 0 }; }
	/** Removed positions below i. */
	const removedBelow = (i: number): number => {
		let lo = 0, hi = removed.length;
		while (lo < hi) { const m = (lo + hi) >> 1; if (removed[m] < i) { lo = m + 1; } else { hi = m; } }
		return lo;
	};
	/** The q-th (0-based) value that is not removed: the smallest i with i + 1 - removedBelow(i + 1) = q + 1. */
	const at = (q: number): number => {
		let lo = q, hi = Math.min(n - 1, q + removed.length);
		while (lo < hi) { const m = (lo + hi) >> 1; if (m + 1 - removedBelow(m + 1) >= q + 1) { hi = m; } else { lo = m + 1; } }
		return sorted[lo];
	};
	const half = count >> 1;
	const med = count % 2 ? at(half) : (at(half - 1) + at(half)) / 2;
	// Deviations: left of the median (med - x, growing outwards) and right (x - med), merged; the K-th smallest of two sorted runs.
	let below = 0, hi0 = count;
	while (below < hi0) { const m = (below + hi0) >> 1; if (at(m) < med) { below = m + 1; } else { hi0 = m; } }
	const nl = below, nr = count - below;
	const left = (t: number): number => med - at(nl - 1 - t);
	const right = (t: number): number => at(nl + t) - med;
	const kth = (k: number): number => {
		let lo = Math.max(0, k - nr), hi = Math.min(k, nl);
		while (lo <= hi) {
			const a = (lo + hi) >> 1, b = k - a;
			const lPrev = a > 0 ? left(a - 1) : -Infinity, lNext = a < nl ? left(a) : Infinity;
			const rPrev = b > 0 ? right(b - 1) : -Infinity, rNext = b < nr ? right(b) : Infinity;
			if (lPrev > rNext) { hi = a - 1; } else if (rPrev > lNext) { lo = a + 1; } else { return Math.max(lPrev, rPrev); }
		}
		return 0;
	};
	const want = half + 1;
	const madValue = count % 2 ? kth(want) : (kth(want - 1) + kth(want)) / 2;
	return { median: med, mad: madValue, count };
}

type Metric = 'bandwidth_gbps' | 'latency_us';

interface Candidate { finding: MapOutlier; pairSet: Set<MapPair>; levelIndex: number; wholeClass: boolean }

/** The measured pairs of one path class for one metric, sorted once for every level. */
interface Population {
	label: string;
	measured: View[];
	/** Log of the metric, by index in `measured`. */
	logs: Float64Array;
	/** The logs in ascending order (a numeric sort: no comparator over two million pairs). */
	sortedLogs: Float64Array;
}

function population(list: View[], metric: Metric): Population {
	const measured = list.filter(v => v.pair[metric] !== null && (v.pair[metric] as number) > 0 && (v.pair.status === 'ok' || v.pair.status === 'data_error'));
	const logs = Float64Array.from(measured, v => Math.log(v.pair[metric] as number));
	return { label: list[0]?.label ?? '', measured, logs, sortedLogs: Float64Array.from(logs).sort() };
}

/** Distinct positions in `sorted` of the values `own` (a subset of it, as a multiset), ascending. */
function positionsOf(sorted: Float64Array, own: readonly number[]): Int32Array {
	const mine = Float64Array.from(own).sort();
	const out = new Int32Array(mine.length);
	for (let k = 0; k < mine.length; k++) {
		if (k > 0 && mine[k] === mine[k - 1]) { out[k] = out[k - 1] + 1; continue; }
		let lo = 0, hi = sorted.length;
		while (lo < hi) { const m = (lo + hi) >> 1; if (sorted[m] < mine[k]) { lo = m + 1; } else { hi = m; } }
		out[k] = lo;
	}
	return out;
}

/** The slow (or high-latency) subjects of one path class and level. */
function judge(pop: Population, level: OutlierLevel, metric: Metric, summaries: MapOutlierReport['summaries'] | null): Candidate[] {
	const { measured, logs, sortedLogs } = pop;
	const out: Candidate[] = [];
	const higherIsWorse = metric === 'latency_us';
	const wholeClass = measured.length > EXACT_REFERENCE_LIMIT && (level === 'link' || level === 'pair');
	const classRef = sortedLogs.length > 0 ? medianSorted(sortedLogs) : 0;
	const classMad = sortedLogs.length > 0 && wholeClass ? madSorted(sortedLogs, classRef) : 0;
	const floor = higherIsWorse ? Math.log(1 + OUTLIER_FRACTION) : -Math.log(1 - OUTLIER_FRACTION);
	// Against the whole class, a subject's median is beyond the line only if one of its pairs is: group only those
	// subjects (a 2 048-node map has two million links of one pair each), and name only pairs of their hosts.
	let only: Set<string> | null = null;
	let onlyHosts: Set<string> | null = null;
	if (wholeClass) {
		const margin = Math.max(OUTLIER_MADS * classMad, floor);
		const subjects = new Set<string>();
		const hosts = new Set<string>();
		measured.forEach((v, i) => {
			const x = logs[i];
			if (higherIsWorse ? x > classRef + margin : x < classRef - margin) { eachSubject(v, level, s => subjects.add(s)); hosts.add(v.hostA); hosts.add(v.hostB); }
		});
		only = subjects;
		onlyHosts = hosts;
	}
	// Subject → indices (in `measured`) of its pairs.
	const bySubject = new Map<string, number[]>();
	measured.forEach((v, i) => {
		if (onlyHosts && !onlyHosts.has(v.hostA) && !onlyHosts.has(v.hostB)) { return; }
		eachSubject(v, level, s => {
			if (only && !only.has(s)) { return; }
			const list2 = bySubject.get(s);
			if (list2) { list2.push(i); } else { bySubject.set(s, [i]); }
		});
	});
	for (const [subject, mine] of bySubject) {
		const own = mine.map(i => logs[i]);
		const value = Math.exp(median(own));
		// Links measured against their whole class have no summary: one pair each, its own number (two million of them at 2 048 nodes).
		if (summaries && level !== 'pair' && metric === 'bandwidth_gbps' && !wholeClass) {
			summaries.push({ level, subject, path_class: pop.label, median: value, mad: mad(own), pairs: own.length });
		}
		let ref = classRef;
		let spread = classMad;
		let restCount = measured.length;
		if (!wholeClass) {
			const rest = leaveOutStats(sortedLogs, positionsOf(sortedLogs, own));
			restCount = rest.count;
			if (rest.count < OUTLIER_MIN_REFERENCE) { continue; }
			ref = rest.median;
			spread = rest.mad;
		}
		const margin = Math.max(OUTLIER_MADS * spread, floor);
		const beyond = (x: number): boolean => (higherIsWorse ? x > ref + margin : x < ref - margin);
		if (!beyond(Math.log(value))) { continue; }
		const every = own.every(beyond);
		const pairs = mine.map(i => measured[i].pair);
		out.push({
			pairSet: new Set(pairs),
			levelIndex: LEVELS.indexOf(level),
			wholeClass,
			finding: {
				level, subject, kind: higherIsWorse ? 'high_latency' : 'slow', path_class: pop.label, value, reference: Math.exp(ref), mad: spread,
				threshold: Math.exp(higherIsWorse ? ref + margin : ref - margin), pairs: own.length, reference_pairs: restCount,
				evidence_pairs: pairs.map(p => ({ a: p.a, b: p.b, value: p[metric], status: p.status })),
				facts: [], explains: [],
				sentence: `${every ? 'every pair' : `median of ${own.length} pairs`}`,
			},
		});
	}
	return out;
}

/** NIC / GPU / NUMA facts of the ranks behind a finding, and the NIC all its pairs on `host` use (if one). */
function factsOf(ranks: ReadonlyMap<number, MapRank>, f: MapOutlier, pairs: ReadonlySet<MapPair>, host: string | null): { facts: string[]; nic: string | null } {
	const involved = [...new Set(f.evidence_pairs.flatMap(p => [p.a, p.b]))].map(n => ranks.get(n)).filter((r): r is MapRank => !!r)
		.filter(r => host === null || r.host === host);
	const facts: string[] = [];
	const nics = new Set<string>();
	for (const r of involved.slice(0, 8)) {
		let pairOf: MapPair | undefined;
		for (const p of pairs) { if (p.a === r.rank || p.b === r.rank) { pairOf = p; break; } }
		const network = pairOf ? (pairOf.channel ?? (pairOf.same_host ? 'shared_memory' : 'network')) === 'network' : false;
		const nicName = network ? rankNic(r, pairOf && pairOf.a === r.rank ? pairOf.transport?.ucxLanes ?? [] : []) : null;
		const nic = nicName ? r.nics.find(n => n.name === nicName) : undefined;
		if (nicName) { nics.add(nicName); }
		const parts = [`rank ${r.rank} on ${r.host}`];
		if (r.gpu) { parts.push(`GPU ${r.gpu.ordinal} ${r.gpu.pci_bus_id} NUMA ${r.gpu.numa_node}`); }
		if (nic) {
			const far = r.gpu && nic.numa_node >= 0 && r.gpu.numa_node >= 0 && nic.numa_node !== r.gpu.numa_node;
			parts.push(`NIC ${nic.name} (${nic.kind}${nic.virtual ? ', virtual' : ''}, NUMA ${nic.numa_node}${nic.state ? `, ${nic.state}` : ''})${far ? ' — NUMA-far from its GPU' : ''}`);
		}
		if (r.affinity && 'numa_mismatch' in r.affinity && (r.affinity as { numa_mismatch?: unknown }).numa_mismatch === true) { parts.push('CPU binding off the GPU\'s NUMA node'); }
		facts.push(parts.join('; '));
	}
	return { facts, nic: nics.size === 1 ? [...nics][0] : null };
}

function describe(ranks: ReadonlyMap<number, MapRank>, f: MapOutlier, pairs: ReadonlySet<MapPair>, wholeClass: boolean): void {
	const unit = f.kind === 'high_latency' ? 'µs' : 'GB/s';
	const against = wholeClass ? `the ${f.reference_pairs} pairs of its class` : `the other ${f.reference_pairs} pairs`;
	const how = `${f.sentence} at ${num(f.value ?? 0)} ${unit} vs ${num(f.reference ?? 0)} ${unit} median of ${against} (spread ×${num(Math.exp(f.mad ?? 0))}, ${f.kind === 'high_latency' ? 'above' : 'below'} ${num(f.threshold ?? 0)} ${unit}; ${f.path_class})`;
	const hostOf = f.level === 'node' ? f.subject : f.level === 'nic' || f.level === 'gpu' ? f.subject.split(' ')[0] : null;
	const { facts, nic } = factsOf(ranks, f, pairs, hostOf);
	f.facts = facts;
	const far = facts.some(x => x.includes('NUMA-far'));
	const latency = f.kind === 'high_latency' ? 'latency: ' : '';
	switch (f.level) {
		case 'node': f.sentence = `node ${f.subject}: ${latency}${how.replace(/^every pair/, nic ? `every pair through ${nic}` : 'every pair')}`; break;
		case 'nic': {
			const [h, ...rest] = f.subject.split(' ');
			f.sentence = `node ${h}: ${latency}${how.replace(/^every pair|^median of \d+ pairs/, m => `${m} through ${rest.join(' ')}`)}${far ? ' — NUMA-far NIC' : ''}`;
			break;
		}
		case 'gpu': f.sentence = `${f.subject}: ${latency}${how}`; break;
		case 'link': f.sentence = `link ${f.subject}: ${latency}${how}`; break;
		default: f.sentence = `pair ${f.subject}: ${latency}${how}`;
	}
}

/** Ranks whose pairs failed, each named once (the rank with the most failed pairs first), with what was seen. */
function failures(doc: MapDocument): MapOutlier[] {
	const host = new Map(doc.ranks.map(r => [r.rank, r.host]));
	const known = new Set([...(doc.partial?.failed_ranks ?? []), ...(doc.incomplete?.silent_ranks ?? [])]);
	// A pair the run never reached is a rank's failure only when one of its ranks is known to have died or gone silent.
	const failed = doc.pairs.filter(p => FAILED.has(p.status) && (p.status !== 'not_measured' || known.has(p.a) || known.has(p.b)));
	if (failed.length === 0) { return []; }
	const left = new Set(failed);
	const out: MapOutlier[] = [];
	for (;;) {
		const count = new Map<number, number>();
		for (const p of left) { for (const r of [p.a, p.b]) { count.set(r, (count.get(r) ?? 0) + 1); } }
		const best = [...count.entries()].sort((x, y) => (known.has(y[0]) ? 1 : 0) - (known.has(x[0]) ? 1 : 0) || y[1] - x[1] || x[0] - y[0])[0];
		if (!best || (best[1] < 2 && !known.has(best[0]))) { break; }
		const mine = [...left].filter(p => p.a === best[0] || p.b === best[0]);
		for (const p of mine) { left.delete(p); }
		const kinds = new Map<string, number>();
		for (const p of mine) { kinds.set(p.status, (kinds.get(p.status) ?? 0) + 1); }
		const what = [...kinds.entries()].map(([k, n]) => `${n} ${k.replace('_', ' ')}`).join(', ');
		const firstError = mine.find(p => p.error)?.error ?? '';
		const state = doc.partial?.failed_ranks.includes(best[0]) ? 'failed mid-run' : doc.incomplete?.silent_ranks.includes(best[0]) ? 'went silent' : 'its pairs failed';
		out.push({
			level: 'rank', subject: `rank ${best[0]} (${host.get(best[0]) ?? '?'})`, kind: 'failed', path_class: [...new Set(mine.map(p => pathLabel(p).label))].join(', '),
			value: null, reference: null, mad: null, pairs: mine.length, reference_pairs: 0,
			evidence_pairs: mine.map(p => ({ a: p.a, b: p.b, value: null, status: p.status })), facts: mine.slice(0, 6).map(p => `${p.a}-${p.b}: ${p.status}${p.error ? `: ${p.error}` : ''}`),
			explains: [], sentence: `rank ${best[0]} (${host.get(best[0]) ?? '?'}) ${state}: ${mine.length} pair${mine.length === 1 ? '' : 's'} (${what})${firstError ? ` — ${firstError}` : ''}`,
		});
	}
	for (const p of left) {
		if (p.status === 'not_measured') { continue; }  // the run's end: the headline says so
		out.push({
			level: 'pair', subject: `${p.a}-${p.b}`, kind: 'failed', path_class: pathLabel(p).label, value: null, reference: null, mad: null, pairs: 1, reference_pairs: 0,
			evidence_pairs: [{ a: p.a, b: p.b, value: null, status: p.status }], facts: [], explains: [],
			sentence: `pair ${p.a}-${p.b} (${host.get(p.a) ?? '?'} — ${host.get(p.b) ?? '?'}): ${p.status.replace('_', ' ')}${p.error ? ` — ${p.error}` : ''}`,
		});
	}
	return out;
}

/** How crowded the most crowded machine was: ranks per CPU (from the engine, or read off the reason of older maps) and why. */
export function crowding(doc: MapDocument): { perCpu: number; reason: string } | null {
	const w = doc.schedule?.wait;
	if (!w || w.mode !== 'nap') { return null; }
	const said = /^(\d+) ranks share the (\d+) CPUs/.exec(w.reason ?? '');
	const perCpu = typeof w.ranks_per_cpu === 'number' ? w.ranks_per_cpu : said && Number(said[2]) > 0 ? Number(said[1]) / Number(said[2]) : null;
	if (perCpu === null) { return null; }
	return { perCpu, reason: w.reason ?? `${w.oversubscribed_ranks.length} ranks outnumber their machines' CPUs` };
}

/** The analysis: failures, then slow and high-latency subjects, coarse before fine, each explained finer finding folded in. */
export function findOutliers(doc: MapDocument): MapOutlierReport {
	const latencyJudged = doc.schedule?.mode !== 'rounds';
	const rule = `per path class, on the logarithm of the bandwidth: a node, NIC, GPU, link or pair whose median is more than ${OUTLIER_MADS} MAD and more than ${OUTLIER_FRACTION * 100} % below the median of the other pairs of its class (at least ${OUTLIER_MIN_REFERENCE} of them); ${latencyJudged ? 'latency the same way upwards' : 'latency not judged (pairs measured in concurrent rounds)'}; one pair alone is a suspect, not an outlier`;
	const summaries: MapOutlierReport['summaries'] = [];
	const rankMap = new Map(doc.ranks.map(r => [r.rank, r]));
	const byClass = new Map<string, View[]>();
	for (const v of views(doc)) {
		const list = byClass.get(v.cls);
		if (list) { list.push(v); } else { byClass.set(v.cls, [v]); }
	}
	const found: MapOutlier[] = [];
	const suspects: MapOutlier[] = [];
	let small = 0;
	for (const metric of latencyJudged ? ['bandwidth_gbps', 'latency_us'] as const : ['bandwidth_gbps'] as const) {
		const cands: Candidate[] = [];
		for (const list of byClass.values()) {
			if (metric === 'bandwidth_gbps' && list.filter(v => v.pair.bandwidth_gbps !== null).length <= OUTLIER_MIN_REFERENCE) { small++; }
			const pop = population(list, metric);
			for (const level of LEVELS) { cands.push(...judge(pop, level, metric, metric === 'bandwidth_gbps' ? summaries : null)); }
		}
		const ratio = (c: Candidate): number => Math.abs(Math.log((c.finding.value ?? 1) / (c.finding.reference || 1)));
		cands.sort((x, y) => x.levelIndex - y.levelIndex || ratio(y) - ratio(x));
		const kept: Candidate[] = [];
		for (const c of cands) {
			const by = kept.find(k => k.levelIndex < c.levelIndex && k.finding.path_class === c.finding.path_class && [...c.pairSet].every(p => k.pairSet.has(p)));
			if (by) { by.finding.explains.push(`${c.finding.level} ${c.finding.subject}`); continue; }
			kept.push(c);
		}
		for (const k of kept) {
			describe(rankMap, k.finding, k.pairSet, k.wholeClass);
			(k.finding.pairs < 2 ? suspects : found).push(k.finding);
		}
	}
	const crowd = crowding(doc);
	const held = crowd && crowd.perCpu > CROWDED_RANKS_PER_CPU ? found.splice(0) : [];
	const caveat = !crowd ? null : held.length > 0 || crowd.perCpu > CROWDED_RANKS_PER_CPU
		? `speeds not judged: ${fmtPerCpu(crowd.perCpu)} ranks per CPU (${crowd.reason}); beyond ${CROWDED_RANKS_PER_CPU} per CPU the timings are the CPU scheduler's, not the links' — map again with at most one rank per CPU`
		: `ranks share CPUs (${fmtPerCpu(crowd.perCpu)} per CPU): the timings include the CPU scheduler's share; the rule was seen to hold up to ${CROWDED_RANKS_PER_CPU} per CPU`;
	const outliers = [...failures(doc), ...found];
	const measured = doc.pairs.filter(p => p.status === 'ok' || p.status === 'data_error').length;
	const partial = doc.partial ? `partial map (${doc.partial.reason}): ${measured} of ${doc.pairs.length} pairs measured. ` : '';
	const suspectNote = suspects.length > 0 ? `; ${suspects.length} single pair${suspects.length === 1 ? '' : 's'} below the rule (suspects, one measurement each)` : '';
	const heldNote = held.length > 0 ? `; ${held.length} speed finding${held.length === 1 ? '' : 's'} held back` : '';
	const verdict = outliers.length > 0
		? `${partial}${outliers[0].sentence}${outliers.length > 1 ? ` (+${outliers.length - 1} more)` : ''}`
		: crowd && crowd.perCpu > CROWDED_RANKS_PER_CPU
			? `${partial}no failure in ${measured} measured pairs${heldNote}`
			: `${partial}no outlier: ${measured} measured pairs in ${byClass.size} path class${byClass.size === 1 ? '' : 'es'}, no node, NIC, GPU or link beyond ${OUTLIER_MADS} MAD and ${OUTLIER_FRACTION * 100} % of its class${small > 0 ? ` (${small} class${small === 1 ? '' : 'es'} with too few pairs to judge: fewer than ${OUTLIER_MIN_REFERENCE + 1})` : ''}${suspectNote}`;
	const headline = caveat ? `${verdict} — ${caveat}` : verdict;
	return { rule, headline, outliers, suspects, ...(crowd ? { held_back: held, caveat } : {}), summaries };
}

function fmtPerCpu(v: number): string { return Number.isInteger(v) ? String(v) : v.toFixed(1); }

/** The analysis as text lines for the CLI (headline first). */
export function renderOutlierLines(r: MapOutlierReport): string[] {
	const out = [r.headline];
	for (const f of r.outliers) {
		out.push(`  - ${f.sentence}`);
		if (f.explains.length > 0) { out.push(`      explains: ${f.explains.slice(0, 8).join(', ')}${f.explains.length > 8 ? `, … (${f.explains.length} in all)` : ''}`); }
		for (const x of f.facts.slice(0, 4)) { out.push(`      ${x}`); }
	}
	for (const f of r.suspects.slice(0, 5)) { out.push(`  ? suspect (one pair, measure again before blaming it): ${f.sentence}`); }
	if (r.suspects.length > 5) { out.push(`  ? … ${r.suspects.length - 5} more suspects`); }
	for (const f of (r.held_back ?? []).slice(0, 5)) { out.push(`  ~ held back (ranks outnumbered the CPUs): ${f.sentence}`); }
	if ((r.held_back?.length ?? 0) > 5) { out.push(`  ~ … ${(r.held_back?.length ?? 0) - 5} more held back`); }
	return out;
}
