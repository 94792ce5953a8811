/**
 * The user's program's link order, collected where the product has the program (`gpumpi-doctor guard -- mpirun … ./app`,
 * the VS Code guard command), for mpich-gpu-ipc-cache-hooks (rules/mpichIpcCacheRules.ts): which word of the command
 * is the program (after the launcher's options, as the launcher finds it: a bare name on PATH, a relative path from
 * the launch directory or its -wdir), then on the host that launches, never through a shell:
 * - `readelf -d PROGRAM` (its DT_NEEDED entries in order) and `readelf -sW PROGRAM` (kept: the lines naming cudaFree,
 *   whether cudart is linked in statically), raw outputs `readelf_d:<program>` / `readelf_s:<program>`;
 * - MPICH's `mpivars` (beside the launcher when it is there, else on PATH), run with the environment the ranks get
 *   (the presets and what the command forwards with -genv / -env / -x), so the cache CVARs are listed as MPICH read
 *   them; and `mpichversion`; the CVARs also as an `env` output.
 * Why readelf and not an ELF reader here: the program may be on an ssh host, where the Host API reads text files
 * only; and the evidence lines are readelf's own, as in the rule's fixtures. Without readelf the rule stays silent and
 * a note says why. Only for MPICH (the rule is about MPICH's cache); ucx-memtype-cache-static-cudart runs on the same
 * facts (MPICH ch4:ucx, UCX's hook settings as the ranks get them).
 */
import * as path from 'node:path';
import type { Finding, RawOutput } from '../../shared/report';
import type { Host } from '../hosts/host';
import type { MpiFlavor } from '../launch/launchSpec';
import type { ExecuteResult } from '../proc';
import { buildFacts } from '../parsers/buildFacts';
import { mpichIpcCacheRules } from '../rules/mpichIpcCacheRules';
import { programLinkUcxRules } from '../rules/ucxMemoryRules';
import { runRules } from '../rules/rule';

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

/** Variables the command forwards to the ranks: Open MPI `-x NAME=V` (or `-x NAME`: the launcher's own), hydra `-genv`/`-env NAME V`. */
export function forwardedEnv(command: readonly string[], own: Record<string, string>): Array<[string, string]> {
	const out: Array<[string, string]> = [];
	for (let i = 1; i < command.length; i++) {
		const a = command[i];
		if ((a === '-genv' || a === '-env') && i + 2 < command.length) { out.push([command[i + 1], command[i + 2]]); i += 2; continue; }
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
}

/** The raw outputs (readelf of the first word that is an ELF program, mpivars, mpichversion, env) and notes. */
export async function collectProgramLinks(host: Host, req: ProgramLinksRequest): Promise<{ raw: RawOutput[]; program: string | null; notes: string[] }> {
	const notes: string[] = [];
	if (req.flavor !== 'mpich') { return { raw: [], program: null, notes }; }
	const run = (argv: string[], env?: Record<string, string>): Promise<ExecuteResult> => host.run(argv, { timeoutMs: 30_000, signal: req.signal, env, maxOutputBytes: 32 * 1024 * 1024 });
	const { candidates, wdir } = programCandidates(req.command, req.launcher);
	let program: string | null = null;
	const raw: RawOutput[] = [];
	for (const c of candidates) {
		const rel = wdir && !c.startsWith('/') ? path.posix.join(wdir, c) : c;
		// A bare name: PATH first (hydra execvp's it), then the launch directory (Open MPI looks there too).
		const p = c.includes('/') ? rel : (await host.which(c)) ?? rel;
		if (!p) { continue; }
		const d = await run(['readelf', '-d', p]);
		if (d.error === 'not found' || (d.exitCode === null && /not found/.test(d.error ?? ''))) { notes.push('readelf not found on the host: the program\'s link order (MPICH\'s IPC cache hooks) is not checked'); break; }
		if (d.exitCode !== 0 || !/\(NEEDED\)/.test(d.stdout)) { continue; }
		program = p;
		raw.push(toRaw(`readelf_d:${c}`, ['readelf', '-d', p], d));
		const s = await run(['readelf', '-sW', p]);
		// The symbol table of a large program is long: only the lines that name cudaFree are kept (what the rule reads).
		raw.push(toRaw(`readelf_s:${c}`, ['readelf', '-sW', p], s, s.stdout.split('\n').filter((l) => /\bcudaFree$/.test(l.trim())).join('\n')));
		break;
	}
	if (!program) { return { raw, program, notes }; }
	const own = await host.env();
	const rankEnv = Object.fromEntries([...forwardedEnv(req.command, own), ...req.env]);
	const dir = req.launcher && req.command[0].includes('/') ? path.posix.dirname(req.command[0]) : null;
	const beside = async (tool: string): Promise<string> => (dir && (await host.listDir(dir))?.includes(tool) ? path.posix.join(dir, tool) : tool);
	const mv = await beside('mpivars');
	raw.push(toRaw('mpivars', [mv], await run([mv], rankEnv)));
	const ver = await beside('mpichversion');
	raw.push(toRaw('mpichversion', [ver], await run([ver])));
	// The cache CVARs, MPICH's NOLOCAL switch and UCX's memory-hook settings (ucx-memtype-cache-static-cudart), as the ranks get them.
	const cvars = Object.entries({ ...own, ...rankEnv }).filter(([k]) => k.startsWith('MPIR_CVAR_CH4_IPC_') || k.startsWith('MPICH_CH4_IPC_')
		|| /^MPIR_CVAR_NO_?LOCAL$/.test(k) || /^UCX_(MEM_CUDA_HOOK_MODE|MEMTYPE_CACHE|MEM_EVENTS)$/.test(k));
	raw.push({ id: 'env', command: ['env'], exitCode: 0, stdout: cvars.map(([k, v]) => `${k}=${v}`).join('\n'), stderr: '', durationMs: 0 });
	return { raw, program, notes };
}

/** mpich-gpu-ipc-cache-hooks on the user's program (empty for Open MPI, or when the program cannot be read). */
export async function programLinkFindings(host: Host, req: ProgramLinksRequest): Promise<Finding[]> {
	try {
		const c = await collectProgramLinks(host, req);
		if (c.raw.length === 0) { return []; }
		return runRules([...mpichIpcCacheRules, ...programLinkUcxRules], buildFacts(c.raw, host.ref.kind === 'local' ? 'this machine' : 'host'));
	} catch {
		return []; // The link-order check never breaks a guarded run.
	}
}
