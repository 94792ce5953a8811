/**
 * What the product can read about the user's own program where it has it (`gpumpi-doctor guard -- mpirun … ./app`,
 * the VS Code guard command, `gpumpi-doctor inspect --program PATH`), for the rules that judge a program rather than a
 * host: mpich-gpu-ipc-cache-hooks (rules/mpichIpcCacheRules.ts), cray-mpich-gtl-not-linked (rules/gtlRules.ts),
 * framework-allocator-pool-vmm (rules/allocatorRules.ts), mpi4py-thread-multiple-ucx-no-mt (rules/mpi4pyRules.ts).
 * Which word of the command is the program (after the launcher's options, as the launcher finds it: a bare name on
 * PATH, a relative path from the launch directory or its -wdir), then on the host that launches, never through a shell:
 * - `readelf -d PROGRAM` (its DT_NEEDED entries in order) and `readelf -sW PROGRAM` (kept: the lines naming cudaFree,
 *   whether cudart is linked in statically), raw outputs `readelf_d:<program>` / `readelf_s:<program>`;
 * - `ldd PROGRAM` (raw `ldd:<path>`): every library the loader resolves, those its libraries need included (a site
 *   may add libmpi_gtl_cuda to libmpi's own DT_NEEDED: eth-cscs/stackinator#174);
 * - `program` (internal): the program and its kind; for a Python or Julia interpreter the script it runs, whose lines
 *   setting allocator or mpi4py options are kept (raw `script:<path>`), and for Python the mpi4py probe with that
 *   interpreter (collect/mpi4pyProbe.ts);
 * - Open MPI: `ucx_info -b` (whether UCX was built with thread support); MPICH: `mpivars` (beside the launcher when it
 *   is there, else on PATH), run with the environment the ranks get (the presets and what the command forwards with
 *   -genv / -env / -x), so the cache CVARs are listed as MPICH read them, and `mpichversion`;
 * - the variables the rules read as the ranks get them, as an `env` output;
 * - after a guarded run: each rank's pml and the buffer classes it passed to MPI (raw `guard_ranks`, from the guard's
 *   reports) and the program's output (raw `program_output`, scanned for known messages).
 * Why readelf and not an ELF reader here: the program may be on an ssh host, where the Host API reads text files
 * only; and the evidence lines are readelf's own, as in the rules' fixtures. Without readelf the link rules stay
 * silent and a note says why. ucx-memtype-cache-static-cudart runs on the same facts (UCX's hook settings as the
 * ranks get them).
 */
import * as path from 'node:path';
import type { Finding, RawOutput } from '../../shared/report';
import type { Host } from '../host';
import type { MpiFlavor } from '../launch/launchSpec';
import type { ExecuteResult } from '../proc';
import { buildFacts } from '../parsers/buildFacts';
import { interpreterKind, scriptLines } from '../parsers/programFacts';
import { BUFFER_CLASSES, parseGuardReport } from '../parsers/guardReport';
import { PROGRAM_RULES } from '../rules/index';
import { runRules } from '../rules/rule';
import { runMpi4pyProbe } from './mpi4pyProbe';

/** Launcher options (Open MPI mpirun, MPICH hydra, srun) followed by one value. */
const ONE_VALUE = new Set([
	'-np', '-n', '--np', '--n', '-c', '-N', '--npernode', '-npernode', '--ppn', '-ppn', '-H', '-host', '--host', '-hosts', '--hosts',
	'-hostfile', '--hostfile', '-machinefile', '--machinefile', '-f', '-x', '--map-by', '-map-by', '--bind-to', '-bind-to', '--rank-by',
	'--rankfile', '-rf', '--wdir', '-wdir', '-wd', '--prefix', '-launcher', '-bootstrap', '-iface', '--display', '--output', '--tune',
	'--timeout', '-genvlist', '-envlist', '-p', '--partition', '-t', '--time', '-A', '--account', '--nodes', '--ntasks', '--cpus-per-task',
	'--gpus', '--gpus-per-task', '--mem', '-o', '-e', '--mpi', '-J', '--job-name', '--chdir', '-D', '-w', '--nodelist', '--cpu-bind',
]);
/** …followed by two values. */
const TWO_VALUES = new Set(['--mca', '-mca', '--gmca', '-gmca', '--prtemca', '--pmixmca', '-genv', '-env']);
/** Most words tried as the program. */
const MAX_CANDIDATES = 4;

/** The words that may be the program, in order, and the launch directory the command asks for (-wdir), if any. */
export function programCandidates(command: readonly string[], launcher: boolean): { candidates: string[]; wdir: string | null } {
	if (!launcher) { return { candidates: command.length > 0 ? [command[0]] : [], wdir: null }; }
	const candidates: string[] = [];
	let wdir: string | null = null;
	for (let i = 1; i < command.length && candidates.length < MAX_CANDIDATES; i++) {
		const a = command[i];
		if (a === ':') { break; } // MPMD: the first program only
		if (a.startsWith('-')) {
			if (['--wdir', '-wdir', '-wd', '--chdir', '-D'].includes(a)) { wdir = command[i + 1] ?? null; }
			const eq = /^(--wdir|--chdir)=(.+)$/.exec(a);
			if (eq) { wdir = eq[2]; }
			if (a.includes('=')) { continue; }
			i += TWO_VALUES.has(a) ? 2 : ONE_VALUE.has(a) ? 1 : 0;
			continue;
		}
		// An unknown option's value is tried too: readelf refuses what is not an ELF file, and the next word is tried.
		candidates.push(a);
	}
	return { candidates, wdir };
}

/**
 * Variables the command forwards to the ranks: Open MPI `-x NAME=V` (or `-x NAME`: the launcher's own), hydra
 * `-genv`/`-env NAME V`; and Open MPI's `--mca NAME V` (`-mca`), which the ranks read as they read OMPI_MCA_NAME.
 */
export function forwardedEnv(command: readonly string[], own: Record<string, string>): Array<[string, string]> {
	const out: Array<[string, string]> = [];
	for (let i = 1; i < command.length; i++) {
		const a = command[i];
		if ((a === '-genv' || a === '-env') && i + 2 < command.length) { out.push([command[i + 1], command[i + 2]]); i += 2; continue; }
		if ((a === '--mca' || a === '-mca') && i + 2 < command.length && /^[a-z][a-z0-9_]*$/.test(command[i + 1])) { out.push([`OMPI_MCA_${command[i + 1]}`, command[i + 2]]); i += 2; continue; }
		if (a === '-x' && i + 1 < command.length) {
			const v = command[++i];
			const eq = v.indexOf('=');
			if (eq > 0) { out.push([v.slice(0, eq), v.slice(eq + 1)]); } else if (own[v] !== undefined) { out.push([v, own[v]]); }
		}
		if (a === ':') { break; }
	}
	return out;
}

function toRaw(id: string, command: string[], r: ExecuteResult, stdout = r.stdout): RawOutput {
	return { id, command, exitCode: r.exitCode, stdout, stderr: r.stderr, durationMs: r.durationMs, ...(r.error !== undefined ? { error: r.error } : {}) };
}

/** The variables the program rules read, as the ranks get them (kept in the `env` output). */
export const PROGRAM_RULE_ENV = /^(MPIR_CVAR_CH4_IPC_|MPICH_CH4_IPC_|MPIR_CVAR_NO_?LOCAL$|UCX_(MEM_CUDA_HOOK_MODE|MEMTYPE_CACHE|MEM_EVENTS)$|MPICH_GPU_SUPPORT_ENABLED$|PYTORCH_(CUDA_)?ALLOC_CONF$|JULIA_CUDA_MEMORY_POOL$|MPI4PY_RC_|CRAY_MPICH|LD_PRELOAD$|OMPI_MCA_pml)/;
/** Largest script read for its allocator / mpi4py lines. */
const MAX_SCRIPT_BYTES = 4 * 1024 * 1024;
/** The tail of a guarded program's output that is scanned for known messages. */
const MAX_OUTPUT_CHARS = 256 * 1024;

/** The program to read and how to reach it. */
export interface ProgramTarget {
	/** The program as the command names it (raw output ids use this word). */
	word: string;
	/** Where it is on the host (resolved as the launcher would). */
	path: string;
	/** The command's words after the program (an interpreter's script is among them), already resolved against -wdir. */
	args: string[];
}

/**
 * readelf, ldd, the program's kind, an interpreter's script and (Python) the mpi4py probe, for one program on `host`.
 * `env`: the environment the program gets beyond the host's own (the probe runs with it). Null when `path` is not an
 * ELF file readelf can read (then the caller tries the next word); `notes` say why nothing could be read at all.
 */
export async function collectProgramFiles(host: Host, t: ProgramTarget, opts: { env: Record<string, string>; signal?: AbortSignal; timeoutMs?: number }): Promise<{ raw: RawOutput[]; notes: string[] } | null> {
	const timeoutMs = opts.timeoutMs ?? 30_000;
	const run = (argv: string[]): Promise<ExecuteResult> => host.run(argv, { timeoutMs, signal: opts.signal, maxOutputBytes: 32 * 1024 * 1024 });
	const d = await run(['readelf', '-d', t.path]);
	if (d.error === 'not found' || (d.exitCode === null && /not found/.test(d.error ?? ''))) {
		return { raw: [], notes: ['readelf not found on the host: the program\'s libraries (link order, Cray GTL) are not checked'] };
	}
	if (d.exitCode !== 0 || !/\(NEEDED\)/.test(d.stdout)) { return null; }
	const raw: RawOutput[] = [toRaw(`readelf_d:${t.word}`, ['readelf', '-d', t.path], d)];
	const s = await run(['readelf', '-sW', t.path]);
	// The symbol table of a large program is long: only the lines that name cudaFree are kept (what the rule reads).
	raw.push(toRaw(`readelf_s:${t.word}`, ['readelf', '-sW', t.path], s, s.stdout.split('\n').filter((l) => /\bcudaFree$/.test(l.trim())).join('\n')));
	const l = await run(['ldd', t.path]);
	if (l.exitCode === 0) { raw.push(toRaw(`ldd:${t.path}`, ['ldd', t.path], l)); }
	const kind = interpreterKind(t.path) ?? 'elf';
	let script = '';
	if (kind !== 'elf') {
		const want = kind === 'python' ? /\.py$/ : /\.jl$/;
		for (const a of [...t.args.filter((x) => want.test(x)), ...t.args.filter((x) => !want.test(x) && !x.startsWith('-'))].slice(0, 3)) {
			const f = await host.readFile(a, MAX_SCRIPT_BYTES);
			if (!f.ok) { continue; }
			script = a;
			raw.push({ id: `script:${a}`, command: ['read', a], exitCode: 0, stdout: scriptLines(f.text), stderr: '', durationMs: 0 });
			break;
		}
		if (kind === 'python') { raw.push(...await runMpi4pyProbe(host, t.path, { timeoutMs, signal: opts.signal, env: opts.env })); }
	}
	raw.push({ id: 'program', command: ['internal', 'program'], exitCode: 0, stdout: `program=${t.path}\nkind=${kind}\nscript=${script}\n`, stderr: '', durationMs: 0 });
	return { raw, notes: [] };
}

/** What to collect for. */
export interface ProgramLinksRequest {
	/** The user's command (after `--`). */
	command: string[];
	/** The command starts with a launcher (mpirun, mpiexec, srun…). */
	launcher: boolean;
	flavor: MpiFlavor;
	/** Presets for the ranks (NAME, value). */
	env: Array<[string, string]>;
	signal?: AbortSignal;
	/** After a guarded run: the ranks' report texts and the program's output (stdout + stderr). */
	run?: { reports: string[]; output: string };
}

/** One summary line per valid rank report: `rank=N pml=P <class>=count…` (raw `guard_ranks`). */
export function guardRankLines(reports: readonly string[]): string {
	const lines: string[] = [];
	for (const text of reports) {
		const p = parseGuardReport(text.replace(/\u0000truncated$/, ''));
		if (!p.ok) { continue; }
		const r = p.report;
		const sum = Object.fromEntries(BUFFER_CLASSES.map((c) => [c, 0])) as Record<string, number>;
		for (const x of [...r.peers, ...r.collectives]) { for (const c of BUFFER_CLASSES) { sum[c] += x.bufferClasses[c]; } }
		lines.push(`rank=${r.rank} pml=${r.mpi.pml ?? '-'} ${BUFFER_CLASSES.map((c) => `${c}=${sum[c]}`).join(' ')}`);
	}
	return lines.join('\n');
}

/** The raw outputs (program files, mpivars / mpichversion or ucx_info -b, env, the run's ranks and output) and notes. */
export async function collectProgramLinks(host: Host, req: ProgramLinksRequest): Promise<{ raw: RawOutput[]; program: string | null; notes: string[] }> {
	const notes: string[] = [];
	const run = (argv: string[], env?: Record<string, string>): Promise<ExecuteResult> => host.run(argv, { timeoutMs: 30_000, signal: req.signal, env, maxOutputBytes: 32 * 1024 * 1024 });
	const { candidates, wdir } = programCandidates(req.command, req.launcher);
	const own = await host.env();
	const rankEnv = Object.fromEntries([...forwardedEnv(req.command, own), ...req.env]);
	let program: string | null = null;
	const raw: RawOutput[] = [];
	const resolved = candidates.map((c) => (wdir && !c.startsWith('/') ? path.posix.join(wdir, c) : c));
	for (let i = 0; i < candidates.length; i++) {
		const c = candidates[i];
		// A bare name: PATH first (hydra execvp's it), then the launch directory (Open MPI looks there too).
		const p = c.includes('/') ? resolved[i] : (await host.which(c)) ?? resolved[i];
		if (!p) { continue; }
		const args = req.launcher ? resolved.slice(i + 1) : req.command.slice(1);
		const got = await collectProgramFiles(host, { word: c, path: p, args }, { env: rankEnv, signal: req.signal });
		if (got === null) { continue; }
		notes.push(...got.notes);
		if (got.raw.length === 0) { break; }
		raw.push(...got.raw);
		program = p;
		break;
	}
	if (program && req.flavor === 'mpich') {
		const dir = req.launcher && req.command[0].includes('/') ? path.posix.dirname(req.command[0]) : null;
		const beside = async (tool: string): Promise<string> => (dir && (await host.listDir(dir))?.includes(tool) ? path.posix.join(dir, tool) : tool);
		const mv = await beside('mpivars');
		raw.push(toRaw('mpivars', [mv], await run([mv], rankEnv)));
		const ver = await beside('mpichversion');
		raw.push(toRaw('mpichversion', [ver], await run([ver])));
	} else if (program && req.flavor === 'openmpi') {
		// UCX's version and build (thread support) for the mpi4py and allocator rules; not -d (it opens every transport).
		const ucxInfo = await host.which('ucx_info');
		if (ucxInfo) {
			raw.push(toRaw('ucx_info_v', [ucxInfo, '-v'], await run([ucxInfo, '-v'])));
			raw.push(toRaw('ucx_info_b', [ucxInfo, '-b'], await run([ucxInfo, '-b'])));
		}
	}
	if (program) {
		const vars = Object.entries({ ...own, ...rankEnv }).filter(([k]) => PROGRAM_RULE_ENV.test(k));
		raw.push({ id: 'env', command: ['env'], exitCode: 0, stdout: vars.map(([k, v]) => `${k}=${v.replace(/\r?\n/g, '\\n')}`).join('\n'), stderr: '', durationMs: 0 });
	}
	if (req.run) {
		const ranks = guardRankLines(req.run.reports);
		if (ranks !== '') { raw.push({ id: 'guard_ranks', command: ['internal', 'guard reports'], exitCode: 0, stdout: ranks, stderr: '', durationMs: 0 }); }
		// Open MPI's and UCX's messages go to stderr or stdout: both, the tail, scanned as a tool's stderr is.
		raw.push({ id: 'program_output', command: req.command, exitCode: 0, stdout: '', stderr: req.run.output.slice(-MAX_OUTPUT_CHARS), durationMs: 0 });
	}
	return { raw, program, notes };
}

/** The program rules on the user's program (empty when nothing could be read about it). */
export async function programLinkFindings(host: Host, req: ProgramLinksRequest): Promise<Finding[]> {
	try {
		const c = await collectProgramLinks(host, req);
		if (c.raw.length === 0) { return []; }
		return runRules(PROGRAM_RULES, buildFacts(c.raw, host.ref.kind === 'local' ? 'this machine' : 'host'));
	} catch {
		return []; // Reading the program never breaks a guarded run.
	}
}
