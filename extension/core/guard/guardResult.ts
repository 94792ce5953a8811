/**
 * The result document of one guarded run (schema gpumpi-guard-result/1, docs/guard-schema.md): what was run, how it
 * ended, the merge (verdict, totals, findings, per-pair traffic, the traffic map) and the per-rank reports. Written by
 * `gpumpi-doctor guard --json` / `--out` and shown by the VS Code command.
 */
import * as os from 'node:os';
import { REPORT_SCHEMA, type Finding, type Report } from '../../shared/report';
import { printable } from './guardMerge';
import type { MapDocument } from '../../shared/mapSchema';
import type { GuardRankReport } from '../parsers/guardReport';
import type { GuardCallTotal, GuardMerge, GuardPairTraffic, GuardTotals } from './guardMerge';
import type { GuardRunOutcome } from './guardRunner';

/** Schema id of the result document. */
export const GUARD_RESULT_SCHEMA = 'gpumpi-guard-result/1';

/** The result document. */
export interface GuardResult {
	schema: typeof GUARD_RESULT_SCHEMA;
	tool: { name: string; version: string };
	createdAt: string;
	/** Where it ran ("this machine" or the ssh host's label). */
	where: string;
	mode: string;
	flavor: 'openmpi' | 'mpich';
	guardLib: string;
	/** The user's command, and the command line as run (with the guard's options inserted). */
	command: string[];
	argv: string[];
	how: GuardRunOutcome['how'];
	exitCode: number | null;
	signal: string | null;
	timedOut: boolean;
	error: string | null;
	durationMs: number;
	verdict: string;
	ranks: { expected: number | null; worldSize: number | null; reported: number; missing: number[] };
	totals: GuardTotals;
	calls: GuardCallTotal[];
	traffic: GuardPairTraffic[];
	findings: Finding[];
	map: MapDocument | null;
	reports: GuardRankReport[];
	notes: string[];
}

/** Assemble the document. */
export function guardResult(args: {
	version: string; where: string; mode: string; flavor: 'openmpi' | 'mpich'; guardLib: string; command: string[];
	outcome: GuardRunOutcome; merge: GuardMerge;
}): GuardResult {
	const { outcome: o, merge: m } = args;
	return {
		schema: GUARD_RESULT_SCHEMA,
		tool: { name: 'gpumpi-doctor', version: args.version },
		createdAt: new Date().toISOString(),
		where: args.where, mode: args.mode, flavor: args.flavor, guardLib: args.guardLib,
		command: args.command, argv: o.argv, how: o.how,
		exitCode: o.result.exitCode, signal: o.result.signal, timedOut: o.result.timedOut, error: o.result.error ?? null,
		durationMs: o.result.durationMs,
		verdict: m.verdict,
		ranks: { expected: o.expectedRanks, worldSize: m.worldSize, reported: m.reports.length, missing: m.missingRanks },
		totals: m.totals, calls: m.calls, traffic: m.traffic, findings: [...m.findings, ...(o.linkFindings ?? [])], map: m.map, reports: m.reports,
		notes: o.notes,
	};
}

/**
 * The exit codes `gpumpi-doctor guard` keeps for itself, in the scheme of timeout(1) and env(1) (GNU coreutils; POSIX
 * for 126 / 127, shells for 128+N): so that a program's own 2 or 3 is never read as the CLI's usage error or failure.
 */
export const GUARD_EXIT = {
	/** --timeout stopped the program. */
	timedOut: 124,
	/** The guard itself failed: a usage error, no guard library, no report directory, --out not written, the host lost. */
	guardFailed: 125,
	/** The command was found but could not be run (permission denied, not an executable). */
	cannotRun: 126,
	/** The command was not found. */
	notFound: 127,
	/** Ctrl-C: the whole job was ended (128 + SIGINT, as a shell reports it). */
	interrupted: 130,
} as const;

/**
 * The exit code `gpumpi-doctor guard` gives for a run: the program's own when it exited (whatever the findings); 128+N
 * when a signal N ended it; else GUARD_EXIT's code for why it has none (timed out, not found, not runnable, the guard's
 * own failure). Only a program that itself exits 124–127 or above 128 can be mistaken for these; the result document
 * (`exitCode`, `signal`, `timedOut`, `error`) tells them apart.
 */
export function guardExitCode(r: Pick<GuardResult, 'exitCode' | 'signal' | 'timedOut' | 'error'>): number {
	if (r.exitCode !== null) { return r.exitCode; }
	if (r.timedOut) { return GUARD_EXIT.timedOut; }
	const signal = r.signal !== null ? (os.constants.signals as Record<string, number | undefined>)[r.signal] : undefined;
	if (signal !== undefined) { return 128 + signal; }
	if (/^not found/.test(r.error ?? '')) { return GUARD_EXIT.notFound; }
	if (/^(permission denied|not an executable)/.test(r.error ?? '')) { return GUARD_EXIT.cannotRun; }
	return GUARD_EXIT.guardFailed;
}

/** MPI calls of the run whose buffer was GPU memory (device, managed, pool, VMM or IPC-imported), over every rank. */
export function gpuBufferCalls(r: Pick<GuardResult, 'reports'>): number {
	const gpu = (c: Record<string, number>): number => Object.entries(c).reduce((s, [k, n]) => s + (k === 'host' || k === 'pinned-host' ? 0 : n), 0);
	return r.reports.reduce((s, rep) => s + rep.peers.reduce((t, p) => t + gpu(p.bufferClasses), 0) + rep.collectives.reduce((t, c) => t + gpu(c.bufferClasses), 0), 0);
}

/**
 * The result as an inspection-style Report, for the diagnostics panel (findings with evidence, fixes and sources;
 * the verdict as the headline; the command as its one raw output).
 */
export function guardInspectionReport(r: GuardResult, host: { id: string; label: string; kind: 'local' | 'ssh' }, output: { stdout: string; stderr: string }): Report {
	const first = r.reports[0];
	const dangerous = r.findings.some(f => f.severity === 'error');
	const risky = r.findings.some(f => f.severity === 'warning');
	const gpu = gpuBufferCalls(r);
	// "works" only for what was seen: GPU buffers that went through MPI without a dangerous combination. A run that
	// passed no GPU buffer to MPI says nothing about GPU buffers (a host-buffer hello-world is not a green light).
	const verdict = dangerous ? 'fails' : risky ? 'at-risk' : r.reports.length > 0 && gpu > 0 ? 'works' : 'not-checked';
	const text = verdict === 'not-checked' && r.reports.length > 0 ? `${r.verdict} No GPU buffer was passed to MPI in this run, so it says nothing about GPU buffers.` : r.verdict;
	return {
		schema: REPORT_SCHEMA,
		tool: r.tool,
		createdAt: r.createdAt,
		host,
		summary: {
			hostname: first ? printable(first.host) : host.label,
			mpi: { label: first?.mpi.library ? printable(first.mpi.library.split(',')[0]) : 'unknown', cudaAware: first?.mpi.cudaAware ?? 'unknown', detail: first ? `pml ${printable(first.mpi.pml ?? 'unknown')} (gpumpi-guard, ${r.mode} mode)` : '' },
			ucx: { label: first?.mpi.pml === 'ucx' ? 'UCX' : 'not used', cuda: first?.mpi.ucxCudaIpc === null || !first ? 'unknown' : first.mpi.ucxCudaIpc ? 'yes' : 'no', detail: first?.mpi.ucxCudaIpc === null || !first ? '' : `cuda_ipc ${first.mpi.ucxCudaIpc ? 'allowed' : 'excluded'} by UCX_TLS` },
			cuda: { label: first?.cuda.available ? 'loaded by the program' : 'not loaded', driverVersion: '' },
			gpus: [],
		},
		headline: { verdict, text, evidence: r.findings.slice(0, 3).map(f => ({ ref: `finding:${f.id}`, text: f.title })) },
		findings: r.findings,
		facts: { guard: { totals: r.totals, traffic: r.traffic, ranks: r.ranks } },
		raw: [{ id: 'guard-command', command: r.argv, exitCode: r.exitCode, stdout: output.stdout, stderr: output.stderr, durationMs: r.durationMs, error: r.error ?? undefined, timedOut: r.timedOut, notes: r.notes }],
		engine: null,
		probe: null,
		elapsedMs: r.durationMs,
	};
}
