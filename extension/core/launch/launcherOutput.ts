/**
 * What a launch printed, read: a launcher's report that it could not start the program, crash reports of Open MPI /
 * PRRTE / MPICH Hydra / UCX / Slurm (which rank, which signal), the engine ranks' pid lines, and the lines that say
 * why a run failed. Shared by every use case that launches (reproducers, map, guard). Pure functions over text; they
 * never throw on garbage.
 */
import { RANK_LINE_MARKER } from '../../shared/reproSchema';
import { isFrameLine } from '../parsers/framedDocument';
import { cleanLine } from '../parsers/text';
import { readHydraCrash } from './hydraCrash';

/** "rank 1" or, where the output cannot tell, "a rank (rank unknown: Hydra reported …)". */
export function crashedWho(c: CrashInfo): string {
	if (c.rank !== null) { return `rank ${c.rank}`; }
	if (c.note !== null && c.note.startsWith('rank unknown')) { return `a rank (${c.note})`; }
	return c.pid !== null ? `process ${c.pid}` : 'a rank';
}

/** "Killed", "signal 15", or "signal unknown" / "exit code 1" from the note. */
export function crashedHow(c: CrashInfo): string {
	if (c.signalName !== null) { return c.signalName; }
	if (c.signal !== null) { return `signal ${c.signal}`; }
	if (c.note !== null && /^(signal unknown|exit code \d+)/.test(c.note)) { return c.note.startsWith('exit code') ? c.note : 'signal unknown'; }
	return 'signal unknown';
}

const MAX_EVIDENCE_LINES = 60;

function lines(text: string): string[] {
	return text.split(/\r\n|\n|\r/).slice(0, 200_000);
}

/** pid → rank from the "@@GPUMPI-RANK@@ rank=R pid=P host=H" lines. */
export function parseRankLines(text: string): Map<number, { rank: number; host: string }> {
	const map = new Map<number, { rank: number; host: string }>();
	for (const l of lines(text)) {
		const i = l.indexOf(RANK_LINE_MARKER);
		if (i < 0) { continue; }
		const m = /rank=(\d+) pid=(\d+) host=(\S*)/.exec(l.slice(i));
		if (m) { map.set(Number(m[2]), { rank: Number(m[1]), host: m[3] }); }
	}
	return map;
}

/** What a crash report says. */
export interface CrashInfo {
	crashed: boolean;
	signal: number | null;
	signalName: string | null;
	rank: number | null;
	pid: number | null;
	/**
	 * Where the output cannot tell the rank or the signal: what it does say, e.g. "rank unknown: Hydra reported rank 1
	 * (pid 20549) ended with code 9, and it ends the ranks it cleans up with signal 9 itself" (hydraCrash.ts).
	 */
	note: string | null;
	evidence: string[];
}

/** What a launcher said when it could not start the program at all (no rank ever ran it). */
export interface LaunchFailure {
	/** The program the launcher could not start, as it named it. */
	executable: string | null;
	/** The node it said so for. */
	node: string | null;
	/** Why, in the launcher's words ("No such file or directory", "Exec format error", "could not access or execute"). */
	reason: string;
	/** How many processes it could not start, where it counted them. */
	processes: number | null;
	/** The launcher refused to start anything because it runs as root (Open MPI without --allow-run-as-root). */
	rootRefused?: boolean;
	evidence: string[];
}

/**
 * Read a launcher's "could not start the program" report (all seen in real output, test-fixtures/repro/launch):
 * Open MPI 4.1's "<launcher> was unable to launch the specified application as it could not access\nor execute an
 * executable:" block (Executable:, Node:; older releases say "could not find an executable", wrapped anywhere) and its execve block ("Open MPI tried to fork a new process via the
 * "execve" system call but\nfailed." … Application name:, Error: Exec format error), both with "N total processes
 * failed to start"; MPICH Hydra's "[proxy:0:0@node] HYDU_create_process (…): execvp error on file F (reason)". Open
 * MPI exits with 131 or 132 after these, which is not a signal (128 + 3, 128 + 4); null when none is there.
 */
export function detectLaunchFailure(stdout: string, stderr: string): LaunchFailure | null {
	const text = stdout + '\n' + stderr;
	const all = lines(text);
	let found = false;
	let executable: string | null = null;
	let node: string | null = null;
	let reason: string | null = null;
	let processes: number | null = null;
	let rootRefused = false;
	const evidence: string[] = [];
	const ev = (l: string): void => {
		const c = cleanLine(l.trim());
		if (evidence.length < 12 && c.length > 0 && !evidence.includes(c)) { evidence.push(c); }
	};
	for (let i = 0; i < all.length; i++) {
		const l = all[i];
		let m = /^\s*(\d+) total process(?:es)? failed to start\s*$/.exec(l);
		if (m) { found = true; processes = Number(m[1]); ev(l); continue; }
		m = /was unable to (launch|start) the specified application/.exec(l);
		if (m) {
			found = true;
			ev(l);
			// The sentence wraps ("… as it could not access\nor execute an executable:"; older releases "as it could\nnot
			// find an executable:"): read it with the next line.
			const both = `${l} ${all[i + 1] ?? ''}`;
			if (/could\s+not\s+find/.test(both)) { reason ??= 'could not find the executable'; }
			// PRRTE (Open MPI 5.0.7): "… as it lacked\npermissions to execute an executable:", for a missing file as well
			// as a mode-644 one (test-fixtures/repro/launch/ompi5-launch-*): its words, quoted, not a diagnosis.
			else if (/lacked\s+permissions/.test(both)) { reason ??= 'in its words "lacked permissions to execute an executable", which Open MPI 5 also says of a file that does not exist'; }
			else if (/could\s+not\s+access/.test(both)) { reason ??= 'could not access or execute the executable'; }
			if (/^\s*(or\s+execute|not\s+find|permissions\s+to)/.test(all[i + 1] ?? '')) { ev(all[i + 1]); }
			continue;
		}
		if (/Open MPI tried to fork a new process via the "execve" system call/.test(l)) { found = true; ev(l); continue; }
		// Open MPI 4.1's "mpirun.openmpi has detected an attempt to run as root." block (test-fixtures/repro/launch/
		// ompi-launch-root.*): nothing was started; the block names both ways to allow it.
		m = /^\s*(\S+) has detected an attempt to run as root\.?\s*$/.exec(l);
		if (m) {
			found = true;
			rootRefused = true;
			reason ??= `${m[1]} refuses to run as root unless given --allow-run-as-root or OMPI_ALLOW_RUN_AS_ROOT=1 with OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1`;
			ev(l);
			for (const next of all.slice(i + 1, i + 16)) { if (/allow-run-as-root|OMPI_ALLOW_RUN_AS_ROOT/.test(next)) { ev(next); } }
			continue;
		}
		m = /execvp error on file (\S+) \(([^)]+)\)/.exec(l);
		if (m) {
			found = true;
			executable ??= m[1];
			reason ??= m[2];
			const p = /\[proxy:[^@\]]*@([^\]\s]+)\][^[]*execvp error/.exec(l) ?? /\[proxy:[^@\]]*@([^\]\s]+)\]/.exec(l);
			if (p) { node ??= p[1]; }
			ev(l);
			continue;
		}
		if (!found) { continue; }
		// The fields of the Open MPI blocks above, once one of them has been seen.
		m = /^\s*(?:Executable|Application name):\s*(\S.*?)\s*$/.exec(l);
		if (m) { executable ??= m[1]; ev(l); continue; }
		m = /^\s*(?:Node|Local host):\s*(\S+)\s*$/.exec(l);
		if (m) { node ??= m[1]; ev(l); continue; }
		m = /^\s*Error:\s*(\S.*?)\s*$/.exec(l);
		if (m) { reason ??= m[1]; ev(l); continue; }
	}
	if (!found) { return null; }
	return { executable, node, reason: reason ?? 'the launcher could not start it', processes, ...(rootRefused ? { rootRefused } : {}), evidence };
}

/** "mpirun could not start /x/gpumpi on node vm (No such file or directory); 4 processes failed to start". */
export function launchFailureText(f: LaunchFailure, launcher: string): string {
	const what = f.executable !== null ? f.executable : 'the program';
	const where = f.node !== null ? ` on node ${f.node}` : '';
	const count = f.processes !== null ? `; ${f.processes} process${f.processes === 1 ? '' : 'es'} failed to start` : '';
	return `${launcher} could not start ${what}${where} (${f.reason})${count}: no rank ran, so this says nothing about the MPI`;
}

const SIGPIPE = 13;

const SIGNAL_NAMES: Record<number, string> = {
	4: 'Illegal instruction', 6: 'Aborted', 7: 'Bus error', 8: 'Floating point exception', 9: 'Killed', 11: 'Segmentation fault', 15: 'Terminated',
};

/**
 * Read a crash from mpirun's output and exit status. Recognises (all seen in real output, test-fixtures/repro):
 * Open MPI / PRRTE "<launcher> noticed that process rank R with PID P on node N exited on signal S (Name)",
 * Open MPI's handler "[host:pid] Signal: Segmentation fault (11)", UCX "[host:pid:t:t] Caught signal 11 (…)",
 * MPICH Hydra "BAD TERMINATION … PID P RUNNING AT h … EXIT CODE: 11 … (signal 11)" (read by hydraCrash.ts, which
 * says "rank unknown" where Hydra's output cannot tell), Slurm "srun: error: h: task R:
 * Segmentation fault". Exit status 128+S of mpirun
 * alone also counts, unless the launcher reported that it could not start the program (detectLaunchFailure) or S is
 * SIGPIPE. pid → rank through the engine's rank lines.
 */
export function detectCrash(stdout: string, stderr: string, exitCode: number | null, signal: string | null): CrashInfo {
	const info: CrashInfo = { crashed: false, signal: null, signalName: null, rank: null, pid: null, note: null, evidence: [] };
	const text = stdout + '\n' + stderr;
	const pids = parseRankLines(stderr + '\n' + stdout);
	const seen = new Set<number>();
	const setSignal = (n: number, name?: string): void => {
		seen.add(n);
		if (info.signal === null) { info.signal = n; info.signalName = name ?? SIGNAL_NAMES[n] ?? null; }
	};
	const setPid = (pid: number): void => {
		if (info.pid === null && pid > 0) { info.pid = pid; }
		if (info.rank === null && pids.has(pid)) { info.rank = pids.get(pid)!.rank; }
	};
	const ev = (l: string): void => {
		const c = cleanLine(l.trim());
		if (info.evidence.length < 20 && !info.evidence.includes(c)) { info.evidence.push(c); }
	};
	let badTermination = false;
	// PRRTE (Open MPI 5) wraps its notice over two lines: "prterun noticed that process rank 3 with PID 2123 on node
	// vm exited on\nsignal 11 (Segmentation fault)." (seen on the H200 testbed): match it across the line break.
	const wrapped = /noticed that process rank (\d+) with PID (\d+) on node (\S+) exited on\s*\n\s*signal (\d+)(?: \(([^)]+)\))?/.exec(text);
	if (wrapped) {
		info.crashed = true;
		info.rank = Number(wrapped[1]);
		setPid(Number(wrapped[2]));
		setSignal(Number(wrapped[4]), wrapped[5]);
		ev(wrapped[0].replace(/\s*\n\s*/, ' '));
	}
	for (const l of lines(text)) {
		let m = /noticed that process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)(?: \(([^)]+)\))?/.exec(l);
		if (m) {
			info.crashed = true;
			if (info.rank === null) { info.rank = Number(m[1]); }
			setPid(Number(m[2]));
			setSignal(Number(m[4]), m[5]);
			ev(l);
			continue;
		}
		m = /^\[([^\]:]+):(\d+)\] Signal: ([^(]+?) \((\d+)\)/.exec(l);
		if (m) { info.crashed = true; setPid(Number(m[2])); setSignal(Number(m[4]), m[3]); ev(l); continue; }
		m = /^\[([^\]:]+):(\d+)\] (Signal code|Failing at address): /.exec(l);
		if (m) { ev(l); continue; }
		// UCX pads the pid: "[vm:2123 :0:2123] Caught signal 11 (Segmentation fault: invalid permissions …)".
		m = /\[([^\]:]+):(\d+)\s*:\d+:\d+\] Caught signal (\d+) \(([^:)]+)/.exec(l);
		if (m) { info.crashed = true; setPid(Number(m[2])); setSignal(Number(m[3]), m[4]); ev(l); continue; }
		// Slurm's srun: "srun: error: host-b: task 1: Segmentation fault" (the task id is the MPI rank; "Terminated" is
		// what -K1 did to the others, "Exited with exit code N" a normal failure).
		m = /^srun: error: (\S+): task (\d+): (.+?)(?: \(core dumped\))?$/.exec(l);
		if (m && !/^(Terminated|Exited with exit code \d+|Killed)$/.test(m[3])) {
			const n = Number(Object.entries(SIGNAL_NAMES).find(([, name]) => name === m![3])?.[0] ?? NaN);
			info.crashed = true;
			info.rank = Number(m[2]);
			if (Number.isInteger(n)) { setSignal(n, m[3]); } else if (info.signalName === null) { info.signalName = m[3]; }
			ev(l);
			continue;
		}
		if (/BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES/.test(l)) { info.crashed = true; badTermination = true; ev(l); continue; }
		// Hydra's lines are evidence; which rank they mean is read below (hydraCrash.ts: the block often names a rank
		// Hydra ended itself, and its exit string's signal is an OR of all the ranks' statuses).
		if (badTermination && /PID \d+ RUNNING AT|EXIT CODE: \d+|KILLED BY SIGNAL|EXIT STRING: /.test(l)) { ev(l); continue; }
		if (/exited on signal|terminated with signal|killed by signal/i.test(l)) { ev(l); }
	}
	if (badTermination) {
		const h = readHydraCrash(lines(text), pids);
		for (const l of h.evidence) { ev(l); }
		if (info.rank === null && info.pid === null) {
			info.rank = h.rank;
			info.pid = h.pid;
			info.note = h.note;
		}
		if (info.signal === null && h.signal !== null) { setSignal(h.signal); }
	}
	// A process that died of SIGPIPE before any rank line wrote into a pipe whose reader was gone: the consequence of
	// some other failure, and no rank of the program had got through MPI_Init. PRRTE (Open MPI 5.0.7) reports an
	// executable built for another architecture exactly so: "prterun noticed that process rank 0 … exited on signal 13
	// (Broken pipe)", exit 141, no other line (test-fixtures/repro/launch/ompi5-launch-wrongarch). Not a crash then.
	if (info.crashed && seen.size > 0 && [...seen].every(n => n === SIGPIPE) && pids.size === 0) {
		Object.assign(info, { crashed: false, signal: null, signalName: null, rank: null, pid: null });
	}
	// mpirun's exit status 128 + S alone counts as signal S, but not where the launcher said it could not start the
	// program (Open MPI then exits 131 / 132: no SIGQUIT / SIGILL of any rank), nor for S = SIGPIPE, which a process
	// gets when the reader of its output is gone, after some other failure (Hydra exited 141 with no output at all in
	// 1 of 6 launches of a missing program): both real captures in test-fixtures/repro/launch.
	if (!info.crashed && exitCode !== null && exitCode > 128 && exitCode < 160 && exitCode - 128 !== SIGPIPE && detectLaunchFailure(stdout, stderr) === null) {
		info.crashed = true;
		setSignal(exitCode - 128);
		info.evidence.push(`mpirun exited with status ${exitCode} (128 + signal ${exitCode - 128})${pids.size === 0 ? '; no rank line was seen, so which process it was the output does not say' : ''}`);
	}
	if (!info.crashed && signal && signal !== 'SIGTERM' && signal !== 'SIGKILL') {
		info.crashed = true;
		info.signalName = signal;
		info.evidence.push(`mpirun itself was killed by ${signal}`);
	}
	return info;
}

/** Lines that explain a failure: errors, warnings, CUDA IPC messages, MPI error strings. */
export function interestingLines(text: string): string[] {
	const out: string[] = [];
	const re = /cuIpc|cuda_ipc|cuMem|CUDA|MPI_ERR|error|failed|UCX\s+(ERROR|WARN)|not available|No components|Segmentation|signal|abort/i;
	for (const l of lines(text)) {
		if (isFrameLine(l) || l.includes(RANK_LINE_MARKER) || l.startsWith('{')) { continue; }
		if (/has bad prefix|rdma_create_event_channel|failed to open CM on component rdmacm/.test(l)) { continue; }  // harmless noise
		if (re.test(l)) { out.push(cleanLine(l.trim())); if (out.length >= MAX_EVIDENCE_LINES) { break; } }
	}
	return out;
}

/** Launcher chatter that says nothing of a failure: the verbose component listing (btl_base_verbose, which the map
 * turns on), a btl's parameter line ("btl: smcuda: cuda_max_send_size=…"), PMIx's "bad prefix" notes, ORTE's lost
 * help messages. */
const NOT_A_CAUSE = /mca: ?base|mca: bml|select: init|components_(open|register)|ORTE_ERROR_LOG: .*show_help\.c|has bad prefix|pmix_mca_|^\s*or\s*$|\bbtl: \w+: \w+=/;

/**
 * The first lines of a failed run's output that say what failed, at most 3, one per text (the same line of several
 * ranks once): the first line of each Open MPI help block ("At least one pair of MPI processes are unable to reach
 * each other for"), its "BTLs attempted:" field, and the lines interestingLines keeps (errors, MPI_ERR, UCX errors).
 * Seen on the H100: `--memory host` under `--mca btl smcuda,self` gave exit 14 and "BTLs attempted: self".
 */
export function failureLines(text: string): string[] {
	const all = text.split(/\r?\n/);
	const out: string[] = [];
	const seen = new Set<string>();
	const add = (l: string): void => {
		const c = cleanLine(l.trim());
		const key = c.replace(/^\[[^\]]*\]\s*/, '');
		if (c.length === 0 || seen.has(key)) { return; }
		seen.add(key);
		out.push(c);
	};
	let inBlock = false;
	let first = false;
	for (const l of all) {
		if (out.length >= 3) { break; }
		// Open MPI's help blocks sit between lines of dashes: only their first line and the attempted-transports field.
		if (/^\s*-{10,}\s*$/.test(l)) { inBlock = !inBlock; first = inBlock; continue; }
		if (inBlock) {
			if (first && /\S/.test(l)) { add(l); first = false; } else if (/^\s*BTLs attempted:/.test(l)) { add(l); }
			continue;
		}
		if (!NOT_A_CAUSE.test(l) && interestingLines(l).length > 0) { add(l); }
	}
	return out;
}
