/**
 * runMarkers.ts against real processes: a real detached session started through proc.ts is written down, and a sweep
 * by a "new host" ends it once its owner is dead (SIGTERM, then SIGKILL after the grace), removes its private
 * directory and its marker. What must never be signalled is checked on real running processes too: a marker whose
 * start time is not the process's (a recycled pid), one from another boot, one whose owner still runs. Damaged and
 * hostile marker files are logged errors, never a throw, never a kill, never an rm outside the product's own dirs.
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createLogger, type Logger } from '../../extension/core/logger';
import { execute, setSessionRecorder } from '../../extension/core/proc';
import { bootId, createMarkerRecorder, processStartTime, sweepRunMarkers, type RunMarker } from '../../extension/core/runMarkers';

function alive(pid: number): boolean {
	try { process.kill(pid, 0); } catch { return false; }
	try { return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return false; }
}

function memoryLog(): { log: Logger; lines: string[] } {
	const lines: string[] = [];
	return { log: createLogger((level, c, m) => { lines.push(`${level} [${c}] ${m}`); }, 'test'), lines };
}

/** A real detached `sleep` (its own session, as proc.ts starts every launch). */
function detachedSleep(): ChildProcess {
	const c = spawn('sleep', ['60'], { detached: true, stdio: 'ignore' });
	c.unref();
	return c;
}

/** An owner that is really gone: a process that ran and was reaped. */
async function deadOwner(): Promise<{ pid: number; startTime: number }> {
	const c = spawn('sleep', ['30'], { stdio: 'ignore' });
	await new Promise(r => setTimeout(r, 50));
	const startTime = processStartTime(c.pid!);
	assert.ok(startTime !== null);
	const exited = new Promise(r => c.on('exit', r));
	c.kill('SIGKILL');
	await exited;
	return { pid: c.pid!, startTime };
}

function mktempShm(): string {
	return execFileSync('mktemp', ['-d', '/dev/shm/gpumpi-shm-XXXXXXXX'], { encoding: 'utf8' }).trim();
}

function writeMarker(dir: string, name: string, m: RunMarker): void {
	fs.writeFileSync(path.join(dir, name), JSON.stringify(m));
}

describe('run markers (a hard-killed extension host\'s runs, ended by the next)', function () {
	this.timeout(30_000);
	let dir: string;
	const started: ChildProcess[] = [];
	beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-markers-test-')); });
	afterEach(() => {
		setSessionRecorder(undefined);
		for (const c of started.splice(0)) { try { process.kill(-c.pid!, 'SIGKILL'); } catch { /* gone */ } }
		fs.rmSync(dir, { recursive: true, force: true });
	});

	it('a session started through execute() is marked while it runs; a normal end removes its marker', async () => {
		const { log, lines } = memoryLog();
		setSessionRecorder(createMarkerRecorder(dir, log));
		const shm = mktempShm();
		try {
			const ex = execute(['sleep', '0.3'], { timeoutMs: 10_000, privateDirs: [shm] });
			const files = fs.readdirSync(dir);
			assert.equal(files.length, 1, files.join(','));
			const m = JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8')) as RunMarker;
			assert.equal(m.pid, ex.child!.pid);
			assert.equal(m.startTime, processStartTime(m.pid));
			assert.equal(m.bootId, bootId());
			assert.deepEqual(m.owner, { pid: process.pid, startTime: processStartTime(process.pid) });
			assert.equal(m.command, `sleep 0.3`);
			assert.deepEqual(m.dirs, [shm]);
			const r = await ex.result;
			assert.equal(r.exitCode, 0);
			assert.deepEqual(fs.readdirSync(dir), [], 'marker removed at the normal end');
			assert.deepEqual(lines, []);
		} finally {
			fs.rmSync(shm, { recursive: true, force: true });
		}
	});

	it('owner dead: the sweep ends the real session (leader and its background child), removes its dir and marker', async () => {
		const { log } = memoryLog();
		setSessionRecorder(createMarkerRecorder(dir, log));
		const shm = mktempShm();
		fs.writeFileSync(path.join(shm, 'vader_segment.test.0'), 'x');
		// A leader that ignores SIGTERM, with a background child in the same session: the grace and SIGKILL are needed.
		let bg = 0;
		const ex = execute(['sh', '-c', 'sleep 60 & echo $!; trap "" TERM; while :; do sleep 0.1; done'], { timeoutMs: 60_000, privateDirs: [shm], onLine: (_s, l) => { bg = Number(l); } });
		const leader = ex.child!.pid!;
		for (let i = 0; i < 100 && bg === 0; i++) { await new Promise(r => setTimeout(r, 20)); }
		assert.ok(bg > 0, 'the background sleep started');
		setSessionRecorder(undefined);
		// The host "dies": its marker now names an owner that is gone.
		const [file] = fs.readdirSync(dir);
		const m = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as RunMarker;
		m.owner = await deadOwner();
		fs.writeFileSync(path.join(dir, file), JSON.stringify(m));
		const sweeper = memoryLog();
		const t0 = Date.now();
		const actions = await sweepRunMarkers(dir, sweeper.log, { graceMs: 500 });
		const ms = Date.now() - t0;
		assert.equal(actions.length, 1);
		assert.equal(actions[0].outcome, 'ended', actions[0].message);
		assert.ok(actions[0].signalled.includes(leader) && actions[0].signalled.includes(bg), JSON.stringify(actions[0]));
		assert.ok(actions[0].killed.includes(leader) && !actions[0].killed.includes(bg), `the leader ignored SIGTERM and got SIGKILL: ${JSON.stringify(actions[0])}`);
		assert.deepEqual(actions[0].removedDirs, [shm]);
		assert.equal(alive(leader), false);
		assert.equal(alive(bg), false);
		assert.equal(fs.existsSync(shm), false);
		assert.deepEqual(fs.readdirSync(dir), []);
		assert.ok(ms < 3000, `${ms} ms`);
		assert.match(sweeper.lines.join('\n'), new RegExp(`info .*session ${leader} .*SIGTERM to \\d process\\(es\\).*SIGKILL to \\d .*none of it is left; removed ${shm}`));
		const r = await ex.result;
		assert.equal(r.signal, 'SIGKILL');
	});

	it('a recycled pid (start time not the marked one), another boot, a live owner: nothing signalled', async () => {
		const a = detachedSleep(); const b = detachedSleep(); const c = detachedSleep();
		started.push(a, b, c);
		await new Promise(r => setTimeout(r, 50));
		const owner = await deadOwner();
		const boot = bootId();
		const base = (p: ChildProcess): RunMarker => ({ format: 'gpumpi-run-marker/1', pid: p.pid!, startTime: processStartTime(p.pid!)!, bootId: boot, owner, command: 'sleep 60', dirs: [], written: new Date().toISOString() });
		writeMarker(dir, 'a.json', { ...base(a), startTime: base(a).startTime - 1 });
		writeMarker(dir, 'b.json', { ...base(b), bootId: '00000000-0000-0000-0000-000000000000' });
		writeMarker(dir, 'c.json', { ...base(c), owner: { pid: process.pid, startTime: processStartTime(process.pid)! } });
		const { log, lines } = memoryLog();
		const actions = await sweepRunMarkers(dir, log, { graceMs: 300 });
		assert.deepEqual(actions.map(x => [x.file, x.outcome]), [['a.json', 'recycled'], ['b.json', 'other-boot'], ['c.json', 'live-owner']]);
		assert.ok(actions.every(x => x.signalled.length === 0));
		assert.ok(alive(a.pid!) && alive(b.pid!) && alive(c.pid!), 'all three still run');
		assert.deepEqual(fs.readdirSync(dir), ['c.json'], 'the dead owners\' markers are done with; the live owner\'s is kept');
		assert.match(lines.join('\n'), /pid \d+ is another process now .*not signalled/);
		assert.match(lines.join('\n'), /earlier boot/);
	});

	it('garbage and hostile marker files: logged errors, no throw, no signal, nothing removed outside the product\'s dirs', async () => {
		const victim = detachedSleep();
		started.push(victim);
		await new Promise(r => setTimeout(r, 50));
		const owner = await deadOwner();
		const keep = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-markers-keep-'));
		const link = path.join(os.tmpdir(), `gpumpi-shm-${Math.random().toString(36).slice(2, 10).padEnd(8, 'x')}`);
		fs.symlinkSync(keep, link);
		try {
			fs.writeFileSync(path.join(dir, 'text.json'), 'not json at all');
			fs.writeFileSync(path.join(dir, 'array.json'), '[1,2,3]');
			fs.writeFileSync(path.join(dir, 'empty.json'), '');
			fs.writeFileSync(path.join(dir, 'huge.json'), `{"x":"${'a'.repeat(100_000)}"}`);
			fs.mkdirSync(path.join(dir, 'dir.json'));
			fs.symlinkSync('/etc/passwd', path.join(dir, 'link.json'));
			const good: RunMarker = { format: 'gpumpi-run-marker/1', pid: victim.pid!, startTime: processStartTime(victim.pid!)!, bootId: bootId(), owner, command: 'x', dirs: [], written: '' };
			writeMarker(dir, 'pid1.json', { ...good, pid: 1, startTime: processStartTime(1) ?? 0 });
			writeMarker(dir, 'self.json', { ...good, pid: process.pid, startTime: processStartTime(process.pid)! });
			writeMarker(dir, 'negative.json', { ...good, pid: -victim.pid! });
			writeMarker(dir, 'strpid.json', { ...good, pid: String(victim.pid) as unknown as number });
			// Real session (dead owner), but its dirs are hostile: only the product's own kind would go.
			writeMarker(dir, 'dirs.json', { ...good, dirs: ['/', keep, '/tmp/../etc', link, `${keep}/../gpumpi-shm-AAAAAAAA`, 'relative/gpumpi-shm-AAAAAAAA', 42 as unknown as string] });
			const { log, lines } = memoryLog();
			const actions = await sweepRunMarkers(dir, log, { graceMs: 300 });
			const byFile = Object.fromEntries(actions.map(x => [x.file, x.outcome]));
			for (const f of ['text.json', 'array.json', 'empty.json', 'huge.json', 'dir.json', 'link.json', 'pid1.json', 'self.json', 'negative.json', 'strpid.json', 'dirs.json']) {
				assert.equal(byFile[f], 'invalid', `${f}: ${JSON.stringify(actions.find(x => x.file === f))}`);
			}
			assert.ok(alive(victim.pid!), 'no marker above ended the real sleep (dirs.json lists a non-string dir: invalid as a whole)');
			assert.equal(lines.filter(l => l.startsWith('error')).length, 11, lines.join('\n'));
			// Now the same hostile dirs without the non-string: the session is ended, no directory removed.
			writeMarker(dir, 'dirs2.json', { ...good, dirs: ['/', keep, '/tmp/../etc', link, `${keep}/../gpumpi-shm-AAAAAAAA`, 'relative/gpumpi-shm-AAAAAAAA'] });
			const again = await sweepRunMarkers(dir, log, { graceMs: 300 });
			const d2 = again.find(x => x.file === 'dirs2.json');
			assert.equal(d2?.outcome, 'ended', JSON.stringify(again));
			assert.deepEqual(d2?.removedDirs, []);
			assert.equal(alive(victim.pid!), false);
			assert.ok(fs.existsSync(keep) && fs.existsSync('/etc/passwd') && fs.lstatSync(link).isSymbolicLink());
			assert.match(lines.join('\n'), /not removing .*gpumpi-shm-.*not a directory/);
		} finally {
			fs.rmSync(link, { force: true });
			fs.rmSync(keep, { recursive: true, force: true });
		}
	});

	it('no marker directory: nothing to do, nothing logged', async () => {
		const { log, lines } = memoryLog();
		assert.deepEqual(await sweepRunMarkers(path.join(dir, 'none'), log), []);
		assert.deepEqual(lines, []);
	});
});
