/**
 * Frameworks whose allocator hands MPI GPU memory that legacy CUDA IPC cannot export (issue 35): PyTorch's expandable
 * segments (VMM: cuMemCreate + cuMemMap) and its cudaMallocAsync backend (a stream-ordered pool), CUDA.jl's default
 * memory pool, CuPy's MemoryAsyncPool, Kokkos built with Kokkos_ENABLE_IMPL_CUDA_MALLOC_ASYNC (the default of 4.2.00
 * to 4.4.x). What is read, each with its line: the ranks' environment (engine ranks first, then the collector's or, under
 * the guard, the environment the ranks get), the program's script lines (collect/programLinks.ts), the libraries the
 * program loads (ldd), and under the guard the buffer classes each rank really passed to MPI. What the stack does with
 * such memory is read as gpu-memory-not-legacy-ipc reads it (ipcMemoryRules.ts nonLegacyPath), with the engine's
 * probe of that allocation kind as evidence.
 */
import type { Evidence, Finding, Fix } from '../../shared/report';
import type { Facts } from '../facts';
import { envSettings } from './helpers';
import { nonLegacyPath, probedKind } from './ipcMemoryRules';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';

/** What one setting makes the allocator hand out. */
type Kind = 'pool' | 'vmm';
type Framework = 'PyTorch' | 'CUDA.jl' | 'CuPy' | 'Kokkos';

/** One setting seen, with where. */
interface AllocSetting { framework: Framework; kind: Kind; what: string; evidence: Evidence; note?: string; command?: string; inferred?: boolean }

/** The comma-separated parts of a PyTorch allocator config, commas inside a [list] kept; spaces dropped as torch does. */
function confParts(value: string): string[] {
	const out: string[] = [];
	let cur = '';
	let depth = 0;
	for (const ch of value.replace(/\s+/g, '')) {
		if (ch === '[') { depth++; } else if (ch === ']') { depth = Math.max(0, depth - 1); }
		if (ch === ',' && depth === 0) { out.push(cur); cur = ''; } else { cur += ch; }
	}
	out.push(cur);
	return out.filter((p) => p !== '');
}

/** `key:value` pairs of a PyTorch allocator config ("expandable_segments:True,max_split_size_mb:128"); spaces ignored as torch does. */
export function torchConf(value: string): Map<string, string> {
	const out = new Map<string, string>();
	for (const part of confParts(value)) {
		const i = part.indexOf(':');
		if (i > 0) { out.set(part.slice(0, i), part.slice(i + 1)); }
	}
	return out;
}

/** What a PyTorch config enables: VMM (expandable_segments:True), a pool (backend:cudaMallocAsync). */
function torchKinds(conf: Map<string, string>): Kind[] {
	const out: Kind[] = [];
	if (conf.get('expandable_segments') === 'True') { out.push('vmm'); }
	if (conf.get('backend') === 'cudaMallocAsync') { out.push('pool'); }
	return out;
}

/** The same config without the keys that give pool / VMM memory: the command that keeps the rest. */
function torchFixCommand(name: string, value: string): string {
	const keep = confParts(value).filter((p) => !/^expandable_segments:True$/.test(p) && !/^backend:cudaMallocAsync$/.test(p));
	return keep.length === 0 ? `unset ${name}` : `export ${name}=${keep.join(',')}`;
}

function torchFromEnv(facts: Facts): AllocSetting[] {
	const a = envSettings(facts, 'PYTORCH_ALLOC_CONF')[0];
	const c = envSettings(facts, 'PYTORCH_CUDA_ALLOC_CONF')[0];
	const aKinds = a ? torchKinds(torchConf(a.value)) : [];
	const cKinds = c ? torchKinds(torchConf(c.value)) : [];
	const out: AllocSetting[] = [];
	if (a) {
		const note = c ? (cKinds.length === 0 ? `PyTorch before 2.9 reads only PYTORCH_CUDA_ALLOC_CONF (${c.value}), which does not set it` : undefined)
			: 'PYTORCH_ALLOC_CONF is read by PyTorch 2.9 and later (older releases know only PYTORCH_CUDA_ALLOC_CONF); 2.9.1 ignored expandable_segments set this way for CUDA (pytorch/pytorch#183387)';
		out.push(...aKinds.map((kind): AllocSetting => ({ framework: 'PyTorch', kind, what: `PYTORCH_ALLOC_CONF=${a.value} (${a.origin})`, evidence: a.evidence, note, command: torchFixCommand('PYTORCH_ALLOC_CONF', a.value) })));
	}
	if (c) {
		const note = a ? `PyTorch 2.9 and later read PYTORCH_ALLOC_CONF (${a.value}) instead${aKinds.length === 0 ? ', which does not set it' : ''}` : undefined;
		out.push(...cKinds.filter((k) => !aKinds.includes(k)).map((kind): AllocSetting => ({ framework: 'PyTorch', kind, what: `PYTORCH_CUDA_ALLOC_CONF=${c.value} (${c.origin})`, evidence: c.evidence, note, command: torchFixCommand('PYTORCH_CUDA_ALLOC_CONF', c.value) })));
	}
	return out;
}

/** Settings in the program's script: PyTorch's config set in code, CuPy's async pool, CUDA.jl's pool variable. */
function fromScripts(facts: Facts): { settings: AllocSetting[]; juliaPoolOff: Evidence | null } {
	const settings: AllocSetting[] = [];
	let juliaPoolOff: Evidence | null = null;
	for (const s of facts.scripts) {
		for (const l of s.lines) {
			const t = l.text;
			const at = `line ${l.evidence.lineNo ?? '?'} of ${s.path}`;
			if (/PYTORCH_(CUDA_)?ALLOC_CONF|_set_allocator_settings|setAllocatorSettings/.test(t)) {
				if (/expandable_segments\s*:\s*True/.test(t)) { settings.push({ framework: 'PyTorch', kind: 'vmm', what: `expandable_segments:True set in the script (${at})`, evidence: l.evidence }); }
				if (/backend\s*:\s*cudaMallocAsync/.test(t)) { settings.push({ framework: 'PyTorch', kind: 'pool', what: `backend:cudaMallocAsync set in the script (${at})`, evidence: l.evidence }); }
			}
			if ((/set_allocator/.test(t) && /MemoryAsyncPool/.test(t)) || /cuda\.malloc_async\b/.test(t)) {
				settings.push({ framework: 'CuPy', kind: 'pool', what: `CuPy's stream-ordered MemoryAsyncPool set as the allocator (${at})`, evidence: l.evidence });
			}
			const jl = /JULIA_CUDA_MEMORY_POOL"?\]?\s*=\s*"(\w+)"/.exec(t);
			if (jl && jl[1] === 'none') { juliaPoolOff = l.evidence; }
			else if (jl && jl[1] === 'cuda') { settings.push({ framework: 'CUDA.jl', kind: 'pool', what: `JULIA_CUDA_MEMORY_POOL="cuda" set in the script (${at})`, evidence: l.evidence }); }
		}
	}
	return { settings, juliaPoolOff };
}

/** CUDA.jl: JULIA_CUDA_MEMORY_POOL=cuda, or a Julia program with the variable not "none" (the pool is CUDA.jl's default). */
function juliaSettings(facts: Facts, poolOffInScript: Evidence | null): AllocSetting[] {
	const v = envSettings(facts, 'JULIA_CUDA_MEMORY_POOL')[0];
	if (v && v.value.trim() === 'cuda') { return [{ framework: 'CUDA.jl', kind: 'pool', what: `JULIA_CUDA_MEMORY_POOL=cuda (${v.origin})`, evidence: v.evidence, command: 'export JULIA_CUDA_MEMORY_POOL=none' }]; }
	const p = facts.program;
	if (p?.kind !== 'julia' || poolOffInScript || (v && v.value.trim() !== '')) { return []; }
	return [{ framework: 'CUDA.jl', kind: 'pool', what: `a Julia program (${p.path.value}) with JULIA_CUDA_MEMORY_POOL unset: CUDA.jl's default is its stream-ordered pool`, evidence: p.path.evidence, command: 'export JULIA_CUDA_MEMORY_POOL=none', inferred: true }];
}

/** Kokkos 4.2.00–4.4.x (soname libkokkoscore.so.4.2–4.4) defaults to cudaMallocAsync for allocations of 40 kB and more. */
function kokkosSettings(facts: Facts): AllocSetting[] {
	for (const o of facts.programLibs) {
		const lib = o.libs.find((l) => /^libkokkoscore\.so\.4\.[234]$/.test(l.soname));
		if (lib) {
			return [{ framework: 'Kokkos', kind: 'pool', what: `${o.object} loads ${lib.soname} (Kokkos ${lib.soname.replace(/^libkokkoscore\.so\./, '')}, whose build default is Kokkos_ENABLE_IMPL_CUDA_MALLOC_ASYNC=ON)`, evidence: lib.evidence, inferred: true }];
		}
	}
	return [];
}

/** Pool / VMM / device buffers the guarded ranks passed to MPI (null outside the guard). */
function guardCounts(facts: Facts): { pool: number; vmm: number; device: number; evidence: Evidence[] } | null {
	const g = facts.guardRanks;
	if (!g || g.length === 0) { return null; }
	const sum = (k: string): number => g.reduce((n, r) => n + (r.buffers[k] ?? 0), 0);
	return { pool: sum('pool'), vmm: sum('vmm'), device: sum('device'), evidence: g.filter((r) => (r.buffers.pool ?? 0) + (r.buffers.vmm ?? 0) > 0).slice(0, 4).map((r) => r.evidence) };
}

const FIXES: Record<Framework, (s: AllocSetting[]) => Fix> = {
	PyTorch: (s) => ({
		text: `Leave ${s.some((x) => x.kind === 'vmm') ? 'expandable_segments' : ''}${s.some((x) => x.kind === 'vmm') && s.some((x) => x.kind === 'pool') ? ' and ' : ''}${s.some((x) => x.kind === 'pool') ? 'the cudaMallocAsync backend' : ''} out of the runs that hand tensors to MPI: PyTorch's default caching allocator takes cudaMalloc memory, which CUDA IPC exports (measured with the same program, docs/device-results.md). Or run it under \`gpumpi-doctor guard --mode fix\`, which sends such buffers through a cudaMalloc buffer; UCX 1.22 exports VMM memory that allows POSIX-FD handles (not pool memory).`,
		...(s.find((x) => x.command) ? { command: s.find((x) => x.command)?.command } : {}),
	}),
	'CUDA.jl': () => ({ text: 'Switch CUDA.jl\'s memory pool off before CUDA.jl is loaded (MPI.jl\'s known issues: the stream-ordered pool and legacy cuIpc* do not mix; it makes CUDA.jl\'s own allocations slower, MPI.jl#843), or run under `gpumpi-doctor guard --mode fix`.', command: 'export JULIA_CUDA_MEMORY_POOL=none' }),
	CuPy: () => ({ text: 'Allocate the arrays passed to MPI from CuPy\'s default MemoryPool (cudaMalloc), not from MemoryAsyncPool, or run under `gpumpi-doctor guard --mode fix`.' }),
	Kokkos: () => ({ text: 'Configure Kokkos with -DKokkos_ENABLE_IMPL_CUDA_MALLOC_ASYNC=OFF (the default from Kokkos 4.5.00, kokkos/kokkos#7353; LAMMPS sets it), or run under `gpumpi-doctor guard --mode fix`.' }),
};

const PROBE_KIND: Record<Kind, string> = { pool: 'pool-default', vmm: 'vmm-posix-fd' };

const frameworkAllocator: Rule = {
	id: 'framework-allocator-pool-vmm', severity: 'warning', title: 'A framework\'s allocator gives MPI GPU memory that legacy CUDA IPC cannot export',
	reads: ['env.PYTORCH_ALLOC_CONF', 'env.PYTORCH_CUDA_ALLOC_CONF', 'env.JULIA_CUDA_MEMORY_POOL', 'engine.ranks[].env', 'program (kind)', 'script:<path> (allocator lines)', 'ldd:<program> (libkokkoscore.so.4.x)', 'guard_ranks (pool / vmm buffers passed to MPI)', 'engine.ranks[].ipc_memory', 'ucx.version', 'ucx.transports', 'mpi.openmpi.builtWithCuda'],
	appliesTo: { ucx: ALL_VERSIONS, openmpi: ALL_VERSIONS, cuda: '>=11.2' },
	verifiedAgainst: [
		src(U.torchCudaNotes, 'PyTorch: PYTORCH_CUDA_ALLOC_CONF options backend (native, cudaMallocAsync: "CUDA\'s built-in asynchronous allocator") and expandable_segments (segments that grow by mapping more memory)'),
		src(U.torchPr149601, 'PyTorch: AcceleratorAllocatorConfig reads PYTORCH_ALLOC_CONF as the primary variable; PYTORCH_CUDA_ALLOC_CONF is still supported for backward compatibility, with lower priority'),
		src(U.torchPr167659, 'PyTorch: documents PYTORCH_ALLOC_CONF, with PYTORCH_CUDA_ALLOC_CONF as its alias (a deprecation warning when the old name is used)'),
		src(U.torchIssue183387, 'PyTorch 2.9.1 ignored expandable_segments:True set through PYTORCH_ALLOC_CONF for CUDA (only PYTORCH_CUDA_ALLOC_CONF enabled it); 2.11.0 reads it'),
		src(U.ucxIssue11548, 'UCX: PyTorch expandable segments (POSIX-FD-only VMM memory) became NO_IPC and fell from ~200 GB/s to ~0.3 GB/s (software emulation over tcp), data correct'),
		src(U.devForeign, 'the same PyTorch program (torch_send.py, mpi4py) with expandable_segments:True and with the default allocator, under pml ucx on the testbed (rows torch-vmm and torch-default)'),
		src(U.kokkosOptions44, 'Kokkos 4.4.01: Kokkos_ENABLE_IMPL_CUDA_MALLOC_ASYNC defaults to ON', 'KOKKOS_ENABLE_OPTION(IMPL_CUDA_MALLOC_ASYNC ON  "Whether to enable CudaMallocAsync (requires CUDA Toolkit 11.2)")'),
		src(U.kokkosCudaSpace44, 'Kokkos 4.4.01: CudaSpace allocations take cudaMallocAsync when the option is on (from memory_threshold_g = 40000 bytes)', 'error_code = cudaMallocAsync(&ptr, arg_alloc_size, stream);'),
		src(U.kokkosOptions45, 'Kokkos 4.5.00: the default is OFF again', 'kokkos_enable_option(IMPL_CUDA_MALLOC_ASYNC OFF "Whether to enable CudaMallocAsync (requires CUDA Toolkit 11.2)")'),
		src(U.kokkosPr7353, 'Kokkos: "By default, do not use cudaMallocAsync": MPI libraries on old UCX, and CUDA IPC does not work with the option on'),
		src(U.cudaJlMemory597, 'CUDA.jl 5.9.7: the stream-ordered memory pool is used unless JULIA_CUDA_MEMORY_POOL is set to something other than "cuda"', 'get(ENV, "JULIA_CUDA_MEMORY_POOL", "cuda") == "cuda"'),
		src(U.mpiJlKnownIssues, 'MPI.jl known issues: cuIpcGetMemHandle failures come from legacy cuIpc* APIs, "incompatible with stream-ordered allocator, now default in CUDA.jl"; export JULIA_CUDA_MEMORY_POOL=none', 'which are incompatible with stream-ordered allocator, now default in CUDA.jl'),
		src(U.mpiJlIssue843, 'MPI.jl (open, 2024): whether JULIA_CUDA_MEMORY_POOL=none is still needed: newer UCX handles the stream-ordered allocator, and switching the pool off is costly for CUDA.jl\'s own allocations'),
		src(U.cupyMemory1420, 'CuPy 14.2.0: a stream-ordered pool is opted into with set_allocator(MemoryAsyncPool().malloc); the default MemoryPool allocates with cudaMalloc', 'cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc)'),
		src(U.devIpcMem, 'the engine probe on the H200: pool and VMM memory (POSIX-FD ones included) not legacy-IPC capable, cuIpcGetMemHandle CUDA_ERROR_INVALID_VALUE'),
	],
	fixSummary: 'Keep pool / VMM allocators away from the buffers passed to MPI: PyTorch without expandable_segments:True / backend:cudaMallocAsync (PYTORCH_CUDA_ALLOC_CONF, PYTORCH_ALLOC_CONF), CUDA.jl with JULIA_CUDA_MEMORY_POOL=none, CuPy\'s default MemoryPool, Kokkos configured with -DKokkos_ENABLE_IMPL_CUDA_MALLOC_ASYNC=OFF; or run the program under gpumpi-doctor guard --mode fix.',
	evaluate(facts) {
		const script = fromScripts(facts);
		const all = [...torchFromEnv(facts), ...script.settings, ...juliaSettings(facts, script.juliaPoolOff), ...kokkosSettings(facts)];
		if (all.length === 0) { return []; }
		const g = guardCounts(facts);
		const out: Finding[] = [];
		for (const fw of ['PyTorch', 'CUDA.jl', 'CuPy', 'Kokkos'] as Framework[]) {
			const s = all.filter((x) => x.framework === fw);
			if (s.length === 0) { continue; }
			const kinds = [...new Set(s.map((x) => x.kind))];
			const seen = g ? kinds.filter((k) => g[k] > 0) : [];
			const paths = kinds.map((k) => ({ k, p: nonLegacyPath(facts, k, k === 'vmm'), probe: probedKind(facts, PROBE_KIND[k]) }));
			const legacyOnly = paths.some((x) => x.p?.legacyOnly);
			const kindText = (k: Kind): string => (k === 'vmm' ? 'VMM memory (cuMemCreate + cuMemMap)' : 'stream-ordered pool memory (cudaMallocAsync)');
			const stack = paths.filter((x) => x.p).map((x) => `for its ${x.k} memory: ${x.p?.text}`).join('. ');
			const probe = paths.filter((x) => x.probe).map((x) => `the engine's probe on rank memory of kind ${x.probe?.kind}: legacy-IPC capable ${x.probe?.legacyIpcCapable === false ? 'no' : x.probe?.legacyIpcCapable ? 'yes' : '?'}, cuIpcGetMemHandle ${x.probe?.ipcGetMemHandle}`).join('; ');
			const guardText = g === null ? '' : seen.length > 0
				? ` Under the guard the ranks passed ${seen.map((k) => `${g[k]} ${k} buffer${g[k] === 1 ? '' : 's'}`).join(' and ')} to MPI.`
				: ` Under the guard the ranks passed no ${kinds.join(' / ')} buffer to MPI${g.device > 0 ? ` (${g.device} device buffers: cudaMalloc memory)` : ''}: the setting did not reach the buffers MPI saw.`;
			const notes = s.map((x) => x.note).filter((n): n is string => n !== undefined);
			const severity = g !== null ? (seen.length > 0 ? 'warning' : 'info') : s.every((x) => x.inferred) ? 'info' : legacyOnly ? 'warning' : 'info';
			out.push(finding(this,
				`${fw}: ${s.map((x) => x.what).join('; ')}. ${fw === 'Kokkos' ? 'If it was built with that default, its' : 'Its'} allocator then hands out ${kinds.map(kindText).join(' and ')}, which legacy CUDA IPC (cuIpcGetMemHandle) cannot export${probe ? ` (${probe})` : ''}.${stack ? ` What this stack does with it: ${stack}.` : facts.ucx?.devicesListed || facts.mpi.openmpi ? ' Nothing read here moves GPU memory by CUDA IPC (no cuda_ipc in ucx_info -d, no Open MPI built with CUDA), so no IPC path is lost on this stack.' : ' Whether this stack relies on legacy CUDA IPC is not known from what was read (no ucx_info -d / ompi_info here).'}${guardText}${notes.length > 0 ? ` Note: ${notes.join('; ')}.` : ''} Between ranks of one node such buffers do not take the CUDA IPC path: much slower, or failing where the stack insists on cuIpcGetMemHandle.`,
				ev(...s.map((x) => x.evidence), ...paths.map((x) => x.probe?.evidence), ...paths.flatMap((x) => x.p?.evidence ?? []), ...(g?.evidence ?? []))
					.filter((e, i, list) => list.findIndex((y) => y.source === e.source && y.line === e.line) === i),
				FIXES[fw](s), severity));
		}
		return out;
	},
};

export const allocatorRules: readonly Rule[] = [frameworkAllocator];
