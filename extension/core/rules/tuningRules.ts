/**
 * Rules about settings that change how GPU buffers travel: Open MPI's smcuda IPC and CUDA-support parameters,
 * UCX's memory-type / IPC caches, rendezvous settings and cuda_copy bandwidth model, and MPICH builds without GPU.
 */
import type { Evidence, Finding } from '../../shared/report';
import type { Facts } from '../facts';
import { mcaParam } from '../parsers/ompiInfo';
import { versionParts } from '../parsers/text';
import { compareVersions, envSettings, isOpenMpi, mcaSettings, ucxTransports, visibleGpus } from './helpers';
import { ev, finding, Rule } from './rule';

/** One place an MCA parameter gets a value. */
interface McaValue { value: string; origin: string; evidence: Evidence }

/** Every value of the named MCA parameters: files, env, engine ranks, the engine's mpirun line, ompi_info (non-default). */
function mcaValues(facts: Facts, names: readonly string[]): McaValue[] {
	const out: McaValue[] = mcaSettings(facts).filter((s) => names.includes(s.name)).map((s) => ({ value: s.value, origin: s.origin, evidence: s.evidence }));
	const argv = facts.engine?.command ?? [];
	for (let i = 0; i < argv.length - 2; i++) {
		if ((argv[i] === '--mca' || argv[i] === '-mca') && names.includes(argv[i + 1])) {
			out.push({ value: argv[i + 2], origin: 'engine command line', evidence: { source: 'engine', line: `command: ${argv.join(' ')}` } });
		}
	}
	for (const n of names) {
		const p = mcaParam(facts.mpi.openmpi, n);
		if (p && p.source !== '' && p.source !== 'default') { out.push({ value: p.value, origin: `ompi_info (${p.source})`, evidence: p.evidence }); }
	}
	return out;
}

const isOff = (v: string): boolean => /^\s*(0|false|no|off|disabled?)\s*$/i.test(v.replace(/^"|"$/g, ''));

const smcudaIpcOff: Rule = {
	id: 'ompi-smcuda-cuda-ipc-disabled', severity: 'warning', title: 'smcuda\'s CUDA IPC is switched off: Open MPI stages GPU messages through host memory',
	reads: ['mpi.paramFiles[].settings', 'env.OMPI_MCA_btl_smcuda_use_cuda_ipc', 'engine.command', 'mpi.openmpi.params.btl_smcuda_use_cuda_ipc'],
	source: 'observed.md B (H200 testbed, 1 GiB, ob1: smcuda with CUDA IPC 1995 GB/s; --mca btl_smcuda_use_cuda_ipc 0 4.26 GB/s, slower than manual staging 7.67 GB/s); gpu-mpi-sources.md §1 (O#12849)',
	fixSummary: 'Remove btl_smcuda_use_cuda_ipc=0 unless it works around a known problem (IPC-cache leak O#12849, imported pointers); if it must stay, stage manually through persistent pinned buffers.',
	evaluate(facts) {
		if (!isOpenMpi(facts) && !facts.mpi.openmpi) { return []; }
		const off = mcaValues(facts, ['btl_smcuda_use_cuda_ipc', 'btl_smcuda_use_cuda_ipc_same_gpu']).filter((v) => isOff(v.value));
		if (off.length === 0) { return []; }
		const v = off[0];
		return [finding(this, `btl_smcuda_use_cuda_ipc is ${v.value} (${v.origin}): GPU-to-GPU messages inside a node no longer use CUDA IPC; smcuda copies them through host shared memory. On the H200 testbed this cut 1 GiB transfers from 1995 GB/s to 4.26 GB/s, below what manual staging with two 16 MiB pinned buffers reached (7.67 GB/s).`,
			off.slice(0, 3).map((x) => x.evidence), { text: 'Drop the setting (CUDA IPC is the default), or if it works around a problem, stage large messages yourself.', command: 'mpirun --mca btl_smcuda_use_cuda_ipc 1 ...' })];
	},
};

const cudaSupportOff: Rule = {
	id: 'ompi-cuda-support-param-off', severity: 'warning', title: 'Open MPI is built with CUDA but opal_cuda_support is off',
	reads: ['mpi.openmpi.builtWithCuda', 'mpi.openmpi.params.opal_cuda_support', 'mpi.paramFiles[].settings', 'env.OMPI_MCA_opal_cuda_support', 'mpi.version'],
	source: 'gpu-mpi-sources.md §3 (O#12831: conda-forge Open MPI needs OMPI_MCA_opal_cuda_support=true); Open MPI docs tuning-apps/networking/cuda.rst; ompi_info: "opal_cuda_support … Whether CUDA GPU buffer support is enabled or not" (synonym mpi_cuda_support)',
	fixSummary: 'export OMPI_MCA_opal_cuda_support=true (or --mca opal_cuda_support 1); remove opal_cuda_support = 0 from the MCA parameter file.',
	evaluate(facts) {
		const o = facts.mpi.openmpi;
		if (!o || o.builtWithCuda?.value !== true) { return []; }
		const names = ['opal_cuda_support', 'mpi_cuda_support'];
		const settings = mcaValues(facts, names);
		const p = mcaParam(o, 'opal_cuda_support');
		const off = settings.filter((s) => isOff(s.value));
		const defaultOff = p && isOff(p.value) && (p.source === 'default' || p.source === '') ? p : undefined;
		if (off.length === 0 && !defaultOff) { return []; }
		// A later (higher-precedence) explicit "on" wins over a file's "off".
		const last = settings[settings.length - 1];
		if (last && !isOff(last.value) && off.length > 0 && settings.indexOf(last) > settings.indexOf(off[off.length - 1])) { return []; }
		const major = versionParts(facts.mpi.version?.value ?? o.version?.value ?? '')[0];
		const where = off[0] ? `${off[0].origin} sets it to ${off[0].value}` : 'its default is false in this build';
		return [finding(this, `Open MPI${facts.mpi.version ? ' ' + facts.mpi.version.value : ''} was built with CUDA, but opal_cuda_support is off (${where}), so the CUDA path is not used and device buffers are treated as host memory. Conda-forge builds ship it off on purpose (O#12831).${major !== undefined && major >= 5 ? ' In Open MPI 5 the CUDA work is done by the accelerator framework, which this switch gates.' : ''}`,
			ev(off[0]?.evidence, defaultOff?.evidence, o.builtWithCuda.evidence), { text: 'Turn it on for GPU jobs.', command: 'export OMPI_MCA_opal_cuda_support=true' })];
	},
};

const CACHE_VARS: Record<string, { def: string; explain: (v: string) => string; warn: (v: string) => boolean }> = {
	UCX_MEMTYPE_CACHE: {
		def: 'try',
		explain: (v) => /^(n|no|0|off)$/i.test(v)
			? 'UCX asks CUDA for the memory type of every buffer instead of using its cache: a little slower for small messages, but GPU buffers allocated past UCX\'s hooks are no longer mistaken for host memory (the documented fix for that, UCX FAQ; O#6001).'
			: 'UCX trusts its memory-type cache, filled by intercepting CUDA allocations; buffers allocated where UCX cannot hook them (statically linked cudart, memory pools, memory imported from another process) may be taken for host memory and crash. The default "try" falls back when hooks are missing.',
		warn: (v) => /^(y|yes|1|on)$/i.test(v),
	},
	UCX_CUDA_IPC_CACHE: {
		def: 'y',
		explain: (v) => /^(n|no|0|off)$/i.test(v)
			? 'cuda_ipc opens and closes the peer\'s IPC mapping for every transfer instead of caching it: slower for repeated transfers, but no growth of mapped memory (suggested in O#9051) and no stale mappings when buffers are freed and reallocated.'
			: 'cuda_ipc caches the mappings of peers\' buffers; memory mapped this way stays allocated until the cache drops it (O#9051, O#12849).',
		warn: () => false,
	},
};

const ucxCaches: Rule = {
	id: 'ucx-cache-settings', severity: 'info', title: 'UCX memory-type / CUDA IPC cache settings',
	reads: ['env.UCX_MEMTYPE_CACHE', 'env.UCX_CUDA_IPC_CACHE', 'engine.ranks[].env'],
	source: 'gpu-mpi-sources.md §1 (UCX_MEMTYPE_CACHE default try, UCX FAQ, O#6001; UCX_CUDA_IPC_CACHE default y, O#9051, O#12849); defaults as ucx_info -c prints them for UCX 1.13.1 (h200 testbed)',
	fixSummary: 'Keep the defaults unless working around a specific problem; UCX_MEMTYPE_CACHE=n when GPU buffers are taken for host memory, UCX_CUDA_IPC_CACHE=n when IPC mappings grow.',
	evaluate(facts) {
		const out: Finding[] = [];
		for (const [name, info] of Object.entries(CACHE_VARS)) {
			const s = envSettings(facts, name)[0];
			if (!s) { continue; }
			const v = s.value.trim();
			out.push(finding(this, `${name}=${v} (${s.origin}; default ${info.def}): ${info.explain(v)}`, [s.evidence],
				{ text: info.warn(v) ? 'Use the default (or n) unless every GPU allocation goes through cudaMalloc in a dynamically linked CUDA runtime.' : 'Keep it only while it fixes a problem you saw.', command: `unset ${name}` }, info.warn(v) ? 'warning' : 'info'));
		}
		return out;
	},
};

const RNDV_EXPLAIN: Record<string, string> = {
	UCX_RNDV_THRESH: 'message size from which UCX switches from eager copies to rendezvous (zero-copy or pipelined); default auto',
	UCX_RNDV_SCHEME: 'which rendezvous protocol is forced (get_zcopy, put_zcopy, auto); forcing a zero-copy scheme for GPU memory can rule out the staged pipeline, or fail where the transport cannot reach GPU memory; default auto',
	UCX_RNDV_FRAG_SIZE: 'fragment size of the staged pipeline per memory type; default host:512K,cuda:4M',
	UCX_RNDV_FRAG_ALLOC_COUNT: 'fragments allocated per pool chunk; the ucp_rndv_frags pool grows by that many fragments at a time and has no upper bound (U#11062); default host:128,cuda:128',
	UCX_RNDV_FRAG_MEM_TYPE: 'memory type of the staging fragments (host or cuda); default host on UCX 1.13',
	UCX_RNDV_FRAG_MEM_TYPES: 'memory types of the staging fragments; default host,cuda (U#10104)',
	UCX_RNDV_PIPELINE_SEND_THRESH: 'size from which the sender pipelines its own staging; default inf',
	UCX_RNDV_PIPELINE_SHM_ENABLE: 'whether the staged pipeline may go through shared memory within a node; default y',
	UCX_RNDV_FRAG_WORKER_MAX_MEM: 'cap on staging memory per worker, proposed in U#11062 (open): released UCX versions do not know it and ignore it with a warning',
};

const ucxRndv: Rule = {
	id: 'ucx-rndv-settings', severity: 'info', title: 'UCX rendezvous settings in effect',
	reads: ['env.UCX_RNDV_*', 'engine.ranks[].env.UCX_RNDV_*', 'ucx.config'],
	source: 'gpu-mpi-sources.md §2 (defaults from src@v1.20.0 ucp_context.c, same in v1.22.0; rndv_ppln.c; U#11062; U#10104); ucx_info -c of UCX 1.13.1 (h200 testbed)',
	fixSummary: 'Check each value against the defaults (ucx_info -c) and measure with UCX_PROTO_ENABLE=y UCX_PROTO_INFO=y; remove settings copied from other systems.',
	evaluate(facts) {
		const seen = new Map<string, { value: string; origin: string; evidence: Evidence }>();
		const names = new Set<string>([...facts.env.map((e) => e.name), ...(facts.engine?.ranks ?? []).flatMap((r) => r.env.map((e) => e.name))]);
		for (const n of [...names].filter((x) => /^UCX_(RNDV_|MAX_RNDV_RAILS)/.test(x)).sort()) {
			const s = envSettings(facts, n)[0];
			if (s) { seen.set(n, s); }
		}
		if (seen.size === 0) { return []; }
		const parts = [...seen.entries()].map(([n, s]) => `${n}=${s.value} (${s.origin}): ${RNDV_EXPLAIN[n] ?? 'a rendezvous tuning knob; compare with ucx_info -c'}${facts.ucx?.config[n] ? `; ucx_info -c shows ${facts.ucx.config[n].value}` : ''}`);
		return [finding(this, `${seen.size} UCX rendezvous setting(s) are set, and they decide how large GPU messages are moved: ${parts.join('. ')}.`,
			[...seen.values()].slice(0, 6).map((s) => s.evidence), { text: 'See which protocol UCX really selects with these settings.', command: 'UCX_PROTO_ENABLE=y UCX_PROTO_INFO=y mpirun ...' })];
	},
};

/** Whether a GPU of this host is a Hopper (or newer named like one) part. */
function hopperGpu(facts: Facts): Evidence | null {
	const g = facts.gpu.gpus.find((x) => (x.architecture && /hopper|blackwell/i.test(x.architecture.value)) || /\b(GH|H)(100|200|20|800)\b/.test(x.name));
	if (g) { return g.architecture?.evidence ?? g.evidence; }
	const d = facts.engine?.document?.ranks[0]?.cuda.devices.find((x) => Number(x.compute_capability.split('.')[0]) >= 9);
	return d ? { source: 'engine', line: `ranks[0].cuda.devices[${d.ordinal}]: ${d.name}, compute capability ${d.compute_capability}` } : null;
}

/** A bandwidth like "10000.00MBps", "8300MBs", "50GBs" in MB/s; NaN if unreadable. */
function mbps(v: string): number {
	const m = /([\d.]+)\s*(G|M|K)?B(ps|s)?/i.exec(v);
	if (!m) { return NaN; }
	const unit = (m[2] ?? 'M').toUpperCase();
	return Number(m[1]) * (unit === 'G' ? 1000 : unit === 'K' ? 0.001 : 1);
}

const copyBw: Rule = {
	id: 'ucx-cuda-copy-bw-model', severity: 'info', title: 'UCX\'s cuda_copy bandwidth model is far below this GPU\'s PCIe link',
	reads: ['ucx.config.UCX_CUDA_COPY_BW', 'env.UCX_CUDA_COPY_BW', 'ucx.version', 'ucx.transports', 'gpu.gpus[].architecture', 'gpu.gpus[].pcieGen'],
	source: 'gpu-mpi-sources.md §2 (UCX_CUDA_COPY_BW default h2d:8300MBs,d2h:11660MBs,d2d:320GBs in v1.20; U#11605 staged-copy model too pessimistic; U#11865 low bandwidth guess made UCX choose staging); ucx_info -c of UCX 1.13.1: UCX_CUDA_COPY_BW=10000.00MBps; observed.md B (PCIe Gen5 ~50 GB/s per direction)',
	fixSummary: 'Measure host↔device bandwidth (nvbandwidth) and try UCX_CUDA_COPY_BW close to it; compare the selected protocols with UCX_PROTO_INFO=y before and after (untested here).',
	evaluate(facts) {
		const u = facts.ucx;
		if (!u || !(ucxTransports(facts).includes('cuda_copy') || u.builtWithCuda?.value === true)) { return []; }
		const hop = hopperGpu(facts);
		if (!hop) { return []; }
		const set = envSettings(facts, 'UCX_CUDA_COPY_BW')[0];
		if (set) { return []; }
		const cfg = u.config.UCX_CUDA_COPY_BW;
		const vp = versionParts(u.version?.value ?? '');
		// UCX_CUDA_COPY_BW exists in 1.13.1 (ucx_info -c of the testbed); without ucx_info -c rely on the version.
		if (!cfg && (vp.length === 0 || compareVersions(vp, [1, 13]) < 0)) { return []; }
		const value = cfg?.value ?? (compareVersions(vp, [1, 20]) >= 0 ? 'h2d:8300MBs,d2h:11660MBs,d2d:320GBs (default of UCX ≥ 1.20)' : '10000.00MBps (default of UCX 1.13)');
		const nums = value.split(',').filter((x) => !/d2d/i.test(x)).map(mbps).filter((n) => Number.isFinite(n));
		const low = nums.length > 0 ? Math.max(...nums) : NaN;
		if (Number.isFinite(low) && low >= 30000) { return []; }
		const gen = facts.gpu.gpus.find((g) => g.pcieGen)?.pcieGen;
		const perDir = value.includes(':');
		return [finding(this, `UCX ${u.version?.value ?? ''} models cuda_copy at UCX_CUDA_COPY_BW=${value}, far below what a Hopper GPU${gen ? ` on PCIe Gen${gen.value}` : ''} moves between host and device (tens of GB/s per direction; ~50 GB/s on Gen5). UCX chooses protocols from this model, so it can prefer staged or pipelined paths where direct copies would be faster (U#11605, U#11865). Advisory: measure before changing it.`,
			ev(cfg?.evidence ?? u.version?.evidence, hop, gen?.evidence),
			{ text: 'Set the model near the measured bandwidth and compare UCX_PROTO_INFO output (untested here).', command: perDir ? 'export UCX_CUDA_COPY_BW=h2d:45GBs,d2h:45GBs,d2d:1000GBs' : 'export UCX_CUDA_COPY_BW=45000MBps' })];
	},
};

const mpichNoGpu: Rule = {
	id: 'mpich-built-without-gpu', severity: 'warning', title: 'MPICH is built without GPU support',
	reads: ['mpi.mpich.configure', 'mpi.mpich.configuredWithCuda', 'mpi.implementation'],
	source: 'observed.md A (Debian MPICH 4.0.2: --without-yaksa, no --with-cuda; MPIX_GPU_query_support returned 0); gpu-mpi-sources.md §3 (MPIX_GPU_query_support, MPIR_CVAR_ENABLE_GPU)',
	fixSummary: 'Use an MPICH configured --with-cuda with yaksa (the default datatype engine), and MPIR_CVAR_ENABLE_GPU=1; check with MPIX_GPU_query_support.',
	evaluate(facts) {
		const mpich = facts.mpi.mpich;
		if (!mpich?.configure || mpich.configuredWithCuda?.value !== false) { return []; }
		const inUse = facts.mpi.implementation?.value === 'mpich';
		const noYaksa = /--without-yaksa/.test(mpich.configure.value);
		return [finding(this, `MPICH ${mpich.version?.value ?? ''} ${inUse ? 'is the MPI in use and' : 'is also installed;'} its configure line has no --with-cuda${noYaksa ? ' and --without-yaksa (yaksa is the GPU datatype engine MPICH needs for device buffers)' : ''}, so it cannot pass GPU buffers${inUse ? '' : ' if you use it'}. MPIX_GPU_query_support() tells for sure at run time.`,
			ev(mpich.version?.evidence, mpich.configure.evidence),
			{ text: 'Build MPICH with --with-cuda (yaksa enabled) and set MPIR_CVAR_ENABLE_GPU=1, or use a CUDA-aware MPI.', command: './configure --with-cuda=$CUDA_HOME && export MPIR_CVAR_ENABLE_GPU=1' }, inUse || visibleGpus(facts).count > 0 ? 'warning' : 'info')];
	},
};

/** Tuning and build-setting rules. */
export const tuningRules: Rule[] = [smcudaIpcOff, cudaSupportOff, mpichNoGpu, ucxCaches, ucxRndv, copyBw];
