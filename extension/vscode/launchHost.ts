/**
 * Where the reproducer and map commands launch: this machine, or a `gpumpiDoctor.hosts` entry (picked in the Hosts
 * view, passed as a command argument, or chosen in a QuickPick). Resolves through core/hosts/launchTarget.ts, the
 * same resolver the CLI's `--host` uses (engine deployed and built there, flavour detected there, srun per the
 * host's launcher setting).
 */
import * as vscode from 'vscode';
import type { LaunchTarget } from '../core/hosts/launchTarget';
import { core } from './lazyCore';
import type { Logger } from '../core/logger';
import { LOCAL_HOST_KEY } from './inspectionService';
import { findHost, readSettings, sshConfigFile } from './settings';

/** A resolved target (ok) — the caller must `close()` it. */
export type OpenTarget = Extract<LaunchTarget, { ok: true }>;

/**
 * The host a command argument names: a Hosts-view row ({kind: 'host', key}), or an options object with a `host`
 * string. Returns the key and the argument without `host` (the rest is validated by the command).
 */
export function hostOfArgument(arg: unknown): { hostKey: string | undefined; rest: unknown } {
	if (typeof arg !== 'object' || arg === null || Array.isArray(arg) || arg instanceof vscode.Uri) { return { hostKey: undefined, rest: arg }; }
	const o = arg as Record<string, unknown>;
	if (o.kind === 'host' && typeof o.key === 'string') { return { hostKey: o.key, rest: undefined }; }
	if ('host' in o) {
		const { host, ...rest } = o;
		if (typeof host !== 'string' || host.length === 0) { throw new Error(vscode.l10n.t('host must be a host name from gpumpiDoctor.hosts')); }
		return { hostKey: host, rest };
	}
	return { hostKey: undefined, rest: arg };
}

/**
 * Resolve `hostKey` (LOCAL_HOST_KEY or a host name) for `np` ranks with `mpirun` ("" = the setting's / PATH's).
 * Throws an Error with the reason (unknown host, unreachable, deploy failed, unknown MPI).
 */
export async function openLaunchTarget(hostKey: string, np: number, mpirun: string, log: Logger,
	onProgress: (line: string) => void, signal: AbortSignal): Promise<OpenTarget> {
	const { settings } = readSettings();
	let host = null;
	if (hostKey !== LOCAL_HOST_KEY) {
		const found = findHost(hostKey);
		if (found instanceof Error) { throw found; }
		host = found;
		onProgress(vscode.l10n.t('Connecting to {0} and preparing the engine there…', host.name));
	}
	const target = await core().resolveLaunchTarget({
		host, mpirun: mpirun || (host ? '' : settings.mpirunPath), flavor: null,
		engine: host ? (host.enginePath || null) : (settings.enginePath || null),
		srun: null, hostList: null, np, remote: { onProgress, signal, configFile: sshConfigFile() },
	});
	for (const n of target.notes) { log.warn(n); }
	if (!target.ok) { throw new Error(target.error); }
	log.info(`launch target ${target.label}: ${target.flavor}, engine ${target.engine}${target.spec.srun ? ', srun' : ''}`);
	return target;
}

/**
 * Check right after a host is picked that it can be reached (this machine always can), before any option is asked:
 * an unreachable host is the honest ssh error (refused, unknown host, timeout, auth), not a failure minutes later.
 */
export async function checkReachable(hostKey: string, log: Logger): Promise<void> {
	if (hostKey === LOCAL_HOST_KEY) { return; }
	const host = findHost(hostKey);
	if (host instanceof Error) { throw host; }
	const r = await vscode.window.withProgress(
		{ location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('GPU-MPI Doctor: connecting to {0} ({1})…', host.name, host.sshHost) },
		() => core().testConnection(host, { configFile: sshConfigFile() }));
	if (!r.ok) {
		log.warn(`cannot reach ${host.name} (${r.label}): ${r.error}`);
		throw new Error(vscode.l10n.t('Cannot reach {0} ({1}): {2}', host.name, r.label, r.error));
	}
	log.info(`reached ${host.name} (${host.sshHost})`);
}
