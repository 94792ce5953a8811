/**
 * A tiny tagged logger for core code. The VS Code side backs it with one LogOutputChannel, the CLI with stderr
 * (only with --verbose), tests with an in-memory sink. Core code never uses console.* directly.
 */

/** Log levels, lowest first. */
export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error';

/** What core code logs through. `component` appears as a tag, e.g. "[collect]". */
export interface Logger {
	trace(message: string): void;
	debug(message: string): void;
	info(message: string): void;
	warn(message: string): void;
	error(message: string): void;
	/** A logger for a sub-component that writes to the same sink. */
	child(component: string): Logger;
}

/** Where tagged log lines end up. */
export type LogSink = (level: LogLevel, component: string, message: string) => void;

const LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error'];

/** Build a logger for `component` on top of a sink. */
export function createLogger(sink: LogSink, component: string): Logger {
	const log = (level: LogLevel) => (message: string): void => {
		try { sink(level, component, message); } catch { /* logging must never break the caller */ }
	};
	return {
		trace: log('trace'),
		debug: log('debug'),
		info: log('info'),
		warn: log('warn'),
		error: log('error'),
		child: (sub: string) => createLogger(sink, `${component}/${sub}`),
	};
}

/** A logger that drops everything. */
export const nullLogger: Logger = createLogger(() => undefined, 'null');

/** A sink writing `<iso time> [level] [component] message` lines to a stream, at or above `minLevel`. */
export function streamSink(write: (line: string) => void, minLevel: LogLevel = 'debug'): LogSink {
	const min = LEVELS.indexOf(minLevel);
	return (level, component, message) => {
		if (LEVELS.indexOf(level) < min) { return; }
		write(`${new Date().toISOString()} [${level}] [${component}] ${message}\n`);
	};
}

/** A sink that keeps lines in memory (tests, and "what happened" summaries). */
export function memorySink(): { sink: LogSink; lines: string[] } {
	const lines: string[] = [];
	return { lines, sink: (level, component, message) => { lines.push(`[${level}] [${component}] ${message}`); } };
}

/** Render an unknown thrown value as one line of text. */
export function errorText(e: unknown): string {
	if (e instanceof Error) { return e.message || e.name; }
	return String(e);
}
