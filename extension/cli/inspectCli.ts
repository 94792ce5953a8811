/**
 * `gpumpi-doctor inspect`: inspect this machine or an ssh host (core/inspect.ts) and print the findings as text (or
 * the report as JSON with --json), and write the standalone HTML report. Every option is checked (parseInspectArgs)
 * before anything is inspected, ssh'd to or deployed; exit codes are the table of io.ts.
 */
import * as path from 'node:path';
import panelCss from '../../media/panel/panel.css';
import { renderStandaloneReport } from '../shared/render';
import type { Report } from '../shared/report';
import { writeFileWhole } from '../core/fileWrite';
import { resolveHost } from '../core/hosts/hostSettings';
import { LocalHost } from '../core/hosts/localHost';
import { openRemoteTarget, type RemoteTarget } from '../core/hosts/remoteTarget';
import { inspectHost, normalizeSettings } from '../core/inspect';
import type { SrunSpec } from '../core/launch/launchSpec';
import { createLogger, errorText, nullLogger, streamSink, type Logger } from '../core/logger';
import { decimal, flag, helpText, integer, option, parseArgv, text, withHelp } from './argv';
import { EXIT, runSubcommand, UsageError, type CliIo } from './io';
import { checkSshTarget, LAUNCH_OPTIONS, TARGET_OPTIONS } from './launchArgs';
import { renderReportText } from './textReport';

/** The options of `inspect`, in help order. */
export const INSPECT_OPTIONS = {
	json: flag('print the report as JSON on stdout (nothing else; no HTML unless --html)'),
	html: option(text('FILE', { empty: 'a file name' }), 'write the standalone HTML report to FILE (default without --json: gpumpi-report.html)'),
	ranks: option(integer(1, 1024), 'engine ranks launched with mpirun -np N, 1..1024 (default 1)'),
	engine: withHelp(LAUNCH_OPTIONS.engine, 'the gpumpi engine binary (default: the one built in native/build)'),
	mpirun: withHelp(LAUNCH_OPTIONS.mpirun, 'the mpirun to launch the engine with (default: mpirun on PATH)'),
	timeout: option(decimal(1, 3600), 'seconds after which a tool is killed, 1..3600 (default 60)'),
	verbose: flag('log what is being run to stderr', '-v'),
	host: withHelp(TARGET_OPTIONS.host, 'inspect the ssh host H (an alias from ~/.ssh/config or user@host) instead of this machine, with the system ssh client (key login, host key already in known_hosts); without --engine the engine is copied to and built on H (cached in ~/.cache/gpumpi-doctor/ there)'),
	setup: withHelp(TARGET_OPTIONS.setup, 'shell code run on H before every command, e.g. "module load openmpi" (executed as shell there)'),
	'ssh-config': withHelp(TARGET_OPTIONS['ssh-config'], 'ssh_config file to use instead of ~/.ssh/config'),
	'connect-timeout': option(integer(1, 300, 'S'), 'seconds ssh waits for H to answer, 1..300 (default 10). H is connected to before anything else; when it cannot be reached the report has one finding, host-unreachable, with ssh\'s reason (name not resolved, refused, host key, login refused, timeout), and nothing is checked there'),
	srun: withHelp(TARGET_OPTIONS.srun, 'launch the engine with Slurm\'s srun (its ranks run on the allocation\'s compute nodes, not on the login node)'),
	'srun-mpi': TARGET_OPTIONS['srun-mpi'],
	'srun-arg': withHelp(TARGET_OPTIONS['srun-arg'], 'srun / allocation option, repeatable, one argv item each (e.g. --srun-arg -p --srun-arg gpu); implies --srun'),
	program: option(text('PATH', { empty: 'a program or script path' }), 'also read your program (readelf, ldd; a .py / .jl script with python3 / julia as its interpreter): its link order, Cray MPICH\'s GTL, framework allocator settings in the script, mpi4py\'s thread level'),
};

const USAGE = helpText(INSPECT_OPTIONS, {
	usage: `gpumpi-doctor inspect [--json] [--html FILE] [--ranks N] [--engine PATH] [--mpirun PATH] [--timeout S] [--verbose] [--program PATH]
                      [--host SSH-HOST [--setup LINE] [--ssh-config FILE] [--connect-timeout S]] [--srun [--srun-mpi P] [--srun-arg X]…]
`,
});

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

/** Inspect this machine or the ssh host `where.host` (engine deployed and built there unless settings name one). */
export async function inspectWhere(where: InspectWhere, settings: ReturnType<typeof normalizeSettings>['settings'], io: CliIo, logger: Logger, program?: string): Promise<Report> {
	checkSshTarget(where.host, where.setup, where.sshConfig);
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

/** What `inspect` runs, from its command line. */
export interface InspectCliOptions {
	settings: ReturnType<typeof normalizeSettings>['settings'];
	where: InspectWhere;
	/** The HTML report to write (undefined: none). */
	htmlFile: string | undefined;
	json: boolean;
	verbose: boolean;
	/** --program: the program (or script) to read as well; absolute here, as given on --host. */
	program: string | undefined;
}

/**
 * `inspect` argv → its checked options (UsageError for a bad command line; an empty message: --help). Pure: what
 * `gpumpi-doctor inspect` runs only after this has accepted the whole command line.
 */
export function parseInspectArgs(argv: readonly string[], cwd: string): InspectCliOptions {
	const { values: v } = parseArgv(INSPECT_OPTIONS, argv);
	// A path with a slash is taken relative to the working directory; a bare name is looked up on PATH.
	const absolute = (p: string | undefined): string | undefined => p !== undefined && p.includes('/') ? path.resolve(cwd, p) : p;
	const { settings, problems } = normalizeSettings({ ranks: v.ranks, timeoutSeconds: v.timeout, enginePath: absolute(v.engine), mpirunPath: absolute(v.mpirun) });
	if (problems.length > 0) { throw new UsageError(problems.join('; ')); }
	const srunArgs = v['srun-arg'] ?? [];
	const where: InspectWhere = {
		host: v.host, setup: v.setup, sshConfig: v['ssh-config'] !== undefined ? path.resolve(cwd, v['ssh-config']) : undefined,
		connectTimeoutSeconds: v['connect-timeout'],
		srun: v.srun || v['srun-mpi'] !== undefined || srunArgs.length > 0 ? { srun: 'srun', mpi: v['srun-mpi'] ?? null, allocation: srunArgs } : null,
	};
	checkSshTarget(where.host, where.setup, where.sshConfig);
	if (where.host === undefined && where.connectTimeoutSeconds !== undefined) { throw new UsageError('--connect-timeout needs --host'); }
	const htmlFile = v.html !== undefined ? path.resolve(cwd, v.html) : v.json ? undefined : path.join(cwd, 'gpumpi-report.html');
	// --program: a path here (made absolute), or on --host a path there; a bare name is looked up on the host's PATH.
	const prog = v.program;
	if (prog !== undefined && (prog.trim() === '' || prog.includes('\0') || /[\r\n]/.test(prog))) { throw new UsageError('--program needs a program or script path'); }
	const program = prog === undefined ? undefined : (prog.includes('/') || /\.(py|jl)$/.test(prog)) && where.host === undefined ? path.resolve(cwd, prog) : prog;
	return { settings, where, htmlFile, json: v.json === true, verbose: v.verbose === true, program };
}

/** `gpumpi-doctor inspect …`. Never rejects. */
export function inspectMain(argv: readonly string[], io: CliIo): Promise<number> {
	return runSubcommand('inspect', USAGE, io, async () => {
		const o = parseInspectArgs(argv, io.cwd);
		const logger = o.verbose ? createLogger(streamSink(io.stderr, 'debug'), 'cli') : nullLogger;
		const report = await inspectWhere(o.where, o.settings, io, logger, o.program);
		if (io.signal.aborted) { io.stderr('gpumpi-doctor: interrupted; running tools were stopped\n'); return EXIT.interrupted; }

		io.stdout(o.json ? JSON.stringify(report, null, 2) + '\n' : renderReportText(report));
		if (o.htmlFile) {
			try {
				writeFileWhole(o.htmlFile, renderStandaloneReport(report, panelCss));
			} catch (e) {
				io.stderr(`gpumpi-doctor: cannot write the HTML report to ${o.htmlFile}: ${errorText(e)}\n`);
				return EXIT.failed;
			}
			if (!o.json) { io.stdout(`\nHTML report: ${o.htmlFile}\n`); } else { io.stderr(`HTML report: ${o.htmlFile}\n`); }
		}
		return EXIT.ok;
	});
}
