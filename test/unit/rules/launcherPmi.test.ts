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
	// The two Open MPI texts the rule read wrongly or not at all: the [slurm-error2] block of help-ess-base.txt@v4.1.4
	// (no Slurm support at all; printed without srun too) and the [no-pmix-but] block of help-mpi-runtime.txt@v5.0.7,
	// each put as the text itself in the stderr of the real --mpi=pmi2 capture (synthetic placement, real texts).
	it('Open MPI without Slurm support ([slurm-error2]): mpirun inside the allocation, not a PMI plugin', () => {
		const raw = engineRaw('openmpi-srun-pmi2');
		const text = 'The application appears to have been direct launched using "srun",\nbut OMPI was not built with SLURM support. This usually happens\nwhen OMPI was not configured --with-slurm and we weren\'t able\nto discover a SLURM installation in the usual places.\n';
		const f = pmiFindings({ ...raw, stderr: text });
		assert.equal(f.length, 1);
		assert.match(f[0].message, /^This Open MPI was built without Slurm support \(\[slurm-error2\]\)/);
		assert.match(f[0].fix?.command ?? '', /mpirun/);
		assert.doesNotMatch(f[0].fix?.command ?? '', /--mpi=/);
	});

	it('Open MPI 5 with no PMIx server ([no-pmix-but]): a refused launch, pmix with the srun --mpi=list check', () => {
		const raw = engineRaw('openmpi-srun-pmi2');
		const f = pmiFindings({ ...raw, stderr: 'No PMIx server was reachable, but a PMI1/2 was detected.\nIf srun is being used to launch application,  2 singletons will be started.\n' });
		assert.equal(f.length, 1);
		assert.match(f[0].message, /Open MPI 5 needs a PMIx server/);
		assert.match(f[0].fix?.command ?? '', /^srun --mpi=pmix .*# check: srun --mpi=list$/);
	});
});
