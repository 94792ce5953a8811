/**
 * Every `--json` output of the built CLI is one JSON document on stdout and nothing else (progress goes to stderr),
 * and inspect on a machine without MPI gives its report with the "No MPI found" diagnosis and exit 0. Run for real:
 * the PATH without MPI is a folder of symlinks to every /usr/bin program except the MPI ones (mpi*, ompi*, orte*,
 * hydra*, …), as a cluster login node looks before `module load`. The `npm run -s inspect` path (build step first)
 * is in test/engine/firstRun.test.ts.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { noMpiBin } from '../hosts/noMpiBin';

const repo = path.resolve(__dirname, '../../..');
const binJs = path.join(repo, 'bin', 'gpumpi-doctor.js');

function cli(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): { code: number | null; stdout: string; stderr: string } {
	const r = spawnSync(process.execPath, [binJs, ...args], { cwd, env, encoding: 'utf8', timeout: 180_000, maxBuffer: 256 << 20 });
	return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** JSON.parse of the whole stdout; the assertion message shows what came before the JSON when it fails. */
function parseAll(what: string, stdout: string): unknown {
	try { return JSON.parse(stdout); } catch (e) {
		assert.fail(`${what}: stdout is not one JSON document (${(e as Error).message}); it starts with ${JSON.stringify(stdout.slice(0, 200))}`);
	}
}

describe('--json outputs parse, and inspect without MPI diagnoses', function () {
	this.timeout(240_000);
	let tmp = '';
	before(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-json-')); });
	after(() => { if (tmp) { fs.rmSync(tmp, { recursive: true, force: true }); } });

	it('collect then analyze --json: one Report document', () => {
		const dir = path.join(tmp, 'bundle');
		const c = cli(['collect', '--out', dir], tmp);
		assert.equal(c.code, 0, c.stderr);
		const r = cli(['analyze', dir, '--json'], tmp);
		assert.equal(r.code, 0, r.stderr);
		const report = parseAll('analyze --json', r.stdout) as { schema: string; findings: unknown[] };
		assert.equal(report.schema, 'gpumpi-doctor.report/1');
		assert.ok(Array.isArray(report.findings));
	});

	it('repro ipc / fallback --json --from-json and map --json --from-json: one document each', () => {
		const repro = path.join(repo, 'test-fixtures/repro/h200-testbed/repro-2026-12-02.json');
		for (const kind of ['ipc', 'fallback']) {
			const r = cli(['repro', kind, '--json', '--from-json', repro], tmp);
			assert.equal(r.code, 0, `repro ${kind}: ${r.stderr}`);
			const doc = parseAll(`repro ${kind} --json --from-json`, r.stdout);
			assert.equal(typeof doc, 'object');
			assert.notEqual(doc, null);
		}
		const m = cli(['map', '--json', '--from-json', path.join(repo, 'test-fixtures/map/map-4-openmpi-vader.json')], tmp);
		assert.equal(m.code, 0, m.stderr);
		const map = parseAll('map --json --from-json', m.stdout);
		assert.ok(map && typeof map === 'object');
	});

	it('the build steps print nothing on stdout (their progress is on stderr): build.mjs, buildNative.mjs --addon-only', () => {
		for (const args of [['scripts/build.mjs', '--only=panel'], ['scripts/buildNative.mjs', '--addon-only']]) {
			const r = spawnSync(process.execPath, args, { cwd: repo, encoding: 'utf8', timeout: 300_000, maxBuffer: 64 << 20 });
			assert.equal(r.status, 0, `${args.join(' ')}: ${r.stderr.slice(-2000)}`);
			assert.equal(r.stdout, '', `${args.join(' ')} printed on stdout`);
			assert.match(r.stderr, args[0].includes('Native') ? /\[buildNative\] addon:/ : /✔ panel/, `${args.join(' ')}: its progress is not on stderr`);
		}
	});

	it('inspect --json with a PATH that has no MPI: the report comes out, says "No MPI found" with what to load, exit 0', () => {
		const bin = noMpiBin(tmp);
		assert.ok(!fs.existsSync(path.join(bin, 'mpirun')) && fs.existsSync(path.join(bin, 'sh')), 'the no-MPI bin folder is wrong');
		const env = { ...process.env, PATH: bin };
		const r = cli(['inspect', '--json'], tmp, env);
		assert.equal(r.code, 0, r.stderr);
		const report = parseAll('inspect --json without MPI', r.stdout) as {
			findings: Array<{ id: string; severity: string; fix?: { commands?: string[]; text?: string } }>;
			summary: { mpi?: { label?: string } | null };
		};
		const f = report.findings.find(x => x.id === 'mpi-not-found');
		assert.ok(f, `no mpi-not-found finding; findings: ${report.findings.map(x => x.id).join(', ')}`);
		assert.equal(f.severity, 'error');
		assert.match(JSON.stringify(f), /module load/, 'the finding does not say what to load');
		// The text report too: exit 0 and the finding's title.
		const text = cli(['inspect', '--html', path.join(tmp, 'r.html')], tmp, env);
		assert.equal(text.code, 0, text.stderr);
		assert.match(text.stdout, /No MPI found/);
	});
});
