/**
 * Inspections kept: a history per host (the last HISTORY_MAX inspections of each, also written under the extension's
 * global storage so they outlive the window), "Save Inspection…" (JSON, readable again, or the standalone HTML report
 * the CLI writes), "Open Saved Inspection…", and "Compare Inspections…": two inspections (of one host before / after a
 * `module load`, or of two hosts: login vs compute node) in VS Code's diff editor, each as shared/reportCompare.ts's
 * text, so what changed is what the diff shows.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { findingCounts, findingCountsText } from '../shared/headline';
import { comparableText } from '../shared/reportCompare';
import { MAX_REPORT_BYTES, parseReportText } from '../shared/reportFile';
import { writeFileWhole } from '../core/fileWrite';
import { renderStandaloneReport } from '../shared/render';
import type { Report } from '../shared/report';
import type { Logger } from '../core/logger';
import { Disposable } from './dispose';
import { LOCAL_HOST_KEY, type InspectionService } from './inspectionService';
import { DiffTexts } from './diffTexts';
import { askSavePath, writeResult } from './saveFile';

/** Inspections kept per host. */
export const HISTORY_MAX = 10;
/** Compared texts kept for the diff editor (two per comparison). */
const COMPARE_TEXTS_MAX = 2 * HISTORY_MAX;
/** The scheme of the compared texts. */
export const COMPARE_SCHEME = 'gpumpi-doctor-compare';

/** One kept inspection. */
export interface KeptInspection { key: string; report: Report; file: string | null }

/** A reference to an inspection: a host's latest, one of its history, or a saved file. */
export type InspectionRef = { host: string; index?: number } | { file: string };

function hostLabel(key: string): string { return key === LOCAL_HOST_KEY ? vscode.l10n.t('this machine') : key; }

/** The per-host history and the commands on it. */
export class InspectionKeep extends Disposable {
	private readonly _byHost = new Map<string, KeptInspection[]>();
	private readonly _texts = this._register(new DiffTexts(COMPARE_SCHEME, COMPARE_TEXTS_MAX));
	private _loaded: Promise<void> | undefined;
	private readonly _onDidChangeHistory = this._register(new vscode.EventEmitter<string>());
	/** Fires with the host key whose history changed. */
	readonly onDidChangeHistory = this._onDidChangeHistory.event;

	constructor(private readonly _service: InspectionService, private readonly _dir: string, private readonly _log: Logger, private readonly _extensionUri: vscode.Uri) {
		super();
		this._register(_service.onDidChange(change => {
			// Inspections only (runs and shown ones); a saved file or a bundle is not a host's history.
			if (change.kind === 'report' && !change.key.includes(':')) { this._add(change.key, change.report); }
		}));
	}

	/** A host's kept inspections, newest first (the persisted ones once loaded). */
	async history(key: string): Promise<KeptInspection[]> {
		await this._load();
		return [...(this._byHost.get(key) ?? [])];
	}

	/** Same, without waiting for the persisted ones (the tree asks synchronously, then refreshes when they are in). */
	historyNow(key: string): KeptInspection[] {
		void this._load();
		return [...(this._byHost.get(key) ?? [])];
	}

	/**
	 * Put one inspection into a host's history: once per createdAt, newest first, at most HISTORY_MAX (the files of
	 * those that drop out are removed). False when it was there already.
	 */
	private _insert(kept: KeptInspection): boolean {
		const list = this._byHost.get(kept.key) ?? [];
		if (list.some(k => k.report.createdAt === kept.report.createdAt)) { return false; }
		list.push(kept);
		list.sort((a, b) => b.report.createdAt.localeCompare(a.report.createdAt));
		for (const old of list.splice(HISTORY_MAX)) { if (old.file) { fs.rm(old.file, { force: true }, () => undefined); } }
		this._byHost.set(kept.key, list);
		return list.includes(kept);
	}

	private _add(key: string, report: Report): void {
		const kept: KeptInspection = { key, report, file: null };
		if (!this._insert(kept)) { return; }
		try {
			fs.mkdirSync(this._dir, { recursive: true });
			const file = path.join(this._dir, `${encodeURIComponent(key)}--${report.createdAt.replace(/[^0-9A-Za-z]/g, '')}.json`);
			writeFileWhole(file, JSON.stringify(report));
			kept.file = file;
		} catch (e) { this._log.warn(`cannot keep the inspection of ${key}: ${e instanceof Error ? e.message : String(e)}`); }
		this._onDidChangeHistory.fire(key);
	}

	private _load(): Promise<void> {
		this._loaded ??= (async () => {
			let names: string[] = [];
			try { names = await fs.promises.readdir(this._dir); } catch { return; }
			for (const name of names.filter(n => n.endsWith('.json'))) {
				const m = /^(.*)--[0-9A-Za-z]+\.json$/.exec(name);
				if (!m) { continue; }
				const file = path.join(this._dir, name);
				try {
					this._insert({ key: decodeURIComponent(m[1]), report: await readReportFile(file), file });
				} catch (e) { this._log.warn(`kept inspection ${name} ignored: ${e instanceof Error ? e.message : String(e)}`); }
			}
			for (const key of this._byHost.keys()) { this._onDidChangeHistory.fire(key); }
		})();
		return this._loaded;
	}

	/** The inspection a reference names. */
	async resolve(ref: InspectionRef): Promise<Report> {
		if ('file' in ref) { return readReportFile(ref.file); }
		const list = await this.history(ref.host);
		const r = ref.index === undefined || ref.index === 0 ? this._service.reportFor(ref.host) ?? list[0]?.report : list[ref.index]?.report;
		if (!r) { throw new Error(vscode.l10n.t('{0} has no inspection #{1} in this window\'s history.', hostLabel(ref.host), String(ref.index ?? 0))); }
		return r;
	}

	/** "Save Inspection…": the report as JSON (readable again) or HTML; `file` skips the dialog (its extension picks the format). */
	async save(report: Report, file?: string): Promise<string | undefined> {
		const target = file ?? await askSavePath({
			name: `gpumpi-${(report.summary?.hostname || report.host.label || 'host').replace(/[^A-Za-z0-9_.-]/g, '_')}-${report.createdAt.replace(/[:.]/g, '-').slice(0, 19)}.json`,
			title: vscode.l10n.t('Save the inspection'),
			filters: { [vscode.l10n.t('Inspection (JSON, opens again)')]: ['json'], [vscode.l10n.t('Report (HTML)')]: ['html'] },
		});
		if (!target) { return undefined; }
		const html = /\.html?$/i.test(target);
		writeResult(target, html ? renderStandaloneReport(report, await this._css()) : `${JSON.stringify(report, null, 2)}\n`);
		this._log.info(`saved the inspection of ${report.host.label} (${report.createdAt}) to ${target}`);
		return target;
	}

	/** The panel's stylesheet as the webview loads it: dist/panel.css ships in the .vsix, media/panel/panel.css does not. */
	private async _css(): Promise<string> {
		try { return Buffer.from(await vscode.workspace.fs.readFile(vscode.Uri.joinPath(this._extensionUri, 'dist', 'panel.css'))).toString('utf8'); } catch { return ''; }
	}

	/** Pick an inspection: every host's latest and history, or a saved file. */
	async pick(title: string, exclude?: Report): Promise<{ ref: InspectionRef; report: Report } | undefined> {
		await this._load();
		type Item = vscode.QuickPickItem & { ref?: InspectionRef; report?: Report };
		const items: Item[] = [];
		const keys = new Set([...this._byHost.keys()]);
		if (this._service.reportFor(LOCAL_HOST_KEY)) { keys.add(LOCAL_HOST_KEY); }
		for (const key of keys) {
			const list = await this.history(key);
			items.push({ label: hostLabel(key), kind: vscode.QuickPickItemKind.Separator });
			list.forEach((k, index) => {
				if (exclude && k.report.createdAt === exclude.createdAt && k.report.host.label === exclude.host.label) { return; }
				const at = new Date(k.report.createdAt);
				items.push({
					label: `${Number.isNaN(at.getTime()) ? k.report.createdAt : at.toLocaleString()}${index === 0 ? ` (${vscode.l10n.t('latest')})` : ''}`,
					description: `${k.report.headline?.verdict ?? ''} · ${findingCountsText(findingCounts(k.report.findings))}`,
					detail: k.report.headline?.text, ref: { host: key, index }, report: k.report,
				});
			});
		}
		const FILE = vscode.l10n.t('Open a saved inspection (JSON)…');
		items.push({ label: '', kind: vscode.QuickPickItemKind.Separator }, { label: FILE });
		const picked = await vscode.window.showQuickPick(items, { title, matchOnDescription: true, matchOnDetail: true, ignoreFocusOut: true });
		if (!picked) { return undefined; }
		if (picked.ref && picked.report) { return { ref: picked.ref, report: picked.report }; }
		const uri = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { JSON: ['json'] }, title: FILE });
		if (!uri?.[0]) { return undefined; }
		return { ref: { file: uri[0].fsPath }, report: await readReportFile(uri[0].fsPath) };
	}

	/** Open two inspections in the diff editor (left: older or first picked). Resolves to the two compared texts' URIs. */
	async compare(a: Report, b: Report): Promise<[vscode.Uri, vscode.Uri]> {
		const [left, right] = a.createdAt <= b.createdAt ? [a, b] : [b, a];
		// A URI names one inspection and side, so comparing the same two again reuses it.
		const uriOf = (r: Report, side: string): vscode.Uri => this._texts.put(`/${(r.summary?.hostname || r.host.label || 'host').replace(/[\\/]/g, '_')} ${r.createdAt}.txt`,
			`side=${side}&host=${encodeURIComponent(r.host.label)}`, comparableText(r));
		const title = vscode.l10n.t('GPU-MPI: {0} ({1}) ↔ {2} ({3})', left.host.label, new Date(left.createdAt).toLocaleString(), right.host.label, new Date(right.createdAt).toLocaleString());
		return this._texts.show(uriOf(left, 'left'), uriOf(right, 'right'), title);
	}
}

/** A saved inspection from disk, checked (parseReportText); an Error naming the file and the problem otherwise. */
export async function readReportFile(file: string): Promise<Report> {
	const uri = vscode.Uri.file(file);
	const st = await vscode.workspace.fs.stat(uri);
	if (st.size > MAX_REPORT_BYTES) { throw new Error(vscode.l10n.t('{0} is larger than {1} MiB', file, String(MAX_REPORT_BYTES / 1024 / 1024))); }
	const parsed = parseReportText(Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8'));
	if (!parsed.ok) { throw new Error(vscode.l10n.t('{0} is not a saved inspection: {1}', file, parsed.error)); }
	return parsed.report;
}

/** Parse a command argument naming an inspection: "file path", Uri, {host, index?}, {file}. */
export function inspectionRefOf(arg: unknown): InspectionRef | undefined {
	if (typeof arg === 'string' && arg.startsWith('/')) { return { file: arg }; }
	if (arg instanceof vscode.Uri) { return { file: arg.fsPath }; }
	if (typeof arg === 'object' && arg !== null) {
		const o = arg as Record<string, unknown>;
		if (typeof o.file === 'string' && o.file.startsWith('/')) { return { file: o.file }; }
		if (typeof o.host === 'string' && (o.index === undefined || (Number.isInteger(o.index) && (o.index as number) >= 0 && (o.index as number) < HISTORY_MAX))) {
			return { host: o.host, ...(o.index === undefined ? {} : { index: o.index as number }) };
		}
		if (o.kind === 'host' && typeof o.key === 'string') { return { host: o.key }; }
		if (o.kind === 'history' && typeof o.key === 'string' && Number.isInteger(o.index)) { return { host: o.key, index: o.index as number }; }
	}
	return undefined;
}
