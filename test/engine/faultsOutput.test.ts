/**
 * Faults on the way out (issue 15), all real: the engine's stdout a pipe whose reader has exited; the disk where a
 * result file is written full (a 64 KiB tmpfs mounted by the test: needs root, skipped otherwise); Ctrl-C (SIGINT) of
 * the real CLI process (`node bin/gpumpi-doctor.js map …`) while its ranks run.
 */
import * as assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { findEngine } from '../../extension/core/native';
import { cli, leftOver, waitForRanks } from './faultHelpers';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MAP_FIXTURE = path.join(ROOT, 'test-fixtures', 'map', 'map-4-openmpi-vader.json');

describe('faults on the way out: closed stdout, full disk, Ctrl-C of the CLI', function () {
	this.timeout(60_000);
	let dir = '';
	before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-faults-out-')); });
	after(() => { if (dir) { fs.rmSync(dir, { recursive: true, force: true }); } });

	for (const flavor of ['openmpi', 'mpich'] as const) {
		it(`engine (${flavor}) with stdout a pipe whose reader has exited: no hang, a write error on stderr, exit 1 (not a silent SIGPIPE death)`, async () => {
			const engine = findEngine(flavor, {}).path;
			assert.ok(engine, `engine '${flavor}' not built`);
			const child = spawn(engine, ['inspect'], { stdio: ['ignore', 'pipe', 'pipe'] });
			child.stdout.destroy(); // the reader is gone before the engine writes its document
			let err = '';
			child.stderr.on('data', d => { err += d; });
			const started = Date.now();
			const { code, signal } = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(res => child.on('close', (c, s) => res({ code: c, signal: s })));
			assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
			assert.equal(signal, null, `killed by ${signal} with nothing said`);
			assert.equal(code, 1, err);
			assert.match(err, /writing stdout: Broken pipe/);
		});
	}

	it('map --out on a full disk: exit 3 with ENOSPC named, the earlier map at that path intact, no temporary or truncated file left', function () {
		if (process.getuid?.() !== 0) { this.skip(); }
		const mnt = path.join(dir, 'small');
		fs.mkdirSync(mnt);
		const m = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt], { encoding: 'utf8' });
		if (m.status !== 0) { this.skip(); }
		return (async () => {
			try {
				const earlier = '{"schema":"gpumpi.map/1","earlier":true}\n';
				fs.writeFileSync(path.join(mnt, 'map.json'), earlier);
				// Fill what is left (a tmpfs refuses the write with ENOSPC once its pages are used).
				const filler = fs.openSync(path.join(mnt, 'filler'), 'w');
				try { for (;;) { fs.writeSync(filler, Buffer.alloc(4096, 1)); } } catch (e) { assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC'); } finally { fs.closeSync(filler); }
				const r = await cli(['map', '--from-json', MAP_FIXTURE, '--out', path.join(mnt, 'map.json'), '--json'], dir);
				assert.equal(r.code, 3, r.err);
				assert.match(r.err, /cannot write .*map\.json: .*ENOSPC/);
				assert.equal(fs.readFileSync(path.join(mnt, 'map.json'), 'utf8'), earlier, 'the earlier map was damaged');
				assert.deepEqual(fs.readdirSync(mnt).sort(), ['filler', 'map.json'], 'a temporary file was left');
			} finally {
				spawnSync('umount', [mnt]);
			}
		})();
	});

	it('Ctrl-C (SIGINT) of the CLI process once the plan came: exit 130, the partial map on stdout and at --out, nothing of the run left', async () => {
		const engine = findEngine('openmpi', {}).path!;
		const iters = String(500 + (process.pid % 100));
		const out = path.join(dir, 'interrupted.json');
		const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'gpumpi-doctor.js'), 'map', '--mpirun', 'mpirun.openmpi', '--engine', engine,
			'--np', '4', '--memory', 'host', '--large', '8M', '--iters', iters, '--loopback', '--out', out, '--json'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
		let stdout = '';
		let stderr = '';
		child.stdout.on('data', d => { stdout += d; });
		child.stderr.on('data', d => { stderr += d; });
		const closed = new Promise<number | null>(res => child.on('close', c => res(c)));
		const ranks = await waitForRanks(iters, 4);
		assert.equal(ranks.length, 4, `the ranks never appeared:\n${stderr}`);
		// Before the plan there is nothing to keep (faultsInterrupt.test.ts: exit 130, no output); after it, what was measured.
		for (let i = 0; i < 300 && !/^plan: /m.test(stderr); i++) { await new Promise(r => setTimeout(r, 50)); }
		assert.match(stderr, /^plan: 6 pairs in 6 steps, one pair at a time/m);
		const started = Date.now();
		child.kill('SIGINT');
		const code = await closed;
		assert.equal(code, 130, stderr);
		assert.ok(Date.now() - started < 15_000, `stopping took ${Date.now() - started} ms`);
		assert.match(stderr, /interrupted; the run was stopped; the partial map keeps what was measured: \d of 6 pairs/);
		const printed = JSON.parse(stdout) as { partial?: { reason: string }; pairs: unknown[] };
		assert.match(printed.partial?.reason ?? '', /^interrupted/);
		assert.equal(printed.pairs.length, 6);
		assert.deepEqual(JSON.parse(fs.readFileSync(out, 'utf8')), printed, '--out holds the partial map printed');
		assert.deepEqual(await leftOver(iters), [], 'processes of the run left');
	});
});
