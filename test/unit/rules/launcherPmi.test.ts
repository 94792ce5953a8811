/**
 * The launcher-pmi-mismatch rule and the launch layer's singleton check on REAL engine outputs captured under srun in
 * the Slurm lab (test-fixtures/tools/slurm-lab/README.md): Open MPI under --mpi=pmi2 aborts, MPICH under --mpi=none
 * starts singletons, MPICH under pmi2 is one job.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildFacts } from '../../../extension/core/parsers/buildFacts';
import { singletonStart } from '../../../extension/core/launch/runLaunch';
import { RULES, runRules } from '../../../extension/core/rules/index';
import type { RawOutput } from '../../../extension/shared/report';
import { FIXTURES } from './fixtureRaw';

function engineRaw(name: string): RawOutput {
	return JSON.parse(fs.readFileSync(path.join(FIXTURES, 'slurm-lab', `${name}.engine.json`), 'utf8')) as RawOutput;
}

function pmiFindings(raw: RawOutput): ReturnType<typeof runRules> {
	return runRules(RULES, buildFacts([raw], 'host-a')).filter(f => f.id === 'launcher-pmi-mismatch');
}

describe('launcher PMI mismatch (real srun captures)', () => {
	it('Open MPI under srun --mpi=pmi2: fires with Open MPI\'s own line as evidence', () => {
		const f = pmiFindings(engineRaw('openmpi-srun-pmi2'));
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'error');
		assert.match(f[0].message, /MPI_Init aborted/);
		assert.ok(f[0].evidence.some(e => /direct launched using "srun"|not built with SLURM's PMI support/.test(e.line)), JSON.stringify(f[0].evidence));
	});

	it('MPICH under srun --mpi=none: the singleton check sees 2 documents of size 1 and the rule fires', () => {
		const raw = engineRaw('mpich-srun-none');
		assert.match(singletonStart(raw.stdout, 2) ?? '', /^2 separate MPI jobs of world size 1 started instead of one job of 2 ranks/);
		assert.equal(singletonStart(raw.stdout, 1), null, 'one rank asked for: a singleton is right');
		const f = pmiFindings(raw);
		assert.equal(f.length, 1);
		assert.match(f[0].message, /separate one-process MPI jobs .* world size 1/);
		assert.match(f[0].fix?.command ?? '', /--mpi=pmi2/);
	});

	it('MPICH under srun --mpi=pmi2 (one job of 2): no singleton note, no finding', () => {
		const raw = engineRaw('mpich-srun-pmi2');
		assert.equal(singletonStart(raw.stdout, 2), null);
		assert.deepEqual(pmiFindings(raw), []);
	});
});
