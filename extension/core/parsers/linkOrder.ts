/**
 * A program's link order against MPI and the CUDA runtime, from `readelf -d PROGRAM` (its DT_NEEDED entries, in
 * order) and `readelf -sW PROGRAM | grep -w cudaFree` (whether cudaFree is defined in the program: libcudart linked
 * statically). Why: MPICH intercepts cudaFree / cuMemFree to drop stale entries from its GPU IPC handle cache, which
 * works only when libmpi(ch) precedes libcudart and cudart is a shared library (pmodels/mpich#7304, PR #6461).
 */
import type { Evidence } from '../../shared/report';
import { lineEvidence, splitLines } from './text';
import type { LinkOrder } from '../facts';

const MPI_SONAME = /^lib(mpich|mpi)\.so/;

/** Parse the two outputs (`symbols` may be ''); `source` names the raw output for evidence. */
export function parseLinkOrder(dynamic: string, symbols: string, source: string, symbolsSource = source): LinkOrder {
	const needed: LinkOrder['needed'] = [];
	for (const l of splitLines(dynamic)) {
		const m = /\(NEEDED\)\s+Shared library: \[([^\]]+)\]/.exec(l.text);
		if (m) { needed.push({ soname: m[1], evidence: lineEvidence(source, l) }); }
	}
	const at = (re: RegExp): LinkOrder['mpi'] => {
		const index = needed.findIndex((n) => re.test(n.soname));
		return index < 0 ? null : { soname: needed[index].soname, index, evidence: needed[index].evidence };
	};
	let staticCudart: Evidence | null = null;
	for (const l of splitLines(symbols)) {
		// "2094: 000000000004ce20   474 FUNC    LOCAL  DEFAULT   15 cudaFree": a section number, not UND.
		if (/\bFUNC\b.*\s\d+\s+cudaFree$/.test(l.text.trim())) { staticCudart = lineEvidence(symbolsSource, l); break; }
	}
	return { needed, mpi: at(MPI_SONAME), cudart: at(/^libcudart\.so/), staticCudart };
}

/**
 * Which MPI a library soname belongs to: Open MPI's libmpi.so.40 (the 3.x–5.x ABI) → openmpi; libmpich.so.* and
 * libmpi.so.12 (the MPICH ABI, which MPICH, Intel MPI and MVAPICH share) → mpich; anything else → null.
 */
export function mpiFlavorOfSoname(soname: string): 'openmpi' | 'mpich' | null {
	if (/^libmpich\.so/.test(soname) || /^libmpi\.so\.12(\.|$)/.test(soname)) { return 'mpich'; }
	if (/^libmpi\.so\.40(\.|$)/.test(soname)) { return 'openmpi'; }
	return null;
}
