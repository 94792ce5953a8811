#!/usr/bin/env node
// The one esbuild script: one entry per runtime, plus the test bundles.
//   node scripts/build.mjs                 development build (sourcemaps)
//   node scripts/build.mjs --production    minified, no sourcemaps
//   node scripts/build.mjs --watch         rebuild on change; logs in a problem-matcher friendly format
//   node scripts/build.mjs --only=cli,panel   build a subset (targets: extension, core, cli, panel, map, repro, tests)
// Type-checking is separate: `npm run typecheck` (tsc --noEmit). All its messages go to stderr (stdout stays free for
// the command that `npm run inspect` runs after the build).
// Each target is its own esbuild context, so a broken test file does not stop the extension from building
// (the script still exits 1 when any target failed).
import * as esbuild from 'esbuild';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const production = args.includes('--production');
const watch = args.includes('--watch');
const onlyArg = args.find(a => a.startsWith('--only='));
const only = onlyArg ? new Set(onlyArg.slice('--only='.length).split(',')) : null;

/** Recursively list files under `dir` (relative to root) whose name passes `accept`. */
function walk(dir, accept) {
	const abs = path.join(root, dir);
	if (!fs.existsSync(abs)) { return []; }
	const out = [];
	for (const entry of fs.readdirSync(abs, { withFileTypes: true })) {
		const rel = path.posix.join(dir, entry.name);
		if (entry.isDirectory()) { out.push(...walk(rel, accept)); } else if (accept(entry.name)) { out.push(rel); }
	}
	return out.sort();
}

/** Entry map for esbuild: "dist-relative output name without .js" -> source. */
function entries(files) {
	return Object.fromEntries(files.map(f => [f.replace(/\.ts$/, ''), f]));
}

/** Logs build start/end and errors in the format of the esbuild problem matcher ("✘ [ERROR] …" then "    file:line:col:"). */
const problemMatcherPlugin = name => ({
	name: 'problem-matcher-log',
	setup(build) {
		let started = 0;
		build.onStart(() => {
			started = Date.now();
			if (watch) { console.error(`[watch] build started (${name})`); }
		});
		build.onEnd(result => {
			for (const [kind, list] of [['✘ [ERROR]', result.errors], ['▲ [WARNING]', result.warnings]]) {
				for (const { text, location } of list) {
					console.error(`${kind} ${text}`);
					if (location) { console.error(`    ${location.file}:${location.line}:${location.column}:`); }
				}
			}
			if (watch) { console.error(`[watch] build finished (${name}, ${Date.now() - started} ms, ${result.errors.length} error(s))`); }
		});
	},
});

const common = {
	absWorkingDir: root,
	bundle: true,
	minify: production,
	sourcemap: production ? false : 'linked',
	sourcesContent: false,
	logLevel: 'silent',
	loader: { '.css': 'text' },
	target: 'es2022',
	legalComments: 'none',
};

const targets = [
	{
		name: 'extension',
		options: {
			...common, entryPoints: { extension: 'extension/vscode/extension.ts' }, outdir: 'dist',
			// ./core.js is dist/core.js (the target below), loaded on the first command (extension/vscode/lazyCore.ts).
			platform: 'node', format: 'cjs', external: ['vscode', '*.node', './core.js'],
			// When the bundle starts and ends evaluating: activate() tells its evaluation time from VS Code's part before
			// activate() is called (extension.ts activationTimings).
			banner: { js: 'globalThis.__gpumpiDoctorLoadStart = performance.now();' },
			footer: { js: 'globalThis.__gpumpiDoctorLoadEnd = performance.now();' },
		},
	},
	{
		name: 'core',
		options: {
			...common, entryPoints: { core: 'extension/core/coreApi.ts' }, outdir: 'dist',
			platform: 'node', format: 'cjs', external: ['*.node'],
		},
	},
	{
		name: 'cli',
		options: {
			...common, entryPoints: { cli: 'extension/cli/gpumpiDoctor.ts' }, outdir: 'dist',
			platform: 'node', format: 'cjs', external: ['*.node'],
		},
	},
	{
		name: 'panel',
		options: {
			...common, entryPoints: { panel: 'media/panel/main.ts' }, outdir: 'dist',
			platform: 'browser', format: 'iife',
		},
		after: () => fs.copyFileSync(path.join(root, 'media/panel/panel.css'), path.join(root, 'dist/panel.css')),
	},
	{ name: 'map', options: { ...common, entryPoints: { map: 'media/map/main.ts' }, outdir: 'dist', platform: 'browser', format: 'iife' }, after: () => fs.copyFileSync(path.join(root, 'media/map/map.css'), path.join(root, 'dist/map.css')) },
	{ name: 'repro', options: { ...common, entryPoints: { repro: 'media/repro/main.ts' }, outdir: 'dist', platform: 'browser', format: 'iife' }, after: () => fs.copyFileSync(path.join(root, 'media/repro/repro.css'), path.join(root, 'dist/repro.css')) },
	{
		name: 'tests',
		options: {
			...common,
			minify: false,
			sourcemap: 'linked',
			entryPoints: entries([
				...walk('test/unit', n => n.endsWith('.test.ts')),
				...walk('test/engine', n => n.endsWith('.test.ts')),
				...walk('test/vscode', n => n.endsWith('.ts') && !n.endsWith('.d.ts')),
			]),
			outdir: 'dist',
			platform: 'node', format: 'cjs',
			// Test bundles load mocha, vscode, @vscode/test-electron, playwright-core, eslint and typescript at run time.
			external: ['vscode', '*.node', 'mocha', '@vscode/test-electron', 'playwright-core', 'eslint', 'typescript'],
		},
	},
].filter(t => !only || only.has(t.name))
	.filter(t => Object.keys(t.options.entryPoints).length > 0);

async function buildOnce(t) {
	const started = Date.now();
	// A test moved or deleted must not keep running from its old bundle (the runner takes every dist/test/**/*.test.js).
	if (t.name === 'tests') { fs.rmSync(path.join(root, 'dist', 'test'), { recursive: true, force: true }); }
	try {
		const result = await esbuild.build({ ...t.options, plugins: [problemMatcherPlugin(t.name)] });
		t.after?.();
		return { name: t.name, ok: result.errors.length === 0, ms: Date.now() - started };
	} catch (e) {
		// Errors were already printed by the plugin; esbuild also throws a summary.
		if (!e?.errors) { console.error(`✘ [ERROR] ${t.name}: ${e?.message ?? e}`); }
		return { name: t.name, ok: false, ms: Date.now() - started };
	}
}

if (watch) {
	for (const t of targets) {
		const after = t.after ? [{ name: 'after', setup(b) { b.onEnd(r => { if (r.errors.length === 0) { t.after(); } }); } }] : [];
		const ctx = await esbuild.context({ ...t.options, plugins: [problemMatcherPlugin(t.name), ...after] });
		await ctx.watch();
	}
	console.error('[watch] watching for changes (Ctrl-C to stop)');
} else {
	fs.mkdirSync(path.join(root, 'dist'), { recursive: true });
	const results = await Promise.all(targets.map(buildOnce));
	for (const r of results) { console.error(`${r.ok ? '✔' : '✘'} ${r.name} (${r.ms} ms)`); }
	process.exitCode = results.every(r => r.ok) ? 0 : 1;
}
