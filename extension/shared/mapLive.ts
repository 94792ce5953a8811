/**
 * A map while it is measured (issue 36, "interim results every round to the panel"): the engine's plan becomes a
 * document at once (every pair not yet measured), each round record fills its pairs in place (O(pairs of the round):
 * a 2 048-node map has 2 054 rounds of up to 8 192 pairs), and the panel reads progress, the failures as they come,
 * and — as often as it can afford — the node overview and the outlier analysis of what was measured so far.
 * Pure: no vscode, DOM or node imports (the panel host feeds it runMap's streamed records).
 */
import { MAP_SCHEMA, type MapDocument, type MapPair, type MapPlanRecord, type MapRoundRecord, type PairStatus } from './mapSchema';

/** Progress of a live map, as the panel shows it. */
export interface MapLiveProgress {
	/** Rounds handed over so far and in the plan. */
	round: number;
	rounds: number;
	pairs: number;
	measured: number;
	failed: number;
	elapsedS: number;
	/** The engine's rounds drifted apart (a rank missed a barrier): later pairs were not all measured together. */
	synchronized: boolean;
	final: boolean;
}

/** A failed pair as it arrived. */
export interface MapLiveFailure { a: number; b: number; status: PairStatus; error: string | null; round: number }

const FAILED: ReadonlySet<PairStatus> = new Set<PairStatus>(['timeout', 'mpi_error', 'data_error', 'setup_error']);

/** The document of a running map, filled round by round. */
export class MapLiveModel {
	private readonly _doc: MapDocument;
	private _progress: MapLiveProgress;
	private _rounds = 0;

	constructor(plan: MapPlanRecord) {
		const { schema: _schema, pairs: planned, ...header } = plan;
		const pairs: MapPair[] = planned.map(p => {
			const { measure, ...head } = p;
			return { ...head, status: measure ? 'not_measured' : 'skipped', bandwidth_gbps: null, latency_us: null };
		});
		this._doc = { schema: MAP_SCHEMA, ...header, setup_error: null, pairs, errors: [], partial: { reason: 'running', rounds_received: 0, failed_ranks: [] } };
		this._progress = { round: 0, rounds: plan.schedule.rounds, pairs: pairs.length, measured: 0, failed: 0, elapsedS: 0, synchronized: true, final: false };
	}

	/** The map so far (the same object, changed in place by each round; `partial.reason` "running" until the end). */
	get doc(): MapDocument { return this._doc; }

	get progress(): MapLiveProgress { return { ...this._progress }; }

	/** Fill in one round's pairs; returns the failures it brought. */
	applyRound(r: MapRoundRecord): MapLiveFailure[] {
		const failures: MapLiveFailure[] = [];
		let measured = this._progress.measured, failed = this._progress.failed;
		for (const o of r.pairs) {
			const p = Number.isInteger(o.pair) ? this._doc.pairs[o.pair] : undefined;
			if (!p || p.a !== o.a || p.b !== o.b) { continue; }
			const was = p.status;
			if (was === 'ok' || was === 'data_error') { measured--; }
			if (FAILED.has(was)) { failed--; }
			Object.assign(p, {
				status: o.status, bandwidth_gbps: o.bandwidth_gbps, latency_us: o.latency_us, started_s: o.started_s, ended_s: o.ended_s,
				verified_messages: o.verified_messages, corrupted_messages: o.corrupted_messages, error: o.error ?? null,
			});
			if (o.status === 'ok' || o.status === 'data_error') { measured++; }
			if (FAILED.has(o.status)) { failed++; failures.push({ a: o.a, b: o.b, status: o.status, error: o.error ?? null, round: o.round }); }
		}
		this._rounds++;
		if (this._doc.partial) { this._doc.partial.rounds_received = this._rounds; }
		this._progress = {
			...this._progress, round: Math.min(r.rounds, r.final ? r.rounds : r.round + 1), rounds: r.rounds, measured, failed,
			elapsedS: r.elapsed_s, synchronized: this._progress.synchronized && r.synchronized, final: r.final,
		};
		return failures;
	}
}

/**
 * When to do an expensive interim step again (the overview, the outlier analysis), so that it takes at most about
 * 1/`share` of the host's time: not before `minMs` and not before `share` times its last duration have passed.
 */
export class Throttle {
	private _next = 0;

	constructor(private readonly _minMs: number, private readonly _share: number) {}

	/** Whether to run it at `now` (ms). */
	due(now: number): boolean { return now >= this._next; }

	/** It ran from `start` to `end` (ms). */
	ran(start: number, end: number): void { this._next = end + Math.max(this._minMs, this._share * (end - start)); }
}
