/**
 * Known message signatures in tool and engine output (stderr, and the engine's stdout where UCX logs go):
 * each hit is kept as a fact with its line so rules can explain it (harmless noise included).
 */
import type { RawOutput } from '../../shared/report';
import type { LogSignature, LogSignatureKind } from '../facts';
import { lineEvidence, looksBinary, splitLines } from './text';

const SIGNATURES: { kind: LogSignatureKind; re: RegExp }[] = [
	{ kind: 'cuMemHostRegister-failed', re: /cuMemHostRegister\(.*failed|call to cuMemHostRegister/ },
	{ kind: 'pmix-bad-prefix', re: /process_repository_item.*has bad prefix/ },
	{ kind: 'ucm-memtype-handler', re: /failed to set UCM memtype event handler/ },
	// UCX cuda_copy deregistering host memory whose CUDA context is gone (openucx/ucx#9716; demoted to diag by PR #10643).
	{ kind: 'cuda-host-unregister-failed', re: /cu(da|Mem)HostUnregister\(.*failed/ },
	// UCX's cuda_ipc cache closing peer mappings with no usable CUDA context, at teardown (open-mpi/ompi#11855; UCX PR #10618).
	{ kind: 'cuda-ipc-close-failed', re: /cuIpcCloseMemHandle\(.*failed/ },
	{ kind: 'cuda-ipc-register-failed', re: /cuIpcGetMemHandle.*failed|failed to register address.*cuda_ipc/ },
	{ kind: 'pml-none-opened', re: /No components were able to be opened in the pml framework/ },
	{ kind: 'pml-ucx-transport-mismatch', re: /did not match transport list/ },
	// Open MPI 5.0.x's pml ucx when MPI_THREAD_MULTIPLE was asked for and the UCP worker is not multi-threaded (UCX
	// built without --enable-mt): "UCP worker does not support MPI_THREAD_MULTIPLE. PML UCX could not be selected"
	// (ompi/mca/pml/ucx/pml_ucx.c@v5.0.7, a warning; 4.1.x says it only at pml_ucx_verbose >= 1). Another pml runs.
	{ kind: 'pml-ucx-no-thread-multiple', re: /UCP worker does not support MPI_THREAD_MULTIPLE/ },
	{ kind: 'cuCtxGetCurrent-failed', re: /cuCtxGetCurrent failed/ },
	{ kind: 'gtl-not-linked', re: /GTL library is not linked/ },
	// The launcher's own refusal only ("<launcher> has detected an attempt to run as root.", orted_submit.c@v4.1.4):
	// a bare "--allow-run-as-root" also matched the collector's own note that it added the flag.
	{ kind: 'run-as-root-refused', re: /has detected an attempt to run as root/ },
	{ kind: 'not-enough-slots', re: /not enough slots available/ },
	{ kind: 'gpu-ib-different-socket', re: /GPU and IB selected are not on the same socket/ },
	// Open MPI 4.1 started by srun with a PMI plugin it was not built for (seen under --mpi=pmi2 and --mpi=none).
	{ kind: 'direct-launch-without-pmi', re: /appears to have been direct launched using "srun"|OMPI was not built with SLURM's PMI support/ },
	// Open MPI 4.1's [slurm-error2] (help-ess-base.txt@v4.1.4): built without Slurm support at all; printed for a
	// program started directly inside an allocation (SLURM_NODELIST set) too, with no srun involved.
	{ kind: 'ompi-no-slurm-support', re: /OMPI was not built with SLURM support/ },
	// Open MPI 5's [no-pmix-but] / [no-pmi] (help-mpi-runtime.txt@v5.0.7): no PMIx server reachable; under srun with a
	// PMI-1/2 plugin it starts singletons, otherwise MPI_Init fails.
	{ kind: 'ompi5-no-pmix', re: /No PMIx server was reachable, but a PMI1\/2 was detected|Open MPI requires access to a local PMIx server to execute/ },
	// The launch layer's own note (extension/core/launch/runLaunch.ts singletonStart): N engine documents of size 1.
	{ kind: 'singleton-start', re: /separate MPI jobs of world size 1 started instead of one job of/ },
	// libfabric's CXI provider (Slingshot) failing to map a buffer, seen with GPU-aware inter-node MPI (CSCS's Cray MPICH page).
	{ kind: 'cxil-map-write-error', re: /cxil_map: write error/ },
];

/** Most lines of one output that are scanned. */
const MAX_SCAN_LINES = 5000;
/** Most hits kept per kind and output. */
const MAX_HITS = 3;

/** Scan raw outputs for known message signatures. */
export function scanLogSignatures(raw: readonly RawOutput[]): LogSignature[] {
	const hits: LogSignature[] = [];
	for (const r of raw) {
		const texts: { text: string; source: string }[] = [{ text: r.stderr, source: `${r.id} (stderr)` }];
		if (r.id === 'engine') {
			texts.push({ text: r.stdout, source: r.id });
			if (r.notes?.length) { texts.push({ text: r.notes.join('\n'), source: `${r.id} (launcher note)` }); }
		}
		for (const { text, source } of texts) {
			if (text === '' || looksBinary(text)) { continue; }
			const counts = new Map<LogSignatureKind, number>();
			for (const l of splitLines(text).slice(0, MAX_SCAN_LINES)) {
				for (const s of SIGNATURES) {
					if (!s.re.test(l.text)) { continue; }
					const n = counts.get(s.kind) ?? 0;
					if (n < MAX_HITS) { hits.push({ kind: s.kind, evidence: lineEvidence(source, l) }); }
					counts.set(s.kind, n + 1);
				}
			}
		}
	}
	return hits;
}
