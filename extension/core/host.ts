/**
 * What the collector and the launch layer need from a machine: run an argv, read a file, see the environment, find a
 * program. The interface is in core's base layer so that launch/ runs on any host without importing one: LocalHost
 * (hosts/localHost.ts) implements it with proc.ts; SshHost (hosts/sshHost.ts) implements the same interface over one
 * shared ssh connection, POSIX-quoting every argv (`posixQuoteArgv`) into the remote login shell and reading files
 * with `head -c`.
 */
import type { HostRef } from '../shared/report';
import type { ExecuteResult, StreamName } from './proc';

/** Options for one run on a host. */
export interface HostRunOptions {
	/** Extra environment variables on top of the host's environment. */
	env?: Record<string, string>;
	cwd?: string;
	timeoutMs: number;
	signal?: AbortSignal;
	onLine?: (stream: StreamName, line: string) => void;
	maxOutputBytes?: number;
	/** Directories on this host of this run alone (proc.ts `privateDirs`); only a local host records them. */
	privateDirs?: readonly string[];
}

/** Result of `Host.readFile`. */
export type ReadFileResult =
	| { ok: true; text: string; truncated: boolean }
	| { ok: false; error: string; notFound: boolean };

/** Who and where the collector runs. */
export interface HostIdentity {
	uid: number;
	user: string;
	hostname: string;
}

/**
 * Whether a host can be reached at all, tested before anything is run there. A failure names its class (`kind`,
 * e.g. "name-not-resolved", with a short `label`), one clear sentence (`error`), and what the connecting program
 * itself said (`stderr`, the argv it ran, how long it took): the evidence of a "cannot reach" finding.
 */
export type HostConnectResult =
	| { ok: true }
	| { ok: false; kind: string; label: string; error: string; stderr: string; command: string[]; durationMs: number };

/** A machine the doctor can inspect. Every method resolves (never rejects) for ordinary failures. */
export interface Host {
	readonly ref: HostRef;
	/**
	 * Test that the host can be reached (once; later calls get the same outcome). Absent for this machine. Callers
	 * that look at a host (collect.ts) call it first and, when it fails, look at nothing else.
	 */
	connect?(): Promise<HostConnectResult>;
	/** Run argv (no shell). A program not on PATH gives exitCode null and error "not found on PATH". */
	run(argv: readonly string[], opts: HostRunOptions): Promise<ExecuteResult>;
	/** Read a text file (capped). */
	readFile(path: string, maxBytes?: number): Promise<ReadFileResult>;
	/** The environment programs started on this host get. */
	env(): Promise<Record<string, string>>;
	/** Absolute path of `name` found by scanning the host's PATH, or null. */
	which(name: string): Promise<string | null>;
	/** Entry names of a directory, or null when it cannot be listed. */
	listDir(path: string): Promise<string[] | null>;
	/** Resolve symlinks of an absolute path (the path itself when it cannot be resolved). */
	realpath(path: string): Promise<string>;
	/** uid, user name, host name. */
	identity(): Promise<HostIdentity>;
	/** Processor count available to programs on this host (for `--oversubscribe` decisions). */
	cpuCount(): Promise<number>;
}

export { posixQuote, posixQuoteArgv } from '../shared/shellQuote';
