/**
 * What the user picks for a reproducer run in VS Code (launcher, memory, sizes, variants, workaround presets), its
 * validation (the same rules whether the values come from QuickPicks, workspaceState or a command argument: hostile
 * values are data and are refused or passed as one argv item, never shell), and presets → launcher configurations
 * so workarounds run side by side, each as its own mpirun. Pure (no vscode).
 */
import { IPC_VARIANTS } from '../../shared/reproSchema';
import { checkSizeListText, checkSizeText, FALLBACK_SIZE_LIMITS, IPC_SIZE_LIMITS } from '../../shared/sizeText';
import { DEFAULT_TRIALS, MAX_TRIALS } from '../../shared/trialStats';
import { checkMpirun, parsePreset, type LaunchConfig, type MpiFlavor } from '../launch/launchSpec';
import { PML_UCX_MCA } from '../launch/evidenceSwitches';

/** A workaround preset offered in the multi-select. */
export interface ReproPreset { id: string; label: string; detail: string; env: Array<[string, string]>; mca: Array<[string, string]> }

/** The built-in presets (brief: the usual workarounds of the two user reports). */
export const REPRO_PRESETS: readonly ReproPreset[] = [
	{ id: 'UCX_TLS=^cuda_ipc', label: 'UCX_TLS=^cuda_ipc', detail: 'pml ucx without the cuda_ipc transport', env: [['UCX_TLS', '^cuda_ipc']], mca: PML_UCX_MCA },
	{ id: 'UCX_MEMTYPE_CACHE=n', label: 'UCX_MEMTYPE_CACHE=n', detail: 'pml ucx, memory-type cache off', env: [['UCX_MEMTYPE_CACHE', 'n']], mca: PML_UCX_MCA },
	{ id: '--mca btl_smcuda_use_cuda_ipc 0', label: '--mca btl_smcuda_use_cuda_ipc 0', detail: 'Open MPI ob1/smcuda without CUDA IPC', env: [], mca: [['pml', 'ob1'], ['btl_smcuda_use_cuda_ipc', '0']] },
	{ id: '--mca pml ob1', label: '--mca pml ob1', detail: 'Open MPI ob1 (BTLs) instead of UCX', env: [], mca: [['pml', 'ob1']] },
	{ id: '--mca pml ucx', label: '--mca pml ucx', detail: 'Open MPI pml ucx, all transports (Debian disables it by default)', env: [], mca: PML_UCX_MCA },
	{ id: 'UCX_TLS=sm,cuda_copy,self', label: 'UCX_TLS=sm,cuda_copy,self', detail: 'pml ucx, shared memory + cuda_copy (staging)', env: [['UCX_TLS', 'sm,cuda_copy,self']], mca: PML_UCX_MCA },
	{ id: 'UCX_TLS=tcp,cuda_copy,self', label: 'UCX_TLS=tcp,cuda_copy,self', detail: 'pml ucx, TCP + cuda_copy', env: [['UCX_TLS', 'tcp,cuda_copy,self']], mca: PML_UCX_MCA },
];

/**
 * `--try-ucx staging`: the UCX settings that change the host-staged rendezvous pipeline, in the forms UCX 1.13–1.20
 * accept (memory-type-qualified fragment settings): bigger host fragments (fastest measured on the H200), fewer
 * fragments per pool chunk, and the two ways out of the host pipeline (docs/device-results.md, "UCX rendezvous
 * settings" and "UCX rendezvous settings in their accepted forms").
 */
export const UCX_STAGING_TRIES: readonly string[] = ['UCX_RNDV_FRAG_SIZE=host:4M,cuda:4M', 'UCX_RNDV_FRAG_ALLOC_COUNT=host:8,cuda:8', 'UCX_RNDV_SCHEME=get_zcopy', 'UCX_RNDV_FRAG_MEM_TYPE=cuda'];

/** What one of UCX_STAGING_TRIES changes and what it did on the H200 (shown beside it in the VS Code picker). */
export interface UcxTryInfo { setting: string; changes: string; measured: string }

/**
 * UCX_STAGING_TRIES with their descriptions. Measured: H200, Open MPI 5.0.7 pml ucx, UCX_TLS=sm,cuda_copy,self,
 * 1 GiB device messages, 3 trials (`repro fallback --try-ucx staging`, docs/device-results.md, 2026-12-04, where MPI
 * as configured gave 35.9 GB/s and +775 MiB host).
 */
export const UCX_STAGING_TRY_INFO: readonly UcxTryInfo[] = [
	{ setting: UCX_STAGING_TRIES[0], changes: 'host (and cuda) pipeline fragments of 4 MiB instead of UCX\'s default', measured: 'H200: 47.0 GB/s, faster than MPI as configured; host memory still grew (+769 MiB for 1 GiB)' },
	{ setting: UCX_STAGING_TRIES[1], changes: 'fewer fragments per staging-pool chunk (8)', measured: 'H200: 37.4 GB/s, at the edge of the trial ranges; host memory still grew (+775 MiB for 1 GiB)' },
	{ setting: UCX_STAGING_TRIES[2], changes: 'rendezvous by get_zcopy only: no host pipeline', measured: 'H200: host memory bounded (+0 MiB), but 0.88 GB/s' },
	{ setting: UCX_STAGING_TRIES[3], changes: 'stage the pipeline in GPU memory instead of host memory', measured: 'H200: host memory bounded (+0 MiB), but 0.92 GB/s' },
];

const UCX_SETTING_NAME = /^UCX_[A-Z0-9_]{1,64}$/;
const UCX_SETTING_VALUE = /^[A-Za-z0-9_.:,^+-]{1,128}$/;
/** At most this many UCX settings per fallback run (each adds a launch per trial). */
export const MAX_TRY_UCX = 8;

/**
 * A UCX setting to try (`--try-ucx NAME=VALUE`, the picker's custom box, the gpumpiDoctor.repro.tryUcx setting):
 * the pair, or why not. NAME is UCX_ + capitals, digits, _; VALUE letters, digits and _.:,^+- only, so no quoting,
 * substitution or space can reach a launcher (it is one argv item anyway, never shell).
 */
export function parseUcxSetting(text: string): [string, string] | string {
	const p = text.length <= 256 ? parsePreset(text) : null;
	if (!p || !UCX_SETTING_NAME.test(p[0]) || !UCX_SETTING_VALUE.test(p[1])) {
		return 'UCX_NAME=VALUE, NAME starting with UCX_ (capitals, digits, _), VALUE of letters, digits and _.:,^+- (no spaces, quotes or $)';
	}
	return p;
}
/** Validation message for one UCX setting, or null when fine (an InputBox's validator). */
export function checkUcxSetting(text: string): string | null {
	const r = parseUcxSetting(text);
	return typeof r === 'string' ? r : null;
}

/**
 * UCX settings from a list of NAME=VALUE items and "staging" (UCX_STAGING_TRIES): in order, duplicates once, at most
 * MAX_TRY_UCX; or why not (the first bad item named).
 */
export function ucxTryList(items: readonly string[]): Array<[string, string]> | string {
	const out: Array<[string, string]> = [];
	for (const item of items) {
		for (const t of item === 'staging' ? UCX_STAGING_TRIES : [item]) {
			const p = parseUcxSetting(t);
			if (typeof p === 'string') { return `${JSON.stringify(item.slice(0, 80))}: ${p}, or "staging"`; }
			if (!out.some(([k, v]) => k === p[0] && v === p[1])) { out.push(p); }
		}
	}
	if (out.length > MAX_TRY_UCX) { return `at most ${MAX_TRY_UCX} settings (each adds a launch per trial), got ${out.length}`; }
	return out;
}
/** Everything picked for one run; persisted in workspaceState. */
export interface ReproChoices {
	/** mpirun path or name ("" = mpirun on PATH). */
	mpirun: string;
	memory: 'device' | 'host';
	/** ipc message size, e.g. "64M". */
	size: string;
	/** fallback sizes, e.g. "1M..256M". */
	sizes: string;
	variants: string[];
	/** Preset ids from REPRO_PRESETS and custom "NAME=VALUE" items. */
	presets: string[];
	/** Keep MPI/UCX TCP on loopback (single node). */
	loopback: boolean;
	/** Also run the configuration without presets. */
	baseline: boolean;
	/** Trials per variant / mode; null: the gpumpiDoctor.repro.trials setting. */
	trials: number | null;
	/** Fallback: UCX settings (NAME=VALUE) also tried in every trial (`--try-ucx`); null: the gpumpiDoctor.repro.tryUcx setting. */
	tryUcx: string[] | null;
}

/** Defaults for a first run. */
export const DEFAULT_CHOICES: ReproChoices = {
	mpirun: '', memory: 'device', size: '64M', sizes: '1M..256M', variants: [...IPC_VARIANTS], presets: [], loopback: true, baseline: true, trials: null, tryUcx: null,
};

/** Validation message for an ipc size (what the engine accepts: shared/sizeText.ts), or null when fine. */
export function checkSize(s: string): string | null {
	const r = checkSizeText(s, IPC_SIZE_LIMITS);
	return typeof r === 'string' ? r : null;
}
/** Validation message for fallback sizes (a non-empty range or list the engine accepts), or null when fine. */
export function checkSizes(s: string): string | null {
	const r = checkSizeListText(s, FALLBACK_SIZE_LIMITS);
	return typeof r === 'string' ? r : null;
}
/** Validation message for a custom preset, or null when fine. */
export function checkCustomPreset(s: string): string | null {
	if (s.length > 4096 || /[\u0000-\u001f]/.test(s)) { return 'no control characters, at most 4096 characters'; }
	return parsePreset(s) ? null : 'NAME=VALUE with NAME a valid environment variable name';
}

/** A trial count from an untrusted value (setting, workspaceState, command argument): the number, or why not. */
export function checkTrials(v: unknown): number | string {
	if (v === undefined || v === null) { return DEFAULT_TRIALS; }
	if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_TRIALS) { return `trials must be a whole number from 1 to ${MAX_TRIALS}, got ${JSON.stringify(v)?.slice(0, 40)}`; }
	return v;
}

/**
 * The gpumpiDoctor.repro.tryUcx setting (untrusted: a list of UCX_NAME=VALUE or "staging"): the valid settings,
 * expanded, in order, at most MAX_TRY_UCX, and one problem line per entry left out (never thrown).
 */
export function tryUcxFromSetting(v: unknown): { tryUcx: string[]; problems: string[] } {
	if (v === undefined || v === null) { return { tryUcx: [], problems: [] }; }
	if (!Array.isArray(v)) { return { tryUcx: [], problems: [`gpumpiDoctor.repro.tryUcx must be a list of UCX_NAME=VALUE strings or "staging", got ${JSON.stringify(v)?.slice(0, 60)}; no UCX setting is pre-selected`] }; }
	const out: string[] = [], problems: string[] = [];
	for (const item of v.slice(0, 64)) {
		const t = typeof item === 'string' ? ucxTryList([item]) : 'not a string';
		if (typeof t === 'string') { problems.push(`gpumpiDoctor.repro.tryUcx: ${typeof item === 'string' ? '' : `${JSON.stringify(item)?.slice(0, 60)}: `}${t}; left out`); continue; }
		for (const [k, x] of t) {
			const s = `${k}=${x}`;
			if (out.includes(s)) { continue; }
			if (out.length >= MAX_TRY_UCX) { problems.push(`gpumpiDoctor.repro.tryUcx: at most ${MAX_TRY_UCX} settings; ${s} left out`); continue; }
			out.push(s);
		}
	}
	if (v.length > 64) { problems.push(`gpumpiDoctor.repro.tryUcx: only the first 64 entries are read`); }
	return { tryUcx: out, problems };
}

/** The `ucxSettings` of the fallback runner from the choices (already validated; the setting's list when null). */
export function ucxSettingsOf(c: ReproChoices, fromSetting: readonly string[] = []): Array<[string, string]> {
	const t = ucxTryList(c.tryUcx ?? fromSetting);
	return typeof t === 'string' ? [] : t;
}

/** Choices from an untrusted value (workspaceState, a command argument): a reason string when invalid. */
export function validateChoices(raw: unknown, base: ReproChoices = DEFAULT_CHOICES): ReproChoices | string {
	if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) { return 'expected an object'; }
	const o = raw as Record<string, unknown>;
	const c: ReproChoices = { ...base, variants: [...base.variants], presets: [...base.presets], tryUcx: base.tryUcx ? [...base.tryUcx] : null };
	if (o.mpirun !== undefined) { if (typeof o.mpirun !== 'string' || checkMpirun(o.mpirun)) { return `mpirun: ${typeof o.mpirun === 'string' ? checkMpirun(o.mpirun) : 'not a string'}`; } c.mpirun = o.mpirun; }
	if (o.memory !== undefined) { if (o.memory !== 'device' && o.memory !== 'host') { return 'memory: device or host'; } c.memory = o.memory; }
	if (o.size !== undefined) { if (typeof o.size !== 'string' || checkSize(o.size)) { return 'size: e.g. 64M'; } c.size = o.size; }
	if (o.sizes !== undefined) { if (typeof o.sizes !== 'string' || checkSizes(o.sizes)) { return 'sizes: e.g. 1M..1G'; } c.sizes = o.sizes; }
	if (o.variants !== undefined) {
		if (!Array.isArray(o.variants) || o.variants.length === 0 || !o.variants.every(v => typeof v === 'string' && ((IPC_VARIANTS as readonly string[]).includes(v) || v === 'crash-test'))) {
			return `variants: a non-empty list of ${IPC_VARIANTS.join(', ')}`;
		}
		c.variants = o.variants as string[];
	}
	if (o.presets !== undefined) {
		if (!Array.isArray(o.presets) || o.presets.length > 16) { return 'presets: a list (at most 16)'; }
		for (const p of o.presets) {
			if (typeof p !== 'string' || (!REPRO_PRESETS.some(x => x.id === p) && checkCustomPreset(p))) { return `presets: unknown preset ${JSON.stringify(p)}`; }
		}
		c.presets = o.presets as string[];
	}
	if (o.loopback !== undefined) { if (typeof o.loopback !== 'boolean') { return 'loopback: true or false'; } c.loopback = o.loopback; }
	if (o.baseline !== undefined) { if (typeof o.baseline !== 'boolean') { return 'baseline: true or false'; } c.baseline = o.baseline; }
	if (o.trials !== undefined && o.trials !== null) { const t = checkTrials(o.trials); if (typeof t === 'string') { return t; } c.trials = t; }
	if (o.tryUcx !== undefined && o.tryUcx !== null) {
		if (!Array.isArray(o.tryUcx) || o.tryUcx.length > 64 || !o.tryUcx.every(x => typeof x === 'string')) { return 'tryUcx: a list of UCX_NAME=VALUE strings'; }
		const t = ucxTryList(o.tryUcx as string[]);
		if (typeof t === 'string') { return `tryUcx: ${t}`; }
		c.tryUcx = t.map(([k, v]) => `${k}=${v}`);
	}
	if (!c.baseline && c.presets.length === 0) { return 'nothing to run: no baseline and no preset'; }
	return c;
}

/** One launcher configuration per preset (plus the baseline), so workarounds are compared side by side. */
export function configsFromChoices(c: ReproChoices, flavor: MpiFlavor): LaunchConfig[] {
	const base: Array<[string, string]> = c.loopback ? [['UCX_NET_DEVICES', 'lo']] : [];
	const out: LaunchConfig[] = [];
	if (c.baseline) { out.push({ label: 'default', env: [...base], mca: [], extraArgs: [] }); }
	for (const id of c.presets) {
		const p = REPRO_PRESETS.find(x => x.id === id);
		if (p) {
			// MPICH has no MCA parameters: keep only the environment part there.
			if (flavor === 'mpich' && p.env.length === 0) { continue; }
			out.push({ label: p.label, env: [...base, ...p.env], mca: flavor === 'openmpi' ? [...p.mca] : [], extraArgs: [] });
		} else {
			const kv = parsePreset(id);
			if (kv) { out.push({ label: id, env: [...base, kv], mca: [], extraArgs: [] }); }
		}
	}
	return out;
}
