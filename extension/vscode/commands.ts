/**
 * Command registration with one wrapper: a correlation id per invocation, start/end logged, errors logged and
 * shown to the user (with a way to open the log). Command ids are typed.
 */
import * as vscode from 'vscode';
import { errorText, type Logger } from '../core/logger';

/** Every command id this extension contributes (package.json `contributes.commands`). */
export type CommandId = 'gpumpiDoctor.inspectHost' | 'gpumpiDoctor.showLog' | 'gpumpiDoctor.analyzeBundle';

let invocation = 0;

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
			log.error(`[${cid}] failed after ${Date.now() - started} ms: ${message}`);
			const open = vscode.l10n.t('Show Log');
			void vscode.window.showErrorMessage(vscode.l10n.t('GPU-MPI Doctor: {0}', message), open).then(choice => {
				if (choice === open) { showLog(); }
			});
			return undefined;
		}
	});
}
