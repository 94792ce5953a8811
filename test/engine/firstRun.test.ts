/**
 * The README's first command, as a new user runs it: `npm run -s inspect -- --json` goes through scripts/ensure.mjs
 * (npm check, esbuild, native build check) before the CLI, and stdout must still be the report alone — with this
 * host's MPI, and with a PATH that has no MPI program at all (symlinks of /usr/bin without mpi*, ompi*, orte*,
 * hydra*…), where the build step skips the engine and the report says "No MPI found", exit 0.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { noMpiBin } from '../hosts/noMpiBin';

const repo = path.resolve(__dirname, '../../..');

function npmInspect(env: NodeJS.ProcessEnv): { code: number | null; stdout: string; stderr: string } {
	// npm found on the PATH given (the no-MPI folder links /usr/bin/npm); no shell.
	const r = spawnSync('npm', ['run', '-s', 'inspect', '--', '--json'], { cwd: repo, env, encoding: 'utf8', timeout: 600_000, maxBuffer: 256 << 20 });
	return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

type Report = { schema: string; findings: Array<{ id: string; title?: string }>; raw: Array<{ id: string }> };

function parseReport(stdout: string): Report {
	try { return JSON.parse(stdout) as Report; } catch (e) {
		assert.fail(`stdout is not one JSON document (${(e as Error).message}); it starts with ${JSON.stringify(stdout.slice(0, 300))}`);
	}
}

describe('first run: npm run -s inspect -- --json', function () {
	this.timeout(900_000);
	let tmp = '';
	before(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-first-')); });
	after(() => { if (tmp) { fs.rmSync(tmp, { recursive: true, force: true }); } });

	it('with this host\'s MPI: stdout is the report alone (the build step\'s lines are on stderr)', () => {
		const r = npmInspect(process.env);
		assert.equal(r.code, 0, r.stderr.slice(-3000));
		const report = parseReport(r.stdout);
		assert.equal(report.schema, 'gpumpi-doctor.report/1');
		assert.match(r.stderr, /\[ensure\] ready in/, 'the build step said nothing on stderr');
		assert.ok(!report.findings.some(f => f.id === 'mpi-not-found'), 'this host has an MPI');
	});

	it('without any MPI on PATH: the build skips the engine, the report says "No MPI found", exit 0', () => {
		const bin = noMpiBin(tmp);
		// As a user runs it: CI's own build switch (GPUMPI_ALL_MPIS=1, set by .ci/run: "build every MPI's engine") is
		// no part of a user's environment, and with it a missing MPI is an error on purpose.
		const { GPUMPI_ALL_MPIS: _ci, ...userEnv } = process.env;
		const r = npmInspect({ ...userEnv, PATH: bin });
		assert.equal(r.code, 0, r.stderr.slice(-3000));
		assert.match(r.stderr, /\[ensure\] no mpicc on PATH: the engine is not built/);
		assert.doesNotMatch(r.stderr, /prerequisite missing/);
		const report = parseReport(r.stdout);
		assert.ok(report.findings.some(f => f.id === 'mpi-not-found'), `findings: ${report.findings.map(f => f.id).join(', ')}`);
		// The tools that were not there: one finding naming them, not a "Could not fully read" problem each.
		assert.deepEqual(report.findings.filter(f => f.id === 'parse-problem').map(f => f.title), []);
		const absent = report.findings.filter(f => f.id === 'tools-not-installed');
		assert.equal(absent.length, 1, `findings: ${report.findings.map(f => f.id).join(', ')}`);
		assert.match(absent[0].title ?? '', /^Not installed: ompi_info, mpirun, mpichversion, .*the gpumpi engine$/);
	});
});
