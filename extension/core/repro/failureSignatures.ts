/**
 * The library of failure signatures read from ONE trial's own output: log lines, backtrace frames and exit shapes
 * seen in real runs (test-fixtures/repro/h200-testbed/, test-fixtures/repro/*.stdout), each with the explanation that
 * may be attached to that trial only when the signature is present in it. Failure modes (outcome, signal, the
 * signatures found) group the failing trials of a variant with counts and one sample log each.
 * Pure: text in, findings out; never throws on garbage.
 */
import type { FailureMode, IpcVariantResult, SignatureHit } from '../../shared/reproSchema';
import { cleanLine } from '../parsers/text';

/** One known failure signature. */
export interface FailureSignature {
	id: string;
	/** Short name for failure-mode labels, e.g. "SIGSEGV in ucp_dt_pack". */
	title: string;
	/** Any of these lines marks the signature (tested line by line). */
	lines: RegExp[];
	/** Only for trials with one of these outcomes (exit shape); empty: any failing outcome. */
	outcomes?: string[];
	/** Only when the trial's signal is one of these. */
	signals?: number[];
	/** What it means (attached only to trials that carry the signature). */
	explanation: string;
	/** Public source of the explanation. */
	source?: string;
	/** Only for trials of these variants (the same log line can mean different things with different memory). */
	variants?: string[];
	/** Never for trials of these variants. */
	notVariants?: string[];
}

/** The signatures; the first four were seen on the H200 testbed (docs/device-results.md). */
export const FAILURE_SIGNATURES: readonly FailureSignature[] = [
	{
		id: 'cuda-ipc-reexport',
		title: 'cuda_ipc: cuIpcGetMemHandle on imported memory',
		lines: [/cuIpcGetMemHandle\(.*\)\(\) failed: invalid argument/, /failed to register address .* on md\[\d+\]=cuda_ipc/],
		explanation: 'UCX\'s cuda_ipc transport tries to export the buffer again (cuIpcGetMemHandle on memory this process only imported, which CUDA refuses with "invalid argument") and registers it on no other GPU transport (openucx/ucx src/uct/cuda/cuda_ipc/cuda_ipc_md.c).',
		source: 'https://github.com/openucx/ucx/blob/v1.13.1/src/uct/cuda/cuda_ipc/cuda_ipc_md.c',
		// The pool and vmm variants import nothing: there the same refusal is about the memory kind (below).
		notVariants: ['pool', 'vmm'],
	},
	{
		id: 'cuda-ipc-not-legacy',
		title: 'cuda_ipc: cuIpcGetMemHandle refused for pool / VMM memory',
		lines: [/cuIpcGetMemHandle\(.*\)\(\) failed: invalid argument/, /failed to register address .* on md\[\d+\]=cuda_ipc/],
		explanation: 'UCX\'s cuda_ipc transport asked CUDA for a legacy IPC handle of the buffer (cuIpcGetMemHandle), which CUDA refuses with "invalid argument" for stream-ordered pool and VMM memory (not legacy-IPC capable: the memory IPC probe of gpumpi inspect shows it). This says why cuda_ipc was not used for the buffer, not why the run ended.',
		source: 'https://github.com/openucx/ucx/issues/7110',
		variants: ['pool', 'vmm'],
	},
	{
		id: 'cma-bad-address',
		title: 'cma: process_vm_writev on GPU memory',
		// The log line itself (`process_vm_writev(…) … Bad address`) and the frame of the abort that follows it.
		lines: [/process_vm_(?:writev|readv).*Bad address/, /libuct_cma\.so[^(]*\(uct_cma_ep_tx\+/],
		explanation: 'UCX\'s cma transport (process_vm_writev/readv between processes, host memory only) was handed a GPU address: UCX took the imported device memory for host memory, the kernel answers EFAULT (Bad address) and UCX aborts the process. UCX cannot tell the memory type of memory it did not allocate when its memory-type hooks are missing ("failed to set UCM memtype event handler").',
		source: 'https://man7.org/linux/man-pages/man2/process_vm_readv.2.html',
	},
	{
		id: 'ucp-dt-pack-segv',
		title: 'SIGSEGV in ucp_dt_pack',
		lines: [/\bucp_dt_pack\+0x/],
		signals: [11],
		explanation: 'UCX copied the message with the CPU (ucp_dt_pack, a memcpy for a bcopy protocol over shared memory) from memory it took for host memory, and the CPU faulted on the GPU address ("invalid permissions for mapped object").',
		source: 'https://github.com/openucx/ucx/blob/v1.13.1/src/ucp/dt/dt.c',
	},
	{
		id: 'tcp-send-eio-hang',
		title: 'tcp: send() EIO, then a hang',
		lines: [/tcp_ep\.c:\d+\s+UCX\s+ERROR .*send\(\d+\) failed: Input\/output error/],
		outcomes: ['timed_out'],
		explanation: 'UCX\'s tcp transport handed a GPU address to send(), which fails with EIO; the endpoint error is not handled ("will not be handled since no error callback is installed"), so the peer waits for a message that never comes until the run is killed.',
		source: 'https://github.com/openucx/ucx/blob/v1.13.1/src/uct/tcp/tcp_ep.c',
	},
	{
		id: 'injected-crash',
		title: 'deliberate test crash (--inject)',
		lines: [/gpumpi repro: rank \d+ now (?:stores through address 0x10|calls abort\(\)) \(--inject /],
		explanation: 'A deliberate crash of the engine\'s test hook (--inject), not a fault of the MPI stack.',
	},
	{
		id: 'injected-wrong',
		title: 'deliberate wrong data (--inject wrong-fraction)',
		lines: [/gpumpi repro: rank \d+ now overwrites the received data before verifying it \(--inject /],
		outcomes: ['wrong_data'],
		explanation: 'A deliberate wrong result of the engine\'s test hook (--inject wrong-fraction): the owner overwrote what it received before verifying it; not a fault of the MPI stack.',
	},
	{
		id: 'injected-hang',
		title: 'deliberate test hang (--inject hang)',
		lines: [/gpumpi repro: rank \d+ now sleeps forever \(--inject hang/],
		outcomes: ['timed_out'],
		explanation: 'A deliberate hang of the engine\'s test hook (--inject hang), not a fault of the MPI stack.',
	},
];

/** Most lines of one trial's log that are scanned. */
const MAX_SCAN_LINES = 20_000;

/**
 * The signatures present in one trial's log, with the first matching line of each. Correct trials are read too: a
 * signature that also shows in correct trials (cuda_ipc's refused re-export does, UCX carries on) is not by itself
 * the cause of a failure, and the verdict says so.
 */
export function matchSignatures(log: string, outcome: string, signal: number | null, variant?: string): SignatureHit[] {
	const hits: SignatureHit[] = [];
	const lines = log.split(/\r\n|\n|\r/).slice(0, MAX_SCAN_LINES);
	for (const s of FAILURE_SIGNATURES) {
		if (variant !== undefined && (s.variants?.includes(variant) === false || s.notVariants?.includes(variant))) { continue; }
		if (variant === undefined && s.variants) { continue; }
		if (s.outcomes && !s.outcomes.includes(outcome)) { continue; }
		if (s.signals && (signal === null || !s.signals.includes(signal))) { continue; }
		const line = lines.find(l => s.lines.some(re => re.test(l)));
		if (line !== undefined) { hits.push({ id: s.id, line: cleanLine(line.trim()) }); }
	}
	return hits;
}

/** Lines that read as an error (first ones first: the first error is usually the cause). */
const UCX_ERROR = /\bUCX\s+ERROR\b/;
const ERROR_LINE = /\b(error|errors|invalid|failed|failure|cannot|unable|abort(ed)?|not found|unreachable|refused)\b/i;

/**
 * The first `max` error-looking lines of a run without a result (stderr first, then stdout), trimmed and cleaned, for
 * the run's detail: the evidence of why it printed nothing. Our own rank announcements are skipped.
 */
export function errorLines(stdout: string, stderr: string, max = 2): string[] {
	const out: string[] = [];
	// UCX's own error lines first (UCX logs to stdout, so stream order says nothing about which came first).
	for (const [text, re] of [[stdout, UCX_ERROR], [stderr, UCX_ERROR], [stderr, ERROR_LINE], [stdout, ERROR_LINE]] as const) {
		for (const raw of text.split(/\r\n|\n|\r/).slice(0, MAX_SCAN_LINES)) {
			const l = raw.trim();
			if (!l || l.startsWith('@@GPUMPI') || !re.test(l)) { continue; }
			const c = cleanLine(l).slice(0, 240);
			if (!out.includes(c)) { out.push(c); }
			if (out.length >= max) { return out; }
		}
	}
	return out;
}

/** The signature record of an id. */
export function signatureById(id: string): FailureSignature | undefined {
	return FAILURE_SIGNATURES.find(s => s.id === id);
}

const SIGNAL_SHORT: Record<number, string> = { 4: 'SIGILL', 6: 'SIGABRT', 7: 'SIGBUS', 8: 'SIGFPE', 9: 'SIGKILL', 11: 'SIGSEGV', 15: 'SIGTERM' };

/** The failure-mode key of a failing trial: outcome, signal, signatures (ranks are listed, not keyed). */
export function failureModeKey(t: Pick<IpcVariantResult, 'outcome' | 'signal' | 'signalName' | 'signatures'>): string {
	const sig = t.outcome === 'crashed' ? (t.signal !== null ? SIGNAL_SHORT[t.signal] ?? `signal ${t.signal}` : t.signalName ?? 'signal ?') : '';
	return [t.outcome, sig, ...t.signatures.map(h => h.id).sort()].filter(Boolean).join('|');
}

/**
 * A readable label: "crashed (SIGSEGV): SIGSEGV in ucp_dt_pack". A launch error without a signature is labelled with
 * its own detail (what the launcher said: "mpirun.openmpi could not start /x/gpumpi on node vm (…)").
 */
export function failureModeLabel(t: Pick<IpcVariantResult, 'outcome' | 'signal' | 'signalName' | 'signatures'> & { detail?: string }): string {
	if (t.outcome === 'launch_error' && t.signatures.length === 0 && t.detail) { return `launch error: ${t.detail}`; }
	const what = t.outcome === 'crashed'
		? `crashed (${t.signal !== null ? SIGNAL_SHORT[t.signal] ?? `signal ${t.signal}` : t.signalName ?? 'signal ?'})`
		: t.outcome === 'timed_out' ? 'hung (killed at the time limit)' : t.outcome.replace(/_/g, ' ');
	const sigs = t.signatures.map(h => signatureById(h.id)?.title ?? h.id);
	return sigs.length > 0 ? `${what}: ${sigs.join('; ')}` : `${what}: no known signature in its output`;
}

/** Group the failing trials of one variant into distinct failure modes (largest first), one sample log each. */
export function groupFailureModes(trials: readonly IpcVariantResult[]): FailureMode[] {
	const modes = new Map<string, FailureMode>();
	for (const t of trials) {
		if (t.outcome === 'correct') { continue; }
		const key = failureModeKey(t);
		let m = modes.get(key);
		if (!m) {
			m = {
				key, label: failureModeLabel(t), outcome: t.outcome, signal: t.signal, count: 0, trials: [], ranks: [],
				signatures: t.signatures.map(h => h.id), explanations: [], sampleTrial: t.trial, sampleLog: t.log, sampleEvidence: t.evidence.slice(0, 12),
			};
			for (const h of t.signatures) {
				const s = signatureById(h.id);
				if (s) { m.explanations.push(`${s.explanation}${s.source ? ` (${s.source})` : ''} — seen: ${h.line}`); }
			}
			modes.set(key, m);
		}
		m.count++;
		m.trials.push(t.trial);
		if (t.crashedRank !== null && !m.ranks.includes(t.crashedRank)) { m.ranks.push(t.crashedRank); m.ranks.sort((a, b) => a - b); }
	}
	return [...modes.values()].sort((a, b) => b.count - a.count || a.key.localeCompare(b.key));
}
