/**
 * The reproducer use case, whole: the IPC-pointer or the fallback reproducer on a resolved launch target (this
 * machine, an ssh host, srun), every launcher configuration of the request, and the reports. `gpumpi-doctor repro`
 * (cli/reproCli.ts) and the VS Code reproducer commands (vscode/reproCommands.ts) both call it; they only gather the
 * options (configurations from flags or from the picked presets) and show the reports. Every configuration's launch
 * is checked first (what the launcher would refuse, known once the flavour is), so nothing runs when one is refused.
 */
import type { ReproFallbackReport, ReproIpcReport } from '../../shared/reproSchema';
import type { OpenLaunchTarget } from '../hosts/launchTarget';
import { buildLaunchArgv } from '../launch/launchArgv';
import { withConfig, withJobName, type LaunchConfig } from '../launch/launchSpec';
import { runFallbackRepro } from './fallbackRunner';
import { runIpcVariants } from './ipcRunner';

/** What both reproducers take. */
interface ReproCommon {
	/** Where: a resolved target (hosts/launchTarget.ts). */
	target: Pick<OpenLaunchTarget, 'host' | 'label' | 'engine' | 'flavor' | 'spec'>;
	/** The launcher configurations; ipc runs every variant in each (one report), fallback one report per configuration. */
	configs: LaunchConfig[];
	/** Open MPI: TCP on the loopback interface only (--mca btl_tcp_if_include lo); the configurations carry UCX_NET_DEVICES=lo. */
	loopback: boolean;
	memory: 'device' | 'host';
	/** Independent trials (separate launches) of every variant / mode. */
	trials: number;
	/** Per-trial timeout. */
	timeoutMs: number;
	/** One line per finished trial. */
	onProgress?: (line: string) => void;
	/** Called once with the first configuration's launch line, checked, before anything runs (its srun job name is the check's). */
	onLaunchLine?: (argv: string[]) => void;
	signal?: AbortSignal;
}

/** One reproducer run. */
export type ReproUseCaseRequest = ReproCommon & (
	| { which: 'ipc'; variants: string[]; sizeBytes: number; engineArgs: string[] }
	| { which: 'fallback'; modes: string[]; sizes: string; iters: number; chunk?: string; nbuf?: number; protoInfo: boolean; ucxSettings: Array<[string, string]> }
);

/**
 * The reports (fallback: one per configuration run; once cancelled, the configurations not started are left out), or
 * `refused`: the launcher would refuse a configuration (MCA parameters with MPICH, …), nothing was launched.
 */
export type ReproUseCaseOutcome =
	| { ok: true; ipc: ReproIpcReport | null; fallback: ReproFallbackReport[] }
	| { ok: false; refused: true; error: string };

/** Run the reproducer of `req.which` on the target. */
export async function runReproUseCase(req: ReproUseCaseRequest): Promise<ReproUseCaseOutcome> {
	const { engine, flavor, host } = req.target;
	const spec = { ...req.target.spec, loopbackOnly: req.loopback && flavor === 'openmpi' };
	let lines: string[][];
	try {
		// The run adds its own switches, and an srun run its own --job-name.
		lines = req.configs.map(config => buildLaunchArgv(withJobName(withConfig(spec, config)), [engine, 'repro', req.which]));
	} catch (e) {
		return { ok: false, refused: true, error: e instanceof Error ? e.message : String(e) };
	}
	if (lines.length > 0) { req.onLaunchLine?.(lines[0]); }
	const common = { engine, host, spec, memory: req.memory, timeoutMs: req.timeoutMs, trials: req.trials, onProgress: req.onProgress, signal: req.signal };
	if (req.which === 'ipc') {
		return { ok: true, ipc: await runIpcVariants({ ...common, configs: req.configs, variants: req.variants, sizeBytes: req.sizeBytes, engineArgs: req.engineArgs }), fallback: [] };
	}
	const fallback: ReproFallbackReport[] = [];
	for (const config of req.configs) {
		// Cancelled: the configurations not started are not reported as empty runs.
		if (fallback.length > 0 && req.signal?.aborted) { break; }
		fallback.push(await runFallbackRepro({
			...common, config, modes: req.modes, sizes: req.sizes, iters: req.iters, chunk: req.chunk, nbuf: req.nbuf,
			protoInfo: req.protoInfo, ucxSettings: req.ucxSettings,
		}));
	}
	return { ok: true, ipc: null, fallback };
}
