/**
 * The statistics of repeated trials (docs/repro-schema.md, "Trials"): how many trials a reproducer runs by default,
 * which failure rate a run of n clean trials still rules out, the verdict class of a variant from its outcome counts,
 * and the spread (median, min–max) of a repeated measurement with the "× faster/slower" sentence that carries it.
 * Pure; no node, no vscode, no DOM (the webview renders the same sentences).
 */

/** Failure rate the default trial count must catch… */
export const DETECT_RATE = 0.25;
/** …with at least this probability. */
export const DETECT_PROBABILITY = 0.95;
/** Confidence of the "ruled out" sentences. */
export const CONFIDENCE = 0.95;

/**
 * Smallest n with 1 - (1 - rate)^n ≥ probability: the chance that n independent trials of a variant that fails with
 * `rate` all succeed is (1 - rate)^n. For 25 % and 95 %: 0.75^10 = 0.056, 0.75^11 = 0.042, so n = 11.
 */
export function trialsToDetect(rate = DETECT_RATE, probability = DETECT_PROBABILITY): number {
	if (!(rate > 0 && rate < 1) || !(probability > 0 && probability < 1)) { throw new Error('rate and probability must lie strictly between 0 and 1'); }
	return Math.ceil(Math.log(1 - probability) / Math.log(1 - rate) - 1e-12);
}

/** Default trials per variant and configuration (11). */
export const DEFAULT_TRIALS = trialsToDetect();
/** Most trials one run accepts. */
export const MAX_TRIALS = 200;

/**
 * With 0 failures in n trials, failure rates above this are ruled out at `confidence` (the exact one-sided bound:
 * the rate p with (1 - p)^n = 1 - confidence, i.e. 1 - 0.05^(1/n); 0 of 12 → 22 %).
 */
export function ruledOutAbove(n: number, confidence = CONFIDENCE): number {
	if (!Number.isInteger(n) || n < 1) { throw new Error(`bad trial count ${n}`); }
	return 1 - Math.pow(1 - confidence, 1 / n);
}

/** A percentage for sentences: "22 %", "4.9 %", "0.3 %". */
export function percent(x: number): string {
	const p = x * 100;
	return `${p >= 10 ? Math.round(p) : p >= 1 ? p.toFixed(1).replace(/\.0$/, '') : p.toFixed(2).replace(/0$/, '')} %`;
}

/** Verdict classes of one variant under one configuration. */
export type TrialClass = 'works' | 'fails' | 'unreliable' | 'inconclusive';

/** What the counts say. */
export interface TrialVerdict {
	class: TrialClass;
	/** Trials run (launch errors included). */
	trials: number;
	/** Trials that measured something (not a launch/usage/placement error). */
	measured: number;
	failures: number;
	/** With 0 failures: the rate ruled out at 95 % (fraction); otherwise null. */
	ruledOutAbove: number | null;
	/** One sentence, e.g. "0 of 12 failed: a failure rate above 22 % is ruled out at 95 %". */
	sentence: string;
}

/**
 * The class from counts: works = 0 failures, fails = every measured trial failed, unreliable = mixed, inconclusive =
 * nothing measured, or a single measured trial (one trial is never a verdict).
 */
export function trialVerdict(trials: number, measured: number, failures: number): TrialVerdict {
	const base = { trials, measured, failures, ruledOutAbove: null };
	const notMeasured = trials - measured;
	const tail = notMeasured > 0 ? ` (${notMeasured} of ${trials} could not run)` : '';
	if (measured === 0) {
		return { ...base, class: 'inconclusive', sentence: trials === 0 ? 'not run' : `inconclusive: none of ${trials} trials could run` };
	}
	if (measured === 1) {
		return { ...base, class: 'inconclusive', sentence: `inconclusive: 1 trial ${failures === 0 ? 'was correct' : 'failed'}, and one trial is not a verdict${tail}` };
	}
	if (failures === 0) {
		const r = ruledOutAbove(measured);
		return { ...base, class: 'works', ruledOutAbove: r, sentence: `0 of ${measured} failed: a failure rate above ${percent(r)} is ruled out at 95 %${tail}` };
	}
	if (failures === measured) {
		const r = ruledOutAbove(measured);
		return { ...base, class: 'fails', sentence: `${failures} of ${measured} failed: a success rate above ${percent(r)} is ruled out at 95 %${tail}` };
	}
	return { ...base, class: 'unreliable', sentence: `${failures} of ${measured} failed (${percent(failures / measured)}): intermittent${tail}` };
}

/** Median and range of repeated values. */
export interface Spread {
	median: number;
	min: number;
	max: number;
	/** How many values. */
	n: number;
}

/** Spread of the finite values, or null when there are none. */
export function spreadOf(values: readonly (number | null | undefined)[]): Spread | null {
	const v = values.filter((x): x is number => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
	if (v.length === 0) { return null; }
	const mid = Math.floor(v.length / 2);
	const median = v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
	return { median, min: v[0], max: v[v.length - 1], n: v.length };
}

/** Whether two ranges share a point. */
export function rangesOverlap(a: Spread, b: Spread): boolean {
	return a.min <= b.max && b.min <= a.max;
}

/** "4.1 (3.9–4.6)" with `digits` decimals; a single value without the range. */
export function spreadText(s: Spread, digits = 2): string {
	const f = (x: number): string => x.toFixed(digits);
	return s.n === 1 || s.min === s.max ? `${f(s.median)}${s.n > 1 ? ` (all ${s.n} runs)` : ''}` : `${f(s.median)} (${f(s.min)}–${f(s.max)})`;
}

/**
 * "manual staging is 1.63× faster than MPI (range 1.41–1.80×)", or "no difference" when the ranges overlap; a and b
 * are bandwidth spreads (higher is better) of `aName` and `bName` over the same trials.
 */
export function compareSpreads(aName: string, a: Spread, bName: string, b: Spread, unit = 'GB/s'): { sentence: string; ratio: number | null; differs: boolean } {
	const numbers = `${aName} ${spreadText(a)} vs ${bName} ${spreadText(b)} ${unit}, median (min–max) of ${Math.min(a.n, b.n)} runs`;
	if (rangesOverlap(a, b) || a.median <= 0 || b.median <= 0) {
		return { sentence: `no difference between ${aName} and ${bName}: the ranges overlap (${numbers}).`, ratio: b.median > 0 ? a.median / b.median : null, differs: false };
	}
	const ratio = a.median / b.median;
	// The ratio's range from the extremes: worst case a.min/b.max, best case a.max/b.min.
	const lo = b.max > 0 ? a.min / b.max : null, hi = b.min > 0 ? a.max / b.min : null;
	if (ratio >= 1) {
		return { sentence: `${aName} is ${ratio.toFixed(2)}× faster than ${bName} (range ${lo!.toFixed(2)}–${hi!.toFixed(2)}×; ${numbers}).`, ratio, differs: true };
	}
	return { sentence: `${aName} is ${(1 / ratio).toFixed(2)}× slower than ${bName} (range ${(1 / hi!).toFixed(2)}–${(1 / lo!).toFixed(2)}×; ${numbers}).`, ratio, differs: true };
}
