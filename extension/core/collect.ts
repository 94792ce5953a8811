/**
 * The collector: runs the tools of one host (at most 4 at once), reads the MCA parameter files, records the
 * environment, then launches the engine under mpirun. Everything comes back as RawOutput (verbatim, with ids that
 * analyze.ts parses); a missing or hung tool is a RawOutput with an error, never an exception. A host that has to be
 * reached first (ssh) is connected to before anything else; when that fails, the failed attempt is the only
 * RawOutput (unreachable.ts): nothing is run or read there, so nothing can be reported missing.
 */
import { performance } from 'node:perf_hooks';
import { collectSystemFacts } from './sysCollect';
import { collectLibfabric } from './collect/libfabric';
import * as path from 'node:path';
import type { EngineLocator, ProbeOutcome } from './native';
import type { RawOutput } from '../shared/report';
import type { Host } from './host';
import { nullLogger, errorText, type Logger } from './logger';
import { formatSeconds, type ExecuteResult } from './proc';
import { defaultSpec, type LaunchSpec, type SrunSpec } from './launch/launchSpec';
import { runLaunch } from './launch/runLaunch';
import { createShmDir, detectShmBackingParam, removePrivateShmDir, removeShmDir, ucxInfoShmDir } from './launch/shmBacking';
import { connectOutput } from './unreachable';
import { runMpi4pyProbe } from './collect/mpi4pyProbe';
import { collectProgramFiles } from './collect/programLinks';
import { interpreterKind } from './parsers/programFacts';

/** Which MPI a `mpirun` belongs to. */
export type MpiFlavor = 'openmpi' | 'mpich' | 'unknown';

/** Options for `collect`. */
export interface CollectOptions {
	/** Engine ranks (mpirun -np). */
	ranks: number;
	/** Explicit engine binary (a setting or --engine); wins over `locateEngine`. */
	enginePath?: string | null;
	locateEngine?: EngineLocator;
	/** The mpirun to use; default `mpirun` from the host's PATH. */
	mpirunPath?: string;
	/** Launch the engine with Slurm's srun (on the allocation's compute nodes) instead of mpirun. */
	srun?: Omit<SrunSpec, 'jobName'> | null;
	/** Per-tool timeout; the whole process group is killed after it. */
	timeoutMs: number;
	signal?: AbortSignal;
	onProgress?(message: string): void;
	/** Runs the native addon's probe (in this process); absent: the probe RawOutput says so. */
	probe?: () => Promise<ProbeOutcome>;
	logger?: Logger;
	/** Tools run at once; default 4. */
	concurrency?: number;
	/**
	 * The user's program to read as well (`inspect --program`): an ELF program (readelf, ldd), or a Python / Julia
	 * script (read with python3 / julia from PATH as its interpreter), for the program rules (collect/programLinks.ts).
	 */
	program?: string | null;
}

/** Programs whose location the `which` RawOutput records. */
export const WHICH_NAMES = ['mpicc', 'mpirun', 'mpiexec', 'ompi_info', 'ucx_info', 'nvidia-smi'] as const;

/** Environment names kept in the `env` RawOutput. */
const ENV_PREFIXES = ['OMPI_', 'PMIX_MCA_', 'UCX_', 'CUDA_', 'MPICH_', 'MPIR_CVAR_', 'I_MPI_', 'MV2_', 'FI_', 'SLURM_', 'PYTORCH_', 'JULIA_CUDA_', 'MPI4PY_', 'CRAY_MPICH'];
const ENV_EXACT = new Set(['PATH', 'LD_LIBRARY_PATH', 'LD_PRELOAD']);

interface ToolSpec { id: string; argv: string[] }

/** Collect everything about `host`. Never rejects for tool failures. */
export async function collect(host: Host, opts: CollectOptions): Promise<RawOutput[]> {
	const log = opts.logger ?? nullLogger;
	const progress = (m: string): void => { log.debug(m); try { opts.onProgress?.(m); } catch { /* ignore */ } };
	const mpirun = opts.mpirunPath && opts.mpirunPath.length > 0 ? opts.mpirunPath : 'mpirun';
	const tools: ToolSpec[] = [
		{ id: 'ompi_info', argv: ['ompi_info', '--parsable', '--all'] },
		{ id: 'mpirun_version', argv: [mpirun, '--version'] },
		{ id: 'mpichversion', argv: ['mpichversion'] },
		{ id: 'ucx_info_v', argv: ['ucx_info', '-v'] },
		{ id: 'ucx_info_b', argv: ['ucx_info', '-b'] },
		{ id: 'ucx_info_d', argv: ['ucx_info', '-d'] },
		{ id: 'ucx_info_c', argv: ['ucx_info', '-c'] },
		{ id: 'nvidia_smi_topo', argv: ['nvidia-smi', 'topo', '-m'] },
		{ id: 'nvidia_smi_xml', argv: ['nvidia-smi', '-q', '-x'] },
	];

	if (host.connect) {
		progress(`Connecting to ${host.ref.label}`);
		const c = await host.connect();
		if (!c.ok) {
			log.info(`cannot reach ${host.ref.label} (${c.kind}): ${c.error}; nothing else is run there`);
			return [connectOutput(c)];
		}
	}
	const env = await host.env();
	const identity = await host.identity();
	const byId = new Map<string, RawOutput>();

	// The engine launch is the long pole (an mpirun start-up): it needs only the launcher's flavor, so find that
	// first and run the engine alongside the other tools instead of after them.
	const versionSpec = tools.find(t => t.id === 'mpirun_version') as ToolSpec;
	byId.set(versionSpec.id, await runTool(host, versionSpec, opts));
	const flavor = detectFlavor(byId.get('mpirun_version'));
	log.info(`mpirun ${mpirun} flavor: ${flavor}`);
	progress(`Launching the engine under ${mpirun} with ${opts.ranks} rank(s)`);
	const engine = runEngine(host, opts, mpirun, flavor, identity.uid);

	const tasks: (() => Promise<void>)[] = tools.filter(t => t !== versionSpec).map(t => async () => {
		progress(`Running ${t.argv.join(' ')}`);
		byId.set(t.id, t.id === 'ucx_info_d' ? await runUcxInfoDevices(host, t, opts, env) : await runTool(host, t, opts));
	});
	tasks.push(async () => {
		progress('Probing libraries with the native addon');
		byId.set('probe', await runProbe(opts));
	});
	let libfabric: RawOutput[] = [];
	tasks.push(async () => {
		progress('Running fi_info (libfabric providers and GPU memory support)');
		libfabric = await collectLibfabric(host, { timeoutMs: opts.timeoutMs, signal: opts.signal });
	});
	const extra: RawOutput[] = [];
	tasks.push(async () => {
		progress('Asking python3 for mpi4py');
		extra.push(...await runMpi4pyProbe(host, 'python3', { timeoutMs: opts.timeoutMs, signal: opts.signal }));
	});
	if (opts.program) {
		const program = opts.program;
		tasks.push(async () => {
			progress(`Reading ${program}`);
			extra.push(...await programOutputs(host, program, opts));
		});
	}
	await runBounded(tasks, Math.max(1, opts.concurrency ?? 4));

	const out: RawOutput[] = tools.map(t => byId.get(t.id)).filter((r): r is RawOutput => r !== undefined);
	out.push(...libfabric);
	out.push(byId.get('probe') ?? internal('probe', ['addon.probe()'], '', 'probe did not run'));
	out.push(...extra);
	out.push(internal('env', ['env'], filterEnv(env)));
	out.push(await whichOutput(host));
	out.push(internal('identity', ['identity'], `uid=${identity.uid}\nuser=${identity.user}\nhostname=${identity.hostname}\n`));

	for (const file of await mcaParamFiles(host, byId.get('ompi_info'), mpirun, flavor, env)) {
		out.push(await readFileOutput(host, file.path));
	}
	out.push(...await collectSystemFacts(
		async p => { const r = await host.readFile(p, 1 << 20); return r.ok ? r.text : null; },
		p => host.listDir(p)));
	out.push(await engine);
	return out;
}

/**
 * `inspect --program P`: readelf / ldd of an ELF program; a script (.py, .jl, or a file readelf refuses that names its
 * interpreter by extension) is read with python3 / julia from PATH as the program. The environment is the host's own.
 */
async function programOutputs(host: Host, program: string, opts: CollectOptions): Promise<RawOutput[]> {
	const which = async (name: string): Promise<string> => (name.includes('/') ? name : (await host.which(name)) ?? name);
	const direct = await collectProgramFiles(host, { word: program, path: await which(program), args: [] }, { env: {}, signal: opts.signal, timeoutMs: opts.timeoutMs });
	if (direct && direct.raw.length > 0) { return direct.raw; }
	const interp = /\.py$/.test(program) ? 'python3' : /\.jl$/.test(program) ? 'julia' : null;
	if (direct === null && interp) {
		const path = await which(interp);
		if (interpreterKind(path)) {
			const viaInterp = await collectProgramFiles(host, { word: interp, path, args: [program] }, { env: {}, signal: opts.signal, timeoutMs: opts.timeoutMs });
			if (viaInterp && viaInterp.raw.length > 0) { return viaInterp.raw; }
		}
	}
	const why = direct?.notes[0] ?? `${program}: not a program readelf can read${interp ? ` (and ${interp} was not found to run it)` : ''}`;
	return [internal('program', ['internal', 'program', program], '', why)];
}

/** Open MPI vs MPICH (Hydra) from `mpirun --version` output. */
export function detectFlavor(version: RawOutput | undefined): MpiFlavor {
	if (!version || version.exitCode === null) { return 'unknown'; }
	const text = `${version.stdout}\n${version.stderr}`;
	if (/Open MPI|OpenRTE|open-mpi\.org/i.test(text)) { return 'openmpi'; }
	if (/HYDRA|MPICH/.test(text)) { return 'mpich'; }
	return 'unknown';
}

/** NAME=value lines of the variables the rules care about, sorted; a newline inside a value is written as \n. */
export function filterEnv(env: Record<string, string>): string {
	return Object.keys(env)
		.filter(k => ENV_EXACT.has(k) || ENV_PREFIXES.some(p => k.startsWith(p)))
		.sort()
		.map(k => `${k}=${env[k].replace(/\r?\n/g, '\\n')}\n`)
		.join('');
}

/** Value of a `--parsable` ompi_info key such as "path:sysconfdir", or undefined. */
export function ompiInfoValue(stdout: string, key: string): string | undefined {
	const prefix = `${key}:`;
	for (const line of stdout.split('\n')) {
		if (line.startsWith(prefix)) { return line.slice(prefix.length).trim(); }
	}
	return undefined;
}

async function runTool(host: Host, t: ToolSpec, opts: CollectOptions, runEnv?: Record<string, string>, privateDirs?: string[]): Promise<RawOutput> {
	const resolved = t.argv[0].includes('/') ? t.argv[0] : await host.which(t.argv[0]);
	const command = [resolved ?? t.argv[0], ...t.argv.slice(1)];
	const r = await host.run(command, { timeoutMs: opts.timeoutMs, signal: opts.signal, ...(runEnv ? { env: runEnv } : {}), ...(privateDirs ? { privateDirs } : {}) });
	return toRaw(t.id, command, r);
}

/** `ucx_info -d` with its posix segments in a private directory, removed after (shmBacking.ts ucxInfoShmDir). */
async function runUcxInfoDevices(host: Host, t: ToolSpec, opts: CollectOptions, env: Record<string, string>): Promise<RawOutput> {
	const dir = opts.signal?.aborted ? null : await ucxInfoShmDir(host, env);
	if (!dir) { return runTool(host, t, opts); }
	let raw: RawOutput;
	let note: string | null = null;
	try {
		raw = await runTool(host, t, opts, { UCX_POSIX_DIR: dir }, [dir]);
	} finally {
		note = await removePrivateShmDir(host, dir, 'UCX shared-memory segment(s) ucx_info left');
	}
	return note ? { ...raw, notes: [...(raw.notes ?? []), note] } : raw;
}

function toRaw(id: string, command: string[], r: ExecuteResult, notes?: string[]): RawOutput {
	let error = r.error;
	if (error === 'not found') { error = `not found: ${command[0]}`; }
	return {
		id,
		command,
		exitCode: r.exitCode,
		stdout: r.stdout,
		stderr: r.stderr,
		durationMs: r.durationMs,
		...(error !== undefined ? { error } : {}),
		...(r.timedOut ? { timedOut: true } : {}),
		...(notes && notes.length > 0 ? { notes } : {}),
	};
}

function internal(id: string, what: string[], stdout: string, error?: string, stderr = ''): RawOutput {
	return {
		id,
		command: ['internal', ...what],
		exitCode: error === undefined ? 0 : null,
		stdout,
		stderr,
		durationMs: 0,
		...(error !== undefined ? { error } : {}),
	};
}

async function runProbe(opts: CollectOptions): Promise<RawOutput> {
	const started = performance.now();
	if (!opts.probe) { return internal('probe', ['addon.probe()'], '', 'native addon probe not available'); }
	let timer: NodeJS.Timeout | undefined;
	try {
		const timeout = new Promise<ProbeOutcome>(resolve => {
			timer = setTimeout(() => resolve({ error: `timed out after ${formatSeconds(opts.timeoutMs)}`, tried: [] }), opts.timeoutMs);
		});
		const outcome = await Promise.race([opts.probe(), timeout]);
		const raw = 'result' in outcome
			? internal('probe', ['addon.probe()'], JSON.stringify(outcome.result), undefined, outcome.note ?? '')
			: internal('probe', ['addon.probe()'], '', outcome.error, outcome.tried.join('\n'));
		return { ...raw, durationMs: Math.round(performance.now() - started) };
	} catch (e) {
		return { ...internal('probe', ['addon.probe()'], '', `probe failed: ${errorText(e)}`), durationMs: Math.round(performance.now() - started) };
	} finally {
		if (timer) { clearTimeout(timer); }
	}
}

async function whichOutput(host: Host): Promise<RawOutput> {
	const lines: string[] = [];
	for (const name of WHICH_NAMES) { lines.push(`${name}=${(await host.which(name)) ?? ''}`); }
	return internal('which', ['which', ...WHICH_NAMES], lines.join('\n') + '\n');
}

async function readFileOutput(host: Host, file: string): Promise<RawOutput> {
	const started = performance.now();
	const r = await host.readFile(file);
	const base = { id: `mca_params:${file}`, command: ['read', file], stderr: '', durationMs: Math.round(performance.now() - started) };
	if (r.ok) {
		return { ...base, exitCode: 0, stdout: r.text, ...(r.truncated ? { notes: ['file was larger than the read cap; truncated'] } : {}) };
	}
	// Open MPI's programs read the same file when they start: in place of a file, a FIFO makes them wait for a writer
	// (ompi_info and mpirun then time out), a directory makes them fail ("input in flex scanner failed").
	const why = r.error.startsWith('not a regular file')
		? `${r.error}; Open MPI reads this file when ompi_info, mpirun or a rank starts, so those may hang or fail too: replace it with a regular file or remove it`
		: r.error;
	return { ...base, exitCode: null, stdout: '', error: why };
}

/**
 * The MCA parameter files Open MPI reads on this host: `<sysconfdir>/openmpi-mca-params.conf` (sysconfdir from
 * ompi_info, else `<prefix>/etc` with prefix from ompi_info or mpirun's location) always (a missing one is
 * recorded as such), plus /etc/openmpi/openmpi-mca-params.conf and ~/.openmpi/mca-params.conf when they exist.
 */
async function mcaParamFiles(host: Host, ompiInfo: RawOutput | undefined, mpirun: string, flavor: MpiFlavor,
	env: Record<string, string>): Promise<{ path: string; always: boolean }[]> {
	const files: { path: string; always: boolean }[] = [];
	const add = async (p: string, always: boolean): Promise<void> => {
		if (files.some(f => f.path === p)) { return; }
		if (!always) {
			const r = await host.readFile(p, 1);
			if (!r.ok && r.notFound) { return; }
		}
		files.push({ path: p, always });
	};
	const info = ompiInfo && ompiInfo.exitCode === 0 ? ompiInfo.stdout : '';
	let sysconf = info ? ompiInfoValue(info, 'path:sysconfdir') : undefined;
	let prefix = info ? ompiInfoValue(info, 'path:prefix') : undefined;
	if (!prefix && flavor === 'openmpi') {
		const mpirunAbs = mpirun.includes('/') ? mpirun : await host.which(mpirun);
		if (mpirunAbs) { prefix = path.posix.dirname(path.posix.dirname(await host.realpath(mpirunAbs))); }
	}
	if (!sysconf && prefix) { sysconf = path.posix.join(prefix, 'etc'); }
	if (sysconf && path.posix.isAbsolute(sysconf)) { await add(path.posix.join(sysconf, 'openmpi-mca-params.conf'), true); }
	await add('/etc/openmpi/openmpi-mca-params.conf', false);
	if (env.HOME && path.posix.isAbsolute(env.HOME)) { await add(path.posix.join(env.HOME, '.openmpi', 'mca-params.conf'), false); }
	return files;
}

async function runEngine(host: Host, opts: CollectOptions, mpirun: string, flavor: MpiFlavor, uid: number): Promise<RawOutput> {
	let enginePath: string | null = opts.enginePath && opts.enginePath.length > 0 ? opts.enginePath : null;
	let tried: string[] = enginePath ? [enginePath] : [];
	if (!enginePath && opts.locateEngine) {
		const want = flavor === 'unknown' ? 'default' : flavor;
		const found = safeLocate(opts.locateEngine, want);
		tried = found.tried;
		enginePath = found.path;
		if (!enginePath && want !== 'default') {
			const fallback = safeLocate(opts.locateEngine, 'default');
			tried = [...tried, ...fallback.tried.filter(t => !tried.includes(t))];
			enginePath = fallback.path;
		}
	}
	const ranks = Math.max(1, Math.floor(opts.ranks));
	let missing: string | null = null;
	if (!enginePath) {
		missing = `engine not built: tried ${tried.length ? tried.join(', ') : '(no locations)'}`;
	} else {
		const probe = await host.readFile(enginePath, 1);
		if (!probe.ok && probe.notFound) { missing = `engine not found: ${enginePath}`; }
	}
	if (opts.srun) { return runEngineWithSrun(host, opts, opts.srun, flavor, ranks, enginePath, missing); }
	const mpirunAbs = mpirun.includes('/') ? ((await host.readFile(mpirun, 1)).ok ? mpirun : null) : await host.which(mpirun);
	const notes: string[] = [];
	const argv: string[] = [mpirunAbs ?? mpirun];
	if (flavor === 'openmpi') {
		if (uid === 0) {
			argv.push('--allow-run-as-root');
			notes.push('--allow-run-as-root added: running as root (uid 0) and Open MPI\'s mpirun refuses root without it');
		}
		const cpus = await host.cpuCount();
		if (ranks > cpus) {
			argv.push('--oversubscribe');
			notes.push(`--oversubscribe added: ${ranks} ranks on ${cpus} processors`);
		}
	}
	argv.push('-np', String(ranks), enginePath ?? '<gpumpi engine>', 'inspect', '--framed');
	const fail = (error: string): RawOutput => ({
		id: 'engine', command: argv, exitCode: null, stdout: '', stderr: '', durationMs: 0, error, ...(notes.length ? { notes } : {}),
	});
	if (missing) { return fail(missing); }
	if (!mpirunAbs) { return fail(`${mpirun} not found${mpirun.includes('/') ? '' : ' on PATH'}`); }
	if (flavor === 'unknown') { notes.push(`could not tell Open MPI from MPICH by "${mpirun} --version"; no extra mpirun options added`); }
	// Open MPI's shared-memory segments into a directory of this run, removed after it (launch/shmBacking.ts).
	const param = flavor === 'openmpi' && !opts.signal?.aborted ? await detectShmBackingParam(host, mpirunAbs) : null;
	const shm = param ? await createShmDir(host, param) : null;
	if (shm) { argv.splice(argv.indexOf('-np'), 0, '--mca', ...shm.mca); }
	let r: ExecuteResult;
	try {
		r = await host.run(argv, { timeoutMs: opts.timeoutMs, signal: opts.signal, maxOutputBytes: 32 * 1024 * 1024 });
	} finally {
		const note = shm ? await removeShmDir(host, shm) : null;
		if (note) { notes.push(note); }
	}
	return toRaw('engine', argv, r, notes);
}

/** The engine under srun: env + srun argv from launch/launchArgv.ts, scancel on timeout/cancel (runLaunch). */
async function runEngineWithSrun(host: Host, opts: CollectOptions, srun: Omit<SrunSpec, 'jobName'>, flavor: MpiFlavor, ranks: number,
	enginePath: string | null, missing: string | null): Promise<RawOutput> {
	const spec: LaunchSpec = { ...defaultSpec(flavor === 'mpich' ? 'mpich' : 'openmpi', 'mpirun', ranks), srun: { ...srun, jobName: '' } };
	const notes = [`launched with srun (the host's launcher setting)${flavor === 'unknown' ? '; MPI flavour unknown' : ''}`];
	const fail = (error: string): RawOutput => ({
		id: 'engine', command: [srun.srun, '-n', String(ranks), enginePath ?? '<gpumpi engine>', 'inspect', '--framed'], exitCode: null, stdout: '', stderr: '', durationMs: 0, error, notes,
	});
	if (missing || !enginePath) { return fail(missing ?? 'engine not built'); }
	let out;
	try {
		out = await runLaunch(spec, [enginePath, 'inspect', '--framed'], { host, timeoutMs: opts.timeoutMs, signal: opts.signal });
	} catch (e) {
		return fail(errorText(e));
	}
	return toRaw('engine', out.argv, out.result, [...notes, ...out.notes]);
}

function safeLocate(locate: EngineLocator, flavor: 'default' | 'openmpi' | 'mpich'): { path: string | null; tried: string[] } {
	try { return locate(flavor); } catch (e) { return { path: null, tried: [`(engine lookup failed: ${errorText(e)})`] }; }
}

/** Run async tasks with at most `limit` in flight. */
export async function runBounded(tasks: readonly (() => Promise<void>)[], limit: number): Promise<void> {
	let next = 0;
	const worker = async (): Promise<void> => {
		while (next < tasks.length) {
			const task = tasks[next++];
			try { await task(); } catch { /* each task records its own failure */ }
		}
	};
	await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
}
