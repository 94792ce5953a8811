#!/usr/bin/env node
// Builds the native parts of GPU-MPI Doctor (node >= 20, no dependencies beyond node_modules/cmake-js):
//   - the Node addon with cmake-js   -> native/build/addon/Release/gpumpi_addon.node (needs no MPI)
//   - the `gpumpi` engine with cmake -> native/build/engine[-openmpi|-mpich]/gpumpi (needs an MPI compiler wrapper)
// Incremental: build folders are reused (a folder configured with a different MPI wrapper is wiped first).
// Every tool is spawned with an argv array (no shell); output is streamed line by line to `log` (default: stderr, so
// that a command run after the build, such as `npm run -s inspect -- --json`, owns stdout alone).
// CLI: node scripts/buildNative.mjs [--addon-only|--engine-only] [--all-mpis] [--mpicc PATH] [--force]
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const NATIVE = path.join(ROOT, 'native');
const BUILD = path.join(NATIVE, 'build');
const JOBS = '2';

/** Engine flavours: which MPI compiler wrapper builds which folder (extension/shared/engineFlavors.json, the one table). */
export const ENGINE_FLAVORS = Object.fromEntries(Object.entries(JSON.parse(readFileSync(path.join(ROOT, 'extension', 'shared', 'engineFlavors.json'), 'utf8')))
	.filter(([k]) => k !== '//'));

/** Thrown when a tool the build needs is missing or a step fails; `message` says what to do. */
export class BuildError extends Error {}

/** Absolute path of an executable (a bare name is searched on PATH, a path is checked), or null. */
export function findExecutable(name) {
	const candidates = name.includes('/')
		? [path.resolve(name)]
		: (process.env.PATH ?? '').split(path.delimiter).filter(Boolean).map((d) => path.join(d, name));
	for (const c of candidates) {
		try {
			accessSync(c, constants.X_OK);
			return c;
		} catch {
			// not here
		}
	}
	return null;
}

function run(cmd, args, log, what, cwd = ROOT) {
	log(`$ ${[cmd, ...args].join(' ')}`);
	return new Promise((resolve, reject) => {
		const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
		const pump = (stream) => {
			let rest = '';
			stream.setEncoding('utf8');
			stream.on('data', (chunk) => {
				const lines = (rest + chunk).split('\n');
				rest = lines.pop() ?? '';
				for (const l of lines) log(l);
			});
			stream.on('end', () => rest && log(rest));
		};
		pump(child.stdout);
		pump(child.stderr);
		child.on('error', (e) => reject(new BuildError(`cannot run ${cmd}: ${e.message}`)));
		child.on('close', (code, signal) => {
			if (code === 0) resolve();
			else reject(new BuildError(`${what} failed (${signal ? `signal ${signal}` : `exit ${code}`}); its output is above`));
		});
	});
}

function cachedMpiCompiler(buildDir) {
	const cache = path.join(buildDir, 'CMakeCache.txt');
	if (!existsSync(cache)) return null;
	const m = /^MPI_C_COMPILER:[A-Z]+=(.*)$/m.exec(readFileSync(cache, 'utf8'));
	return m ? m[1].trim() : '';
}

async function buildAddon({ force, log }) {
	const cmakeJs = path.join(ROOT, 'node_modules', 'cmake-js', 'bin', 'cmake-js');
	if (!existsSync(cmakeJs)) throw new BuildError(`cmake-js not found at ${cmakeJs}: run 'npm install' first`);
	const outDir = path.join(BUILD, 'addon');
	if (force) rmSync(outDir, { recursive: true, force: true });
	// package.json's "binary": {"napi_versions": [8]} makes cmake-js use node-api-headers instead of downloading.
	await run(process.execPath, [cmakeJs, 'compile', '-d', NATIVE, '-O', outDir, '--parallel', JOBS], log, 'cmake-js compile (addon)');
	const out = path.join(outDir, 'Release', 'gpumpi_addon.node');
	if (!existsSync(out)) throw new BuildError(`cmake-js finished but ${out} is missing`);
	return out;
}

async function buildEngine(flavor, { force, log, mpicc }) {
	const spec = ENGINE_FLAVORS[flavor];
	if (!spec) throw new BuildError(`unknown engine flavour '${flavor}' (expected ${Object.keys(ENGINE_FLAVORS).join(', ')})`);
	const wrapperName = flavor === 'default' && mpicc ? mpicc : spec.mpicc;
	const wrapper = findExecutable(wrapperName);
	if (!wrapper) {
		throw new BuildError(
			`${wrapperName} not found${wrapperName.includes('/') ? '' : ' on PATH'}: install an MPI development package ` +
				`(libopenmpi-dev or libmpich-dev) or pass --mpicc PATH`,
		);
	}
	const buildDir = path.join(BUILD, spec.dir);
	const cached = cachedMpiCompiler(buildDir);
	if (force || (cached !== null && cached !== wrapper)) {
		if (cached !== null && !force) log(`[buildNative] ${spec.dir} was configured with ${cached || 'another MPI'}; reconfiguring for ${wrapper}`);
		rmSync(buildDir, { recursive: true, force: true });
	}
	const cmake = findExecutable('cmake');
	await run(cmake, ['-S', NATIVE, '-B', buildDir, `-DMPI_C_COMPILER=${wrapper}`, '-DCMAKE_BUILD_TYPE=Release'], log,
		`cmake configure of native/build/${spec.dir}`);
	await run(cmake, ['--build', buildDir, '-j', JOBS], log, `cmake build of native/build/${spec.dir}`);
	const out = path.join(buildDir, 'gpumpi');
	if (!existsSync(out)) throw new BuildError(`cmake finished but ${out} is missing`);
	return out;
}

/**
 * Build the addon and/or engines. `engines`: flavours from ENGINE_FLAVORS, or 'all' entries expanded by the caller.
 * Resolves to { addon: path | null, engines: { [flavor]: path } }; rejects with BuildError naming what is missing.
 */
export async function buildNative({ addon = true, engines = ['default'], force = false, log = console.error, mpicc } = {}) {
	if (!findExecutable('cmake')) throw new BuildError('cmake not found on PATH: install cmake >= 3.18 (apt-get install cmake)');
	const result = { addon: null, engines: {} };
	if (addon) result.addon = await buildAddon({ force, log });
	for (const flavor of engines) result.engines[flavor] = await buildEngine(flavor, { force, log, mpicc });
	return result;
}

/** The engine flavours --all-mpis builds: the default plus each distro wrapper that exists here. */
export function allMpiFlavors(log = console.error) {
	const list = ['default'];
	for (const f of ['openmpi', 'mpich']) {
		if (findExecutable(ENGINE_FLAVORS[f].mpicc)) list.push(f);
		else log(`[buildNative] ${ENGINE_FLAVORS[f].mpicc} not found: skipping engine-${f}`);
	}
	return list;
}

function parseArgs(argv) {
	const o = { addon: true, engine: true, allMpis: false, force: false, mpicc: undefined };
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		if (a === '--addon-only') o.engine = false;
		else if (a === '--engine-only') o.addon = false;
		else if (a === '--all-mpis') o.allMpis = true;
		else if (a === '--force') o.force = true;
		else if (a === '--mpicc' && i + 1 < argv.length) o.mpicc = argv[++i];
		else if (a.startsWith('--mpicc=')) o.mpicc = a.slice('--mpicc='.length);
		else if (a === '--help' || a === '-h') o.help = true;
		else throw new BuildError(`unknown argument '${a}'`);
	}
	if (!o.addon && !o.engine) throw new BuildError('--addon-only and --engine-only exclude each other');
	return o;
}

const USAGE = 'Usage: node scripts/buildNative.mjs [--addon-only|--engine-only] [--all-mpis] [--mpicc PATH] [--force]';

async function main() {
	const log = (line) => process.stderr.write(`${line}\n`);
	const o = parseArgs(process.argv.slice(2));
	if (o.help) {
		process.stdout.write(`${USAGE}\n`);
		return;
	}
	const engines = !o.engine ? [] : o.allMpis ? allMpiFlavors(log) : ['default'];
	const r = await buildNative({ addon: o.addon, engines, force: o.force, log, mpicc: o.mpicc });
	if (r.addon) log(`[buildNative] addon: ${path.relative(ROOT, r.addon)}`);
	for (const [f, p] of Object.entries(r.engines)) log(`[buildNative] engine (${f}): ${path.relative(ROOT, p)}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	main().catch((e) => {
		process.stderr.write(`buildNative: ${e instanceof BuildError ? e.message : e?.stack ?? e}\n`);
		if (!(e instanceof BuildError)) process.stderr.write(`${USAGE}\n`);
		process.exit(1);
	});
}
