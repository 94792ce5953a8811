#!/usr/bin/env node
// `npm run bench`: measures, on this machine, the numbers the product promises and writes docs/benchmarks.md.
//   activation   time of `await extension.activate()` inside the REAL extension host (code-server), first activation
//                of a fresh window (module load + activate()), recorded by test/vscode/suite/extension.test.ts
//   inspect      (a) CLI `gpumpi-doctor inspect --json` wall time in a fresh process, and the report's elapsedMs
//                (b) api.inspect() inside the extension host (wall)
//   probe        native addon probe(): its own elapsed_ms and the wall time around the call, in a fresh process
//   guard        gpumpi-guard's added ns per call on host buffers (scripts/benchGuard.mjs)
// Medians of N runs (--runs N, default 5). No fakes: everything runs the real programs of this host.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { ROOT, WORK, CODE_SERVER_VERSION, startCodeServer } from './codeServer.mjs';
import { benchGuard, guardRows } from './benchGuard.mjs';

const TARGETS = { activationMs: 100, inspectMs: 2000 };
const ADDON = path.join(ROOT, 'native', 'build', 'addon', 'Release', 'gpumpi_addon.node');

function runCapture(cmd, args, timeoutMs = 120_000) {
	return new Promise((resolve) => {
		const t0 = performance.now();
		const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
		let out = ''; let err = '';
		child.stdout.on('data', (d) => { out += d; });
		child.stderr.on('data', (d) => { err += d; });
		const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
		child.on('error', (e) => { clearTimeout(timer); resolve({ code: 127, out, err: e.message, wallMs: performance.now() - t0 }); });
		child.on('close', (code) => { clearTimeout(timer); resolve({ code, out, err, wallMs: performance.now() - t0 }); });
	});
}

const median = (xs) => {
	const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
	if (v.length === 0) { return NaN; }
	const m = Math.floor(v.length / 2);
	return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};
const fmt = (x) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 0) : 'n/a');

function machine() {
	let distro = os.type();
	try { distro = /^PRETTY_NAME="?([^"\n]*)/m.exec(fs.readFileSync('/etc/os-release', 'utf8'))?.[1] ?? distro; } catch { /* keep */ }
	const cpus = os.cpus();
	return {
		cpu: `${cpus[0]?.model ?? 'unknown CPU'} × ${cpus.length}`,
		memory: `${(os.totalmem() / 2 ** 30).toFixed(0)} GiB`,
		os: `${distro}, Linux ${os.release()}`,
		node: process.version,
		load: os.loadavg()[0].toFixed(1),
	};
}

async function benchCli(runs, log) {
	const wall = []; const elapsed = []; let label = ''; const perTool = new Map();
	for (let i = 0; i < runs; i++) {
		const r = await runCapture(process.execPath, [path.join(ROOT, 'bin', 'gpumpi-doctor.js'), 'inspect', '--json']);
		if (r.code !== 0 && r.code !== 1) { throw new Error(`gpumpi-doctor inspect --json exited ${r.code}: ${r.err.slice(-2000)}`); }
		const report = JSON.parse(r.out);
		wall.push(r.wallMs); elapsed.push(report.elapsedMs); label = report.summary?.mpi?.label ?? '';
		for (const raw of report.raw ?? []) {
			if (typeof raw.durationMs === 'number') { perTool.set(raw.id, [...(perTool.get(raw.id) ?? []), raw.durationMs]); }
		}
		log(`  cli run ${i + 1}: wall ${fmt(r.wallMs)} ms, report.elapsedMs ${report.elapsedMs}`);
	}
	return { wall, elapsed, label, perTool };
}

async function benchProbe(runs, log) {
	if (!fs.existsSync(ADDON)) { throw new Error(`${path.relative(ROOT, ADDON)} missing: run node scripts/ensure.mjs`); }
	// A fresh process per run: includes the dlopen of the MPI/UCX/CUDA libraries, as the extension sees it.
	const script = `const a=require(process.argv[1]);const {performance}=require('node:perf_hooks');
const t0=performance.now();a.probe().then(r=>{process.stdout.write(JSON.stringify({wall:performance.now()-t0,elapsed:r.elapsed_ms,loaded:r.libraries.filter(l=>l.loaded).map(l=>l.soname)}))},e=>{process.stderr.write(String(e));process.exit(1)})`;
	const wall = []; const elapsed = []; let loaded = []; const failures = [];
	for (let i = 0; i < runs; i++) {
		const r = await runCapture(process.execPath, ['-e', script, ADDON], 30_000);
		if (r.code !== 0) {
			// Counted and shown in the table, not hidden: a crashing or hanging probe is a finding of the benchmark.
			const why = r.code === null ? 'hung (killed after 30 s)' : (/Caught signal (\d+ \([^)]*\))/.exec(r.err)?.[1] ?? `exit ${r.code}`);
			failures.push(why);
			log(`  probe run ${i + 1}: FAILED: ${why}\n${r.err.split('\n').slice(0, 12).join('\n')}`);
			continue;
		}
		const j = JSON.parse(r.out);
		wall.push(j.wall); elapsed.push(j.elapsed); loaded = j.loaded;
		log(`  probe run ${i + 1}: wall ${fmt(j.wall)} ms, elapsed_ms ${fmt(j.elapsed)}`);
	}
	return { wall, elapsed, loaded, failures };
}

async function benchHost(runs, log) {
	// What the .vsix ships: the production bundles (minified, no source maps), rebuilt for the development build after.
	const build = (...args) => runCapture(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs'), '--only=extension,core', ...args]);
	const prod = await build('--production');
	if (prod.code !== 0) { throw new Error(`production build failed: ${prod.err.slice(-2000)}`); }
	try {
		return await benchHostRuns(runs, log);
	} finally {
		await build();
	}
}

async function benchHostRuns(runs, log) {
	const { launchBrowser, runInHost } = await import('../test/vscode/runCodeServer.mjs');
	const tests = path.join(ROOT, 'dist', 'test', 'vscode', 'suite', 'index.js');
	const server = await startCodeServer({ name: 'bench', log, env: {
		GPUMPI_VSCODE_RESULT: path.join(WORK, 'results', `in-host-${process.pid}.json`),
		TEST_FILTER: 'activates and returns its API|inspect\\(\\) on this host',
	} });
	const activation = []; const moduleLoad = []; const activateBody = []; const inspect = []; let vscodeVersion = '';
	let context = null;
	const profile = path.join(WORK, 'chromium-profile', `bench-${process.pid}`);
	try {
		context = await launchBrowser(profile);
		for (let i = 0; i < runs; i++) {
			const r = await runInHost(context, server, { tests, extension: ROOT });
			if (r.failures > 0) { throw new Error(`in-host run ${i + 1} failed: ${r.tests.filter((t) => !t.ok).map((t) => `${t.title}: ${t.error}`).join('; ')}`); }
			activation.push(r.metrics.activationMs); inspect.push(r.metrics.inspectWallMs); vscodeVersion = r.vscodeVersion ?? '';
			moduleLoad.push(r.metrics.activationModuleLoadMs); activateBody.push(r.metrics.activationActivateMs);
			log(`  extension host run ${i + 1}: activate ${fmt(r.metrics.activationMs)} ms (bundle load ${fmt(r.metrics.activationModuleLoadMs)}, activate() ${fmt(r.metrics.activationActivateMs)}), api.inspect() ${fmt(r.metrics.inspectWallMs)} ms`);
		}
	} finally {
		await context?.close().catch(() => {});
		fs.rmSync(profile, { recursive: true, force: true });
		await server.stop();
	}
	return { activation, moduleLoad, activateBody, inspect, vscodeVersion };
}

function row(what, how, values, target) {
	const m = median(values);
	const verdict = target === undefined ? '' : Number.isFinite(m) ? (m < target ? `✅ < ${target} ms` : `❌ ≥ ${target} ms`) : '';
	return `| ${what} | ${how} | **${fmt(m)}** | ${fmt(Math.min(...values))} – ${fmt(Math.max(...values))} | ${verdict} |`;
}

async function main() {
	const i = process.argv.indexOf('--runs');
	const runs = i > 0 ? Number(process.argv[i + 1]) : 5;
	if (!Number.isInteger(runs) || runs < 1 || runs > 50) { console.error('usage: node scripts/bench.mjs [--runs N (1-50)] [--no-vscode]'); process.exit(2); }
	const withHost = !process.argv.includes('--no-vscode');
	const log = (m) => console.log(m);
	const m = machine();
	log(`bench: ${runs} runs on ${m.cpu}, ${m.memory}, ${m.os}`);
	const cli = await benchCli(runs, log);
	const probe = await benchProbe(runs, log);
	const guard = await benchGuard(runs, log);
	const host = withHost ? await benchHost(runs, log) : null;
	const date = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
	const lines = [
		'# Benchmarks',
		'',
		`Measured ${date} by \`npm run bench\` (scripts/bench.mjs): median of ${runs} runs, real programs, nothing faked.`,
		'',
		`Machine: ${m.cpu}; ${m.memory}; ${m.os}; Node ${m.node}; ${cli.label || 'MPI unknown'}` +
			`${host ? `; VS Code ${host.vscodeVersion} (code-server ${CODE_SERVER_VERSION}) with headless Chromium` : ''}. No GPU on this machine.`,
		'',
		`Load average when the run started: ${m.load} (the machine may be shared; min – max shows the spread).`,
		'',
		'| What | How | Median (ms) | Min – max (ms) | Target |',
		'|---|---|---:|---:|---|',
	];
	if (host) {
		lines.push(row('Extension activation', 'first `await ext.activate()` in a fresh window\'s extension host (module load + `activate()`), production bundle', host.activation, TARGETS.activationMs));
		lines.push(row('… of which: bundle load', 'evaluating dist/extension.js (its banner mark → `activate()` called)', host.moduleLoad));
		lines.push(row('… of which: `activate()`', 'the body of `activate()` (channel, services, command and view registration)', host.activateBody));
		lines.push(row('Inspect this host (extension)', '`api.inspect()` in the extension host, wall', host.inspect, TARGETS.inspectMs));
	}
	lines.push(row('Inspect this host (CLI)', '`gpumpi-doctor inspect --json`, fresh process, wall', cli.wall));
	lines.push(row('Inspect this host (report)', 'the report\'s `elapsedMs` (collection + rules)', cli.elapsed, TARGETS.inspectMs));
	lines.push(row('Addon probe', '`probe()` wall around the call, fresh process (dlopen included)', probe.wall));
	lines.push(row('Addon probe (own)', '`probe().elapsed_ms`', probe.elapsed));
	lines.push('', `Libraries the probe loaded: ${probe.loaded.join(', ') || 'none'}.`, '');
	lines.push(...guardRows(guard, runs), '');
	if (probe.failures.length > 0) {
		lines.push(`**The probe failed in ${probe.failures.length} of ${runs} runs** (${probe.failures.join('; ')}); the probe rows are over the other runs.`, '');
	}
	const slowest = [...cli.perTool.entries()].map(([id, xs]) => [id, median(xs)]).sort((a, b) => b[1] - a[1]).slice(0, 8);
	if (slowest.length > 0) {
		lines.push('Where the inspection spends its time (CLI runs, median per collected output; runs overlap, so they do not add up):', '',
			'| Output | Median (ms) |', '|---|---:|', ...slowest.map(([id, ms]) => `| \`${id}\` | ${fmt(ms)} |`), '');
	}
	lines.push('Notes:', '',
		'- Activation is measured by the first in-host test after the extension host\'s event loop has gone quiet (the',
		'  window\'s built-in extensions start at the same moment), so it is our module load + `activate()`, plus VS Code\'s',
		'  own activation bookkeeping; nothing heavy runs on activation. The two "of which" rows are our share, measured',
		'  by the extension itself (`activationTimings()` of its API): the banner of dist/extension.js marks when the bundle',
		'  starts evaluating.',
		'- Where activation time went (2026-12-03, this machine, load 5.3, 5 runs): with the whole extension in one',
		'  development bundle (334 KB: collector, parsers, 32 rules, ssh deploy, runners) activation took 58 ms median',
		'  (29 – 71), of which evaluating the bundle 28 ms and `activate()` 1.8 ms; the rest is VS Code\'s. The collector,',
		'  parsers, rules and runners now live in dist/core.js, loaded on the first command (extension/vscode/lazyCore.ts),',
		'  and the .vsix ships production bundles: dist/extension.js is 55 KB minified (217 KB before the split). The',
		'  123 ms of 2026-12-02 was measured on another machine (other kernel build; every row there was ~2× slower).',
		'- `api.inspect()` in the extension host also opens the diagnostics panel and runs in a fresh window; the CLI row is',
		'  the same collection in a plain Node process.',
		'- On a shared or loaded machine every number grows; compare the load average above before comparing runs.', '');
	lines.push('Re-run with `npm run bench` (`node scripts/bench.mjs --runs N [--no-vscode]`). The extension numbers come from the',
		'in-host test suite (test/vscode/suite/*.test.ts records them), run in code-server like `npm test`.', '');
	const out = path.join(ROOT, 'docs', 'benchmarks.md');
	// The transport-map block is scripts/benchMap.mjs's (headless Chromium, up to 16 384 ranks): kept as it was.
	const MAP_BEGIN = '<!-- transport-map: written by scripts/benchMap.mjs -->', MAP_END = '<!-- /transport-map -->';
	const old = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '';
	if (old.includes(MAP_BEGIN) && old.includes(MAP_END)) { lines.push(old.slice(old.indexOf(MAP_BEGIN), old.indexOf(MAP_END) + MAP_END.length), ''); }
	fs.mkdirSync(path.dirname(out), { recursive: true });
	fs.writeFileSync(out, lines.join('\n'));
	log(`\n${lines.join('\n')}\nwritten to ${path.relative(ROOT, out)}`);
}

main().catch((e) => { console.error(`bench failed: ${e instanceof Error ? e.message : String(e)}`); process.exit(1); });
