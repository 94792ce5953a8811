/**
 * The one entry point of the knowledge core: raw tool outputs in, facts + findings + header summary out.
 * Pure (depends only on `raw` and the label) and total: it never throws, whatever the input. The same function
 * analyses live inspections and offline bundles.
 */
import { paramDefsOf, withTypedFixes } from './params/fixParams';
import type { Finding, HostSummary, RawOutput, YesNoUnknown } from '../shared/report';
import { emptyFacts, Facts, ParseIssue } from './facts';
import { absentTools, buildFacts, type AbsentTool } from './parsers/buildFacts';
import { RULES, runRules } from './rules/index';
import { visibleGpus } from './rules/helpers';
import { cudaAwareness } from './rules/mpiRules';
import { transportNames } from './parsers/ucxInfo';
import { connectKind, failedConnection, unreachableFinding, unreachableSummary } from './unreachable';

/** Result of analysing one host. */
export interface Analysis { facts: Facts; findings: Finding[]; summary: HostSummary }

const IMPL_LABEL: Record<string, string> = { openmpi: 'Open MPI', mpich: 'MPICH', mvapich: 'MVAPICH', intel: 'Intel MPI', cray: 'Cray MPICH', unknown: 'Unknown MPI' };

/** Finding id of the programs the inspection looked for and did not find. */
export const NOT_INSTALLED_ID = 'tools-not-installed';

/**
 * One finding for every program that was not there (not on PATH, the engine not built), when one the inspection
 * expects everywhere (ompi_info, mpirun, the engine) is among them; else none (an Open MPI host without mpichversion or
 * nvidia-smi is normal). Nothing was read from them, so they are not "could not fully read" parse problems.
 */
function notInstalledFinding(absent: AbsentTool[]): Finding | null {
	if (!absent.some((t) => t.expected)) { return null; }
	const first = new Map<string, AbsentTool>();
	for (const t of absent) { if (!first.has(t.program)) { first.set(t.program, t); } }
	const tools = [...first.values()];
	const byReason = new Map<string, string[]>();
	for (const t of tools) {
		const why = t.id === 'engine' ? t.error.replace(/^engine /, '') : t.error;
		byReason.set(why, [...(byReason.get(why) ?? []), t.program]);
	}
	return {
		id: NOT_INSTALLED_ID, severity: 'info', title: `Not installed: ${tools.map((t) => t.program).join(', ')}`,
		message: `Looked for and not there: ${[...byReason].map(([why, names]) => `${names.join(', ')} (${why})`).join('; ')}. `
			+ 'Not installed here, or not on PATH (a module not loaded); nothing was read from them, and the other findings rest on what did run.',
		evidence: tools.map((t) => ({ source: t.id, line: `${t.command.join(' ') || t.id}: ${t.error}` })),
		source: 'GPU-MPI Doctor collector',
	};
}

function issueToFinding(i: ParseIssue): Finding {
	return {
		id: 'parse-problem', severity: i.severity, title: `Could not fully read ${i.source}`, message: i.message,
		evidence: i.evidence, source: 'GPU-MPI Doctor parsers',
	};
}

/** Build the panel header from the facts. */
export function summarize(facts: Facts, hostLabel: string): HostSummary {
	const impl = facts.mpi.implementation?.value ?? null;
	const mpiLabel = impl ? `${IMPL_LABEL[impl] ?? impl}${facts.mpi.version ? ' ' + facts.mpi.version.value : ''}` : 'not found';
	const a = cudaAwareness(facts);
	const cudaAware: YesNoUnknown = a.aware === null ? 'unknown' : a.aware ? 'yes' : 'no';
	const u = facts.ucx;
	let ucxCuda: YesNoUnknown = 'unknown';
	let ucxDetail = 'ucx_info not available';
	if (u) {
		const tls = transportNames(u);
		const cudaTls = tls.filter((t) => t.startsWith('cuda') || t === 'gdr_copy');
		if (cudaTls.length > 0) { ucxCuda = 'yes'; ucxDetail = `CUDA transports: ${cudaTls.join(', ')}`; }
		else if (u.builtWithCuda?.value === false || u.devicesListed) { ucxCuda = 'no'; ucxDetail = u.devicesListed ? `no CUDA transports (${tls.join(', ') || 'none listed'})` : 'built without CUDA'; }
		else if (u.builtWithCuda?.value === true) { ucxCuda = 'yes'; ucxDetail = 'built with CUDA (transports not listed)'; }
	}
	const r0 = facts.engine?.ranks[0];
	const driver = facts.gpu.driverVersion?.value ?? (r0 && r0.driverVersion > 0 ? `CUDA driver API ${Math.floor(r0.driverVersion / 1000)}.${(r0.driverVersion % 1000) / 10}` : facts.probe?.nvml?.driver_version ?? '');
	const cudaLabel = facts.gpu.cudaVersion ? `CUDA ${facts.gpu.cudaVersion.value}` : r0 && r0.driverVersion > 0 ? `CUDA ${Math.floor(r0.driverVersion / 1000)}.${(r0.driverVersion % 1000) / 10}` : visibleGpus(facts).count > 0 ? 'CUDA (version unknown)' : gpuChecked(facts) ? 'no GPU visible' : 'unknown (not checked)';
	let gpus: HostSummary['gpus'] = facts.gpu.gpus.map((g) => ({ index: g.index, name: g.name, pciBusId: g.pciBusId, memoryMiB: g.memoryMiB }));
	if (gpus.length === 0 && r0) {
		const devs = facts.engine?.document?.ranks[0]?.cuda.devices ?? [];
		gpus = devs.map((d) => ({ index: d.ordinal, name: d.name, pciBusId: d.pci_bus_id, memoryMiB: Math.round(d.total_mem_bytes / 1048576) }));
	}
	return {
		hostname: facts.identity.hostname?.value || r0?.host || hostLabel,
		mpi: { label: mpiLabel, cudaAware, detail: a.aware === false && a.stage === 'run time' && r0?.compileTime.value === true ? `built with CUDA but not CUDA-aware at run time: ${a.detail}` : a.detail },
		ucx: { label: u?.version ? `UCX ${u.version.value}` : u ? 'UCX (version unknown)' : 'not found', cuda: ucxCuda, detail: ucxDetail },
		cuda: { label: cudaLabel, driverVersion: driver },
		gpus,
	};
}

/** Did any source look for GPUs at all (nvidia-smi run, `which`, engine or probe)? */
function gpuChecked(facts: Facts): boolean {
	return facts.raw.some((r) => r.id.startsWith('nvidia_smi') || r.id === 'engine' || r.id === 'probe') || facts.which['nvidia-smi'] !== undefined;
}

function fallbackSummary(hostLabel: string): HostSummary {
	return {
		hostname: hostLabel, mpi: { label: 'unknown', cudaAware: 'unknown', detail: 'analysis failed' },
		ucx: { label: 'unknown', cuda: 'unknown', detail: '' }, cuda: { label: 'unknown', driverVersion: '' }, gpus: [],
	};
}

/** Analyse one host's raw outputs. Never throws. */
export function analyze(raw: readonly RawOutput[], hostLabel: string): Analysis {
	const unreached = failedConnection(raw);
	if (unreached) {
		// Nothing was looked at: one finding says why, and no rule may report the absence of anything.
		const facts = emptyFacts(hostLabel);
		facts.raw = raw.map(r => ({ id: r.id, ok: false, exitCode: r.exitCode, error: r.error ?? '' }));
		return { facts, findings: [unreachableFinding(unreached, hostLabel)], summary: unreachableSummary(hostLabel, connectKind(unreached).label) };
	}
	let facts: Facts;
	try {
		facts = buildFacts(raw, hostLabel);
	} catch (e) {
		// Defensive: parsers are written not to throw; if one does, report it rather than lose the host.
		facts = emptyFacts(hostLabel);
		facts.issues.push({ source: 'analyze', severity: 'warning', message: `parsing failed: ${e instanceof Error ? e.message : String(e)}`, evidence: [] });
	}
	// Fix commands are typed against this host's own parameter definitions (core/params/fixParams.ts).
	const notInstalled = notInstalledFinding(absentTools(raw));
	const findings = [...withTypedFixes(runRules(RULES, facts), paramDefsOf(raw)), ...(notInstalled ? [notInstalled] : []), ...facts.issues.map(issueToFinding)];
	let summary: HostSummary;
	try {
		summary = summarize(facts, hostLabel);
	} catch (e) {
		summary = fallbackSummary(hostLabel);
		findings.push({ id: 'parse-problem', severity: 'info', title: 'Summary failed', message: `summary failed: ${e instanceof Error ? e.message : String(e)}`, evidence: [] });
	}
	return { facts, findings, summary };
}
