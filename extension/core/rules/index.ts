/**
 * The rule registry: every rule the analysis runs, in report order within each severity.
 * docs/rules.md is generated from this list (scripts/genRulesDoc.mjs).
 */
import { cudaRules } from './cudaRules';
import { ipcMemoryRules } from './ipcMemoryRules';
import { launchRules } from './launchRules';
import { libfabricRules } from './libfabricRules';
import { mpichIpcCacheRules } from './mpichIpcCacheRules';
import { mpiRules } from './mpiRules';
import { platformRules } from './platformRules';
import { rankIsolationRules } from './rankIsolationRules';
import type { Rule } from './rule';
import { tuningRules } from './tuningRules';
import { ucxMemoryRules } from './ucxMemoryRules';
import { ucxRules } from './ucxRules';

export type { Rule } from './rule';
export { runRules } from './rule';

/** All rules. */
export const RULES: readonly Rule[] = [...mpiRules, ...launchRules, ...ucxRules, ...cudaRules, ...platformRules, ...rankIsolationRules, ...ipcMemoryRules, ...mpichIpcCacheRules, ...tuningRules, ...ucxMemoryRules, ...libfabricRules];
