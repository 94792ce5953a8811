/**
 * Counts the child processes started while a function runs, by wrapping node:child_process's spawn / execFile (the
 * only ways the product starts programs: core/proc.ts, core/hosts/sshHost.ts, deployEngine.ts). The bundles call
 * them through the module object, so the wrapper sees every call. Used to show that a usage error starts nothing.
 */
import type * as childProcess from 'node:child_process';

type Mutable = { spawn: typeof childProcess.spawn; execFile: typeof childProcess.execFile };

/** Run `fn`; resolve to its value and the argv of every process it started. */
export async function withSpawnSpy<T>(fn: () => Promise<T>): Promise<{ value: T; spawned: string[][] }> {
	// The module object itself (an `import * as` namespace is a read-only copy in the bundle).
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const mod = require('node:child_process') as Mutable;
	const { spawn, execFile } = mod;
	const spawned: string[][] = [];
	mod.spawn = ((cmd: string, args?: readonly string[], ...rest: unknown[]) => {
		spawned.push([cmd, ...(Array.isArray(args) ? args : [])]);
		return (spawn as (...a: unknown[]) => childProcess.ChildProcess)(cmd, args, ...rest);
	}) as typeof childProcess.spawn;
	mod.execFile = ((cmd: string, args?: readonly string[], ...rest: unknown[]) => {
		spawned.push([cmd, ...(Array.isArray(args) ? args : [])]);
		return (execFile as (...a: unknown[]) => childProcess.ChildProcess)(cmd, args, ...rest);
	}) as typeof childProcess.execFile;
	try {
		return { value: await fn(), spawned };
	} finally {
		mod.spawn = spawn;
		mod.execFile = execFile;
	}
}
