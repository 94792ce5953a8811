/**
 * The CLI boundary of issue 15, as a new user meets it: the four command lines the issue names, run as the real
 * program (`node bin/gpumpi-doctor.js`), each with `--mpirun` a recording script that would note any launch. Each must
 * exit 2 with a message naming the bad value, print nothing on stdout, and launch nothing (no note). The in-process
 * checks of every usage error (no child process at all, test/unit/cli/spawnSpy.ts) and the argv fuzz of inspect,
 * collect, analyze, repro and map are in test/unit/cli/usageErrors.test.ts and argvFuzz.test.ts.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const CLI = path.join(ROOT, 'bin', 'gpumpi-doctor.js');

describe('faults: usage errors of the real CLI exit 2 before anything is launched (issue 15 command lines)', function () {
	this.timeout(60_000);
	let dir = '';
	before(() => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-faults-usage-'));
		fs.writeFileSync(path.join(dir, 'mpirun'), `#!/bin/sh\necho "$@" >> '${dir}/launched'\nexit 0\n`, { mode: 0o755 });
	});
	after(() => { if (dir) { fs.rmSync(dir, { recursive: true, force: true }); } });

	for (const [args, said] of [
		[['repro', 'ipc', '--np', '3'], /--np: repro ipc runs exactly 4 ranks .*got 3/],
		[['repro', 'ipc', '--size', '99999999999999999999'], /--size needs a multiple of 4 bytes .*got "99999999999999999999"/],
		[['repro', 'fallback', '--sizes', '1G..1M'], /--sizes: the range 1G\.\.1M is empty/],
		[['map', '--hosts', 'x:1,y;z:2'], /--hosts: host list "x:1,y;z:2" must look like a:2,b:2 or a,b/],
	] as const) {
		it(`${args.join(' ')}: exit 2, the reason on stderr, nothing on stdout, nothing launched`, () => {
			const r = spawnSync(process.execPath, [CLI, ...args, '--mpirun', path.join(dir, 'mpirun')], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
			assert.equal(r.status, 2, `exit ${r.status}: ${r.stderr}`);
			assert.match(r.stderr, said);
			assert.equal(r.stdout, '');
			assert.equal(fs.existsSync(path.join(dir, 'launched')), false, `launched: ${fs.existsSync(path.join(dir, 'launched')) ? fs.readFileSync(path.join(dir, 'launched'), 'utf8') : ''}`);
		});
	}
});
