/**
 * The hosts UI: the "GPU-MPI Hosts" tree view (this machine + the `gpumpiDoctor.hosts` entries, each with its
 * status and, once inspected, its summary as children), the host QuickPick of "Inspect Host", and the commands
 * that add / edit / remove entries of the `gpumpiDoctor.hosts` setting. Every value typed in is checked with
 * hostSettings' validator before it is stored; invalid settings entries are shown as problems and never run.
 */
import * as vscode from 'vscode';
import type { Report } from '../shared/report';
import { validateHostSettings, type HostSetting } from '../core/hosts/hostSettings';
import { LOCAL_HOST_KEY, type InspectionService } from './inspectionService';
import { rawHosts, readHosts, writeHosts } from './settings';

/** One row of the tree: a host, a summary line under it, or an invalid settings entry. */
export type HostTreeNode =
	| { kind: 'host'; key: string; label: string; setting?: HostSetting }
	| { kind: 'detail'; key: string; label: string; value: string }
	| { kind: 'problem'; message: string };

/** The view id in package.json `contributes.views`. */
export const HOSTS_VIEW_ID = 'gpumpiDoctor.hostsView';

/** TreeDataProvider of the hosts view; refreshes on setting changes and inspection events. */
export class HostsTreeProvider implements vscode.TreeDataProvider<HostTreeNode>, vscode.Disposable {
	private readonly _onDidChangeTreeData = new vscode.EventEmitter<HostTreeNode | undefined>();
	readonly onDidChangeTreeData = this._onDidChangeTreeData.event;
	private readonly _subs: vscode.Disposable[] = [];

	constructor(private readonly _service: InspectionService) {
		this._subs.push(
			this._onDidChangeTreeData,
			_service.onDidChange(() => this.refresh()),
			vscode.workspace.onDidChangeConfiguration(e => { if (e.affectsConfiguration('gpumpiDoctor.hosts')) { this.refresh(); } }),
		);
	}

	refresh(): void { this._onDidChangeTreeData.fire(undefined); }

	getChildren(node?: HostTreeNode): HostTreeNode[] {
		if (!node) {
			const { hosts, problems } = readHosts();
			return [
				{ kind: 'host', key: LOCAL_HOST_KEY, label: vscode.l10n.t('This machine') },
				...hosts.map((h): HostTreeNode => ({ kind: 'host', key: h.name, label: h.name, setting: h })),
				...problems.map((message): HostTreeNode => ({ kind: 'problem', message })),
			];
		}
		if (node.kind !== 'host') { return []; }
		const report = this._service.reportFor(node.key);
		return report ? summaryNodes(node.key, report) : [];
	}

	getTreeItem(node: HostTreeNode): vscode.TreeItem {
		if (node.kind === 'problem') {
			const item = new vscode.TreeItem(vscode.l10n.t('Invalid host setting'), vscode.TreeItemCollapsibleState.None);
			item.description = node.message;
			item.tooltip = node.message;
			item.iconPath = new vscode.ThemeIcon('warning');
			item.contextValue = 'gpumpiHostProblem';
			return item;
		}
		if (node.kind === 'detail') {
			const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
			item.description = node.value;
			item.tooltip = `${node.label}: ${node.value}`;
			return item;
		}
		const report = this._service.reportFor(node.key);
		const item = new vscode.TreeItem(node.label, report ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
		item.id = `host:${node.key}`;
		item.description = this.status(node.key);
		const st = node.setting;
		item.tooltip = st
			? [st.sshHost, st.setup ? `setup: ${st.setup}` : '', st.launcher === 'srun' ? `launcher: srun${st.srunMpi ? ` --mpi=${st.srunMpi}` : ''} ${st.srunArgs.join(' ')}`.trimEnd() : `launcher: ${st.mpirun || 'mpirun'}`].filter(Boolean).join('\n')
			: vscode.l10n.t('The machine VS Code runs on');
		item.iconPath = new vscode.ThemeIcon(node.setting ? 'remote' : 'vm');
		item.contextValue = node.setting ? 'gpumpiHost.ssh' : 'gpumpiHost.local';
		return item;
	}

	/** The status text of a host row ("inspecting…", "inspected 10:42", "not inspected"). */
	status(key: string): string {
		if (this._service.runningHost === key) { return vscode.l10n.t('inspecting…'); }
		const report = this._service.reportFor(key);
		if (!report) { return vscode.l10n.t('not inspected'); }
		const at = new Date(report.createdAt);
		const findings = report.findings.filter(f => f.severity === 'error' || f.severity === 'warning').length;
		return vscode.l10n.t('inspected {0}, {1} problem(s)', at.toLocaleTimeString(), findings);
	}

	dispose(): void { for (const s of this._subs) { s.dispose(); } }
}

function summaryNodes(key: string, report: Report): HostTreeNode[] {
	const s = report.summary;
	const gpus = s.gpus.length === 0 ? vscode.l10n.t('none found') : s.gpus.map(g => `${g.index}: ${g.name}`).join(', ');
	return [
		{ kind: 'detail', key, label: vscode.l10n.t('Host'), value: s.hostname || report.host.label },
		{ kind: 'detail', key, label: 'MPI', value: `${s.mpi.label}${s.mpi.cudaAware !== 'unknown' ? ` (CUDA-aware: ${s.mpi.cudaAware})` : ''}` },
		{ kind: 'detail', key, label: 'UCX', value: `${s.ucx.label}${s.ucx.cuda !== 'unknown' ? ` (CUDA: ${s.ucx.cuda})` : ''}` },
		{ kind: 'detail', key, label: 'CUDA', value: s.cuda.driverVersion ? `${s.cuda.label} (driver ${s.cuda.driverVersion})` : s.cuda.label },
		{ kind: 'detail', key, label: 'GPUs', value: gpus },
	];
}

/**
 * "Which host?": this machine + valid hosts (with their setup line and launcher); invalid entries are listed but
 * cannot be chosen. Used by Inspect Host, the reproducers and the map.
 */
export async function pickHost(title = vscode.l10n.t('GPU-MPI: Inspect Host')): Promise<string | undefined> {
	const { hosts, problems } = readHosts();
	if (hosts.length === 0 && problems.length === 0) { return LOCAL_HOST_KEY; }
	type Item = vscode.QuickPickItem & { key?: string };
	const items: Item[] = [
		{ label: `$(vm) ${vscode.l10n.t('This machine')}`, key: LOCAL_HOST_KEY },
		...hosts.map((h): Item => ({
			label: `$(remote) ${h.name}`, description: h.sshHost, key: h.name,
			detail: [h.setup ? `setup: ${h.setup}` : '', h.launcher === 'srun' ? `srun ${h.srunArgs.join(' ')}`.trimEnd() : ''].filter(Boolean).join(' · ') || undefined,
		})),
	];
	if (problems.length > 0) {
		items.push({ label: vscode.l10n.t('Invalid gpumpiDoctor.hosts entries (not run)'), kind: vscode.QuickPickItemKind.Separator });
		items.push(...problems.map((p): Item => ({ label: `$(warning) ${p}` })));
	}
	const picked = await vscode.window.showQuickPick(items, { title, placeHolder: vscode.l10n.t('Which host?') });
	if (!picked) { return undefined; }
	if (!picked.key) { throw new Error(vscode.l10n.t('That hosts entry is invalid and is not run: {0}', picked.label.replace(/^\$\(warning\) /, ''))); }
	return picked.key;
}

/** Values for add/edit, given as an argument (tests, scripts) or typed into input boxes. */
export interface HostInput {
	name: string; sshHost: string; setup?: string; mpirun?: string; enginePath?: string;
	launcher?: 'mpirun' | 'srun'; srunArgs?: string[]; srunMpi?: string;
}

function isHostInput(v: unknown): v is HostInput {
	return typeof v === 'object' && v !== null && typeof (v as HostInput).name === 'string' && typeof (v as HostInput).sshHost === 'string';
}

async function askHost(current?: HostSetting): Promise<HostInput | undefined> {
	const name = await vscode.window.showInputBox({ title: vscode.l10n.t('Host name'), value: current?.name, prompt: vscode.l10n.t('Shown in reports; letters, digits, ".", "_" or "-"') });
	if (name === undefined) { return undefined; }
	const sshHost = await vscode.window.showInputBox({ title: vscode.l10n.t('ssh destination'), value: current?.sshHost, prompt: vscode.l10n.t('An alias from ~/.ssh/config or user@host (key login; host key already in known_hosts)') });
	if (sshHost === undefined) { return undefined; }
	const setup = await vscode.window.showInputBox({ title: vscode.l10n.t('Setup line (optional)'), value: current?.setup, prompt: vscode.l10n.t('Shell code run on that host before every command, e.g. module load openmpi') });
	if (setup === undefined) { return undefined; }
	const launcher = await vscode.window.showQuickPick([
		{ label: 'mpirun', description: vscode.l10n.t('mpirun on that host (Open MPI or MPICH, detected there)'), picked: current?.launcher !== 'srun' },
		{ label: 'srun', description: vscode.l10n.t('Slurm: srun inside an allocation, or with allocation options'), picked: current?.launcher === 'srun' },
	], { title: vscode.l10n.t('How are ranks launched on that host?') });
	if (!launcher) { return undefined; }
	const out: HostInput = { name: name.trim(), sshHost: sshHost.trim(), setup: setup.trim(), launcher: launcher.label === 'srun' ? 'srun' : 'mpirun' };
	if (out.launcher === 'srun') {
		const args = await vscode.window.showInputBox({
			title: vscode.l10n.t('srun options (optional)'), value: current?.srunArgs.join(' '),
			prompt: vscode.l10n.t('Allocation options, split at spaces into separate arguments (never run through a shell), e.g. -p gpu -N 2 -t 10'),
		});
		if (args === undefined) { return undefined; }
		out.srunArgs = args.split(/\s+/).filter(a => a.length > 0);
	}
	return out;
}

/** Store `entry` (replacing the entry named `replacing`), after validating the whole resulting list. */
async function storeHost(entry: HostInput, replacing?: string): Promise<HostSetting> {
	const raw = rawHosts();
	const index = replacing === undefined ? -1 : raw.findIndex(e => typeof e === 'object' && e !== null && (e as { name?: unknown }).name === replacing);
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
	const others = raw.filter((_, i) => i !== index);
	if (others.some(e => typeof e === 'object' && e !== null && (e as { name?: unknown }).name === clean.name)) {
		throw new Error(vscode.l10n.t('Host not saved: the name {0} is already used.', JSON.stringify(clean.name)));
	}
	if (index >= 0) { raw[index] = clean; } else { raw.push(clean); }
	await writeHosts(raw);
	return single.hosts[0];
}

function hostName(arg: unknown): string | undefined {
	if (typeof arg === 'string') { return arg; }
	if (typeof arg === 'object' && arg !== null && (arg as HostTreeNode).kind === 'host') { return (arg as { key: string }).key; }
	return undefined;
}

/** Handlers of the host commands (registered by extension.ts through commands.ts' wrapper). */
export const hostCommands = {
	/** Add a host: `arg` is a HostInput (tests) or undefined (input boxes). */
	async add(arg?: unknown): Promise<HostSetting | undefined> {
		const input = isHostInput(arg) ? arg : await askHost();
		return input ? storeHost(input) : undefined;
	},
	/** Edit a host: `arg` is a tree node or a name, optionally `(name, HostInput)`. */
	async edit(arg?: unknown, values?: unknown): Promise<HostSetting | undefined> {
		const name = hostName(arg) ?? await pickConfiguredHost();
		if (!name) { return undefined; }
		if (name === LOCAL_HOST_KEY) { throw new Error(vscode.l10n.t('This machine is not a hosts entry and cannot be edited.')); }
		const current = readHosts().hosts.find(h => h.name === name);
		const input = isHostInput(values) ? values : await askHost(current);
		return input ? storeHost(input, name) : undefined;
	},
	/** Remove a host: `arg` is a tree node or a name. */
	async remove(arg?: unknown): Promise<boolean> {
		const name = hostName(arg) ?? await pickConfiguredHost();
		if (!name || name === LOCAL_HOST_KEY) { return false; }
		const raw = rawHosts();
		const kept = raw.filter(e => !(typeof e === 'object' && e !== null && (e as { name?: unknown }).name === name));
		if (kept.length === raw.length) { throw new Error(vscode.l10n.t('No host named {0} in the gpumpiDoctor.hosts setting.', JSON.stringify(name.slice(0, 80)))); }
		await writeHosts(kept);
		return true;
	},
};

async function pickConfiguredHost(): Promise<string | undefined> {
	const { hosts } = readHosts();
	if (hosts.length === 0) { throw new Error(vscode.l10n.t('No hosts in the gpumpiDoctor.hosts setting.')); }
	const picked = await vscode.window.showQuickPick(hosts.map(h => ({ label: h.name, description: h.sshHost })), { placeHolder: vscode.l10n.t('Which host?') });
	return picked?.label;
}

/** The host key a command argument names (a tree node or a name), or undefined. */
export function hostKeyOf(arg: unknown): string | undefined { return hostName(arg); }
