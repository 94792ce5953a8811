/**
 * Run markers: what a hard-killed extension host leaves running, found and ended by the next one.
 *
 * Why: every launch runs in a session of its own (proc.ts: `detached`), so nothing reaches mpirun and its ranks when
 * the extension host dies without `deactivate()` (SIGKILL, an OOM kill, a crash): measured (docs/reliability.md,
 * window reload) they run on with parent pid 1, and the launch's private shm directory stays in /dev/shm. So each
 * process session `execute` starts is written down here, one small JSON file per session under the extension's
 * globalStorage (`run-markers/`), removed when the session ends normally. A new extension host sweeps the markers of
 * hosts that are gone: it ends their sessions (SIGTERM, then SIGKILL after a grace) and removes their directories.
 *
 * What makes a kill safe: the owner (extension host pid + its start time) must be gone, the boot id must be this
 * boot's, and the marked process must still have the start time it had (/proc/<pid>/stat field 22, clock ticks since
 * boot): with pid_max 32768 here a pid comes round again, and a recycled pid is never signalled. Where the launcher
 * itself is gone but processes of its session remain (a crashed mpirun's ranks), those are ended only if they started
 * after it: a session id stays taken while any member lives, so they are its members — unless the whole session
 * ended and a new, leaderless one was made with the same id before the sweep (not guarded against; needs the pid to
 * come round and its new owner to exit while its children run).
 * Directories are removed only when they look like the product's own (`gpumpi-shm-XXXXXXXX`, `gpumpi-guard-XXXXXXXX`),
 * are real directories (not links) and belong to this user: a marker file is input, and may be damaged or hostile.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Logger } from './logger';
import { killSession, sessionMembers, type SessionRecorder } from './proc';

/** Format tag of a marker file. */
const FORMAT = 'gpumpi-run-marker/1';
/** Marker files bigger than this are not read (a real one is well under 1 KiB). */
const MAX_MARKER_BYTES = 64 * 1024;
/** Directories the product makes for a run (shmBacking.ts, guardRunner.ts), the only ones a sweep removes. */
const PRIVATE_DIR = /^gpumpi-(shm|guard)-[A-Za-z0-9]{8}$/;

/** One marker file: a process session and who started it. */
export interface RunMarker {
	format: typeof FORMAT;
	/** The session leader (pid = process group = session id: proc.ts spawns it detached). */
	pid: number;
	/** Its start time, /proc/<pid>/stat field 22 (clock ticks after boot). */
	startTime: number;
	/** /proc/sys/kernel/random/boot_id when it was written. */
	bootId: string;
	/** The extension host that started it, and that host's start time. */
	owner: { pid: number; startTime: number };
	/** The command line, for the log (cut to a few hundred characters). */
	command: string;
	/** Directories of this run alone, removed after it. */
	dirs: string[];
	/** When it was written (ISO), for the log. */
	written: string;
}

/** Start time of `pid` from /proc/<pid>/stat (field 22), or null when it is gone or unreadable. */
export function processStartTime(pid: number): number | null {
	try {
		const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
		// "pid (comm) state …": comm may hold spaces and ')', so fields are counted after the last ')'; field 22 is the
		// 20th after it (state is field 3).
		const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
		const v = Number(f[19]);
		return Number.isSafeInteger(v) ? v : null;
	} catch {
		return null;
	}
}

/** This boot's id, or '' where it cannot be read. */
export function bootId(): string {
	try { return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(); } catch { return ''; }
}

/** This process's pid, process group and session: never signalled, whatever a marker says. */
function ownIds(): number[] {
	try {
		const stat = fs.readFileSync('/proc/self/stat', 'utf8');
		const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
		return [process.pid, Number(f[2]), Number(f[3])];
	} catch {
		return [process.pid];
	}
}

/** Whether `pid` runs and is the process that had `startTime`. */
function sameProcess(pid: number, startTime: number): boolean {
	return processStartTime(pid) === startTime;
}

/**
 * A recorder for proc.ts (`setSessionRecorder`) that writes one marker per started session into `dir` and removes it
 * when the session ends. A failure to write is logged once and never stops a run.
 */
export function createMarkerRecorder(dir: string, log: Logger): SessionRecorder {
	const owner = { pid: process.pid, startTime: processStartTime(process.pid) ?? -1 };
	const boot = bootId();
	let warned = false;
	return {
		started({ pid, argv, privateDirs }) {
			const startTime = processStartTime(pid);
			if (startTime === null || owner.startTime < 0 || boot === '') { return undefined; } // already gone, or no /proc
			const marker: RunMarker = {
				format: FORMAT, pid, startTime, bootId: boot, owner, command: argv.join(' ').slice(0, 400),
				dirs: [...privateDirs], written: new Date().toISOString(),
			};
			const file = path.join(dir, `${owner.pid}-${pid}.json`);
			try {
				fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
				fs.writeFileSync(`${file}.tmp`, JSON.stringify(marker), { mode: 0o600 });
				fs.renameSync(`${file}.tmp`, file);
			} catch (e) {
				if (!warned) { warned = true; log.warn(`cannot write run marker ${file}: ${errorText(e)} (a hard kill of this extension host would leave this run running)`); }
				return undefined;
			}
			return () => { try { fs.rmSync(file, { force: true }); } catch { /* the sweep of a later host finds it and sees it ended */ } };
		},
	};
}

/** What a sweep did, per marker (also logged). */
export interface SweepAction {
	file: string;
	/** 'ended': signals sent; 'gone': nothing of it ran; 'recycled': the pid is another process now (not signalled); 'other-boot'; 'live-owner' (left); 'invalid'. */
	outcome: 'ended' | 'gone' | 'recycled' | 'other-boot' | 'live-owner' | 'invalid';
	/** Pids signalled. */
	signalled: number[];
	/** Of them, still running after the grace and SIGKILLed. */
	killed: number[];
	/** Directories removed. */
	removedDirs: string[];
	message: string;
}

/** Options of `sweepRunMarkers`. */
export interface SweepOptions {
	/** Milliseconds between SIGTERM and SIGKILL; default 2000. */
	graceMs?: number;
}

/** Check a parsed marker; the problem as text otherwise. */
export function validateMarker(v: unknown): RunMarker | string {
	if (typeof v !== 'object' || v === null || Array.isArray(v)) { return 'not a JSON object'; }
	const o = v as Record<string, unknown>;
	if (o.format !== FORMAT) { return `format is not ${FORMAT}`; }
	const pidOk = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) > 1;
	if (!pidOk(o.pid)) { return 'pid must be an integer > 1'; }
	if (!Number.isSafeInteger(o.startTime) || (o.startTime as number) < 0) { return 'startTime must be a non-negative integer'; }
	if (typeof o.bootId !== 'string' || o.bootId === '') { return 'bootId must be a string'; }
	const owner = o.owner as Record<string, unknown> | null;
	if (typeof owner !== 'object' || owner === null || !pidOk(owner.pid) || !Number.isSafeInteger(owner.startTime)) { return 'owner must be {pid, startTime}'; }
	if (typeof o.command !== 'string') { return 'command must be a string'; }
	if (!Array.isArray(o.dirs) || o.dirs.some(d => typeof d !== 'string')) { return 'dirs must be a list of paths'; }
	return { format: FORMAT, pid: o.pid, startTime: o.startTime as number, bootId: o.bootId, owner: { pid: owner.pid, startTime: owner.startTime as number }, command: o.command, dirs: o.dirs as string[], written: typeof o.written === 'string' ? o.written : '?' };
}

/** Why `dir` is not removed, or null when it is one of the product's own run directories. */
function unsafeDir(dir: string): string | null {
	if (!path.isAbsolute(dir) || path.normalize(dir) !== dir || dir.includes('\0')) { return 'not a plain absolute path'; }
	if (!PRIVATE_DIR.test(path.basename(dir))) { return 'not a gpumpi-shm-/gpumpi-guard- directory'; }
	let st: fs.Stats;
	try { st = fs.lstatSync(dir); } catch { return 'gone'; }
	if (!st.isDirectory()) { return 'not a directory'; }
	if (typeof process.getuid === 'function' && st.uid !== process.getuid()) { return `owned by uid ${st.uid}`; }
	return null;
}

const wait = (ms: number): Promise<void> => new Promise(r => setTimeout(r, ms));

/** The processes of marker `m`'s session that are its: the leader when it is the same process, else members that started after it. */
function sessionOf(m: RunMarker): number[] {
	const members = sessionMembers(m.pid).filter(p => p !== process.pid);
	if (sameProcess(m.pid, m.startTime)) { return members.includes(m.pid) ? members : [m.pid, ...members]; }
	return members.filter(p => (processStartTime(p) ?? -1) >= m.startTime);
}

/** End one marked session: SIGTERM to its processes, SIGKILL to what still runs after `graceMs`. */
async function endSession(m: RunMarker, graceMs: number): Promise<{ signalled: number[]; killed: number[]; left: number[] }> {
	const signalled = sessionOf(m);
	const signal = (pids: number[], sig: NodeJS.Signals): void => {
		if (sameProcess(m.pid, m.startTime)) { killSession(m.pid, sig); }
		for (const p of pids) { try { process.kill(p, sig); } catch { /* gone */ } }
	};
	signal(signalled, 'SIGTERM');
	const until = Date.now() + graceMs;
	let left = sessionOf(m);
	while (left.length > 0 && Date.now() < until) { await wait(50); left = sessionOf(m); }
	const killed = left;
	if (killed.length > 0) {
		signal(killed, 'SIGKILL');
		const until2 = Date.now() + 1000;
		while (left.length > 0 && Date.now() < until2) { await wait(50); left = sessionOf(m); }
	}
	return { signalled, killed, left };
}

/**
 * Sweep `dir`: every marker whose owner is gone is dealt with (its session ended when it is provably the same, its
 * directories removed) and deleted; markers of live owners (other windows, this host) are left. Never throws: a file
 * that cannot be read or parsed is logged as an error and left for a person to look at.
 */
export async function sweepRunMarkers(dir: string, log: Logger, opts: SweepOptions = {}): Promise<SweepAction[]> {
	const graceMs = opts.graceMs ?? 2000;
	const actions: SweepAction[] = [];
	let names: string[];
	try { names = fs.readdirSync(dir); } catch (e) {
		if ((e as NodeJS.ErrnoException).code !== 'ENOENT') { log.error(`run markers: cannot list ${dir}: ${errorText(e)}`); }
		return actions;
	}
	const boot = bootId();
	for (const name of names.filter(n => n.endsWith('.json')).sort()) {
		try {
			const a = await sweepOne(dir, name, boot, graceMs, log);
			if (a) { actions.push(a); }
		} catch (e) {
			log.error(`run markers: ${name}: ${errorText(e)}`);
			actions.push({ file: name, outcome: 'invalid', signalled: [], killed: [], removedDirs: [], message: errorText(e) });
		}
	}
	return actions;
}

async function sweepOne(dir: string, name: string, boot: string, graceMs: number, log: Logger): Promise<SweepAction | null> {
	const file = path.join(dir, name);
	const invalid = (why: string): SweepAction => {
		log.error(`run markers: ${file} is not a run marker (${why}); left as it is`);
		return { file: name, outcome: 'invalid', signalled: [], killed: [], removedDirs: [], message: why };
	};
	let st: fs.Stats;
	try { st = fs.lstatSync(file); } catch { return null; } // removed meanwhile (its run ended, or another host swept it)
	if (!st.isFile()) { return invalid('not a regular file'); }
	if (st.size > MAX_MARKER_BYTES) { return invalid(`${st.size} bytes, more than a marker ever holds`); }
	let m: RunMarker | string;
	try { m = validateMarker(JSON.parse(fs.readFileSync(file, 'utf8'))); } catch (e) { return invalid(`unreadable: ${errorText(e)}`); }
	if (typeof m === 'string') { return invalid(m); }
	if (ownIds().includes(m.pid)) { return invalid(`pid ${m.pid} is this process, its group or its session`); }
	const base = { file: name, signalled: [] as number[], killed: [] as number[], removedDirs: [] as string[] };
	if (sameProcess(m.owner.pid, m.owner.startTime) && m.bootId === boot) {
		return { ...base, outcome: 'live-owner', message: `owner ${m.owner.pid} runs` };
	}
	// Claimed by renaming, so that two new hosts starting at once do not both act on it.
	const claimed = `${file}.sweeping-${process.pid}`;
	try { fs.renameSync(file, claimed); } catch { return null; }
	const what = `session ${m.pid} (${m.command.slice(0, 120)}) of extension host ${m.owner.pid}, which is gone`;
	let outcome: SweepAction['outcome'];
	let message: string;
	const removedDirs: string[] = [];
	let signalled: number[] = [];
	let killed: number[] = [];
	if (m.bootId !== boot) {
		outcome = 'other-boot';
		message = `${what}: written in an earlier boot (${m.bootId.slice(0, 8)}…), so nothing of it runs; nothing signalled, its directories left`;
	} else {
		const current = processStartTime(m.pid);
		if (current !== null && current !== m.startTime) {
			outcome = 'recycled';
			message = `${what}: pid ${m.pid} is another process now (start time ${current}, marked ${m.startTime}); not signalled`;
		} else {
			const r = await endSession(m, graceMs);
			signalled = r.signalled;
			killed = r.killed;
			outcome = signalled.length > 0 ? 'ended' : 'gone';
			message = signalled.length === 0 ? `${what}: nothing of it runs any more`
				: `${what}: SIGTERM to ${signalled.length} process(es) (${signalled.join(', ')})${killed.length > 0 ? `, SIGKILL to ${killed.length} still running after ${graceMs} ms` : ''}; ${r.left.length === 0 ? 'none of it is left' : `${r.left.length} still there: ${r.left.join(', ')}`}`;
		}
		for (const d of m.dirs) {
			const why = unsafeDir(d);
			if (why === 'gone') { continue; }
			if (why) { log.warn(`run markers: ${file}: not removing ${JSON.stringify(d.slice(0, 200))}: ${why}`); continue; }
			try { fs.rmSync(d, { recursive: true, force: true }); removedDirs.push(d); } catch (e) { log.warn(`run markers: cannot remove ${d}: ${errorText(e)}`); }
		}
		if (removedDirs.length > 0) { message += `; removed ${removedDirs.join(', ')}`; }
	}
	log.info(`run markers: ${message}`);
	try { fs.rmSync(claimed, { force: true }); } catch { /* logged above what it was; a later sweep skips *.sweeping-* */ }
	return { file: name, outcome, signalled, killed, removedDirs, message };
}

function errorText(e: unknown): string {
	return e instanceof Error ? e.message : String(e);
}
