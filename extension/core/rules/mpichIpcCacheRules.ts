/**
 * MPICH's GPU IPC handle cache going stale (issue 16 item 7): MPICH caches CUDA IPC handles of send buffers and
 * relies on intercepting cudaFree / cuMemFree to drop them; when the interception does not run (libcudart before
 * libmpich in the program's link order, or cudart linked statically), a freed and reallocated buffer can reuse a stale
 * handle: wrong data after "some dozens" of messages (pmodels/mpich#7304). What is read: the program's own
 * `readelf -d` / `readelf -sW` (raw outputs `readelf_d:<program>` and `readelf_s:<program>`: collected by
 * `gpumpi-doctor guard` for the program it runs, collect/programLinks.ts, or from a bundle), the cache CVARs in the
 * environment the program gets and as MPICH itself lists them (`mpivars`, raw output `mpivars`), MPICH's version.
 *
 * Which CVAR switches the cache off depends on the release, and the wrong form is not harmless: MPICH 4.0.x / 4.1.x
 * have MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE as an int (0 = off); a value it cannot parse ("disabled") makes MPI_Init
 * abort ("Unable to parse environment variable", Debian's 4.0.2, test-fixtures/tools/debian12-linkorder/). PR #6526
 * (2023) made it an enum (specialized / generic / disabled); PR #7862 (2026) replaced it by
 * MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE (0 = no caching; 5.1.0a1 lists that one and no HANDLE_CACHE, mpich#7980).
 */
import type { Evidence, Finding } from '../../shared/report';
import type { Facts } from '../facts';
import { versionParts } from '../parsers/text';
import { compareVersions, envSettings } from './helpers';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';

const HANDLE_CACHE = 'MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE';
const CACHE_SIZE = 'MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE';

/** The setting that turns this MPICH's cache off, and how that is known. */
interface CacheSwitch { name: string; off: string; how: string; evidence: Evidence | null }

/** MPICH's version fact and its numeric parts (none when the MPI is not MPICH or says no version). */
function mpichVersion(facts: Facts): { v: Facts['mpi']['version'] | null; vp: number[] } {
	const v = facts.mpi.mpich?.version ?? (facts.mpi.implementation?.value === 'mpich' ? facts.mpi.version : null);
	return { v, vp: versionParts(v?.value ?? '') };
}

/** Which CVAR (and value) turns the cache off here: from mpivars' own listing first, else from the MPICH version. */
export function cacheSwitch(facts: Facts): CacheSwitch {
	const listed = (name: string) => facts.mpichCvars?.cvars.find((c) => c.name === name);
	const size = listed(CACHE_SIZE);
	// MPICH 4.3-5.0 has CACHE_SIZE too, as an enum (unlimited / limited / disabled) for the cache of mapped buffers:
	// "0" there makes MPI_Init fail. Only the int of PR #7862 (5.1 on) switches the cache off with 0.
	if (size && !cacheSizeIsEnum(facts)) { return { name: CACHE_SIZE, off: '0', how: 'this MPICH lists it as an int (mpivars)', evidence: size.evidence }; }
	const handle = listed(HANDLE_CACHE);
	if (handle) {
		const isEnum = /specialized|generic/i.test(handle.description) || handle.type === 'MPI_CHAR';
		return { name: HANDLE_CACHE, off: isEnum ? 'disabled' : '0', how: `this MPICH's mpivars lists it as ${isEnum ? 'an enum' : 'an int: 0 turns it off, "disabled" makes MPI_Init abort'}`, evidence: handle.evidence };
	}
	const { v, vp } = mpichVersion(facts);
	if (vp.length >= 2 && compareVersions(vp, [5, 1]) >= 0) { return { name: CACHE_SIZE, off: '0', how: `MPICH ${v?.value}: the cache size CVAR of PR #7862`, evidence: v?.evidence ?? null }; }
	if (vp.length >= 2 && compareVersions(vp, [4, 2]) >= 0) { return { name: HANDLE_CACHE, off: 'disabled', how: `MPICH ${v?.value}: an enum since PR #6526 (newer releases: ${CACHE_SIZE}=0)`, evidence: v?.evidence ?? null }; }
	if (vp.length >= 2) { return { name: HANDLE_CACHE, off: '0', how: `MPICH ${v?.value}: an int before PR #6526 ("disabled" makes MPI_Init abort)`, evidence: v?.evidence ?? null }; }
	return { name: HANDLE_CACHE, off: '0', how: `MPICH version unknown: 0 on MPICH 4.0/4.1, disabled from 4.2, ${CACHE_SIZE}=0 after PR #7862`, evidence: null };
}

/** Enum values of MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE in MPICH 4.3.0-5.0.x (src/mpid/ch4/shm/ipc/gpu/gpu_post.c@v5.0.1). */
const CACHE_SIZE_ENUM = /^(unlimited|limited|disabled)$/i;

/** Whether this MPICH's CACHE_SIZE is the 4.3-5.0 enum: from its mpivars line (value or description), else its version. */
export function cacheSizeIsEnum(facts: Facts): boolean {
	const c = facts.mpichCvars?.cvars.find((x) => x.name === CACHE_SIZE);
	if (c) {
		if (CACHE_SIZE_ENUM.test(c.value.trim()) || /unlimited/i.test(c.description) || c.type === 'MPI_CHAR') { return true; }
		if (/^\d+$/.test(c.value.trim())) { return false; }
	}
	const { vp } = mpichVersion(facts);
	return vp.length >= 2 && compareVersions(vp, [4, 3]) >= 0 && compareVersions(vp, [5, 1]) < 0;
}

/** The cache's CVARs as the program gets them: mpivars' value (what MPICH parsed) first, else the environment. */
function cacheSettings(facts: Facts): { name: string; value: string; evidence: Evidence; off: boolean }[] {
	const out: { name: string; value: string; evidence: Evidence; off: boolean }[] = [];
	for (const name of [HANDLE_CACHE, CACHE_SIZE]) {
		const c = facts.mpichCvars?.cvars.find((x) => x.name === name);
		const e = c ? { value: c.value, evidence: c.evidence } : envSettings(facts, name)[0];
		if (!e) { continue; }
		const off = name === CACHE_SIZE ? e.value.trim() === '0' && !cacheSizeIsEnum(facts) : /^(0|disabled)$/i.test(e.value.trim());
		out.push({ name, value: e.value, evidence: e.evidence, off });
	}
	return out;
}

const staleCache: Rule = {
	id: 'mpich-gpu-ipc-cache-hooks', severity: 'warning', title: 'MPICH cannot see this program\'s cudaFree: its GPU IPC cache can go stale',
	reads: ['programLinks[] (readelf_d:<program>, readelf_s:<program>)', 'mpivars (MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE, MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE)', 'env.MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE', 'env.MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE', 'mpi.mpich.version'],
	appliesTo: { mpich: '>=4.0', cuda: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.mpichIssue7304, 'MPICH intercepts cudaFree to remove entries from its CUDA IPC handle cache; MPI libs must come before CUDA and cudart must not be linked statically; workaround MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled'),
		src(U.mpichPr6461, 'MPICH\'s own tests: "For the interception to work, libmpi need be linked before libcuda or libcudart"; a bcast then returned wrong data'),
		src(U.mpichIssue7302, 'the Aurora wrong-results report that the IPC handle cache work addressed (ze backend, fixed by PR #7312)'),
		src(U.mpichGpuPost402, 'MPICH 4.0.2: MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE is an int, default 1, "To manually disable ipc handle cache, user can set this variable to 0"', "By default, we will cache ipc handle. To manually disable ipc"),
		src(U.mpichPr6526, 'MPICH 2023: the specialized (ze) IPC cache; MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE becomes an enum: specialized (default), generic, disabled'),
		src(U.mpichPr7862, 'MPICH 2026: one sender-side cache; MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=0 effectively disables caching'),
		src(U.mpichGpuPost501, 'MPICH 4.3.0-5.0.1: MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE is "type : enum", "unlimited / limited / disabled" (the cache of mapped buffers), and MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE an enum "generic / specialized / disabled"', "- name : MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE category : CH4 type : enum"),
		src(U.mpichPr7980, 'a CVAR listing of MPICH 5.1.0a1: MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=16, MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE n/a'),
	],
	fixSummary: 'Link libmpich before libcudart (e.g. mpicc … -lmpich -lcudart, or put the CUDA libraries after the MPI ones) and never cudart_static; or switch the cache off with the CVAR this MPICH has: MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=0 (4.0, 4.1; "disabled" aborts MPI_Init there), =disabled (4.2 to 5.0; there MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE is an enum and 0 makes MPI_Init fail), MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=0 (5.1 on, PR #7862).',
	evaluate(facts) {
		const sw = cacheSwitch(facts);
		// "disabled" where the CVAR is an int: MPICH refuses it (mpivars says so), or the version says it would.
		const intForm = sw.name === HANDLE_CACHE && sw.off === '0';
		const refused = facts.mpichCvars?.unparsable ?? null;
		const sizeEnum = cacheSizeIsEnum(facts);
		// A value of the wrong type for this release: "disabled" where HANDLE_CACHE is an int (4.0, 4.1), anything but
		// unlimited / limited / disabled where CACHE_SIZE is an enum (4.3-5.0): MPI_Init aborts.
		const wrongType = (s: { name: string; value: string }): boolean => (intForm && s.name === HANDLE_CACHE && /^disabled$/i.test(s.value.trim()))
			|| (sizeEnum && s.name === CACHE_SIZE && !CACHE_SIZE_ENUM.test(s.value.trim()));
		const settings = cacheSettings(facts).map((s) => (wrongType(s) ? { ...s, off: false } : s));
		const wrongForm = refused ? null : settings.find(wrongType);
		const bad = refused ?? (wrongForm ? { name: wrongForm.name, evidence: wrongForm.evidence } : null);
		const off = settings.find((s) => s.off);
		const out: Finding[] = [];
		for (const { program, order: lo } of facts.programLinks) {
			if (!lo.mpi || !/mpich/.test(lo.mpi.soname)) { continue; }
			const late = lo.cudart && lo.cudart.index < lo.mpi.index;
			if (!late && !lo.staticCudart) { continue; }
			const why = late
				? `${program} needs ${lo.cudart?.soname} (DT_NEEDED #${(lo.cudart?.index ?? 0) + 1}) before ${lo.mpi.soname} (#${lo.mpi.index + 1}), so its cudaFree calls resolve to the CUDA runtime and never reach MPICH's hook`
				: `${program} has cudaFree linked in statically (cudart_static), which MPICH cannot intercept`;
			const now = settings.length > 0 ? ` The cache's CVARs as this program gets them: ${settings.map((s) => `${s.name}=${s.value}`).join(', ')}.` : '';
			const state = refused ? ` ${refused.name} is set to a value this MPICH cannot parse: MPI_Init aborts ("Unable to parse environment variable"); it takes ${sw.name === refused.name ? sw.off : 'an int'} here.`
				: wrongForm ? (wrongForm.name === CACHE_SIZE
					? ` ${wrongForm.name}=${wrongForm.value} is set, but in this MPICH it is an enum (unlimited, limited, disabled): MPI_Init fails on any other value; the handle cache is switched off with ${sw.name}=${sw.off}.`
					: ` ${wrongForm.name}=${wrongForm.value} is set, but ${sw.how.replace(/ \(.*$/, '')}: MPI_Init aborts with "Unable to parse environment variable" (seen with Debian's MPICH 4.0.2); it takes 0.`)
				: off ? ` ${off.name}=${off.value} turns the cache off: the risk is gone, at the cost of reopening IPC handles per message.` : '';
			out.push(finding(this,
				`${why}. MPICH then keeps CUDA IPC handles of freed device buffers in its cache; a new buffer at a reused address can be sent with a stale handle: wrong data after some dozens of messages (pmodels/mpich#7304).${now}${state} Note: Debian's mpicc.mpich puts -lmpich last, so "mpicc app.c -lcudart" gives this order.`,
				ev(...[lo.cudart?.evidence, lo.mpi.evidence, lo.staticCudart ?? undefined, ...settings.map((s) => s.evidence), bad?.evidence, sw.evidence]
					.filter((e, i, all) => e && all.findIndex((x) => x?.source === e.source && x?.line === e.line) === i)),
				{ text: `Link the MPI library first (or drop cudart_static), or switch the cache off: ${sw.name}=${sw.off} (${sw.how}).`, command: `export ${sw.name}=${sw.off}   # or relink: gcc app.o -lmpich -lcudart` },
				bad ? 'error' : off ? 'info' : 'warning'));
		}
		return out;
	},
};

/**
 * MPIR_CVAR_NOLOCAL (alias MPIR_CVAR_NO_LOCAL), MPICH's switch that makes every rank treat the others as remote: the
 * workaround users copy from pmodels/mpich#7302 (wrong data in GPU receive buffers on Aurora) and from CSCS's page
 * (slow intra-node host communication with Cray MPICH). A boolean from 4.0.2 to 5.0.1 (mpir_pmi.c / mpir_nodemap.c).
 * #7302's cause was MPICH's ze (Intel GPU) IPC handle code, fixed by PR #7312 (mpl_gpu_ze.c) in 4.3.1 and 5.0.0;
 * pmodels/mpich#7977 (ze again, the 5.1 development line's finite cache, fixed by PR #7980) is in no release.
 */
const NOLOCAL = ['MPIR_CVAR_NOLOCAL', 'MPIR_CVAR_NO_LOCAL'];

/** MPICH's boolean forms (MPL_env2bool): 1 / 0, yes / no, true / false, on / off, any case. */
function mpichBool(v: string): boolean | null {
	const s = v.trim().toLowerCase();
	if (['1', 'yes', 'true', 'on'].includes(s)) { return true; }
	if (['0', 'no', 'false', 'off'].includes(s)) { return false; }
	return null;
}

const noLocal: Rule = {
	id: 'mpich-nolocal-set', severity: 'info', title: 'MPIR_CVAR_NOLOCAL is on: MPICH treats every rank as remote (no shared memory, no GPU IPC)',
	reads: ['mpivars (MPIR_CVAR_NOLOCAL)', 'env.MPIR_CVAR_NOLOCAL', 'env.MPIR_CVAR_NO_LOCAL', 'mpi.mpich.version', 'mpi.implementation'],
	appliesTo: { mpich: '>=4.0', vendorMpi: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.mpichPmi402, 'MPICH 4.0.2: MPIR_CVAR_NOLOCAL (alt-env MPIR_CVAR_NO_LOCAL), a boolean, default false: "force all processes to operate as though all processes are located on another node"', 'If true, force all processes to operate as though all processes are located on another node. For example, this disables shared memory communication hierarchical collectives.'),
		src(U.mpichNodemap501, 'the same CVAR, alias and description in MPICH 5.0.1', 'alt-env : MPIR_CVAR_NO_LOCAL type : boolean'),
		src(U.mpichIssue7302, 'Aurora (Intel GPUs), wrong data in GPU receive buffers: MPIR_CVAR_NOLOCAL=1 gave correct results, and so did MPIR_CVAR_CH4_IPC_GPU_P2P_THRESHOLD above the largest message'),
		src(U.mpichPr7312, 'the fix of that report: "mpl/ze: Fix bug in IPC handle creation" (MPICH 4.3.1, 5.0.0)'),
		src(U.mpichMplZe431, 'MPICH 4.3.1 carries it: the ze backend checks a cached IPC handle against the allocation (not in 4.3.0)', 'bool MPL_gpu_ipc_handle_is_valid(MPL_gpu_ipc_mem_handle_t * handle, void *ptr)'),
		src(U.mpichGpuPost432, 'MPICH 4.3.2: GPU IPC is used for messages from MPIR_CVAR_CH4_IPC_GPU_P2P_THRESHOLD bytes (default 1 MiB): the narrower switch of #7302', 'If a send message size is greater than or equal to MPIR_CVAR_CH4_IPC_GPU_P2P_THRESHOLD (in bytes), then enable GPU-based single copy protocol for intranode communication.'),
		src(U.mpichIssue7977, 'data corruption with a finite IPC cache and the fast-copy path (ze, the 5.1 development branch, fixed by PR #7980; in no release)'),
		src(U.cscsCrayMpich, 'CSCS: Cray MPICH can be faster over the NIC for intra-node host-memory traffic; "export MPIR_CVAR_NO_LOCAL=1" forces that', 'export MPIR_CVAR_NO_LOCAL=1'),
		src(U.obsDebian, 'Debian MPICH 4.0.2 mpivars: MPIR_CVAR_NOLOCAL=1 with MPIR_CVAR_NOLOCAL=1 or MPIR_CVAR_NO_LOCAL=1 in the environment'),
	],
	fixSummary: 'Keep it only for the job whose problem it works around: it takes shared memory and GPU IPC from every pair of ranks on a node. For wrong GPU data on Intel GPUs (mpich#7302) use MPICH 4.3.1 / 5.0.0 or newer; for MPICH\'s CUDA IPC cache, switch that cache off instead (mpich-gpu-ipc-cache-hooks).',
	evaluate(facts) {
		const listed = facts.mpichCvars?.cvars.find((c) => c.name === 'MPIR_CVAR_NOLOCAL');
		const env = NOLOCAL.flatMap((n) => envSettings(facts, n).map((e) => ({ ...e, name: n })));
		const on = listed ? mpichBool(listed.value) === true : env.some((e) => mpichBool(e.value) === true);
		if (!on) { return []; }
		const mpichFamily = listed !== undefined || facts.mpi.mpich !== null || ['mpich', 'cray', 'intel', 'mvapich'].includes(facts.mpi.implementation?.value ?? '');
		if (!mpichFamily) { return []; }
		const set = env.find((e) => mpichBool(e.value) === true);
		const { v, vp } = mpichVersion(facts);
		const fixed = vp.length >= 2 ? (compareVersions(vp, [4, 3, 1]) >= 0) : null;
		const sw = cacheSwitch(facts);
		const release = v && vp.length >= 2
			? (fixed ? ` MPICH ${v.value} has that fix.` : ` MPICH ${v.value} predates that fix: on Intel GPUs the setting (or the narrower threshold) is still warranted.`)
			: '';
		return [finding(this, `MPIR_CVAR_NOLOCAL is on${listed ? ' (as this MPICH read it: mpivars)' : ''}${set ? ` (${set.name}=${set.value}, ${set.origin})` : ''}: MPICH operates "as though all processes are located on another node". Ranks on one node then talk through the network module instead of shared memory: no CUDA / GPU IPC between them, GPU messages within a node travel like messages between nodes. Users set it for two published reasons: wrong data in GPU receive buffers on Aurora (pmodels/mpich#7302, Intel GPUs; MPIR_CVAR_CH4_IPC_GPU_P2P_THRESHOLD above the largest message worked as well), a bug in MPICH's ze IPC handle code fixed in 4.3.1 and 5.0.0 (PR #7312);${release} And CSCS's advice for slow intra-node host-memory traffic with Cray MPICH (host buffers, not GPU ones). On NVIDIA GPUs the stale-cache risk MPICH has is its cudaFree interception (mpich-gpu-ipc-cache-hooks): switching that cache off (${sw.name}=${sw.off}: ${sw.how}) keeps shared memory.`,
			ev(listed?.evidence, set?.evidence, v?.evidence),
			{ text: 'Keep it only for the job it fixes; see what this MPICH reads with mpivars.', command: 'mpivars | grep -E "NOLOCAL|IPC_GPU"' })];
	},
};

export const mpichIpcCacheRules: readonly Rule[] = [staleCache, noLocal];
