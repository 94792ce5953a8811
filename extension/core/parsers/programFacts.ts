/**
 * Parsers for what is collected about the user's program (collect/programLinks.ts: `gpumpi-doctor guard`, and
 * `inspect --program`) and about mpi4py (`inspect`, and the guard for a Python program):
 * - `ldd OBJECT` (raw `ldd:<object>`): the shared libraries the loader resolves for it, the whole closure (a library a
 *   library needs included), as the loader on that host would find them;
 * - `program` (internal): which program the command runs and what kind (an ELF program, a Python or Julia script);
 * - `script:<path>`: the lines of a Python / Julia script that set a framework's allocator or mpi4py's thread level
 *   (kept with their line numbers: `N:text`);
 * - `mpi4py`: the mpi4py probe (`python3 -c …`, collect/mpi4pyProbe.ts): `key=value` lines;
 * - `guard_ranks` (internal): one line per guarded rank: the pml it ran with and the buffer classes it passed to MPI.
 * Pure, never throw; a line that is not of the form expected is skipped.
 */
import type { GuardRankFacts, LddLibrary, Located, Mpi4pyFacts, ProgramFacts, ProgramKind, ScriptLine } from '../facts';
import { evidence, lineEvidence, splitLines } from './text';

/** Parse `ldd` output: `\tlibx.so.1 => /path/libx.so.1 (0x…)`, `\tlibx.so => not found`, `\t/lib64/ld-linux… (0x…)`. */
export function parseLdd(text: string, source: string): LddLibrary[] {
	const out: LddLibrary[] = [];
	for (const l of splitLines(text)) {
		const m = /^\s*(\S+)\s+=>\s+(not found|\S+)/.exec(l.text);
		if (m) { out.push({ soname: m[1], path: m[2] === 'not found' ? null : m[2], evidence: lineEvidence(source, l) }); continue; }
		const p = /^\s*(\/\S+)\s+\(0x[0-9a-f]+\)\s*$/.exec(l.text);
		if (p) { out.push({ soname: p[1].replace(/^.*\//, ''), path: p[1], evidence: lineEvidence(source, l) }); }
	}
	return out;
}

/** Parse the internal `program` output (`program=`, `kind=`, `script=` lines). */
export function parseProgram(text: string, source = 'program'): ProgramFacts | null {
	let path: Located<string> | null = null;
	let kind: ProgramKind = 'other';
	let script: Located<string> | null = null;
	for (const l of splitLines(text)) {
		const m = /^(program|kind|script)=(.*)$/.exec(l.text);
		if (!m || m[2] === '') { continue; }
		if (m[1] === 'program') { path = { value: m[2], evidence: lineEvidence(source, l) }; }
		else if (m[1] === 'kind' && /^(elf|python|julia|other)$/.test(m[2])) { kind = m[2] as ProgramKind; }
		else if (m[1] === 'script') { script = { value: m[2], evidence: lineEvidence(source, l) }; }
	}
	return path ? { path, kind, script } : null;
}

/** The interpreter a program path is, by its base name (python, python3, python3.12; julia), else null. */
export function interpreterKind(program: string): 'python' | 'julia' | null {
	const base = program.replace(/^.*\//, '');
	if (/^python(\d+(\.\d+)?)?$/.test(base)) { return 'python'; }
	if (/^julia(-\d+(\.\d+)*)?$/.test(base)) { return 'julia'; }
	return null;
}

/**
 * Lines of a Python or Julia script that matter to the rules: allocator settings of PyTorch, CuPy, CUDA.jl, and
 * mpi4py's rc options. Comment lines are kept out (a commented-out setting does nothing).
 */
export const SCRIPT_LINE = /PYTORCH_(?:CUDA_)?ALLOC_CONF|expandable_segments|cudaMallocAsync|_set_allocator_settings|MemoryAsyncPool|malloc_async|JULIA_CUDA_MEMORY_POOL|mpi4py\.rc\.|MPI4PY_RC_/;

/** The script's matching lines as the collector keeps them: `N:text`, at most `max`. */
export function scriptLines(text: string, max = 200): string {
	const out: string[] = [];
	for (const l of splitLines(text)) {
		const t = l.text.trim();
		if (t.startsWith('#') || !SCRIPT_LINE.test(l.text)) { continue; }
		out.push(`${l.lineNo}:${l.text}`);
		if (out.length >= max) { break; }
	}
	return out.join('\n');
}

/** Parse a `script:<path>` output (`N:text` lines) back into lines with evidence at the script's own line numbers. */
export function parseScriptLines(text: string, source: string): ScriptLine[] {
	const out: ScriptLine[] = [];
	for (const l of splitLines(text)) {
		const m = /^(\d+):(.*)$/.exec(l.text);
		if (m) { out.push({ text: m[2], evidence: evidence(source, m[2], Number(m[1])) }); }
	}
	return out;
}

/** Parse the probe's `key=value` lines. */
export function parseMpi4pyProbe(text: string, source = 'mpi4py'): Mpi4pyFacts {
	const f: Mpi4pyFacts = { python: '', version: null, rcThreadLevel: null, rcThreads: null, mpiModule: null, libraryVersion: null, config: null };
	for (const l of splitLines(text)) {
		const m = /^([a-z0-9_.]+)=(.*)$/.exec(l.text);
		if (!m) { continue; }
		// eslint-disable-next-line no-control-regex
		const v = { value: m[2].replace(/\u0000/g, '').trim(), evidence: lineEvidence(source, l) };
		switch (m[1]) {
			case 'python': f.python = v.value; break;
			case 'mpi4py': if (v.value !== '' && v.value !== 'none') { f.version = v; } break;
			case 'rc.thread_level': f.rcThreadLevel = v; break;
			case 'rc.threads': f.rcThreads = v; break;
			case 'mpi_module': if (v.value !== '') { f.mpiModule = v; } break;
			case 'library_version': if (v.value !== '') { f.libraryVersion = v; } break;
			case 'config': f.config = v; break;
			default: break;
		}
	}
	return f;
}

/** Parse `rank=0 pml=ob1 device=12 pool=0 vmm=3 …` lines. */
export function parseGuardRanks(text: string, source = 'guard_ranks'): GuardRankFacts[] {
	const out: GuardRankFacts[] = [];
	for (const l of splitLines(text)) {
		const kv = new Map([...l.text.matchAll(/([a-z-]+)=(\S*)/g)].map((m) => [m[1], m[2]] as const));
		const rank = Number(kv.get('rank'));
		if (!Number.isInteger(rank) || rank < 0) { continue; }
		const buffers: Record<string, number> = {};
		for (const [k, v] of kv) { if (k !== 'rank' && k !== 'pml' && /^\d+$/.test(v)) { buffers[k] = Number(v); } }
		const pml = kv.get('pml');
		out.push({ rank, pml: pml && pml !== '-' ? pml : null, buffers, evidence: lineEvidence(source, l) });
	}
	return out;
}
