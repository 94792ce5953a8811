#!/usr/bin/env node
// gpumpi-guard overhead on host buffers (docs/guard.md "Overhead"): `guard_demo --bench` under each MPI flavour built
// here (native/build/engine-openmpi, engine-mpich), the guard preloaded; each run compares, in one process, an 8-byte
// ping-pong through MPI_* (through the guard) with PMPI_* (around it), and MPI_Send to MPI_PROC_NULL with PMPI_Send.
// Medians over N runs (each run is itself the median of 31 alternating batches). Used by scripts/bench.mjs; alone:
//   node scripts/benchGuard.mjs [--runs N]      prints the rows and a JSON line on stdout
// argv arrays only, no shell.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const GUARD_TARGET_NS = 100;

const FLAVORS = [
	{ flavor: 'openmpi', label: 'Open MPI', launch: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo'], env: (k, v) => ['-x', `${k}=${v}`] },
	{ flavor: 'mpich', label: 'MPICH', launch: ['mpirun.mpich'], env: (k, v) => ['-env', k, v] },
];

function runOnce(argv, cwd, timeoutMs = 120_000) {
	return new Promise((resolve) => {
		const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, UCX_NET_DEVICES: 'lo' } });
		let out = ''; let err = '';
		child.stdout.on('data', (d) => { out += d; });
		child.stderr.on('data', (d) => { err += d; });
		const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
		child.on('error', (e) => { clearTimeout(timer); resolve({ code: 127, out, err: e.message }); });
		child.on('close', (code) => { clearTimeout(timer); resolve({ code, out, err }); });
	});
}

const median = (xs) => {
	const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
	if (v.length === 0) { return NaN; }
	const m = Math.floor(v.length / 2);
	return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};

/** Per flavour: { label, procNull: ns[], pingpongPerCall: ns[], roundTripPlain: ns[], failures: string[] }. */
export async function benchGuard(runs, log = console.error) {
	const results = [];
	for (const f of FLAVORS) {
		const dir = path.join(ROOT, 'native', 'build', `engine-${f.flavor}`);
		const guard = path.join(dir, 'libgpumpi_guard.so');
		const demo = path.join(dir, 'examples', 'guard_demo');
		if (!fs.existsSync(guard) || !fs.existsSync(demo)) { log(`benchGuard: ${f.flavor} not built (node scripts/ensure.mjs --all-mpis): skipped`); continue; }
		const work = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-bench-guard-'));
		const r = { label: f.label, procNull: [], pingpongPerCall: [], roundTripPlain: [], failures: [] };
		try {
			for (let i = 0; i < runs; i++) {
				const argv = [...f.launch, ...f.env('LD_PRELOAD', guard), ...f.env('GPUMPI_GUARD_DIR', work), '-np', '2', demo, '--bench', '--iters', '2000'];
				const res = await runOnce(argv, work);
				const line = res.out.split('\n').find((l) => l.startsWith('{"bench"'));
				if (res.code !== 0 || !line) { r.failures.push(`exit ${res.code}: ${res.err.trim().split('\n').pop() ?? ''}`); continue; }
				const b = JSON.parse(line);
				r.procNull.push(b.procNullSend.addedNsPerCall);
				r.pingpongPerCall.push(b.pingpong.addedNsPerCall);
				r.roundTripPlain.push(b.pingpong.plainNsPerRoundTrip);
				log(`  guard ${f.flavor} run ${i + 1}: +${b.procNullSend.addedNsPerCall} ns per MPI_PROC_NULL send, +${b.pingpong.addedNsPerRoundTrip} ns per round trip`);
			}
		} finally {
			fs.rmSync(work, { recursive: true, force: true });
		}
		results.push(r);
	}
	return results;
}

const fmt = (x) => (Number.isFinite(x) ? x.toFixed(1) : 'n/a');

/** Markdown lines for docs/benchmarks.md. */
export function guardRows(results, runs) {
	const lines = ['', `gpumpi-guard overhead on host buffers (\`guard_demo --bench\`, guard preloaded, median of ${runs} runs; docs/guard.md):`, '',
		'| MPI | added per call, `MPI_Send` to `MPI_PROC_NULL` (ns) | added per call, 8-byte ping-pong (ns; round trip / 4) | plain round trip (ns) | Target |',
		'|---|---:|---:|---:|---|'];
	for (const r of results) {
		const m = median(r.procNull);
		const verdict = Number.isFinite(m) ? (m < GUARD_TARGET_NS ? `✅ < ${GUARD_TARGET_NS} ns` : `❌ ≥ ${GUARD_TARGET_NS} ns`) : '';
		lines.push(`| ${r.label} | **${fmt(m)}** (${fmt(Math.min(...r.procNull))} – ${fmt(Math.max(...r.procNull))}) | ${fmt(median(r.pingpongPerCall))} | ${fmt(median(r.roundTripPlain))} | ${verdict} |`);
		if (r.failures.length > 0) { lines.push('', `**${r.label}: ${r.failures.length} of ${runs} runs failed** (${r.failures.join('; ')}).`); }
	}
	return lines;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
	const i = process.argv.indexOf('--runs');
	const runs = i > 0 ? Number(process.argv[i + 1]) : 3;
	if (!Number.isInteger(runs) || runs < 1 || runs > 50) { console.error('usage: node scripts/benchGuard.mjs [--runs N (1-50)]'); process.exit(2); }
	const results = await benchGuard(runs);
	process.stdout.write(`${guardRows(results, runs).join('\n')}\n${JSON.stringify(results)}\n`);
	process.exit(results.some((r) => r.failures.length > 0) ? 1 : 0);
}
