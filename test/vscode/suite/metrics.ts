/**
 * Numbers the in-host tests measure (activation time, inspection time) for scripts/bench.mjs.
 * Kept on globalThis because each test module is bundled separately: a module-level map would be duplicated.
 */

const KEY = '__gpumpiDoctorTestMetrics';

type MetricStore = Record<string, number>;

function store(): MetricStore {
	const g = globalThis as unknown as Record<string, MetricStore | undefined>;
	let s = g[KEY];
	if (!s) { s = {}; g[KEY] = s; }
	return s;
}

/** Record one measurement (milliseconds unless the name says otherwise). */
export function recordMetric(name: string, value: number): void {
	store()[name] = value;
}

/** All measurements recorded so far. */
export function takeMetrics(): Record<string, number> {
	return { ...store() };
}
