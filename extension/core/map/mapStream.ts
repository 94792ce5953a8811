/**
 * The streamed records of `gpumpi map --json --stream` (docs/map-schema.md, "Streaming"): the plan (every pair with
 * its round and class) before the first round, one record per round as rank 0 collects it, then the document. Read
 * line by line while the job runs (the framing of native/common/docFrame.hh: each record is its own framed document,
 * assembled once all its chunks have come), so the runner can show progress and, when the job is ended before the
 * document (a rank died and the launcher aborted, Ctrl-C, the timeout), build the document from what was measured:
 * `partialMapDocument`. Pure apart from the reader's own state; never throws.
 */
import { JSON_CHUNK_MARKER } from '../../shared/reproSchema';
import { MAP_PLAN_SCHEMA, MAP_ROUND_SCHEMA, MAP_SCHEMA, validateMapDocument, type MapDocument, type MapPair, type MapPlanRecord, type MapRoundPair, type MapRoundRecord } from '../../shared/mapSchema';
import { crc32, readChunkLine, type Shape } from '../parsers/framedDocument';
import { SlicedMapParser } from './mapFileStream';

/** One record of the stream. */
export type MapStreamRecord =
	| { kind: 'plan'; plan: MapPlanRecord }
	| { kind: 'round'; round: MapRoundRecord }
	| { kind: 'map'; doc: unknown };

const CHUNK_HEAD = /^([0-9a-f]{8}) (\d{1,7}) /;

/** Records bigger than this are parsed in slices (mapFileStream.ts): a 16 384-rank plan is ~1 GB, past V8's longest string. */
export const RECORD_SLICE_ABOVE_BYTES = 64 * 1024 * 1024;

interface Pending { shape: Shape; chunks: Map<number, Buffer> }

/**
 * Assembles the framed records of a stream as its lines come (stdout, any order of other output between them). Each
 * chunk is checked as it comes and only its first intact copy kept (framedDocument.ts readChunkLine): a record is
 * never one string of its lines, so one of any size (the plan of two million pairs) is assembled, its pairs parsed in
 * slices of whole elements (SlicedMapParser) when it is bigger than `sliceAbove` bytes.
 */
export class MapStreamReader {
	private readonly _pending = new Map<string, Pending>();
	private readonly _done = new Set<string>();

	constructor(private readonly _sliceAbove = RECORD_SLICE_ABOVE_BYTES) {}

	/** Feed one line of stdout; returns the records it completed. */
	push(line: string): MapStreamRecord[] {
		const at = line.indexOf(`${JSON_CHUNK_MARKER} `);
		if (at < 0) { return []; }
		// Cheap look first: copies of chunks already held (two of every three lines) are not checked again.
		const head = CHUNK_HEAD.exec(line.slice(at + JSON_CHUNK_MARKER.length + 1, at + JSON_CHUNK_MARKER.length + 40));
		if (!head || this._done.has(head[1]) || this._pending.get(head[1])?.chunks.has(Number(head[2]))) { return []; }
		const c = readChunkLine(line);
		if (!c || !('chunk' in c)) { return []; }
		let p = this._pending.get(c.id);
		if (!p) { p = { shape: c.shape, chunks: new Map() }; this._pending.set(c.id, p); }
		p.chunks.set(c.index, c.chunk);
		if (p.chunks.size < p.shape.chunks) { return []; }
		return this._assemble(c.id, p);
	}

	/** At the end of the output: every record that can still be assembled (none: a record is taken once whole). */
	finish(): MapStreamRecord[] {
		return [];
	}

	private _assemble(id: string, p: Pending): MapStreamRecord[] {
		this._pending.delete(id);
		this._done.add(id);
		const parts: Buffer[] = [];
		let bytes = 0;
		let crc = 0;
		for (let i = 0; i < p.shape.chunks; i++) {
			const b = p.chunks.get(i);
			if (!b) { return []; }
			parts.push(b);
			bytes += b.length;
			crc = crc32(b, crc);
		}
		if (bytes !== p.shape.bytes || crc !== p.shape.crc) { return []; }
		let json: unknown;
		try {
			if (bytes <= this._sliceAbove) {
				json = JSON.parse(Buffer.concat(parts).toString('utf8'));
			} else {
				const parser = new SlicedMapParser(Math.max(1024, Math.min(8 * 1024 * 1024, this._sliceAbove)));
				for (const b of parts) { parser.push(b); }
				json = parser.finish();
			}
		} catch {
			return [];
		}
		const rec = asRecord(json);
		return rec ? [rec] : [];
	}
}

function asRecord(json: unknown): MapStreamRecord | null {
	if (typeof json !== 'object' || json === null) { return null; }
	const schema = (json as { schema?: unknown }).schema;
	if (schema === MAP_PLAN_SCHEMA && Array.isArray((json as MapPlanRecord).pairs) && Array.isArray((json as MapPlanRecord).ranks)) { return { kind: 'plan', plan: json as MapPlanRecord }; }
	if (schema === MAP_ROUND_SCHEMA && Array.isArray((json as MapRoundRecord).pairs)) { return { kind: 'round', round: json as MapRoundRecord }; }
	if (schema === MAP_SCHEMA) { return { kind: 'map', doc: json }; }
	return null;
}

/** What was measured so far: the plan and the latest outcome of each pair (by index in the plan). */
export interface MapStreamState {
	plan: MapPlanRecord | null;
	outcomes: Map<number, MapRoundPair>;
	roundsReceived: number;
	lastRound: number;
}

/** An empty state. */
export function emptyStreamState(): MapStreamState {
	return { plan: null, outcomes: new Map(), roundsReceived: 0, lastRound: -1 };
}

/** Add a record to the state (the plan, or a round's outcomes; a later outcome of a pair replaces an earlier one). */
export function applyRecord(s: MapStreamState, r: MapStreamRecord): void {
	if (r.kind === 'plan') { s.plan = r.plan; return; }
	if (r.kind !== 'round') { return; }
	s.roundsReceived++;
	s.lastRound = Math.max(s.lastRound, r.round.round);
	for (const p of r.round.pairs) {
		if (Number.isInteger(p.pair) && p.pair >= 0) { s.outcomes.set(p.pair, p); }
	}
}

/** Why the pairs of rank `r` were not measured, when a rank is known to have failed. */
export interface PartialCause {
	/** The whole story: "rank 3 crashed (Killed): …", "interrupted (SIGINT)", "no map within 600 s". */
	reason: string;
	/** Ranks known to have died or gone silent (their pairs say so). */
	failedRanks: number[];
}

/**
 * The map document from the stream when the engine's own never came: the plan's pairs with every outcome that was
 * streamed; the others `not_measured` with the cause (their own rank's death, else the job's end). Null without a
 * plan (nothing of the run is known then) or when the result does not validate.
 */
export function partialMapDocument(s: MapStreamState, cause: PartialCause): MapDocument | null {
	const plan = s.plan;
	if (!plan) { return null; }
	const failed = new Set(cause.failedRanks);
	const pairs: MapPair[] = plan.pairs.map((p, i) => {
		const { measure, ...head } = p;
		const o = s.outcomes.get(i);
		if (o && o.status !== 'not_measured') {
			return { ...head, status: o.status, bandwidth_gbps: o.bandwidth_gbps, latency_us: o.latency_us, started_s: o.started_s, ended_s: o.ended_s,
				verified_messages: o.verified_messages, corrupted_messages: o.corrupted_messages, error: o.error };
		}
		const dead = [p.a, p.b].filter(r => failed.has(r));
		const error = !measure ? null
			: dead.length > 0 ? `not measured: rank ${dead.join(' and rank ')} failed before round ${p.round}`
				: `not measured: the run ended before round ${p.round}`;
		return { ...head, status: measure ? 'not_measured' : 'skipped', bandwidth_gbps: null, latency_us: null, started_s: null, ended_s: null, error };
	});
	const { schema: _schema, ...header } = plan;
	const doc: MapDocument = {
		schema: MAP_SCHEMA,
		...header,
		setup_error: null,
		pairs,
		errors: pairs.flatMap((p, i) => (p.error && p.status !== 'not_measured' ? [{ pair: i, rank: p.a, error: p.error }] : [])),
		partial: { reason: cause.reason, rounds_received: s.roundsReceived, failed_ranks: [...failed].sort((x, y) => x - y) },
	};
	const v = validateMapDocument(doc);
	return typeof v === 'string' ? null : v;
}

/**
 * The engine's document when it says its pairs were streamed (`pairs_streamed`, `--final-without-pairs`: a 16 384-rank
 * document repeated ~1 GB of pairs the round records had already brought): its header with the plan's pairs and their
 * last streamed outcomes. A pair the stream gave no outcome (none should be) is `not_measured` and says so. A string
 * when there is no plan or the result does not validate; a document without the flag is returned as it is.
 */
export function streamedMapDocument(s: MapStreamState, engineDoc: MapDocument): MapDocument | string {
	if (!engineDoc.pairs_streamed) { return engineDoc; }
	const plan = s.plan;
	if (!plan) { return 'the engine\'s map leaves its pairs to the streamed records, and the plan did not come'; }
	const pairs: MapPair[] = plan.pairs.map((p, i) => {
		const { measure, ...head } = p;
		const o = s.outcomes.get(i);
		if (o) {
			return { ...head, status: o.status, bandwidth_gbps: o.bandwidth_gbps, latency_us: o.latency_us, started_s: o.started_s, ended_s: o.ended_s,
				verified_messages: o.verified_messages, corrupted_messages: o.corrupted_messages, error: o.error };
		}
		return { ...head, status: measure ? 'not_measured' : 'skipped', bandwidth_gbps: null, latency_us: null, started_s: null, ended_s: null,
			error: measure ? 'not measured: no outcome of this pair in the streamed records' : null };
	});
	const { pairs_streamed: _streamed, pairs: _none, ...header } = engineDoc;
	const v = validateMapDocument({ ...header, pairs });
	return typeof v === 'string' ? `the engine's map with its streamed pairs is invalid: ${v}` : v;
}

/**
 * The tasks srun reported dead ("srun: error: host-d: task 2: Killed", Slurm 22.05): under srun a task's id is its
 * MPI rank (Open MPI with pmix, MPICH with pmi2). Used where the generic crash reading names no rank (it knows
 * mpirun's and Hydra's words, not srun's).
 */
export function srunFailedTasks(stderr: string): Array<{ rank: number; host: string; how: string }> {
	const out: Array<{ rank: number; host: string; how: string }> = [];
	for (const m of stderr.matchAll(/^srun: error: (\S+): tasks? (\d+)(?:-\d+)?: (.+)$/gm)) {
		if (!out.some(t => t.rank === Number(m[2]))) { out.push({ rank: Number(m[2]), host: m[1], how: m[3].trim() }); }
	}
	return out;
}
