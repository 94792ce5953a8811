// Types of scripts/mapScaleGen.mjs (the simulated 2 048-node map) for the TypeScript tests.
import type { MapDocument, OutlierLevel } from '../extension/shared/mapSchema';

export declare const GPUS_PER_NODE: number;
export declare const P2P_GBPS: number;
export declare const RDMA_GBPS: number;
/** Host name of node h ("node0000"). */
export declare function nodeName(h: number): string;
/** A finding the outlier code must report. */
export interface PlantedFinding { level: OutlierLevel; kind: 'failed' | 'slow'; subject: string }
/** The planted faults of a map of `hosts` nodes (at least 8) and the findings they must give (from 64 nodes on). */
export declare function plantedFaults(hosts: number): {
	slowNode: { host: number; factor: number };
	slowNic: { host: number; gpu: number; nic: string; factor: number };
	slowGpu: { host: number; gpu: number; factor: number };
	silentRank: { rank: number; fromRound: number };
	slowLink: { a: number; b: number; factor: number };
	expected: { outliers: PlantedFinding[]; suspects: PlantedFinding[] };
};
/** The simulated map of `hosts` nodes of 8 GPUs (gpumpi.map/1, without `outliers`). */
export declare function generateScaleMap(hosts?: number, options?: { seed?: number }): MapDocument;
