/**
 * libfabric's own view of the host, for the libfabric rules (rules/libfabricRules.ts): three `fi_info` runs, each a
 * RawOutput (parsed by parsers/fiInfo.ts), never through a shell:
 * - `fi_info --version` (`fi_info_version`);
 * - `fi_info` (`fi_info`): every provider/domain pair, as a program that initialises libfabric would see them;
 * - `fi_info -c FI_HMEM` with FI_LOG_LEVEL=info (`fi_info_hmem`): the pairs that accept FI_HMEM, and on stderr
 *   libfabric's start-up log, which says whether its CUDA interface came up and which FI_ variables it read.
 * The host's own FI_ variables stay in effect (FI_PROVIDER, FI_HMEM, …): the answer is the one the MPI would get.
 * Where fi_info is not installed each output records "not found" (not installed: no finding); one that hangs is
 * stopped at the collector's per-tool timeout and kept with `timedOut` (a finding says what that means).
 */
import type { RawOutput } from '../../shared/report';
import type { Host } from '../host';
import type { ExecuteResult } from '../proc';

/** What the runs need from the collector's options. */
export interface LibfabricCollectOptions { timeoutMs: number; signal?: AbortSignal }

/** The three runs: id, arguments after `fi_info`, extra environment. */
export const FI_INFO_RUNS: readonly { id: string; args: string[]; env?: Record<string, string> }[] = [
	{ id: 'fi_info_hmem', args: ['-c', 'FI_HMEM'], env: { FI_LOG_LEVEL: 'info' } },
	{ id: 'fi_info_version', args: ['--version'] },
	{ id: 'fi_info', args: [] },
];

function toRaw(id: string, command: string[], r: ExecuteResult, env?: Record<string, string>): RawOutput {
	const error = r.error === 'not found' ? `not found: ${command[0]}` : r.error;
	const notes = env ? [`run with ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ')} (libfabric's start-up log on stderr)`] : [];
	return {
		id, command, exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr, durationMs: r.durationMs,
		...(error !== undefined ? { error } : {}), ...(r.timedOut ? { timedOut: true } : {}), ...(notes.length > 0 ? { notes } : {}),
	};
}

/** One fi_info run on `host`. Never rejects: a missing or hung fi_info is a RawOutput with an error. */
export async function runFiInfo(host: Host, run: (typeof FI_INFO_RUNS)[number], opts: LibfabricCollectOptions): Promise<RawOutput> {
	const resolved = await host.which('fi_info');
	const command = [resolved ?? 'fi_info', ...run.args];
	const r = await host.run(command, { timeoutMs: opts.timeoutMs, signal: opts.signal, ...(run.env ? { env: run.env } : {}) });
	return toRaw(run.id, command, r, run.env);
}

/**
 * The three fi_info runs, one after another (each is short; the collector runs them beside its other tools). When
 * the first hangs, the others would hang in the same provider initialisation: they are not started (their outputs
 * say so), so a hung libfabric costs one timeout, not three.
 */
export async function collectLibfabric(host: Host, opts: LibfabricCollectOptions): Promise<RawOutput[]> {
	const out: RawOutput[] = [];
	let skip: string | null = null;
	for (const run of FI_INFO_RUNS) {
		if (skip !== null) {
			out.push({ id: run.id, command: ['fi_info', ...run.args], exitCode: null, stdout: '', stderr: '', durationMs: 0, error: skip });
			continue;
		}
		const r = await runFiInfo(host, run, opts);
		out.push(r);
		if (r.timedOut) { skip = `skipped: ${r.command.join(' ')} timed out`; }
		else if (r.exitCode === null && /^not found/.test(r.error ?? '')) { skip = r.error ?? 'not found'; }
	}
	return out;
}
