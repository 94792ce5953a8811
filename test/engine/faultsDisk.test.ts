/**
 * A bundle (`collect --out`) written to a full disk (issue 15), real: a 4 MiB tmpfs mounted by the test (root only;
 * skipped otherwise), an earlier bundle written there by a real `collect`, the rest filled but ~300 KiB (less than a
 * bundle of this host, ~730 KiB, so the write fails part-way, after some files), then the real CLI's `collect` (a real
 * inspection of this host) into the same directory and into a new one. Asserted: exit 3 with the path and ENOSPC
 * named; the earlier bundle byte-for-byte intact and still analysable; no partial bundle under the final name and no
 * staging directory left.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { filesOf } from './cliProcess';
import { cli } from './faultHelpers';

describe('faults: collect --out on a full disk (a real tmpfs)', function () {
	this.timeout(60_000);
	let dir = '';
	let mnt = '';
	before(function () {
		if (process.getuid?.() !== 0) { this.skip(); }
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-faults-disk-'));
		mnt = path.join(dir, 'small');
		fs.mkdirSync(mnt);
		const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt], { encoding: 'utf8' });
		if (m.status !== 0) { fs.rmSync(dir, { recursive: true, force: true }); dir = ''; this.skip(); }
	});
	after(() => {
		if (!dir) { return; }
		spawnSync('umount', [mnt]);
		fs.rmSync(dir, { recursive: true, force: true });
	});

	it('the earlier bundle intact, no partial bundle or staging directory, exit 3 naming the path and ENOSPC', async () => {
		const bundle = path.join(mnt, 'bundle');
		const first = await cli(['collect', '--out', bundle], dir);
		assert.equal(first.code, 0, first.err);
		const before = filesOf(bundle);
		const size = Object.values(before).reduce((n, t) => n + Buffer.byteLength(t), 0);
		// Fill the tmpfs, then give back ~300 KiB: room for part of a bundle, not all of it.
		const fillerPath = path.join(mnt, 'filler');
		const filler = fs.openSync(fillerPath, 'w');
		let filled = 0;
		try { for (;;) { fs.writeSync(filler, Buffer.alloc(65536, 1)); filled += 65536; } } catch (e) { assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC'); }
		try { for (;;) { fs.writeSync(filler, Buffer.alloc(4096, 1)); filled += 4096; } } catch { /* full to the page */ }
		fs.ftruncateSync(filler, Math.max(0, filled - 300 * 1024));
		fs.closeSync(filler);
		assert.ok(size > 400 * 1024, `a bundle of this host is only ${size} bytes: the write would not fail part-way`);

		const again = await cli(['collect', '--out', bundle], dir);
		console.log(`  [full disk, bundle] earlier bundle ${size} bytes; exit ${again.code}; stderr: ${again.err.trim().slice(0, 300)}`);
		assert.equal(again.code, 3, again.err);
		assert.match(again.err, new RegExp(`cannot write the bundle ${bundle.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: ENOSPC`));
		assert.deepEqual(filesOf(bundle), before, 'the earlier bundle was changed');
		assert.deepEqual(fs.readdirSync(mnt).sort(), ['bundle', 'filler'], 'a staging directory or partial bundle was left');
		const analyzed = await cli(['analyze', bundle, '--json'], dir);
		assert.equal(analyzed.code, 0, analyzed.err);

		const fresh = path.join(mnt, 'fresh');
		const none = await cli(['collect', '--out', fresh], dir);
		assert.equal(none.code, 3, none.err);
		assert.match(none.err, /cannot write the bundle .*fresh: ENOSPC/);
		assert.equal(fs.existsSync(fresh), false, 'a partial bundle was left under the new name');
		assert.deepEqual(fs.readdirSync(mnt).sort(), ['bundle', 'filler'], 'a staging directory was left');
	});
});
