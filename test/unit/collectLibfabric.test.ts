/**
 * The collector's fi_info runs (collect/libfabric.ts) through the real process layer (LocalHost, proc.ts) with
 * stand-ins for fi_info on a PATH of their own: one that is not there, one that never answers, one that prints
 * what fi_info never prints. Fakes, said so; the real fi_info runs in test/engine/collect.test.ts. What the user
 * then sees comes from analyze: nothing for a missing tool, libfabric-probe-hung for a hung one, a parse finding
 * for output that is not fi_info's.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { analyze } from '../../extension/core/analyze';
import { collectLibfabric, FI_INFO_RUNS } from '../../extension/core/collect/libfabric';
import { LocalHost } from '../../extension/core/hosts/localHost';

/** A directory holding an executable `fi_info` with this shell body (none: an empty directory). */
function fakeBin(body: string | null): { dir: string; done: () => void } {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-fi-info-'));
	if (body !== null) { fs.writeFileSync(path.join(dir, 'fi_info'), `#!/bin/sh\n${body}\n`, { mode: 0o755 }); }
	return { dir, done: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

describe('collectLibfabric (fi_info stand-ins through the real process layer)', function () {
	this.timeout(30_000);

	it('runs the FI_HMEM query first with FI_LOG_LEVEL=info, then --version and the plain listing', async () => {
		const bin = fakeBin('echo "argv: $*" ; echo "log level: $FI_LOG_LEVEL" >&2');
		try {
			const raw = await collectLibfabric(new LocalHost({ env: { PATH: bin.dir } }), { timeoutMs: 10_000 });
			assert.deepEqual(raw.map((r) => r.id), FI_INFO_RUNS.map((r) => r.id));
			assert.deepEqual(raw.map((r) => r.command.slice(1)), [['-c', 'FI_HMEM'], ['--version'], []]);
			assert.equal(raw[0].command[0], path.join(bin.dir, 'fi_info'), 'the resolved path is recorded');
			assert.equal(raw[0].stderr.trim(), 'log level: info');
			assert.equal(raw[1].stderr.trim(), 'log level:', 'only the FI_HMEM run gets the log level');
			assert.match(raw[0].notes?.[0] ?? '', /FI_LOG_LEVEL=info/);
		} finally { bin.done(); }
	});

	it('not installed: one "not found" per run, and no finding at all about it', async () => {
		const bin = fakeBin(null);
		try {
			const raw = await collectLibfabric(new LocalHost({ env: { PATH: bin.dir } }), { timeoutMs: 10_000 });
			assert.equal(raw.length, 3);
			for (const r of raw) { assert.equal(r.exitCode, null); assert.match(r.error ?? '', /^not found/); }
			const a = analyze(raw, 'x');
			assert.equal(a.facts.libfabric?.hmemRun.state, 'not installed');
			assert.deepEqual(a.findings.filter((f) => /fi_info|libfabric/.test(`${f.id} ${f.message}`)), []);
		} finally { bin.done(); }
	});

	it('hung: stopped at the timeout, the other two not started, and the finding says what a hang there means', async () => {
		const bin = fakeBin('PATH=/usr/bin:/bin exec sleep 30');
		const t0 = Date.now();
		try {
			const raw = await collectLibfabric(new LocalHost({ env: { PATH: bin.dir } }), { timeoutMs: 700 });
			assert.ok(Date.now() - t0 < 10_000, `one timeout, not three (${Date.now() - t0} ms)`);
			assert.equal(raw[0].timedOut, true);
			assert.match(raw[1].error ?? '', /^skipped: .*fi_info -c FI_HMEM timed out$/);
			assert.match(raw[2].error ?? '', /^skipped: /);
			const a = analyze(raw, 'x');
			const hung = a.findings.filter((f) => f.id === 'libfabric-probe-hung');
			assert.equal(hung.length, 1);
			assert.match(hung[0].message, /^fi_info -c FI_HMEM did not finish \(timed out after/);
			assert.equal(a.findings.filter((f) => f.id === 'parse-problem').length, 0, 'the skipped runs are no parse problem');
		} finally { bin.done(); }
	});

	it('malformed output: a parse finding that names the run and says what is not known', async () => {
		const bin = fakeBin('echo "libfabric: broken install, cannot find providers"');
		try {
			const a = analyze(await collectLibfabric(new LocalHost({ env: { PATH: bin.dir } }), { timeoutMs: 10_000 }), 'x');
			const p = a.findings.filter((f) => f.id === 'parse-problem').map((f) => f.message);
			assert.equal(p.length, 3, p.join('\n'));
			assert.match(p.find((m) => m.includes('-c FI_HMEM')) ?? '', / -c FI_HMEM: its output is not in fi_info's format \(no "provider: <name>" line\); which libfabric providers exist and which accept GPU memory is not known\.$/);
			assert.match(p.find((m) => m.includes('--version')) ?? '', /--version: no "libfabric: <version>" line in its output; the libfabric version is unknown\.$/);
			assert.equal(a.facts.libfabric?.version, null);
			assert.equal(a.facts.libfabric?.hmemProviders, null);
		} finally { bin.done(); }
	});
});
