#!/usr/bin/env node
// Idempotent bootstrap, run first by `npm run inspect`, `npm test` and `npm run bench` on any machine of CI's kind:
//   1. node_modules missing or not matching package-lock.json  → `npm ci` (`npm install` when there is no lock)
//   2. `node scripts/build.mjs` (always: esbuild is fast and incremental builds are not worth the risk)
//   3. native parts (scripts/buildNative.mjs) when an output is missing or a native source is newer:
//      the addon + the default engine (only when there is an mpicc: without MPI the addon alone, and the inspection
//      reports "No MPI found"); also the per-MPI engines with --all-mpis or GPUMPI_ALL_MPIS=1.
// A missing system prerequisite stops with the Debian packages to install. No shell anywhere: argv arrays only.
// Everything it and its children print goes to stderr: stdout belongs to the command that runs after it.
// Usage: node scripts/ensure.mjs [--all-mpis]   (exit 0 ready, 1 failed, 2 missing prerequisite)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const NATIVE = path.join(ROOT, 'native');
const NATIVE_BUILD = path.join(NATIVE, 'build');

/** A system prerequisite is missing; `message` names the Debian packages. */
export class PrerequisiteError extends Error {}

function which(name) {
	for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
		if (!dir) { continue; }
		const p = path.join(dir, name);
		try { fs.accessSync(p, fs.constants.X_OK); return p; } catch { /* next */ }
	}
	return null;
}

function run(cmd, args, log) {
	log(`$ ${[cmd, ...args].join(' ')}`);
	return new Promise((resolve, reject) => {
		const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 2, 2], env: process.env });
		child.on('error', (e) => reject(new Error(`cannot run ${cmd}: ${e.message}`)));
		child.on('close', (code, signal) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} failed (${signal ? `signal ${signal}` : `exit ${code}`})`))));
	});
}

/** Why node_modules must be (re)installed, or null when it matches package-lock.json. */
export function nodeModulesStaleReason() {
	const nm = path.join(ROOT, 'node_modules');
	if (!fs.existsSync(nm)) { return 'node_modules is missing'; }
	const lockPath = path.join(ROOT, 'package-lock.json');
	if (!fs.existsSync(lockPath)) { return null; } // no lock: whatever is installed is what we have
	const hiddenPath = path.join(nm, '.package-lock.json'); // npm's record of what it installed
	if (!fs.existsSync(hiddenPath)) { return 'node_modules/.package-lock.json is missing'; }
	let lock, hidden;
	try {
		lock = JSON.parse(fs.readFileSync(lockPath, 'utf8')).packages ?? {};
		hidden = JSON.parse(fs.readFileSync(hiddenPath, 'utf8')).packages ?? {};
	} catch (e) {
		return `cannot read the lock files (${e.message})`;
	}
	for (const [key, entry] of Object.entries(lock)) {
		if (key === '' || entry.optional || entry.link) { continue; } // root; platform-specific optionals
		const have = hidden[key];
		if (!have) { return `${key} is not installed`; }
		if (have.version !== entry.version) { return `${key} is ${have.version}, package-lock.json wants ${entry.version}`; }
	}
	return null;
}

/**
 * System tools the build needs. Throws PrerequisiteError (naming the Debian packages) for what a build cannot do
 * without: cmake, a C++ compiler, make, and with allMpis the distro MPI wrappers asked for. Without `mpicc` the
 * default engine is optional: it returns `{ engine: false, why }` and the caller builds the addon only, so that
 * `npm run inspect` still gives its report on a machine without MPI ("No MPI found" is then the diagnosis).
 */
export function checkPrerequisites({ allMpis }) {
	const missing = []; // [what, Debian package]
	if (!which('cmake')) { missing.push(['cmake', 'cmake']); }
	if (!which('g++') && !which('c++')) { missing.push(['a C++ compiler (g++)', 'build-essential']); }
	if (!which('make') && !which('ninja')) { missing.push(['make', 'build-essential']); }
	if (allMpis) {
		if (!which('mpicc')) { missing.push(['mpicc', 'libopenmpi-dev']); }
		if (!which('mpicc.openmpi')) { missing.push(['mpicc.openmpi', 'libopenmpi-dev']); }
		if (!which('mpicc.mpich')) { missing.push(['mpicc.mpich', 'libmpich-dev']); }
	}
	if (missing.length > 0) {
		const what = missing.map(([w]) => w).join(', ');
		const pkgs = [...new Set(missing.map(([, p]) => p))].join(' ');
		throw new PrerequisiteError(`missing ${what}. On Debian/Ubuntu: apt-get install -y ${pkgs}`);
	}
	if (!which('mpicc')) {
		return {
			engine: false,
			why: 'no mpicc on PATH: the engine is not built (it needs an MPI); the inspection still runs and reports what it ' +
				'found. Put an MPI on PATH (module load openmpi, spack load openmpi, or apt-get install -y libopenmpi-dev) to build it',
		};
	}
	return { engine: true };
}

function newestMtime(dir, skip) {
	let newest = 0;
	let stack = [dir];
	while (stack.length > 0) {
		const d = stack.pop();
		let entries = [];
		try { entries = fs.readdirSync(d, { withFileTypes: true }); } catch { continue; }
		for (const e of entries) {
			const p = path.join(d, e.name);
			if (skip(p)) { continue; }
			if (e.isDirectory()) { stack.push(p); } else { try { newest = Math.max(newest, fs.statSync(p).mtimeMs); } catch { /* raced */ } }
		}
	}
	stack = null;
	return newest;
}

// Written after each successful native build: the engines built and when. Outputs are not a good clock: cmake
// leaves an output untouched when its own inputs did not change, although other native sources did.
const STAMP = path.join(NATIVE_BUILD, '.ensure-stamp.json');

/** Why the native parts need a (re)build: an output missing, or a file under native/ (build/ excluded) newer than the last build. */
export function nativeStaleReason(engines) {
	const outputs = [path.join(NATIVE_BUILD, 'addon', 'Release', 'gpumpi_addon.node')];
	const flavors = JSON.parse(fs.readFileSync(path.join(ROOT, 'extension', 'shared', 'engineFlavors.json'), 'utf8'));
	for (const e of engines) { outputs.push(path.join(NATIVE_BUILD, flavors[e].dir, 'gpumpi'), path.join(NATIVE_BUILD, flavors[e].dir, 'libgpumpi_guard.so')); }
	for (const o of outputs) {
		if (!fs.existsSync(o)) { return `${path.relative(ROOT, o)} is missing`; }
	}
	let stamp = null;
	try { stamp = JSON.parse(fs.readFileSync(STAMP, 'utf8')); } catch { return 'no record of a previous native build'; }
	if (!engines.every((e) => stamp.engines?.includes(e))) { return 'an engine flavour was not built by the last build'; }
	const newestSource = newestMtime(NATIVE, (p) => p === NATIVE_BUILD);
	return newestSource > stamp.sourcesMtimeMs ? 'native sources changed since the last build' : null;
}

function writeStamp(engines, sourcesMtimeMs) {
	fs.writeFileSync(STAMP, JSON.stringify({ engines, sourcesMtimeMs, at: new Date().toISOString() }) + '\n');
}

/** Run the whole bootstrap. Options: allMpis (also engine-openmpi / engine-mpich), log. */
export async function ensure({ allMpis = process.env.GPUMPI_ALL_MPIS === '1', log = console.error } = {}) {
	const major = Number(process.versions.node.split('.')[0]);
	if (major < 20) { throw new PrerequisiteError(`Node ${process.version} is too old: GPU-MPI Doctor needs Node >= 20`); }
	const t0 = Date.now();
	const stale = nodeModulesStaleReason();
	if (stale) {
		const hasLock = fs.existsSync(path.join(ROOT, 'package-lock.json'));
		log(`[ensure] ${stale}: running npm ${hasLock ? 'ci' : 'install'}`);
		await run('npm', [hasLock ? 'ci' : 'install', '--no-audit', '--no-fund'], log);
		const still = nodeModulesStaleReason();
		if (still) { throw new Error(`after npm install, node_modules still does not match package-lock.json: ${still}`); }
	}
	await run(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs')], log);
	const prereq = checkPrerequisites({ allMpis });
	if (!prereq.engine) { log(`[ensure] ${prereq.why}`); }
	const buildNativePath = path.join(ROOT, 'scripts', 'buildNative.mjs');
	const { buildNative, allMpiFlavors } = await import(pathToFileURL(buildNativePath).href);
	const engines = allMpis ? allMpiFlavors(log) : prereq.engine ? ['default'] : [];
	const why = nativeStaleReason(engines);
	if (why) {
		log(`[ensure] ${why}: building native (${['addon', ...engines.map((e) => `engine:${e}`)].join(', ')})`);
		const sourcesMtimeMs = newestMtime(NATIVE, (p) => p === NATIVE_BUILD); // taken before: an edit during the build triggers the next one
		await buildNative({ addon: true, engines, force: false, log });
		writeStamp(engines, sourcesMtimeMs);
	} else {
		log('[ensure] native build up to date');
	}
	log(`[ensure] ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	const args = process.argv.slice(2);
	const unknown = args.filter((a) => a !== '--all-mpis');
	if (unknown.length > 0) {
		console.error(`usage: node scripts/ensure.mjs [--all-mpis] (unknown: ${unknown.join(' ')})`);
		process.exit(2);
	}
	ensure({ allMpis: args.includes('--all-mpis') || process.env.GPUMPI_ALL_MPIS === '1' }).catch((e) => {
		console.error(`[ensure] ${e instanceof PrerequisiteError ? 'prerequisite missing: ' : 'failed: '}${e.message}`);
		process.exit(e instanceof PrerequisiteError ? 2 : 1);
	});
}
