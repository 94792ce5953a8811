/**
 * Headless CLI: `gpumpi-doctor <subcommand> [options]`. Subcommands live in one table; every one parses and checks
 * its whole command line before it inspects, launches, ssh's or deploys anything, and exits with the one table of
 * io.ts (0 ran: the findings are the output, 2 usage error, 3 failure, 130 interrupted: Ctrl-C; running tools are
 * killed with their process groups).
 */
import * as path from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import panelCss from '../../media/panel/panel.css';
import { version as toolVersion } from '../../package.json';
import { renderStandaloneReport } from '../shared/render';
import { writeFileWhole } from '../core/fileWrite';
import { resolveHost } from '../core/hosts/hostSettings';
import { LocalHost } from '../core/hosts/localHost';
import { openRemoteTarget, type RemoteTarget } from '../core/hosts/remoteTarget';
import { inspectHost, normalizeSettings } from '../core/inspect';
import { createLogger, errorText, nullLogger, streamSink, type Logger } from '../core/logger';
import type { Report } from '../shared/report';
import { SRUN_MPI_PLUGIN, type SrunSpec } from '../core/launch/launchSpec';
import { checkMpirun } from '../core/repro/reproChoices';
import { analyzeMain, collectMain } from './bundleCli';
import { EXIT, isParseArgsError, shown, UsageError, type CliIo } from './io';
import { guardMain } from './guardCli';
import { mapMain } from './mapCli';
import { reproMain } from './reproCli';
import { renderReportText } from './textReport';

export type { CliIo } from './io';

type Options = NonNullable<ParseArgsConfig['options']>;
type Values = Record<string, string | boolean | string[] | undefined>;

/** A subcommand whose options the table parses (node:util parseArgs, strict). */
export interface ParsedSubcommand {
	name: string;
	summary: string;
	usage: string;
	options: Options;
	run(values: Values, positionals: string[], io: CliIo): Promise<number>;
}

/** A subcommand that parses its own arguments and prints its own usage (e.g. repro). */
export interface RawSubcommand {
	name: string;
	summary: string;
	runRaw(args: string[], io: CliIo): Promise<number>;
}

/** One subcommand of the table. */
export type Subcommand = ParsedSubcommand | RawSubcommand;

/**
 * `--opt VALUE` → `--opt=VALUE` for string options, so a value may start with "-" (`--srun-arg -N2`), as getopt
 * does for options that take an argument (node:util parseArgs refuses such a value otherwise).
 */
function joinOptionValues(args: readonly string[], options: Options): string[] {
	const out: string[] = [];
	for (let i = 0; i < args.length; i++) {
		const a = args[i];
		const name = a.startsWith('--') && !a.includes('=') ? a.slice(2) : '';
		if (name && options[name]?.type === 'string' && i + 1 < args.length && args[i + 1].startsWith('-')) {
			out.push(`${a}=${args[i + 1]}`);
			i++;
		} else {
			out.push(a);
		}
	}
	return out;
}

/** Which machine to inspect: this one, or an ssh host (`--host`, `--setup`, `--ssh-config`). */
export interface InspectWhere {
	host?: string;
	setup?: string;
	sshConfig?: string;
	/** ssh ConnectTimeout in seconds (default 10). */
	connectTimeoutSeconds?: number;
	/** Launch the engine with srun (options as argv items). */
	srun?: Omit<SrunSpec, 'jobName'> | null;
}

function whereOf(values: Values, cwd: string): InspectWhere {
	return {
		host: typeof values.host === 'string' ? values.host : undefined,
		setup: typeof values.setup === 'string' ? values.setup : undefined,
		sshConfig: typeof values['ssh-config'] === 'string' ? path.resolve(cwd, values['ssh-config']) : undefined,
		connectTimeoutSeconds: connectTimeoutOf(values['connect-timeout']),
		srun: srunOf(values),
	};
}

function connectTimeoutOf(v: Values[string]): number | undefined {
	if (v === undefined) { return undefined; }
	if (typeof v !== 'string' || !/^\d{1,3}$/.test(v.trim()) || Number(v) < 1 || Number(v) > 300) {
		throw new UsageError(`--connect-timeout needs whole seconds from 1 to 300, got ${shown(String(v))}`);
	}
	return Number(v);
}

function srunOf(values: Values): Omit<SrunSpec, 'jobName'> | null {
	const mpi = typeof values['srun-mpi'] === 'string' ? values['srun-mpi'] : null;
	const raw = (values as Record<string, unknown>)['srun-arg'];
	const args = Array.isArray(raw) ? raw.filter((a): a is string => typeof a === 'string') : [];
	if (!values.srun && mpi === null && args.length === 0) { return null; }
	if (mpi !== null && !SRUN_MPI_PLUGIN.test(mpi)) { throw new UsageError(`--srun-mpi needs a plugin name like pmi2, got ${shown(mpi)}`); }
	return { srun: 'srun', mpi, allocation: args };
}

/** Inspect this machine or the ssh host `where.host` (engine deployed and built there unless settings name one). */
async function inspectWhere(where: InspectWhere, settings: ReturnType<typeof normalizeSettings>['settings'], io: CliIo, logger: Logger, program?: string): Promise<Report> {
	if (where.host === undefined && (where.setup !== undefined || where.sshConfig !== undefined)) { throw new UsageError('--setup and --ssh-config need --host'); }
	if (where.host === undefined && where.connectTimeoutSeconds !== undefined) { throw new UsageError('--connect-timeout needs --host'); }
	let remote: RemoteTarget | undefined;
	if (where.host !== undefined) {
		const target = resolveHost([], where.host, where.setup);
		if ('error' in target) { throw new UsageError(`--host: ${target.error}`); }
		remote = await openRemoteTarget({ ...target, enginePath: settings.enginePath, mpirun: settings.mpirunPath }, {
			configFile: where.sshConfig,
			connectTimeoutSeconds: where.connectTimeoutSeconds,
			signal: io.signal,
			onProgress: m => logger.info(m),
		});
		if (remote.deploy && !remote.deploy.ok && !io.signal.aborted) {
			io.stderr(`gpumpi-doctor: ${remote.deploy.error}\n${remote.deploy.lines.map(l => `  ${l}\n`).join('')}`);
		}
	}
	try {
		return await inspectHost(remote?.host ?? new LocalHost(), {
			...settings,
			...(remote ? { enginePath: remote.enginePath, locateEngine: remote.locateEngine, probe: remote.probe, srun: remote.srun } : {}),
			...(where.srun ? { srun: where.srun } : {}),
			...(program !== undefined ? { program } : {}),
			signal: io.signal,
			logger,
			onProgress: m => logger.info(m),
		});
	} finally {
		await remote?.close();
	}
}


/**
 * The checked values of `inspect` (UsageError for any bad one; nothing is run): settings, where to inspect and the
 * HTML file to write (undefined: none).
 */
function checkInspectArgs(values: Values, positionals: string[], cwd: string): { settings: ReturnType<typeof normalizeSettings>['settings']; where: InspectWhere; htmlFile: string | undefined; program: string | undefined } {
	if (positionals.length > 0) { throw new UsageError(`unexpected argument: ${positionals[0]}`); }
	const numberOf = (flag: string, v: Values[string]): number | undefined => {
		if (v === undefined) { return undefined; }
		if (typeof v !== 'string' || !/^\s*\d+(\.\d+)?\s*$/.test(v)) { throw new UsageError(`--${flag} needs a number, got ${shown(String(v))}`); }
		return Number(v);
	};
	for (const flag of ['engine', 'mpirun'] as const) {
		const v = values[flag];
		const problem = typeof v === 'string' ? checkMpirun(v) : null;
		if (problem) { throw new UsageError(`--${flag} needs a program path: ${problem}`); }
	}
	const absolute = (v: Values[string]): string | undefined =>
		typeof v === 'string' && v.length > 0 && v.includes('/') ? path.resolve(cwd, v) : (typeof v === 'string' ? v : undefined);
	const { settings, problems } = normalizeSettings({
		ranks: numberOf('ranks', values.ranks),
		timeoutSeconds: numberOf('timeout', values.timeout),
		enginePath: absolute(values.engine),
		mpirunPath: absolute(values.mpirun),
	});
	if (problems.length > 0) { throw new UsageError(problems.join('; ')); }
	if (typeof values.html === 'string' && values.html.length === 0) { throw new UsageError('--html needs a file name'); }
	if (values['ssh-config'] === '') { throw new UsageError('--ssh-config needs a file name'); }
	const where = whereOf(values, cwd);
	if (where.host === undefined && (where.setup !== undefined || where.sshConfig !== undefined)) { throw new UsageError('--setup and --ssh-config need --host'); }
	if (where.host === undefined && where.connectTimeoutSeconds !== undefined) { throw new UsageError('--connect-timeout needs --host'); }
	if (where.host !== undefined) {
		const target = resolveHost([], where.host, where.setup);
		if ('error' in target) { throw new UsageError(`--host: ${target.error}`); }
	}
	const htmlFile = typeof values.html === 'string' ? path.resolve(cwd, values.html)
		: values.json ? undefined : path.join(cwd, 'gpumpi-report.html');
	// --program: a path here (made absolute), or on --host a path there; a bare name is looked up on the host's PATH.
	const prog = values.program;
	if (typeof prog === 'string' && (prog.trim() === '' || prog.includes('\0') || /[\r\n]/.test(prog))) { throw new UsageError('--program needs a program or script path'); }
	const program = typeof prog !== 'string' ? undefined : (prog.includes('/') || /\.(py|jl)$/.test(prog)) && where.host === undefined ? path.resolve(cwd, prog) : prog;
	return { settings, where, htmlFile, program };
}

/**
 * `inspect` argv → its checked options (UsageError, or node:util's parse error, for a bad command line). Pure: what
 * `gpumpi-doctor inspect` runs only after this has accepted the whole command line.
 */
export function parseInspectArgs(args: readonly string[], cwd: string): ReturnType<typeof checkInspectArgs> & { values: Values } {
	const parsed = parseArgs({ args: joinOptionValues(args, inspectCommand.options), options: inspectCommand.options, allowPositionals: true, strict: true });
	const values = parsed.values as Values;
	return { ...checkInspectArgs(values, parsed.positionals, cwd), values };
}

const inspectCommand: ParsedSubcommand = {
	name: 'inspect',
	summary: 'Inspect this host\'s MPI / UCX / CUDA stack and explain what GPU buffers will do.',
	usage: `gpumpi-doctor inspect [--json] [--html FILE] [--ranks N] [--engine PATH] [--mpirun PATH] [--timeout S] [--verbose] [--program PATH]
                      [--host SSH-HOST [--setup LINE] [--ssh-config FILE] [--connect-timeout S]] [--srun [--srun-mpi P] [--srun-arg X]…]

  --json          print the report as JSON on stdout (nothing else; no HTML unless --html)
  --html FILE     write the standalone HTML report to FILE (default without --json: gpumpi-report.html)
  --ranks N       engine ranks launched with mpirun -np N (1..1024, default 1)
  --engine PATH   the gpumpi engine binary (default: the one built in native/build)
  --mpirun PATH   the mpirun to launch the engine with (default: mpirun on PATH)
  --timeout S     seconds after which a tool is killed (1..3600, default 60)
  --verbose       log what is being run to stderr
  --program PATH  also read your program (readelf, ldd; a .py / .jl script with python3 / julia as its interpreter):
                  its link order, Cray MPICH's GTL, framework allocator settings in the script, mpi4py's thread level
  --host H        inspect the ssh host H (an alias from ~/.ssh/config or user@host) instead of this machine, with the
                  system ssh client (key login, host key already in known_hosts); without --engine the engine is
                  copied to and built on H (cached in ~/.cache/gpumpi-doctor/ there)
  --setup LINE    shell code run on H before every command, e.g. "module load openmpi" (executed as shell there)
  --ssh-config F  ssh_config file to use instead of ~/.ssh/config
  --connect-timeout S  seconds ssh waits for H to answer (1..300, default 10). H is connected to before anything
                  else; when it cannot be reached the report has one finding, host-unreachable, with ssh's reason
                  (name not resolved, refused, host key, login refused, timeout), and nothing is checked there
  --srun          launch the engine with Slurm's srun (its ranks run on the allocation's compute nodes, not on the
                  login node); --srun-mpi P gives srun --mpi=P, --srun-arg X (repeatable) an srun/allocation option`,
	options: {
		json: { type: 'boolean' },
		html: { type: 'string' },
		ranks: { type: 'string' },
		engine: { type: 'string' },
		mpirun: { type: 'string' },
		timeout: { type: 'string' },
		verbose: { type: 'boolean', short: 'v' },
		host: { type: 'string' },
		setup: { type: 'string' },
		'ssh-config': { type: 'string' },
		'connect-timeout': { type: 'string' },
		srun: { type: 'boolean' },
		'srun-mpi': { type: 'string' },
		'srun-arg': { type: 'string', multiple: true },
		program: { type: 'string' },
	},
	async run(values, positionals, io) {
		const { settings, where, htmlFile, program } = checkInspectArgs(values, positionals, io.cwd);
		const logger = values.verbose ? createLogger(streamSink(io.stderr, 'debug'), 'cli') : nullLogger;
		const report = await inspectWhere(where, settings, io, logger, program);
		if (io.signal.aborted) { io.stderr('gpumpi-doctor: interrupted; running tools were stopped\n'); return EXIT.interrupted; }

		if (values.json) { io.stdout(JSON.stringify(report, null, 2) + '\n'); } else { io.stdout(renderReportText(report)); }
		if (htmlFile) {
			try {
				writeFileWhole(htmlFile, renderStandaloneReport(report, panelCss));
			} catch (e) {
				io.stderr(`gpumpi-doctor: cannot write the HTML report to ${htmlFile}: ${errorText(e)}\n`);
				return EXIT.failed;
			}
			if (!values.json) { io.stdout(`\nHTML report: ${htmlFile}\n`); } else { io.stderr(`HTML report: ${htmlFile}\n`); }
		}
		return EXIT.ok;
	},
};

const reproCommand: RawSubcommand = {
	name: 'repro',
	summary: 'Run the GPU-buffer reproducers (ipc | fallback) under mpirun; see "repro --help".',
	runRaw: (args, io) => reproMain(args, io),
};

const collectCommand: RawSubcommand = {
	name: 'collect',
	summary: 'Inspect this host and write an offline bundle to share (docs/bundle.md); see "collect --help".',
	runRaw: (args, io) => collectMain(args, {
		inspect: where => inspectWhere({ ...where, sshConfig: where.sshConfig ? path.resolve(io.cwd, where.sshConfig) : undefined },
			normalizeSettings({}).settings, io, nullLogger),
		io,
	}),
};

const analyzeCommand: RawSubcommand = {
	name: 'analyze',
	summary: 'Analyse an offline bundle written by collect, anywhere; see "analyze --help".',
	runRaw: (args, io) => analyzeMain(args, io),
};

/** Every subcommand, in `--help` order. */
export const SUBCOMMANDS: readonly Subcommand[] = [inspectCommand, collectCommand, analyzeCommand, reproCommand,
	{ name: 'map', summary: 'Transport map: how each pair of ranks moves GPU data (gpumpi map under mpirun); see "map --help".', runRaw: (args, io) => mapMain(args, io) },
	{ name: 'guard', summary: 'Run your own MPI program under gpumpi-guard: its GPU-buffer calls, dangers with call sites, fixes, traffic; see "guard --help".', runRaw: (args, io) => guardMain(args, io) }];

function helpText(): string {
	return `gpumpi-doctor ${toolVersion} — what your MPI / UCX / CUDA stack really does with GPU buffers

Usage: gpumpi-doctor <command> [options]     (gpumpi-doctor <command> --help for its options)

Commands:
${SUBCOMMANDS.map(c => `  ${c.name.padEnd(10)} ${c.summary}`).join('\n')}

Exit codes (every command): 0 ran (findings are the output), 2 usage error (nothing was run), 3 failure (nothing
could run, the run failed, a file could not be read or written), 130 interrupted.
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
	const nul = args.findIndex(a => a.includes('\0'));
	if (nul >= 0) { io.stderr(`gpumpi-doctor: argument ${nul + 1} contains a NUL byte\n`); return EXIT.usage; }
	const cmd = SUBCOMMANDS.find(c => c.name === name);
	if (!cmd) {
		io.stderr(`gpumpi-doctor: unknown command ${JSON.stringify(name)}\n\n${helpText()}`);
		return EXIT.usage;
	}
	if ('runRaw' in cmd) {
		try { return await cmd.runRaw(rest, io); } catch (e) {
			io.stderr(`gpumpi-doctor ${cmd.name}: failed: ${errorText(e)}\n`);
			return EXIT.failed;
		}
	}
	if (rest.includes('--help') || rest.includes('-h')) { io.stdout(`Usage: ${cmd.usage}\n`); return EXIT.ok; }
	try {
		const parsed = parseArgs({ args: joinOptionValues(rest, cmd.options), options: cmd.options, allowPositionals: true, strict: true });
		return await cmd.run(parsed.values as Values, parsed.positionals, io);
	} catch (e) {
		if (e instanceof UsageError || isParseArgsError(e)) {
			io.stderr(`gpumpi-doctor ${cmd.name}: ${errorText(e)}\n\nUsage: ${cmd.usage}\n`);
			return EXIT.usage;
		}
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
