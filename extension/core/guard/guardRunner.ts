/**
 * Runs the user's own MPI program under gpumpi-guard (`gpumpi-doctor guard -- mpirun … ./app args`, the VS Code
 * command "Run My Program With Guard…") and collects the per-rank reports for guardMerge.ts. Never through a shell:
 * - the user's command starts with a launcher (mpirun, mpiexec, orterun, prterun and their .openmpi / .mpich / .hydra
 *   names, srun): the guard's variables are forwarded by options inserted right after the launcher word, Open MPI
 *   `-x NAME=value`, MPICH `-genv NAME value`, srun `--export=ALL,NAME=value,…`, so LD_PRELOAD reaches the ranks and
 *   not the launcher;
 * - otherwise, with a launch spec (`--np N`, `--srun`): launched by launchArgv/runLaunch like the other commands;
 * - otherwise the program runs alone (an MPI singleton) with the variables in its environment.
 * Reports go to a fresh GPUMPI_GUARD_DIR made on the target host (mktemp -d), read back and removed after.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import type { Host } from '../host';
import type { ExecuteResult, StreamName } from '../proc';
import { runLaunch } from '../launch/runLaunch';
import { backingChosen, createShmDir, detectShmBackingParam, ranksStayHere, removeShmDir, type ShmDir } from '../launch/shmBacking';
import { withJobName, type LaunchSpec, type MpiFlavor } from '../launch/launchSpec';
import { MAX_GUARD_REPORT_BYTES } from '../parsers/guardReport';
import type { GuardReportFile } from './guardMerge';
import { detectLaunchFailure, type LaunchFailure } from '../launch/launcherOutput';
import type { Finding } from '../../shared/report';
import { programCandidates, programLinkFindings } from '../collect/programLinks';

/** What the guard may do (docs/guard.md "How to run it"; `off` is not offered: it would observe nothing). */
export const GUARD_MODES = ['report', 'warn', 'fix'] as const;
export type GuardMode = (typeof GUARD_MODES)[number];

/** File name of the guard library beside each engine build (native/CMakeLists.txt). */
export const GUARD_LIB_NAME = 'libgpumpi_guard.so';
/** Most report files read back (one per rank). */
export const MAX_GUARD_REPORTS = 4096;

/** Which launcher a command starts with. */
export type LauncherKind = 'mpirun' | 'srun' | null;

const MPIRUN_WORD = /^(mpirun|mpiexec|orterun|prterun)(\.(openmpi|mpich|hydra))?$/;

/** The launcher the argv starts with, by the base name of its first word. */
export function launcherKind(argv: readonly string[]): LauncherKind {
	const base = path.basename(argv[0] ?? '');
	if (MPIRUN_WORD.test(base)) { return 'mpirun'; }
	if (base === 'srun') { return 'srun'; }
	return null;
}

/** Ranks a launcher command asks for (`-np N`, `-n N`, `--np N`, `-n=N`, `--ntasks[=]N`, `-nN`), or null. */
export function ranksAsked(argv: readonly string[]): number | null {
	for (let i = 1; i < argv.length; i++) {
		const a = argv[i];
		const next = ['-np', '-n', '--np', '--n', '--ntasks'].includes(a) ? argv[i + 1] : undefined;
		const m = next ?? /^(?:--ntasks|-np|--np|-n)=(\d+)$/.exec(a)?.[1] ?? /^-n(\d+)$/.exec(a)?.[1];
		if (m !== undefined && /^\d{1,7}$/.test(m) && Number(m) >= 1) { return Number(m); }
	}
	return null;
}

/**
 * The guard's environment for one run. GPUMPI_GUARD_EVERY_RANK=1 is true because the launcher forwards these to every
 * rank (global options): the guard then starts its collectives at MPI_Init without first waiting for the other
 * ranks' init files (docs/guard.md "Mixed launches").
 */
export function guardVariables(lib: string, mode: GuardMode, dir: string): Array<[string, string]> {
	return [['LD_PRELOAD', lib], ['GPUMPI_GUARD', mode], ['GPUMPI_GUARD_DIR', dir], ['GPUMPI_GUARD_EVERY_RANK', '1']];
}

/**
 * `argv` with `vars` forwarded to the ranks by the launcher's own options, inserted right after the launcher word.
 * Throws Error for what srun's --export cannot carry (a comma in a value).
 */
export function forwardVariables(argv: readonly string[], kind: Exclude<LauncherKind, null>, flavor: MpiFlavor, vars: ReadonlyArray<[string, string]>): string[] {
	let opts: string[];
	if (kind === 'srun') {
		const bad = vars.find(([, v]) => v.includes(','));
		if (bad) { throw new Error(`srun --export cannot carry ${bad[0]}=${JSON.stringify(bad[1].slice(0, 80))}: the value has a comma`); }
		opts = [`--export=ALL,${vars.map(([k, v]) => `${k}=${v}`).join(',')}`];
	} else if (flavor === 'openmpi') {
		opts = vars.flatMap(([k, v]) => ['-x', `${k}=${v}`]);
	} else {
		opts = vars.flatMap(([k, v]) => ['-genv', k, v]);
	}
	return [argv[0], ...opts, ...argv.slice(1)];
}

/** One guarded run. */
export interface GuardRunRequest {
	/** The user's command (after `--`). */
	command: string[];
	mode: GuardMode;
	host: Host;
	flavor: MpiFlavor;
	/** The guard library on `host`. */
	guardLib: string;
	/** When the command is not a launcher: launch it with this spec (np, mpirun or srun); null: run it alone. */
	spec: LaunchSpec | null;
	/** Extra environment for every rank (--preset), forwarded like the guard's own variables. */
	env: Array<[string, string]>;
	/** Parent of the fresh report directory on `host` (a shared file system for ranks on several hosts); null: /tmp. */
	reportParent: string | null;
	timeoutMs: number;
	signal?: AbortSignal;
	/** The program's output, line by line, as it comes. */
	onOutput?: (stream: StreamName, line: string) => void;
	/** Working directory of the command on `host` (VS Code: the workspace folder, so `python3 train.py` finds its script). */
	cwd?: string;
}

/** What came of it. */
export interface GuardRunOutcome {
	/** The command line as run. */
	argv: string[];
	how: 'launcher' | 'spec' | 'alone';
	result: ExecuteResult;
	/** The report files read back (name + text). */
	files: GuardReportFile[];
	/** Ranks asked for, when known (the spec's np or the launcher's -np / -n). */
	expectedRanks: number | null;
	/** Where the reports went (removed after). */
	reportDir: string;
	notes: string[];
	/** The program rules on the program that ran (collect/programLinks.ts): link order, Cray GTL, allocators, mpi4py. */
	linkFindings?: Finding[];
	/** The launcher's report that it could not start the program, read from the output (null: none). */
	launchFailure?: LaunchFailure | null;
}

/** Make the report directory on `host` (mktemp -d, never through a shell). Throws with mktemp's reason. */
async function makeReportDir(host: Host, parent: string | null, signal?: AbortSignal): Promise<string> {
	const base = parent ?? (host.ref.kind === 'local' ? os.tmpdir() : '/tmp');
	const r = await host.run(['mktemp', '-d', path.posix.join(base, 'gpumpi-guard-XXXXXXXX')], { timeoutMs: 20_000, signal });
	const dir = r.stdout.trim();
	if (r.exitCode !== 0 || !dir.startsWith('/')) { throw new Error(`cannot make a report directory in ${base}: ${r.error ?? (r.stderr.trim() || `mktemp exit ${r.exitCode}`)}`); }
	return dir;
}

/** Read back guard-*.json of `dir` (temporary .tmp files of a rank that died while writing are left out). */
export async function readReportDir(host: Host, dir: string): Promise<{ files: GuardReportFile[]; notes: string[] }> {
	const names = await host.listDir(dir);
	const notes: string[] = [];
	if (names === null) { return { files: [], notes: [`the report directory ${dir} could not be listed`] }; }
	const reports = names.filter(n => /^guard-.*\.json$/.test(n)).sort();
	const partial = names.filter(n => /^guard-.*\.json\.tmp$/.test(n));
	if (partial.length > 0) { notes.push(`${partial.length} report${partial.length > 1 ? 's' : ''} left half-written (${partial.slice(0, 3).join(', ')}): the rank ended while writing`); }
	if (reports.length > MAX_GUARD_REPORTS) { notes.push(`${reports.length} report files; the first ${MAX_GUARD_REPORTS} are read`); }
	const files: GuardReportFile[] = [];
	for (const name of reports.slice(0, MAX_GUARD_REPORTS)) {
		const f = await host.readFile(path.posix.join(dir, name), MAX_GUARD_REPORT_BYTES);
		files.push({ name, text: f.ok ? (f.truncated ? `${f.text}\u0000truncated` : f.text) : '' });
		if (!f.ok) { notes.push(`${name}: ${f.error}`); }
	}
	return { files, notes };
}

/** Run the user's program under the guard and read the reports back. Throws only for what cannot be launched at all. */
export async function runGuarded(req: GuardRunRequest): Promise<GuardRunOutcome> {
	if (req.command.length === 0) { throw new Error('no program to run'); }
	const dir = await makeReportDir(req.host, req.reportParent, req.signal);
	const notes: string[] = [];
	try {
		const vars: Array<[string, string]> = [...req.env, ...guardVariables(req.guardLib, req.mode, dir)];
		const kind = launcherKind(req.command);
		const runOpts = { ...(req.cwd !== undefined ? { cwd: req.cwd } : {}), timeoutMs: req.timeoutMs, signal: req.signal, onLine: req.onOutput, maxOutputBytes: 1024 * 1024, privateDirs: [dir] };
		let argv: string[];
		let result: ExecuteResult;
		let how: GuardRunOutcome['how'];
		let expectedRanks: number | null;
		if (kind) {
			how = 'launcher';
			// The user's own Open MPI mpirun gets the private shared-memory directory too (launch/shmBacking.ts), through
			// the ranks' environment: a program that aborts or is interrupted leaves its segments in /dev/shm otherwise.
			let shm: ShmDir | null = null;
			if (kind === 'mpirun' && req.flavor === 'openmpi' && ranksStayHere(req.command.slice(1)) && !req.command.some(a => /_backing_directory$/.test(a))
				&& !backingChosen([], req.env) && !req.signal?.aborted) {
				const param = await detectShmBackingParam(req.host, req.command[0]);
				shm = param ? await createShmDir(req.host, param) : null;
			}
			argv = forwardVariables(req.command, kind, req.flavor, shm ? [...vars, [`OMPI_MCA_${shm.mca[0]}`, shm.mca[1]]] : vars);
			expectedRanks = ranksAsked(req.command);
			let shmNote: string | null = null;
			try {
				result = await req.host.run(argv, { ...runOpts, privateDirs: [dir, ...(shm ? [shm.dir] : [])] });
			} finally {
				if (shm) { shmNote = await removeShmDir(req.host, shm); }
			}
			if (result.cleanup) { notes.push(result.cleanup); }
			if (shmNote) { notes.push(shmNote); }
		} else if (req.spec) {
			how = 'spec';
			let spec = withJobName(req.spec);
			if (spec.srun) {
				// srun: the guard's variables through --export (so srun itself is not preloaded); presets as the environment.
				const exp = forwardVariables(['srun'], 'srun', req.flavor, guardVariables(req.guardLib, req.mode, dir))[1];
				spec = { ...spec, env: [...spec.env, ...req.env], srun: { ...spec.srun, allocation: [exp, ...spec.srun.allocation] } };
			} else {
				spec = { ...spec, env: [...spec.env, ...vars] };
			}
			expectedRanks = spec.np;
			const o = await runLaunch(spec, req.command, { host: req.host, ...runOpts });
			argv = o.argv;
			result = o.result;
			notes.push(...o.notes);
		} else {
			how = 'alone';
			argv = [...req.command];
			expectedRanks = 1;
			result = await req.host.run(argv, { ...runOpts, env: Object.fromEntries(vars) });
			if (result.cleanup) { notes.push(result.cleanup); }
		}
		const read = await readReportDir(req.host, dir);
		notes.push(...read.notes);
		let launchFailure = detectLaunchFailure(result.stdout, result.stderr);
		if (launchFailure === null && read.files.length === 0 && result.exitCode !== 0 && !result.timedOut && !req.signal?.aborted
			&& await ranksOnlyHere(req.host, kind, how === 'spec' ? req.spec ?? null : null, req.command)) {
			launchFailure = await programMissing(req.host, req.command, kind !== null);
		}
		return { argv, how, result, files: read.files, expectedRanks, reportDir: dir, notes, linkFindings: await programLinkFindings(req.host, { ...req, launcher: kind !== null, run: { reports: read.files.map(f => f.text), output: `${result.stdout}\n${result.stderr}` } }), launchFailure };
	} finally {
		const rm = await req.host.run(['rm', '-rf', '--', dir], { timeoutMs: 30_000 });
		if (rm.exitCode !== 0) { notes.push(`could not remove ${dir}: ${rm.error ?? rm.stderr.trim()}`); }
	}
}

/**
 * Whether every rank of this launch starts on `host`, so that a program missing there is missing for every rank. Not
 * for srun, nor for an mpirun given other hosts (--host, a hostfile, -hosts, …), nor inside a batch allocation of more
 * than one node (Slurm, PBS, LSF variables on that host): there the program may exist only on the compute nodes, and
 * `test -e` on the launching host would prove nothing.
 */
async function ranksOnlyHere(host: Host, kind: LauncherKind, spec: LaunchSpec | null, command: readonly string[]): Promise<boolean> {
	// No launcher at all: the program runs here, as one process.
	if (!spec && kind === null) { return true; }
	const launchStaysHere = spec ? !spec.srun && ranksStayHere(spec.extraArgs) : kind === 'mpirun' && ranksStayHere(command.slice(1));
	if (!launchStaysHere) { return false; }
	const env = await host.run(['printenv', ...ALLOCATION_VARS], { timeoutMs: 20_000 });
	if (env.exitCode !== 0 && env.exitCode !== 1) { return false; } // could not look: claim nothing
	const vals = env.stdout.split('\n').map(l => l.trim()).filter(Boolean);
	// printenv prints the values of the set ones, in the order asked; Slurm's node counts are numbers, the others are not.
	return vals.every(v => v === '1');
}

/** Batch-allocation variables that say ranks may start on other nodes: Slurm's node counts, PBS's node file, LSF's hosts. */
const ALLOCATION_VARS = ['SLURM_JOB_NUM_NODES', 'SLURM_NNODES', 'PBS_NODEFILE', 'LSB_HOSTS', 'LSB_MCPU_HOSTS'];

/**
 * When no rank reported and the launcher said nothing of why (Hydra exited 141 with no output at all in 1 of 6 launches
 * of a missing program: test-fixtures/repro/launch): look. Every word of the command that may be the program
 * (collect/programLinks.ts programCandidates) is checked with `test -e` on the host, resolved as the launcher would
 * (PATH for a bare name, then the launch directory). Only when none of them exists is it a launch failure; then the
 * evidence is that check, never a guess.
 */
async function programMissing(host: Host, command: readonly string[], launcher: boolean): Promise<LaunchFailure | null> {
	const { candidates, wdir } = programCandidates(command, launcher);
	if (candidates.length === 0) { return null; }
	const evidence: string[] = [];
	let first: string | null = null;
	for (const c of candidates) {
		const rel = wdir && !c.startsWith('/') ? path.posix.join(wdir, c) : c;
		const p = c.includes('/') ? rel : (await host.which(c)) ?? rel;
		first ??= p;
		const t = await host.run(['test', '-e', p], { timeoutMs: 20_000 });
		if (t.exitCode !== 1) { return null; } // it exists, or the check itself failed: nothing is claimed
		evidence.push(`test -e ${p} on ${host.ref.label}: exit 1 (no such file)`);
	}
	return {
		executable: first, node: null, processes: null, evidence,
		reason: `no such file on ${host.ref.label}, where the launcher ran (checked after the run, the launcher having printed nothing about it)`,
	};
}

/**
 * A typed argument line ("-n 5 --name 'a b'") → argv items, as a POSIX shell splits words, with no expansion of any
 * kind ($, *, ~, ` stay literal): whitespace separates, '…' and "…" quote, \ escapes the next character (outside
 * single quotes). Returns the problem for an unclosed quote or a NUL character.
 */
export function splitArgLine(line: string): string[] | string {
	if (line.includes('\u0000')) { return 'the arguments have a NUL character'; }
	const out: string[] = [];
	let cur = '';
	let inWord = false;
	let quote: '"' | "'" | null = null;
	for (let i = 0; i < line.length; i++) {
		const c = line[i];
		if (quote === "'") { if (c === "'") { quote = null; } else { cur += c; } continue; }
		if (c === '\\' && i + 1 < line.length && (quote === null || /["\\$`]/.test(line[i + 1]))) { cur += line[++i]; inWord = true; continue; }
		if (quote === '"') { if (c === '"') { quote = null; } else { cur += c; } continue; }
		if (c === "'" || c === '"') { quote = c; inWord = true; continue; }
		if (/\s/.test(c)) { if (inWord) { out.push(cur); cur = ''; inWord = false; } continue; }
		cur += c;
		inWord = true;
	}
	if (quote) { return `unclosed ${quote} quote`; }
	if (inWord) { out.push(cur); }
	return out;
}
