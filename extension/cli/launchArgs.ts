/**
 * Options shared by the subcommands that launch the engine under mpirun (`repro`, `map`): one reader for
 * `--mpirun --engine --flavor --memory --preset --mca --timeout --from-json`, and the argv helpers they use.
 */
import { parsePreset, type MpiFlavor } from '../core/repro/launcher';

/** A mistake in the command line: the caller prints it with its usage and exits 2. */
export class UsageError extends Error {}

/** The value after the option at argv[i]; UsageError when there is none. */
export function optionValue(argv: readonly string[], i: number, name: string): string {
	const v = argv[i + 1];
	if (v === undefined) { throw new UsageError(`${name} needs a value`); }
	return v;
}

/** A decimal integer in lo..hi; UsageError otherwise. */
export function optionInt(text: string, name: string, lo: number, hi: number): number {
	const n = Number(text);
	if (!/^\d+$/.test(text) || n < lo || n > hi) { throw new UsageError(`${name} needs an integer ${lo}..${hi}`); }
	return n;
}

/** What the launcher options set. */
export interface LaunchCliOptions {
	mpirun: string;
	engine: string | null;
	flavor: MpiFlavor | null;
	memory: 'device' | 'host';
	env: Array<[string, string]>;
	mca: Array<[string, string]>;
	timeoutS: number;
	fromJson: string | null;
}

/**
 * When argv[i] is one of the shared launcher options, store it in `o` and return the index of its last value;
 * otherwise return -1 (the caller handles its own options).
 */
export function readLaunchOption(argv: readonly string[], i: number, o: LaunchCliOptions): number {
	const a = argv[i];
	switch (a) {
		case '--mpirun': o.mpirun = optionValue(argv, i, a); return i + 1;
		case '--engine': o.engine = optionValue(argv, i, a); return i + 1;
		case '--from-json': o.fromJson = optionValue(argv, i, a); return i + 1;
		case '--flavor': {
			const f = optionValue(argv, i, a);
			if (f !== 'openmpi' && f !== 'mpich') { throw new UsageError('--flavor needs openmpi or mpich'); }
			o.flavor = f;
			return i + 1;
		}
		case '--memory': {
			const m = optionValue(argv, i, a);
			if (m !== 'device' && m !== 'host') { throw new UsageError('--memory needs device or host'); }
			o.memory = m;
			return i + 1;
		}
		case '--timeout': o.timeoutS = optionInt(optionValue(argv, i, a), a, 1, 86400); return i + 1;
		case '--preset': {
			const p = parsePreset(optionValue(argv, i, a));
			if (!p) { throw new UsageError('--preset needs NAME=VALUE'); }
			o.env.push(p);
			return i + 1;
		}
		case '--mca': {
			const k = optionValue(argv, i, a), v = optionValue(argv, i + 1, a);
			o.mca.push([k, v]);
			return i + 2;
		}
		default: return -1;
	}
}
