/**
 * The program the guard runs, as the user typed or picked it in VS Code: an absolute path; a path relative to the
 * workspace folder (`./build/app`, `build/app`) on this machine; or a bare command name (`python3`, `lmp`) that the
 * launcher finds on the ranks' PATH, as `mpirun -np 2 python3 train.py` does. And the short list of recent programs.
 */
import * as path from 'node:path';

/** Where the program text is resolved. */
export interface ProgramContext {
	/** The program runs on this machine (a relative path can be resolved here). */
	local: boolean;
	/** The first workspace folder on this machine, if any: relative paths are resolved against it. */
	workspaceDir: string | null;
}

/** The program to run, or why the text cannot be one. */
export type ResolvedProgram = { program: string } | { error: string };

/** Resolve what the user typed (see the file comment); never touches the file system. */
export function resolveProgram(text: string, ctx: ProgramContext): ResolvedProgram {
	const t = text.trim();
	if (t === '') { return { error: 'a program: an absolute path, a path relative to the workspace folder, or a command name on PATH' }; }
	if (t.includes('\u0000') || /[\r\n]/.test(t)) { return { error: 'the program path has a control character' }; }
	if (t.startsWith('/')) { return { program: path.posix.normalize(t) }; }
	if (t.startsWith('~')) { return { error: 'give the path without ~ (nothing is expanded): an absolute path' }; }
	if (!t.includes('/')) { return { program: t }; }
	if (!ctx.local) { return { error: 'on a remote host: an absolute path there, or a command name on its PATH' }; }
	if (ctx.workspaceDir === null) { return { error: 'a relative path needs an open workspace folder: give an absolute path' }; }
	return { program: path.resolve(ctx.workspaceDir, t) };
}

/** How a program is shown in the picker: relative to the workspace folder when inside it. */
export function programLabel(program: string, workspaceDir: string | null): string {
	if (workspaceDir && program.startsWith(`${workspaceDir.replace(/\/+$/, '')}/`)) { return `./${path.relative(workspaceDir, program)}`; }
	return program;
}

/** Programs kept for the picker's recent list. */
export const RECENT_PROGRAMS_MAX = 5;

/** The stored recent list, junk dropped (it comes from workspace state: anything may be there). */
export function recentPrograms(stored: unknown): string[] {
	const list = Array.isArray(stored) ? stored.filter((x): x is string => typeof x === 'string' && x.length > 0 && !x.includes('\u0000')) : [];
	return [...new Set(list)].slice(0, RECENT_PROGRAMS_MAX);
}

/** The recent list with `program` first, once, at most RECENT_PROGRAMS_MAX. */
export function withRecent(stored: unknown, program: string): string[] {
	return [program, ...recentPrograms(stored).filter(p => p !== program)].slice(0, RECENT_PROGRAMS_MAX);
}
