/**
 * Which rank failed, read from MPICH Hydra's crash output — and where that output cannot tell, saying so.
 *
 * What Hydra prints (MPICH 4.0.2, 8 real runs in test-fixtures/repro/mpich-hydra-*, README there):
 * - a "BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES" block naming ONE process ("PID P RUNNING AT h",
 *   "EXIT CODE: C"; newer Hydra: "RANK R PID P …" and "KILLED BY SIGNAL: S (Name)", one block per process). When one
 *   rank fails, Hydra SIGKILLs the others, so they end with code 9 too; the block often names one of those (rank 0 or
 *   rank 1 seen while rank 1, 2 or 3 failed), and a rank SIGKILLed from outside ends with the same 9 as the ones Hydra
 *   ended: a block of code 9 cannot tell the failed rank from the cleaned-up ones.
 * - "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Name (signal S)", where S is the BITWISE OR of every process's
 *   wait status (mpiexec.c: `exit_status |= proxy->exit_status[i]`): rank 3's abort (6) with the others' cleanup 9
 *   reads "Terminated (signal 15)" — no process got signal 15. S is one process's signal only where it is the code of
 *   a block.
 * Evidence that does tell, in order: a line of the failed process itself (UCX's "Caught signal" with its pid: read by
 * detectCrash before this), the engine's own "gpumpi repro: rank R now stores through address 0x10" / "now calls
 * abort()" (its --inject test hooks), UCX on a survivor finding a peer gone ("process_vm_readv(pid=P …) returned -1:
 * No such process": P ended first), a block whose code is not Hydra's cleanup 9.
 */

/** One BAD TERMINATION block. */
interface HydraBlock { pid: number | null; rank: number | null; code: number | null; killedBy: number | null }

/** What Hydra's output says about the failed rank. */
export interface HydraCrash {
	/** A BAD TERMINATION block was seen. */
	seen: boolean;
	rank: number | null;
	pid: number | null;
	signal: number | null;
	/** Where the rank (or the signal) cannot be told: why, e.g. "rank unknown: Hydra reported rank 1 (pid 20549) ended with code 9, …". */
	note: string | null;
	evidence: string[];
}

/** Hydra ends the ranks it cleans up with SIGKILL. */
const CLEANUP_SIGNAL = 9;

/** Read Hydra's blocks, exit string and the telling lines around them; `pids` maps pid → rank (the engine's rank lines). */
export function readHydraCrash(lines: readonly string[], pids: ReadonlyMap<number, { rank: number }>): HydraCrash {
	const out: HydraCrash = { seen: false, rank: null, pid: null, signal: null, note: null, evidence: [] };
	const blocks: HydraBlock[] = [];
	let orSignal: number | null = null;
	let announced: { rank: number; signal: number; line: string } | null = null;
	let gone: { pid: number; line: string } | null = null;
	for (const l of lines) {
		if (/BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES/.test(l)) { blocks.push({ pid: null, rank: null, code: null, killedBy: null }); continue; }
		const b = blocks[blocks.length - 1];
		let m: RegExpExecArray | null;
		if (b && (m = /^=\s+(?:RANK (\d+) )?PID (\d+) RUNNING AT (\S+)/.exec(l))) { b.pid = Number(m[2]); b.rank = m[1] !== undefined ? Number(m[1]) : null; continue; }
		if (b && (m = /^=\s+EXIT CODE: (\d+)/.exec(l))) { b.code = Number(m[1]); continue; }
		if (b && (m = /^=\s+KILLED BY SIGNAL: (\d+)/.exec(l))) { b.killedBy = Number(m[1]); continue; }
		if ((m = /EXIT STRING: .+ \(signal (\d+)\)/.exec(l))) { orSignal = Number(m[1]); continue; }
		if (!announced && (m = /gpumpi repro: rank (\d+) now (stores through address|calls abort\(\))/.exec(l))) {
			announced = { rank: Number(m[1]), signal: m[2].startsWith('calls abort') ? 6 : 11, line: l.trim() };
			continue;
		}
		if (!gone && (m = /process_vm_readv\(pid=(\d+)\b.*No such process/.exec(l))) { gone = { pid: Number(m[1]), line: l.trim() }; }
	}
	if (blocks.length === 0) { return out; }
	out.seen = true;
	const rankOf = (b: HydraBlock): number | null => b.rank ?? (b.pid !== null ? pids.get(b.pid)?.rank ?? null : null);
	const status = (b: HydraBlock): number | null => b.killedBy ?? b.code;
	const pidOfRank = (r: number): number | null => { for (const [p, v] of pids) { if (v.rank === r) { return p; } } return null; };
	// The signal Hydra's exit string names, where it is one process's (a block's code), not an OR of several.
	const exitStringIsOne = orSignal !== null && blocks.some(b => status(b) === orSignal);
	if (announced) {
		out.rank = announced.rank;
		out.pid = pidOfRank(announced.rank);
		out.signal = announced.signal;
		out.evidence.push(announced.line);
		return out;
	}
	if (gone && pids.has(gone.pid)) {
		out.rank = pids.get(gone.pid)!.rank;
		out.pid = gone.pid;
		out.note = `signal unknown: rank ${out.rank} ended first (another rank's UCX found it gone); Hydra reported ${described(blocks, rankOf, status)}`;
		out.evidence.push(gone.line);
		return out;
	}
	const failed = blocks.filter(b => status(b) !== null && status(b) !== CLEANUP_SIGNAL);
	if (failed.length === 1) {
		const b = failed[0];
		out.rank = rankOf(b);
		out.pid = b.pid;
		// "EXIT CODE: 11" of a process that got SIGSEGV: the signal, when the exit string agrees (it ORs it in).
		const s = status(b)!;
		if (b.killedBy !== null || (orSignal !== null && (orSignal & s) === s)) { out.signal = s; } else { out.note = `exit code ${s}`; }
		return out;
	}
	out.note = `rank unknown: Hydra reported ${described(blocks, rankOf, status)}, and it ends the ranks it cleans up with signal ${CLEANUP_SIGNAL} itself`;
	const statuses = new Set(blocks.map(status));
	if (orSignal !== null && exitStringIsOne) { out.signal = orSignal; }
	// Newer Hydra's per-process "KILLED BY SIGNAL: 9", the same in every block: that is every process's signal.
	else if (orSignal === null && statuses.size === 1 && blocks.every(b => b.killedBy !== null)) { out.signal = blocks[0].killedBy; }
	else if (orSignal !== null) {
		out.note += `; its "signal ${orSignal}" is the bitwise OR of all the ranks' exit statuses, not one rank's signal`;
	}
	return out;
}

/** "rank 1 (pid 20549) ended with code 9" / "ranks 0 and 2 ended (codes 9, 9)". */
function described(blocks: readonly HydraBlock[], rankOf: (b: HydraBlock) => number | null, status: (b: HydraBlock) => number | null): string {
	const one = (b: HydraBlock): string => {
		const r = rankOf(b);
		return `${r !== null ? `rank ${r}` : 'a process'}${b.pid !== null ? ` (pid ${b.pid})` : ''}`;
	};
	if (blocks.length === 1) { return `${one(blocks[0])} ended with code ${status(blocks[0]) ?? '?'}`; }
	const names = blocks.map(one);
	return `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]} ended (codes ${blocks.map(b => status(b) ?? '?').join(', ')})`;
}
