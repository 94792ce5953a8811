/**
 * Reads the `gpumpiDoctor.*` settings and validates them with the same rules as the CLI (core/inspect.ts).
 * Hostile values are data: they are reported and replaced by defaults, never executed or trusted.
 */
import * as vscode from 'vscode';
import { normalizeSettings, type InspectSettings } from '../core/inspect';

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
