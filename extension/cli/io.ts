/**
 * What every `gpumpi-doctor` subcommand shares: where it writes (`CliIo`, injected so tests and callers redirect it),
 * the one `UsageError`, and the one exit-code table.
 *
 * Exit codes (README, `--help`): 0 the subcommand ran (an inspection or a reproducer that found problems still exits
 * 0: the findings are the output), 2 usage error (found before anything is launched), 3 failure (nothing could run,
 * the run failed, a file could not be read or written), 130 interrupted (Ctrl-C; running tools are killed with their
 * process groups). `guard` alone gives its program's exit code and keeps 124–127 for its own (core/guard/guardResult.ts
 * GUARD_EXIT).
 */
import { errorText } from '../core/logger';

/** The exit-code table of every subcommand. */
export const EXIT = { ok: 0, usage: 2, failed: 3, interrupted: 130 } as const;
/** One of the exit codes of {@link EXIT}. */
export type ExitCode = typeof EXIT[keyof typeof EXIT];

/** Where a subcommand writes and what it can see. */
export interface CliIo {
	stdout(text: string): void;
	stderr(text: string): void;
	cwd: string;
	signal: AbortSignal;
}

/** A mistake in the command line: printed with the subcommand's usage, exit 2. An empty message asks for the usage. */
export class UsageError extends Error {}

/**
 * Run one subcommand body with the exit-code table applied: a UsageError prints the message, the synopsis (the
 * usage's first line) and where the rest is on stderr and gives 2 (an empty message: the whole usage on stdout, 0);
 * any other error gives 3. `codes` replaces 2 and 3 for a subcommand whose exit code is another program's (guard).
 */
export async function runSubcommand(name: string, usage: string, io: CliIo, body: () => Promise<number>,
	codes: { usage: number; failed: number } = EXIT): Promise<number> {
	try {
		return await body();
	} catch (e) {
		if (e instanceof UsageError) {
			if (!e.message) { io.stdout(usage); return EXIT.ok; }
			io.stderr(`gpumpi-doctor ${name}: ${e.message}\n${usage.split('\n')[0]}\n(gpumpi-doctor ${name} --help lists every option)\n`);
			return codes.usage;
		}
		io.stderr(`gpumpi-doctor ${name}: failed: ${errorText(e)}\n`);
		return codes.failed;
	}
}

/** A short, printable rendering of a user value for a message (control characters escaped, at most 60 characters). */
export function shown(value: string): string {
	return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
}
