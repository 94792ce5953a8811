/**
 * proc.ts against real processes: exit codes, streams, missing programs, timeouts that kill a whole process tree,
 * abort, output caps, and proof that no shell ever sees the arguments.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { execute, type ExecuteResult } from '../../extension/core/proc';

/** True while `pid` exists and is not a zombie waiting for init to reap it. */
function alive(pid: number): boolean {
	try { process.kill(pid, 0); } catch { return false; }
	try { return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')); } catch { return false; }
}

async function waitGone(pids: number[], ms: number): Promise<number[]> {
	const end = Date.now() + ms;
	for (;;) {
		const left = pids.filter(alive);
		if (left.length === 0 || Date.now() > end) { return left; }
		await new Promise(r => setTimeout(r, 50));
	}
}

describe('proc.execute', function () {
	this.timeout(20_000);

	it('returns exit code, stdout and stderr of a real program', async () => {
		const r = await execute(['sh', '-c', 'echo out; echo err >&2; exit 7'], { timeoutMs: 5000 }).result;
		assert.equal(r.exitCode, 7);
		assert.equal(r.stdout, 'out\n');
		assert.equal(r.stderr, 'err\n');
		assert.equal(r.timedOut, false);
		assert.equal(r.error, undefined);
		assert.ok(r.durationMs >= 0);
	});

	it('passes quotes, $(...), ; and newlines verbatim (no shell)', async () => {
		const hostile = `it's "quoted" $(touch /tmp/pwned-by-gpumpi) ; rm -rf / \`id\`\nsecond line $HOME`;
		const r = await execute(['printf', '%s', hostile], { timeoutMs: 5000 }).result;
		assert.equal(r.exitCode, 0);
		assert.equal(r.stdout, hostile);
	});

	it('writes input to stdin and closes it; without input the child reads end-of-file', async () => {
		const r = await execute(['sh', '-c', 'read a; read b; echo "got $a|$b"'], { timeoutMs: 5000, input: 'quit\n$(id)\n' }).result;
		assert.equal(r.stdout, 'got quit|$(id)\n');
		const none = await execute(['cat'], { timeoutMs: 5000 }).result;
		assert.equal(none.exitCode, 0);
		assert.equal(none.stdout, '');
		const ignored = await execute(['true'], { timeoutMs: 5000, input: 'x'.repeat(1 << 20) }).result;
		assert.equal(ignored.exitCode, 0, 'a program that does not read its input still exits cleanly (EPIPE swallowed)');
	});

	it('reports a missing program as "not found" without throwing', async () => {
		const r = await execute(['/nonexistent/definitely-not-a-program', '--x'], { timeoutMs: 5000 }).result;
		assert.equal(r.exitCode, null);
		assert.equal(r.error, 'not found');
	});

	it('rejects an empty command line as an error result', async () => {
		const r = await execute([], { timeoutMs: 1000 }).result;
		assert.equal(r.exitCode, null);
		assert.match(r.error ?? '', /empty/);
	});

	it('on timeout kills the whole process tree (a real hung program with a background child)', async () => {
		// A real hung program: bash starting a background sleep and a foreground sleep, printing both pids.
		const lines: string[] = [];
		const started = Date.now();
		const exec = execute(['bash', '-c', 'sleep 30 & echo $!; echo $$; sleep 30'], {
			timeoutMs: 700, killGraceMs: 500, onLine: (s, l) => { if (s === 'stdout') { lines.push(l); } },
		});
		const r = await exec.result;
		assert.equal(r.timedOut, true);
		assert.equal(r.exitCode, null);
		assert.match(r.error ?? '', /timed out after 700 ms/);
		assert.ok(Date.now() - started < 6000, 'result came back promptly');
		const pids = lines.map(Number).filter(n => n > 0);
		assert.equal(pids.length, 2, `got pids ${lines.join(',')}`);
		assert.deepEqual(await waitGone(pids, 3000), [], 'no survivor of the process group');
	});

	it('SIGKILLs a group that ignores SIGTERM', async () => {
		const lines: string[] = [];
		const r = await execute(['bash', '-c', 'trap "" TERM; echo $$; while :; do sleep 0.1; done'], {
			timeoutMs: 500, killGraceMs: 300, onLine: (_s, l) => lines.push(l),
		}).result;
		assert.equal(r.timedOut, true);
		assert.equal(await waitGone([Number(lines[0])], 3000).then(l => l.length), 0);
	});

	it('abort signal kills the tree and says cancelled', async () => {
		const ac = new AbortController();
		const lines: string[] = [];
		const exec = execute(['bash', '-c', 'sleep 30 & echo $!; sleep 30'], {
			timeoutMs: 20_000, signal: ac.signal, killGraceMs: 500,
			onLine: (_s, l) => { lines.push(l); ac.abort(); },
		});
		const r = await exec.result;
		assert.equal(r.error, 'cancelled');
		assert.equal(r.exitCode, null);
		assert.equal(r.timedOut, false);
		assert.deepEqual(await waitGone(lines.map(Number), 3000), []);
	});

	it('an already aborted signal starts nothing', async () => {
		const ac = new AbortController();
		ac.abort();
		const exec = execute(['sleep', '10'], { timeoutMs: 5000, signal: ac.signal });
		assert.equal(exec.child, null);
		assert.equal((await exec.result).error, 'cancelled');
	});

	it('caps output keeping head and tail with a truncation note', async () => {
		const r = await execute(['sh', '-c', 'echo HEAD; head -c 300000 /dev/zero | tr "\\0" x; echo; echo TAIL'], {
			timeoutMs: 10_000, maxOutputBytes: 4096,
		}).result;
		assert.equal(r.exitCode, 0);
		assert.ok(r.stdout.startsWith('HEAD\n'));
		assert.ok(r.stdout.endsWith('TAIL\n'));
		assert.match(r.stdout, /bytes of output truncated/);
		assert.ok(r.stdout.length < 4096 + 200, `length ${r.stdout.length}`);
	});

	it('streams lines to onLine, including a final unterminated line and CRLF', async () => {
		const seen: string[] = [];
		await execute(['printf', 'a\r\nb\nc'], { timeoutMs: 5000, onLine: (s, l) => seen.push(`${s}:${l}`) }).result;
		assert.deepEqual(seen, ['stdout:a', 'stdout:b', 'stdout:c']);
	});

	it('reports death by signal', async () => {
		const r = await execute(['sh', '-c', 'kill -SEGV $$'], { timeoutMs: 5000 }).result;
		assert.equal(r.exitCode, null);
		assert.equal(r.signal, 'SIGSEGV');
		assert.equal(r.error, 'killed by SIGSEGV');
	});

	// The shape of Open MPI's mpirun under SIGTERM: the main process exits at once, a child of its session (not holding
	// our pipes) takes a while to exit. The check after the stop must wait for it, not report it as left over. The child
	// prints its pid once its trap is set (then lets go of our pipe), and only then is the run stopped (abort): under
	// load a fixed timeout came before the trap.
	const stopWhenReady = async (child: string, graceMs: number): Promise<{ r: ExecuteResult; pid: number; sinceStop: number }> => {
		const ac = new AbortController();
		let pid = 0;
		let stoppedAt = 0;
		const r = await execute(['bash', '-c', `bash -c '${child}' </dev/null & trap "exit 0" TERM; while :; do sleep 0.05; done`], {
			timeoutMs: 15_000, killGraceMs: graceMs, signal: ac.signal,
			onLine: (s, l) => { if (s === 'stdout' && pid === 0) { pid = Number(l); stoppedAt = Date.now(); ac.abort(); } },
		}).result;
		return { r, pid, sinceStop: Date.now() - stoppedAt };
	};

	it('after a stop, waits for a child of the session that is still exiting (not reported as left, no SIGKILL note), without waiting out the grace', async () => {
		const { r, pid, sinceStop } = await stopWhenReady('trap "sleep 0.4; exit 0" TERM; echo $$; exec >/dev/null 2>&1; while :; do sleep 0.05; done', 4000);
		assert.equal(r.error, 'cancelled');
		assert.match(r.cleanup ?? '', /^stopped session \d+ \(SIGTERM to \d+ process(es)?\); afterwards none of it is left/, r.cleanup);
		assert.doesNotMatch(r.cleanup ?? '', /SIGKILL/);
		assert.ok(sinceStop >= 350, `came back ${sinceStop} ms after the stop, before the child had exited`);
		assert.ok(sinceStop < 3500, `came back ${sinceStop} ms after the stop: waited out the grace although the session was empty`);
		assert.deepEqual(await waitGone([pid], 1000), []);
	});

	it('after a stop, what still runs at the end of the grace (a child that ignores SIGTERM) gets SIGKILL, and the note says so', async () => {
		// (A SIGSTOPped child would not do: when the main process exits, its process group is orphaned and the kernel
		// sends it SIGHUP and SIGCONT, so the pending SIGTERM ends it.)
		const { r, pid } = await stopWhenReady('trap "" TERM; echo $$; exec >/dev/null 2>&1; while :; do sleep 0.05; done', 600);
		assert.equal(r.error, 'cancelled');
		assert.match(r.cleanup ?? '', /^stopped session \d+ \(SIGTERM to \d+ process(es)?\), SIGKILL to \d+ still running after 600 ms; afterwards none of it is left/, r.cleanup);
		assert.deepEqual(await waitGone([pid], 1000), []);
	});

	it('a run that ends by itself is reported at once, without a cleanup check', async () => {
		const started = Date.now();
		const r = await execute(['sh', '-c', 'exit 0'], { timeoutMs: 5000, killGraceMs: 3000 }).result;
		assert.equal(r.cleanup, undefined);
		assert.ok(Date.now() - started < 1500);
	});

	it('does not wait forever for background processes that keep the pipes open', async () => {
		const lines: string[] = [];
		const started = Date.now();
		const r = await execute(['bash', '-c', 'sleep 30 & echo $!; exit 0'], {
			timeoutMs: 20_000, lingerMs: 300, onLine: (_s, l) => lines.push(l),
		}).result;
		assert.equal(r.exitCode, 0);
		assert.match(r.error ?? '', /background processes/);
		assert.ok(Date.now() - started < 5000);
		assert.deepEqual(await waitGone(lines.map(Number), 3000), []);
	});
});
