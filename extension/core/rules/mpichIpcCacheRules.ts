/**
 * MPICH's GPU IPC handle cache going stale (issue 16 item 7): MPICH caches CUDA IPC handles of send buffers and
 * relies on intercepting cudaFree / cuMemFree to drop them; when the interception does not run (libcudart before
 * libmpich in the program's link order, or cudart linked statically), a freed and reallocated buffer can reuse a stale
 * handle: wrong data after "some dozens" of messages (pmodels/mpich#7304). What is read: the program's own
 * `readelf -d` / `readelf -sW` (raw outputs `readelf_d:<program>` and `readelf_s:<program>`, real outputs; the
 * collector has no program to read, so they come from a bundle today), the cache CVARs in the environment, MPICH's
 * configure line.
 */
import type { Finding } from '../../shared/report';
import type { Facts } from '../facts';
import { envSettings } from './helpers';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';

/** The cache switched off: MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled (mpich#7304) or MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=0 (PR #7862). */
function cacheDisabled(facts: Facts): { name: string; value: string; evidence: import('../../shared/report').Evidence } | null {
	for (const name of ['MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE', 'MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE']) {
		const s = envSettings(facts, name).find((e) => (name.endsWith('HANDLE_CACHE') ? /^disabled$/i.test(e.value) : e.value.trim() === '0'));
		if (s) { return { name, value: s.value, evidence: s.evidence }; }
	}
	return null;
}

const staleCache: Rule = {
	id: 'mpich-gpu-ipc-cache-hooks', severity: 'warning', title: 'MPICH cannot see this program\'s cudaFree: its GPU IPC cache can go stale',
	reads: ['programLinks[] (readelf_d:<program>, readelf_s:<program>)', 'env.MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE', 'env.MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE', 'mpi.mpich.configuredWithCuda'],
	appliesTo: { mpich: '>=4.0', cuda: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.mpichIssue7304, 'MPICH intercepts cudaFree to remove entries from its CUDA IPC handle cache; MPI libs must come before CUDA and cudart must not be linked statically; workaround MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled'),
		src(U.mpichPr6461, 'MPICH\'s own tests: "For the interception to work, libmpi need be linked before libcuda or libcudart"; a bcast then returned wrong data'),
		src(U.mpichIssue7302, 'the Aurora wrong-results report that the IPC handle cache work addressed (ze backend, fixed by PR #7312)'),
		src(U.mpichPr7862, 'MPICH 2026: one sender-side cache; MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=0 effectively disables caching'),
	],
	fixSummary: 'Link libmpich before libcudart (e.g. mpicc … -lmpich -lcudart, or put the CUDA libraries after the MPI ones) and never cudart_static; or set MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled (newer MPICH: MPIR_CVAR_CH4_IPC_GPU_CACHE_SIZE=0).',
	evaluate(facts) {
		const off = cacheDisabled(facts);
		const out: Finding[] = [];
		for (const { program, order: lo } of facts.programLinks) {
			if (!lo.mpi || !/mpich/.test(lo.mpi.soname)) { continue; }
			const late = lo.cudart && lo.cudart.index < lo.mpi.index;
			if (!late && !lo.staticCudart) { continue; }
			const why = late
				? `${program} needs ${lo.cudart?.soname} (DT_NEEDED #${(lo.cudart?.index ?? 0) + 1}) before ${lo.mpi.soname} (#${lo.mpi.index + 1}), so its cudaFree calls resolve to the CUDA runtime and never reach MPICH's hook`
				: `${program} has cudaFree linked in statically (cudart_static), which MPICH cannot intercept`;
			out.push(finding(this,
				`${why}. MPICH then keeps CUDA IPC handles of freed device buffers in its cache; a new buffer at a reused address can be sent with a stale handle: wrong data after some dozens of messages (pmodels/mpich#7304).${off ? ` ${off.name}=${off.value} is set, which turns the cache off: the risk is gone, at the cost of reopening IPC handles per message.` : ''} Note: Debian's mpicc.mpich puts -lmpich last, so "mpicc app.c -lcudart" gives this order.`,
				ev(lo.cudart?.evidence, lo.mpi.evidence, lo.staticCudart ?? undefined, off?.evidence),
				{ text: 'Link the MPI library first (or drop cudart_static), or switch the cache off.', command: 'export MPIR_CVAR_CH4_IPC_GPU_HANDLE_CACHE=disabled   # or relink: gcc app.o -lmpich -lcudart' },
				off ? 'info' : 'warning'));
		}
		return out;
	},
};

export const mpichIpcCacheRules: readonly Rule[] = [staleCache];
