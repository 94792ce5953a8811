/**
 * Disposable helpers for long-lived extension classes: `Disposable` with `_register()`, disposed in reverse order.
 */
import type * as vscode from 'vscode';

/** Base class that owns other disposables. */
export abstract class Disposable implements vscode.Disposable {
	private readonly _disposables: vscode.Disposable[] = [];
	private _isDisposed = false;

	protected get isDisposed(): boolean { return this._isDisposed; }

	/** Take ownership of `d`; disposed immediately when this is already disposed. */
	protected _register<T extends vscode.Disposable>(d: T): T {
		if (this._isDisposed) { d.dispose(); } else { this._disposables.push(d); }
		return d;
	}

	dispose(): void {
		if (this._isDisposed) { return; }
		this._isDisposed = true;
		while (this._disposables.length > 0) {
			try { this._disposables.pop()?.dispose(); } catch { /* keep disposing the rest */ }
		}
	}
}
