/**
 * The one size syntax of the CLI, the VS Code commands and the engine's options: a decimal count with an optional
 * binary unit, "4096", "64K", "64M", "1G" (K = 1024). Lists are "1M,64M"; ranges "1M..1G" expand in ×4 steps with
 * the upper bound always included, exactly as the engine expands them (native/engine/reproFallback.cc
 * parseSizeList). The limits below are the ones the engine enforces (native/cli/reproCmd.cc, mapCmd.cc), so a value
 * that passes here is one the engine accepts. Pure: no Node, no vscode.
 */

/** What a size option accepts. */
export interface SizeLimits {
	min: number;
	max: number;
	/** The size must be a multiple of this (the engine's buffers are arrays of 32-bit words). */
	multipleOf: number;
}

/** `repro ipc --size` (reproCmd.cc: a multiple of 4 from 4 to 1G). */
export const IPC_SIZE_LIMITS: SizeLimits = { min: 4, max: 1 << 30, multipleOf: 4 };
/**
 * `repro fallback --sizes`, each size (reproFallback.cc: multiples of 4; the engine splits messages above 1G into
 * 1G pieces and sets no upper bound, 1024G here keeps every size exact in a JSON number and below any GPU's memory).
 */
export const FALLBACK_SIZE_LIMITS: SizeLimits = { min: 4, max: 2 ** 40, multipleOf: 4 };
/** At most this many fallback sizes (reproFallback.cc). */
export const MAX_FALLBACK_SIZES = 64;
/** `repro fallback --chunk` (reproCmd.cc: a multiple of 4 from 4K to 1G). */
export const CHUNK_SIZE_LIMITS: SizeLimits = { min: 4096, max: 1 << 30, multipleOf: 4 };
/** `map --large` (mapCmd.cc: 1 to 1G). */
export const MAP_LARGE_LIMITS: SizeLimits = { min: 1, max: 1 << 30, multipleOf: 1 };
/** `map --small` (mapCmd.cc: 1 to 1M). */
export const MAP_SMALL_LIMITS: SizeLimits = { min: 1, max: 1 << 20, multipleOf: 1 };

const SIZE = /^(\d{1,16})([KMG]?)$/;
const UNIT: Record<string, number> = { '': 1, K: 1024, M: 1024 ** 2, G: 1024 ** 3 };

/** "64M" → 67108864; null when the text is not a size or is too large to be exact. */
export function parseSize(text: string): number | null {
	const m = SIZE.exec(text);
	if (!m) { return null; }
	const n = Number(m[1]) * UNIT[m[2]];
	return Number.isSafeInteger(n) ? n : null;
}

/** 67108864 → "64M", 4096 → "4K", 1000 → "1000": the shortest exact text in the syntax above. */
export function formatSize(bytes: number): string {
	for (const u of ['G', 'M', 'K'] as const) {
		if (bytes >= UNIT[u] && bytes % UNIT[u] === 0) { return `${bytes / UNIT[u]}${u}`; }
	}
	return String(bytes);
}

function describe(l: SizeLimits): string {
	const range = `from ${formatSize(l.min)} to ${formatSize(l.max)}`;
	return l.multipleOf > 1 ? `a multiple of ${l.multipleOf} bytes ${range}` : `a size ${range}`;
}

/** Why `bytes` is outside `limits` ("" when it is fine). */
function limitProblem(bytes: number, l: SizeLimits): string {
	return bytes < l.min || bytes > l.max || bytes % l.multipleOf !== 0 ? describe(l) : '';
}

/** One size within limits: its bytes, or the reason it is refused (naming the accepted form). */
export function checkSizeText(text: string, limits: SizeLimits): number | string {
	const n = parseSize(text);
	if (n === null) { return `${describe(limits)}, like 64M, 1G or 4096`; }
	const p = limitProblem(n, limits);
	return p ? `${p} (${formatSize(n)} is not)` : n;
}

/**
 * Sizes of "1M..1G" (×4 steps, upper bound included) or "1M,64M": the byte counts, or the reason they are refused
 * (a reversed or empty range, a bad item, a size outside limits, more than `maxCount` sizes).
 */
export function checkSizeListText(text: string, limits: SizeLimits, maxCount = MAX_FALLBACK_SIZES): number[] | string {
	const form = 'a range like 1M..1G (×4 steps) or a list like 1M,64M';
	const out: number[] = [];
	const dots = text.indexOf('..');
	if (dots >= 0) {
		const lo = parseSize(text.slice(0, dots)), hi = parseSize(text.slice(dots + 2));
		if (lo === null || hi === null) { return form; }
		if (lo === 0 || hi < lo) { return `the range ${text} is empty (the first size must be above 0 and at most the last); ${form}`; }
		for (let s = lo; s <= hi && out.length <= maxCount; s *= 4) { out.push(s); }
		if (out[out.length - 1] !== hi && out.length <= maxCount) { out.push(hi); }
	} else {
		for (const item of text.split(',')) {
			const n = parseSize(item);
			if (n === null) { return `${JSON.stringify(item.slice(0, 40))} is not a size; ${form}`; }
			out.push(n);
			if (out.length > maxCount) { break; }
		}
	}
	if (out.length > maxCount) { return `at most ${maxCount} sizes`; }
	for (const n of out) {
		const p = limitProblem(n, limits);
		if (p) { return `each size must be ${p} (${formatSize(n)} is not)`; }
	}
	return out;
}
