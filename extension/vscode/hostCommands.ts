/**
 * The commands that add / edit / remove entries of the `gpumpiDoctor.hosts` setting and test a host's connection.
 * Every value typed in is checked as it is typed (validateInput, with hostSettings' validators) and once more, whole,
 * before it is stored. An interactively added or edited host is connected to before it is saved (BatchMode, the
 * same ssh an inspection uses); when it cannot be reached the user chooses to edit it again or save it anyway.
 * Remove is immediate and offers Undo. An inspection that could not reach its host says so with Edit Host / Show Log.
 */
import * as vscode from 'vscode';
import type { HostConnectResult } from '../core/host';
import { destinationProblem } from '../core/hosts/sshHost';
import { hostNameProblem, setupProblem, validateHostSettings, type HostSetting } from '../core/hosts/hostSettings';
import type { Finding } from '../shared/report';
import { hostKeyOf } from './hostsView';
import { LOCAL_HOST_KEY, type InspectionService } from './inspectionService';
import { core } from './lazyCore';
import { rawHosts, readHosts, sshConfigFile, writeHosts } from './settings';

/** Values for add/edit, given as an argument (tests, scripts) or typed into input boxes. */
export interface HostInput {
	name: string; sshHost: string; setup?: string; mpirun?: string; enginePath?: string;
	launcher?: 'mpirun' | 'srun'; srunArgs?: string[]; srunMpi?: string;
}

/** What "Test Connection" returns (tests read it). */
export type ConnectionOutcome = { ok: true; host: string } | { ok: false; host: string; kind: string; label: string; error: string };

function isHostInput(v: unknown): v is HostInput {
	return typeof v === 'object' && v !== null && typeof (v as HostInput).name === 'string' && typeof (v as HostInput).sshHost === 'string';
}

function entryName(e: unknown): unknown { return typeof e === 'object' && e !== null ? (e as { name?: unknown }).name : undefined; }

async function askHost(current?: HostSetting): Promise<HostInput | undefined> {
	const taken = readHosts().hosts.map(h => h.name).filter(n => n !== current?.name);
	const name = await vscode.window.showInputBox({
		title: vscode.l10n.t('Host name'), value: current?.name, prompt: vscode.l10n.t('Shown in reports; letters, digits, ".", "_" or "-"'),
		validateInput: v => hostNameProblem(v.trim(), taken),
	});
	if (name === undefined) { return undefined; }
	const sshHost = await vscode.window.showInputBox({
		title: vscode.l10n.t('ssh destination'), value: current?.sshHost,
		prompt: vscode.l10n.t('An alias from ~/.ssh/config or user@host (key login; host key already in known_hosts)'),
		validateInput: v => destinationProblem(v.trim()),
	});
	if (sshHost === undefined) { return undefined; }
	const setup = await vscode.window.showInputBox({
		title: vscode.l10n.t('Setup line (optional)'), value: current?.setup,
		prompt: vscode.l10n.t('Shell code run on that host before every command, e.g. module load openmpi'),
		validateInput: v => setupProblem(v.trim()),
	});
	if (setup === undefined) { return undefined; }
	const launcher = await vscode.window.showQuickPick([
		{ label: 'mpirun', description: vscode.l10n.t('mpirun on that host (Open MPI or MPICH, detected there)'), picked: current?.launcher !== 'srun' },
		{ label: 'srun', description: vscode.l10n.t('Slurm: srun inside an allocation, or with allocation options'), picked: current?.launcher === 'srun' },
	], { title: vscode.l10n.t('How are ranks launched on that host?'), ignoreFocusOut: true });
	if (!launcher) { return undefined; }
	const out: HostInput = { name: name.trim(), sshHost: sshHost.trim(), setup: setup.trim(), launcher: launcher.label === 'srun' ? 'srun' : 'mpirun' };
	if (out.launcher === 'srun') {
		const args = await vscode.window.showInputBox({
			title: vscode.l10n.t('srun options (optional)'), value: current?.srunArgs.join(' '),
			prompt: vscode.l10n.t('Allocation options, split at spaces into separate arguments (never run through a shell), e.g. -p gpu -N 2 -t 10'),
			validateInput: v => v.split(/\s+/).filter(a => a.length > 0).length > 32 ? vscode.l10n.t('at most 32 options') : null,
		});
		if (args === undefined) { return undefined; }
		out.srunArgs = args.split(/\s+/).filter(a => a.length > 0);
	}
	return out;
}

/** The entry `entry` would be stored as (replacing the one named `replacing`), validated; throws "Host not saved: …". */
function checkedEntry(entry: HostInput, replacing?: string): { raw: unknown[]; index: number; clean: Record<string, unknown>; host: HostSetting } {
	const raw = rawHosts();
	const index = replacing === undefined ? -1 : raw.findIndex(e => entryName(e) === replacing);
	if (replacing !== undefined && index < 0) { throw new Error(vscode.l10n.t('No host named {0} to edit.', JSON.stringify(replacing))); }
	// Editing keeps the keys the input does not set (mpirun, enginePath, … typed into settings.json).
	const clean: Record<string, unknown> = index >= 0 ? { ...(raw[index] as Record<string, unknown>) } : {};
	clean.name = entry.name;
	clean.sshHost = entry.sshHost;
	for (const k of ['setup', 'mpirun', 'enginePath', 'launcher', 'srunMpi'] as const) {
		const v = entry[k];
		if (v === undefined) { continue; }
		if (typeof v === 'string' && v.length > 0 && !(k === 'launcher' && v === 'mpirun')) { clean[k] = v; } else { delete clean[k]; }
	}
	if (entry.srunArgs !== undefined) { if (entry.srunArgs.length > 0) { clean.srunArgs = entry.srunArgs; } else { delete clean.srunArgs; } }
	const single = validateHostSettings([clean]);
	if (single.problems.length > 0) { throw new Error(vscode.l10n.t('Host not saved: {0}', single.problems[0].replace(/^gpumpiDoctor\.hosts\[0\]( \([^)]*\))?: /, ''))); }
	if (raw.some((e, i) => i !== index && entryName(e) === clean.name)) {
		throw new Error(vscode.l10n.t('Host not saved: the name {0} is already used.', JSON.stringify(clean.name)));
	}
	return { raw, index, clean, host: single.hosts[0] };
}

async function store(c: ReturnType<typeof checkedEntry>): Promise<HostSetting> {
	if (c.index >= 0) { c.raw[c.index] = c.clean; } else { c.raw.push(c.clean); }
	await writeHosts(c.raw);
	return c.host;
}

/** The host commands, bound to the window's inspection service (which remembers reachability for the tree). */
export function hostCommandsFor(service: InspectionService, showLog: () => void) {
	/** Connect to `setting` with a progress notification; the outcome is remembered for the tree row. */
	const test = async (setting: HostSetting): Promise<HostConnectResult> => {
		const result = await vscode.window.withProgress(
			{ location: vscode.ProgressLocation.Notification, title: vscode.l10n.t('GPU-MPI Doctor: connecting to {0} ({1})…', setting.name, setting.sshHost) },
			() => core().testConnection(setting, { configFile: sshConfigFile() }));
		service.noteReach(setting.name, result.ok ? { ok: true, at: Date.now() } : { ok: false, at: Date.now(), label: result.label, error: result.error });
		return result;
	};

	/** Interactive add/edit: ask, check, connect; when unreachable, edit again or save anyway. */
	const interactive = async (current: HostSetting | undefined, replacing?: string): Promise<HostSetting | undefined> => {
		let seed = current;
		for (;;) {
			const input = await askHost(seed);
			if (!input) { return undefined; }
			const checked = checkedEntry(input, replacing);
			const r = await test(checked.host);
			if (r.ok) {
				void vscode.window.showInformationMessage(vscode.l10n.t('Connected to {0}; host saved.', checked.host.name));
				return store(checked);
			}
			const again = vscode.l10n.t('Edit Again');
			const anyway = vscode.l10n.t('Save Anyway');
			const choice = await vscode.window.showWarningMessage(vscode.l10n.t('Cannot reach {0} ({1}): {2}', checked.host.name, r.label, r.error),
				{ modal: true }, again, anyway);
			if (choice === anyway) { return store(checked); }
			if (choice !== again) { return undefined; }
			seed = { ...checked.host };
		}
	};

	return {
		/** Add a host: `arg` is a HostInput (stored after validation, no connection test) or undefined (input boxes + test). */
		async add(arg?: unknown): Promise<HostSetting | undefined> {
			return isHostInput(arg) ? store(checkedEntry(arg)) : interactive(undefined);
		},
		/** Edit a host: `arg` is a tree node or a name, optionally `(name, HostInput)`. */
		async edit(arg?: unknown, values?: unknown): Promise<HostSetting | undefined> {
			const name = hostKeyOf(arg) ?? await pickConfiguredHost();
			if (!name) { return undefined; }
			if (name === LOCAL_HOST_KEY) { throw new Error(vscode.l10n.t('This machine is not a hosts entry and cannot be edited.')); }
			const current = readHosts().hosts.find(h => h.name === name);
			const stored = isHostInput(values) ? await store(checkedEntry(values, name)) : await interactive(current, name);
			if (stored) { if (stored.name !== name) { service.forget(name); } }
			return stored;
		},
		/** Remove a host at once (`arg`: a tree node or a name); the notification offers Undo, which puts it back in place. */
		async remove(arg?: unknown): Promise<boolean> {
			const name = hostKeyOf(arg) ?? await pickConfiguredHost();
			if (!name || name === LOCAL_HOST_KEY) { return false; }
			const raw = rawHosts();
			const index = raw.findIndex(e => entryName(e) === name);
			if (index < 0) { throw new Error(vscode.l10n.t('No host named {0} in the gpumpiDoctor.hosts setting.', JSON.stringify(name.slice(0, 80)))); }
			const removed = raw[index];
			await writeHosts(raw.filter((_, i) => i !== index));
			service.forget(name);
			const undo = vscode.l10n.t('Undo');
			void vscode.window.showInformationMessage(vscode.l10n.t('Host {0} removed.', name), undo).then(async choice => {
				if (choice !== undo) { return; }
				const now = rawHosts();
				if (now.some(e => entryName(e) === name)) { return; }
				now.splice(Math.min(index, now.length), 0, removed);
				await writeHosts(now);
			});
			return true;
		},
		/** Test the connection of a configured host (`arg`: a tree node or a name); shows and returns the outcome. */
		async testConnection(arg?: unknown): Promise<ConnectionOutcome | undefined> {
			const name = hostKeyOf(arg) ?? await pickConfiguredHost();
			if (!name) { return undefined; }
			if (name === LOCAL_HOST_KEY) { throw new Error(vscode.l10n.t('This machine needs no connection.')); }
			const setting = readHosts().hosts.find(h => h.name === name);
			if (!setting) { throw new Error(vscode.l10n.t('No valid host named {0} in the gpumpiDoctor.hosts setting.', JSON.stringify(name.slice(0, 80)))); }
			const r = await test(setting);
			if (r.ok) {
				void vscode.window.showInformationMessage(vscode.l10n.t('Connected to {0} ({1}).', name, setting.sshHost));
				return { ok: true, host: name };
			}
			showUnreachable(name, vscode.l10n.t('Cannot reach {0} ({1}): {2}', name, r.label, r.error), showLog);
			return { ok: false, host: name, kind: r.kind, label: r.label, error: r.error };
		},
	};
}

/** The error of an unreachable host, with Edit Host and Show Log. */
export function showUnreachable(hostName: string, message: string, showLog: () => void): void {
	const edit = vscode.l10n.t('Edit Host');
	const log = vscode.l10n.t('Show Log');
	void vscode.window.showErrorMessage(vscode.l10n.t('GPU-MPI Doctor: {0}', message), edit, log).then(choice => {
		if (choice === edit) { void vscode.commands.executeCommand('gpumpiDoctor.editHost', hostName); }
		if (choice === log) { showLog(); }
	});
}

/** After an inspection: when it could not reach its host, say so (the report's one finding) with the two actions. */
export function offerUnreachable(hostKey: string, finding: Finding | undefined, showLog: () => void): void {
	if (finding && hostKey !== LOCAL_HOST_KEY) { showUnreachable(hostKey, finding.message, showLog); }
}

async function pickConfiguredHost(): Promise<string | undefined> {
	const { hosts } = readHosts();
	if (hosts.length === 0) { throw new Error(vscode.l10n.t('No hosts in the gpumpiDoctor.hosts setting.')); }
	const picked = await vscode.window.showQuickPick(hosts.map(h => ({ label: h.name, description: h.sshHost })), { placeHolder: vscode.l10n.t('Which host?'), ignoreFocusOut: true });
	return picked?.label;
}
