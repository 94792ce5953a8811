/**
 * The machine this process runs on. Programs are found by scanning the host's PATH in node (no shell), then
 * started with proc.ts in their own process group.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { HostRef } from '../../shared/report';
import { execute, type ExecuteResult } from '../proc';
import type { Host, HostIdentity, HostRunOptions, ReadFileResult } from '../host';

/** Options for LocalHost (tests use `env` to simulate a machine without MPI). */
export interface LocalHostOptions {
	/** The environment programs get; default process.env. */
	env?: Record<string, string | undefined>;
}

const DEFAULT_READ_CAP = 4 * 1024 * 1024;

/** What a non-regular file is, for the error a reader sees. */
function fileKind(st: fs.Stats): string {
	if (st.isDirectory()) { return 'a directory'; }
	if (st.isFIFO()) { return 'a FIFO (named pipe)'; }
	if (st.isSocket()) { return 'a socket'; }
	if (st.isCharacterDevice() || st.isBlockDevice()) { return 'a device'; }
	return 'not a file';
}

/** The local machine. */
export class LocalHost implements Host {
	readonly ref: HostRef;
	private readonly _env: Record<string, string>;

	constructor(opts: LocalHostOptions = {}) {
		const hostname = os.hostname();
		this.ref = { id: 'local', label: hostname, kind: 'local' };
		this._env = {};
		for (const [k, v] of Object.entries(opts.env ?? process.env)) {
			if (typeof v === 'string') { this._env[k] = v; }
		}
	}

	async env(): Promise<Record<string, string>> {
		return { ...this._env };
	}

	async which(name: string): Promise<string | null> {
		return whichIn(name, this._env.PATH ?? '');
	}

	async realpath(p: string): Promise<string> {
		try { return await fs.promises.realpath(p); } catch { return p; }
	}

	async run(argv: readonly string[], opts: HostRunOptions): Promise<ExecuteResult> {
		if (argv.length === 0) {
			return { exitCode: null, signal: null, stdout: '', stderr: '', timedOut: false, error: 'empty command line', durationMs: 0 };
		}
		let program = argv[0];
		if (!program.includes('/')) {
			const found = await this.which(program);
			if (!found) {
				return { exitCode: null, signal: null, stdout: '', stderr: '', timedOut: false, error: 'not found on PATH', durationMs: 0 };
			}
			program = found;
		}
		const env = { ...this._env, ...(opts.env ?? {}) };
		return execute([program, ...argv.slice(1)], {
			cwd: opts.cwd,
			env,
			timeoutMs: opts.timeoutMs,
			signal: opts.signal,
			onLine: opts.onLine,
			maxOutputBytes: opts.maxOutputBytes,
			privateDirs: opts.privateDirs,
		}).result;
	}

	async readFile(p: string, maxBytes = DEFAULT_READ_CAP): Promise<ReadFileResult> {
		let handle: fs.promises.FileHandle | undefined;
		try {
			// O_NONBLOCK: a FIFO with no writer in place of the file (e.g. ~/.openmpi/mca-params.conf) would block the
			// open forever, and with it the libuv thread and the whole collect; non-blocking, the open returns at once
			// and fstat says what it is. On a regular file O_NONBLOCK changes nothing.
			handle = await fs.promises.open(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
			const st = await handle.stat();
			if (!st.isFile()) { return { ok: false, error: `not a regular file (${fileKind(st)})`, notFound: false }; }
			const size = Math.min(st.size, maxBytes);
			const buf = Buffer.alloc(size);
			const { bytesRead } = await handle.read(buf, 0, size, 0);
			return { ok: true, text: buf.subarray(0, bytesRead).toString('utf8'), truncated: st.size > maxBytes };
		} catch (e) {
			const code = (e as NodeJS.ErrnoException).code;
			return {
				ok: false,
				notFound: code === 'ENOENT' || code === 'ENOTDIR',
				error: code === 'ENOENT' || code === 'ENOTDIR' ? 'no such file' : code === 'EACCES' ? 'permission denied' : String((e as Error).message),
			};
		} finally {
			await handle?.close().catch(() => undefined);
		}
	}

	async listDir(p: string): Promise<string[] | null> {
		try { return await fs.promises.readdir(p); } catch { return null; }
	}

	async identity(): Promise<HostIdentity> {
		let user = this._env.USER ?? '';
		try { user = os.userInfo().username; } catch { /* no passwd entry: keep $USER */ }
		return { uid: typeof process.getuid === 'function' ? process.getuid() : -1, user, hostname: os.hostname() };
	}

	async cpuCount(): Promise<number> {
		return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
	}
}

/** Scan a PATH string for an executable regular file called `name` (no shell, no hashing). */
export function whichIn(name: string, pathVar: string): string | null {
	if (name.length === 0 || name.includes('/') || name.includes('\0')) { return null; }
	for (const dir of pathVar.split(path.delimiter)) {
		if (!dir || !path.isAbsolute(dir)) { continue; } // relative PATH entries are a hazard; skip them
		const candidate = path.join(dir, name);
		try {
			const st = fs.statSync(candidate);
			if (!st.isFile()) { continue; }
			fs.accessSync(candidate, fs.constants.X_OK);
			return candidate;
		} catch { /* not here */ }
	}
	return null;
}
