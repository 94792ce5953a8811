/**
 * Texts shown in VS Code's diff editor under one URI scheme of their own (Compare Inspections…, Compare Reproducer
 * Results…): a read-only content provider over the newest `max` texts. Putting a text under a URI it already has
 * replaces it and makes it the newest; the oldest go beyond `max` (a reopened old diff is then empty, never wrong).
 */
import * as vscode from 'vscode';

export class DiffTexts implements vscode.Disposable {
	private readonly _texts = new Map<string, string>();
	private readonly _registration: vscode.Disposable;

	constructor(private readonly _scheme: string, private readonly _max: number) {
		this._registration = vscode.workspace.registerTextDocumentContentProvider(_scheme, { provideTextDocumentContent: uri => this._texts.get(uri.toString()) ?? '' });
	}

	/** Keep `text` under the URI made of this scheme, `path` and `query`; that URI. */
	put(path: string, query: string, text: string): vscode.Uri {
		const uri = vscode.Uri.from({ scheme: this._scheme, path, query });
		const key = uri.toString();
		this._texts.delete(key);
		this._texts.set(key, text);
		for (const old of [...this._texts.keys()].slice(0, Math.max(0, this._texts.size - this._max))) { this._texts.delete(old); }
		return uri;
	}

	/** Open two of them side by side in the diff editor. */
	async show(left: vscode.Uri, right: vscode.Uri, title: string): Promise<[vscode.Uri, vscode.Uri]> {
		await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: false });
		return [left, right];
	}

	dispose(): void { this._registration.dispose(); this._texts.clear(); }
}
