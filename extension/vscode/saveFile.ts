/**
 * The one "save a result" path of the extension's views (the inspection's Save…, the reproducer's Save…, the
 * transport map's Export): the save dialog, offered in the first workspace folder or else the home directory, and
 * the write whole-or-not-at-all (core/fileWrite.ts), so a full disk never leaves a cut file that looks like a result.
 */
import * as os from 'node:os';
import * as vscode from 'vscode';
import { writeFileWhole } from '../core/fileWrite';

/** What the save dialog shows. */
export interface SaveDialogSpec {
	/** The proposed file name (no directory). */
	name: string;
	title: string;
	filters: Record<string, string[]>;
	saveLabel?: string;
}

/** The path the user picked, or undefined when they cancelled. */
export async function askSavePath(spec: SaveDialogSpec): Promise<string | undefined> {
	const dir = vscode.workspace.workspaceFolders?.[0]?.uri ?? vscode.Uri.file(os.homedir());
	const picked = await vscode.window.showSaveDialog({
		defaultUri: vscode.Uri.joinPath(dir, spec.name), title: spec.title, filters: spec.filters,
		...(spec.saveLabel ? { saveLabel: spec.saveLabel } : {}),
	});
	return picked?.fsPath;
}

/** Write a result file whole or not at all; the error names the file. */
export function writeResult(file: string, data: string | Uint8Array): void {
	try { writeFileWhole(file, data); } catch (e) {
		throw new Error(vscode.l10n.t('Cannot write {0}: {1}', file, e instanceof Error ? e.message : String(e)));
	}
}
