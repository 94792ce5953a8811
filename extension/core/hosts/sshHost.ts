/**
 * A remote machine reached with the system OpenSSH client (`ssh`), always non-interactive: BatchMode (never a
 * password or passphrase prompt), StrictHostKeyChecking=yes (an unknown or changed host key is an error naming the
 * known_hosts problem; keys are never accepted silently), one shared connection (ControlMaster/ControlPersist in a
 * private directory).
 *
 * Every command is an argv: it is POSIX-quoted (host.ts `posixQuoteArgv`) into the command string ssh hands to the
 * remote login shell, which must be a POSIX shell (sh, bash, zsh, ksh). The remote side starts the program in its
 * own session (`setsid`) and first prints its process-group id, so a timeout or cancel kills the whole remote group
 * through a second ssh command, then the local ssh process. The per-host `setup` line (e.g. `module load openmpi`)
 * is the user's own shell code BY DESIGN: it is executed as shell (`bash -l`) on their host before each command;
 * nothing else is ever interpreted by a shell.
 */
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { HostRef } from '../../shared/report';
import { execute, formatSeconds, type ExecuteResult } from '../proc';
import { posixQuote, posixQuoteArgv, type Host, type HostConnectResult, type HostIdentity, type HostRunOptions, type ReadFileResult } from '../host';

/** How to reach one SSH host. */
export interface SshHostOptions {
	/** Display name (the host's name in settings); default the destination. */
	name?: string;
	/** ssh destination: an alias from ~/.ssh/config, `host` or `user@host`. */
	destination: string;
	/** Shell code run (in `bash -l`) before every command, e.g. `module load openmpi`. Executed as shell by design. */
	setup?: string;
	/** Seconds ssh waits for the TCP connection (ConnectTimeout); default 10. */
	connectTimeoutSeconds?: number;
	/** An ssh_config file used instead of ~/.ssh/config (`ssh -F`). */
	configFile?: string;
	/** Directory of the connection-sharing sockets; default a private 0700 directory under the temp dir. */
	controlDir?: string;
	/** The ssh program; default `ssh` on PATH. */
	sshProgram?: string;
}

/** Outcome of connecting (once per SshHost, then cached). */
export type SshConnectResult = HostConnectResult;

const MARK = 'GPUMPI-';
const DEFAULT_READ_CAP = 4 * 1024 * 1024;

/**
 * The remote runner, executed by `sh -c` / `bash -lc` with $0 = nonce, $1 = setup line, $2… = argv. It prints its
 * pid (= its process group after setsid), runs the setup (its stdout goes to stderr so tool output stays clean),
 * checks the program exists, then execs it.
 */
function runnerScript(prelude: string): string {
	return `printf '${MARK}%s pid %s\\n' "$0" "$$" >&2; `
		+ `{ eval "$1"; } >&2 || { st=$?; printf '${MARK}%s setup %s\\n' "$0" "$st" >&2; exit 97; }; shift; ${prelude}`
		+ `command -v -- "$1" >/dev/null 2>&1 || { printf '${MARK}%s notfound\\n' "$0" >&2; exit 127; }; exec "$@"`;
}

/** Why a destination cannot be handed to ssh, or null when it is acceptable. */
export function destinationProblem(dest: string): string | null {
	if (typeof dest !== 'string' || dest.length === 0) { return 'the ssh destination is empty'; }
	if (dest.length > 255) { return 'the ssh destination is longer than 255 characters'; }
	if (dest.startsWith('-')) { return `the ssh destination ${JSON.stringify(dest)} starts with "-" (ssh would read it as an option)`; }
	if (/[\s\x00-\x1f\x7f]/.test(dest)) { return `the ssh destination ${JSON.stringify(dest)} contains whitespace or control characters`; }
	if (!/^[A-Za-z0-9._@%+:\[\]/-]+$/.test(dest)) { return `the ssh destination ${JSON.stringify(dest)} has characters other than letters, digits and . _ @ % + : [ ] / -`; }
	return null;
}

/** Why ssh could not connect, as a class the UI can name ("name not resolved", "refused", …). */
export type SshFailureKind = 'name-not-resolved' | 'refused' | 'host-key-changed' | 'host-key-unknown' | 'auth-failed'
	| 'timeout' | 'unreachable' | 'no-ssh-client' | 'local' | 'other';

/** A short label of each failure kind, for titles and tree rows. */
export const SSH_FAILURE_LABEL: Record<SshFailureKind, string> = {
	'name-not-resolved': 'host name not resolved',
	refused: 'connection refused',
	'host-key-changed': 'host key changed',
	'host-key-unknown': 'host key unknown',
	'auth-failed': 'login refused',
	timeout: 'connection timed out',
	unreachable: 'network unreachable',
	'no-ssh-client': 'no ssh client',
	local: 'local problem',
	other: 'ssh failed',
};

/** Turn ssh's own stderr (exit status 255, before the remote command started) into its class and one clear sentence. */
export function classifySshFailure(dest: string, stderr: string, connectTimeoutSeconds: number): { kind: SshFailureKind; message: string } {
	const text = stderr.trim();
	const tail = text.split('\n').filter(l => l.trim().length > 0).slice(-3).join(' | ');
	const offending = /Offending \S+ key in (\S+):(\d+)/.exec(text);
	if (/REMOTE HOST IDENTIFICATION HAS CHANGED/.test(text)) {
		return { kind: 'host-key-changed', message: `the host key of ${dest} has CHANGED since it was recorded in known_hosts`
			+ (offending ? ` (${offending[1]} line ${offending[2]})` : '')
			+ ': this can be a man-in-the-middle attack, or the host was reinstalled. Verify the new key with the administrators, '
			+ `then remove the old entry (ssh-keygen -R <host>) and connect once with plain ssh. gpumpi-doctor never accepts host keys itself.` };
	}
	if (/No \S+ host key is known for|Host key verification failed/.test(text)) {
		return { kind: 'host-key-unknown', message: `the host key of ${dest} is not in known_hosts, and gpumpi-doctor never accepts host keys itself: `
			+ 'connect once with plain "ssh" (check the fingerprint) or add the key to ~/.ssh/known_hosts' };
	}
	if (/Permission denied \(/.test(text)) {
		return { kind: 'auth-failed', message: `${dest} refused the login (${/Permission denied \([^)]*\)/.exec(text)?.[0]}): gpumpi-doctor needs key-based login `
			+ 'without prompts (BatchMode); check that your public key is in the remote ~/.ssh/authorized_keys and that ssh-agent has the key' };
	}
	if (/Could not resolve hostname/.test(text)) { return { kind: 'name-not-resolved', message: `cannot resolve the host name of ${dest}: ${tail}` }; }
	if (/Connection refused/.test(text)) { return { kind: 'refused', message: `connection to ${dest} refused: no SSH server is listening there (${tail})` }; }
	if (/Connection timed out|timed out during banner|Operation timed out/.test(text)) {
		return { kind: 'timeout', message: `${dest} did not answer within ${connectTimeoutSeconds} s (ConnectTimeout): ${tail}` };
	}
	if (/No route to host|Network is unreachable|Host is unreachable/.test(text)) { return { kind: 'unreachable', message: `${dest} is unreachable: ${tail}` }; }
	return { kind: 'other', message: `ssh to ${dest} failed${tail ? `: ${tail}` : ' (exit status 255, no message)'}` };
}

/** The sentence of `classifySshFailure`. */
export function classifySshError(dest: string, stderr: string, connectTimeoutSeconds: number): string {
	return classifySshFailure(dest, stderr, connectTimeoutSeconds).message;
}

/** Create (or check) a private directory for the control sockets: owned by us, mode 0700, not a symlink. */
function privateDir(dir: string): string | null {
	try {
		fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
		const st = fs.lstatSync(dir);
		const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid;
		if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) { return `${dir} is not a private directory of this user`; }
		return null;
	} catch (e) {
		return `cannot create ${dir}: ${(e as Error).message}`;
	}
}

/** A machine reached over ssh. */
export class SshHost implements Host {
	readonly ref: HostRef;
	private readonly _dest: string;
	private readonly _setup: string;
	private readonly _connectTimeout: number;
	private readonly _configFile?: string;
	private readonly _controlDir: string;
	private readonly _ssh: string;
	private _connecting?: Promise<SshConnectResult>;
	private _facts?: Promise<{ identity: HostIdentity; cpus: number; env: Record<string, string> } | null>;

	/** Throws for a destination ssh would misread (validate settings first with `validateHostSettings`). */
	constructor(opts: SshHostOptions) {
		const problem = destinationProblem(opts.destination);
		if (problem) { throw new Error(problem); }
		this._dest = opts.destination;
		this._setup = opts.setup ?? '';
		this._connectTimeout = Math.max(1, Math.min(300, Math.round(opts.connectTimeoutSeconds ?? 10)));
		this._configFile = opts.configFile;
		const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
		this._controlDir = opts.controlDir ?? path.join(os.tmpdir(), `gpumpi-ssh-${uid}`);
		this._ssh = opts.sshProgram ?? 'ssh';
		const name = opts.name && opts.name.length > 0 ? opts.name : opts.destination;
		this.ref = { id: `ssh:${name}`, label: name === opts.destination ? name : `${name} (${opts.destination})`, kind: 'ssh' };
	}

	/** The ssh argv up to and including the destination (no remote command). */
	private _sshArgv(control: 'auto' | 'no', extra: string[] = []): string[] {
		return [
			this._ssh,
			...(this._configFile ? ['-F', this._configFile] : []),
			'-T',
			'-o', 'BatchMode=yes',
			'-o', `ConnectTimeout=${this._connectTimeout}`,
			'-o', 'StrictHostKeyChecking=yes',
			'-o', `ControlMaster=${control}`,
			'-o', `ControlPath=${path.join(this._controlDir, '%C')}`,
			'-o', 'ControlPersist=60',
			// A host whose address is gone (power or network lost: no FIN, no RST) is noticed only by these keep-alives:
			// 3 unanswered 5 s probes end the connection within ~15 s (was 15 s × 3: a torn-down host during a deploy
			// took 62 s to report, test/engine/faultsVanish.test.ts). sshd answers them itself, whatever the command does.
			'-o', 'ServerAliveInterval=5',
			'-o', 'ServerAliveCountMax=3',
			...extra,
			'--', this._dest,
		];
	}

	/** Connect once (a shared master connection); later calls get the cached outcome. */
	connect(): Promise<SshConnectResult> {
		this._connecting ??= this._connectOnce();
		return this._connecting;
	}

	private async _connectOnce(): Promise<SshConnectResult> {
		const started = performance.now();
		const master = this._sshArgv('auto', ['-N', '-f']);
		const failed = (kind: SshFailureKind, error: string, stderr = ''): SshConnectResult =>
			({ ok: false, kind, label: SSH_FAILURE_LABEL[kind], error, stderr, command: master, durationMs: Math.round(performance.now() - started) });
		const dirProblem = privateDir(this._controlDir);
		if (dirProblem) { return failed('local', dirProblem); }
		const check = await execute([...this._sshArgv('no', ['-O', 'check'])], { timeoutMs: 5000 }).result;
		if (check.exitCode === 0) { return { ok: true }; }
		// The master backgrounds itself (-f) after authenticating; its stderr goes to a file, not a pipe, because
		// a persisting master keeps it open (a pipe would never reach EOF).
		const errFile = path.join(this._controlDir, `connect-${process.pid}-${randomBytes(4).toString('hex')}.err`);
		const fd = fs.openSync(errFile, 'w', 0o600);
		try {
			const code = await new Promise<number | null>(resolve => {
				// ControlMaster=auto (not yes): ssh then unlinks a stale socket left by a dead master instead of
				// "disabling multiplexing" and backgrounding a plain connection that nobody would ever close.
				const child = spawn(master[0], master.slice(1),
					{ stdio: ['ignore', 'ignore', fd], detached: true });
				const timer = setTimeout(() => { try { process.kill(-(child.pid ?? 0), 'SIGKILL'); } catch { /* gone */ } resolve(null); },
					(this._connectTimeout + 20) * 1000);
				child.on('error', () => { clearTimeout(timer); resolve(-1); });
				child.on('exit', c => { clearTimeout(timer); resolve(c); });
			});
			const stderr = fs.readFileSync(errFile, 'utf8');
			if (code === 0) { return { ok: true }; }
			if (code === -1) { return failed('no-ssh-client', `cannot start ${this._ssh}: is the OpenSSH client installed?`); }
			if (code === null) { return failed('timeout', `connecting to ${this._dest} did not finish within ${this._connectTimeout + 20} s`, stderr); }
			const c = classifySshFailure(this._dest, stderr, this._connectTimeout);
			return failed(c.kind, c.message, stderr);
		} finally {
			fs.closeSync(fd);
			fs.rmSync(errFile, { force: true });
		}
	}

	/** Stop the shared connection (`ssh -O exit`). */
	async close(): Promise<void> {
		await execute(this._sshArgv('no', ['-O', 'exit']), { timeoutMs: 5000 }).result;
		this._connecting = undefined;
	}

	async run(argv: readonly string[], opts: HostRunOptions): Promise<ExecuteResult> {
		const fail = (error: string, durationMs = 0): ExecuteResult =>
			({ exitCode: null, signal: null, stdout: '', stderr: '', timedOut: false, error, durationMs });
		if (argv.length === 0 || argv[0].length === 0) { return fail('empty command line'); }
		if (argv.some(a => a.includes('\0'))) { return fail('argument contains a NUL byte'); }
		if (opts.signal?.aborted) { return fail('cancelled'); }
		const started = performance.now();
		const conn = await this.connect();
		if (!conn.ok) { return fail(conn.error, Math.round(performance.now() - started)); }

		let prelude = '';
		for (const [k, v] of Object.entries(opts.env ?? {})) {
			if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) { return fail(`invalid environment variable name ${JSON.stringify(k)}`); }
			prelude += `export ${k}=${posixQuote(v)}; `;
		}
		if (opts.cwd !== undefined) { prelude += `cd -- ${posixQuote(opts.cwd)} || exit 96; `; }
		const nonce = randomBytes(8).toString('hex');
		const shell = this._setup.length > 0 ? 'bash -l' : '/bin/sh';
		// The remote login shell runs this line; `; exit $?` keeps setsid a child (not a group leader), so it
		// creates the new session without forking.
		const remote = `S=; command -v setsid >/dev/null 2>&1 && S=setsid; $S ${shell} -c ${posixQuote(runnerScript(prelude))} `
			+ `${nonce} ${posixQuote(this._setup)} ${posixQuoteArgv(argv)}; exit $?`;

		let remotePid: number | null = null;
		let setupStatus: string | null = null;
		let notFound = false;
		const marker = `${MARK}${nonce} `;
		let pidSeen: () => void = () => undefined;
		const pidPromise = new Promise<void>(resolve => { pidSeen = resolve; });
		const abort = new AbortController();
		const exec = execute([...this._sshArgv('no'), remote], {
			timeoutMs: opts.timeoutMs + 30_000, // our own timer below fires first and kills the remote side
			signal: abort.signal,
			maxOutputBytes: opts.maxOutputBytes,
			onLine: (stream, line) => {
				if (stream === 'stderr' && line.startsWith(marker)) {
					const [what, value] = line.slice(marker.length).split(' ');
					if (what === 'pid' && /^\d+$/.test(value ?? '')) { remotePid = Number(value); pidSeen(); }
					if (what === 'setup') { setupStatus = value ?? '?'; }
					if (what === 'notfound') { notFound = true; }
					return;
				}
				opts.onLine?.(stream, line);
			},
		});
		let timedOut = false;
		let cancelled = false;
		let cleanup: string | undefined;
		let stopping: Promise<void> | undefined;
		const stop = async (): Promise<void> => {
			// The command may be starting right now: wait (bounded) for the remote pid so it cannot survive us.
			if (remotePid === null) {
				await Promise.race([pidPromise, exec.result, new Promise(r => setTimeout(r, (this._connectTimeout + 5) * 1000).unref())]);
			}
			cleanup = remotePid !== null ? await this._killRemote(remotePid) : `the remote command had not announced its process id on ${this.ref.label}; only the local ssh client was stopped`;
			setTimeout(() => abort.abort(), 1000).unref();
		};
		const timer = setTimeout(() => { timedOut = true; stopping ??= stop(); }, Math.max(1, opts.timeoutMs));
		const onAbort = (): void => { cancelled = true; stopping ??= stop(); };
		opts.signal?.addEventListener('abort', onAbort, { once: true });
		const r = await exec.result;
		clearTimeout(timer);
		opts.signal?.removeEventListener('abort', onAbort);
		// The result waits for the stop and its check, so "nothing left" is known when the caller sees it.
		if (stopping) { await stopping; }
		// ssh ends with 255 when its connection dies (a dropped link, a killed sshd): the remote command's session
		// may still run there (mpirun's ranks outlive it: seen 1 run in 5 in faultsSsh.test.ts). Reconnect and stop
		// it; an empty session means the command itself ended with 255, and the result is left as it is.
		let lost = false;
		// A 255 may be a dead connection (a crashed or rebooted host): forget the cached "connected", so the next
		// connect() checks the master again and a host that is gone is reported unreachable, not run against.
		if (r.exitCode === 255) { this._connecting = undefined; }
		if (!stopping && r.exitCode === 255 && remotePid !== null) {
			cleanup = await this._killRemote(remotePid);
			lost = !/SIGTERM to 0 process\(es\)/.test(cleanup);
		}

		const stderr = r.stderr.split('\n').filter(l => !l.startsWith(marker)).join('\n');
		const base: ExecuteResult = { ...r, stderr, durationMs: Math.round(performance.now() - started), ...(cleanup !== undefined ? { cleanup } : {}) };
		if (timedOut) { return { ...base, exitCode: null, timedOut: true, error: `timed out after ${formatSeconds(opts.timeoutMs)}` }; }
		if (cancelled) { return { ...base, exitCode: null, error: 'cancelled' }; }
		if (lost) {
			const after = cleanup?.startsWith('could not confirm') ? `could not reconnect to check what it left there: ${cleanup.replace(/^could not confirm that remote session \d+ on \S+ ended: /, '')}` : `reconnected and ${cleanup}`;
			return { ...base, exitCode: null, error: `the ssh connection to ${this.ref.label} ended while the command ran (ssh exit status 255); ${after}` };
		}
		if (remotePid === null && r.exitCode === 255) {
			return { ...base, exitCode: null, error: classifySshError(this._dest, stderr, this._connectTimeout) };
		}
		if (setupStatus !== null) {
			const lines = stderr.split('\n').filter(l => l.trim()).slice(-10).join('\n');
			return { ...base, exitCode: null, error: `the setup line for ${this.ref.label} failed (exit status ${setupStatus}): ${lines || '(no output)'}` };
		}
		if (notFound) { return { ...base, exitCode: null, error: argv[0].includes('/') ? 'not found' : 'not found on PATH' }; }
		if (remotePid === null && r.exitCode !== null && r.error === undefined) {
			return { ...base, exitCode: null, error: `the remote shell of ${this.ref.label} did not start the command (exit status ${r.exitCode}); is the login shell a POSIX shell? ${stderr.trim().slice(-300)}` };
		}
		return base;
	}

	/**
	 * Run argv remotely with `input` on its stdin (e.g. `tar -x -C dir` fed a tar stream). No setup line and no
	 * process-group bookkeeping: the remote program ends when its stdin closes, which killing ssh causes (on timeout or
	 * on `signal`: a Ctrl-C during a deploy's copy).
	 */
	async runWithInput(argv: readonly string[], input: Buffer, timeoutMs: number, signal?: AbortSignal): Promise<ExecuteResult> {
		const started = performance.now();
		const fail = (error: string): ExecuteResult =>
			({ exitCode: null, signal: null, stdout: '', stderr: '', timedOut: false, error, durationMs: Math.round(performance.now() - started) });
		if (argv.length === 0 || argv.some(a => a.includes('\0'))) { return fail('empty command line or NUL byte'); }
		if (signal?.aborted) { return fail('cancelled'); }
		const conn = await this.connect();
		if (!conn.ok) { return fail(conn.error); }
		const full = [...this._sshArgv('no'), `exec ${posixQuoteArgv(argv)}`];
		return new Promise<ExecuteResult>(resolve => {
			const child = spawn(full[0], full.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
			let stdout = '';
			let stderr = '';
			let timedOut = false;
			child.stdout.on('data', (c: Buffer) => { if (stdout.length < 1 << 20) { stdout += c.toString('utf8'); } });
			child.stderr.on('data', (c: Buffer) => { if (stderr.length < 1 << 20) { stderr += c.toString('utf8'); } });
			child.stdin.on('error', () => undefined); // EPIPE when the remote side quits early: the exit status tells
			const timer = setTimeout(() => { timedOut = true; try { process.kill(-(child.pid ?? 0), 'SIGKILL'); } catch { /* gone */ } }, timeoutMs);
			let cancelled = false;
			const onAbort = (): void => { cancelled = true; try { process.kill(-(child.pid ?? 0), 'SIGKILL'); } catch { /* gone */ } };
			signal?.addEventListener('abort', onAbort, { once: true });
			child.on('error', e => { clearTimeout(timer); signal?.removeEventListener('abort', onAbort); resolve(fail(`cannot start ${this._ssh}: ${e.message}`)); });
			child.on('close', (code, sig) => {
				clearTimeout(timer);
				signal?.removeEventListener('abort', onAbort);
				const base = { stdout, stderr, durationMs: Math.round(performance.now() - started), signal: sig ?? null, timedOut };
				if (cancelled) { resolve({ ...base, exitCode: null, error: 'cancelled' }); return; }
				if (timedOut) { resolve({ ...base, exitCode: null, error: `timed out after ${formatSeconds(timeoutMs)}` }); return; }
				if (code === 255) { this._connecting = undefined; resolve({ ...base, exitCode: null, error: classifySshError(this._dest, stderr, this._connectTimeout) }); return; }
				resolve({ ...base, exitCode: code });
			});
			child.stdin.end(input);
		});
	}

	/**
	 * End the remote session the command leads (over the shared connection), then check it: SIGTERM to every process of
	 * the session — mpirun gives its ranks and its `ssh … orted` children process groups of their own, so the group
	 * alone is not enough (an `ssh host-b orted` survived that in CI) —, up to 5 s for them to go, SIGKILL to the rest,
	 * and a last look. Without pgrep/pkill (procps) it falls back to the process group. Returns what it did and found.
	 */
	private async _killRemote(pid: number): Promise<string> {
		const script = [
			's=$1',
			'if command -v pkill >/dev/null 2>&1 && command -v pgrep >/dev/null 2>&1; then',
			'  n=$(pgrep -s "$s" | wc -l); pkill -TERM -s "$s"; kill -TERM -- "-$s" 2>/dev/null',
			'  i=0; while [ "$i" -lt 20 ] && pgrep -s "$s" >/dev/null; do sleep 0.25; i=$((i+1)); done',
			'  k=$(pgrep -s "$s" | wc -l); [ "$k" -gt 0 ] && { pkill -KILL -s "$s"; sleep 0.3; }',
			'  left=$(pgrep -a -s "$s" | head -n 5 | cut -c1-100 | tr "\n" ";")',
			'  echo "ENDED n=$n waited_ms=$((i*250)) killed=$k left=$left"',
			'else',
			'  kill -TERM -- "-$s" 2>/dev/null || kill -TERM "$s" 2>/dev/null; sleep 1; kill -KILL -- "-$s" 2>/dev/null || kill -KILL "$s" 2>/dev/null',
			'  echo "ENDED-GROUP (no pgrep/pkill on this host: only the process group was stopped, the session could not be checked)"',
			'fi',
		].join('\n');
		const r = await execute([...this._sshArgv('no'), `sh -c ${posixQuote(script)} sh ${pid}`], { timeoutMs: (this._connectTimeout + 15) * 1000 }).result;
		const line = r.stdout.split('\n').find(l => l.startsWith('ENDED')) ?? '';
		const m = /^ENDED n=\s*(\d+) waited_ms=(\d+) killed=\s*(\d+) left=(.*)$/.exec(line);
		if (m) {
			const left = m[4].split(';').filter(x => x.trim().length > 0);
			return `stopped remote session ${pid} on ${this.ref.label}: SIGTERM to ${m[1]} process(es)`
				+ (Number(m[3]) > 0 ? `, SIGKILL to ${m[3]} still running after ${Number(m[2]) / 1000} s` : ` (gone within ${Number(m[2]) / 1000} s)`)
				+ (left.length === 0 ? '; afterwards none of it is left' : `; STILL RUNNING afterwards: ${left.join('; ')}`);
		}
		if (line.startsWith('ENDED-GROUP')) { return `stopped remote process group ${pid} on ${this.ref.label} ${line.slice('ENDED-GROUP '.length)}`; }
		return `could not confirm that remote session ${pid} on ${this.ref.label} ended: ${r.error ?? (r.stderr.trim().slice(-200) || `exit ${String(r.exitCode)}`)}`;
	}

	/** Run a small POSIX sh script remotely with `args` as $1…; quick helpers below share it. */
	private _sh(script: string, args: string[], timeoutMs = 30_000, maxOutputBytes?: number): Promise<ExecuteResult> {
		return this.run(['sh', '-c', script, 'sh', ...args], { timeoutMs, maxOutputBytes });
	}

	private _loadFacts(): Promise<{ identity: HostIdentity; cpus: number; env: Record<string, string> } | null> {
		this._facts ??= (async () => {
			const r = await this._sh('id -u; id -un; uname -n; nproc 2>/dev/null || getconf _NPROCESSORS_ONLN; env -0 2>/dev/null || env', []);
			if (r.exitCode !== 0) { return null; }
			const [uid, user, hostname, cpus, ...rest] = r.stdout.split('\n');
			const envText = rest.join('\n');
			const env: Record<string, string> = {};
			const entries = envText.includes('\0') ? envText.split('\0') : envText.split('\n');
			for (const e of entries) {
				const eq = e.indexOf('=');
				if (eq > 0) { env[e.slice(0, eq)] = e.slice(eq + 1); }
			}
			return {
				identity: { uid: /^\d+$/.test(uid) ? Number(uid) : -1, user: user ?? '', hostname: hostname ?? '' },
				cpus: /^\d+$/.test(cpus ?? '') ? Math.max(1, Number(cpus)) : 1,
				env,
			};
		})();
		return this._facts;
	}

	async env(): Promise<Record<string, string>> {
		return { ...((await this._loadFacts())?.env ?? {}) };
	}

	async identity(): Promise<HostIdentity> {
		return (await this._loadFacts())?.identity ?? { uid: -1, user: '', hostname: this._dest };
	}

	async cpuCount(): Promise<number> {
		return (await this._loadFacts())?.cpus ?? 1;
	}

	async which(name: string): Promise<string | null> {
		if (name.length === 0 || name.includes('/') || name.includes('\0')) { return null; }
		const r = await this._sh('command -v -- "$1"', [name]);
		const found = r.stdout.trim();
		return r.exitCode === 0 && found.startsWith('/') && !found.includes('\n') ? found : null;
	}

	async realpath(p: string): Promise<string> {
		const r = await this._sh('readlink -f -- "$1"', [p]);
		const out = r.stdout.replace(/\n$/, '');
		return r.exitCode === 0 && out.startsWith('/') ? out : p;
	}

	async listDir(p: string): Promise<string[] | null> {
		const r = await this._sh('cd -- "$1" 2>/dev/null || exit 44; for f in * .[!.]* ..?*; do { [ -e "$f" ] || [ -L "$f" ]; } && printf "%s\\0" "$f"; done; exit 0', [p]);
		if (r.exitCode !== 0) { return null; }
		return r.stdout.split('\0').filter(n => n.length > 0);
	}

	async readFile(p: string, maxBytes = DEFAULT_READ_CAP): Promise<ReadFileResult> {
		const cap = Math.max(1, Math.floor(maxBytes));
		const r = await this._sh('[ -e "$1" ] || exit 44; [ -f "$1" ] || exit 45; [ -r "$1" ] || exit 46; head -c "$2" -- "$1"',
			[p, String(cap + 1)], 60_000, cap * 2 + 1024);
		if (r.exitCode === 44) { return { ok: false, error: 'no such file', notFound: true }; }
		if (r.exitCode === 45) { return { ok: false, error: 'not a regular file', notFound: false }; }
		if (r.exitCode === 46) { return { ok: false, error: 'permission denied', notFound: false }; }
		if (r.exitCode !== 0) { return { ok: false, error: r.error ?? `reading failed: ${r.stderr.trim().slice(-300)}`, notFound: false }; }
		const buf = Buffer.from(r.stdout, 'utf8');
		const truncated = buf.length > cap;
		return { ok: true, text: truncated ? buf.subarray(0, cap).toString('utf8') : r.stdout, truncated };
	}
}
