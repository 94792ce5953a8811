/**
 * The IPC report's answer from per-variant trial summaries: does receiving into an IPC-imported pointer work here
 * (works / fails / unreliable / inconclusive per configuration, never from one trial), why (each failure mode with its
 * count, and an explanation only where its signature was in that mode's own trials), what works instead (only
 * variants whose every trial was correct, with the count), and under which conditions the answer holds.
 */
import { ipcBounceFix } from './fallbackFix';
import type { IpcConditions, IpcVariantSummary, IpcVerdict, TrialClass } from '../../shared/reproSchema';
import { DEFAULT_TRIALS, percent } from '../../shared/trialStats';
import { signatureById } from './failureSignatures';

/** What the verdict needs besides the summaries. */
export interface IpcVerdictContext {
	/** Message size of the runs (null: unknown, e.g. an old saved result). */
	sizeBytes: number | null;
	partial?: boolean;
}

function label(v: IpcVariantSummary, multiConfig: boolean): string {
	return multiConfig ? `${v.variant} (${v.config})` : v.variant;
}

function sizeText(b: number): string {
	if (b >= 1 << 30 && b % (1 << 30) === 0) { return `${b / (1 << 30)} GiB`; }
	if (b >= 1 << 20 && b % (1 << 20) === 0) { return `${b / (1 << 20)} MiB`; }
	if (b >= 1024 && b % 1024 === 0) { return `${b / 1024} KiB`; }
	return `${b} B`;
}

/** "crashed ×2, hung ×1" for a summary's failing outcomes. */
function failureCounts(v: IpcVariantSummary): string {
	const names: Record<string, string> = { crashed: 'crashed', timed_out: 'hung', wrong_data: 'wrong data', mpi_error: 'MPI error', setup_error: 'set-up error', no_output: 'no result' };
	return Object.entries(v.counts).filter(([o, n]) => n > 0 && o in names).map(([o, n]) => `${names[o]} ×${n}`).join(', ');
}

/** Message size, protocol, placement and memory the answer holds under, and what the trials could have missed. */
export function ipcConditions(variants: IpcVariantSummary[], sizeBytes: number | null): IpcConditions {
	const runs = variants.flatMap(v => v.runs);
	const memory = runs.find(r => r.memory)?.memory ?? null;
	const hosts = [...new Set(runs.flatMap(r => r.ranks.map(k => k.host)).filter(h => h !== ''))];
	const protocol = sizeBytes === null ? 'message size unknown'
		: sizeBytes >= 1 << 20 ? `rendezvous: ${sizeText(sizeBytes)} is above the default eager limits of UCX and Open MPI's BTLs (tens of KiB at most); small (eager) messages were not tested`
			: sizeBytes <= 1024 ? `eager: ${sizeText(sizeBytes)} is below every default rendezvous threshold; large (rendezvous) messages were not tested`
				: `${sizeText(sizeBytes)} lies near the eager/rendezvous thresholds: which protocol carried it depends on the transport (UCX_PROTO_INFO=y shows it)`;
	const placement = hosts.length === 0 ? 'placement unknown (no run printed its ranks)'
		: hosts.length === 1 ? `all ranks on one node (${hosts[0]}): imports and sends intra-node; the inter-node case was not run`
			: `ranks on ${hosts.length} nodes (${hosts.join(', ')}): imports intra-node, sends inter-node`;
	const minMeasured = Math.min(...variants.filter(v => v.variant !== 'crash-test').map(v => v.trials), Infinity);
	const missed: string[] = [];
	if (Number.isFinite(minMeasured) && minMeasured > 1) {
		missed.push(`failures rarer than ${percent(1 - Math.pow(0.05, 1 / minMeasured))} per run (${minMeasured} trials rule out only higher rates at 95 %; ${DEFAULT_TRIALS} trials catch a 25 % rate with 95 % probability)`);
	} else if (minMeasured === 1) {
		missed.push(`any failure that does not happen every time (one trial rules out nothing; ${DEFAULT_TRIALS} trials catch a 25 % rate with 95 % probability)`);
	}
	missed.push(sizeBytes !== null && sizeBytes >= 1 << 20 ? 'eager-sized messages' : 'rendezvous-sized messages');
	if (hosts.length <= 1) { missed.push('sends between nodes'); }
	if (memory === 'host') { missed.push('GPU memory (the runs used host memory: no GPU verdict)'); }
	return { sizeBytes, protocol, placement, memory, missed };
}

/** The why-lines of one failing summary: its failure modes with counts and the explanations their signatures carry. */
function whyLines(v: IpcVariantSummary, multi: boolean, all: IpcVariantSummary[]): string[] {
	const out: string[] = [`${label(v, multi)}: ${v.sentence}${failureCounts(v) ? ` — ${failureCounts(v)}` : ''}.`];
	for (const m of v.failureModes) {
		out.push(`  ${m.label}: ${m.count} of ${v.trials} (trial${m.trials.length > 1 ? 's' : ''} ${m.trials.join(', ')}${m.ranks.length ? `; rank${m.ranks.length > 1 ? 's' : ''} ${m.ranks.join(', ')}` : ''}).`);
		for (const id of m.signatures) {
			const s = signatureById(id);
			if (!s) { continue; }
			const hit = v.runs.find(r => r.trial === m.sampleTrial)?.signatures.find(h => h.id === id);
			out.push(`    ${s.explanation}${s.source ? ` (${s.source})` : ''}${hit ? ` Seen in trial ${m.sampleTrial}: ${hit.line}` : ''}`);
			const inCorrect = all.filter(x => x.config === v.config).flatMap(x => x.runs).filter(r => r.outcome === 'correct' && r.signatures.some(h => h.id === id)).length;
			if (inCorrect > 0) { out.push(`    The same signature is in ${inCorrect} correct trial${inCorrect > 1 ? 's' : ''} of this configuration, so it is not by itself the failure.`); }
		}
	}
	return out;
}

/** The answer: does receiving into an IPC-imported pointer work here, why not, and what works instead. */
export function ipcVerdict(variants: IpcVariantSummary[], ctx: IpcVerdictContext = { sizeBytes: null }): IpcVerdict {
	const real = variants.filter(v => v.variant !== 'crash-test');
	const multi = new Set(real.map(v => v.config)).size > 1;
	const runs = real.flatMap(v => v.runs);
	const gpu = runs.some(r => r.memory === 'device');
	const conditions = ipcConditions(real, ctx.sizeBytes);
	const direct = real.filter(v => v.variant === 'direct');
	const allCorrect = (v: IpcVariantSummary): boolean => v.class === 'works' && v.counts.correct === v.trials;
	const instead = real.filter(v => v.variant !== 'direct' && allCorrect(v)).map(v => `${label(v, multi)}: ${v.trials} of ${v.trials} correct`);
	const why: string[] = [];
	const cut = ctx.partial ? ' Cancelled before every trial ran: partial result.' : '';
	if (direct.length === 0) {
		return { directWorks: null, directClass: null, gpuVerdict: gpu, answer: `The direct variant (receive into the imported pointer) was not run.${cut}`, why, worksInstead: instead, conditions };
	}
	const byClass = (c: TrialClass): IpcVariantSummary[] => direct.filter(v => v.class === c);
	const works = byClass('works'), fails = byClass('fails'), unreliable = byClass('unreliable'), inconclusive = byClass('inconclusive');
	for (const v of [...unreliable, ...fails]) { why.push(...whyLines(v, multi, real)); }
	for (const v of inconclusive) { if (v.failureModes.length > 0) { why.push(...whyLines(v, multi, real)); } else { why.push(`${label(v, multi)}: ${v.sentence}.`); } }
	// Wrong data is its own failure mode, named with its count: a crash is loud, a wrong result is what users miss.
	const wrong = (v: IpcVariantSummary): string => (v.counts.wrong_data > 0 ? `, wrong data in ${v.counts.wrong_data} of ${v.trials} trials` : '');
	const cfg = (list: IpcVariantSummary[]): string => list.map(v => `${v.config}: ${v.sentence}${wrong(v)}`).join('; ');
	const hostNote = gpu ? '' : ` No GPU verdict: the runs used host memory (${runs.find(r => r.gpuUnavailableReason)?.gpuUnavailableReason ?? 'no GPU'}); the same flow with POSIX shared memory in place of CUDA IPC was exercised.`;
	const what = gpu ? 'receiving into an IPC-imported GPU pointer' : 'the flow on host memory';
	let answer: string;
	let directClass: TrialClass;
	let directWorks: boolean | null;
	if (works.length === direct.length) {
		directClass = 'works'; directWorks = true;
		answer = `Yes: ${what} was correct in every trial (${cfg(works)}).`;
	} else if (fails.length === direct.length) {
		directClass = 'fails'; directWorks = false;
		answer = `No: ${what} failed in every trial (${cfg(fails)}).`;
	} else if (unreliable.length > 0) {
		directClass = 'unreliable'; directWorks = false;
		answer = `Unreliable: ${what} fails intermittently (${unreliable.map(v => `${v.config}: ${v.failures} of ${v.failures + v.counts.correct} failed${wrong(v)}`).join('; ')})` +
			`${works.length > 0 ? `; correct in every trial with ${cfg(works)}` : ''}${fails.length > 0 ? `; failed in every trial with ${fails.map(v => v.config).join(', ')}` : ''}.`;
	} else if (works.length > 0 && fails.length > 0) {
		directClass = 'unreliable'; directWorks = false;
		answer = `It depends on the transport: ${what} was correct in every trial with ${cfg(works)}, and failed in every trial with ${cfg(fails)}.`;
	} else {
		directClass = 'inconclusive'; directWorks = null;
		answer = `Inconclusive: ${cfg(inconclusive)}${works.length > 0 ? `; correct in every trial with ${cfg(works)}` : ''}${fails.length > 0 ? `; failed in every trial with ${cfg(fails)}` : ''}.`;
	}
	answer += hostNote + cut;
	if (directWorks !== true) {
		// A configuration under which the direct receive itself was always correct is a workaround too.
		const directInstead = multi ? works.filter(allCorrect).map(v => `${label(v, multi)}: ${v.trials} of ${v.trials} correct`) : [];
		instead.unshift(...directInstead);
		if (instead.length > 0) { why.push(`Works instead (every trial correct): ${instead.join('; ')}.`); }
	}
	const unsure = real.filter(v => v.variant !== 'direct' && v.class === 'unreliable');
	if (unsure.length > 0) { why.push(`Not recommended (intermittent): ${unsure.map(v => `${label(v, multi)}: ${v.sentence}`).join('; ')}.`); }
	why.push(`Holds for: ${conditions.protocol}; ${conditions.placement}; ${conditions.memory ?? 'unknown'} memory.`);
	why.push(`Could still have missed: ${conditions.missed.join('; ')}.`);
	const bounceWorks = directWorks !== true && real.some(v => v.variant === 'bounce' && allCorrect(v));
	if (bounceWorks) { why.push('The bounce with libgpumpi: gpumpi_ipc_open the peer\'s handle once, then gpumpi_irecv into it; the library receives into its own device buffer and copies (the code below).'); }
	return { directWorks, directClass, gpuVerdict: gpu, answer, why, worksInstead: instead, conditions, ...(bounceWorks ? { bounceFix: ipcBounceFix() } : {}) };
}
