/**
 * Each subcommand's option table (extension/cli/argv.ts tables in inspectCli, bundleCli, reproCli, mapCli, guardCli),
 * through the subcommand's own parse function: for every option of every table, one command line that uses it and what
 * it sets, and one it refuses with its message. The case lists must name exactly the options of the tables, so an
 * option added without a case here fails. Also: the options shared by several subcommands are one declaration
 * (launchArgs.ts: the same kind object in every table), repro's ipc-only / fallback-only options are refused by the
 * other form exactly as their help says, and every help names every option within 120 columns.
 */
import * as assert from 'node:assert/strict';
import { optionLabel, type OptionTable } from '../../../extension/cli/argv';
import { ANALYZE_OPTIONS, ANALYZE_USAGE, COLLECT_OPTIONS, COLLECT_USAGE, parseAnalyzeArgs, parseCollectArgs } from '../../../extension/cli/bundleCli';
import { main } from '../../../extension/cli/gpumpiDoctor';
import { GUARD_OPTIONS, parseGuardArgs } from '../../../extension/cli/guardCli';
import { INSPECT_OPTIONS, parseInspectArgs } from '../../../extension/cli/inspectCli';
import { UsageError } from '../../../extension/cli/io';
import { LAUNCH_OPTIONS, TARGET_OPTIONS } from '../../../extension/cli/launchArgs';
import { MAP_OPTIONS, parseMapArgs } from '../../../extension/cli/mapCli';
import { parseReproArgs, REPRO_OPTIONS } from '../../../extension/cli/reproCli';
import { UCX_STAGING_TRIES } from '../../../extension/core/repro/reproChoices';
import { captureIo } from './captureIo';

/** One option: a command line using it, what the parse sets, and a command line refused with its message. */
interface Case<O> { option: string; good: string[]; get: (o: O) => unknown; want: unknown; bad: string[]; says: RegExp }

/** A table, its parse function and its cases. */
interface Subject<O> { name: string; table: OptionTable; parse: (argv: string[]) => O; cases: Array<Case<O>> }

function subject<O>(name: string, table: OptionTable, parse: (argv: string[]) => O, cases: Array<Case<O>>): Subject<O> {
	return { name, table, parse, cases };
}

const c = <O>(option: string, good: string[], get: (o: O) => unknown, want: unknown, bad: string[], says: RegExp): Case<O> => ({ option, good, get, want, bad, says });

type Repro = ReturnType<typeof parseReproArgs>;
type MapO = ReturnType<typeof parseMapArgs>;
type Guard = ReturnType<typeof parseGuardArgs>;
type Inspect = ReturnType<typeof parseInspectArgs>;

/** The ssh and srun options, the same cases for every launching subcommand (`pre`: the reproducer form, if any). */
function targetCases<O extends { host?: string | null; setup?: string | null; sshConfig?: string | null; hostList?: string | null; srun?: boolean; srunMpi?: string | null; srunArgs?: string[] }>(pre: string[], np: string[]): Array<Case<O>> {
	return [
		c<O>('host', [...pre, '--host', 'user@login1'], o => o.host, 'user@login1', [...pre, '--host', '-oProxyCommand=touch /tmp/x'], /^--host: the ssh destination .*starts with "-"/),
		c<O>('setup', [...pre, '--host', 'h', '--setup', 'module load openmpi'], o => o.setup, 'module load openmpi', [...pre, '--setup', 'x'], /^--setup and --ssh-config need --host$/),
		c<O>('ssh-config', [...pre, '--host', 'h', '--ssh-config', 'cfg'], o => o.sshConfig, 'cfg', [...pre, '--host', 'h', '--ssh-config', ''], /^--ssh-config needs a file name$/),
		c<O>('hosts', [...pre, '--hosts', 'a:2,b:2'], o => o.hostList, 'a:2,b:2', [...pre, '--hosts', 'a;b'], /^--hosts: host list "a;b" must look like a:2,b:2 or a,b/),
		c<O>('srun', [...pre, ...np, '--srun'], o => o.srun, true, [...pre, '--srun=yes'], /^--srun takes no value/),
		c<O>('srun-mpi', [...pre, ...np, '--srun-mpi', 'pmix'], o => [o.srun, o.srunMpi], [true, 'pmix'], [...pre, '--srun-mpi', 'pmi2;reboot'], /^--srun-mpi needs a plugin name like pmi2 or pmix, got "pmi2;reboot"$/),
		c<O>('srun-arg', [...pre, ...np, '--srun-arg', '-N2', '--srun-arg', '-p'], o => [o.srun, o.srunArgs], [true, ['-N2', '-p']], [...pre, '--srun-arg'], /^--srun-arg needs a value$/),
	];
}

const REPRO = subject<Repro>('repro', REPRO_OPTIONS, parseReproArgs, [
	c('json', ['ipc', '--json'], o => o.json, true, ['ipc', '--json=yes'], /^--json takes no value/),
	c('verbose', ['ipc', '-v'], o => o.verbose, true, ['ipc', '--verbose=1'], /^--verbose takes no value/),
	c('markdown', ['ipc', '--markdown'], o => o.markdown, true, ['ipc', '--markdown', '--json'], /^--json and --markdown exclude each other$/),
	c('np', ['ipc', '--np', '4'], o => o.np, 4, ['ipc', '--np', '3'], /^--np: repro ipc runs exactly 4 ranks/),
	c('mpirun', ['ipc', '--mpirun', '/opt/mpi/bin/mpirun'], o => o.mpirun, '/opt/mpi/bin/mpirun', ['ipc', '--mpirun', ''], /^--mpirun needs a program name or path: it is empty$/),
	c('flavor', ['ipc', '--flavor', 'mpich'], o => o.flavor, 'mpich', ['ipc', '--flavor', 'intel'], /^--flavor needs openmpi or mpich, got "intel"$/),
	c('engine', ['ipc', '--engine', '/x/gpumpi'], o => o.engine, '/x/gpumpi', ['ipc', '--engine', '-e'], /^--engine needs the path of the gpumpi engine: must be a program, not an option$/),
	c('memory', ['ipc', '--memory', 'host'], o => o.memory, 'host', ['ipc', '--memory', 'gpu'], /^--memory needs device or host, got "gpu"$/),
	c('size', ['ipc', '--size', '4K'], o => [o.size, o.sizeBytes], ['4K', 4096], ['ipc', '--size', '6'], /^--size needs a multiple of 4 bytes from 4 to 1G \(6 is not\), got "6"$/),
	c('variants', ['ipc', '--variants', 'vmm,direct,vmm'], o => o.variants, ['vmm', 'direct'], ['ipc', '--variants', 'direct,evil'], /^--variants: unknown variant "evil" \(known: direct, bounce, host, send-from-import, pool, vmm, crash-test\)$/),
	c('also', ['ipc', '--also', 'UCX_TLS=tcp', '--also', 'A=1'], o => o.also, [['UCX_TLS', 'tcp'], ['A', '1']], ['ipc', '--also', '=x'], /^--also needs NAME=VALUE with NAME an environment variable name, got "=x"$/),
	c('sizes', ['fallback', '--sizes', '1M,64M'], o => o.sizes, '1M,64M', ['fallback', '--sizes', '1M..'], /^--sizes: a range like 1M\.\.1G/),
	c('modes', ['fallback', '--modes', 'lib-shm,mpi'], o => o.modes, ['lib-shm', 'mpi'], ['fallback', '--modes', 'mpi,x'], /^--modes: unknown mode "x"/),
	c('iters', ['fallback', '--iters', '7'], o => o.iters, 7, ['fallback', '--iters', '0'], /^--iters needs an integer 1\.\.1000, got "0"$/),
	c('chunk', ['fallback', '--chunk', '4M'], o => o.chunk, '4M', ['fallback', '--chunk', '1K'], /^--chunk needs a multiple of 4 bytes from 4K to 1G \(1K is not\)/),
	c('nbuf', ['fallback', '--nbuf', '8'], o => o.nbuf, 8, ['fallback', '--nbuf', '0'], /^--nbuf needs an integer 1\.\.64, got "0"$/),
	c('preset', ['ipc', '--preset', 'UCX_TLS=^cuda_ipc'], o => o.env, [['UCX_TLS', '^cuda_ipc']], ['ipc', '--preset', '1BAD=x'], /^--preset needs NAME=VALUE with NAME an environment variable name, got "1BAD=x"$/),
	c('mca', ['ipc', '--mca', 'pml', 'ob1', '--mca', 'btl', 'tcp,self'], o => o.mca, [['pml', 'ob1'], ['btl', 'tcp,self']], ['ipc', '--mca', 'bad name', 'x'], /bad MCA parameter name "bad name"/),
	c('pml-ucx', ['ipc', '--pml-ucx'], o => o.pmlUcx, true, ['ipc', '--pml-ucx=1'], /^--pml-ucx takes no value/),
	c('launcher-arg', ['ipc', '--launcher-arg', '--host', '--launcher-arg', 'a:2'], o => o.extra, ['--host', 'a:2'], ['ipc', '--launcher-arg'], /^--launcher-arg needs a value$/),
	c('loopback', ['ipc', '--loopback'], o => o.loopback, true, ['ipc', '--loopback=lo'], /^--loopback takes no value/),
	c('proto-info', ['fallback', '--proto-info'], o => o.protoInfo, true, ['ipc', '--proto-info'], /^--proto-info is a repro fallback option, not one of repro ipc$/),
	c('try-ucx', ['fallback', '--try-ucx', 'staging'], o => o.tryUcx.map(([k, v]) => `${k}=${v}`), [...UCX_STAGING_TRIES], ['fallback', '--try-ucx', 'LD_PRELOAD=/tmp/x.so'], /^--try-ucx needs UCX_NAME=VALUE/),
	...targetCases<Repro>(['ipc'], []),
	c('trials', ['ipc', '--trials', '3'], o => o.trials, 3, ['ipc', '--trials', '0'], /^--trials needs an integer 1\.\.200, got "0"$/),
	c('timeout', ['ipc', '--timeout', '30'], o => o.timeoutS, 30, ['ipc', '--timeout', '0'], /^--timeout needs an integer 1\.\.86400, got "0"$/),
	c('inject', ['ipc', '--inject', 'crash-fraction=0.5'], o => o.inject, 'crash-fraction=0.5', ['ipc', '--inject', 'crash-fraction=2'], /^--inject needs crash, hang, crash-fraction=F or wrong-fraction=F/),
	c('inject-seed', ['ipc', '--inject-seed', '7'], o => o.injectSeed, 7, ['fallback', '--inject-seed', '7'], /^--inject-seed is a repro ipc option, not one of repro fallback$/),
	c('from-json', ['ipc', '--from-json', 'r.json'], o => o.fromJson, 'r.json', ['ipc', '--from-json', ''], /^--from-json needs a file name$/),
]);

const MAP = subject<MapO>('map', MAP_OPTIONS, parseMapArgs, [
	c('json', ['--json'], o => o.json, true, ['--json=1'], /^--json takes no value/),
	c('json-lines', ['--json-lines'], o => [o.jsonLines, o.json], [true, false], ['--json-lines', '--json'], /^--json prints the map once; --json-lines prints it as it is measured: give one of them$/),
	c('out', ['--out', 'm.json'], o => o.out, 'm.json', ['--out', ''], /^--out needs a file name$/),
	c('np', ['--np', '8'], o => o.np, 8, ['--np', '1'], /^--np needs an integer 2\.\.4096, got "1"$/),
	c('mpirun', ['--mpirun', 'mpirun.mpich'], o => o.mpirun, 'mpirun.mpich', ['--mpirun', '-x'], /^--mpirun needs a program name or path: must be a program, not an option$/),
	c('flavor', ['--flavor', 'openmpi'], o => o.flavor, 'openmpi', ['--flavor', ''], /^--flavor needs openmpi or mpich, got ""$/),
	c('engine', ['--engine', 'gpumpi'], o => o.engine, 'gpumpi', ['--engine', ''], /^--engine needs the path of the gpumpi engine: it is empty$/),
	c('memory', ['--memory', 'host'], o => [o.memory, o.map.memory], ['host', 'host'], ['--memory', 'Host'], /^--memory needs device or host, got "Host"$/),
	c('large', ['--large', '1G'], o => o.map.large, '1G', ['--large', '2G'], /^--large needs a size from 1 to 1G \(2G is not\)/),
	c('small', ['--small', '1M'], o => o.map.small, '1M', ['--small', '0'], /^--small needs a size from 1 to 1M \(0 is not\)/),
	c('iters', ['--iters', '9'], o => o.map.iters, 9, ['--iters', '1001'], /^--iters needs an integer 1\.\.1000/),
	c('pairs', ['--pairs', 'sampled'], o => o.map.pairs, 'sampled', ['--pairs', 'most'], /^--pairs needs all or sampled, got "most"$/),
	c('max-ranks', ['--max-ranks', '64'], o => o.map.maxRanks, 64, ['--max-ranks', '1'], /^--max-ranks needs an integer 2\.\.1048576/),
	c('schedule', ['--schedule', 'rounds'], o => o.map.schedule, 'rounds', ['--schedule', 'parallel'], /^--schedule needs auto, sequential or rounds, got "parallel"$/),
	c('pair-timeout', ['--pair-timeout', '5'], o => o.map.pairTimeout, 5, ['--pair-timeout', '0'], /^--pair-timeout needs an integer 1\.\.86400, got "0"$/),
	c('mca', ['--mca', 'btl', 'tcp,self'], o => o.mca, [['btl', 'tcp,self']], ['--flavor', 'mpich', '--mca', 'pml', 'ob1'], /MCA parameters \(pml\) are Open MPI only/),
	c('preset', ['--preset', 'UCX_TLS=^cuda_ipc'], o => o.env, [['UCX_TLS', '^cuda_ipc']], ['--preset', 'x'], /^--preset needs NAME=VALUE/),
	c('loopback', ['--loopback'], o => o.loopback, true, ['--loopback=1'], /^--loopback takes no value/),
	...targetCases<MapO>([], []),
	c('timeout', ['--timeout', '60'], o => o.timeoutS, 60, ['--timeout', '86401'], /^--timeout needs an integer 1\.\.86400, got "86401"$/),
	// The batch options (mapBatchCli.ts BATCH_OPTIONS): --sbatch needs the job's size, which sets --np; srun inside the job.
	c('sbatch', ['--sbatch', '--sbatch-arg', '-n4'], o => [o.batch.sbatch, o.np, o.srun], [true, 4, true], ['--sbatch'], /^--sbatch needs the job's size/),
	c('sbatch-arg', ['--sbatch-arg', '--nodes=2', '--sbatch-arg=--ntasks-per-node=3'], o => [o.batch.sbatch, o.batch.sbatchArgs, o.np], [true, ['--nodes=2', '--ntasks-per-node=3'], 6], ['--sbatch-arg', '-n4', '--sbatch-arg', '--output=x'], /^--sbatch-arg: sbatch option --output is not accepted here/),
	c('sbatch-dir', ['--sbatch-arg', '-n2', '--sbatch-dir', 'runs'], o => o.batch.dir, 'runs', ['--sbatch-arg', '-n2', '--sbatch-dir', ''], /^--sbatch-dir needs a directory$/),
	c('cancel-on-interrupt', ['--sbatch-arg', '-n2', '--cancel-on-interrupt'], o => o.batch.cancelOnInterrupt, true, ['--cancel-on-interrupt'], /^--sbatch-dir and --cancel-on-interrupt need --sbatch \(or --follow\)$/),
	c('follow', ['--follow', 'j.job.json', '--json'], o => [o.batch.follow, o.json], ['j.job.json', true], ['--follow', 'j.job.json', '--pairs', 'all'], /^--follow reads a job as it was submitted \(its file holds the run's options\): --pairs cannot apply$/),
	c('from-json', ['--from-json', 'm.json'], o => o.fromJson, 'm.json', ['--from-json', 'm.json', '--explain-latency'], /^--explain-latency runs an experiment; --from-json prints a saved file$/),
	c('explain-latency', ['--explain-latency'], o => [o.np, o.explain?.length, o.map.large, o.map.iters], [2, 7, '1M', 20], ['--explain-latency', '--np', '4'], /^--explain-latency measures one pair: 2 ranks, got --np 4$/),
	c('factors', ['--explain-latency', '--factors', 'mps,ob1-tcp'], o => o.explain?.map(f => f.id), ['mps', 'ob1-tcp'], ['--factors', 'mps'], /^--factors and --trials need --explain-latency$/),
	c('trials', ['--explain-latency', '--trials', '5'], o => o.trials, 5, ['--explain-latency', '--trials', '1'], /^--trials needs an integer 2\.\.200, got "1"$/),
]);

/** guard: the options before `--`, then a COMMAND that is not a launcher. */
const GUARD = subject<Guard>('guard', GUARD_OPTIONS, argv => parseGuardArgs([...argv, '--', './app', '--mode', 'x']), [
	c('mode', ['--mode', 'fix'], o => [o.mode, o.command], ['fix', ['./app', '--mode', 'x']], ['--mode', 'repor'], /^--mode needs report, warn or fix, got "repor"$/),
	c('stage', ['--stage'], o => o.stage, true, ['--stage=1'], /^--stage takes no value/),
	c('json', ['--json'], o => o.json, true, ['--json=0'], /^--json takes no value/),
	c('out', ['--out', 'g.json'], o => o.out, 'g.json', ['--out', ''], /^--out needs a file name$/),
	c('np', ['--np', '2'], o => o.np, 2, ['--np', '0'], /^--np needs an integer 1\.\.4096, got "0"$/),
	c('report-dir', ['--report-dir', '/shared'], o => o.reportDir, '/shared', ['--report-dir', 'rel'], /^--report-dir needs an absolute directory, got "rel"$/),
	c('guard-lib', ['--guard-lib', '/x/libgpumpi_guard.so'], o => o.guardLib, '/x/libgpumpi_guard.so', ['--guard-lib', 'lib.so'], /^--guard-lib needs an absolute path, got "lib\.so"$/),
	c('mpirun', ['--mpirun', 'mpirun.mpich'], o => o.mpirun, 'mpirun.mpich', ['--mpirun', '-x'], /^--mpirun needs a program name or path/),
	c('flavor', ['--flavor', 'mpich'], o => o.flavor, 'mpich', ['--flavor', 'MPICH'], /^--flavor needs openmpi or mpich, got "MPICH"$/),
	c('preset', ['--preset', 'A=1', '--preset', 'B='], o => o.env, [['A', '1'], ['B', '']], ['--preset', 'A'], /^--preset needs NAME=VALUE/),
	...targetCases<Guard>([], ['--np', '2']),
	c('timeout', ['--timeout', '5'], o => o.timeoutS, 5, ['--timeout', '5s'], /^--timeout needs an integer 1\.\.86400, got "5s"$/),
]);

const INSPECT = subject<Inspect>('inspect', INSPECT_OPTIONS, argv => parseInspectArgs(argv, '/work'), [
	c('json', ['--json'], o => [o.json, o.htmlFile], [true, undefined], ['--json=1'], /^--json takes no value/),
	c('html', ['--html', 'r.html'], o => o.htmlFile, '/work/r.html', ['--html', ''], /^--html needs a file name$/),
	c('ranks', ['--ranks', '4'], o => o.settings.ranks, 4, ['--ranks', '1025'], /^--ranks needs an integer 1\.\.1024, got "1025"$/),
	c('engine', ['--engine', 'build/gpumpi'], o => o.settings.enginePath, '/work/build/gpumpi', ['--engine', '-x'], /^--engine needs the path of the gpumpi engine: must be a program, not an option$/),
	c('mpirun', ['--mpirun', 'mpirun.openmpi'], o => o.settings.mpirunPath, 'mpirun.openmpi', ['--mpirun', ''], /^--mpirun needs a program name or path: it is empty$/),
	c('timeout', ['--timeout', '2.5'], o => o.settings.timeoutSeconds, 2.5, ['--timeout', '3601'], /^--timeout needs a number 1\.\.3600, got "3601"$/),
	c('verbose', ['-v'], o => o.verbose, true, ['-v=1'], /^unknown option "-v=1"/),
	c('host', ['--host', 'user@login1'], o => o.where.host, 'user@login1', ['--host=-oProxyCommand=x'], /^--host: the ssh destination/),
	c('setup', ['--host', 'h', '--setup', 'module load openmpi'], o => o.where.setup, 'module load openmpi', ['--setup', 'x'], /^--setup and --ssh-config need --host$/),
	c('ssh-config', ['--host', 'h', '--ssh-config', 'cfg'], o => o.where.sshConfig, '/work/cfg', ['--ssh-config', 'cfg'], /^--setup and --ssh-config need --host$/),
	c('connect-timeout', ['--host', 'h', '--connect-timeout', '3'], o => o.where.connectTimeoutSeconds, 3, ['--connect-timeout', '3'], /^--connect-timeout needs --host$/),
	c('srun', ['--srun'], o => o.where.srun, { srun: 'srun', mpi: null, allocation: [] }, ['--srun=1'], /^--srun takes no value/),
	c('srun-mpi', ['--srun-mpi', 'pmi2'], o => o.where.srun?.mpi, 'pmi2', ['--srun-mpi', 'a b'], /^--srun-mpi needs a plugin name like pmi2 or pmix, got "a b"$/),
	c('srun-arg', ['--srun-arg', '-N2'], o => o.where.srun?.allocation, ['-N2'], ['--srun-arg'], /^--srun-arg needs a value$/),
	c('program', ['--program', 'train.py'], o => o.program, '/work/train.py', ['--program', ''], /^--program needs a program or script path$/),
]);

const COLLECT = subject<ReturnType<typeof parseCollectArgs>>('collect', COLLECT_OPTIONS, parseCollectArgs, [
	c('out', ['--out', 'b'], o => o.out, 'b', ['--out', ''], /^--out needs a directory$/),
	c('host', ['--host', 'h'], o => o.host, 'h', ['--host', '-x'], /^--host: the ssh destination/),
	c('setup', ['--host', 'h', '--setup', 'x'], o => o.setup, 'x', ['--setup', 'x'], /^--setup and --ssh-config need --host$/),
	c('ssh-config', ['--host', 'h', '--ssh-config', 'c'], o => o.sshConfig, 'c', ['--ssh-config', 'c'], /^--setup and --ssh-config need --host$/),
]);

const ANALYZE = subject<ReturnType<typeof parseAnalyzeArgs>>('analyze', ANALYZE_OPTIONS, parseAnalyzeArgs, [
	c('json', ['b', '--json'], o => [o.dir, o.json], ['b', true], ['--json'], /^give exactly one bundle directory$/),
]);

const SUBJECTS = [REPRO, MAP, GUARD, INSPECT, COLLECT, ANALYZE] as unknown as Array<Subject<never>>;

/** The UsageError message of `parse(argv)` (fails when it parses). */
function refusal(s: Subject<never>, argv: string[]): string {
	try { s.parse(argv); } catch (e) {
		assert.ok(e instanceof UsageError, `${s.name} ${JSON.stringify(argv)} threw ${String(e)}`);
		return e.message;
	}
	return assert.fail(`${s.name} ${JSON.stringify(argv)} was accepted`);
}

describe('CLI option tables: every option of every subcommand', () => {
	for (const s of SUBJECTS) {
		it(`${s.name}: the cases name exactly the table's options`, () => {
			assert.deepEqual(s.cases.map(x => x.option).sort(), Object.keys(s.table).sort());
		});
		it(`${s.name}: each option sets what it says, and refuses a bad value with a message naming it`, () => {
			for (const x of s.cases) {
				assert.deepEqual(x.get(s.parse(x.good)), x.want, `${s.name} ${x.good.join(' ')}`);
				assert.match(refusal(s, x.bad), x.says, `${s.name} ${JSON.stringify(x.bad)}`);
			}
		});
	}

	it('shared options are declared once: the same kind in every table that takes them', () => {
		const shared = { ...LAUNCH_OPTIONS, ...TARGET_OPTIONS } as OptionTable;
		let seen = 0;
		for (const s of SUBJECTS) {
			for (const [k, o] of Object.entries(s.table)) {
				if (!(k in shared) || (s.name === 'inspect' && k === 'timeout')) { continue; }
				assert.equal(o.kind, shared[k].kind, `${s.name} --${k} has a kind of its own`);
				seen++;
			}
		}
		assert.ok(seen >= 50, `only ${seen} shared uses`);
	});

	it('repro: an option whose help starts "ipc:" or "fallback:" is refused by the other form, and only those', () => {
		for (const x of REPRO.cases) {
			const only = /^(ipc|fallback):/.exec(REPRO_OPTIONS[x.option as keyof typeof REPRO_OPTIONS].help)?.[1];
			const other = x.good[0] === 'ipc' ? 'fallback' : 'ipc';
			const argv = [other, ...x.good.slice(1)];
			if (only) {
				assert.equal(x.good[0], only, `--${x.option}'s case uses its own form`);
				assert.equal(refusal(REPRO as unknown as Subject<never>, argv), `--${x.option} is a repro ${only} option, not one of repro ${other}`);
			} else if (x.option !== 'np') {
				assert.doesNotThrow(() => parseReproArgs(argv), `--${x.option} in repro ${other}`);
			}
		}
	});

	it('every --help names every option of its table, within 120 columns (the synopsis aside), and goes to stdout with exit 0', async () => {
		for (const s of SUBJECTS) {
			const io = captureIo('/tmp');
			assert.equal(await main([s.name, '--help'], io), 0, s.name);
			assert.equal(io.err, '');
			if (s.name === 'collect') { assert.equal(io.out, COLLECT_USAGE); }
			if (s.name === 'analyze') { assert.equal(io.out, ANALYZE_USAGE); }
			const lines = io.out.split('\n');
			for (const [k, o] of Object.entries(s.table)) {
				assert.ok(lines.some(l => l.startsWith(`  ${optionLabel(k, o)} `) || l === `  ${optionLabel(k, o)}`), `${s.name} --help lacks --${k}`);
			}
			const body = lines.slice(lines.findIndex(l => l.startsWith('  --')));
			assert.ok(body.every(l => l.length <= 120), `${s.name}: ${body.find(l => l.length > 120)}`);
		}
	});
});
