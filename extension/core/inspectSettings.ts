/**
 * The inspection settings and their validation, apart from inspect.ts so that reading settings (the VS Code
 * extension at activation, the CLI's flags) does not load the collector, parsers and rules.
 */
import * as path from 'node:path';

/** Validated inspection settings (from VS Code settings or CLI flags). */
export interface InspectSettings {
	ranks: number;
	timeoutSeconds: number;
	/** Explicit engine path, or "" for the built one. */
	enginePath: string;
	/** Explicit mpirun, or "" for PATH. */
	mpirunPath: string;
}

/** Defaults matching package.json `contributes.configuration`. */
export const DEFAULT_SETTINGS: InspectSettings = { ranks: 1, timeoutSeconds: 60, enginePath: '', mpirunPath: '' };

/**
 * Validate raw setting values (hostile values are data: wrong types, NaN, huge numbers, relative paths, NUL bytes).
 * Returns the settings to use plus one message per value that was rejected (and replaced by its default).
 */
export function normalizeSettings(raw: { ranks?: unknown; timeoutSeconds?: unknown; enginePath?: unknown; mpirunPath?: unknown }):
	{ settings: InspectSettings; problems: string[] } {
	const problems: string[] = [];
	const settings: InspectSettings = { ...DEFAULT_SETTINGS };
	const int = (v: unknown, min: number, max: number): number | null =>
		typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max ? v : null;
	const num = (v: unknown, min: number, max: number): number | null =>
		typeof v === 'number' && Number.isFinite(v) && v >= min && v <= max ? v : null;
	const file = (v: unknown): string | null =>
		typeof v === 'string' && !v.includes('\0') && v.length < 4096 && (v === '' || path.isAbsolute(v) || !v.includes('/')) ? v : null;

	if (raw.ranks !== undefined) {
		const v = int(raw.ranks, 1, 1024);
		if (v === null) { problems.push(`ranks must be an integer from 1 to 1024, got ${JSON.stringify(raw.ranks)}`); } else { settings.ranks = v; }
	}
	if (raw.timeoutSeconds !== undefined) {
		const v = num(raw.timeoutSeconds, 1, 3600);
		if (v === null) { problems.push(`timeout must be a number of seconds from 1 to 3600, got ${JSON.stringify(raw.timeoutSeconds)}`); } else { settings.timeoutSeconds = v; }
	}
	if (raw.enginePath !== undefined) {
		const v = file(raw.enginePath);
		if (v === null) { problems.push(`engine path must be an absolute path, got ${JSON.stringify(raw.enginePath)}`); } else { settings.enginePath = v; }
	}
	if (raw.mpirunPath !== undefined) {
		const v = file(raw.mpirunPath);
		if (v === null) { problems.push(`mpirun path must be an absolute path or a program name, got ${JSON.stringify(raw.mpirunPath)}`); } else { settings.mpirunPath = v; }
	}
	return { settings, problems };
}
