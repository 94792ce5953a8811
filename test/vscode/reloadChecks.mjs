// The window-reload phase (docs/reliability.md, "VS Code window reload during a run"), driven from outside like the
// UI checks, judged by the real process table. A real run is started from the extension in a code-server window:
// "GPU-MPI: Run My Program With Guard…" (through a user keybinding with an options object, so no questions) with
// the engine's own map as the program, `mpirun -np 4` of the Open MPI on PATH, long enough never to end by itself.
// Its session (mpirun + 4 ranks) and private shm directory are read from /proc. Then, per trial:
//   reload    F1 → "Developer: Reload Window": the old extension host runs deactivate(), which aborts the run;
//             everything of the session must be gone within RELOAD_BOUND_MS.
//   hardkill  SIGKILL of the extension host (no deactivate); the window is reloaded if VS Code does not start a
//             new host itself; the new host's activation sweep (core/runMarkers.ts) must end the session and
//             remove the shm directory within SWEEP_BOUND_MS of the kill.
//   nosweep   the control: as hardkill, but the run markers are deleted right after the kill, which is the
//             product without them; the session must still run (orphaned) NOSWEEP_WAIT_MS after the new host
//             is up. The harness then ends it itself.
// Every trial ends with the harness killing whatever of the session is left, so a failure leaves nothing behind.
// GPUMPI_RELOAD_TRIALS=N runs N of each (default 1); the times go to .test-work/results/reload-trials.json.
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const KEY = 'Control+Alt+Shift+F9';
const RELOAD_BOUND_MS = 10_000;
const SWEEP_BOUND_MS = 30_000;
const NOSWEEP_WAIT_MS = 5_000;
/** The iteration count that marks this phase's run in the process table (and keeps it running for minutes). */
const ITERS = '997'; // the engine's map accepts 1..1000

/** /proc/<pid>/stat fields after comm, or null. */
function stat(pid) {
	try {
		const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
		const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
		return { state: f[0], ppid: Number(f[1]), pgrp: Number(f[2]), sid: Number(f[3]), start: Number(f[19]) };
	} catch { return null; }
}
function cmdline(pid) {
	try { return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean); } catch { return []; }
}
function pids() { return fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number); }
/** Running (not a zombie) and still the same process. */
function alive(p) { const s = stat(p.pid); return s !== null && s.state !== 'Z' && s.start === p.start; }

/** The session of our run: leader (mpirun) and members, with start times. */
function findRun(engine) {
	const ranks = pids().filter((p) => { const c = cmdline(p); return c[0] === engine && c.includes(ITERS); });
	if (ranks.length === 0) { return null; }
	const sid = stat(ranks[0])?.sid;
	if (!sid) { return null; }
	const members = pids().map((pid) => ({ pid, s: stat(pid) })).filter((x) => x.s && x.s.sid === sid && x.s.state !== 'Z')
		.map((x) => ({ pid: x.pid, start: x.s.start, ppid: x.s.ppid, argv0: path.basename(cmdline(x.pid)[0] ?? '?') }));
	const leader = cmdline(sid);
	const shm = leader.map((a) => /(?:^|=)(\/dev\/shm\/gpumpi-shm-[A-Za-z0-9]{8})$/.exec(a)?.[1]).find(Boolean) ?? null;
	const guardDir = leader.map((a) => /(?:^|=)(\/\S*\/gpumpi-guard-[A-Za-z0-9]{8})$/.exec(a)?.[1]).find(Boolean) ?? null;
	return { sid, members, ranks: members.filter((m) => cmdline(m.pid)[0] === engine).length, shm, guardDir };
}

function hasHostArgv(pid) { return cmdline(pid).some((a) => a.includes('--type=extensionHost')); }
/**
 * Extension hosts of this code-server (its process group), newest last. A child the host forks (git, `ps`, mpirun,
 * a language server) carries the host's command line, --type=extensionHost included, until it execs; a 5-ms /proc
 * poll sees several per activation, one for up to 7 s (a language server). Those have a host as parent and are not
 * hosts: taking one for the host made a trial SIGKILL a child instead of the host (docs/reliability.md).
 */
function extensionHosts(serverPid) {
	return pids().map((pid) => ({ pid, s: stat(pid) }))
		// A host's parent is a process of the server's group that is no host itself. A child the host forked carries the
		// host's command line until its exec; once the host is SIGKILLed such an orphan's parent is init, outside the
		// group: without the parent check it passed for "VS Code restarted the host" (2026-12-06 15:22 clean-clone run:
		// hostRestartedByVsCode true, no page reload, no host for 90 s).
		.filter((x) => x.s && x.s.pgrp === serverPid && x.s.state !== 'Z' && hasHostArgv(x.pid) && !hasHostArgv(x.s.ppid) && stat(x.s.ppid)?.pgrp === serverPid)
		.sort((a, b) => a.s.start - b.s.start).map((x) => ({ pid: x.pid, start: x.s.start }));
}

/** Our extension's log files (one per extension host), newest last. */
function doctorLogs(userDataDir) {
	const out = [];
	const walk = (d) => { for (const e of fs.readdirSync(d, { withFileTypes: true })) { const p = path.join(d, e.name); if (e.isDirectory()) { walk(p); } else if (e.name.endsWith('GPU-MPI Doctor.log')) { out.push(p); } } };
	try { walk(path.join(userDataDir, 'logs')); } catch { /* none yet */ }
	return out.sort((a, b) => fs.statSync(a).mtimeMs - fs.statSync(b).mtimeMs);
}

async function until(pred, timeoutMs, intervalMs = 50) {
	const t0 = performance.now();
	for (;;) {
		const v = await pred();
		if (v) { return { value: v, ms: performance.now() - t0 }; }
		if (performance.now() - t0 > timeoutMs) { return { value: null, ms: performance.now() - t0 }; }
		await new Promise((r) => setTimeout(r, intervalMs));
	}
}

/** SIGKILL what is left of the run and wait (up to 10 s) until it is gone, so the next trial starts from nothing. */
async function killLeft(run) {
	const left = run.members.filter(alive);
	for (const m of left) { try { process.kill(m.pid, 'SIGKILL'); } catch { /* gone */ } }
	for (const d of [run.shm, run.guardDir]) { if (d) { fs.rmSync(d, { recursive: true, force: true }); } }
	const r = await until(() => run.members.every((m) => !alive(m)), 10_000);
	if (!r.value) { throw new Error(`the harness could not end ${run.members.filter(alive).map((m) => m.pid).join(', ')} within 10 s`); }
	return left.length;
}

/** Write the keybinding that starts the run (before the window opens; VS Code also watches the file). */
export function writeReloadKeybinding(userDataDir, engine) {
	const dir = path.join(userDataDir, 'User');
	fs.mkdirSync(dir, { recursive: true });
	const args = `map --pairs all --max-ranks 16 --large 64M --small 8 --iters ${ITERS} --memory host --json`;
	fs.writeFileSync(path.join(dir, 'keybindings.json'), JSON.stringify([
		{ key: 'ctrl+alt+shift+f9', command: 'gpumpiDoctor.runGuard', args: { program: engine, args, np: 4, mode: 'report' } },
	], null, 2));
}

async function reloadWindow(page) {
	const input = page.locator('.quick-input-widget input.input');
	if (await input.isVisible()) { await page.keyboard.press('Escape'); }
	await page.keyboard.press('F1');
	await input.waitFor({ state: 'visible', timeout: 10_000 });
	await input.fill('>Developer: Reload Window');
	await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Developer: Reload Window' }).first().waitFor({ state: 'visible', timeout: 10_000 });
	await page.keyboard.press('Enter');
}

/** What waitActivated saw when it gave up: the extension hosts (the old one marked), and the newest log's last lines. */
function activationState(serverPid, userDataDir, before) {
	const hosts = extensionHosts(serverPid).map((h) => `${h.pid}${before && h.pid === before.host.pid ? ' (old)' : ''}${alive(h) ? '' : ' (gone)'}`);
	const seen = before?.logs ?? new Set();
	const logs = doctorLogs(userDataDir);
	const fresh = logs.filter((l) => !seen.has(l));
	const last = fresh.at(-1) ?? logs.at(-1);
	let tail = '';
	try { tail = fs.readFileSync(last, 'utf8').trim().split('\n').slice(-3).map((l) => l.slice(0, 200)).join(' | '); } catch { /* none */ }
	const old = before ? `old host ${before.host.pid} ${alive(before.host) ? 'still running' : 'gone'}` : 'first window';
	return `${old}; extension hosts of the server now: [${hosts.join(', ')}]; our log files: ${logs.length} (${fresh.length} new)${last ? `; ${fresh.length ? 'newest' : 'newest (not new)'} ${path.relative(userDataDir, last)}: ${tail}` : ''}`;
}

/**
 * Wait for a window whose extension host has our extension activated: a log file that was not there before (each
 * extension host writes its own, exthostN/…/GPU-MPI Doctor.log) saying so and naming its pid. `before`: the previous host (its pid and
 * the log files there were before the reload or kill), or null for the first window.
 */
async function waitActivated(page, serverPid, userDataDir, before, timeoutMs = 90_000) {
	const seen = before?.logs ?? new Set();
	const r = await until(async () => {
		const logs = doctorLogs(userDataDir).filter((l) => !seen.has(l));
		const last = logs.at(-1);
		if (!last) { return null; }
		// The activation line names the host's pid: that is the host the next trial kills, not whichever is newest.
		const m = /\] \[extension\] activated \(.*extension host pid (\d+)/.exec(fs.readFileSync(last, 'utf8'));
		if (!m) { return null; }
		const host = extensionHosts(serverPid).find((h) => h.pid === Number(m[1]));
		return host && (!before || host.pid !== before.host.pid) ? { host, log: last } : null;
	}, timeoutMs, 200);
	if (!r.value) { throw new Error(`no extension host with GPU-MPI Doctor activated within ${timeoutMs / 1000} s; ${activationState(serverPid, userDataDir, before)}`); }
	await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 30_000 });
	return r.value;
}

/** Start the run from the window; resolves with its session once mpirun and its 4 ranks run. */
async function startRun(page, engine) {
	if (findRun(engine)) { throw new Error('a run of this phase is already running before the key was pressed'); }
	await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } }).catch(() => {});
	await page.keyboard.press(KEY);
	const r = await until(() => { const run = findRun(engine); return run && run.ranks === 4 && run.shm && fs.existsSync(run.shm) ? run : null; }, 60_000, 100);
	if (!r.value) { throw new Error(`the run did not start within 60 s (keybinding ${KEY} → gpumpiDoctor.runGuard): ${JSON.stringify(findRun(engine))}`); }
	await new Promise((res) => setTimeout(res, 2000)); // well under way: the ranks exchange messages
	return findRun(engine) ?? r.value;
}

/** Run the phase on a page already at a window with the extension under development. */
export async function runReloadChecks(page, { server, userDataDir, engine, trials = 1, resultFile }) {
	const tests = [];
	const rows = [];
	const record = (title, ok, error) => tests.push({ suite: 'reload', title, ok, ...(ok ? {} : { error }) });
	if (!fs.existsSync(engine)) {
		record('engine built for the reload phase', false, `${engine} missing (node scripts/ensure.mjs --all-mpis)`);
		return { passes: 0, failures: 1, pending: 0, tests, metrics: {} };
	}
	let current;
	try { current = await waitActivated(page, server.pid, userDataDir, null); } catch (e) {
		record('first window activates the extension (onStartupFinished)', false, e.message);
		return { passes: 0, failures: 1, pending: 0, tests, metrics: {} };
	}
	record('first window activates the extension at startup (onStartupFinished), no command run', true);
	const markerDir = path.join(userDataDir, 'User', 'globalStorage', 'gpumpi.gpumpi-doctor', 'run-markers');
	const plan = [];
	for (let i = 0; i < trials; i++) { plan.push('reload', 'hardkill', 'nosweep'); }
	for (const [i, kind] of plan.entries()) {
		const n = Math.floor(i / 3) + 1;
		const title = kind === 'reload' ? `reload ${n}: mpirun and its 4 ranks are gone within ${RELOAD_BOUND_MS / 1000} s, and their shm directory`
			: kind === 'hardkill' ? `hard kill ${n}: SIGKILL of the extension host; the new host's sweep ends mpirun and its 4 ranks within ${SWEEP_BOUND_MS / 1000} s and removes their shm directory`
				: `control ${n}: hard kill with the run markers deleted: mpirun and its 4 ranks are still running (orphaned) ${NOSWEEP_WAIT_MS / 1000} s after the new host is up`;
		let run = null;
		const row = { kind, trial: n };
		try {
			run = await startRun(page, engine);
			Object.assign(row, { sid: run.sid, processes: run.members.length, shm: run.shm, guardDir: run.guardDir });
			const markers = fs.existsSync(markerDir) ? fs.readdirSync(markerDir).filter((f) => f.endsWith('.json')) : [];
			row.markersWhileRunning = markers.length;
			const t0 = performance.now();
			const old = current.host;
			const before = { host: old, logs: new Set(doctorLogs(userDataDir)) };
			if (kind === 'reload') {
				await reloadWindow(page);
			} else {
				if (!alive(old) || !hasHostArgv(old.pid)) { throw new Error(`the extension host ${old.pid} named by the activation line is not running before the kill: ${activationState(server.pid, userDataDir, before)}`); }
				process.kill(old.pid, 'SIGKILL');
				if (kind === 'nosweep') { for (const f of fs.readdirSync(markerDir)) { fs.rmSync(path.join(markerDir, f), { force: true }); } }
			}
			const gone = { processes: null, shm: null };
			const ended = until(() => {
				if (gone.processes === null && run.members.every((m) => !alive(m))) { gone.processes = Math.round(performance.now() - t0); }
				if (gone.shm === null && !fs.existsSync(run.shm)) { gone.shm = Math.round(performance.now() - t0); }
				return gone.processes !== null && gone.shm !== null;
			}, kind === 'reload' ? RELOAD_BOUND_MS : SWEEP_BOUND_MS);
			if (kind !== 'reload') {
				// A new extension host: VS Code may start one itself; otherwise the user reloads the window.
				const auto = await until(() => extensionHosts(server.pid).some((h) => h.pid !== old.pid), 5000, 100);
				row.hostRestartedByVsCode = Boolean(auto.value);
				await new Promise((r) => setTimeout(r, 1000));
				row.aliveAfterKill = run.members.filter(alive).length;
				row.ppidsAfterKill = [...new Set(run.members.filter(alive).map((m) => stat(m.pid)?.ppid))];
				if (!auto.value) { await page.reload(); }
			}
			current = await waitActivated(page, server.pid, userDataDir, before);
			row.newHostMs = Math.round(performance.now() - t0);
			if (kind === 'nosweep') {
				await new Promise((r) => setTimeout(r, NOSWEEP_WAIT_MS));
				const left = run.members.filter(alive);
				row.aliveAfterNewHost = left.length;
				row.ppids = [...new Set(left.map((m) => stat(m.pid)?.ppid))];
				row.shmLeft = fs.existsSync(run.shm);
				row.secondsAfterKill = Math.round(performance.now() - t0) / 1000;
				if (left.length !== run.members.length) { throw new Error(`only ${left.length} of ${run.members.length} processes still run without the markers: ${JSON.stringify(row)}`); }
			} else {
				const e = await ended;
				row.goneMs = e.value ? Math.round(e.ms) : null;
				row.processesGoneMs = gone.processes;
				row.shmGoneMs = gone.shm;
				row.guardDirLeft = run.guardDir ? fs.existsSync(run.guardDir) : null;
				// The sweep logs after it removed the directories, and the output channel reaches its file a little later:
				// poll the new host's log (up to 10 s) rather than read it once.
				const sweepLines = () => { try { return (fs.readFileSync(current.log, 'utf8').match(/run markers: .*/g) ?? []).map((l) => l.slice(0, 300)); } catch { return []; } };
				const named = await until(() => (sweepLines().some((l) => l.includes(`session ${run.sid} `)) ? true : null), kind === 'hardkill' ? 10_000 : 0, 200);
				row.sweepLog = sweepLines();
				row.sweepLogMs = named.value ? Math.round(named.ms) : null;
				if (!e.value) { throw new Error(`still there after ${Math.round(e.ms)} ms: ${run.members.filter(alive).map((m) => `${m.pid} ${m.argv0}`).join(', ')}${run.shm && fs.existsSync(run.shm) ? `; ${run.shm}` : ''}; ${JSON.stringify(row)}`); }
				if (kind === 'hardkill' && !row.sweepLog.some((l) => l.includes(`session ${run.sid} `))) { throw new Error(`the new host's log does not name session ${run.sid}: ${JSON.stringify(row.sweepLog)}`); }
			}
			record(title, true);
		} catch (e) {
			record(title, false, e instanceof Error ? e.message : String(e));
			// What the window showed, and what code-server logged, when the trial failed (in the results directory).
			if (resultFile) {
				const shot = path.join(path.dirname(resultFile), `reload-${kind}-${n}-failed.png`);
				await page.screenshot({ path: shot, timeout: 10_000 }).then(() => { row.screenshot = shot; }).catch(() => {});
				try { row.serverLogTail = fs.readFileSync(path.join(path.dirname(userDataDir), 'code-server.log'), 'utf8').trim().split('\n').slice(-15); } catch { /* none */ }
			}
			try { current = await waitActivated(page, server.pid, userDataDir, null, 30_000); } catch { await page.reload().catch(() => {}); }
		} finally {
			if (run) { row.leftForHarness = await killLeft(run); }
			rows.push(row);
			console.log(`  [reload] ${JSON.stringify(row)}`);
		}
	}
	if (resultFile) { fs.mkdirSync(path.dirname(resultFile), { recursive: true }); fs.writeFileSync(resultFile, JSON.stringify(rows, null, 2)); }
	const metrics = {};
	for (const kind of ['reload', 'hardkill']) {
		const t = rows.filter((r) => r.kind === kind && typeof r.goneMs === 'number').map((r) => r.goneMs);
		if (t.length > 0) { metrics[`${kind}GoneMaxMs`] = Math.max(...t); }
	}
	const failures = tests.filter((t) => !t.ok).length;
	return { passes: tests.length - failures, failures, pending: 0, tests, metrics };
}
