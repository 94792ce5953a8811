/**
 * Two inspections side by side: each report as a plain text whose lines line up when nothing changed (what VS Code's
 * diff editor then shows is what changed: versions, the verdict, settings read, environment, findings, tools' exit
 * codes). Findings are sorted by id and severity, timings are left out, so only real changes differ. Pure.
 */
import { findingCounts, findingCountsText } from './headline';
import type { RawOutput, Report } from './report';

/** Environment variables a change of which changes what MPI does (module loads set them). */
const ENV_KEYS = /^(OMPI_|PMIX_|PRTE_|UCX_|MPICH_|MPIR_CVAR_|FI_|NCCL_|CUDA_|NVIDIA_|SLURM_(JOB_ID|NODELIST|NTASKS|STEP)|LD_LIBRARY_PATH$|PATH$|LOADEDMODULES$|MODULEPATH$)/;

const one = (s: unknown): string => String(s ?? '').replace(/[\r\n]+/g, ' ').trim();

function rawById(raw: readonly RawOutput[], id: string): RawOutput | undefined {
	return (Array.isArray(raw) ? raw : []).find(r => r?.id === id);
}

/** The text compared: one fact per line, stable order. */
export function comparableText(report: Report): string {
	const out: string[] = [];
	const s = report.summary;
	out.push(`Host: ${one(report.host?.label)} (${one(report.host?.kind)}), hostname ${one(s?.hostname)}`);
	out.push(`Inspected: ${one(report.createdAt)} by ${one(report.tool?.name)} ${one(report.tool?.version)}`);
	out.push(`Verdict: ${one(report.headline?.verdict ?? 'not recorded')}: ${one(report.headline?.text)}`);
	out.push('');
	out.push(`MPI: ${one(s?.mpi?.label)}; CUDA-aware: ${one(s?.mpi?.cudaAware)}; ${one(s?.mpi?.detail)}`);
	out.push(`UCX: ${one(s?.ucx?.label)}; CUDA transports: ${one(s?.ucx?.cuda)}; ${one(s?.ucx?.detail)}`);
	out.push(`CUDA driver: ${one(s?.cuda?.label)} ${one(s?.cuda?.driverVersion)}`.trimEnd());
	const gpus = Array.isArray(s?.gpus) ? s.gpus : [];
	out.push(`GPUs: ${gpus.length === 0 ? 'none reported' : gpus.map(g => `${one(g?.index)}: ${one(g?.name)} ${one(g?.pciBusId)}`).join('; ')}`);
	out.push('');
	const findings = [...(Array.isArray(report.findings) ? report.findings : [])]
		.sort((a, b) => one(a?.id).localeCompare(one(b?.id)) || one(a?.severity).localeCompare(one(b?.severity)));
	out.push(`Findings: ${findingCountsText(findingCounts(findings))}`);
	for (const f of findings) {
		out.push(`  [${one(f?.severity)}] ${one(f?.id)}: ${one(f?.title)}`);
		out.push(`      ${one(f?.message)}`);
		if (f?.fix?.command) { out.push(`      fix: ${one(f.fix.command)}`); }
	}
	out.push('');
	out.push('MCA parameter files read:');
	const files = (Array.isArray(report.raw) ? report.raw : []).filter(r => typeof r?.id === 'string' && r.id.startsWith('mca_params:'));
	if (files.length === 0) { out.push('  none'); }
	for (const r of files) {
		const lines = one(r.exitCode === 0 ? '' : `(${r.error ?? `exit ${r.exitCode}`})`);
		out.push(`  ${r.id.slice('mca_params:'.length)} ${lines}`.trimEnd());
		for (const l of String(r.stdout ?? '').split('\n')) { if (/^\s*[A-Za-z0-9_]+\s*=/.test(l)) { out.push(`      ${l.trim()}`); } }
	}
	out.push('');
	out.push('Environment (MPI, UCX, CUDA, Slurm, modules):');
	const env = String(rawById(report.raw, 'env')?.stdout ?? '').split('\n').filter(l => ENV_KEYS.test(l.split('=')[0] ?? '')).sort();
	out.push(...(env.length > 0 ? env.map(l => `  ${one(l)}`) : ['  none recorded']));
	out.push('');
	out.push('Tools:');
	for (const r of Array.isArray(report.raw) ? report.raw : []) {
		if (!r || typeof r.id !== 'string' || r.id.startsWith('mca_params:') || r.id === 'env') { continue; }
		const first = String(r.stdout ?? '').split('\n').find(l => l.trim() !== '') ?? '';
		out.push(`  ${r.id}: ${r.exitCode === null ? `did not run (${one(r.error)})` : `exit ${r.exitCode}`}${first ? `; ${one(first).slice(0, 160)}` : ''}`);
	}
	return `${out.join('\n')}\n`;
}
