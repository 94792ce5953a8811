/**
 * Ranks every measured way of moving the GPU buffer to the peer (MPI, the user-style pipeline, libgpumpi's modes) at
 * the largest size all of them worked — bandwidth as the median (min–max) of each trial's best, peak extra host and
 * device memory — and recommends one; finds the size from which it wins (the crossover); and, from MPI's measured
 * host-memory growth per GiB of message and the node's MemAvailable, the message size at which MPI would run the
 * node out of memory. A difference is claimed only when the trial ranges do not overlap; one trial claims nothing.
 * The host-to-host mode is a baseline, not an option for device data, so it is not ranked.
 * UCX settings tried beside the configuration (`--try-ucx`: the `mpi` mode again with one UCX_* variable added) are
 * ranked as options of their own ("MPI with NAME=VALUE") and each is compared with MPI as configured, bandwidth and
 * host memory, from its own trials.
 */
import { fallbackResultKey, type FallbackRun, type FallbackStat, type FallbackTrialResult } from '../../shared/reproSchema';
import { compareSpreads, spreadOf, spreadText, type Spread } from '../../shared/trialStats';
import { libFix, type LibFix, type LibFixMode } from './fallbackFix';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** One ranked option at the comparison size. */
export interface FallbackOption {
	mode: string;
	label: string;
	bestGbps: Spread;
	/** Per trial the largest peak RSS growth of a rank, bytes. */
	extraHostBytes: Spread | null;
	/** Per trial the largest device-memory growth of a rank, bytes (cuMemGetInfo counts the whole GPU). */
	extraDeviceBytes: Spread | null;
}

/** The ranking of the fallback report. */
export interface FallbackRanking {
	/** Size compared (largest size where every ranked option worked), or null. */
	atBytes: number | null;
	/** Best first (by median bandwidth). */
	options: FallbackOption[];
	/** The recommendation: the fastest option, when its range is above MPI's (else MPI stays), or null. */
	best: FallbackOption | null;
	/** MPI's host growth per GiB of message at the largest size it worked, bytes; null when not measured. */
	mpiGrowthPerGiB: number | null;
	/** Message size at which that growth would exceed the node's MemAvailable, bytes; null when unknown or no growth. */
	mpiOomBytes: number | null;
	/** The code and build lines for the recommendation (libgpumpi modes only). */
	fix: LibFix | null;
	/** Every UCX setting tried, in the order given. */
	ucxSettings: UcxSettingOutcome[];
	/** The tried setting the verdict names as the best measured one ("Best UCX setting measured: …"), or null. */
	ucxBest: string | null;
	text: string[];
}

/** What one tried UCX setting did, against MPI as configured, at the comparison size. */
export interface UcxSettingOutcome {
	setting: string;
	ok: number;
	launched: number;
	bestGbps: Spread | null;
	extraHostBytes: Spread | null;
	bandwidth: 'faster' | 'slower' | 'same' | null;
	boundsMemory: boolean | null;
	failure: string | null;
}

/** The statistics / ranking key of a result: its mode, or `mpi+NAME=VALUE` for a tried UCX setting. */
export const statKey: (r: Pick<FallbackTrialResult, 'mode' | 'ucx_setting'>) => string = fallbackResultKey;
const SETTING = 'mpi+';
/** A host growth below this per GiB of message counts as bounded (libgpumpi's fixed staging is far below it). */
const BOUNDED_PER_GIB = 64 * MiB;

const LABELS: Record<string, string> = {
	mpi: 'MPI (device pointers to MPI_Isend/Irecv)', staged: 'manual staging (own pipeline through MPI host messages)',
	'lib-auto': 'libgpumpi (auto)', 'lib-staged': 'libgpumpi (staged)', 'lib-shm': 'libgpumpi (shm)',
};

function sizeText(b: number): string {
	return b >= GiB ? `${+(b / GiB).toFixed(2)} GiB` : b >= MiB ? `${+(b / MiB).toFixed(2)} MiB` : `${+(b / 1024).toFixed(2)} KiB`;
}
function mib(s: Spread | null): string { return s === null ? 'not measured' : `+${(s.median / MiB).toFixed(1)} MiB`; }

/** The spread over trials of each trial's largest growth of `pick` for (mode, size). */
function memSpread(results: FallbackTrialResult[], mode: string, size: number, pick: 'rss_peak_growth_bytes' | 'device_used_peak_growth_bytes'): Spread | null {
	const rows = results.filter(r => statKey(r) === mode && r.size_bytes === size && r.status === 'ok');
	return spreadOf(rows.map(r => { const v = r.memory.map(m => m[pick]).filter((x): x is number => typeof x === 'number'); return v.length ? Math.max(...v) : null; }));
}

/** The ranking from the trial statistics; nodeAvailableBytes: MemAvailable of the ranks' host (smallest). */
export function rankFallback(stats: FallbackStat[], results: FallbackTrialResult[], nodeAvailableBytes: number | null,
	gpu: boolean, chunkBytes?: number, nbuf?: number, mpiFlavor: 'openmpi' | 'mpich' | 'unknown' = 'unknown',
	tried: Array<{ setting: string; runs: FallbackRun[] }> = []): FallbackRanking {
	const text: string[] = [];
	const labelOf = (m: string): string => m.startsWith(SETTING) ? `MPI with ${m.slice(SETTING.length)}` : LABELS[m];
	const modes = [...new Set(stats.map(s => s.mode))].filter(m => m !== 'host' && labelOf(m));
	const okSizes = (m: string): number[] => stats.filter(s => s.mode === m && s.bestGbps !== null).map(s => s.sizeBytes);
	// The comparison size comes from the configuration's own modes; a tried setting is ranked when it worked there.
	const own = modes.filter(m => !m.startsWith(SETTING) && okSizes(m).length > 0);
	const common = own.length ? okSizes(own[0]).filter(sz => own.every(m => okSizes(m).includes(sz))) : [];
	const at = common.length ? Math.max(...common) : null;
	const ranked = at === null ? own : [...own, ...modes.filter(m => m.startsWith(SETTING) && okSizes(m).includes(at))];
	const options: FallbackOption[] = at === null ? [] : ranked.map(m => ({
		mode: m, label: labelOf(m), bestGbps: stats.find(s => s.mode === m && s.sizeBytes === at)!.bestGbps!,
		extraHostBytes: memSpread(results, m, at, 'rss_peak_growth_bytes'),
		extraDeviceBytes: gpu ? memSpread(results, m, at, 'device_used_peak_growth_bytes') : null,
	})).sort((a, b) => b.bestGbps.median - a.bestGbps.median);
	const mpi = options.find(o => o.mode === 'mpi') ?? null;
	let best: FallbackOption | null = null;
	if (options.length > 0 && at !== null) {
		const top = options[0];
		const n = Math.min(...options.map(o => o.bestGbps.n));
		text.push(`Ranked at ${sizeText(at)} (${n} trial${n === 1 ? '' : 's'}, ${gpu ? 'device' : 'host'} memory): ` +
			options.map((o, i) => `${i + 1}. ${o.label} ${spreadText(o.bestGbps)} GB/s, ${mib(o.extraHostBytes)} host${o.extraDeviceBytes ? `, ${mib(o.extraDeviceBytes)} device` : ''}`).join('; ') + '.');
		if (n < 2) {
			text.push('One trial: the ranking has no spread and recommends nothing (run more trials).');
		} else if (mpi && top !== mpi) {
			const cmp = compareSpreads(top.label, top.bestGbps, 'MPI', mpi.bestGbps);
			const memBetter = mpi.extraHostBytes !== null && top.extraHostBytes !== null && top.extraHostBytes.max < mpi.extraHostBytes.min;
			if (cmp.differs || memBetter) {
				best = top;
				const perGiB = mpi.extraHostBytes ? ` (${(mpi.extraHostBytes.median / MiB / (at / GiB)).toFixed(0)} MiB per GiB of message)` : '';
				text.push(`Recommended: ${top.label}: ${spreadText(top.bestGbps)} GB/s, ${mib(top.extraHostBytes)} — vs MPI ${spreadText(mpi.bestGbps)} GB/s, ${mib(mpi.extraHostBytes)}${perGiB}. ${cmp.sentence}`);
			} else {
				text.push(`Keep MPI: ${cmp.sentence}`);
			}
		} else if (mpi) {
			text.push('Keep MPI: it is the fastest measured option here.');
		}
	}
	// Crossover: the smallest size from which the recommendation's range stays above MPI's at every larger size.
	if (best && mpi) {
		const sizes = okSizes(best.mode).filter(s => okSizes('mpi').includes(s)).sort((a, b) => a - b);
		const wins = sizes.map(s => { const a = stats.find(x => x.mode === best!.mode && x.sizeBytes === s)!.bestGbps!, b = stats.find(x => x.mode === 'mpi' && x.sizeBytes === s)!.bestGbps!; return a.min > b.max; });
		let from = sizes.length;
		while (from > 0 && wins[from - 1]) { from--; }
		if (from > 0 && from < sizes.length) text.push(`Crossover: below ${sizeText(sizes[from])} keep MPI (at ${sizeText(sizes[from - 1])} ${best.label} does not beat it); from ${sizeText(sizes[from])} on, ${best.label}.`);
		else if (from === 0 && sizes.length > 1) text.push(`${best.label} beats MPI at every measured size (${sizeText(sizes[0])}–${sizeText(sizes[sizes.length - 1])}).`);
	}
	// Out of memory: MPI's growth at its largest working size, scaled per GiB.
	const mpiSizes = okSizes('mpi');
	let perGiB: number | null = null, oom: number | null = null;
	if (mpiSizes.length > 0) {
		const big = Math.max(...mpiSizes);
		const g = memSpread(results, 'mpi', big, 'rss_peak_growth_bytes');
		if (g !== null && g.n >= 2 && big >= 64 * MiB) {
			perGiB = g.median / (big / GiB);
			if (perGiB > 64 * MiB && nodeAvailableBytes !== null) {
				oom = nodeAvailableBytes / perGiB * GiB;
				const libFlat = options.filter(o => o.mode.startsWith('lib-') && o.extraHostBytes && o.extraHostBytes.max < 64 * MiB).map(o => o.label);
				text.push(`MPI's host memory grows ${(perGiB / MiB).toFixed(0)} MiB per GiB of message (${mib(g)} at ${sizeText(big)}, ${g.n} trials): with ${sizeText(nodeAvailableBytes)} available on the node, a message of about ${sizeText(oom)} would run it out of memory` +
					(libFlat.length ? `; ${libFlat.join(', ')} did not grow (its staging is fixed at start).` : '.'));
			}
		}
	}
	const ucxSettings = tried.map(t => settingOutcome(t.setting, t.runs, options, mpi, at));
	const ucxBest = bestSetting(ucxSettings);
	text.push(...settingsText(ucxSettings, ucxBest, mpi, at));
	const fix = best && best.mode.startsWith('lib-') ? libFix(best.mode as LibFixMode, chunkBytes, nbuf, mpiFlavor) : null;
	return { atBytes: at, options, best, mpiGrowthPerGiB: perGiB, mpiOomBytes: oom, fix, ucxSettings, ucxBest: ucxBest?.setting ?? null, text };
}

function settingOutcome(setting: string, runs: FallbackRun[], options: FallbackOption[], mpi: FallbackOption | null, at: number | null): UcxSettingOutcome {
	const o = options.find(x => x.mode === SETTING + setting) ?? null;
	const failed = runs.find(r => r.outcome !== 'ok');
	const out: UcxSettingOutcome = {
		setting, ok: o?.bestGbps.n ?? 0, launched: runs.length, bestGbps: o?.bestGbps ?? null, extraHostBytes: o?.extraHostBytes ?? null,
		bandwidth: null, boundsMemory: null, failure: failed ? `${failed.outcome.replace(/_/g, ' ')}: ${failed.detail}` : null,
	};
	if (o && at !== null && o.extraHostBytes && o.extraHostBytes.n >= 2) { out.boundsMemory = o.extraHostBytes.max / (at / GiB) < BOUNDED_PER_GIB; }
	if (o && mpi && o.bestGbps.n >= 2 && mpi.bestGbps.n >= 2) {
		out.bandwidth = o.bestGbps.min > mpi.bestGbps.max ? 'faster' : o.bestGbps.max < mpi.bestGbps.min ? 'slower' : 'same';
	}
	return out;
}

/** The best measured setting: the fastest that keeps MPI's bandwidth and bounds host memory, else the fastest faster one. */
function bestSetting(list: UcxSettingOutcome[]): UcxSettingOutcome | null {
	const keepBw = list.filter(u => u.bandwidth === 'faster' || u.bandwidth === 'same');
	const byBw = (x: UcxSettingOutcome, y: UcxSettingOutcome): number => y.bestGbps!.median - x.bestGbps!.median;
	const bounded = keepBw.filter(u => u.boundsMemory === true).sort(byBw)[0];
	const fastest = [...keepBw].sort(byBw)[0];
	return bounded ?? (fastest && fastest.bandwidth === 'faster' ? fastest : null);
}

/** The verdict's lines about the tried UCX settings: each one's numbers, then the best that kept MPI's bandwidth. */
function settingsText(list: UcxSettingOutcome[], best: UcxSettingOutcome | null, mpi: FallbackOption | null, at: number | null): string[] {
	if (list.length === 0) { return []; }
	const lines: string[] = [];
	const base = mpi ? `MPI as configured ${spreadText(mpi.bestGbps)} GB/s, ${mib(mpi.extraHostBytes)}` : 'MPI as configured: no result to compare with';
	const each = list.map(u => u.bestGbps === null
		? `${u.setting}: no result at ${at === null ? 'any size' : sizeText(at)} in ${u.launched} launch${u.launched === 1 ? '' : 'es'}${u.failure ? ` (${u.failure.slice(0, 240)})` : ''}`
		: `${u.setting}: ${spreadText(u.bestGbps)} GB/s, ${mib(u.extraHostBytes)}${u.bandwidth === 'faster' ? ', faster' : u.bandwidth === 'slower' ? ', slower' : u.bandwidth === 'same' ? ', ranges overlap' : ''}${u.boundsMemory === true ? ', host memory bounded' : u.boundsMemory === false ? ', host memory grows with the message' : ''} (${u.ok} of ${u.launched} trials)`);
	lines.push(`UCX settings tried at ${at === null ? '?' : sizeText(at)} (${base}): ${each.join('; ')}.`);
	if (best && best.boundsMemory === true) {
		const b = best;
		lines.push(`Best UCX setting measured: ${b.setting} keeps MPI's bandwidth and bounds the host staging: set it for every rank (Open MPI: mpirun -x ${b.setting}; MPICH: -genv ${b.setting.replace('=', ' ')}; Slurm: export it before srun).`);
	} else if (best) {
		const fastest = best;
		lines.push(`Best UCX setting measured: ${fastest.setting} is faster than MPI as configured${fastest.boundsMemory === false ? ', but the host staging still grows with the message: it does not prevent running out of memory' : ''}. No tried setting bounded the host memory without losing bandwidth.`);
	} else if (list.some(u => u.bestGbps !== null)) {
		lines.push('No tried UCX setting was faster than MPI as configured or bounded its host memory without losing bandwidth.');
	}
	return lines;
}
