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
 * 16 384 GPUs was quadratic (256 nodes took 146 s). Links judged against their whole class get no summary. The pairs
 * are read once into columns of subject ids, and each level groups them in one pass: every subject's values come out
 * of the class's one sort, no per-subject sort or search (2 M pairs: 24 s before, docs/benchmarks-map.md). The work is
 * a sequence of steps: findOutliers runs them at once, findOutliersAsync between turns of the event loop.
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

function pathLabel(p: MapPair): { cls: string; label: string } {
	const channel = p.channel ?? (p.same_host ? 'shared_memory' : 'network');
	return { cls: `${p.class}/${channel}`, label: `${PATH_CLASS_LABELS[p.class]} over ${CHANNEL_LABELS[channel]}` };
}

/** Subject names of one level, each given a number once (ids index the typed arrays of the grouping). */
class Names {
	readonly list: string[] = [];
	private readonly _ids = new Map<string, number>();
	id(name: string): number {
		let i = this._ids.get(name);
		if (i === undefined) { i = this.list.length; this.list.push(name); this._ids.set(name, i); }
		return i;
	}
}

/**
 * The pairs as columns (issue 36: two million pairs as two million small objects kept the collector busy for a third
 * of the time): per pair its path class and the ids of its subjects at each level (-1: none). Links and pairs are
 * named only when asked (two million names, of which a handful are ever needed at that size).
 */
interface Table {
	pairs: readonly MapPair[];
	/** Path class of each pair: index into `classes`. */
	cls: Int32Array;
	classes: Array<{ cls: string; label: string }>;
	node: Names; nic: Names; gpu: Names; link: Names; pair: Names;
	hostA: Int32Array; hostB: Int32Array; nicA: Int32Array; nicB: Int32Array; gpuA: Int32Array; gpuB: Int32Array;
}

const NO_LANES: readonly string[] = [];

/** Pairs handled between two chances to yield (findOutliersAsync): tens of milliseconds of work at most. */
const CHUNK = 1 << 15;

function* buildTable(doc: MapDocument): Generator<void, Table> {
	const rank = new Map(doc.ranks.map(r => [r.rank, r]));
	const n = doc.pairs.length;
	const t: Table = {
		pairs: doc.pairs, cls: new Int32Array(n), classes: [], node: new Names(), nic: new Names(), gpu: new Names(), link: new Names(), pair: new Names(),
		hostA: new Int32Array(n), hostB: new Int32Array(n), nicA: new Int32Array(n), nicB: new Int32Array(n), gpuA: new Int32Array(n), gpuB: new Int32Array(n),
	};
	// Per rank: its host, GPU and (without UCX lanes) NIC ids; lanes (rank a's) make the NIC per pair.
	const perRank = new Map<number, { host: number; hostName: string; gpu: number; nic: number | undefined }>();
	const of = (r: number): { host: number; hostName: string; gpu: number; nic: number | undefined } => {
		let x = perRank.get(r);
		if (x === undefined) {
			const rec = rank.get(r);
			const hostName = rec?.host ?? `rank ${r}`;
			const g = rec?.gpu;
			x = { host: t.node.id(hostName), hostName, gpu: g ? t.gpu.id(`${hostName} GPU ${g.ordinal} (${g.pci_bus_id})`) : -1, nic: undefined };
			perRank.set(r, x);
		}
		return x;
	};
	const nicOf = (r: number, lanes: readonly string[]): number => {
		const x = of(r);
		if (lanes.length > 0) { const name = rankNic(rank.get(r), lanes); return name ? t.nic.id(`${x.hostName} ${name}`) : -1; }
		if (x.nic === undefined) { const name = rankNic(rank.get(r)); x.nic = name ? t.nic.id(`${x.hostName} ${name}`) : -1; }
		return x.nic;
	};
	const classIds = new Map<string, Map<string, number>>();
	for (let i = 0; i < n; i++) {
		if ((i & (CHUNK - 1)) === CHUNK - 1) { yield; }
		const p = doc.pairs[i];
		const channel = p.channel ?? (p.same_host ? 'shared_memory' : 'network');
		let byChannel = classIds.get(p.class);
		if (byChannel === undefined) { byChannel = new Map(); classIds.set(p.class, byChannel); }
		let c = byChannel.get(channel);
		if (c === undefined) { c = t.classes.length; t.classes.push(pathLabel(p)); byChannel.set(channel, c); }
		t.cls[i] = c;
		const a = of(p.a), b = of(p.b);
		t.hostA[i] = a.host; t.hostB[i] = b.host; t.gpuA[i] = a.gpu; t.gpuB[i] = b.gpu;
		const network = channel === 'network';
		t.nicA[i] = network ? nicOf(p.a, p.transport?.ucxLanes ?? NO_LANES) : -1;
		t.nicB[i] = network ? nicOf(p.b, NO_LANES) : -1;
	}
	return t;
}

/**
 * The subjects of pair `i` at one level written to out[at], out[at + 1] (-1: none): its nodes, the NICs its network
 * traffic uses, its GPUs (the second only when it differs from the first), the link of its two hosts, the pair itself.
 */
function subjectsOf(t: Table, level: OutlierLevel, i: number, out: Int32Array, at: number): void {
	let x = -1, y = -1;
	switch (level) {
		case 'node': x = t.hostA[i]; y = t.hostB[i]; break;
		case 'nic': x = t.nicA[i]; y = t.nicB[i]; break;
		case 'gpu': x = t.gpuA[i]; y = t.gpuB[i]; break;
		case 'link': {
			out[at + 1] = -1;
			if (t.hostA[i] === t.hostB[i]) { out[at] = -1; break; }
			const ha = t.node.list[t.hostA[i]], hb = t.node.list[t.hostB[i]];
			out[at] = t.link.id(ha < hb ? `${ha} — ${hb}` : `${hb} — ${ha}`);
			break;
		}
		default: out[at] = t.pair.id(`${t.pairs[i].a}-${t.pairs[i].b}`); out[at + 1] = -1; return;
	}
	if (level === 'node' || level === 'nic' || level === 'gpu') { out[at] = x; out[at + 1] = y !== x ? y : -1; }
}

function namesOf(t: Table, level: OutlierLevel): Names {
	return level === 'node' ? t.node : level === 'nic' ? t.nic : level === 'gpu' ? t.gpu : level === 'link' ? t.link : t.pair;
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
	/**
	 * The q-th (0-based) value that is not removed: at position q + j, j the number of removed positions before it —
	 * the count of removed[t] − t ≤ q (non-decreasing in t, the positions being distinct and ascending): one search
	 * over the k removed, not over the class.
	 */
	const at = (q: number): number => {
		let lo = 0, hi = removed.length;
		while (lo < hi) { const m = (lo + hi) >> 1; if (removed[m] - m <= q) { lo = m + 1; } else { hi = m; } }
		return sorted[q + lo];
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
	/** Indices (in the document) of the measured pairs, in document order. */
	measured: Int32Array;
	/** Log of the metric, by index in `measured`. */
	logs: Float64Array;
	/** The logs in ascending order (a numeric sort: no comparator over two million pairs). */
	sortedLogs: Float64Array;
	/** Index in `measured` of the pair at each position of `sortedLogs` (equal values: in document order). */
	atPosition: Int32Array;
	/** The inverse: position in `sortedLogs` of each pair of `measured`. */
	positionOf: Int32Array;
}

/**
 * Work arrays of the grouping, reused by every class and level: a fresh 16 MB array per level made the collector
 * walk the whole 1.5 GiB document again and again (external memory pressure), a third of the time at 2 048 nodes.
 */
class Scratch {
	private _buffers = new Map<string, Int32Array>();
	/** An array of at least `n` elements for `name` (contents undefined). */
	get(name: string, n: number): Int32Array {
		let b = this._buffers.get(name);
		if (!b || b.length < n) { b = new Int32Array(Math.max(n, 1024)); this._buffers.set(name, b); }
		return b.subarray(0, n);
	}
}

const LITTLE_ENDIAN = new Uint8Array(Float64Array.of(1).buffer)[7] === 0x3f;

/**
 * Indices 0..n−1 in ascending order of `v` (no NaN; −0 before +0, as Float64Array.prototype.sort), equal values in
 * index order: a least-significant-digit radix sort of the IEEE 754 bits made order-preserving (sign bit flipped for
 * positives, every bit for negatives), four passes of 16 bits carrying the keys along (sequential reads). Two million
 * values: a sort and a binary search per value took ~2 s, mostly cache misses. Big-endian machines sort with a comparator.
 */
function* argsort(v: Float64Array, scratch: Scratch): Generator<void, Int32Array> {
	const n = v.length;
	const fresh = new Int32Array(n);
	for (let i = 0; i < n; i++) { fresh[i] = i; }
	let idx: Int32Array = fresh;
	if (!LITTLE_ENDIAN) { return fresh.sort((x, y) => (v[x] < v[y] ? -1 : v[x] > v[y] ? 1 : Object.is(v[x], -0) && !Object.is(v[y], -0) ? -1 : Object.is(v[y], -0) && !Object.is(v[x], -0) ? 1 : x - y)); }
	const bits = new Uint32Array(v.buffer, v.byteOffset, 2 * n);
	let lo: Uint32Array = new Uint32Array(n), hi: Uint32Array = new Uint32Array(n);
	for (let i = 0; i < n; i++) {
		const h = bits[2 * i + 1], l = bits[2 * i];
		if (h & 0x80000000) { hi[i] = ~h >>> 0; lo[i] = ~l >>> 0; } else { hi[i] = (h | 0x80000000) >>> 0; lo[i] = l; }
	}
	let idx2: Int32Array = scratch.get('argsort-idx', n);
	let lo2: Uint32Array = new Uint32Array(scratch.get('argsort-lo', n).buffer, 0, n), hi2: Uint32Array = new Uint32Array(scratch.get('argsort-hi', n).buffer, 0, n);
	const count = new Int32Array(65537);
	for (let pass = 0; pass < 4; pass++) {
		yield;
		const keys = pass < 2 ? lo : hi;
		const shift = pass % 2 === 0 ? 0 : 16;
		count.fill(0);
		for (let j = 0; j < n; j++) { count[((keys[j] >>> shift) & 0xffff) + 1]++; }
		if (count.some(c => c === n)) { continue; }  // every value has this digit: nothing moves
		for (let d = 0; d < 65536; d++) { count[d + 1] += count[d]; }
		for (let j = 0; j < n; j++) {
			const at = count[(keys[j] >>> shift) & 0xffff]++;
			idx2[at] = idx[j]; lo2[at] = lo[j]; hi2[at] = hi[j];
		}
		[idx, idx2] = [idx2, idx];
		[lo, lo2] = [lo2, lo];
		[hi, hi2] = [hi2, hi];
	}
	// The result must not be a scratch buffer (the next class reuses them).
	return idx === fresh ? idx : Int32Array.from(idx);
}

function* population(t: Table, members: Int32Array, label: string, metric: Metric, scratch: Scratch): Generator<void, Population> {
	// One pass over the pair objects (two million of them are scattered over the heap: slow to read), in chunks.
	const values = new Float64Array(members.length);
	let n = 0;
	for (let j = 0; j < members.length; j++) {
		if ((j & (CHUNK - 1)) === CHUNK - 1) { yield; }
		const p = t.pairs[members[j]];
		const x = p[metric];
		if (x !== null && x > 0 && (p.status === 'ok' || p.status === 'data_error')) { values[j] = x; n++; } else { values[j] = NaN; }
	}
	const measured = new Int32Array(n);
	const logs = new Float64Array(n);
	for (let j = 0, k = 0; j < members.length; j++) {
		if (values[j] === values[j]) { measured[k] = members[j]; logs[k++] = Math.log(values[j]); }
	}
	yield;
	// The order of the logs: a radix sort of their bits carrying the indices (stable: equal values in document order).
	const atPosition = yield* argsort(logs, scratch);
	const sortedLogs = new Float64Array(n);
	const positionOf = new Int32Array(n);
	for (let pos = 0; pos < n; pos++) {
		if ((pos & (CHUNK - 1)) === CHUNK - 1) { yield; }
		const k = atPosition[pos];
		sortedLogs[pos] = logs[k];
		positionOf[k] = pos;
	}
	return { label, measured, logs, sortedLogs, atPosition, positionOf };
}

/**
 * The slow (or high-latency) subjects of one path class and level. One pass groups the pairs by subject (in the
 * sorted order, so each subject's values come sorted and its positions in the class are known: the leave-one-out
 * statistics need no search and no copy), then each subject is judged from its own run of values.
 */
function* judge(t: Table, pop: Population, level: OutlierLevel, metric: Metric, summaries: MapOutlierReport['summaries'] | null, scratch: Scratch): Generator<void, Candidate[]> {
	const { measured, logs, sortedLogs, atPosition, positionOf } = pop;
	const n = measured.length;
	const out: Candidate[] = [];
	const higherIsWorse = metric === 'latency_us';
	const wholeClass = n > EXACT_REFERENCE_LIMIT && (level === 'link' || level === 'pair');
	const classRef = n > 0 ? medianSorted(sortedLogs) : 0;
	const classMad = n > 0 && wholeClass ? madSorted(sortedLogs, classRef) : 0;
	const floor = higherIsWorse ? Math.log(1 + OUTLIER_FRACTION) : -Math.log(1 - OUTLIER_FRACTION);
	const names = namesOf(t, level);
	const sub = scratch.get('sub', 2 * n).fill(-1);
	if (wholeClass) {
		// Against the whole class, a subject's median is beyond the line only if one of its pairs is: group only those
		// subjects (a 2 048-node map has two million links of one pair each), and name only pairs of their hosts.
		const margin = Math.max(OUTLIER_MADS * classMad, floor);
		// A link is the unordered pair of its hosts' ids, a pair its two ranks: numbers, so that only the flagged ones get names.
		const key = level === 'link'
			? (i: number): number => (t.hostA[i] === t.hostB[i] ? -1 : Math.min(t.hostA[i], t.hostB[i]) * t.node.list.length + Math.max(t.hostA[i], t.hostB[i]))
			: (i: number): string | number => (Number.isSafeInteger(t.pairs[i].a * 2 ** 24 + t.pairs[i].b) && t.pairs[i].b >= 0 && t.pairs[i].b < 2 ** 24 ? t.pairs[i].a * 2 ** 24 + t.pairs[i].b : `${t.pairs[i].a}-${t.pairs[i].b}`);
		const onlyKeys = new Set<string | number>();
		const onlyHosts = new Uint8Array(t.node.list.length);
		for (let k = 0; k < n; k++) {
			const x = logs[k];
			if (higherIsWorse ? x > classRef + margin : x < classRef - margin) {
				const i = measured[k];
				onlyKeys.add(key(i));
				onlyHosts[t.hostA[i]] = 1;
				onlyHosts[t.hostB[i]] = 1;
			}
		}
		for (let k = 0; k < n; k++) {
			if ((k & (CHUNK - 1)) === CHUNK - 1) { yield; }
			const i = measured[k];
			if (!onlyHosts[t.hostA[i]] && !onlyHosts[t.hostB[i]]) { continue; }
			const kk = key(i);
			if (kk !== -1 && onlyKeys.has(kk)) { subjectsOf(t, level, i, sub, 2 * k); }
		}
	} else if (level === 'node' || level === 'nic' || level === 'gpu') {
		// The per-rank subjects: a tight loop over two columns (two million pairs, three levels).
		const colA = level === 'node' ? t.hostA : level === 'nic' ? t.nicA : t.gpuA;
		const colB = level === 'node' ? t.hostB : level === 'nic' ? t.nicB : t.gpuB;
		for (let k = 0; k < n; k++) {
			if ((k & (CHUNK - 1)) === CHUNK - 1) { yield; }
			const i = measured[k];
			const x = colA[i], y = colB[i];
			sub[2 * k] = x;
			sub[2 * k + 1] = y !== x ? y : -1;
		}
	} else {
		for (let k = 0; k < n; k++) {
			if ((k & (CHUNK - 1)) === CHUNK - 1) { yield; }
			subjectsOf(t, level, measured[k], sub, 2 * k);
		}
	}
	yield;
	// Subjects in the order they first appear (the order of the findings and summaries), and their pair counts.
	const count = new Int32Array(names.list.length);
	const order: number[] = [];
	for (let j = 0; j < 2 * n; j++) { const s = sub[j]; if (s >= 0 && count[s]++ === 0) { order.push(s); } }
	// Each subject's positions in the sorted logs, ascending: one run per subject in `runs`.
	const start = new Int32Array(count.length + 1);
	for (let s = 0; s < count.length; s++) { start[s + 1] = start[s] + count[s]; }
	const next = start.slice(0, count.length);
	const runs = scratch.get('runs', start[count.length]);
	for (let k = 0; k < n; k++) {
		if ((k & (CHUNK - 1)) === CHUNK - 1) { yield; }
		const pos = positionOf[k];
		const s0 = sub[2 * k], s1 = sub[2 * k + 1];
		if (s0 >= 0) { runs[next[s0]++] = pos; }
		if (s1 >= 0) { runs[next[s1]++] = pos; }
	}
	yield;
	// In pair order the document is read front to back (a 2 048-node map does not fit any cache); each run sorted after.
	let own = new Float64Array(64);
	let done = 0;
	for (const s of order) {
		const positions = runs.subarray(start[s], start[s + 1]).sort();
		const kOwn = positions.length;
		if ((done += kOwn) >= CHUNK) { done = 0; yield; }
		if (own.length < kOwn) { own = new Float64Array(kOwn * 2); }
		const mine = own.subarray(0, kOwn);
		for (let j = 0; j < kOwn; j++) { mine[j] = sortedLogs[positions[j]]; }
		const ownMedian = medianSorted(mine);
		const value = Math.exp(ownMedian);
		const subject = names.list[s];
		// Links measured against their whole class have no summary: one pair each, its own number (two million of them at 2 048 nodes).
		if (summaries && level !== 'pair' && metric === 'bandwidth_gbps' && !wholeClass) {
			summaries.push({ level, subject, path_class: pop.label, median: value, mad: madSorted(mine, ownMedian), pairs: kOwn });
		}
		let ref = classRef;
		let spread = classMad;
		let restCount = n;
		if (!wholeClass) {
			const rest = leaveOutStats(sortedLogs, positions);
			restCount = rest.count;
			if (rest.count < OUTLIER_MIN_REFERENCE) { continue; }
			ref = rest.median;
			spread = rest.mad;
		}
		const margin = Math.max(OUTLIER_MADS * spread, floor);
		const beyond = (x: number): boolean => (higherIsWorse ? x > ref + margin : x < ref - margin);
		if (!beyond(Math.log(value))) { continue; }
		const every = mine.every(beyond);
		// Its pairs in document order (the evidence as the pairs were listed).
		const pairs = Array.from(positions, pos => atPosition[pos]).sort((x, y) => x - y).map(k => t.pairs[measured[k]]);
		out.push({
			pairSet: new Set(pairs),
			levelIndex: LEVELS.indexOf(level),
			wholeClass,
			finding: {
				level, subject, kind: higherIsWorse ? 'high_latency' : 'slow', path_class: pop.label, value, reference: Math.exp(ref), mad: spread,
				threshold: Math.exp(higherIsWorse ? ref + margin : ref - margin), pairs: kOwn, reference_pairs: restCount,
				evidence_pairs: pairs.map(p => ({ a: p.a, b: p.b, value: p[metric], status: p.status })),
				facts: [], explains: [],
				sentence: `${every ? 'every pair' : `median of ${kOwn} pairs`}`,
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
function failures(doc: MapDocument, failedStatus: readonly MapPair[]): MapOutlier[] {
	const host = new Map(doc.ranks.map(r => [r.rank, r.host]));
	const known = new Set([...(doc.partial?.failed_ranks ?? []), ...(doc.incomplete?.silent_ranks ?? [])]);
	// A pair the run never reached is a rank's failure only when one of its ranks is known to have died or gone silent.
	const failed = failedStatus.filter(p => p.status !== 'not_measured' || known.has(p.a) || known.has(p.b));
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

/** The analysis as steps: each `yield` a point where findOutliersAsync may let other work run. */
function* analyse(doc: MapDocument): Generator<void, MapOutlierReport> {
	const latencyJudged = doc.schedule?.mode !== 'rounds';
	const rule = `per path class, on the logarithm of the bandwidth: a node, NIC, GPU, link or pair whose median is more than ${OUTLIER_MADS} MAD and more than ${OUTLIER_FRACTION * 100} % below the median of the other pairs of its class (at least ${OUTLIER_MIN_REFERENCE} of them); ${latencyJudged ? 'latency the same way upwards' : 'latency not judged (pairs measured in concurrent rounds)'}; one pair alone is a suspect, not an outlier`;
	const summaries: MapOutlierReport['summaries'] = [];
	const rankMap = new Map(doc.ranks.map(r => [r.rank, r]));
	const t = yield* buildTable(doc);
	const scratch = new Scratch();
	// The pairs of each path class, in document order.
	const sizes = new Int32Array(t.classes.length);
	for (let i = 0; i < t.cls.length; i++) { sizes[t.cls[i]]++; }
	const members = Array.from(sizes, size => new Int32Array(size));
	const filled = new Int32Array(t.classes.length);
	for (let i = 0; i < t.cls.length; i++) { members[t.cls[i]][filled[t.cls[i]]++] = i; }
	yield;
	const found: MapOutlier[] = [];
	const suspects: MapOutlier[] = [];
	let small = 0;
	for (const metric of latencyJudged ? ['bandwidth_gbps', 'latency_us'] as const : ['bandwidth_gbps'] as const) {
		const cands: Candidate[] = [];
		for (let c = 0; c < t.classes.length; c++) {
			if (metric === 'bandwidth_gbps') {
				let withBandwidth = 0;
				for (const i of members[c]) { if (t.pairs[i].bandwidth_gbps !== null) { withBandwidth++; } }
				if (withBandwidth <= OUTLIER_MIN_REFERENCE) { small++; }
			}
			const pop = yield* population(t, members[c], t.classes[c].label, metric, scratch);
			for (const level of LEVELS) { cands.push(...(yield* judge(t, pop, level, metric, metric === 'bandwidth_gbps' ? summaries : null, scratch))); }
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
		yield;
	}
	const crowd = crowding(doc);
	const tooCrowded = crowd !== null && crowd.perCpu > CROWDED_RANKS_PER_CPU;
	const held = tooCrowded ? found.splice(0) : [];
	const caveat = !crowd ? null : tooCrowded
		? `speeds not judged: ${fmtPerCpu(crowd.perCpu)} ranks per CPU (${crowd.reason}); beyond ${CROWDED_RANKS_PER_CPU} per CPU the timings are the CPU scheduler's, not the links' — map again with at most one rank per CPU`
		: `ranks share CPUs (${fmtPerCpu(crowd.perCpu)} per CPU): the timings include the CPU scheduler's share; the rule was seen to hold up to ${CROWDED_RANKS_PER_CPU} per CPU`;
	// The pairs measured and the failed ones, in chunks (one pass over two million pair objects takes a while).
	let measured = 0;
	const failedStatus: MapPair[] = [];
	for (let i = 0; i < doc.pairs.length; i++) {
		if ((i & (CHUNK - 1)) === CHUNK - 1) { yield; }
		const p = doc.pairs[i];
		if (p.status === 'ok' || p.status === 'data_error') { measured++; }
		if (FAILED.has(p.status)) { failedStatus.push(p); }  // data_error is both: measured, and a failure
	}
	const outliers = [...failures(doc, failedStatus), ...found];
	const classCount = t.classes.length;
	const partial = doc.partial ? `partial map (${doc.partial.reason}): ${measured} of ${doc.pairs.length} pairs measured. ` : '';
	const suspectNote = suspects.length > 0 ? `; ${suspects.length} single pair${suspects.length === 1 ? '' : 's'} below the rule (suspects, one measurement each)` : '';
	const heldNote = held.length > 0 ? `; ${held.length} speed finding${held.length === 1 ? '' : 's'} held back` : '';
	const verdict = outliers.length > 0
		? `${partial}${outliers[0].sentence}${outliers.length > 1 ? ` (+${outliers.length - 1} more)` : ''}`
		: tooCrowded
			? `${partial}no failure in ${measured} measured pairs${heldNote}`
			: `${partial}no outlier: ${measured} measured pairs in ${classCount} path class${classCount === 1 ? '' : 'es'}, no node, NIC, GPU or link beyond ${OUTLIER_MADS} MAD and ${OUTLIER_FRACTION * 100} % of its class${small > 0 ? ` (${small} class${small === 1 ? '' : 'es'} with too few pairs to judge: fewer than ${OUTLIER_MIN_REFERENCE + 1})` : ''}${suspectNote}`;
	const headline = caveat ? `${verdict} — ${caveat}` : verdict;
	return { rule, headline, outliers, suspects, ...(crowd ? { held_back: held, caveat } : {}), summaries };
}

function fmtPerCpu(v: number): string { return Number.isInteger(v) ? String(v) : v.toFixed(1); }

/** The analysis: failures, then slow and high-latency subjects, coarse before fine, each explained finer finding folded in. */
export function findOutliers(doc: MapDocument): MapOutlierReport {
	const steps = analyse(doc);
	for (;;) {
		const r = steps.next();
		if (r.done) { return r.value; }
	}
}

/** How findOutliersAsync shares its thread. */
export interface OutlierPacing {
	/** Milliseconds of analysis between two turns of the event loop (default 40). */
	sliceMs?: number;
	/** Stops the analysis at its next step (the promise rejects with the signal's reason). */
	signal?: AbortSignal;
}

/**
 * findOutliers that gives the event loop a turn every `sliceMs` (the same steps, so the same report): for the VS Code
 * extension host, where 2 million pairs at once would freeze every extension. Why not a worker thread: the worker
 * would need the document, and posting two million pair objects is a structured clone done on the sending thread —
 * seconds of the same freeze, and a second copy of a 1.5 GiB document (docs/benchmarks-map.md has the numbers).
 */
export async function findOutliersAsync(doc: MapDocument, pacing: OutlierPacing = {}): Promise<MapOutlierReport> {
	const slice = pacing.sliceMs ?? 40;
	const steps = analyse(doc);
	let until = performance.now() + slice;
	for (;;) {
		const r = steps.next();
		if (r.done) { return r.value; }
		if (performance.now() >= until) {
			await new Promise<void>(resolve => setImmediate(resolve));
			pacing.signal?.throwIfAborted();
			until = performance.now() + slice;
		}
	}
}

/** The analysis as text lines for the CLI (headline first). */
export function renderOutlierLines(r: MapOutlierReport): string[] {
	const out = [r.headline];
	for (const f of r.outliers) {
		out.push(`  - ${f.sentence}`);
		if (f.explains.length > 0) { out.push(`      explains: ${f.explains.slice(0, 8).join(', ')}${f.explains.length > 8 ? `, … (${f.explains.length} in all)` : ''}`); }
		for (const x of f.facts.slice(0, 4)) { out.push(`      ${x}`); }
	}
	// The lists set apart: the first five, then how many more.
	const apart = (list: readonly MapOutlier[], mark: string, label: string, more: string): void => {
		for (const f of list.slice(0, 5)) { out.push(`  ${mark} ${label}: ${f.sentence}`); }
		if (list.length > 5) { out.push(`  ${mark} … ${list.length - 5} more ${more}`); }
	};
	apart(r.suspects, '?', 'suspect (one pair, measure again before blaming it)', 'suspects');
	apart(r.held_back ?? [], '~', 'held back (ranks outnumbered the CPUs)', 'held back');
	return out;
}
