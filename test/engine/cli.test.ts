/**
 * The built CLI (dist/cli.js, via bin/gpumpi-doctor.js) run for real on this machine: JSON report, text report +
 * default HTML file, --html, usage errors (exit 2) and report-writing failure (exit 3).
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const repo = path.resolve(__dirname, '../../..');
const cliJs = path.join(repo, 'dist', 'cli.js');
const binJs = path.join(repo, 'bin', 'gpumpi-doctor.js');

function runCli(args: string[], cwd: string, script = cliJs): { code: number | null; stdout: string; stderr: string } {
	const r = spawnSync(process.execPath, [script, ...args], { cwd, encoding: 'utf8', timeout: 120_000, maxBuffer: 256 * 1024 * 1024 });
	return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('gpumpi-doctor CLI (built)', function () {
	this.timeout(180_000);
	let cwd = '';

	before(function () {
		if (!fs.existsSync(cliJs)) { throw new Error(`${cliJs} is missing: run node scripts/build.mjs first`); }
		cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-cli-'));
	});
	after(() => { if (cwd) { fs.rmSync(cwd, { recursive: true, force: true }); } });

	it('inspect --json prints one parseable Report and writes no HTML', () => {
		const r = runCli(['inspect', '--json', '--timeout', '60'], cwd);
		assert.equal(r.code, 0, r.stderr);
		const report = JSON.parse(r.stdout) as { schema: string; tool: { name: string }; raw: { id: string; exitCode: number | null }[]; findings: unknown[]; summary: { hostname: string } };
		assert.equal(report.schema, 'gpumpi-doctor.report/1');
		assert.equal(report.tool.name, 'gpumpi-doctor');
		assert.equal(report.summary.hostname, os.hostname());
		assert.ok(Array.isArray(report.findings));
		const ids = report.raw.map(x => x.id);
		for (const id of ['ompi_info', 'mpirun_version', 'ucx_info_v', 'env', 'which', 'identity', 'probe', 'engine']) {
			assert.ok(ids.includes(id), `raw ${id}`);
		}
		assert.equal(report.raw.find(x => x.id === 'ompi_info')?.exitCode, 0);
		assert.ok(!fs.existsSync(path.join(cwd, 'gpumpi-report.html')));
	});

	it('inspect (text) prints summary and findings and writes gpumpi-report.html in cwd', () => {
		const r = runCli(['inspect'], cwd, binJs);
		assert.equal(r.code, 0, r.stderr);
		assert.match(r.stdout, /^GPU-MPI Doctor .* — host /);
		assert.match(r.stdout, /^ {2}MPI {10}/m);
		assert.match(r.stdout, /^FINDINGS \(\d+ error, \d+ warning, \d+ info\)$/m);
		assert.match(r.stdout, /^RAW OUTPUTS$/m);
		const file = path.join(cwd, 'gpumpi-report.html');
		assert.ok(r.stdout.includes(`HTML report: ${file}`));
		assert.ok(fs.existsSync(file));
	});

	it('--html FILE writes a standalone document with a CSP meta and no script', () => {
		const file = path.join(cwd, 'sub dir', 'r.html');
		fs.mkdirSync(path.dirname(file), { recursive: true });
		const r = runCli(['inspect', '--json', '--html', file], cwd);
		assert.equal(r.code, 0, r.stderr);
		JSON.parse(r.stdout);
		const html = fs.readFileSync(file, 'utf8');
		assert.match(html, /^<!DOCTYPE html>/);
		assert.match(html, /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">/);
		assert.ok(!/<script/i.test(html));
		assert.match(html, /<section id="findings"/);
		assert.match(html, /data-raw-id="ompi_info"/);
	});

	it('usage errors exit 2 with a message', () => {
		const cases: [string[], RegExp][] = [
			[['inspect', '--ranks', 'abc'], /--ranks needs an integer 1\.\.1024, got "abc"/],
			[['inspect', '--ranks', '0'], /--ranks needs an integer 1\.\.1024, got "0"/],
			[['inspect', '--timeout', '99999'], /--timeout needs a number 1\.\.3600, got "99999"/],
			[['inspect', '--bogus'], /unknown option "--bogus"/],
			[['inspect', '--rank', '2'], /unknown option "--rank" \(did you mean --ranks\?\)/],
			[['inspect', 'extra'], /unexpected argument "extra"/],
			[['frobnicate'], /unknown command "frobnicate"/],
		];
		for (const [args, re] of cases) {
			const r = runCli(args, cwd);
			assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
			assert.match(r.stderr, re);
			assert.equal(r.stdout, '');
		}
		assert.equal(runCli([], cwd).code, 2);
	});

	it('--help and --version exit 0', () => {
		const h = runCli(['--help'], cwd);
		assert.equal(h.code, 0);
		assert.match(h.stdout, /inspect/);
		assert.match(h.stdout, /Exit codes/);
		assert.match(h.stdout, /^  repro /m, 'the subcommand table lists repro');
		assert.equal(runCli(['inspect', '--help'], cwd).code, 0);
		assert.match(runCli(['--version'], cwd).stdout, /^\d+\.\d+\.\d+\n$/);
	});

	it('a report that cannot be written exits 3', () => {
		const r = runCli(['inspect', '--json', '--html', '/nonexistent-dir-gpumpi/r.html', '--timeout', '30'], cwd);
		assert.equal(r.code, 3);
		assert.match(r.stderr, /cannot write the HTML report/);
	});
});
