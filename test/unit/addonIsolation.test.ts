/**
 * The addon probe runs in a child process so that a crash or hang there (seen once in about ten fresh processes
 * under load: SIGSEGV after dlopen of UCX, docs/benchmarks.md) becomes an error in the report, not a dead
 * extension host. The real crash cannot be produced on demand, so these tests stand a small JavaScript module in for
 * the addon (via $GPUMPI_ADDON, which the loader tries first) that kills itself or never answers: fakes, said so.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { addonProbe } from '../../extension/core/inspect';

/** A fake addon module in a scratch directory of its own (removed by restore; a fake may keep files there, __dirname). */
function withAddon(source: string): { file: string; restore: () => void } {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-addon-'));
	const file = path.join(dir, 'fake_addon.js');
	fs.writeFileSync(file, source);
	const before = process.env.GPUMPI_ADDON;
	process.env.GPUMPI_ADDON = file;
	return {
		file,
		restore: () => {
			if (before === undefined) { delete process.env.GPUMPI_ADDON; } else { process.env.GPUMPI_ADDON = before; }
			fs.rmSync(dir, { recursive: true, force: true });
		},
	};
}

describe('addon probe isolation (child process)', function () {
	this.timeout(30_000);

	it('the real addon answers through the child with the libraries of this host', async () => {
		const outcome = await addonProbe();
		assert.ok('result' in outcome, 'error' in outcome ? outcome.error : '');
		assert.ok(outcome.result.libraries.some(l => l.soname === 'libmpi.so.40' && l.loaded));
	});

	it('a probe that crashes (SIGSEGV) is an error naming the signal, and this process lives on', async () => {
		const fake = withAddon("process.kill(process.pid, 'SIGSEGV');");
		try {
			const outcome = await addonProbe();
			assert.ok('error' in outcome);
			assert.match(outcome.error, /SIGSEGV/);
			assert.ok(outcome.tried.includes(fake.file));
		} finally { fake.restore(); }
	});

	it('a probe that never answers is killed at the timeout', async () => {
		const fake = withAddon('module.exports = { version: () => "x", probe: () => new Promise(() => setInterval(() => {}, 1000)) };');
		try {
			const t0 = Date.now();
			const outcome = await addonProbe(1500);
			assert.ok('error' in outcome);
			assert.match(outcome.error, /timed out/);
			assert.ok(Date.now() - t0 < 10_000);
		} finally { fake.restore(); }
	});

	it('a probe that rejects passes its message on', async () => {
		const fake = withAddon('module.exports = { version: () => "x", probe: () => Promise.reject(new Error("dlopen exploded")) };');
		try {
			const outcome = await addonProbe();
			assert.ok('error' in outcome);
			assert.match(outcome.error, /dlopen exploded/);
		} finally { fake.restore(); }
	});
	// Fake: the real crash (SIGSEGV in v8::Isolate::Deinit, after the probe had answered; unit suite 2026-12-03)
	// cannot be produced on demand; this module prints a complete result and then kills its process.
	it('a complete result printed before the process dies is kept, with the crash named beside it', async () => {
		const fake = withAddon(`module.exports = { version: () => "x", probe: () => {
			const write = process.stdout.write.bind(process.stdout);
			process.stdout.write = (d) => write(d, () => process.kill(process.pid, 'SIGSEGV'));
			return Promise.resolve({ libraries: [{ soname: 'libfake.so.1', loaded: true }] });
		} };`);
		try {
			const outcome = await addonProbe();
			assert.ok('result' in outcome, 'error' in outcome ? outcome.error : '');
			assert.equal(outcome.result.libraries[0]?.soname, 'libfake.so.1');
			assert.match(outcome.note ?? '', /killed by SIGSEGV after it had printed this complete result/);
		} finally { fake.restore(); }
	});

	it('a result cut off by the crash is an error, not a result', async () => {
		const fake = withAddon(`module.exports = { version: () => "x", probe: () => {
			process.stdout.write('{"libraries":[{"soname":"libfa', () => process.kill(process.pid, 'SIGSEGV'));
			return new Promise(() => {});
		} };`);
		try {
			const outcome = await addonProbe();
			assert.ok('error' in outcome);
			assert.match(outcome.error, /killed by SIGSEGV/);
		} finally { fake.restore(); }
	});

	// Fake: the real crash (2026-12-06 in CI: SIGSEGV in a Node threadpool thread during the probe) cannot be produced
	// on demand; this module crashes its first process (a marker file tells it which) and answers in the second.
	it('a probe process killed before it printed anything is run once more; the first crash is named in the note', async () => {
		const fake = withAddon(`const fs = require('fs'); const marker = require('path').join(__dirname, 'first-ran'); module.exports = { version: () => "x", probe: () => {
			if (!fs.existsSync(marker)) { fs.writeFileSync(marker, ''); process.stderr.write('Caught signal 11 (fake)'); process.kill(process.pid, 'SIGSEGV'); }
			return Promise.resolve({ libraries: [{ soname: 'libsecond.so.1', loaded: true }] });
		} };`);
		try {
			const outcome = await addonProbe();
			assert.ok('result' in outcome, 'error' in outcome ? outcome.error : '');
			assert.equal(outcome.result.libraries[0]?.soname, 'libsecond.so.1');
			assert.match(outcome.note ?? '', /^a first probe process was killed by SIGSEGV before it printed a result: Caught signal 11 \(fake\); this result is from a second process$/);
		} finally { fake.restore(); }
	});

	it('a probe that crashes in both processes is an error naming both crashes, tried no more than twice', async () => {
		const fake = withAddon(`const fs = require('fs'); module.exports = { version: () => "x", probe: () => {
			fs.appendFileSync(require('path').join(__dirname, 'runs'), 'x'); process.kill(process.pid, 'SIGSEGV'); return new Promise(() => {});
		} };`);
		const count = path.join(path.dirname(fake.file), 'runs');
		try {
			const outcome = await addonProbe();
			assert.ok('error' in outcome);
			assert.match(outcome.error, /^a first probe process was killed by SIGSEGV before it printed a result; the second addon probe \(.*\) failed: killed by SIGSEGV/);
			assert.equal(fs.readFileSync(count, 'utf8'), 'xx');
		} finally { fake.restore(); }
	});

	it('a probe that exits with an error code (no signal) is not retried', async () => {
		const fake = withAddon(`const fs = require('fs'); module.exports = { version: () => "x", probe: () => {
			fs.appendFileSync(require('path').join(__dirname, 'runs'), 'x'); process.exit(5);
		} };`);
		const count = path.join(path.dirname(fake.file), 'runs');
		try {
			const outcome = await addonProbe();
			assert.ok('error' in outcome);
			assert.match(outcome.error, /failed: exit code 5/);
			assert.equal(fs.readFileSync(count, 'utf8'), 'x');
		} finally { fake.restore(); }
	});
});
