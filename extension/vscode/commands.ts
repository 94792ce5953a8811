/**
 * Command registration with one wrapper: a correlation id per invocation, start/end logged, errors logged and
 * shown to the user (with a way to open the log). Command ids are typed.
 */
import * as vscode from 'vscode';
import { errorText, type Logger } from '../core/logger';

/** Every command id this extension contributes (package.json `contributes.commands`). */
export type CommandId = 'gpumpiDoctor.inspectHost' | 'gpumpiDoctor.showLog' | 'gpumpiDoctor.analyzeBundle'
	| 'gpumpiDoctor.saveInspection' | 'gpumpiDoctor.openInspection' | 'gpumpiDoctor.compareInspections' | 'gpumpiDoctor.saveReproResult' | 'gpumpiDoctor.compareReproResults'
	| 'gpumpiDoctor.addHost' | 'gpumpiDoctor.editHost' | 'gpumpiDoctor.removeHost' | 'gpumpiDoctor.refreshHosts' | 'gpumpiDoctor.testConnection'
	| 'gpumpiDoctor.reproIpc' | 'gpumpiDoctor.reproFallback' | 'gpumpiDoctor.openReproResult' | 'gpumpiDoctor.showTransportMap'
	| 'gpumpiDoctor.showPanel' | 'gpumpiDoctor.showFinding' | 'gpumpiDoctor.copyFixCommand' | 'gpumpiDoctor.showHostReport' | 'gpumpiDoctor.runGuard';

let invocation = 0;
let lastError: { id: CommandId; message: string } | undefined;

/** The last error a wrapped command showed (tests read it through the extension API). */
export function lastCommandError(): { id: CommandId; message: string } | undefined { return lastError; }

/** Register `handler` under `id`, wrapped. */
export function registerCommand(id: CommandId, handler: (...args: unknown[]) => Promise<unknown> | unknown, log: Logger, showLog: () => void): vscode.Disposable {
	return vscode.commands.registerCommand(id, async (...args: unknown[]) => {
		const cid = `${id}#${++invocation}`;
		const started = Date.now();
		log.debug(`[${cid}] start`);
		try {
			const result = await handler(...args);
			log.debug(`[${cid}] end (${Date.now() - started} ms)`);
			return result;
		} catch (e) {
			const message = errorText(e);
			lastError = { id, message };
			log.error(`[${cid}] failed after ${Date.now() - started} ms: ${message}`);
			const open = vscode.l10n.t('Show Log');
			void vscode.window.showErrorMessage(vscode.l10n.t('GPU-MPI Doctor: {0}', message), open).then(choice => {
				if (choice === open) { showLog(); }
			});
			return undefined;
		}
	});
}
