/**
 * The extension's one LogOutputChannel, exposed to core code as a tagged `Logger`.
 */
import * as vscode from 'vscode';
import { createLogger, type Logger, type LogSink } from '../core/logger';

/** Create the "GPU-MPI Doctor" log channel and a root logger writing to it. */
export function createOutputLogger(): { channel: vscode.LogOutputChannel; logger: Logger } {
	const channel = vscode.window.createOutputChannel('GPU-MPI Doctor', { log: true });
	const sink: LogSink = (level, component, message) => {
		const line = `[${component}] ${message}`;
		switch (level) {
			case 'trace': channel.trace(line); break;
			case 'debug': channel.debug(line); break;
			case 'info': channel.info(line); break;
			case 'warn': channel.warn(line); break;
			case 'error': channel.error(line); break;
		}
	};
	return { channel, logger: createLogger(sink, 'extension') };
}
