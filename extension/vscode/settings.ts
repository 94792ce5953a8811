/**
 * Reads the `gpumpiDoctor.*` settings and validates them with the same rules as the CLI (core/inspect.ts).
 * Hostile values are data: they are reported and replaced by defaults, never executed or trusted.
 */
import * as vscode from 'vscode';
import { normalizeSettings, type InspectSettings } from '../core/inspect';
import { validateHostSettings, type HostSetting } from '../core/hosts/hostSettings';

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

/** The validated `gpumpiDoctor.hosts` entries plus one message per rejected entry (never run). */
export function readHosts(): { hosts: HostSetting[]; problems: string[] } {
	return validateHostSettings(vscode.workspace.getConfiguration('gpumpiDoctor').get<unknown>('hosts'));
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
