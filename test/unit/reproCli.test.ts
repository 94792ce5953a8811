/**
 * `gpumpi-doctor repro …` argument handling and `--from-json` rendering (no mpirun here: the real runs are in
 * test/engine/repro.test.ts). Output goes to an injected CliIo (test/unit/cli/captureIo.ts).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { reproMain } from '../../extension/cli/reproCli';
import { captureIo } from './cli/captureIo';

async function capture(argv: string[]): Promise<{ code: number; out: string; err: string }> {
	const io = captureIo();
	const code = await reproMain(argv, io);
	return { code, out: io.out, err: io.err };
}

describe('gpumpi-doctor repro (CLI)', () => {
	it('--help prints the usage on stdout and exits 0', async () => {
		const r = await capture(['--help']);
		assert.equal(r.code, 0);
		assert.match(r.out, /Usage: gpumpi-doctor repro ipc\|fallback/);
	});

	it('usage errors exit 2 with a clear message', async () => {
		for (const [argv, re] of [
			[['nope'], /which reproducer/],
			[['ipc', '--variants', 'direct,evil'], /unknown variant "evil"/],
			[['ipc', '--preset', 'no-equals'], /--preset needs NAME=VALUE/],
			[['fallback', '--modes', 'mpi,x'], /unknown mode "x"/],
			[['ipc', '--np'], /--np needs a value/],
			[['ipc', '--memory', 'gpu'], /--memory needs device or host/],
		] as Array<[string[], RegExp]>) {
			const r = await capture(argv);
			assert.equal(r.code, 2, argv.join(' '));
			assert.match(r.err, re);
		}
	});

	it('MCA parameters with an MPICH launcher are refused before anything runs', async () => {
		const r = await capture(['ipc', '--flavor', 'mpich', '--mpirun', 'mpirun.mpich', '--engine', '/bin/true', '--mca', 'pml', 'ucx']);
		assert.equal(r.code, 2);
		assert.match(r.err, /Open MPI only/);
	});

	it('--from-json: a missing or non-device file exits 3; a device result renders', async () => {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-repro-cli-'));
		try {
			assert.equal((await capture(['ipc', '--from-json', path.join(dir, 'none.json')])).code, 3);
			fs.writeFileSync(path.join(dir, 'obj.json'), '{"a":1}');
			const bad = await capture(['ipc', '--from-json', path.join(dir, 'obj.json')]);
			assert.equal(bad.code, 3);
			assert.match(bad.err, /expected a JSON array/);
			// A repro.sh-style entry wrapped around the real captured crash output (test-fixtures/repro/).
			const fx = (n: string): string => fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', 'repro', n), 'utf8');
			const entry = { kind: 'ipc', config: 'ob1', variant: 'crash-test', command: 'mpirun -np 4 gpumpi repro ipc', exit_code: 139,
				timed_out: false, duration_s: 2.2, output: fx('ompi-ipc-crash.stdout') + fx('ompi-ipc-crash.stderr'), document: null };
			fs.writeFileSync(path.join(dir, 'repro.json'), JSON.stringify([entry]));
			const ok = await capture(['ipc', '--from-json', path.join(dir, 'repro.json')]);
			assert.equal(ok.code, 0, ok.err);
			assert.match(ok.out, /crash-test\s+inconclusive\s+C\s+crashed 1/);
			// Verdict first, the failure named with its count; the sample's lines only with --verbose.
			assert.ok(ok.out.indexOf('Verdict:') < ok.out.indexOf('crash-test'), ok.out);
			assert.match(ok.out, /crash-test \(ob1\): crashed \(SIGSEGV\): deliberate test crash \(--inject\) — 1 of 1\n/);
			assert.doesNotMatch(ok.out, /sample: trial/);
			assert.match(ok.out, /--verbose/);
			const verbose = await capture(['ipc', '--verbose', '--from-json', path.join(dir, 'repro.json')]);
			assert.equal(verbose.code, 0, verbose.err);
			assert.ok(verbose.out.startsWith(ok.out.slice(0, ok.out.indexOf('  crash-test (ob1): crashed'))), 'the verbose text begins with the summary');
			assert.match(verbose.out, /crashed \(SIGSEGV\): deliberate test crash \(--inject\) — 1 of 1; sample: trial 1/);
			const js = await capture(['ipc', '--json', '--from-json', path.join(dir, 'repro.json')]);
			const rep = JSON.parse(js.out) as { schema: string; variants: Array<{ trials: number; counts: Record<string, number>; runs: Array<{ outcome: string }> }> };
			assert.equal(rep.schema, 'gpumpi.repro.ipc-report/2');
			assert.equal(rep.variants[0].trials, 1);
			assert.equal(rep.variants[0].counts.crashed, 1);
			assert.equal(rep.variants[0].runs[0].outcome, 'crashed');
			assert.equal((await capture(['fallback', '--from-json', path.join(dir, 'repro.json')])).code, 3);  // no fallback runs in it
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});
});
