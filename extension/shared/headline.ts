/**
 * The one-line verdict a report opens with: will GPU buffers work with this MPI here, and why. Derived only from
 * what the report holds as data (the engine's per-rank facts, the header summary's tri-states, finding ids and
 * severities, the failed connection's note), never from a match on tool text. It never claims what was not looked
 * at: an unreachable host or a host without MPI gets "could not check" and what to do, not a verdict.
 * Pure, no Node, no DOM: used by the CLI, the panel and the HTML report.
 */
import type { EngineInspect } from './engineSchema';
import type { Finding, HostSummary, RawOutput } from './report';

/** works: MPI accepts device pointers (run time); fails: it does not; at-risk: it does but an error stands; not-checked: nothing to judge. */
export type HeadlineVerdict = 'works' | 'fails' | 'at-risk' | 'not-checked';

/** One thing the headline rests on: a finding (`finding:<id>`) or a fact (`engine.ranks[0].mpi.cuda_aware.run_time`). */
export interface HeadlineEvidence { ref: string; text: string }

export interface Headline {
	verdict: HeadlineVerdict;
	text: string;
	evidence: HeadlineEvidence[];
}

/** Finding ids (core/unreachable.ts, core/rules) the headline reads. */
const UNREACHABLE = 'host-unreachable';
const NO_MPI = 'mpi-not-found';
const NO_GPU = 'no-gpu-visible';
const GPUS_HIDDEN = 'cuda-visible-devices-hides-gpus';
/** Findings that restate "not CUDA-aware" rather than explain it: never given as the cause. */
const RESTATEMENTS = new Set(['mpi-not-cuda-aware', 'gpu-visible-mpi-not-cuda-aware']);

/** The failure class and its label from a failed connection's note ("reason: refused (connection refused)"). */
export function connectReason(r: RawOutput): { kind: string; label: string } {
	const note = (Array.isArray(r.notes) ? r.notes : []).find(n => typeof n === 'string' && n.startsWith('reason: ')) ?? '';
	const m = /^reason: (\S+) \((.*)\)$/.exec(note);
	return m ? { kind: m[1], label: m[2] } : { kind: 'other', label: 'ssh failed' };
}

function fromFinding(f: Finding): HeadlineEvidence {
	return { ref: `finding:${f.id}`, text: f.title };
}

/** The most serious finding that is not a restatement: errors first, then warnings, in report order. */
function cause(findings: readonly Finding[], skip: ReadonlySet<string>): Finding | undefined {
	for (const sev of ['error', 'warning'] as const) {
		const f = findings.find(x => x.severity === sev && !RESTATEMENTS.has(x.id) && !skip.has(x.id));
		if (f) { return f; }
	}
	return undefined;
}

/** The report's parts the headline reads (a Report fits; so does a half-filled one from an old file). */
export interface HeadlineInput {
	host?: { label?: string };
	summary?: Partial<HostSummary>;
	findings?: readonly Finding[];
	raw?: readonly RawOutput[];
	engine?: EngineInspect | null;
}

/** The headline of a report. Total: any input (an old report, a bundle) gives one. */
export function reportHeadline(report: HeadlineInput): Headline {
	const findings: Finding[] = Array.isArray(report.findings) ? report.findings.filter(f => typeof f?.id === 'string') : [];
	const byId = (id: string): Finding | undefined => findings.find(f => f.id === id);
	const host = report.summary?.hostname || report.host?.label || 'this host';

	const unreachable = byId(UNREACHABLE);
	if (unreachable) {
		const connect = (Array.isArray(report.raw) ? report.raw : []).find(r => r?.id === 'connect');
		const reason = connect ? connectReason(connect).label : 'the connection failed';
		return {
			verdict: 'not-checked', text: `Could not check ${report.host?.label || host}: cannot reach it (${reason}) — nothing was run there`,
			evidence: [fromFinding(unreachable), ...unreachable.evidence.slice(-1).map(e => ({ ref: e.source, text: e.line }))],
		};
	}
	const noMpi = byId(NO_MPI);
	if (noMpi) {
		return { verdict: 'not-checked', text: 'No MPI found here: nothing to check yet (load an MPI module, e.g. module load openmpi, and inspect again)', evidence: [fromFinding(noMpi)] };
	}

	const ranks = Array.isArray(report.engine?.ranks) ? report.engine!.ranks : [];
	const r0 = ranks[0];
	const evidence: HeadlineEvidence[] = [];
	// No GPU / no driver: said first, since then no MPI can use GPU buffers here whatever it is built with.
	const noDriver = ranks.length > 0 && ranks.every(r => r?.cuda?.driver_loaded === false);
	const noDevice = ranks.length > 0 && !noDriver && ranks.every(r => r?.cuda?.device_count === 0);
	const noGpu = byId(NO_GPU);
	const hidden = byId(GPUS_HIDDEN);
	if (noDriver || noDevice || noGpu || hidden) {
		if (noDriver) { evidence.push({ ref: 'engine.ranks[].cuda.driver_loaded', text: `false in ${ranks.length} rank(s): ${r0.cuda.error || r0.cuda.library}` }); }
		if (noDevice) { evidence.push({ ref: 'engine.ranks[].cuda.device_count', text: `0 in ${ranks.length} rank(s)` }); }
		for (const f of [hidden, noGpu]) { if (f) { evidence.push(fromFinding(f)); } }
		const why = hidden ? 'CUDA_VISIBLE_DEVICES hides the GPUs' : noDriver ? 'no CUDA driver (libcuda.so.1 could not be loaded)' : 'no GPU visible';
		const mpi = mpiAwareness(report, r0, evidence);
		return { verdict: 'not-checked', text: `No GPU here: ${why}, so GPU buffers cannot be checked on ${host}${mpi ? ` (the MPI itself: ${mpi})` : ''}`, evidence };
	}

	const aware = r0?.mpi?.cuda_aware;
	if (aware && (aware.compile_time === false || aware.run_time === false)) {
		const stage = aware.compile_time === false ? 'built without CUDA support (compile time)' : 'not CUDA-aware at run time';
		evidence.push(aware.compile_time === false
			? { ref: 'engine.ranks[0].mpi.cuda_aware.compile_time', text: 'false (MPIX_CUDA_AWARE_SUPPORT)' }
			: { ref: 'engine.ranks[0].mpi.cuda_aware.run_time', text: `false (${aware.query || 'run-time query'})` });
		const c = cause(findings, new Set());
		if (c) { evidence.push(fromFinding(c)); }
		return { verdict: 'fails', text: `GPU buffers will NOT work with this MPI: ${stage}${c ? `, because ${lowerFirst(c.title)}` : ''}`, evidence };
	}
	if (aware && aware.run_time === true) {
		evidence.push({ ref: 'engine.ranks[0].mpi.cuda_aware.run_time', text: `true (${aware.query || 'run-time query'})` });
		const err = findings.find(f => f.severity === 'error');
		if (err) {
			evidence.push(fromFinding(err));
			return { verdict: 'at-risk', text: `GPU buffers may fail here: MPI accepts device pointers (run time check), but ${lowerFirst(err.title)}`, evidence };
		}
		return { verdict: 'works', text: 'GPU buffers: MPI accepts device pointers here (run time check) — see the reproducers for what it does with them', evidence };
	}

	// The engine did not run (or its MPI has no run-time query): only the build-time answer of the header.
	const built = report.summary?.mpi?.cudaAware;
	const detail = report.summary?.mpi?.detail || '';
	evidence.push({ ref: 'summary.mpi.cudaAware', text: `${built ?? 'unknown'}${detail ? ` (${detail})` : ''}` });
	const notRun = r0 ? 'the MPI has no run-time CUDA query' : 'the engine did not run';
	if (built === 'no') {
		const c = cause(findings, new Set());
		if (c) { evidence.push(fromFinding(c)); }
		return { verdict: 'fails', text: `GPU buffers will NOT work with this MPI: not CUDA-aware (build check; ${notRun})${c ? `, because ${lowerFirst(c.title)}` : ''}`, evidence };
	}
	if (built === 'yes') {
		return { verdict: 'not-checked', text: `GPU buffers: this MPI is built with CUDA, but whether it accepts device pointers was not checked (${notRun})`, evidence };
	}
	return { verdict: 'not-checked', text: `Could not tell whether GPU buffers work here: no source said whether the MPI is CUDA-aware (${notRun})`, evidence };
}

/** The MPI's own answer, for the no-GPU headline (so a CPU machine still learns what its MPI is). */
function mpiAwareness(report: HeadlineInput, r0: EngineInspect['ranks'][number] | undefined, evidence: HeadlineEvidence[]): string {
	const a = r0?.mpi?.cuda_aware;
	if (a?.compile_time === false) { evidence.push({ ref: 'engine.ranks[0].mpi.cuda_aware.compile_time', text: 'false' }); return 'built without CUDA support'; }
	if (a?.run_time === false) { evidence.push({ ref: 'engine.ranks[0].mpi.cuda_aware.run_time', text: 'false' }); return 'not CUDA-aware at run time'; }
	if (a?.run_time === true) { evidence.push({ ref: 'engine.ranks[0].mpi.cuda_aware.run_time', text: 'true' }); return 'CUDA-aware at run time'; }
	const built = report.summary?.mpi?.cudaAware;
	if (built === 'yes' || built === 'no') {
		evidence.push({ ref: 'summary.mpi.cudaAware', text: built });
		return built === 'yes' ? 'built with CUDA (build check)' : 'not CUDA-aware (build check)';
	}
	return '';
}

function lowerFirst(s: string): string {
	return s.length > 1 && /^[A-Z][a-z]/.test(s) ? s[0].toLowerCase() + s.slice(1) : s;
}

/** How many findings of each severity a report has: the one count the panel, Hosts tree, status bar, Problems and CLI show. */
export interface FindingCounts { error: number; warning: number; info: number }

export function findingCounts(findings: readonly Pick<Finding, 'severity'>[] | undefined): FindingCounts {
	const c: FindingCounts = { error: 0, warning: 0, info: 0 };
	const list: readonly Pick<Finding, 'severity'>[] = Array.isArray(findings) ? findings : [];
	for (const f of list) {
		const sev: unknown = f?.severity;
		if (sev === 'error' || sev === 'warning' || sev === 'info') { c[sev]++; }
	}
	return c;
}

/** "0 errors, 3 warnings, 4 info" (the same words everywhere). */
export function findingCountsText(c: FindingCounts): string {
	return `${c.error} error${c.error === 1 ? '' : 's'}, ${c.warning} warning${c.warning === 1 ? '' : 's'}, ${c.info} info`;
}
