/**
 * Headless CLI: `gpumpi-doctor <subcommand> [options]`. Subcommands live in one table; every one parses and checks
 * its whole command line with the one argv mechanism (argv.ts) before it inspects, launches, ssh's or deploys
 * anything, and exits with the one table of io.ts (0 ran: the findings are the output, 2 usage error, 3 failure, 130
 * interrupted: Ctrl-C; running tools are killed with their process groups); `guard` gives its program's exit code and
 * keeps timeout(1)'s 124–127 for its own (core/guard/guardResult.ts GUARD_EXIT).
 */
import * as path from 'node:path';
import { version as toolVersion } from '../../package.json';
import { normalizeSettings } from '../core/inspect';
import { errorText, nullLogger } from '../core/logger';
import { analyzeMain, collectMain } from './bundleCli';
import { EXIT, type CliIo } from './io';
import { GUARD_EXIT } from '../core/guard/guardResult';
import { guardMain } from './guardCli';
import { inspectMain, inspectWhere } from './inspectCli';
import { mapMain } from './mapCli';
import { reproMain } from './reproCli';

export type { CliIo } from './io';

/** One subcommand of the table: it parses its own argv (argv.ts) and never rejects. */
export interface Subcommand {
	name: string;
	summary: string;
	run(args: string[], io: CliIo): Promise<number>;
	/** Its exit code for a usage error, when not EXIT.usage (guard: its program's exit code is its own). */
	usageExit?: number;
}

/** Every subcommand, in `--help` order. */
export const SUBCOMMANDS: readonly Subcommand[] = [
	{ name: 'inspect', summary: 'Inspect this host\'s MPI / UCX / CUDA stack and explain what GPU buffers will do; see "inspect --help".', run: inspectMain },
	{
		name: 'collect', summary: 'Inspect this host and write an offline bundle to share (docs/bundle.md); see "collect --help".',
		run: (args, io) => collectMain(args, {
			inspect: where => inspectWhere({ ...where, sshConfig: where.sshConfig ? path.resolve(io.cwd, where.sshConfig) : undefined },
				normalizeSettings({}).settings, io, nullLogger),
			io,
		}),
	},
	{ name: 'analyze', summary: 'Analyse an offline bundle written by collect, anywhere; see "analyze --help".', run: analyzeMain },
	{ name: 'repro', summary: 'Run the GPU-buffer reproducers (ipc | fallback) under mpirun; see "repro --help".', run: reproMain },
	{ name: 'map', summary: 'Transport map: how each pair of ranks moves GPU data (gpumpi map under mpirun); see "map --help".', run: mapMain },
	{
		name: 'guard', summary: 'Run your own MPI program under gpumpi-guard: its GPU-buffer calls, dangers with call sites, fixes, traffic; see "guard --help".',
		run: guardMain, usageExit: GUARD_EXIT.guardFailed,
	},
];

function helpText(): string {
	return `gpumpi-doctor ${toolVersion} — what your MPI / UCX / CUDA stack really does with GPU buffers

Usage: gpumpi-doctor <command> [options]     (gpumpi-doctor <command> --help for its options)

Commands:
${SUBCOMMANDS.map(c => `  ${c.name.padEnd(10)} ${c.summary}`).join('\n')}

Exit codes (every command): 0 ran (findings are the output), 2 usage error (nothing was run), 3 failure (nothing
could run, the run failed, a file could not be read or written), 130 interrupted. guard gives its program's exit code
and keeps those of timeout(1) for itself: 124 timed out, 125 the guard failed (usage errors too), 126 / 127 COMMAND not
runnable / not found (guard --help).
`;
}

/** Run the CLI with `args` (without node and script). Resolves to the exit code; never rejects. */
export async function main(args: readonly string[], io: CliIo): Promise<number> {
	const [name, ...rest] = args;
	if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
		io.stdout(helpText());
		return name === undefined ? EXIT.usage : EXIT.ok;
	}
	if (name === '--version' || name === '-V') { io.stdout(`${toolVersion}\n`); return EXIT.ok; }
	const cmd = SUBCOMMANDS.find(c => c.name === name);
	if (!cmd) {
		io.stderr(`gpumpi-doctor: unknown command ${JSON.stringify(name)}\n\n${helpText()}`);
		return EXIT.usage;
	}
	const nul = args.findIndex(a => a.includes('\0'));
	if (nul >= 0) { io.stderr(`gpumpi-doctor: argument ${nul + 1} contains a NUL byte\n`); return cmd.usageExit ?? EXIT.usage; }
	try { return await cmd.run(rest, io); } catch (e) {
		io.stderr(`gpumpi-doctor ${cmd.name}: failed: ${errorText(e)}\n`);
		return EXIT.failed;
	}
}

/** Entry point used by bin/gpumpi-doctor.js. */
export function run(): void {
	const abort = new AbortController();
	let interrupts = 0;
	const onSignal = (): void => {
		interrupts++;
		if (interrupts > 1) { process.exit(EXIT.interrupted); }
		process.stderr.write('\ngpumpi-doctor: stopping running tools… (Ctrl-C again to quit at once)\n');
		abort.abort();
	};
	process.on('SIGINT', onSignal);
	process.on('SIGTERM', onSignal);
	const io: CliIo = {
		stdout: t => { process.stdout.write(t); },
		stderr: t => { process.stderr.write(t); },
		cwd: process.cwd(),
		signal: abort.signal,
	};
	void main(process.argv.slice(2), io).then(code => { process.exitCode = code; });
}

if (require.main === module) { run(); }
