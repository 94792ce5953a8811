/**
 * The hosts UI: the "GPU-MPI Hosts" tree view (this machine + the `gpumpiDoctor.hosts` entries, each with its
 * status and, once inspected, its summary as children), the host QuickPick of "Inspect Host", and the commands
 * the commands use (hostCommands.ts). A host that could not be reached (its last connection test or inspection) is
 * marked: icon, "unreachable: <reason>" and the reason in the tooltip. Invalid settings entries are problem rows.
 */
import * as vscode from 'vscode';
import { findingCounts, findingCountsText } from '../shared/headline';
import type { Report } from '../shared/report';
import type { HostSetting } from '../core/hosts/hostSettings';
import { LOCAL_HOST_KEY, type InspectionService } from './inspectionService';
import type { InspectionKeep } from './inspectionKeep';
import { readHosts } from './settings';

/** One row of the tree: a host, a summary line under it, its history (group and entries), or an invalid settings entry. */
export type HostTreeNode =
	| { kind: 'host'; key: string; label: string; setting?: HostSetting }
	| { kind: 'detail'; key: string; label: string; value: string }
	| { kind: 'historyGroup'; key: string; count: number }
	| { kind: 'history'; key: string; index: number; report: Report }
	| { kind: 'problem'; message: string };

/** The view id in package.json `contributes.views`. */
export const HOSTS_VIEW_ID = 'gpumpiDoctor.hostsView';
/** What a click on a host row runs: its last report in the panel (extension.ts registers it). */
export const SHOW_HOST_REPORT_COMMAND = 'gpumpiDoctor.showHostReport';

/** TreeDataProvider of the hosts view; refreshes on setting changes and inspection events. */
export class HostsTreeProvider implements vscode.TreeDataProvider<HostTreeNode>, vscode.Disposable {
	private readonly _onDidChangeTreeData = new vscode.EventEmitter<HostTreeNode | undefined>();
	readonly onDidChangeTreeData = this._onDidChangeTreeData.event;
	private readonly _subs: vscode.Disposable[] = [];

	constructor(private readonly _service: InspectionService, private readonly _keep?: InspectionKeep) {
		this._subs.push(
			this._onDidChangeTreeData,
			_service.onDidChange(() => this.refresh()),
			...(_keep ? [_keep.onDidChangeHistory(() => this.refresh())] : []),
			vscode.workspace.onDidChangeConfiguration(e => { if (e.affectsConfiguration('gpumpiDoctor.hosts')) { this.refresh(); } }),
		);
		void vscode.commands.executeCommand('setContext', 'gpumpiDoctor.hasHosts', readHosts().hosts.length > 0);
	}

	refresh(): void {
		// Edit / Remove / Test Connection are offered only when there is a host to act on (package.json `when`).
		void vscode.commands.executeCommand('setContext', 'gpumpiDoctor.hasHosts', readHosts().hosts.length > 0);
		this._onDidChangeTreeData.fire(undefined);
	}

	getChildren(node?: HostTreeNode): HostTreeNode[] {
		if (!node) {
			const { hosts, problems } = readHosts();
			// Nothing configured and this machine never inspected: no rows, so VS Code shows the view's welcome
			// content (package.json `contributes.viewsWelcome`: "Inspect this machine" / "Add SSH host"). A view
			// with a row is never "empty", and the welcome content never showed while "This machine" was always listed.
			if (hosts.length === 0 && problems.length === 0 && !this._service.reportFor(LOCAL_HOST_KEY)
				&& !this._service.reachFor(LOCAL_HOST_KEY) && this._service.runningHost !== LOCAL_HOST_KEY) {
				return [];
			}
			return [
				{ kind: 'host', key: LOCAL_HOST_KEY, label: vscode.l10n.t('This machine') },
				...hosts.map((h): HostTreeNode => ({ kind: 'host', key: h.name, label: h.name, setting: h })),
				...problems.map((message): HostTreeNode => ({ kind: 'problem', message })),
			];
		}
		if (node.kind === 'historyGroup') {
			return (this._keep?.historyNow(node.key) ?? []).map((k, index): HostTreeNode => ({ kind: 'history', key: node.key, index, report: k.report }));
		}
		if (node.kind !== 'host') { return []; }
		const report = this._service.reportFor(node.key);
		const history = this._keep?.historyNow(node.key) ?? [];
		return [
			...(report ? summaryNodes(node.key, report) : []),
			...(history.length > 1 ? [{ kind: 'historyGroup', key: node.key, count: history.length } as HostTreeNode] : []),
		];
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
		if (node.kind === 'historyGroup') {
			const item = new vscode.TreeItem(vscode.l10n.t('History ({0})', String(node.count)), vscode.TreeItemCollapsibleState.Collapsed);
			item.id = `history:${node.key}`;
			item.tooltip = vscode.l10n.t('The last inspections of this host; a click compares one with the latest.');
			item.iconPath = new vscode.ThemeIcon('history');
			return item;
		}
		if (node.kind === 'history') {
			const at = new Date(node.report.createdAt);
			const item = new vscode.TreeItem(Number.isNaN(at.getTime()) ? node.report.createdAt : at.toLocaleString(), vscode.TreeItemCollapsibleState.None);
			item.id = `history:${node.key}:${node.report.createdAt}`;
			item.description = `${node.index === 0 ? `${vscode.l10n.t('latest')} · ` : ''}${findingCountsText(findingCounts(node.report.findings))}`;
			item.tooltip = node.report.headline?.text ?? '';
			item.contextValue = 'gpumpiHistory';
			if (node.index > 0) {
				item.command = { command: 'gpumpiDoctor.compareInspections', title: vscode.l10n.t('Compare with the latest'), arguments: [{ host: node.key, index: node.index }, { host: node.key, index: 0 }] };
			}
			return item;
		}
		if (node.kind === 'detail') {
			const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.None);
			item.description = node.value;
			item.tooltip = `${node.label}: ${node.value}`;
			return item;
		}
		const report = this._service.reportFor(node.key);
		const reach = this._service.reachFor(node.key);
		const unreachable = reach && !reach.ok && this._service.runningHost !== node.key ? reach : undefined;
		// An unreachable host's last report has nothing under it worth listing ("not checked" everywhere).
		const expandable = report && !unreachable;
		const item = new vscode.TreeItem(node.label, expandable ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
		item.id = `host:${node.key}`;
		item.description = this.status(node.key);
		const st = node.setting;
		const about = st
			? [st.sshHost, st.setup ? `setup: ${st.setup}` : '', st.launcher === 'srun' ? `launcher: srun${st.srunMpi ? ` --mpi=${st.srunMpi}` : ''} ${st.srunArgs.join(' ')}`.trimEnd() : `launcher: ${st.mpirun || 'mpirun'}`].filter(Boolean).join('\n')
			: vscode.l10n.t('The machine VS Code runs on');
		item.tooltip = unreachable
			? `${vscode.l10n.t('Unreachable ({0}, {1}): {2}', unreachable.label, new Date(unreachable.at).toLocaleTimeString(), unreachable.error)}\n\n${about}`
			: about;
		item.iconPath = unreachable ? new vscode.ThemeIcon('debug-disconnect', new vscode.ThemeColor('errorForeground')) : new vscode.ThemeIcon(node.setting ? 'remote' : 'vm');
		item.contextValue = node.setting ? 'gpumpiHost.ssh' : 'gpumpiHost.local';
		// A click shows the host's last report; a host not inspected yet has none, and a click does nothing.
		if (report) {
			item.command = { command: SHOW_HOST_REPORT_COMMAND, title: vscode.l10n.t('Show Last Report'), arguments: [node.key] };
		}
		return item;
	}

	/** The status text of a host row ("inspecting…", "inspected 10:42", "not inspected"). */
	status(key: string): string {
		if (this._service.runningHost === key) { return vscode.l10n.t('inspecting…'); }
		const reach = this._service.reachFor(key);
		if (reach && !reach.ok) { return vscode.l10n.t('unreachable: {0}', reach.label); }
		const report = this._service.reportFor(key);
		if (!report) { return vscode.l10n.t('not inspected'); }
		const at = new Date(report.createdAt);
		return vscode.l10n.t('inspected {0}: {1}', at.toLocaleTimeString(), findingCountsText(findingCounts(report.findings)));
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
	const picked = await vscode.window.showQuickPick(items, { title, placeHolder: vscode.l10n.t('Which host?'), ignoreFocusOut: true });
	if (!picked) { return undefined; }
	if (!picked.key) { throw new Error(vscode.l10n.t('That hosts entry is invalid and is not run: {0}', picked.label.replace(/^\$\(warning\) /, ''))); }
	return picked.key;
}

/** The host key a command argument names (a tree node or a name), or undefined. */
export function hostKeyOf(arg: unknown): string | undefined {
	if (typeof arg === 'string') { return arg; }
	if (typeof arg === 'object' && arg !== null && (arg as HostTreeNode).kind === 'host') { return (arg as { key: string }).key; }
	return undefined;
}
