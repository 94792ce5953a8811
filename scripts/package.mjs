#!/usr/bin/env node
// `npm run package`: the two things people install, in out/ (gitignored):
//   out/gpumpi-doctor-linux-x64-<version>.vsix  the VS Code extension (vsce, files named by .vscodeignore)
//   out/gpumpi-doctor-<version>.tgz             the CLI for clusters without VS Code (`npm install -g ./…tgz`, offline:
//                                               no dependencies; made by `npm pack` from a staging folder)
// Both carry the same payload: the production bundles, the webview assets, the prebuilt addon for linux-x64 in
// prebuilds/linux-x64/ (where extension/core/native.ts looks), the engines built here with libgpumpi.so next to them
// (RUNPATH $ORIGIN), and the native sources that extension/core/hosts/deployEngine.ts copies to an ssh host and builds
// there. Steps: ensure (engines for every MPI here) → production build → stage the addon → vsce → npm pack.
// Usage: node scripts/package.mjs [--vsix-only|--cli-only]. Progress on stderr; stdout: the paths written, one a line.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensure } from './ensure.mjs';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const OUT = path.join(ROOT, 'out');
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
export const VSIX = path.join(OUT, `${PKG.name}-linux-x64-${PKG.version}.vsix`);
export const TGZ = path.join(OUT, `${PKG.name}-${PKG.version}.tgz`);
const PREBUILD_DIR = path.join(ROOT, 'prebuilds', 'linux-x64');
const ADDON_BUILT = path.join(ROOT, 'native', 'build', 'addon', 'Release', 'gpumpi_addon.node');
const log = (line) => process.stderr.write(`${line}\n`);

function run(cmd, args, cwd = ROOT) {
	log(`$ ${[cmd, ...args].join(' ')}`);
	return new Promise((resolve, reject) => {
		const child = spawn(cmd, args, { cwd, stdio: ['ignore', 2, 2], env: process.env });
		child.on('error', (e) => reject(new Error(`cannot run ${cmd}: ${e.message}`)));
		child.on('close', (code, signal) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} failed (${signal ? `signal ${signal}` : `exit ${code}`})`))));
	});
}

/** Files (relative, '/'-separated) the CLI tarball ships: the same payload as the .vsix minus the VS Code-only parts. */
export function cliPayload() {
	const rel = (p) => path.relative(ROOT, p).split(path.sep).join('/');
	const out = ['bin/gpumpi-doctor.js', 'dist/cli.js', 'README.md', 'prebuilds/linux-x64/gpumpi_addon.node'];
	for (const dir of ['engine', 'engine-openmpi', 'engine-mpich']) {
		for (const f of ['gpumpi', 'libgpumpi.so', 'libgpumpi_guard.so']) {
			const p = path.join(ROOT, 'native', 'build', dir, f);
			if (fs.existsSync(p)) { out.push(rel(p)); }
		}
	}
	const walk = (dir) => {
		for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
			const p = path.join(dir, e.name);
			if (e.isDirectory()) {
				if (/^build/.test(e.name) || e.name === 'node_modules' || e.name.startsWith('.')) { continue; }
				walk(p);
			} else if (e.isFile()) { out.push(rel(p)); }
		}
	};
	walk(path.join(ROOT, 'native'));
	return out;
}

async function packCli() {
	const stage = path.join(OUT, 'cli-stage');
	fs.rmSync(stage, { recursive: true, force: true });
	const files = cliPayload();
	for (const f of files) {
		fs.mkdirSync(path.dirname(path.join(stage, f)), { recursive: true });
		fs.copyFileSync(path.join(ROOT, f), path.join(stage, f));
		fs.chmodSync(path.join(stage, f), fs.statSync(path.join(ROOT, f)).mode & 0o777);
	}
	// The name stays "gpumpi-doctor": extension/core/native.ts finds its root by that name.
	const pkg = {
		name: PKG.name, version: PKG.version, description: PKG.description, license: PKG.license,
		engines: { node: PKG.engines.node }, os: ['linux'], cpu: ['x64'], bin: PKG.bin, files: ['bin', 'dist', 'native', 'prebuilds'],
	};
	fs.writeFileSync(path.join(stage, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
	await run('npm', ['pack', '--pack-destination', OUT, '--no-fund', '--no-audit', '--offline'], stage);
	fs.rmSync(stage, { recursive: true, force: true });
	if (!fs.existsSync(TGZ)) { throw new Error(`npm pack finished but ${TGZ} is missing`); }
	return TGZ;
}

async function packVsix() {
	const vsce = path.join(ROOT, 'node_modules', '@vscode', 'vsce', 'vsce');
	fs.rmSync(VSIX, { force: true });
	// The README for users (docs/vsix/README.md: what it does, screenshots, commands, settings), not the developers'
	// one; its relative links stay relative (VS Code resolves them inside the installed extension, where they ship).
	await run(process.execPath, [vsce, 'package', '--target', 'linux-x64', '--no-dependencies', '--skip-license',
		'--allow-missing-repository', '--readme-path', 'docs/vsix/README.md', '--no-rewrite-relative-links', '--out', VSIX]);
	if (!fs.existsSync(VSIX)) { throw new Error(`vsce finished but ${VSIX} is missing`); }
	return VSIX;
}

async function main() {
	const args = process.argv.slice(2);
	const bad = args.filter((a) => a !== '--vsix-only' && a !== '--cli-only');
	if (bad.length > 0 || args.length > 1) {
		log('usage: node scripts/package.mjs [--vsix-only|--cli-only]');
		process.exit(2);
	}
	await ensure({ allMpis: true, log });
	await run(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs'), '--production', '--only=extension,core,cli,panel,map,repro']);
	fs.mkdirSync(PREBUILD_DIR, { recursive: true });
	fs.copyFileSync(ADDON_BUILT, path.join(PREBUILD_DIR, 'gpumpi_addon.node'));
	fs.mkdirSync(OUT, { recursive: true });
	const written = [];
	if (!args.includes('--cli-only')) { written.push(await packVsix()); }
	if (!args.includes('--vsix-only')) { written.push(await packCli()); }
	for (const f of written) {
		log(`[package] ${path.relative(ROOT, f)}: ${(fs.statSync(f).size / 2 ** 20).toFixed(2)} MiB`);
		process.stdout.write(`${f}\n`);
	}
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	main().catch((e) => { log(`[package] failed: ${e.message}`); process.exit(1); });
}
