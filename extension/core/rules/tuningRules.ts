/**
 * Rules about settings that change how GPU buffers travel: Open MPI's smcuda IPC and CUDA-support parameters,
 * UCX's memory-type / IPC caches, rendezvous settings and cuda_copy bandwidth model, and MPICH builds without GPU.
 */
import { cudaAwareness } from './mpiRules';
import type { Evidence, Finding } from '../../shared/report';
import type { Facts } from '../facts';
import { mcaParam } from '../parsers/ompiInfo';
import { versionParts } from '../parsers/text';
import { compareVersions, envSettings, isOpenMpi, mcaSettings, ucxTransports, visibleGpus } from './helpers';
import { ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';
import { MEASURED as M } from './measured.generated';

/** One place an MCA parameter gets a value. */
interface McaValue { name: string; value: string; origin: string; evidence: Evidence }

/** Every value of the named MCA parameters: files, env, engine ranks, the engine's mpirun line, ompi_info (non-default). */
function mcaValues(facts: Facts, names: readonly string[]): McaValue[] {
	const out: McaValue[] = mcaSettings(facts).filter((s) => names.includes(s.name)).map((s) => ({ name: s.name, value: s.value, origin: s.origin, evidence: s.evidence }));
	const argv = facts.engine?.command ?? [];
	for (let i = 0; i < argv.length - 2; i++) {
		if ((argv[i] === '--mca' || argv[i] === '-mca') && names.includes(argv[i + 1])) {
			out.push({ name: argv[i + 1], value: argv[i + 2], origin: 'engine command line', evidence: { source: 'engine', line: `command: ${argv.join(' ')}` } });
		}
	}
	for (const n of names) {
		const p = mcaParam(facts.mpi.openmpi, n);
		if (p && p.source !== '' && p.source !== 'default') { out.push({ name: n, value: p.value, origin: `ompi_info (${p.source})`, evidence: p.evidence }); }
	}
	return out;
}

const isOff = (v: string): boolean => /^\s*(0|false|no|off|disabled?)\s*$/i.test(v.replace(/^"|"$/g, ''));

const smcudaIpcOff: Rule = {
	id: 'ompi-smcuda-cuda-ipc-disabled', severity: 'warning', title: 'smcuda\'s CUDA IPC is switched off: Open MPI stages GPU messages through host memory',
	reads: ['mpi.paramFiles[].settings', 'env.OMPI_MCA_btl_smcuda_use_cuda_ipc', 'env.OMPI_MCA_btl_smcuda_use_cuda_ipc_same_gpu', 'engine.command', 'mpi.openmpi.params.btl_smcuda_use_cuda_ipc', 'mpi.openmpi.params.btl_smcuda_use_cuda_ipc_same_gpu'],
	appliesTo: { openmpi: '>=4.0' },
	verifiedAgainst: [
		src(U.ompiSmcuda5, 'Open MPI 5.0.7 registers btl_smcuda_use_cuda_ipc (CUDA IPC between processes on one node) and btl_smcuda_use_cuda_ipc_same_gpu (CUDA IPC between processes on the same GPU)', "mca_btl_smcuda_param_register_int(\"use_cuda_ipc_same_gpu\", 1, OPAL_INFO_LVL_4,"),
		src(U.ompiSmcuda41, 'the same two parameters in Open MPI 4.1.4', "mca_btl_smcuda_param_register_int(\"use_cuda_ipc_same_gpu\", 1, OPAL_INFO_LVL_4,&mca_btl_smcuda_component.use_cuda_ipc_same_gpu);"),
		src(U.ompiIssue12849, 'a CUDA IPC cache leak in smcuda, a reason sites switch it off'),
		src(U.devFallback, `H200 testbed (two ranks on one GPU), 1 GiB: ${M.smcudaIpc1G.text} with CUDA IPC, ${M.smcudaNoIpc1G.text} with btl_smcuda_use_cuda_ipc 0, below manual staging (${M.smcudaNoIpcStaged1G.text})`),
	],
	fixSummary: 'Remove btl_smcuda_use_cuda_ipc=0 (all GPU pairs of a node) or btl_smcuda_use_cuda_ipc_same_gpu=0 (ranks sharing one GPU) unless it works around a known problem (the smcuda IPC-cache leak of open-mpi/ompi#12849, imported pointers); if it must stay, stage manually through persistent pinned buffers.',
	evaluate(facts) {
		if (!isOpenMpi(facts) && !facts.mpi.openmpi) { return []; }
		// Where ompi_info listed this Open MPI's parameters and these are not among them (smcuda built without CUDA, as
		// Debian's 4.1.4), the setting does nothing here: no claim about CUDA IPC, and no fix that sets a parameter this
		// build does not have.
		const known = facts.mpi.openmpi && Object.keys(facts.mpi.openmpi.params).length > 0;
		const off = mcaValues(facts, ['btl_smcuda_use_cuda_ipc', 'btl_smcuda_use_cuda_ipc_same_gpu'])
			.filter((v) => isOff(v.value) && (!known || mcaParam(facts.mpi.openmpi, v.name) !== undefined));
		if (off.length === 0) { return []; }
		const v = off[0];
		const all = v.name === 'btl_smcuda_use_cuda_ipc';
		const scope = all
			? 'GPU-to-GPU messages between ranks on this node no longer use CUDA IPC, whichever GPUs they use; smcuda copies them through host shared memory'
			: 'ranks that share one GPU no longer use CUDA IPC between them (ranks on different GPUs still do); smcuda copies their messages through host shared memory';
		return [finding(this, `${v.name} is ${v.value} (${v.origin}): ${scope}. On the H200 testbed (two ranks on its one GPU) btl_smcuda_use_cuda_ipc 0 cut 1 GiB transfers from ${M.smcudaIpc1G.text} to ${M.smcudaNoIpc1G.text}, below what manual staging through pinned buffers reached (${M.smcudaNoIpcStaged1G.text}).${all ? '' : ' Only ranks placed on the same GPU are affected.'}`,
			off.slice(0, 3).map((x) => x.evidence), { text: 'Drop the setting (CUDA IPC is the default), or if it works around a problem, stage large messages yourself.', command: `mpirun --mca ${v.name} 1 ...` }, all ? 'warning' : 'info')];
	},
};

const cudaSupportOff: Rule = {
	id: 'ompi-cuda-support-param-off', severity: 'warning', title: 'Open MPI is built with CUDA but opal_cuda_support is off',
	reads: ['mpi.openmpi.builtWithCuda', 'mpi.openmpi.params.opal_cuda_support', 'mpi.paramFiles[].settings', 'env.OMPI_MCA_opal_cuda_support', 'mpi.version'],
	appliesTo: { openmpi: '>=4.0' },
	verifiedAgainst: [
		src(U.ompiCudaDocs, 'opal_cuda_support (synonym mpi_cuda_support) switches CUDA buffer support on and off at run time'),
		src(U.ompiCommonCuda41, 'Open MPI 4.1.4: CUDA support is not initialised when opal_cuda_support is off', "turned it off, we do not need to continue with any CUDA specific"),
	],
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
		return [finding(this, `Open MPI${facts.mpi.version ? ' ' + facts.mpi.version.value : ''} was built with CUDA, but opal_cuda_support is off (${where}), so the CUDA path is not used and device buffers are treated as host memory.${major !== undefined && major >= 5 ? ' In Open MPI 5 the CUDA work is done by the accelerator framework, which this switch gates.' : ''}`,
			ev(off[0]?.evidence, defaultOff?.evidence, o.builtWithCuda.evidence), { text: 'Turn it on for GPU jobs.', command: 'export OMPI_MCA_opal_cuda_support=true' })];
	},
};

/**
 * How UCX reads a boolean setting (ucs_config_sscanf_bool / _ternary, src/ucs/config/parser.c): y / yes / n / no in
 * any case, 1 / 0; "on" / "off" only from 1.15.0 and only in lower case; "try" / "maybe" for a ternary. Anything
 * else is a configuration UCX refuses: for UCX_MEMTYPE_CACHE (a global option) the library aborts at load.
 */
function ucxBoolValue(v: string, ucxVersion: number[], ternary: boolean): 'on' | 'off' | 'try' | 'invalid' {
	const onOff = ucxVersion.length < 2 || compareVersions(ucxVersion, [1, 15]) >= 0;
	if (/^(y|yes)$/i.test(v) || v === '1' || (onOff && v === 'on')) { return 'on'; }
	if (/^(n|no)$/i.test(v) || v === '0' || (onOff && v === 'off')) { return 'off'; }
	if (ternary && /^(try|maybe)$/i.test(v)) { return 'try'; }
	return 'invalid';
}

const CACHE_VARS: Record<string, { def: string; ternary: boolean; explain: (state: 'on' | 'off' | 'try', ucxVersion: number[]) => string }> = {
	UCX_MEMTYPE_CACHE: {
		def: 'try', ternary: true,
		explain: (state, vp) => {
			if (state === 'off') { return 'UCX asks CUDA for the memory type of every buffer instead of using its cache: a little slower for small messages, but GPU buffers allocated past UCX\'s hooks are no longer mistaken for host memory (the documented fix for that: UCX FAQ, open-mpi/ompi#6001).'; }
			const before114 = vp.length >= 2 && compareVersions(vp, [1, 14]) < 0;
			const before118 = vp.length >= 2 && compareVersions(vp, [1, 18]) < 0;
			const missed = ['a statically linked CUDA runtime where its CUDA hooks run in reloc mode only (UCX_MEM_CUDA_HOOK_MODE; the default bistro mode sees it: ucx-memtype-cache-static-cudart)', ...(before114 ? ['stream-ordered pools (cudaMallocAsync; hooked from UCX 1.14)'] : []), ...(before118 ? ['cuMemCreate / cuMemMap memory (hooked from UCX 1.18)'] : []), 'memory imported from another process with cudaIpcOpenMemHandle (no release hooks it)'];
			return `UCX trusts its memory-type cache, filled by intercepting CUDA allocations; a buffer it did not see allocated is taken for host memory ("not found in memtype cache, assuming host memory"), and a GPU buffer taken for host memory crashes or is read wrong. ${vp.length >= 2 ? 'This UCX does not see' : 'UCX does not see'}: ${missed.join(', ')}.${state === 'on' ? ' "y" and the default "try" differ only where the hooks cannot be installed at all (then both run without the cache; "y" also warns): only n avoids the risk.' : ''}`;
		},
	},
	UCX_CUDA_IPC_CACHE: {
		def: 'y', ternary: false,
		explain: (state) => state === 'off'
			? 'cuda_ipc opens and closes the peer\'s IPC mapping for every transfer instead of caching it: slower for repeated transfers, but mapped memory is released when the peer frees it (a free of peer-mapped memory is not guaranteed to release it while a mapping is cached: open-mpi/ompi#9051, where the UCX maintainers suggest UCX_CUDA_IPC_CACHE=n).'
			: 'cuda_ipc caches the mappings of peers\' buffers; memory mapped this way stays allocated until the cache drops it (open-mpi/ompi#9051, #12849).',
	},
};

const ucxCaches: Rule = {
	id: 'ucx-cache-settings', severity: 'info', title: 'UCX memory-type / CUDA IPC cache settings',
	reads: ['env.UCX_MEMTYPE_CACHE', 'env.UCX_CUDA_IPC_CACHE', 'engine.ranks[].env', 'ucx.version'],
	appliesTo: { ucx: '>=1.13' },
	verifiedAgainst: [
		src(U.ucxFaq, 'UCX FAQ: UCX_MEMTYPE_CACHE=n when GPU memory is taken for host memory'),
		src(U.ompiIssue6001, 'GPU buffers misdetected as host memory by UCX\'s memory-type cache'),
		src(U.ompiIssue9051, 'UCX_CUDA_IPC_CACHE=n suggested by the UCX maintainers: a free of peer-mapped memory is not guaranteed to release it while the mapping is cached'),
		src(U.ucxParser1131, 'UCX 1.13.1 ucs_config_sscanf_bool: y / yes / n / no (any case), 1, 0; no on / off', 'if (!strcasecmp(buf, "y") || !strcasecmp(buf, "yes") || !strcmp(buf, "1")) {'),
		src(U.ucxParser1150, 'UCX 1.15.0 adds "on" / "off", compared exactly', '!strcmp(buf, "on") || !strcmp(buf, "1")) {'),
		src(U.ucxUcpContextH122, 'UCX 1.22.0: a buffer not in the memtype cache is taken for host memory', 'ucs_trace_req("address %p length %zu: not found in memtype cache, "'),
		src(U.ompiIssue12849, 'mapped IPC memory kept by a cache'),
		src(U.obsH200, 'ucx_info -c of UCX 1.13.1: UCX_MEMTYPE_CACHE=try, UCX_CUDA_IPC_CACHE=y'),
	],
	fixSummary: 'Keep the defaults unless working around a specific problem; UCX_MEMTYPE_CACHE=n when GPU memory is allocated past UCX\'s hooks (y is no safer than the default), UCX_CUDA_IPC_CACHE=n when IPC mappings keep freed memory; a value UCX does not take (on / off before 1.15, ON, true) stops UCX at start-up.',
	evaluate(facts) {
		const out: Finding[] = [];
		const vp = versionParts(facts.ucx?.version?.value ?? '');
		for (const [name, info] of Object.entries(CACHE_VARS)) {
			const s = envSettings(facts, name)[0];
			if (!s) { continue; }
			const v = s.value.trim();
			const state = ucxBoolValue(v, vp, info.ternary);
			if (state === 'invalid') {
				out.push(finding(this, `${name}=${v} (${s.origin}) is not a value UCX${vp.length >= 2 ? ` ${vp.join('.')}` : ''} takes (y, yes, n, no, 1, 0${info.ternary ? ', try' : ''}${vp.length < 2 || compareVersions(vp, [1, 15]) >= 0 ? ', and on / off in lower case' : '; on / off only from UCX 1.15'}): UCX refuses the setting${name === 'UCX_MEMTYPE_CACHE' ? ' and aborts at library load ("failed to parse global configuration")' : ', and the cuda_ipc transport does not open'}.`,
					[s.evidence, ...(facts.ucx?.version?.evidence ? [facts.ucx.version.evidence] : [])], { text: `Unset it, or use a value UCX takes (default ${info.def}).`, command: `unset ${name}` }, 'warning'));
				continue;
			}
			const risky = name === 'UCX_MEMTYPE_CACHE' && state !== 'off';
			out.push(finding(this, `${name}=${v} (${s.origin}; default ${info.def}): ${info.explain(state, vp)}`, [s.evidence],
				{ text: risky ? 'Set UCX_MEMTYPE_CACHE=n if any GPU memory your program passes to MPI is allocated past UCX\'s hooks; otherwise the default is fine.' : 'Keep it only while it fixes a problem you saw.', command: risky ? `export ${name}=n` : `unset ${name}` }, 'info'));
		}
		return out;
	},
};

const RNDV_EXPLAIN: Record<string, string> = {
	UCX_RNDV_THRESH: 'message size from which UCX switches from eager copies to rendezvous (zero-copy or pipelined); default auto',
	UCX_RNDV_SCHEME: 'which rendezvous protocol is forced (get_zcopy, put_zcopy, auto); forcing a zero-copy scheme for GPU memory can rule out the staged pipeline, or fail where the transport cannot reach GPU memory; default auto',
	UCX_RNDV_FRAG_SIZE: 'fragment size of the staged pipeline per memory type; default host:512K,cuda:4M',
	UCX_RNDV_FRAG_ALLOC_COUNT: 'fragments allocated per pool chunk; the ucp_rndv_frags pool grows by that many fragments at a time, and this does not cap it (no released setting does); default host:128,cuda:128',
	UCX_RNDV_FRAG_MEM_TYPE: 'memory type of the staging fragments (host or cuda); default host on UCX 1.13',
	UCX_RNDV_FRAG_MEM_TYPES: 'memory types of the staging fragments; default host,cuda (openucx/ucx#10104)',
	UCX_RNDV_PIPELINE_SEND_THRESH: 'size from which the sender pipelines its own staging; default inf',
	UCX_RNDV_PIPELINE_SHM_ENABLE: 'whether the staged pipeline may go through shared memory within a node; default y',
	UCX_RNDV_FRAG_WORKER_MAX_MEM: 'cap on staging memory per worker, proposed in openucx/ucx pull request 11062 (not merged): released UCX versions do not know it and ignore it with a warning',
};

const ucxRndv: Rule = {
	id: 'ucx-rndv-settings', severity: 'info', title: 'UCX rendezvous settings in effect',
	reads: ['env.UCX_RNDV_*', 'engine.ranks[].env.UCX_RNDV_*', 'ucx.config'],
	appliesTo: { ucx: '>=1.13' },
	verifiedAgainst: [
		src(U.ucxContext, 'UCX 1.20.0 defaults of UCX_RNDV_THRESH, UCX_RNDV_SCHEME, UCX_RNDV_FRAG_*, UCX_RNDV_PIPELINE_*', "{\"RNDV_FRAG_SIZE\", \"host:512K,cuda:4M\","),
		src(U.ucxRndvPpln, 'the staged (pipelined) rendezvous protocol', "/* Private data for pipeline protocol */"),
		src(U.ucxPr11062, 'UCX_RNDV_FRAG_WORKER_MAX_MEM (proposed, not released)'),
		src(U.ucxIssue10104, 'UCX_RNDV_FRAG_MEM_TYPES'),
		src(U.obsH200, 'ucx_info -c of UCX 1.13.1: UCX_RNDV_FRAG_SIZE, UCX_RNDV_FRAG_ALLOC_COUNT'),
		src(U.ucxContext1131, 'UCX 1.13.1 (through 1.15.0): {"PROTO_ENABLE", "n", "Experimental: enable new protocol selection logic"}', "{\"PROTO_ENABLE\", \"n\", \"Experimental: enable new protocol selection logic\","),
		src(U.ucxContext1160, 'UCX 1.16.0 on: {"PROTO_ENABLE", "y", "Enable new protocol selection logic"}', "{\"PROTO_ENABLE\", \"y\", \"Enable new protocol selection logic\","),
		src(U.devRndvForms, `H200 testbed, UCX 1.13.1, 3 trials: UCX_PROTO_ENABLE=y moved the same 1 GiB messages at ${M.protoEnable1G.text}, the default engine at ${M.protoDefault1G.text} (${M.protoEnableSlower.text} slower)`),
	],
	fixSummary: `Check each value against the defaults (ucx_info -c) and remove settings copied from other systems. From UCX 1.16 UCX_PROTO_INFO=y shows the protocol each transfer selects; below 1.16 it needs UCX_PROTO_ENABLE=y, another protocol engine than the default (measured ${M.protoEnableSlower.text} slower on 1.13.1): there, measure with and without each setting instead.`,
	evaluate(facts) {
		const seen = new Map<string, { value: string; origin: string; evidence: Evidence }>();
		const names = new Set<string>([...facts.env.map((e) => e.name), ...(facts.engine?.ranks ?? []).flatMap((r) => r.env.map((e) => e.name))]);
		for (const n of [...names].filter((x) => /^UCX_(RNDV_|MAX_RNDV_RAILS)/.test(x)).sort()) {
			const s = envSettings(facts, n)[0];
			if (s) { seen.set(n, s); }
		}
		if (seen.size === 0) { return []; }
		const parts = [...seen.entries()].map(([n, s]) => `${n}=${s.value} (${s.origin}): ${RNDV_EXPLAIN[n] ?? 'a rendezvous tuning knob; compare with ucx_info -c'}${facts.ucx?.config[n] ? `; ucx_info -c shows ${facts.ucx.config[n].value}` : ''}`);
		// UCX_PROTO_INFO lists the new protocol engine's choices; that engine is the default only from 1.16
		// (ucp_context.c: PROTO_ENABLE "n" through 1.15, "y" from 1.16). Below, enabling it to look would show (and run)
		// another engine than the user's runs use: no such fix there.
		const vp = versionParts(facts.ucx?.version?.value ?? '');
		const known = vp.length >= 2;
		const newEngine = known && compareVersions(vp, [1, 16]) >= 0;
		const fix = newEngine
			? { text: 'See which protocol UCX really selects with these settings (UCX 1.16 on: the default protocol engine lists its choices).', command: 'UCX_PROTO_INFO=y mpirun ...' }
			: { text: `Compare each value with its default and measure the transfers with and without it.${known ? ` UCX ${facts.ucx?.version?.value} selects protocols with its older engine: UCX_PROTO_INFO needs UCX_PROTO_ENABLE=y there, which switches to another engine (measured ${M.protoEnableSlower.text} slower on 1.13.1), so it would not show what your runs do.` : ' (Below UCX 1.16, UCX_PROTO_INFO needs UCX_PROTO_ENABLE=y, another engine than the default: not a way to see what your runs do.)'}`, command: 'ucx_info -c | grep -E "RNDV|PROTO"' };
		return [finding(this, `${seen.size} UCX rendezvous setting(s) are set, and they decide how large GPU messages are moved: ${parts.join('. ')}.`,
			[...seen.values()].slice(0, 6).map((s) => s.evidence), fix)];
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
	appliesTo: { ucx: '>=1.13' },
	verifiedAgainst: [
		src(U.ucxCudaCopyIface118, 'UCX 1.18.0: UCX_CUDA_COPY_BW is one value for every direction', "{\"BW\", \"10000MBs\", \"Effective memory bandwidth\","),
		src(U.ucxCudaCopyIface119, 'UCX 1.19.0: UCX_CUDA_COPY_BW per direction, default "10000MBs,h2d:8300MBs,d2h:11660MBs,d2d:320GBs" (10000MBs for any direction not named)', "{\"BW\", \"10000MBs,h2d:8300MBs,d2h:11660MBs,d2d:320GBs\","),
		src(U.ucxParser119, 'UCX 1.19.0 ucs_config_sscanf_key_value: every key (h2d, d2h, d2d, default) needs a value, from its own entry or the un-keyed default entry, else "no value configured for key": so the fix keeps 10000MBs and d2d:320GBs, UCX\'s own defaults, and changes h2d and d2h only', "ucs_error(\"no value configured for key '%s'\", param->keys[idx].name);"),
		src(U.ucxPr7083, 'UCX PR #7083 (merged) adds UCX_CUDA_COPY_BW: "Allow tuning of estimated Cuda copy bandwidth for tweaking protocol selection"'),
		src(U.obsH200, 'ucx_info -c of UCX 1.13.1: UCX_CUDA_COPY_BW=10000.00MBps'),
		src(U.devLib, `H200 testbed: pinned D2H ${M.pinnedD2H.text}, H2D ${M.pinnedH2D.text}`),
	],
	fixSummary: 'Measure host↔device bandwidth (nvbandwidth) and try UCX_CUDA_COPY_BW close to it (UCX ≥ 1.19: change h2d and d2h, keep the default and d2d entries, which the parser needs); compare the selected protocols with UCX_PROTO_INFO=y before and after (untested here).',
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
		const value = cfg?.value ?? (compareVersions(vp, [1, 19]) >= 0 ? '10000MBs,h2d:8300MBs,d2h:11660MBs,d2d:320GBs (default of UCX ≥ 1.19)' : '10000.00MBps (default of UCX 1.13)');
		const nums = value.split(',').filter((x) => !/d2d/i.test(x)).map(mbps).filter((n) => Number.isFinite(n));
		const low = nums.length > 0 ? Math.max(...nums) : NaN;
		if (Number.isFinite(low) && low >= 30000) { return []; }
		const gen = facts.gpu.gpus.find((g) => g.pcieGen)?.pcieGen;
		const perDir = value.includes(':');
		return [finding(this, `UCX ${u.version?.value ?? ''} models cuda_copy at UCX_CUDA_COPY_BW=${value}, far below what a Hopper GPU${gen ? ` on PCIe Gen${gen.value}` : ''} moves between host and device (tens of GB/s per direction; pinned D2H ${M.pinnedD2H.text} and H2D ${M.pinnedH2D.text} on the H200 testbed). UCX uses this estimate to choose protocols (the variable exists "for tweaking protocol selection", openucx/ucx#7083), so it may choose differently from what the real bandwidth would suggest. Advisory: what a different value does has not been measured; measure before changing it.`,
			ev(cfg?.evidence ?? u.version?.evidence, hop, gen?.evidence),
			{ text: 'Set the model near the measured bandwidth and compare UCX_PROTO_INFO output (untested here).', command: perDir ? 'export UCX_CUDA_COPY_BW=10000MBs,h2d:45GBs,d2h:45GBs,d2d:320GBs' : 'export UCX_CUDA_COPY_BW=45000MBps' })];
	},
};

const mpichNoGpu: Rule = {
	id: 'mpich-built-without-gpu', severity: 'warning', title: 'MPICH may be built without GPU support',
	reads: ['mpi.mpich.configure', 'mpi.mpich.configuredWithCuda', 'mpi.implementation', 'engine.ranks[].mpi.cuda_aware', 'gpu.gpus'],
	appliesTo: { mpich: '>=4.0' },
	verifiedAgainst: [
		src(U.mpichReadme402, 'MPICH 4.0.2 README, "GPU support": enabled at configure time when CUDA is found (--with-cuda=<path>); MPIR_CVAR_ENABLE_GPU=0 only switches it off', "GPU support is automatically enabled if CUDA, ZE, or HIP runtime is detected during configure."),
		src(U.mpichMplConfigure402, 'MPICH 4.0.2 src/mpl/configure.ac: PAC_CHECK_HEADER_LIB_OPTIONAL([cuda],[cuda_runtime_api.h],[cudart],...) probes for CUDA without --with-cuda too (only --without-cuda skips it), and defines HAVE_CUDA when found', "PAC_CHECK_HEADER_LIB_OPTIONAL([cuda],[cuda_runtime_api.h],[cudart],[cudaStreamSynchronize])"),
		src(U.mpichTyperepSubconfigure402, 'src/mpi/datatype/typerep/src/subconfigure.m4: the datatype engine (yaksa or dataloop) is chosen at configure time', "[AS_HELP_STRING([--with-datatype-engine={yaksa|dataloop|auto}],[controls datatype engine to use])],"),
		src(U.mpichYaksaInit402, 'typerep_yaksa_init.c: MPICH hands yaksa its GPU driver choice (the dataloop engine has no GPU code)', "yaksa_info_keyval_append(MPII_yaksa_info_nogpu, \"yaksa_gpu_driver\", \"nogpu\", 6);"),
		src(U.mpichGpuQuery, 'MPIX_GPU_query_support tells at run time'),
		src(U.obsDebian, 'Debian MPICH 4.0.2: --without-yaksa, no --with-cuda, MPIX_GPU_query_support returned 0 (on a machine without a GPU)'),
	],
	fixSummary: 'Use an MPICH whose configure found CUDA (give --with-cuda=<path> to make sure; ch4 with yaksa, the default datatype engine of ch4); GPU support is then on by default (MPIR_CVAR_ENABLE_GPU defaults to on); check with MPIX_GPU_query_support on a node with a GPU.',
	evaluate(facts) {
		const mpich = facts.mpi.mpich;
		if (!mpich?.configure || mpich.configuredWithCuda?.value !== false) { return []; }
		const line = mpich.configure.value;
		const inUse = facts.mpi.implementation?.value === 'mpich';
		const explicitNo = /--without-cuda\b|--with-cuda=no\b/.test(line);
		const noYaksa = /--without-yaksa|--with-datatype-engine=dataloop/.test(line);
		const gpus = visibleGpus(facts).count;
		const aware = inUse ? cudaAwareness(facts) : null;
		const queryNo = aware?.aware === false && aware.stage === 'run time';
		const what = explicitNo
			? 'its configure line has --without-cuda: GPU support was left out at build time'
			: `its configure line names no --with-cuda. That alone does not settle it: MPICH's configure looks for CUDA on the build machine's default paths anyway and builds GPU support where it finds cuda_runtime_api.h and libcudart (src/mpl/configure.ac)${noYaksa ? '; but it has --without-yaksa, so it lacks yaksa, ch4\'s datatype engine with GPU backends' : ''}`;
		const query = queryNo ? ` ${aware?.detail}${gpus === 0 ? ' (on a host with no GPU visible, where that says nothing about the build)' : ''}.` : '';
		const sure = explicitNo || noYaksa || (queryNo && gpus > 0);
		return [finding(this, `MPICH ${mpich.version?.value ?? ''} ${inUse ? 'is the MPI in use;' : 'is also installed;'} ${what}.${query} MPIX_GPU_query_support() on a node with a GPU tells for sure.`,
			ev(mpich.version?.evidence, mpich.configure.evidence, ...(queryNo ? aware?.evidence ?? [] : [])),
			{ text: 'Use an MPICH (ch4, with yaksa) whose configure found CUDA (--with-cuda=<path> makes sure), or another CUDA-aware MPI; GPU support is on by default once built in.', command: './configure --with-cuda=$CUDA_HOME' },
			inUse && sure ? 'warning' : 'info')];
	},
};

/** Tuning and build-setting rules. */
export const tuningRules: Rule[] = [smcudaIpcOff, cudaSupportOff, mpichNoGpu, ucxCaches, ucxRndv, copyBw];
