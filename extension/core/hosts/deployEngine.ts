/**
 * Deploy the engine to an ssh host: copy the native CMake project (native/ without build folders) as a tar stream
 * over ssh into the host's cache `~/.cache/gpumpi-doctor/<fingerprint>/`, build the `gpumpi` CLI (target gpumpi_cli) there with the host's own
 * cmake and mpicc (after its setup line), and reuse that build while the fingerprint matches. The fingerprint is the
 * sha256 of the native sources plus the host's `mpicc -show` / `mpicc --version` output, cmake location and whether
 * a CUDA driver is present, so a new MPI module, compiler or driver gives a fresh build.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { SshHost } from './sshHost';

/** Options for `deployEngine`. */
export interface DeployOptions {
	/** Local native/ folder (the CMake project). */
	nativeDir: string;
	/** mpicc on the host; default `mpicc` on its PATH (after the setup line). */
	mpicc?: string;
	/** Cache root on the host; default `$HOME/.cache/gpumpi-doctor`. */
	cacheRoot?: string;
	/** Limit for each remote step (configure, build); default 600 s. */
	timeoutMs?: number;
	/** Cancels the deploy: the running remote step's process group is killed (cmake, make, compilers). */
	signal?: AbortSignal;
	onProgress?(message: string): void;
}

/** Outcome of `deployEngine`. */
export type DeployResult =
	| { ok: true; enginePath: string; reused: boolean; fingerprint: string; dir: string }
	/** `lines`: the compiler's / cmake's own error lines (at most 30), for the report. */
	| { ok: false; error: string; lines: string[] };

const TOOLCHAIN_SCRIPT = 'command -v -- "$1" >/dev/null 2>&1 || { echo "gpumpi-missing $1"; exit 3; }; '
	+ 'command -v cmake >/dev/null 2>&1 || { echo "gpumpi-missing cmake"; exit 3; }; '
	+ 'echo "== path"; command -v -- "$1"; echo "== show"; "$1" -show 2>&1; echo "== version"; "$1" --version 2>&1; echo "== cmake"; command -v cmake; cmake --version 2>&1 | head -1; '
	+ 'echo "== cuda"; for d in /usr/lib64 /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib; do [ -e "$d/libcuda.so.1" ] && echo "$d/libcuda.so.1"; done; exit 0';

/** Files of the native project (relative, sorted), without build folders. */
export function nativeSourceFiles(nativeDir: string): string[] {
	const out: string[] = [];
	const walk = (rel: string): void => {
		for (const e of fs.readdirSync(path.join(nativeDir, rel), { withFileTypes: true })) {
			const r = rel ? `${rel}/${e.name}` : e.name;
			if (e.isDirectory()) {
				if (/^build/.test(e.name) || e.name === 'node_modules' || e.name.startsWith('.')) { continue; }
				walk(r);
			} else if (e.isFile()) { out.push(r); }
		}
	};
	walk('');
	return out.sort();
}

/** sha256 over the native sources and the host's toolchain description. */
export function engineFingerprint(nativeDir: string, files: readonly string[], toolchain: string): string {
	const h = createHash('sha256');
	for (const f of files) {
		h.update(`${f}\0`);
		h.update(fs.readFileSync(path.join(nativeDir, f)));
		h.update('\0');
	}
	h.update(toolchain);
	return h.digest('hex').slice(0, 32);
}

function tarOf(nativeDir: string, files: readonly string[]): Promise<Buffer> {
	return new Promise((resolve, reject) => {
		execFile('tar', ['-c', '-f', '-', '-C', nativeDir, '--', ...files], { encoding: 'buffer', maxBuffer: 256 << 20, timeout: 60_000 },
			(err, stdout, stderr) => { if (err) { reject(new Error(`tar failed: ${err.message} ${stderr.toString().slice(-300)}`)); } else { resolve(stdout); } });
	});
}

/** Lines worth showing from a failed configure/build (compiler errors first). */
export function errorLines(output: string): string[] {
	const lines = output.split('\n').map(l => l.trimEnd()).filter(l => l.length > 0);
	const errors = lines.filter(l => /\berror\b|Error|undefined reference|fatal/.test(l));
	return (errors.length > 0 ? errors : lines.slice(-15)).slice(0, 30);
}

/** The cache key of an engine build on `host`: native sources + that host's mpicc/cmake/CUDA driver. */
export async function remoteFingerprint(host: SshHost, nativeDir: string, mpicc = 'mpicc'):
	Promise<{ ok: true; fingerprint: string; files: string[]; mpiccPath: string } | { ok: false; error: string; lines: string[] }> {
	const tc = await host.run(['sh', '-c', TOOLCHAIN_SCRIPT, 'sh', mpicc], { timeoutMs: 60_000 });
	const missing = /gpumpi-missing (.+)/.exec(tc.stdout);
	if (missing) { return { ok: false, error: `${missing[1]} not found on ${host.ref.label} (after its setup line): the engine is built there with cmake and mpicc`, lines: [] }; }
	if (tc.exitCode !== 0) { return { ok: false, error: `cannot describe the toolchain of ${host.ref.label}: ${tc.error ?? tc.stderr.trim().slice(-300)}`, lines: [] }; }
	const mpiccPath = /== path\n(\/[^\n]*)\n/.exec(tc.stdout)?.[1] ?? mpicc;
	let files: string[];
	try { files = nativeSourceFiles(nativeDir); } catch (e) { return { ok: false, error: `cannot read ${nativeDir}: ${(e as Error).message}`, lines: [] }; }
	if (!files.includes('CMakeLists.txt')) { return { ok: false, error: `${nativeDir} has no CMakeLists.txt`, lines: [] }; }
	return { ok: true, fingerprint: engineFingerprint(nativeDir, files, tc.stdout), files, mpiccPath };
}

/** The ssh connection itself failed (the host went away: crashed, rebooted, network), not the remote step. */
function connectionLost(error: string | undefined): boolean {
	return error !== undefined && /ssh connection to .* ended|Connection (refused|closed|reset|timed out)|connect to host|No route to host|Broken pipe/i.test(error);
}

/** Deploy (or reuse) the engine on `host`. Never rejects for remote failures. */
export async function deployEngine(host: SshHost, opts: DeployOptions): Promise<DeployResult> {
	const progress = (m: string): void => { try { opts.onProgress?.(m); } catch { /* ignore */ } };
	const timeoutMs = opts.timeoutMs ?? 600_000;
	const signal = opts.signal;
	const cancelled = (): DeployResult => ({ ok: false, error: `deploying the engine to ${host.ref.label} was cancelled`, lines: [] });
	// A half-done step is never marked built (built.ok is written last), so the next deploy starts that build again.
	const lost = (step: string, error: string | undefined): DeployResult =>
		({ ok: false, error: `lost the connection to ${host.ref.label} during the engine deploy (${step}): ${error}; nothing was marked built there, the next run deploys again`, lines: [] });
	if (signal?.aborted) { return cancelled(); }
	const fp = await remoteFingerprint(host, opts.nativeDir, opts.mpicc && opts.mpicc.length > 0 ? opts.mpicc : 'mpicc');
	if (signal?.aborted) { return cancelled(); }
	if (!fp.ok) { return connectionLost(fp.error) ? lost('describing the toolchain', fp.error) : fp; }
	const { fingerprint, files, mpiccPath } = fp;
	let root = opts.cacheRoot;
	if (!root) {
		const home = (await host.env()).HOME;
		if (!home || !home.startsWith('/')) { return { ok: false, error: `HOME is not set on ${host.ref.label}; cannot place the engine cache`, lines: [] }; }
		root = path.posix.join(home, '.cache', 'gpumpi-doctor');
	}
	const dir = path.posix.join(root, fingerprint);
	const enginePath = path.posix.join(dir, 'build', 'gpumpi');
	const marker = path.posix.join(dir, 'built.ok');
	const done = await host.run(['sh', '-c', '[ -f "$1" ] && [ -x "$2" ]', 'sh', marker, enginePath], { timeoutMs: 60_000 });
	if (done.exitCode === 0) { return { ok: true, enginePath, reused: true, fingerprint, dir }; }

	progress(`Copying the engine sources to ${host.ref.label}:${dir}`);
	const prep = await host.run(['sh', '-c', 'rm -rf -- "$1/src" "$1/build" && mkdir -p -- "$1/src"', 'sh', dir], { timeoutMs: 60_000 });
	if (prep.exitCode !== 0 && connectionLost(prep.error)) { return lost('preparing the cache directory', prep.error); }
	if (prep.exitCode !== 0) { return { ok: false, error: `cannot create ${dir} on ${host.ref.label}: ${prep.error ?? prep.stderr.trim()}`, lines: [] }; }
	let tar: Buffer;
	try { tar = await tarOf(opts.nativeDir, files); } catch (e) { return { ok: false, error: (e as Error).message, lines: [] }; }
	// -m: the files get the host's own time, not ours. With our times, a host whose clock is behind sees sources from
	// its future and make never settles ("Clock skew detected", everything rebuilt on every build: faultsClock.test.ts).
	const up = await host.runWithInput(['tar', '-x', '-m', '-f', '-', '-C', path.posix.join(dir, 'src')], tar, 120_000, signal);
	if (signal?.aborted) { return cancelled(); }
	if (up.exitCode !== 0 && connectionLost(up.error ?? up.stderr)) { return lost('copying the sources', up.error ?? up.stderr.trim().slice(-300)); }
	if (up.exitCode !== 0) { return { ok: false, error: `copying the sources to ${host.ref.label} failed: ${up.error ?? up.stderr.trim().slice(-300)}`, lines: [] }; }

	progress(`Configuring the engine on ${host.ref.label}`);
	const src = path.posix.join(dir, 'src');
	const build = path.posix.join(dir, 'build');
	const conf = await host.run(['cmake', '-S', src, '-B', build, '-DCMAKE_BUILD_TYPE=Release', `-DMPI_C_COMPILER=${mpiccPath}`], { timeoutMs, signal });
	if (signal?.aborted) { return cancelled(); }
	if (conf.exitCode !== 0 && connectionLost(conf.error)) { return lost('configuring with cmake', conf.error); }
	if (conf.exitCode !== 0) {
		return { ok: false, error: `configuring the engine on ${host.ref.label} failed (cmake ${conf.error ?? `exit status ${conf.exitCode}`})`, lines: errorLines(`${conf.stdout}\n${conf.stderr}`) };
	}
	progress(`Building the engine on ${host.ref.label}`);
	const make = await host.run(['cmake', '--build', build, '--target', 'gpumpi_cli', '-j', '2'], { timeoutMs, signal });
	if (signal?.aborted) { return cancelled(); }
	if (make.exitCode !== 0 && connectionLost(make.error)) { return lost('building', make.error); }
	if (make.exitCode !== 0) {
		return { ok: false, error: `building the engine on ${host.ref.label} failed (${make.error ?? `exit status ${make.exitCode}`})`, lines: errorLines(`${make.stdout}\n${make.stderr}`) };
	}
	// The engine's bytes on disk before the marker that says they are complete (a real power cut loses page cache).
	const mark = await host.run(['sh', '-c', 'sync -- "$2" 2>/dev/null; : > "$1" || exit 1; sync -- "$1" 2>/dev/null; exit 0', 'sh', marker, enginePath], { timeoutMs: 60_000 });
	if (mark.exitCode !== 0 && connectionLost(mark.error)) { return lost('marking the build complete', mark.error); }
	if (mark.exitCode !== 0) { return { ok: false, error: `cannot write ${marker} on ${host.ref.label}`, lines: [] }; }
	return { ok: true, enginePath, reused: false, fingerprint, dir };
}
