#!/usr/bin/env node
// Run time of the transport map's schedules at the largest size CI runs (test/engine/mapScale.test.ts): rounds of
// concurrent pairs against one pair at a time, on the Slurm lab of the engine tier (test/hosts/slurmLab.ts: compute
// hosts as network namespaces on this machine, srun, Open MPI), through the real CLI (`gpumpi-doctor map --json`).
// Writes its section of docs/benchmarks.md between the map-schedule markers (scripts/bench.mjs keeps the section when
// it rewrites the file). Needs root (namespaces, Slurm) and the Open MPI engine (node scripts/buildNative.mjs
// --engine-only --all-mpis). Takes the engine tier's machine lock (the lab's host names and the CPUs are shared).
// Usage: node scripts/benchMapSchedule.mjs [--runs 3]
import { build } from 'esbuild';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { replaceSection } from './benchSections.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const runsArg = process.argv.indexOf('--runs');
const RUNS = runsArg > 0 ? Math.max(1, Number(process.argv[runsArg + 1]) || 3) : 3;
const BEGIN = '<!-- map-schedule:begin (scripts/benchMapSchedule.mjs writes this section) -->';
const END = '<!-- map-schedule:end -->';
const LOCK_DIR = path.join(os.tmpdir(), 'gpumpi-test-machine-lock');

/** The engine tier's lock (scripts/test.mjs): one lab at a time on this machine. */
async function machineLock() {
	for (let said = false; ;) {
		try {
			fs.mkdirSync(LOCK_DIR);
			fs.writeFileSync(path.join(LOCK_DIR, 'pid'), String(process.pid));
			const release = () => { try { if (fs.readFileSync(path.join(LOCK_DIR, 'pid'), 'utf8') === String(process.pid)) { fs.rmSync(LOCK_DIR, { recursive: true, force: true }); } } catch { /* gone */ } };
			process.once('exit', release);
			return release;
		} catch (e) {
			if (e.code !== 'EEXIST') { throw e; }
		}
		let owner = NaN;
		try { owner = Number(fs.readFileSync(path.join(LOCK_DIR, 'pid'), 'utf8')); } catch { /* being written */ }
		let alive = false;
		try { process.kill(owner, 0); alive = true; } catch { /* gone */ }
		if (Number.isInteger(owner) && !alive) { fs.rmSync(LOCK_DIR, { recursive: true, force: true }); continue; }
		if (!said) { console.error(`waiting for the machine lock (pid ${owner})`); said = true; }
		await new Promise(r => setTimeout(r, 2000));
	}
}

/** The lab fixture and the CLI, bundled from source (they are TypeScript; the test bundles hold them privately). */
async function load() {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'benchmapsched-'));
	const entry = path.join(dir, 'entry.ts');
	fs.writeFileSync(entry, [
		`export { createSlurmLab, slurmUnavailable } from ${JSON.stringify(path.join(root, 'test/hosts/slurmLab'))};`,
		`export { main } from ${JSON.stringify(path.join(root, 'extension/cli/gpumpiDoctor'))};`,
		`export { findEngine } from ${JSON.stringify(path.join(root, 'extension/core/native'))};`, ''].join('\n'));
	const outfile = path.join(dir, 'bundle.cjs');
	await build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'cjs', outfile, external: ['*.node'], loader: { '.css': 'text' }, logLevel: 'error' });
	const mod = createRequire(import.meta.url)(outfile);
	fs.rmSync(dir, { recursive: true, force: true });
	return mod;
}

const median = a => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

const { createSlurmLab, slurmUnavailable, main, findEngine } = await load();
const why = slurmUnavailable();
if (why) { console.error(`the Slurm lab cannot run here: ${why}`); process.exit(2); }
const engine = findEngine('openmpi', {}).path;
if (!engine) { console.error('the Open MPI engine is not built: node scripts/buildNative.mjs --engine-only --all-mpis'); process.exit(2); }
const release = await machineLock();
const HOSTS = 8;
const lab = await createSlurmLab({ computeHosts: HOSTS });
const rows = [];
try {
	const cli = async args => {
		let out = '';
		let err = '';
		const code = await main(args, { stdout: t => { out += t; }, stderr: t => { err += t; }, cwd: lab.dir, signal: new AbortController().signal });
		if (code !== 0) { throw new Error(`gpumpi-doctor ${args.join(' ')} exited ${code}:\n${err.slice(-2000)}`); }
		return JSON.parse(out);
	};
	const base = ['map', '--host', lab.controller, '--ssh-config', lab.lab.sshConfig, '--mpirun', 'mpirun.openmpi', '--engine', engine,
		'--srun', '--srun-arg', `-N${HOSTS}`, '--srun-arg', '--overcommit', '--memory', 'host', '--json', '--timeout', '1200'];
	// The engine tier's two lab maps, with its sizes (test/engine/mapScale.test.ts).
	const configs = [
		{ label: `${HOSTS} ranks, one per host, all pairs, 1 MiB × 5`, args: ['--np', String(HOSTS), '--pairs', 'all', '--large', '1M', '--iters', '5'] },
		{ label: `${HOSTS * 4} ranks, 4 per host, sampled, 64 KiB × 2 (the engine tier's largest map)`, args: ['--np', String(HOSTS * 4), '--pairs', 'sampled', '--large', '64K', '--iters', '2'] },
	];
	for (const c of configs) {
		for (const schedule of ['sequential', 'rounds']) {
			const elapsed = [];
			const wall = [];
			const failed = [];
			let doc;
			// A failed run is counted and said, not retried into a better number.
			for (let i = 0; i < RUNS + 3 && elapsed.length < RUNS; i++) {
				try {
					const d = await cli([...base, ...c.args, '--schedule', schedule]);
					if (d.partial) { throw new Error(`partial map: ${d.partial.reason}`); }
					doc = d;
				} catch (e) {
					const why = String(e.message).split('\n').find(l => /crashed|Segmentation|partial map|no map/.test(l)) ?? String(e.message).split('\n')[0];
					failed.push(why.replace(/^gpumpi-doctor map: /, '').slice(0, 240));
					console.error(`${c.label}, ${schedule}: FAILED: ${failed[failed.length - 1]}`);
					continue;
				}
				elapsed.push(doc.elapsed_s);
				wall.push(doc.runner.durationMs / 1000);
				console.error(`${c.label}, ${schedule}: ${doc.elapsed_s.toFixed(2)} s measuring, ${(doc.runner.durationMs / 1000).toFixed(1)} s in all`);
			}
			if (!doc) { throw new Error(`${c.label}, ${schedule}: every run failed: ${failed.join(' | ')}`); }
			rows.push({ label: c.label, schedule, pairs: doc.pairs.length, rounds: doc.schedule.rounds, concurrent: doc.schedule.max_concurrent_pairs, elapsed, wall, failed, ok: doc.pairs.filter(p => p.status === 'ok').length });
		}
	}
} finally {
	lab.teardown();
	release();
}

const f = v => v.toFixed(v < 10 ? 2 : 1);
const lines = [BEGIN, '## Transport map: rounds against one pair at a time', '',
	`Measured ${new Date().toISOString().replace(/\.\d+Z$/, 'Z')} by \`node scripts/benchMapSchedule.mjs\` (${RUNS} runs each, median; min – max) on ${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'},`,
	`load average ${os.loadavg()[0].toFixed(1)} at the end: the Slurm lab of the engine tier (test/hosts/slurmLab.ts), ${HOSTS} compute hosts as network`,
	'namespaces on this machine, `gpumpi-doctor map --srun` (Open MPI 4.1.4 under srun --mpi=pmix; tcp between hosts, vader',
	'within one), host memory, 8 B latency messages and the bandwidth size of each row, every message checked.',
	'"Measuring" is the engine\'s `elapsed_s` (the rounds, start-up excluded); "whole run" is the runner\'s, srun and MPI start-up included.', '',
	'| map | schedule | pairs | rounds | pairs at once | measuring (s) | whole run (s) | pairs ok | runs failed |', '|---|---|---:|---:|---:|---:|---:|---:|---:|'];
for (const r of rows) {
	lines.push(`| ${r.label} | ${r.schedule} | ${r.pairs} | ${r.rounds} | ${r.concurrent} | **${f(median(r.elapsed))}** (${f(Math.min(...r.elapsed))} – ${f(Math.max(...r.elapsed))}) | ${f(median(r.wall))} (${f(Math.min(...r.wall))} – ${f(Math.max(...r.wall))}) | ${r.ok} | ${r.failed.length} of ${r.failed.length + r.elapsed.length} |`);
}
lines.push('');
for (const r of rows.filter(x => x.failed.length > 0)) { lines.push(`- Failed runs of "${r.label}, ${r.schedule}": ${r.failed.map(x => `\`${x}\``).join('; ')}.`); }
for (let i = 0; i + 1 < rows.length; i += 2) {
	const [seq, rnd] = [rows[i], rows[i + 1]];
	lines.push(`- ${seq.label}: rounds measure in ${f(median(rnd.elapsed))} s what one pair at a time measures in ${f(median(seq.elapsed))} s (${(median(seq.elapsed) / median(rnd.elapsed)).toFixed(1)}× faster; ${seq.rounds} steps against ${rnd.rounds} rounds).`);
}
lines.push('- This machine has 2 cores for all ranks: the pairs of a round share them (the ranks nap between polls, `schedule.wait`), so a',
	'  round takes longer than one pair alone would; on a cluster each rank has its own core and a round costs about one pair.', END);
const file = path.join(root, 'docs', 'benchmarks.md');
const text = fs.readFileSync(file, 'utf8');
const section = lines.join('\n');
fs.writeFileSync(file, replaceSection(text, BEGIN, END, section));
console.log(section);
