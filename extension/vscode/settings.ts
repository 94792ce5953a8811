/**
 * Reads the `gpumpiDoctor.*` settings and validates them with the same rules as the CLI (core/inspect.ts).
 * Hostile values are data: they are reported and replaced by defaults, never executed or trusted.
 */
import * as vscode from 'vscode';
import { normalizeSettings, type InspectSettings } from '../core/inspectSettings';
import { validateHostSettings, type HostSetting } from '../core/hosts/hostSettings';
import { checkTrials, tryUcxFromSetting } from '../core/repro/reproChoices';
import { DEFAULT_TRIALS } from '../shared/trialStats';

/** Current validated settings plus a message per rejected value. */
export function readSettings(): { settings: InspectSettings; problems: string[] } {
	const cfg = vscode.workspace.getConfiguration('gpumpiDoctor');
	const enginePath = cfg.get<unknown>('enginePath');
	const mpirunPath = cfg.get<unknown>('mpirunPath');
	return normalizeSettings({
		ranks: cfg.get<unknown>('inspectRanks'),
		timeoutSeconds: cfg.get<unknown>('toolTimeoutSeconds'),
		enginePath: typeof enginePath === 'string' ? enginePath.trim() : enginePath,
		mpirunPath: typeof mpirunPath === 'string' ? mpirunPath.trim() : mpirunPath,
	});
}

/** `gpumpiDoctor.repro.trials` (1..MAX_TRIALS), or the default with a problem message for a bad value. */
export function readReproTrials(): { trials: number; problem: string | null } {
	const v = vscode.workspace.getConfiguration('gpumpiDoctor').get<unknown>('repro.trials');
	const c = checkTrials(v);
	return typeof c === 'number' ? { trials: c, problem: null } : { trials: DEFAULT_TRIALS, problem: vscode.l10n.t('gpumpiDoctor.repro.trials: {0}; using {1}', c, DEFAULT_TRIALS) };
}

/** `gpumpiDoctor.repro.tryUcx`: the valid UCX settings ("staging" expanded), and a problem line per entry left out. */
export function readReproTryUcx(): { tryUcx: string[]; problems: string[] } {
	return tryUcxFromSetting(vscode.workspace.getConfiguration('gpumpiDoctor').get<unknown>('repro.tryUcx'));
}

/** The validated `gpumpiDoctor.hosts` entries plus one message per rejected entry (never run). */
export function readHosts(): { hosts: HostSetting[]; problems: string[] } {
	return validateHostSettings(vscode.workspace.getConfiguration('gpumpiDoctor').get<unknown>('hosts'));
}

/** `gpumpiDoctor.sshConfigFile` (absolute path) or undefined for ssh's default; an Error for an unusable value. */
export function readSshConfigFile(): string | undefined | Error {
	const v = vscode.workspace.getConfiguration('gpumpiDoctor').get<unknown>('sshConfigFile');
	if (v === undefined || v === null || v === '') { return undefined; }
	if (typeof v !== 'string' || !v.startsWith('/') || /[\u0000-\u001f]/.test(v)) {
		return new Error(vscode.l10n.t('gpumpiDoctor.sshConfigFile must be an absolute path, got {0}', JSON.stringify(String(v).slice(0, 80))));
	}
	return v;
}

/** The ssh config file setting; throws its problem so nothing runs with a value the user did not mean. */
export function sshConfigFile(): string | undefined {
	const f = readSshConfigFile();
	if (f instanceof Error) { throw f; }
	return f;
}

/** The configured host named `name`, or an Error saying why it cannot be used (unknown, or its entry is invalid). */
export function findHost(name: string): HostSetting | Error {
	const { hosts, problems } = readHosts();
	const setting = hosts.find(h => h.name === name);
	if (setting) { return setting; }
	const bad = problems.find(p => p.includes(`(${name})`));
	return new Error(bad
		? vscode.l10n.t('The host {0} is not used because its setting is invalid: {1}', name, bad)
		: vscode.l10n.t('No host named {0} in the gpumpiDoctor.hosts setting.', JSON.stringify(name.slice(0, 80))));
}

/** The raw `gpumpiDoctor.hosts` array as stored (non-arrays read as empty), for the add/edit/remove commands. */
export function rawHosts(): unknown[] {
	const raw = vscode.workspace.getConfiguration('gpumpiDoctor').get<unknown>('hosts');
	return Array.isArray(raw) ? [...raw] : [];
}

/** Store `gpumpiDoctor.hosts` in the user settings. */
export async function writeHosts(value: unknown[]): Promise<void> {
	await vscode.workspace.getConfiguration('gpumpiDoctor').update('hosts', value, vscode.ConfigurationTarget.Global);
}
