/**
 * The CPU-affinity section of the transport map (`gpumpi-doctor map`'s text output): every rank of a map document
 * that carries an `affinity` object, judged by core/parsers/rankAffinity.ts, as one table row each.
 */
import type { MapDocument } from '../../shared/mapSchema';
import type { AffinityVerdict, RankAffinityJudgement } from '../facts';
import { AFFINITY_FIX, judgeAffinity, readRankAffinity } from '../parsers/rankAffinity';

/** Every rank of a map that carries an `affinity` object (older maps: none). */
export function mapAffinity(doc: MapDocument): RankAffinityJudgement[] {
	const out: RankAffinityJudgement[] = [];
	for (const r of doc.ranks) {
		const a = readRankAffinity(r.affinity);
		if (a) { out.push(judgeAffinity(r.rank, r.host, a, r.cpu_list)); }
	}
	return out;
}

/** Labels of the verdicts, for tables. */
export const AFFINITY_LABELS: Readonly<Record<AffinityVerdict, string>> = {
	local: 'local to its GPU', remote: 'OTHER NUMA NODE than its GPU', spans: 'spans NUMA nodes', unbound: 'not bound',
	single_node: 'one NUMA node', unknown: 'unknown',
};

/** The affinity section of the map's text output: one line per rank, then a fix line when a rank is remote. */
export function renderAffinityLines(judged: readonly RankAffinityJudgement[]): string[] {
	if (judged.length === 0) { return []; }
	const out = ['', '  CPU affinity   rank  cpus             NUMA      GPU               GPU NUMA  verdict'];
	for (const j of judged) {
		const gpuNuma = j.gpuNode !== null ? String(j.gpuNode) : j.gpuBusId ? '?' : '—';
		out.push(`                 ${String(j.rank).padStart(4)}  ${(j.cpuList || '?').padEnd(15)}  ${(j.cpuNodes.join(',') || '?').padEnd(8)}  ${(j.gpuBusId ?? 'no GPU').padEnd(16)}  ${gpuNuma.padEnd(8)}  ${AFFINITY_LABELS[j.verdict]}`);
	}
	if (judged.some((j) => j.verdict === 'remote')) {
		out.push(`  rank(s) ${judged.filter((j) => j.verdict === 'remote').map((j) => j.rank).join(',')} run on another NUMA node than their GPU: ${AFFINITY_FIX.command}`);
	}
	if (judged.some((j) => j.fakeSysfs)) { out.push('  (read from a fake sysfs tree: GPUMPI_TEST_SYSFS_ROOT, tests only)'); }
	return out;
}
