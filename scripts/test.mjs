#!/usr/bin/env node
// Runs every test suite and ends with `N passed, N failed` alone on the last line (totals over all suites).
//   typecheck  tsc --noEmit and eslint (the import zones, eslint.config.mjs): counts as 2 tests
//   unit       mocha dist/test/unit/**/*.test.js    (plain Node, no VS Code)
//   engine     mocha dist/test/engine/**/*.test.js  (real mpirun of Open MPI / MPICH on this host)
//   vscode     real VS Code (code-server) + Chromium: in-host mocha suite and the command-palette/webview UI test,
//              then the packaged .vsix installed into a fresh code-server (test/vscode/runVsix.mjs)
// Each suite runs in its own process with a time limit; a suite that crashes, hangs or finds no tests counts as
// failed, never as zero. Env: GPUMPI_SKIP_VSCODE=1 skips the vscode suite (local quick runs; CI never sets it),
// TEST_FILTER=regex is passed to mocha's grep in every mocha suite. Args: suite names to run a subset.
// On demand only (too long for CI's limits), each turned on by a variable named after its suite, `all` for every case:
//   GPUMPI_PEER_SUITE=mpich|all  the peer MPI test suite under the guard (test/engine/peerSuite.test.ts, docs/guard.md)
//   GPUMPI_SLURM_BATCH=all       map --sbatch's slow cases on the Slurm lab: MPICH, scancel while followed,
//                                --cancel-on-interrupt, a pending job followed to its map (test/engine/slurmBatch.test.ts,
//                                docs/map-schema.md "Batch")
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensure } from './ensure.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS = path.join(ROOT, '.test-work', 'results');
const SUITES = ['typecheck', 'unit', 'engine', 'vscode'];

function run(cmd, args, { env = {}, timeoutMs, capture = false } = {}) {
	return new Promise((resolve) => {
		const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', capture ? 'pipe' : 'inherit', capture ? 'pipe' : 'inherit'], detached: true });
		let out = '';
		child.stdout?.on('data', (d) => { out += d; });
		child.stderr?.on('data', (d) => { out += d; });
		let timedOut = false;
		const timer = setTimeout(() => {
			timedOut = true;
			// SIGTERM first so the runner can stop what it started (code-server runs in its own process group).
			try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
			setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ } }, 10_000).unref();
		}, timeoutMs);
		child.on('error', (e) => { clearTimeout(timer); resolve({ code: 127, timedOut, out: e.message }); });
		child.on('close', (code, signal) => { clearTimeout(timer); resolve({ code: code ?? (signal ? 128 : 1), signal, timedOut, out }); });
	});
}

function walk(dir, accept) {
	const out = [];
	if (!fs.existsSync(dir)) { return out; }
	for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
		const p = path.join(dir, e.name);
		if (e.isDirectory()) { out.push(...walk(p, accept)); } else if (accept(e.name)) { out.push(p); }
	}
	return out.sort();
}

async function typecheck() {
	const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
	const eslint = path.join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');
	const checks = [
		['tsc', [tsc, '--noEmit', '-p', ROOT], 'type errors'],
		// The import zones of README's layout table and a few mistake-only rules (eslint.config.mjs).
		['eslint', [eslint, '--max-warnings', '0', 'extension', 'media', 'test'], 'lint errors'],
	];
	const s = { passes: 0, failures: 0, pending: 0 };
	const notes = [];
	for (const [name, args, what] of checks) {
		const r = await run(process.execPath, args, { timeoutMs: 5 * 60_000, capture: true });
		if (r.code === 0) { s.passes++; continue; }
		process.stdout.write(r.out);
		s.failures++;
		notes.push(r.timedOut ? `${name} timed out` : what);
		(s.failed ??= []).push({ title: name, error: r.timedOut ? `${name} timed out after 5 min` : r.out });
	}
	if (notes.length > 0) { s.note = notes.join(', '); }
	return s;
}

async function mochaSuite(name, dir, timeoutMs) {
	const files = walk(path.join(ROOT, 'dist', 'test', dir), (n) => n.endsWith('.test.js'));
	if (files.length === 0) {
		return { passes: 0, failures: 1, pending: 0, note: `no test files under dist/test/${dir} (did scripts/build.mjs run?)` };
	}
	fs.mkdirSync(RESULTS, { recursive: true });
	const out = path.join(RESULTS, `${name}.json`);
	fs.rmSync(out, { force: true });
	fs.rmSync(`${out}.tmp`, { force: true });
	const mocha = path.join(ROOT, 'node_modules', 'mocha', 'bin', 'mocha.js');
	const args = [mocha, '--reporter', path.join(ROOT, 'scripts', 'testReporter.cjs'), '--timeout', '60000', '--exit', ...files];
	if (process.env.TEST_FILTER) { args.push('--grep', process.env.TEST_FILTER); }
	const r = await run(process.execPath, args, { env: { GPUMPI_MOCHA_RESULT: out }, timeoutMs });
	let res = null;
	try { res = JSON.parse(fs.readFileSync(out, 'utf8')); } catch { /* crashed before the end */ }
	const why = r.timedOut ? `killed after ${timeoutMs / 60000} min` : `mocha exited ${r.code}${r.signal ? ` (${r.signal})` : ''} before the end of the run`;
	if (!res) { return { passes: 0, failures: 1, pending: 0, note: `suite crashed: ${why}`, failed: [{ title: `${name} suite`, error: why }] }; }
	if (res.complete === false) {
		// Killed or crashed mid-run: the tests that ended keep their results; the one running then counts as failed.
		const where = res.running ? `in "${res.running}"` : 'between tests';
		return {
			passes: res.passes, failures: res.failures + 1, pending: res.pending, note: `suite crashed: ${why} ${where}`,
			failed: [...(res.failed ?? []), { title: res.running ?? `${name} suite`, error: `${why} ${where}` }],
		};
	}
	const s = { passes: res.passes, failures: res.failures, pending: res.pending, failed: (res.failed ?? []).map((f) => ({ title: f.title, error: f.error })) };
	if (r.code !== 0 && s.failures === 0) { s.failures = 1; s.note = `mocha exited ${r.code} although no test failed`; }
	if (s.passes + s.failures === 0 && !process.env.TEST_FILTER) { s.failures = 1; s.note = 'no tests ran'; }
	return s;
}

async function vscodeSuite() {
	if (process.env.GPUMPI_SKIP_VSCODE === '1') { return { skipped: true, passes: 0, failures: 0, pending: 0, note: 'skipped (GPUMPI_SKIP_VSCODE=1)' }; }
	fs.mkdirSync(RESULTS, { recursive: true });
	// Two runners: the extension under development (in-host suite + UI checks), then the .vsix built by
	// `npm run package` installed into a fresh code-server and driven through the same UI checks.
	const runners = [
		{ script: path.join(ROOT, 'test', 'vscode', 'runCodeServer.mjs'), out: path.join(RESULTS, 'vscode.json'), timeoutMs: 25 * 60_000 }, // includes the one-time code-server install (~2-5 min)
		{ script: path.join(ROOT, 'test', 'vscode', 'runVsix.mjs'), out: path.join(RESULTS, 'vscode-vsix.json'), timeoutMs: 20 * 60_000 },
	];
	const s = { passes: 0, failures: 0, pending: 0, failed: [] };
	const notes = [];
	for (const { script, out, timeoutMs } of runners) {
		fs.rmSync(out, { force: true });
		const r = await run(process.execPath, [script, '--result', out], { timeoutMs });
		let res = null;
		try { res = JSON.parse(fs.readFileSync(out, 'utf8')); } catch { /* crashed */ }
		const name = path.basename(script);
		if (!res) { s.failures += 1; notes.push(`${name}: ${r.timedOut ? `killed after ${timeoutMs / 60000} min` : `exited ${r.code} without results`}`); continue; }
		s.passes += res.passes; s.failures += res.failures; s.pending += res.pending ?? 0;
		s.failed.push(...(res.tests ?? []).filter((t) => !t.ok).map((t) => ({ title: `[${t.suite}] ${t.title}`, error: t.error })));
		if (r.code !== 0 && res.failures === 0) { s.failures += 1; notes.push(`${name} exited ${r.code} although no test failed`); }
	}
	if (notes.length > 0) { s.note = notes.join('; '); }
	return s;
}

/**
 * One engine / vscode tier at a time on this machine: both build namespace hosts with the same host names (host-a,
 * host-b: Open MPI keys its session directories in the shared /tmp by host name) and share the CPUs their timeouts
 * assume. A lock directory in the temp dir holds the owner's pid; a dead owner's lock is taken over. Waits at most
 * LOCK_WAIT_MS, then runs anyway and says so (a result under contention is marked by that line).
 */
const LOCK_DIR = path.join(os.tmpdir(), 'gpumpi-test-machine-lock');
const LOCK_WAIT_MS = 60 * 60_000;

function pidAlive(pid) {
	try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; }
}

async function machineLock() {
	const t0 = Date.now();
	let said = false;
	for (;;) {
		try {
			fs.mkdirSync(LOCK_DIR);
			fs.writeFileSync(path.join(LOCK_DIR, 'pid'), String(process.pid));
			if (said) { console.log(`[test] got the machine lock after ${Math.round((Date.now() - t0) / 1000)} s`); }
			const release = () => {
				try { if (fs.readFileSync(path.join(LOCK_DIR, 'pid'), 'utf8') === String(process.pid)) { fs.rmSync(LOCK_DIR, { recursive: true, force: true }); } } catch { /* gone */ }
			};
			process.once('exit', release);
			return release;
		} catch (e) {
			if (e.code !== 'EEXIST') { console.log(`[test] machine lock unavailable (${e.message}); running without it`); return () => {}; }
		}
		let owner = NaN;
		try { owner = Number(fs.readFileSync(path.join(LOCK_DIR, 'pid'), 'utf8')); } catch { /* being written, or left half-made */ }
		let age = 0;
		try { age = Date.now() - fs.statSync(LOCK_DIR).mtimeMs; } catch { continue; }
		if ((Number.isInteger(owner) && owner > 0 && !pidAlive(owner)) || (!Number.isInteger(owner) && age > 10_000)) {
			console.log(`[test] taking over the machine lock of ${Number.isInteger(owner) ? `pid ${owner}, which is gone` : 'a run that never wrote its pid'}`);
			fs.rmSync(LOCK_DIR, { recursive: true, force: true });
			continue;
		}
		if (Date.now() - t0 > LOCK_WAIT_MS) {
			console.log(`[test] another test run (pid ${owner}) still holds ${LOCK_DIR} after ${LOCK_WAIT_MS / 60000} min: running beside it; namespace hosts and timings may collide`);
			return () => {};
		}
		if (!said) { console.log(`[test] another test run on this machine (pid ${owner}) holds ${LOCK_DIR}: waiting for it (engine and vscode tiers share host names and CPUs)`); said = true; }
		await new Promise((r) => setTimeout(r, 2000));
	}
}

async function main() {
	const wanted = process.argv.slice(2);
	const bad = wanted.filter((w) => !SUITES.includes(w));
	if (bad.length > 0) { console.error(`unknown suite(s) ${bad.join(', ')}; known: ${SUITES.join(', ')}`); process.exit(2); }
	const selected = wanted.length > 0 ? wanted : SUITES;
	const results = [];
	const t0 = Date.now();
	try {
		// The per-MPI engines too: the engine suite runs the same program under Open MPI and MPICH.
		await ensure({ allMpis: true, log: (m) => console.log(m) });
	} catch (e) {
		console.error(`[test] setup failed: ${e.message}`);
		console.error('[test] running the suites anyway for information; they may use stale builds, and the run fails.');
		results.push({ name: 'setup', passes: 0, failures: 1, pending: 0, note: e.message.split('\n')[0].slice(0, 200), seconds: (Date.now() - t0) / 1000 });
	}
	const release = selected.some((n) => n === 'engine' || n === 'vscode') ? await machineLock() : () => {};
	{
		for (const name of selected) {
			const s0 = Date.now();
			console.log(`\n=== ${name} ===`);
			let r;
			try {
				if (name === 'typecheck') { r = await typecheck(); }
				else if (name === 'unit') { r = await mochaSuite('unit', 'unit', 15 * 60_000); }
				// engine: ~13 min alone on 2 cores, about twice that with a build beside (docs/reliability.md); the limit
				// catches a hang, it is not a speed target (CI's whole run has 90 min).
				else if (name === 'engine') { r = await mochaSuite('engine', 'engine', 40 * 60_000); }
				else { r = await vscodeSuite(); }
			} catch (e) {
				r = { passes: 0, failures: 1, pending: 0, note: `suite crashed: ${e.message}` };
			}
			r.name = name;
			r.seconds = (Date.now() - s0) / 1000;
			results.push(r);
			console.log(`--- ${name}: ${r.skipped ? 'skipped' : `${r.passes} passed, ${r.failures} failed${r.pending ? `, ${r.pending} pending` : ''}`}${r.note ? ` (${r.note})` : ''} in ${r.seconds.toFixed(1)} s`);
		}
	}
	release();
	const passes = results.reduce((a, r) => a + r.passes, 0);
	const failures = results.reduce((a, r) => a + r.failures, 0);
	console.log('\nSummary');
	for (const r of results) {
		console.log(`  ${r.name.padEnd(10)} ${r.skipped ? 'skipped'.padEnd(22) : `${String(r.passes).padStart(4)} passed ${String(r.failures).padStart(4)} failed`}  ${r.seconds.toFixed(1).padStart(6)} s${r.note ? `  ${r.note}` : ''}`);
	}
	console.log(`  total time ${((Date.now() - t0) / 1000).toFixed(1)} s`);
	// The failures again, last: CI logs keep the head and the tail, so the names must be near the end.
	// A suite may count failures no test name stands for (a runner that crashed before writing results, mocha's
	// exit code, no tests found): its note stands in for them, so every failure counted is listed.
	const failedTests = results.flatMap((r) => {
		const named = (r.failed ?? []).map((f) => ({ suite: r.name, ...f }));
		const unnamed = r.failures - named.length;
		return unnamed > 0 ? [...named, { suite: r.name, title: `${unnamed} failure${unnamed > 1 ? 's' : ''} without a test name`, error: r.note ?? 'see the suite\'s output above' }] : named;
	});
	if (failedTests.length > 0) {
		console.log('\nFailed tests');
		for (const f of failedTests.slice(0, 20)) {
			const lines = String(f.error ?? '').split('\n').filter((l) => l.trim() !== '').slice(0, 4).map((l) => (l.length > 300 ? `${l.slice(0, 300)}…` : l));
			console.log(`  ${f.suite}: ${f.title}${lines.length > 0 ? `\n      ${lines.join('\n      ')}` : ''}`);
		}
		if (failedTests.length > 20) { console.log(`  … and ${failedTests.length - 20} more (.test-work/results/*.json)`); }
	}
	console.log(`${passes} passed, ${failures} failed`);
	process.exitCode = failures > 0 ? 1 : 0;
}

main();
