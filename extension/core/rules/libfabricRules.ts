/**
 * libfabric (OFI) and Slingshot (issue 35): whether this host's libfabric can take GPU memory at all, what a hung
 * `fi_info` means, and the registration-cache and CXI settings site documentation recommends. Facts come from the
 * collector's three fi_info runs (collect/libfabric.ts, parsers/fiInfo.ts) and the environment; nothing here needs
 * CXI hardware, and nothing was run on it: the CXI cases rest on CSCS's documentation and libfabric's sources.
 */
import type { Evidence } from '../../shared/report';
import type { Facts } from '../facts';
import { componentsOf } from '../parsers/ompiInfo';
import { envSettings, visibleGpus } from './helpers';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';

/** The MPI components here that run over libfabric, each with the line that shows it. */
export function ofiUsers(facts: Facts): { what: string; evidence: Evidence }[] {
	const out: { what: string; evidence: Evidence }[] = [];
	for (const fw of ['mtl', 'btl'] as const) {
		const c = componentsOf(facts.mpi.openmpi, fw).find((x) => x.name === 'ofi');
		if (c) { out.push({ what: `Open MPI's ${fw} ofi`, evidence: c.evidence }); }
	}
	const dev = facts.mpi.mpich?.device;
	if (dev && /ofi/.test(dev.value)) { out.push({ what: `MPICH ${dev.value}`, evidence: dev.evidence }); }
	const impl = facts.mpi.implementation;
	if (impl && (impl.value === 'cray' || impl.value === 'intel')) { out.push({ what: impl.value === 'cray' ? 'Cray MPICH (OFI netmod)' : 'Intel MPI (OFI)', evidence: impl.evidence }); }
	return out;
}

const noGpuMemory: Rule = {
	id: 'libfabric-no-cuda-memory', severity: 'warning', title: 'libfabric here cannot take CUDA memory (its CUDA interface did not start)',
	reads: ['libfabric.hmemIfaces (fi_info -c FI_HMEM, FI_LOG_LEVEL=info)', 'libfabric.hmemProviders', 'libfabric.cudaRuntimeMissing', 'libfabric.version', 'mpi.openmpi.components (mtl/btl ofi)', 'mpi.mpich.device', 'gpu.gpus'],
	appliesTo: { libfabric: '>=1.15' },
	verifiedAgainst: [
		src(U.lfHmem117, 'libfabric 1.17.0 ofi_hmem_init: an interface whose init returns -FI_ENOSYS is logged "Hmem iface … not supported" (FI_INFO)', '"Hmem iface %s not supported\\n",'),
		src(U.lfHmem122, 'the same in libfabric 1.22.0; any other error is "Failed to initialize hmem iface …" (FI_WARN)', '"Failed to initialize hmem iface %s: %s\\n",'),
		src(U.lfHmemCuda122, 'libfabric 1.22.0 built without CUDA: cuda_hmem_init is a stub returning -FI_ENOSYS; built with CUDA dlopen, a libcudart.so that cannot be opened is "Failed to dlopen libcudart.so" and also -FI_ENOSYS', 'int cuda_hmem_init(void) { return -FI_ENOSYS; }'),
		src(U.lfHmemCuda122, 'libfabric 1.22.0 hmem_cuda.c: the runtime is opened by its unversioned name', 'cuda_attr.runtime_handle = dlopen("libcudart.so", RTLD_NOW);'),
		src(U.lfSmrAttr117, 'libfabric 1.17.0 shm: the FI_HMEM variant of its info is always listed (smr_info.next), whatever GPU interface started, so "shm" under fi_info -c FI_HMEM proves no CUDA support', '.next = &smr_hmem_info,'),
		src(U.lfSmrAttr122, 'the same in libfabric 1.22.0', '#define SMR_HMEM_TX_CAPS (SMR_TX_CAPS | FI_HMEM)'),
		src(U.lfGetinfoMan117, 'FI_HMEM: "Specifies that the endpoint should support transfers to and from device memory"', 'Specifies that the endpoint should support transfers to and from device memory.'),
		src(U.lfIssue9315, 'a provider (cxi) that returned FI_HMEM from fi_getinfo without supporting the device memory in use: the listing alone is no proof'),
		src(U.lfIssue9160, 'users check GPU support with FI_LOG_LEVEL=Debug fi_info -c FI_HMEM and read the cuda lines of the log'),
		src(U.obsLibfabric, 'Debian 12 libfabric 1.17.0: FI_LOG_LEVEL=info fi_info -c FI_HMEM lists shm only and logs "Hmem iface FI_HMEM_CUDA not supported"'),
	],
	fixSummary: 'Use a libfabric built with CUDA (the site\'s, e.g. Cray\'s /opt/cray/libfabric, or configure --with-cuda), with the CUDA runtime\'s directory on LD_LIBRARY_PATH where it opens libcudart.so at run time; check with FI_LOG_LEVEL=info fi_info -c FI_HMEM (no "Hmem iface FI_HMEM_CUDA not supported" line).',
	evaluate(facts) {
		const lf = facts.libfabric;
		const cuda = lf?.hmemIfaces.find((i) => i.iface === 'FI_HMEM_CUDA');
		if (!lf || !cuda) { return []; }
		const gpus = visibleGpus(facts);
		const users = ofiUsers(facts);
		const why = cuda.state === 'failed'
			? `its CUDA interface failed to start (${cuda.detail || 'no reason given'})`
			: lf.cudaRuntimeMissing
				? 'it could not open the CUDA runtime: it looks for the unversioned libcudart.so (hmem_cuda.c), which only a CUDA toolkit installation provides, on the library path at run time'
				: `its CUDA interface returned "not supported": either this libfabric was built without CUDA (then that interface is a stub) or it found no NVIDIA device${gpus.count > 0 ? ` (this host shows ${gpus.count} GPU(s), so the build is the likelier reason)` : ' (no GPU is visible here either: inspect a GPU node to tell the two apart)'}`;
		const listed = lf.hmemProviders === null ? '' : lf.hmemProviders.length === 0
			? ' fi_info -c FI_HMEM lists no provider at all.'
			: ` fi_info -c FI_HMEM still lists ${[...new Set(lf.hmemProviders.map((p) => p.provider))].join(', ')}: ${lf.hmemProviders.some((p) => p.provider === 'shm') ? 'shm lists FI_HMEM whether or not any GPU interface started (libfabric\'s shm attributes, 1.17-1.22), and ' : ''}a provider accepting FI_HMEM can only use the GPU interfaces libfabric started, here none for CUDA.`;
		const who = users.length > 0
			? ` The MPI here has components that run over libfabric (${users.map((u) => u.what).join('; ')}): GPU buffers cannot go through libfabric itself there; the MPI has to copy them to host memory first, or the transfer fails.`
			: ' No MPI component of this inspection was seen to use libfabric (MPICH ch4:ofi, Cray MPICH, Open MPI\'s mtl/btl ofi would): this matters to those and to NCCL\'s OFI plugin.';
		const severe = gpus.count > 0 && users.length > 0;
		return [finding(this, `libfabric${lf.version ? ` ${lf.version.value}` : ''} here cannot take CUDA memory: ${why}.${listed}${who}`,
			ev(cuda.evidence, lf.cudaRuntimeMissing?.evidence, lf.hmemProviders?.[0]?.evidence, lf.version?.evidence, users[0]?.evidence, gpus.evidence[0]),
			{ text: lf.cudaRuntimeMissing
				? 'Put the CUDA runtime\'s directory (the one with libcudart.so, e.g. $CUDA_HOME/lib64 or the site\'s cuda module) on LD_LIBRARY_PATH for the job, then check again.'
				: 'Use the site\'s CUDA-enabled libfabric (on Cray systems /opt/cray/libfabric, loaded with the craype-network-ofi / libfabric modules), or build libfabric --with-cuda; then check that the log no longer says the CUDA interface is not supported.', command: 'FI_LOG_LEVEL=info fi_info -c FI_HMEM 2>&1 | grep -i -E "hmem|cuda"' },
			severe ? 'warning' : 'info')];
	},
};

const probeHung: Rule = {
	id: 'libfabric-probe-hung', severity: 'warning', title: 'fi_info did not finish: libfabric hangs while starting its providers',
	reads: ['libfabric.hmemRun (fi_info -c FI_HMEM: timed out)'],
	appliesTo: { libfabric: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.lfGetinfoMan117, 'fi_getinfo, which fi_info calls (as an MPI over libfabric does at MPI_Init), asks the providers what they offer; no match is -FI_ENODATA (fi_info exits 61), an answer the collector reads as such', 'If no matching fabric information is available, info will be set to NULL and the call will return -FI_ENODATA.'),
		src(U.obsLibfabric, 'on the Debian 12 CI machine fi_info -c FI_HMEM returns in well under a second; the collector stops a tool at its per-tool timeout'),
	],
	fixSummary: 'Run FI_LOG_LEVEL=debug fi_info by hand to see the provider it stops in; exclude that provider for the job (FI_PROVIDER=^<name>) or fix its driver / device state; an MPI over libfabric may hang the same way in MPI_Init.',
	evaluate(facts) {
		const run = facts.libfabric?.hmemRun;
		if (!run || run.state !== 'timeout') { return []; }
		return [finding(this, `fi_info -c FI_HMEM did not finish (${run.detail}${run.seconds !== null ? `, stopped after ${run.seconds} s` : ''}). fi_info only asks libfabric which providers it has; a hang there is a provider that blocks while it starts (a device, driver or service it waits for). A program that initialises libfabric the same way, an MPI over libfabric at MPI_Init or NCCL's OFI plugin, may hang there too. What libfabric would do with GPU memory is not known from this inspection.`,
			ev(run.evidence), { text: 'Find the provider it stops in from the debug log, then exclude it for the job or fix its device state.', command: 'FI_LOG_LEVEL=debug timeout 60 fi_info 2>&1 | tail -n 20' })];
	},
};

/** FI_MR_CACHE_MONITOR values libfabric's core compares (strcmp, exact): util_mem_monitor.c, 1.17.0-1.22.0. */
const MONITORS = ['userfaultfd', 'memhooks', 'disabled'];

const mrCacheMonitor: Rule = {
	id: 'libfabric-mr-cache-monitor', severity: 'info', title: 'libfabric\'s registration-cache monitor is set (FI_MR_CACHE_MONITOR)',
	reads: ['env.FI_MR_CACHE_MONITOR', 'engine.ranks[].env.FI_MR_CACHE_MONITOR', 'libfabric.settingsRead (mr_cache_monitor)', 'libfabric.version'],
	appliesTo: { libfabric: '>=1.15' },
	verifiedAgainst: [
		src(U.lfMrMan122, 'fi_mr(3) of libfabric 1.22.0: the monitor detects changes of system memory behind registered addresses; valid options userfaultfd, memhooks and disabled; disabled turns the registration cache off', 'Valid monitor options are: userfaultfd, memhooks, and disabled. Selecting disabled will turn off the registration cache.'),
		src(U.lfMemMonitor117, 'libfabric 1.17.0 ofi_monitors_init: only the three names are compared, exactly; any other value leaves the default monitor (memhooks where built) in place without a message', '} else if (!strcmp(cache_params.monitor, "disabled")) {'),
		src(U.lfMemMonitor122, 'the same comparison in libfabric 1.22.0', '} else if (!strcmp(cache_params.monitor, "memhooks")) {'),
		src(U.cscsCrayMpich, 'CSCS, Cray MPICH on Alps: for hangs, FI_MR_CACHE_MONITOR=disabled, or userfaultfd which "typically performs better than completely disabling the cache monitor"; performance may be affected', 'export FI_MR_CACHE_MONITOR=userfaultfd'),
		src(U.obsLibfabric, 'libfabric 1.17.0 logs the value it read ("read string var mr_cache_monitor=…") also for a name it then ignores'),
	],
	fixSummary: 'Keep FI_MR_CACHE_MONITOR only where it works around a problem (CSCS: userfaultfd or disabled for Cray MPICH hangs), spelled exactly userfaultfd, memhooks or disabled: libfabric ignores any other value silently.',
	evaluate(facts) {
		const s = envSettings(facts, 'FI_MR_CACHE_MONITOR')[0];
		const read = facts.libfabric?.settingsRead.find((x) => x.name === 'mr_cache_monitor');
		if (!s && !read) { return []; }
		const value = (s?.value ?? read?.value ?? '').trim();
		const evidence = ev(s?.evidence, read?.evidence);
		if (!MONITORS.includes(value)) {
			return [finding(this, `FI_MR_CACHE_MONITOR=${value}${s ? ` (${s.origin})` : ''} is not a monitor libfabric knows: its core compares the value with userfaultfd, memhooks and disabled exactly (util_mem_monitor.c, 1.17-1.22) and otherwise keeps its default monitor without a word${read ? ` (it did read the value: "${read.evidence.line.replace(/^.*<info> /, '')}")` : ''}. Whatever this setting was meant to work around is not in effect.`,
				evidence, { text: 'Spell it exactly as libfabric compares it (userfaultfd, memhooks or disabled) if you meant one of those, or unset it: libfabric then keeps its default, as it does now.', command: 'unset FI_MR_CACHE_MONITOR' }, 'warning')];
		}
		const what: Record<string, string> = {
			userfaultfd: 'the kernel\'s userfaultfd reports unmapped pages to libfabric\'s registration cache instead of its memhooks (intercepted malloc / mmap / free); CSCS suggests it for Cray MPICH hangs on Alps, as typically faster than disabling the monitor',
			memhooks: 'the default where built: libfabric intercepts allocation calls (malloc, mmap, free) to learn of unmapped pages',
			disabled: 'the registration cache is off: every transfer registers and deregisters its buffer (slower); CSCS names it as a workaround for Cray MPICH hangs',
		};
		return [finding(this, `FI_MR_CACHE_MONITOR=${value}${s ? ` (${s.origin})` : ''}: ${what[value]}. It concerns host memory; GPU memory registrations have their own monitors (FI_MR_CUDA_CACHE_MONITOR_ENABLED). Keep it only while it fixes a problem you saw (a hang, stale registrations).`,
			evidence, { text: 'Compare a run with and without it before keeping it in job scripts.', command: 'FI_LOG_LEVEL=info fi_info 2>&1 | grep -i monitor' })];
	},
};

const cxiMapError: Rule = {
	id: 'libfabric-cxi-map-write-error', severity: 'warning', title: 'Slingshot (CXI) "cxil_map: write error" with GPU buffers',
	reads: ['messages[cxil-map-write-error]', 'env.FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD', 'libfabric.providers'],
	appliesTo: { vendorMpi: ALL_VERSIONS, libfabric: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.cscsCrayMpich, 'CSCS, Cray MPICH on Alps: "cxil_map: write error" in inter-node GPU-aware MPI comes from a gdrcopy bug; FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD=0 disables gdrcopy, at a cost for small messages, case by case', 'export FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD=0'),
	],
	fixSummary: 'For the affected job only: export FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD=0 (no gdrcopy for device memory copies; slower small messages), as CSCS documents.',
	evaluate(facts) {
		const hit = facts.messages.find((m) => m.kind === 'cxil-map-write-error');
		if (!hit) { return []; }
		const set = envSettings(facts, 'FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD')[0];
		const already = set && set.value.trim() === '0';
		return [finding(this, `The output says "cxil_map: write error". CSCS documents this message for inter-node GPU-aware MPI on Slingshot when a program triggers a bug in gdrcopy (the library that copies to and from GPU memory with the CPU), and FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD=0 as the switch that stops libfabric's CXI provider from using gdrcopy, at a cost for small messages.${already ? ` It is already 0 here (${set?.origin}): the cause is elsewhere (CSCS also lists a one-time system misconfiguration with the same message).` : ''}`,
			ev(hit.evidence, set?.evidence), already ? { text: 'Report it to the site with the job id: with gdrcopy off the documented cause does not apply.' } : { text: 'Set it for the affected job only (it slows small GPU messages), as CSCS documents.', command: 'export FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD=0' })];
	},
};

/** Rules about libfabric / Slingshot. */
export const libfabricRules: readonly Rule[] = [noGpuMemory, probeHung, mrCacheMonitor, cxiMapError];
