/**
 * The transport map node by node (issue 36: the view at 16 384 ranks). A 2 048-node map has two million pairs and is
 * about 1 GB of JSON: the panel never hands that to its webview. The host reduces it here to what the first screen
 * shows — the node × node matrix (per path class: the median bandwidth of each node pair's measured pairs), the cells
 * with failed pairs, rank → node, the header facts and the outlier analysis — and answers drill-downs (a node or a
 * node pair: its ranks, GPUs and pairs as a small map document, numbers per class, the worst and the failed pairs)
 * and single-pair look-ups. Pure: no vscode, DOM or node imports.
 */
import { CHANNEL_LABELS, PATH_CLASS_LABELS, type MapChannel, type MapDocument, type MapOutlierReport, type MapPair, type PairStatus, type PathClass } from './mapSchema';

/** One path class (class over channel) of the node matrix: its cells, each cell's median and pair count. */
export interface MapOverviewLayer {
	/** "gpudirect_rdma/network". */
	cls: string;
	pathClass: PathClass;
	channel: MapChannel;
	/** "GPUDirect RDMA over network". */
	label: string;
	/** Cells i·n + j (node i ≤ node j) with a measured pair of this class, ascending. */
	cells: Int32Array;
	/** Median bandwidth (GB/s) of each cell's measured pairs of this class. */
	median: Float32Array;
	/** Measured pairs of each cell. */
	pairs: Int32Array;
	measured: number;
	min: number;
	max: number;
}

/** Facts of the whole run the panel shows above everything. */
export interface MapOverviewHeader {
	worldSize: number;
	totalPairs: number;
	sampled: boolean;
	memory: 'device' | 'host';
	mpi: string;
	gpuUnavailable: string | null;
	/** Where a generated fixture came from (`generated.from`), null for a real run. */
	generated: string | null;
	command: string[] | null;
	partial: MapDocument['partial'] | null;
	incomplete: MapDocument['incomplete'] | null;
	/** "2 054 rounds, up to 8 192 pairs at once" or "one pair at a time", null for engines before schedules. */
	schedule: string | null;
	elapsedS: number | null;
	trafficSource: MapDocument['traffic_source'] | null;
}

/** What the first screen of the panel needs of a map (sizes: a few bytes per node pair). */
export interface MapOverview {
	/** Nodes (hosts), in the order of their lowest rank. */
	hosts: string[];
	/** Node index of every rank (−1: the document has no record of that rank). */
	rankHost: Int32Array;
	ranksPerHost: Int32Array;
	gpusPerHost: Int32Array;
	layers: MapOverviewLayer[];
	/** Cells (i·n + j, i ≤ j) with a failed pair (timeout, MPI error, changed data, setup error), ascending. */
	failedCells: Int32Array;
	/** Range of the cells' medians (GB/s), for one colour scale over all layers. */
	bwMin: number;
	bwMax: number;
	counts: { pairs: number; measured: number; failed: number; notMeasured: number; skipped: number };
	header: MapOverviewHeader;
	outliers: MapOutlierReport | null;
}

/** Statuses that mark a cell failed. */
export const FAILED_STATUSES: ReadonlySet<PairStatus> = new Set<PairStatus>(['timeout', 'mpi_error', 'data_error', 'setup_error']);

/** Whether a pair has a bandwidth to show. */
export function pairMeasured(p: MapPair): boolean {
	return p.bandwidth_gbps !== null && p.bandwidth_gbps > 0 && (p.status === 'ok' || p.status === 'data_error');
}

function channelOf(p: MapPair): MapChannel { return p.channel ?? (p.same_host ? 'shared_memory' : 'network'); }

/** Nodes in the order of their lowest rank, and rank → node index. */
export function nodeIndex(doc: Pick<MapDocument, 'ranks' | 'world_size'>): { hosts: string[]; rankHost: Int32Array } {
	const rankHost = new Int32Array(doc.world_size).fill(-1);
	const index = new Map<string, number>();
	const hosts: string[] = [];
	for (const r of [...doc.ranks].sort((x, y) => x.rank - y.rank)) {
		let i = index.get(r.host);
		if (i === undefined) { i = hosts.length; index.set(r.host, i); hosts.push(r.host); }
		if (r.rank >= 0 && r.rank < doc.world_size) { rankHost[r.rank] = i; }
	}
	return { hosts, rankHost };
}

function scheduleText(doc: MapDocument): string | null {
	const s = doc.schedule;
	if (!s) { return null; }
	return s.mode === 'rounds' ? `${s.rounds} rounds, up to ${s.max_concurrent_pairs} pairs at once` : 'one pair at a time';
}

/** The header facts of a map. */
export function overviewHeader(doc: MapDocument): MapOverviewHeader {
	return {
		worldSize: doc.world_size, totalPairs: doc.total_pairs, sampled: doc.sampled, memory: doc.memory,
		mpi: doc.mpi.library_version.split(',')[0], gpuUnavailable: doc.gpu_unavailable_reason, generated: doc.generated?.from ?? null,
		command: doc.runner?.command ?? null, partial: doc.partial ?? null, incomplete: doc.incomplete ?? null, schedule: scheduleText(doc),
		elapsedS: doc.elapsed_s ?? null, trafficSource: doc.traffic_source ?? null,
	};
}

/**
 * Indices 0..m−1 ordered by `key` (ties in index order): a counting sort where the key range is small (a 2 048-node
 * map: 4 million cells, two million pairs), else a comparison sort.
 */
function orderBy(key: Int32Array, range: number): Int32Array {
	const m = key.length;
	if (range <= 1 << 24) {
		const start = new Int32Array(range + 1);
		for (let i = 0; i < m; i++) { start[key[i] + 1]++; }
		for (let k = 0; k < range; k++) { start[k + 1] += start[k]; }
		const out = new Int32Array(m);
		for (let i = 0; i < m; i++) { out[start[key[i]]++] = i; }
		return out;
	}
	return Int32Array.from({ length: m }, (_, i) => i).sort((x, y) => key[x] - key[y] || x - y);
}

/**
 * The analysis as the panel shows it: without its per-subject summaries (the populations the rule used: 53 000 of
 * them at 2 048 nodes, which the panel does not show and the saved document keeps).
 */
function forPanel(r: MapOutlierReport | undefined): MapOutlierReport | null {
	return r ? { ...r, summaries: [] } : null;
}

/** The node-level reduction of a map (`outliers`: the document's own, without summaries, or null). */
export function buildOverview(doc: MapDocument): MapOverview {
	const { hosts, rankHost } = nodeIndex(doc);
	const n = hosts.length;
	const ranksPerHost = new Int32Array(n);
	const gpuSets = hosts.map(() => new Set<string>());
	for (const r of doc.ranks) {
		const h = r.rank >= 0 && r.rank < doc.world_size ? rankHost[r.rank] : -1;
		if (h < 0) { continue; }
		ranksPerHost[h]++;
		if (r.gpu) { gpuSets[h].add(r.gpu.uuid || r.gpu.pci_bus_id); }
	}
	// Per class: the cells and bandwidths of its measured pairs, in document order.
	const classIndex = new Map<string, number>();
	const perClass: Array<{ p: MapPair; cells: number[]; bws: number[] }> = [];
	const failed = new Set<number>();
	const counts = { pairs: doc.pairs.length, measured: 0, failed: 0, notMeasured: 0, skipped: 0 };
	const cellOf = (p: MapPair): number => {
		const i = rankHost[p.a] ?? -1, j = rankHost[p.b] ?? -1;
		if (i < 0 || j < 0) { return -1; }
		return i <= j ? i * n + j : j * n + i;
	};
	for (const p of doc.pairs) {
		if (p.status === 'not_measured') { counts.notMeasured++; }
		if (p.status === 'skipped') { counts.skipped++; }
		const cell = cellOf(p);
		if (FAILED_STATUSES.has(p.status)) { counts.failed++; if (cell >= 0) { failed.add(cell); } }
		if (!pairMeasured(p) || cell < 0) { continue; }
		counts.measured++;
		const key = `${p.class}/${channelOf(p)}`;
		let c = classIndex.get(key);
		if (c === undefined) { c = perClass.length; classIndex.set(key, c); perClass.push({ p, cells: [], bws: [] }); }
		perClass[c].cells.push(cell);
		perClass[c].bws.push(p.bandwidth_gbps as number);
	}
	let bwMin = Infinity, bwMax = 0;
	const layers = perClass.map(({ p, cells, bws }) => {
		const keys = Int32Array.from(cells);
		const order = orderBy(keys, n * n);
		const outCells: number[] = [], outMedian: number[] = [], outPairs: number[] = [];
		let min = Infinity, max = 0;
		for (let s = 0; s < order.length;) {
			let e = s + 1;
			while (e < order.length && keys[order[e]] === keys[order[s]]) { e++; }
			let med: number;
			if (e - s === 1) { med = bws[order[s]]; } else {
				const v = Float64Array.from({ length: e - s }, (_, k) => bws[order[s + k]]).sort();
				const m = v.length >> 1;
				med = v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
			}
			outCells.push(keys[order[s]]); outMedian.push(med); outPairs.push(e - s);
			min = Math.min(min, med); max = Math.max(max, med);
			s = e;
		}
		bwMin = Math.min(bwMin, min); bwMax = Math.max(bwMax, max);
		const channel = channelOf(p);
		return {
			cls: `${p.class}/${channel}`, pathClass: p.class, channel, label: `${PATH_CLASS_LABELS[p.class]} over ${CHANNEL_LABELS[channel]}`,
			cells: Int32Array.from(outCells), median: Float32Array.from(outMedian), pairs: Int32Array.from(outPairs), measured: cells.length,
			min: Number.isFinite(min) ? min : 0, max,
		};
	});
	return {
		hosts, rankHost, ranksPerHost, gpusPerHost: Int32Array.from(gpuSets, s => s.size), layers,
		failedCells: Int32Array.from([...failed].sort((x, y) => x - y)),
		bwMin: Number.isFinite(bwMin) ? bwMin : 0, bwMax, counts, header: overviewHeader(doc), outliers: forPanel(doc.outliers),
	};
}

/** Numbers of one path class among a drill-down's pairs. */
export interface MapDrillClass { label: string; pairs: number; measured: number; failed: number; median: number | null; min: number | null; max: number | null }

/**
 * A drill-down: one node (its ranks and GPUs, the pairs within it; numbers of all its pairs per class) or two (both,
 * the pairs within each and between them; numbers of the pairs between them).
 */
export interface MapDrill {
	hosts: string[];
	/** The ranks of these hosts and every pair among them (world_size and rank numbers as in the whole map). */
	doc: MapDocument;
	/** Per class: the node's pairs (one host) or the pairs between the two. */
	classes: MapDrillClass[];
	/** The lowest-bandwidth measured pairs of those (at most `limit`), lowest first. */
	worst: MapPair[];
	/** Failed pairs of those (at most `limit`). */
	failed: MapPair[];
	/** How many pairs `classes` counts. */
	pairs: number;
}

/** The drill-down of `hosts` (one or two host names) in `doc`. Unknown hosts give empty parts. */
export function mapDrill(doc: MapDocument, hosts: readonly string[], limit = 12): MapDrill {
	const set = new Set(hosts);
	const ranks = doc.ranks.filter(r => set.has(r.host));
	const hostOf = new Map(ranks.map(r => [r.rank, r.host]));
	const inside: MapPair[] = [];
	const counted: MapPair[] = [];
	const [first, second] = hosts;
	for (const p of doc.pairs) {
		const ha = hostOf.get(p.a), hb = hostOf.get(p.b);
		if (ha !== undefined && hb !== undefined) { inside.push(p); }
		// One node: every pair with an end on it; two: the pairs between them.
		const mine = second === undefined || second === first ? ha === first || hb === first : (ha === first && hb === second) || (ha === second && hb === first);
		if (mine) { counted.push(p); }
	}
	const byClass = new Map<string, MapPair[]>();
	for (const p of counted) {
		const label = `${PATH_CLASS_LABELS[p.class]} over ${CHANNEL_LABELS[channelOf(p)]}`;
		byClass.set(label, [...(byClass.get(label) ?? []), p]);
	}
	const classes = [...byClass.entries()].map(([label, list]) => {
		const v = Float64Array.from(list.filter(pairMeasured), p => p.bandwidth_gbps as number).sort();
		const m = v.length >> 1;
		return {
			label, pairs: list.length, measured: v.length, failed: list.filter(p => FAILED_STATUSES.has(p.status)).length,
			median: v.length === 0 ? null : v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2, min: v.length ? v[0] : null, max: v.length ? v[v.length - 1] : null,
		};
	});
	const worst = counted.filter(pairMeasured).sort((x, y) => (x.bandwidth_gbps as number) - (y.bandwidth_gbps as number)).slice(0, limit);
	const failed = counted.filter(p => FAILED_STATUSES.has(p.status)).slice(0, limit);
	const { outliers: _outliers, ...rest } = doc;
	const sub: MapDocument = { ...rest, ranks, pairs: inside, errors: [] };
	return { hosts: [...hosts], doc: sub, classes, worst, failed, pairs: counted.length };
}

/** Finds the pair of two ranks in a big map without a map of two million keys (sorted keys, binary search). */
export class MapPairIndex {
	/** key · 2^shift + pair index, ascending (one numeric sort, no comparator: two million pairs). */
	private readonly _packed: Float64Array;
	private readonly _shift: number;

	constructor(private readonly _doc: MapDocument) {
		const n = _doc.world_size;
		this._shift = 2 ** Math.max(1, Math.ceil(Math.log2(_doc.pairs.length + 1)));
		if (n * n * this._shift > Number.MAX_SAFE_INTEGER) { throw new Error(`map too large to index: ${n} ranks, ${_doc.pairs.length} pairs`); }
		this._packed = Float64Array.from(_doc.pairs, (p, i) => (Math.min(p.a, p.b) * n + Math.max(p.a, p.b)) * this._shift + i).sort();
	}

	/** The pair of ranks a and b (either order), or null. */
	find(a: number, b: number): MapPair | null {
		const n = this._doc.world_size;
		const lowest = (Math.min(a, b) * n + Math.max(a, b)) * this._shift;
		let lo = 0, hi = this._packed.length;
		while (lo < hi) { const m = (lo + hi) >> 1; if (this._packed[m] < lowest) { lo = m + 1; } else { hi = m; } }
		const v = this._packed[lo];
		return lo < this._packed.length && v < lowest + this._shift ? this._doc.pairs[v - lowest] : null;
	}
}
