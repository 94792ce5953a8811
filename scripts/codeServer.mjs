// Real VS Code for tests, offline: code-server from the npm registry, installed in its own folder
// (.test-work/code-server, gitignored; deliberately not a devDependency: it is ~500 MB and only the UI suite needs it).
//
// Why the ripgrep cache: code-server's postinstall runs `npm install` in lib/vscode, which installs
// @vscode/ripgrep, whose own postinstall downloads a prebuilt `rg` from GitHub (no GitHub in CI). That
// postinstall first looks for `${os.tmpdir()}/vscode-ripgrep-cache-${pkgVersion}/ripgrep-${VERSION}-${target}.tar.gz`
// (lib/download.js: tmpDir + getAssetFromGithubApi "Using cached download") and, when present, only untars it.
// We pre-fill exactly that file from the system's ripgrep (Debian `ripgrep`, /usr/bin/rg), with TMPDIR pointing
// into .test-work so nothing else is touched. No shell is used anywhere: every program is spawned with argv.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const WORK = path.join(ROOT, '.test-work');
/** Newest code-server whose server runs on Node 20 (4.101+ need Node 22). */
export const CODE_SERVER_VERSION = '4.100.3';
// Pinned by code-server 4.100.3's lib/vscode/npm-shrinkwrap.json (@vscode/ripgrep 1.15.11) and by that
// package's lib/postinstall.js (VERSION = 'v13.0.0-10', linux x64 target x86_64-unknown-linux-musl).
const RIPGREP_PKG_VERSION = '1.15.11';
const RIPGREP_ASSET = 'ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz';

const PREFIX = path.join(WORK, 'code-server');
const ENTRY = path.join(PREFIX, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
const MARKER = path.join(PREFIX, `.installed-${CODE_SERVER_VERSION}`);

/** Run a program (argv, no shell), inherit or capture output; resolves with the exit code. */
export function runProgram(cmd, args, { cwd = ROOT, env = process.env, log = console.log, quiet = false } = {}) {
	return new Promise((resolve) => {
		const child = spawn(cmd, args, { cwd, env, stdio: quiet ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'inherit', 'inherit'] });
		let tail = '';
		const keep = (d) => { tail = (tail + d.toString()).slice(-8000); };
		child.stdout?.on('data', keep);
		child.stderr?.on('data', keep);
		child.on('error', (e) => { log(`cannot start ${cmd}: ${e.message}`); resolve({ code: 127, tail: e.message }); });
		child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), tail }));
	});
}

/** Absolute path of a program on PATH, or null. */
export function which(name) {
	for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
		if (!dir) { continue; }
		const p = path.join(dir, name);
		try { fs.accessSync(p, fs.constants.X_OK); return p; } catch { /* next */ }
	}
	return null;
}

function ripgrepBinary() {
	if (process.env.GPUMPI_RG && fs.existsSync(process.env.GPUMPI_RG)) { return process.env.GPUMPI_RG; }
	return which('rg');
}

/** Put the system rg where @vscode/ripgrep's postinstall looks for a cached download. */
async function prefillRipgrepCache(tmpDir, log) {
	const rg = ripgrepBinary();
	if (!rg) {
		throw new Error('ripgrep (rg) not found: code-server\'s install would try to download it from GitHub. Install it: apt-get install -y ripgrep');
	}
	const cacheDir = path.join(tmpDir, `vscode-ripgrep-cache-${RIPGREP_PKG_VERSION}`);
	const asset = path.join(cacheDir, RIPGREP_ASSET);
	if (fs.existsSync(asset)) { return; }
	fs.mkdirSync(cacheDir, { recursive: true });
	const stage = fs.mkdtempSync(path.join(tmpDir, 'rg-stage-'));
	fs.copyFileSync(rg, path.join(stage, 'rg'));
	fs.chmodSync(path.join(stage, 'rg'), 0o755);
	const r = await runProgram('tar', ['czf', asset, '-C', stage, 'rg'], { log, quiet: true });
	fs.rmSync(stage, { recursive: true, force: true });
	if (r.code !== 0) { throw new Error(`tar failed while pre-filling the ripgrep cache: ${r.tail}`); }
	log(`[code-server] ripgrep cache pre-filled from ${rg}`);
}

/** True when code-server is installed and usable. */
export function codeServerInstalled() {
	return fs.existsSync(MARKER) && fs.existsSync(ENTRY);
}

/**
 * Install code-server into .test-work/code-server when missing. Idempotent; returns the entry script.
 * Throws with the Debian packages to install when a prerequisite is missing.
 */
export async function ensureCodeServer({ log = console.log } = {}) {
	if (codeServerInstalled()) { return ENTRY; }
	const major = Number(process.versions.node.split('.')[0]);
	if (major !== 20) {
		throw new Error(`code-server ${CODE_SERVER_VERSION} needs Node 20 (this is ${process.version})`);
	}
	const missing = [];
	for (const [pkg, probe] of [['libkrb5-dev', '/usr/include/gssapi/gssapi.h'], ['libxkbfile-dev', '/usr/include/X11/extensions/XKBfile.h'], ['libsecret-1-dev', '/usr/include/libsecret-1']]) {
		if (!fs.existsSync(probe)) { missing.push(pkg); }
	}
	if (!which('g++') && !which('c++')) { missing.push('build-essential'); }
	if (!ripgrepBinary()) { missing.push('ripgrep'); }
	if (missing.length > 0) {
		throw new Error(`code-server's native modules need system packages: apt-get install -y ${missing.join(' ')}`);
	}
	const tmpDir = path.join(WORK, 'tmp');
	fs.mkdirSync(tmpDir, { recursive: true });
	await prefillRipgrepCache(tmpDir, log);
	fs.mkdirSync(PREFIX, { recursive: true });
	const t0 = Date.now();
	log(`[code-server] installing code-server@${CODE_SERVER_VERSION} into ${path.relative(ROOT, PREFIX)} (one time, a few minutes)`);
	const env = {
		...process.env,
		TMPDIR: tmpDir,
		npm_config_unsafe_perm: 'true', // read by code-server's postinstall.sh when running as root
		npm_config_yes: 'true',
		npm_config_audit: 'false',
		npm_config_fund: 'false',
		npm_config_update_notifier: 'false',
	};
	const r = await runProgram('npm', ['install', '--prefix', PREFIX, '--no-save', `code-server@${CODE_SERVER_VERSION}`], { env, log });
	if (r.code !== 0) {
		throw new Error(`npm install code-server@${CODE_SERVER_VERSION} failed (exit ${r.code}); see the output above`);
	}
	const rg = path.join(PREFIX, 'node_modules', 'code-server', 'lib', 'vscode', 'node_modules', '@vscode', 'ripgrep', 'bin', 'rg');
	if (!fs.existsSync(ENTRY) || !fs.existsSync(rg)) {
		throw new Error(`code-server install incomplete: ${fs.existsSync(ENTRY) ? rg : ENTRY} missing`);
	}
	fs.writeFileSync(MARKER, JSON.stringify({ version: CODE_SERVER_VERSION, installSeconds: (Date.now() - t0) / 1000, at: new Date().toISOString() }) + '\n');
	log(`[code-server] installed in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
	return ENTRY;
}

// Process groups of the code-servers this process started: killed when this process exits for any reason
// (normal exit, an uncaught error, SIGINT/SIGTERM from a caller's time limit), so none is left behind.
const liveGroups = new Set();
let exitHooked = false;
function hookExit() {
	if (exitHooked) { return; }
	exitHooked = true;
	process.on('exit', () => { for (const pid of liveGroups) { try { process.kill(-pid, 'SIGKILL'); } catch { /* gone */ } } });
	for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
		process.once(sig, () => { console.error(`[code-server] ${sig}: stopping`); process.exit(130); });
	}
}

/** A free TCP port on 127.0.0.1. */
export function freePort() {
	return new Promise((resolve, reject) => {
		const srv = net.createServer();
		srv.unref();
		srv.on('error', reject);
		srv.listen(0, '127.0.0.1', () => {
			const { port } = srv.address();
			srv.close(() => resolve(port));
		});
	});
}

function httpOk(url) {
	return new Promise((resolve) => {
		const req = http.get(url, { timeout: 2000 }, (res) => { res.resume(); resolve(res.statusCode !== undefined && res.statusCode < 500); });
		req.on('error', () => resolve(false));
		req.on('timeout', () => { req.destroy(); resolve(false); });
	});
}

/** Write user settings so the window opens quietly: no trust prompt, no welcome page, no telemetry. */
function writeUserSettings(userDataDir) {
	const dir = path.join(userDataDir, 'User');
	fs.mkdirSync(dir, { recursive: true });
	fs.writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({
		'security.workspace.trust.enabled': false,
		'workbench.startupEditor': 'none',
		'workbench.tips.enabled': false,
		'workbench.enableExperiments': false,
		'telemetry.telemetryLevel': 'off',
		'extensions.autoCheckUpdates': false,
		'extensions.autoUpdate': false,
		'update.mode': 'none',
		'window.dialogStyle': 'custom',
		'chat.disableAIFeatures': true,
		'git.openRepositoryInParentFolders': 'never',
		'extensions.ignoreRecommendations': true,
	}, null, 2));
}

/**
 * Start code-server (auth none, 127.0.0.1, free port) in its own process group with its own user-data and
 * extensions dirs under .test-work. `env` is added to the server's environment, which the extension host inherits.
 * `vsix`: a .vsix installed first into those fresh dirs with `code-server --install-extension` (as a user would).
 * Returns { url, port, authority, extensionsDir, userDataDir, pid (its process group), stop() }; stop() ends the whole
 * process group.
 */
export async function startCodeServer({ env = {}, log = console.log, name = 'run', timeoutMs = 90_000, vsix = null } = {}) {
	const entry = await ensureCodeServer({ log });
	const port = await freePort();
	const base = path.join(WORK, 'sessions', `${name}-${process.pid}-${port}`);
	const userDataDir = path.join(base, 'user-data');
	const extensionsDir = path.join(base, 'extensions');
	fs.mkdirSync(extensionsDir, { recursive: true });
	writeUserSettings(userDataDir);
	// Its own config file: code-server otherwise creates ~/.config/code-server/config.yaml.
	const configFile = path.join(base, 'config.yaml');
	fs.writeFileSync(configFile, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
	if (vsix) {
		const r = await runProgram(process.execPath, [entry, '--config', configFile, '--user-data-dir', userDataDir, '--extensions-dir', extensionsDir,
			'--install-extension', vsix], { log, quiet: true });
		if (r.code !== 0) { throw new Error(`code-server --install-extension ${vsix} failed (exit ${r.code}): ${r.tail}`); }
		log(`[code-server] installed ${path.basename(vsix)} into ${path.relative(ROOT, extensionsDir)}`);
	}
	const logFile = path.join(base, 'code-server.log');
	const out = fs.openSync(logFile, 'w');
	const args = [
		entry,
		'--config', configFile,
		'--auth', 'none',
		'--bind-addr', `127.0.0.1:${port}`,
		'--disable-telemetry',
		'--disable-update-check',
		'--disable-workspace-trust',
		'--disable-getting-started-override',
		'--user-data-dir', userDataDir,
		'--extensions-dir', extensionsDir,
	];
	const child = spawn(process.execPath, args, {
		cwd: ROOT,
		env: { ...process.env, ...env },
		stdio: ['ignore', out, out],
		detached: true, // own process group, so stop() reaches the extension hosts and helpers too
	});
	fs.closeSync(out);
	hookExit();
	liveGroups.add(child.pid);
	let exited = false;
	child.on('exit', () => { exited = true; });
	const stop = async () => {
		if (!exited) { try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ } }
		const t = Date.now();
		while (!exited && Date.now() - t < 5000) { await new Promise((r) => setTimeout(r, 100)); }
		try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
		liveGroups.delete(child.pid);
		cleanup();
	};
	const cleanup = () => {
		if (process.env.GPUMPI_KEEP_SESSION !== '1') { fs.rmSync(base, { recursive: true, force: true }); }
	};
	const url = `http://127.0.0.1:${port}`;
	const t0 = Date.now();
	while (!(await httpOk(`${url}/healthz`))) {
		if (exited || Date.now() - t0 > timeoutMs) {
			const text = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').slice(-4000) : '';
			await stop();
			throw new Error(`code-server did not come up on ${url} within ${timeoutMs / 1000} s${exited ? ' (it exited)' : ''}:\n${text}`);
		}
		await new Promise((r) => setTimeout(r, 250));
	}
	log(`[code-server] ${CODE_SERVER_VERSION} up at ${url} in ${Date.now() - t0} ms (log: ${path.relative(ROOT, logFile)})`);
	return { url, port, authority: `127.0.0.1:${port}`, logFile, extensionsDir, userDataDir, pid: child.pid, stop };
}

// `node scripts/codeServer.mjs install` installs it ahead of time (CI warm-up, or to time the install).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	if (process.argv[2] === 'install') {
		ensureCodeServer().then((entry) => console.log(entry), (e) => { console.error(e.message); process.exit(1); });
	} else {
		console.error('usage: node scripts/codeServer.mjs install');
		process.exit(2);
	}
}
