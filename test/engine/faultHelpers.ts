/**
 * Helpers of the fault-injection suite (test/engine/faults*.test.ts): a seeded random source, the processes of one
 * run found in /proc by a token unique to it, and each rank's MPI rank read from its environment. Nothing here fakes
 * a part: the faults are real signals sent to real mpirun ranks. `deployFaultLab` is the namespace host and the
 * building setup line the deploy faults (faultsInterrupt, faultsReboot, faultsVanish) share.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createNetnsLab, type NetnsLab } from '../hosts/netnsHosts';
import type { CliIo } from '../../extension/cli/io';
import { main } from '../../extension/cli/gpumpiDoctor';

/** The fuzz tests' seeded generator (mulberry32), so a failing case can be replayed with its seed. */
export { prng as seeded } from '../unit/prng';

export const sleep = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

function cmdline(pid: number): string[] | null {
	try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(a => a.length > 0); } catch { return null; }
}

/** Live (not zombie) pids whose argv holds `token` as a whole argument and mentions gpumpi (other helpers' runs do not match). */
export function pidsWith(token: string): number[] {
	const out: number[] = [];
	for (const d of fs.readdirSync('/proc')) {
		if (!/^\d+$/.test(d) || Number(d) === process.pid) { continue; }
		const cmd = cmdline(Number(d));
		if (!cmd || !cmd.includes(token) || !cmd.some(a => /gpumpi/.test(a))) { continue; }
		try { if (/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${d}/stat`, 'utf8'))) { continue; } } catch { continue; }
		out.push(Number(d));
	}
	return out;
}

/** The engine ranks among `pids` (argv[0] is the engine itself), each with its MPI rank from the environment. */
export function ranksOf(pids: number[]): Array<{ pid: number; rank: number }> {
	const out: Array<{ pid: number; rank: number }> = [];
	for (const pid of pids) {
		const cmd = cmdline(pid);
		if (!cmd || !/\/gpumpi$/.test(cmd[0])) { continue; }
		let env = '';
		try { env = fs.readFileSync(`/proc/${pid}/environ`, 'utf8'); } catch { continue; }
		const m = /(?:^|\0)(?:OMPI_COMM_WORLD_RANK|PMI_RANK)=(\d+)/.exec(env);
		if (m) { out.push({ pid, rank: Number(m[1]) }); }
	}
	return out.sort((a, b) => a.rank - b.rank);
}

/** Poll until `n` ranks of the run marked by `token` exist (or `ms` passed). */
export async function waitForRanks(token: string, n: number, ms = 20_000): Promise<Array<{ pid: number; rank: number }>> {
	const end = Date.now() + ms;
	let seen: Array<{ pid: number; rank: number }> = [];
	while (Date.now() < end) {
		seen = ranksOf(pidsWith(token));
		if (seen.length >= n) { return seen; }
		await sleep(100);
	}
	return seen;
}

/** Poll until nothing of the run marked by `token` is left (or `ms` passed); returns what is left, with argv. */
export async function leftOver(token: string, ms = 5000): Promise<string[]> {
	const end = Date.now() + ms;
	let left = pidsWith(token);
	while (left.length > 0 && Date.now() < end) { await sleep(200); left = pidsWith(token); }
	return left.map(p => `${p} ${(cmdline(p) ?? []).join(' ').slice(0, 120)}`);
}

/** Whether `pid` is gone (or only a zombie waiting to be reaped). */
export function gone(pid: number): boolean {
	try { return /^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return true; }
}

/** Run the CLI in this process, as the engine tests do (remoteLaunch.test.ts). */
export async function cli(args: string[], cwd: string, signal = new AbortController().signal): Promise<{ code: number; out: string; err: string }> {
	let out = '';
	let err = '';
	const io: CliIo = { stdout: t => { out += t; }, stderr: t => { err += t; }, cwd, signal };
	const code = await main(args, io);
	return { code, out, err };
}

/** A namespace host for the deploy faults, a setup line that makes the deploy build, and the engine cache around it. */
export interface DeployFaultLab {
	/** The lab (one namespace host, host-a, real sshd); set in the suite's `before`. */
	readonly lab: NetnsLab;
	/** `PATH=<dir>/bin:$PATH`: a cmake of its own first on PATH (as `module load cmake` would). */
	readonly setupLine: string;
	/** The engine cache of this machine's root user, where a deploy to the lab's hosts records its builds. */
	readonly cache: string;
	/** Engine cache directories created since the suite started (the test's own builds). */
	freshDirs(): string[];
}

/**
 * Register, in the calling `describe`, the deploy fault lab of faultsInterrupt / faultsReboot / faultsVanish: a
 * one-host namespace lab; a setup line whose cmake (a link to /usr/bin/cmake in a directory of its own, `prefix`
 * under the temp dir) is a toolchain never seen before, so the deploy has to build (the cache key holds cmake's
 * path) and the test owns that build; and, after, the lab torn down, that directory and every engine cache directory
 * the suite created removed. Root only (network namespaces): the suite is skipped otherwise.
 */
export function deployFaultLab(prefix: string): DeployFaultLab {
	const cache = '/root/.cache/gpumpi-doctor';
	const listCache = (): string[] => (fs.existsSync(cache) ? fs.readdirSync(cache) : []);
	let lab: NetnsLab | null = null;
	let setupDir = '';
	let cacheBefore = new Set<string>();
	before(async function () {
		this.timeout(60_000);
		if (process.getuid?.() !== 0) { this.skip(); }
		lab = await createNetnsLab({ count: 1 });
		setupDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
		fs.mkdirSync(path.join(setupDir, 'bin'));
		fs.symlinkSync('/usr/bin/cmake', path.join(setupDir, 'bin', 'cmake'));
		cacheBefore = new Set(listCache());
	});
	after(() => {
		lab?.teardown();
		if (setupDir) { fs.rmSync(setupDir, { recursive: true, force: true }); }
		for (const d of listCache()) { if (!cacheBefore.has(d)) { fs.rmSync(path.join(cache, d), { recursive: true, force: true }); } }
	});
	return {
		get lab(): NetnsLab { if (!lab) { throw new Error('deployFaultLab: the lab is made in before()'); } return lab; },
		get setupLine(): string { return `PATH=${setupDir}/bin:$PATH`; },
		cache,
		freshDirs: () => listCache().filter(d => !cacheBefore.has(d)),
	};
}
