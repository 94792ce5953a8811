/**
 * The transport-map use case, whole: `gpumpi map` on a resolved launch target (this machine, an ssh host, srun) with
 * the evidence joined, or why there is no map. `gpumpi-doctor map` (cli/mapCli.ts) and "GPU-MPI: Show Transport Map"
 * (vscode/transportMapPanel.ts) both call it; they only gather the options and show the map. The launch is checked
 * first (what the launcher would refuse, known once the flavour is), so nothing runs when it is refused. With `batch`
 * (the CLI's `map --sbatch`) the same run is submitted as a Slurm batch job and followed (mapBatch.ts).
 */
import type { OpenLaunchTarget } from '../hosts/launchTarget';
import { buildLaunchArgv } from '../launch/launchArgv';
import { withConfig, withJobName, type LaunchConfig } from '../launch/launchSpec';
import { runMapBatch, type MapBatchRequest, type MapBatchResult } from './mapBatch';
import { mapProgram, runMap, type MapEngineOptions, type MapRunOptions, type MapRunResult } from './mapRunner';

/** One map run. */
export interface MapUseCaseRequest {
	/** Where: a resolved target (hosts/launchTarget.ts); its spec's np ranks. */
	target: Pick<OpenLaunchTarget, 'host' | 'engine' | 'flavor' | 'spec'>;
	/** The launcher configuration (presets, MCA parameters); with `loopback`, it carries UCX_NET_DEVICES=lo itself. */
	config: LaunchConfig;
	/** Open MPI: TCP on the loopback interface only (--mca btl_tcp_if_include lo). */
	loopback: boolean;
	map: MapEngineOptions;
	timeoutMs: number;
	signal?: AbortSignal;
	onProgress?: (line: string) => void;
	/** Each streamed record (the plan, then one per round) as it comes (mapStream.ts). */
	onRecord?: MapRunOptions['onRecord'];
	/** Run it as a Slurm batch job (the target's spec launches with srun, which then runs inside the job). */
	batch?: MapBatchRequest;
}

/** A batch run's job (null: nothing was submitted) and whether it was left queued or running. */
type BatchPart = { batch?: Omit<MapBatchResult, 'run'> };

/** The map, or why there is none; `refused`: the launcher would refuse the launch, nothing was launched. */
export type MapUseCaseOutcome =
	| (Extract<MapRunResult, { ok: true }> & BatchPart)
	| (Extract<MapRunResult, { ok: false }> & { refused: false } & BatchPart)
	| { ok: false; refused: true; error: string };

/** Run the map on the target. */
export async function runMapUseCase(req: MapUseCaseRequest): Promise<MapUseCaseOutcome> {
	const { target } = req;
	const spec = { ...target.spec, loopbackOnly: req.loopback && target.flavor === 'openmpi' };
	try { buildLaunchArgv(withJobName(withConfig(spec, req.config)), mapProgram(target.engine, req.map)); } catch (e) {
		return { ok: false, refused: true, error: (e as Error).message };
	}
	const run: MapRunOptions = { engine: target.engine, host: target.host, spec, config: req.config, map: req.map, timeoutMs: req.timeoutMs, signal: req.signal, onProgress: req.onProgress, onRecord: req.onRecord };
	if (req.batch) {
		const { run: r, ...batch } = await runMapBatch({ ...run, host: target.host }, req.batch);
		return r.ok ? { ...r, batch } : { ...r, refused: false, batch };
	}
	const r = await runMap(run);
	return r.ok ? r : { ...r, refused: false };
}
