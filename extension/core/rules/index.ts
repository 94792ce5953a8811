/**
 * The rule registry: every rule the analysis runs, in report order within each severity.
 * docs/rules.md is generated from this list (scripts/genRulesDoc.mjs).
 */
import { allocatorRules } from './allocatorRules';
import { cudaRules } from './cudaRules';
import { gtlRules } from './gtlRules';
import { ipcMemoryRules } from './ipcMemoryRules';
import { launchRules } from './launchRules';
import { libfabricRules } from './libfabricRules';
import { mpichIpcCacheRules } from './mpichIpcCacheRules';
import { mpi4pyRules } from './mpi4pyRules';
import { mpiRules } from './mpiRules';
import { platformRules } from './platformRules';
import { rankIsolationRules } from './rankIsolationRules';
import type { Rule } from './rule';
import { tuningRules } from './tuningRules';
import { programLinkUcxRules, ucxMemoryRules } from './ucxMemoryRules';
import { ucxRules } from './ucxRules';

export type { Rule } from './rule';
export { runRules } from './rule';

/** All rules. */
export const RULES: readonly Rule[] = [...mpiRules, ...launchRules, ...ucxRules, ...cudaRules, ...platformRules, ...rankIsolationRules, ...ipcMemoryRules, ...mpichIpcCacheRules, ...gtlRules, ...allocatorRules, ...mpi4pyRules, ...tuningRules, ...ucxMemoryRules, ...libfabricRules];

/**
 * The rules that judge the user's program rather than a host, run by `gpumpi-doctor guard` on what it reads about the
 * program it ran (collect/programLinks.ts); `inspect --program` runs them as part of RULES.
 */
export const PROGRAM_RULES: readonly Rule[] = [...mpichIpcCacheRules, ...gtlRules, ...allocatorRules, ...mpi4pyRules, ...programLinkUcxRules];
