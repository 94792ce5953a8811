/**
 * A private NVIDIA MPS control daemon on this machine, for the MPS factor of the latency experiment: its own
 * CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY under a fresh temp dir (so it never meets a site's or another
 * user's daemon, and only ranks given those two variables use it), started with `nvidia-cuda-mps-control -d`, asked
 * for its servers and stopped with `quit` on the control program's stdin (argv + stdin, no shell).
 * https://docs.nvidia.com/deploy/mps/index.html
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execute, type ExecuteResult } from '../proc';

/** A started daemon. */
export interface MpsDaemon {
	/** The two variables to hand to every rank. */
	env: Array<[string, string]>;
	/** What was started, for the report. */
	started: string;
	/** `get_server_list`: which MPS servers ran (a server starts when a CUDA client connects). */
	servers(): Promise<string>;
	/** `quit`, then the temp dir is removed; says what happened (with the daemon log's last line). */
	stop(): Promise<string>;
}

function outcome(r: ExecuteResult): string {
	return r.error ?? (r.exitCode === 0 ? 'ok' : `exit ${r.exitCode ?? r.signal ?? '?'}${r.stderr.trim() ? `: ${r.stderr.trim().split('\n')[0]}` : ''}`);
}

/** Start the daemon with `control` (the path of nvidia-cuda-mps-control); an error when it does not start. */
export async function startPrivateMps(control: string): Promise<MpsDaemon | { error: string }> {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-mps-'));
	const pipe = path.join(dir, 'pipe');
	const log = path.join(dir, 'log');
	fs.mkdirSync(pipe);
	fs.mkdirSync(log);
	const env = { ...process.env, CUDA_MPS_PIPE_DIRECTORY: pipe, CUDA_MPS_LOG_DIRECTORY: log };
	const ask = (command: string): Promise<ExecuteResult> => execute([control], { env, input: `${command}\n`, timeoutMs: 15_000 }).result;
	const started = await execute([control, '-d'], { env, timeoutMs: 20_000 }).result;
	if (started.exitCode !== 0) {
		fs.rmSync(dir, { recursive: true, force: true });
		return { error: `${control} -d did not start a daemon (${outcome(started)})` };
	}
	// Measured, not assumed: the daemon must answer on its private pipe before any rank is told to use it.
	const alive = await ask('get_server_list');
	if (alive.exitCode !== 0) {
		await ask('quit');
		fs.rmSync(dir, { recursive: true, force: true });
		return { error: `${control} -d exited 0 but the daemon does not answer get_server_list (${outcome(alive)})${started.cleanup ? `; ${started.cleanup}` : ''}` };
	}
	return {
		env: [['CUDA_MPS_PIPE_DIRECTORY', pipe], ['CUDA_MPS_LOG_DIRECTORY', log]],
		started: `MPS control daemon started: ${control} -d with CUDA_MPS_PIPE_DIRECTORY=${pipe}`,
		async servers() {
			const r = await ask('get_server_list');
			const list = r.stdout.trim().split(/\s+/).filter(Boolean);
			if (r.exitCode !== 0) { return `get_server_list: ${outcome(r)}`; }
			return list.length > 0 ? `MPS server(s) ran for the ranks: pid ${list.join(', ')}` : 'get_server_list listed no MPS server: the ranks may not have used MPS';
		},
		async stop() {
			const r = await ask('quit');
			let last = '';
			try { last = fs.readFileSync(path.join(log, 'control.log'), 'utf8').trim().split('\n').pop() ?? ''; } catch { /* no log */ }
			fs.rmSync(dir, { recursive: true, force: true });
			return `MPS control daemon stopped (quit: ${outcome(r)})${last ? `; its log ends: ${last.slice(0, 200)}` : ''}`;
		},
	};
}
