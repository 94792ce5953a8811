/**
 * The CLI boundary, as a new user meets it: every bad value of every subcommand exits 2 with a message that names the
 * option and the accepted form, and nothing is started before that. "Nothing started" is checked two ways that could
 * fail: a recording mpirun (a two-line shell script standing in for a launcher, since a launch must not happen here)
 * leaves no call file, and no child process at all is spawned (test/unit/cli/spawnSpy.ts). The control cases run
 * the same recorder with valid options and see it called, so the check is live.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { collectMain } from '../../../extension/cli/bundleCli';
import { main } from '../../../extension/cli/gpumpiDoctor';
import { EXIT } from '../../../extension/cli/io';
import { captureIo } from './captureIo';
import { withSpawnSpy } from './spawnSpy';

describe('CLI usage errors: exit 2, a clear message, nothing launched', function () {
	this.timeout(60_000);
	let dir = '';
	let rec = '';
	let calls = '';
	/** Launcher options that would launch the recorder, put before each case's own options. */
	let launch: string[] = [];

	before(() => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-usage-'));
		rec = path.join(dir, 'mpirun-recorder');
		calls = `${rec}.calls`;
		fs.writeFileSync(rec, '#!/bin/sh\necho "$*" >> "$0.calls"\nexit 1\n', { mode: 0o755 });
		launch = ['--mpirun', rec, '--flavor', 'openmpi', '--engine', '/bin/true'];
	});
	after(() => { fs.rmSync(dir, { recursive: true, force: true }); });
	afterEach(() => { fs.rmSync(calls, { force: true }); });

	const run = async (args: string[]): Promise<{ code: number; out: string; err: string; spawned: string[][] }> => {
		const io = captureIo(dir);
		const { value: code, spawned } = await withSpawnSpy(() => main(args, io));
		return { code, out: io.out, err: io.err, spawned };
	};

	const expectUsage = async (args: string[], re: RegExp): Promise<void> => {
		const r = await run(args);
		const what = JSON.stringify(args);
		assert.equal(r.code, EXIT.usage, `${what}: ${r.err}`);
		assert.match(r.err, re, what);
		assert.equal(r.out, '', `${what}: nothing on stdout`);
		assert.deepEqual(r.spawned, [], `${what} started processes`);
		assert.equal(fs.existsSync(calls), false, `${what} called the launcher`);
	};

	const REPRO: Array<[string[], RegExp]> = [
		[['ipc', '--np', '3'], /--np: repro ipc runs exactly 4 ranks .*got 3/],
		[['fallback', '--np', '4'], /--np: repro fallback runs exactly 2 ranks .*got 4/],
		[['ipc', '--np', '99999999999999999999'], /--np needs an integer 1\.\.4096, got "99999999999999999999"/],
		[['ipc', '--size', '99999999999999999999'], /--size needs a multiple of 4 bytes from 4 to 1G, like 64M, 1G or 4096, got "99999999999999999999"/],
		[['ipc', '--size', '2G'], /--size needs a multiple of 4 bytes from 4 to 1G \(2G is not\)/],
		[['ipc', '--size', '6'], /--size needs a multiple of 4 bytes from 4 to 1G \(6 is not\)/],
		[['ipc', '--size', '-64M'], /--size needs .*got "-64M"/],
		[['fallback', '--sizes', '1G..1M'], /--sizes: the range 1G\.\.1M is empty .*a range like 1M\.\.1G/],
		[['fallback', '--sizes', '0..1M'], /--sizes: the range 0\.\.1M is empty/],
		[['fallback', '--sizes', '1M,'], /--sizes: "" is not a size; a range like 1M\.\.1G \(×4 steps\) or a list like 1M,64M/],
		[['fallback', '--sizes', '2048G'], /--sizes: each size must be a multiple of 4 bytes from 4 to 1024G \(2048G is not\)/],
		[['fallback', '--sizes', Array.from({ length: 65 }, (_, i) => `${4 * (i + 1)}`).join(',')], /--sizes: at most 64 sizes/],
		[['fallback', '--chunk', '1K'], /--chunk needs a multiple of 4 bytes from 4K to 1G \(1K is not\)/],
		[['fallback', '--nbuf', '65'], /--nbuf needs an integer 1\.\.64, got "65"/],
		[['fallback', '--iters', '0'], /--iters needs an integer 1\.\.1000/],
		[['fallback', '--modes', ','], /--modes needs a comma-separated list of mpi, staged, host/],
		[['fallback', '--modes', 'mpi,x'], /--modes: unknown mode "x" \(known: mpi, staged, host, lib-auto, lib-staged, lib-shm\)/],
		[['ipc', '--variants', 'direct,evil'], /--variants: unknown variant "evil"/],
		[['ipc', '--sizes', '1M'], /--sizes is a repro fallback option, not one of repro ipc/],
		[['fallback', '--inject', 'crash'], /--inject is a repro ipc option, not one of repro fallback/],
		[['ipc', '--inject', 'boom'], /--inject needs crash, hang, crash-fraction=F or wrong-fraction=F \(0 ≤ F ≤ 1\), got "boom"/],
		[['ipc', '--mca', 'pml'], /--mca needs a name and a value \(e\.g\. --mca pml ob1\)/],
		[['ipc', '--mca', 'bad name', 'x'], /bad MCA parameter name "bad name"/],
		[['ipc', '--flavor', 'mpich', '--mca', 'pml', 'ucx'], /MCA parameters \(pml\) are Open MPI only/],
		[['ipc', '--preset', '1BAD=x'], /--preset needs NAME=VALUE with NAME an environment variable name, got "1BAD=x"/],
		[['ipc', '--also', 'no-equals'], /--also needs NAME=VALUE/],
		[['ipc', '--hosts', 'x:1,y;z:2'], /--hosts: host list "x:1,y;z:2" must look like a:2,b:2 or a,b/],
		[['ipc', '--setup', 'module load x'], /--setup and --ssh-config need --host/],
		[['ipc', '--host', '-oProxyCommand=touch /tmp/gpumpi-pwned'], /--host: the ssh destination .* starts with "-"/],
		[['ipc', '--mpirun', '-x'], /--mpirun needs a program name or path: must be a program, not an option/],
		[['ipc', '--engine', ''], /--engine needs the path of the gpumpi engine: it is empty/],
		[['ipc', '--srun-mpi', 'pmi2;reboot'], /--srun-mpi needs a plugin name like pmi2 or pmix, got "pmi2;reboot"/],
		[['ipc', '--timeout', '0'], /--timeout needs an integer 1\.\.86400/],
		[['ipc', '--memory', 'gpu'], /--memory needs device or host, got "gpu"/],
		[['ipc', '--json', '--markdown'], /--json and --markdown exclude each other/],
		[['ipc', '--from-json', 'x.json', '--host', 'h'], /--from-json renders a saved file/],
		[['ipc', '--bogus'], /unknown option "--bogus"/],
		[['both'], /which reproducer\? \(ipc or fallback\), got "both"/],
	];
	for (const [args, re] of REPRO) {
		it(`repro ${args.join(' ').slice(0, 70)}`, async () => {
			const [which, ...rest] = args;
			await expectUsage(['repro', which, ...(which === 'both' ? [] : launch), ...rest], re);
		});
	}

	const MAP: Array<[string[], RegExp]> = [
		[['--hosts', 'x:1,y;z:2'], /--hosts: host list "x:1,y;z:2" must look like a:2,b:2 or a,b/],
		[['--np', '1'], /--np needs an integer 2\.\.4096, got "1"/],
		[['--np', '99999999999999999999'], /--np needs an integer 2\.\.4096/],
		[['--large', '2G'], /--large needs a size from 1 to 1G \(2G is not\)/],
		[['--small', '0'], /--small needs a size from 1 to 1M \(0 is not\)/],
		[['--small', '8x'], /--small needs a size from 1 to 1M, like 64M, 1G or 4096, got "8x"/],
		[['--max-ranks', '1'], /--max-ranks needs an integer 2\.\.1048576/],
		[['--iters', '1001'], /--iters needs an integer 1\.\.1000/],
		[['--pairs', 'most'], /--pairs needs all or sampled, got "most"/],
		[['--out', ''], /--out needs a file name/],
		[['--out', 'a\0b'], /argument \d+ contains a NUL byte/],
		[['--srun', '--hosts', 'a:2;b'], /--hosts: host list/],
		[['--from-json', 'x', '--srun'], /--from-json prints a saved file/],
		[['--explain-latency', '--np', '4'], /--explain-latency measures one pair: 2 ranks, got --np 4/],
		[['--explain-latency', '--trials', '1'], /--trials needs an integer 2\.\.200, got "1"/],
		[['--explain-latency', '--factors', 'ob1-vader,warp-drive'], /--factors: unknown factor "warp-drive" \(known: smcuda-no-ipc, .*mps\)/],
		[['--explain-latency', '--factors', 'mps,'], /--factors needs a comma-separated list of/],
		[['--factors', 'mps'], /--factors and --trials need --explain-latency/],
		[['--trials', '3'], /--factors and --trials need --explain-latency/],
		[['--explain-latency', '--from-json', 'x.json'], /--explain-latency runs an experiment; --from-json prints a saved file/],
		[['--explain-latency', '--flavor', 'mpich', '--mca', 'pml', 'ob1'], /MCA parameters \(pml\) are Open MPI only/],
		[['--schedule', 'parallel'], /--schedule needs auto, sequential or rounds, got "parallel"/],
		[['--pair-timeout', '0'], /--pair-timeout needs an integer 1\.\.86400, got "0"/],
		[['--json-lines', '--json'], /give one of them/],
		[['--json-lines', '--explain-latency'], /--json-lines streams a map; --explain-latency prints an experiment/],
		// --sbatch (mapBatchCli.ts): the job's size is needed and checked, sbatch's own options as far as they are known.
		[['--sbatch'], /--sbatch needs the job's size \(the map runs one rank per task\): --sbatch-arg --nodes=N with --sbatch-arg --ntasks-per-node=K, or --sbatch-arg --ntasks=N/],
		[['--sbatch-arg', '--nodes=2', '--sbatch-arg', '--partition=gpu'], /--sbatch needs the job's size/],
		[['--sbatch-arg', '--ntasks=4', '--np', '8'], /--np 8 is more ranks than the job's 4 tasks/],
		[['--sbatch-arg', '--ntasks=1'], /the job has 1 task: a map needs 2\.\.4096 ranks/],
		[['--sbatch-arg', '--ntasks=4', '--sbatch-arg', '--output=x.out'], /--sbatch-arg: sbatch option --output is not accepted here/],
		[['--sbatch-arg', '--ntasks=4', '--sbatch-arg', '--time=soon'], /--sbatch-arg: sbatch option --time needs minutes, MM:SS, HH:MM:SS or D-HH\[:MM\[:SS\]\], got "soon"/],
		[['--sbatch-arg', '--ntasks=4', '--sbatch-arg', '--gpus-per-node=four'], /--gpus-per-node needs \[TYPE:\]N, got "four"/],
		[['--sbatch-arg', '--ntasks=4', '--sbatch-arg', 'gpu'], /--sbatch-arg: "gpu" is not an sbatch option/],
		[['--sbatch-arg', '--ntasks=4', '--sbatch-arg', '--comment=a\nb'], /contains a control character/],
		[['--sbatch-arg', '--ntasks=4', '--hosts', 'a:2,b:2'], /--hosts: inside a batch job srun runs on the job's nodes; choose them with --sbatch-arg --nodelist=a,b/],
		[['--sbatch-arg', '--ntasks=2', '--explain-latency'], /--sbatch runs one map as a batch job; --from-json and --explain-latency do not launch one/],
		[['--sbatch-arg', '--ntasks=4', '--sbatch-dir', ''], /--sbatch-dir needs a directory/],
		[['--cancel-on-interrupt'], /--sbatch-dir and --cancel-on-interrupt need --sbatch \(or --follow\)/],
		[['--sbatch-arg'], /--sbatch-arg needs a value/],
	];
	for (const [args, re] of MAP) {
		it(`map ${JSON.stringify(args).slice(0, 70)}`, () => expectUsage(['map', ...launch, ...args], re));
	}
	const FOLLOW: Array<[string[], RegExp]> = [
		[['--follow', ''], /--follow needs the \.job\.json file of a submitted job/],
		[['--follow', 'j.job.json', '--np', '4'], /--follow reads a job as it was submitted \(its file holds the run's options\): --np cannot apply/],
		[['--follow', 'j.job.json', '--sbatch-arg', '--ntasks=4'], /--follow reads a job as it was submitted.*: --sbatch-arg cannot apply/],
		[['--follow', 'j.job.json', '--setup', 'module load x'], /--setup and --ssh-config need --host/],
	];
	for (const [args, re] of FOLLOW) {
		it(`map ${JSON.stringify(args).slice(0, 70)}`, () => expectUsage(['map', ...args], re));
	}

	const INSPECT: Array<[string[], RegExp]> = [
		[['--ranks', '99999999999999999999'], /--ranks needs an integer 1\.\.1024, got "99999999999999999999"/],
		[['--ranks', '2x'], /--ranks needs an integer 1\.\.1024, got "2x"/],
		[['--mpirun', '-x'], /--mpirun needs a program name or path: must be a program, not an option/],
		[['--host', '-oProxyCommand=x'], /--host: the ssh destination/],
		[['--setup', 'module load x'], /--setup and --ssh-config need --host/],
		[['--srun-mpi', 'a b'], /--srun-mpi needs a plugin name like pmi2 or pmix, got "a b"/],
		[['--html', ''], /--html needs a file name/],
		[['--json', 'extra'], /unexpected argument "extra"/],
	];
	for (const [args, re] of INSPECT) {
		it(`inspect ${args.join(' ')}`, () => expectUsage(['inspect', ...args], re));
	}

	it('collect and analyze: bad values exit 2 before the inspection starts', async () => {
		await expectUsage(['analyze'], /give exactly one bundle directory/);
		await expectUsage(['analyze', 'a', 'b'], /give exactly one bundle directory/);
		await expectUsage(['collect', '--out', ''], /--out needs a directory/);
		await expectUsage(['collect', '--host=-oProxyCommand=x'], /--host: the ssh destination/);
		for (const args of [['--setup', 'x'], ['--host', '-x'], ['--ssh-config', 'f'], ['stray'], ['--out']]) {
			let inspected = 0;
			const io = captureIo(dir);
			const code = await collectMain(args, { inspect: () => { inspected++; return Promise.reject(new Error('must not run')); }, io });
			assert.equal(code, EXIT.usage, `${args.join(' ')}: ${io.err}`);
			assert.equal(inspected, 0, `${args.join(' ')} started the inspection`);
		}
	});

	it('control: the same recorder with valid options IS launched (so the checks above can fail)', async () => {
		const ipc = await run(['repro', 'ipc', ...launch, '--memory', 'host', '--variants', 'direct', '--timeout', '20', '--json']);
		assert.equal(ipc.code, EXIT.ok, ipc.err);
		assert.ok(ipc.spawned.some(a => a[0] === rec), JSON.stringify(ipc.spawned));
		assert.match(fs.readFileSync(calls, 'utf8'), /-np 4 \/bin\/true repro ipc --variant direct/);
		fs.rmSync(calls);
		const map = await run(['map', ...launch, '--np', '2', '--memory', 'host', '--timeout', '20']);
		assert.equal(map.code, EXIT.failed, 'the recorder exits 1 without a map: a failure, exit 3');
		assert.match(fs.readFileSync(calls, 'utf8'), /-np 2 \/bin\/true map /);
		fs.rmSync(calls);
		const ex = await run(['map', ...launch, '--explain-latency', '--factors', 'ob1-vader', '--trials', '2', '--memory', 'host', '--timeout', '20', '--json']);
		assert.equal(ex.code, EXIT.failed, 'no trial of the baseline measured anything: exit 3');
		// Launches only: an Open MPI launch also asks `mpirun --version` once (the shared-memory parameter, launch/shmBacking.ts).
		assert.equal(fs.readFileSync(calls, 'utf8').trim().split('\n').filter(l => / -np /.test(l)).length, 4, '2 trials × (baseline + 1 factor) launches');
		const doc = JSON.parse(ex.out) as { schema: string; headline: string; factors: Array<{ verdict: string }> };
		assert.equal(doc.schema, 'gpumpi.latency-experiment/1');
		assert.match(doc.headline, /^No verdict: as-is, 0 of 2 trials measured/);
		assert.equal(doc.factors[0].verdict, 'no_verdict');
	});
});
