/**
 * Every rule fires and stays quiet on real fixture combinations, through the public analyze() entry point.
 * Where a test adds an input that could not be captured (a GPU rank's engine JSON, a site environment seen on the
 * H200 device), it says so and quotes where the value comes from.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze } from '../../../extension/core/analyze';
import type { Finding, RawOutput } from '../../../extension/shared/report';
import { debianMpichRaw, debianRaw, fixtureText, h200Engine, h200Raw, rawFromFixture, rawText, seedRaw } from './fixtureRaw';

function ids(raw: RawOutput[]): string[] { return analyze(raw, 'test').findings.map((f) => f.id); }
function find(raw: RawOutput[], id: string): Finding[] { return analyze(raw, 'test').findings.filter((f) => f.id === id); }
function withOut(raw: RawOutput[], id: string): RawOutput[] { return raw.filter((r) => r.id !== id); }

/**
 * SYNTHETIC engine document, used only where no real capture can exist: the engine always makes a CUDA context
 * current before MPI_Init on a GPU, so "no context at MPI_Init" cannot be captured from it. This is the REAL
 * H200 capture inspect-np1.json with only `initialised_before_mpi_init` flipped to false in every rank.
 */
function uninitialisedEngine(): RawOutput {
	const real = h200Engine('inspect-np1.json');
	const doc = JSON.parse(real.stdout) as { ranks: { cuda: Record<string, unknown> }[] };
	for (const r of doc.ranks) { r.cuda.initialised_before_mpi_init = false; }
	return { ...real, stdout: JSON.stringify(doc) };
}

/** The site variable the H200 testbed's mpirun handed every rank (quoted from shared/knowledge/observed.md B). */
const OBSERVED_COMPONENT_PATH = '/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix';

describe('rules on real fixtures', () => {
	it('mpi-not-cuda-aware: Debian Open MPI (engine compile/run time false + ompi_info), not on the H200 testbed', () => {
		const f = find(debianRaw(), 'mpi-not-cuda-aware').find((x) => x.severity === 'warning');
		assert.ok(f);
		assert.match(f.message, /Open MPI 4\.1\.4 is not CUDA-aware \(compile time\)/);
		assert.ok(f.evidence.some((e) => e.line === 'ranks[0].mpi.cuda_aware.compile_time: false'));
		assert.ok(f.evidence.some((e) => e.line === 'mca:mpi:base:param:mpi_built_with_cuda_support:value:false'));
		// Without the engine the build-time fact alone still fires.
		const noEngine = find(withOut(debianRaw(), 'engine'), 'mpi-not-cuda-aware').find((x) => x.severity === 'warning');
		assert.match(noEngine?.message ?? '', /\(build\)/);
		assert.equal(find(h200Raw(), 'mpi-not-cuda-aware').length, 0);
	});

	it('mpi-not-cuda-aware: MPICH run time (MPIX_GPU_query_support false) with the MPICH fix', () => {
		const f = find(debianMpichRaw(), 'mpi-not-cuda-aware');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /^MPICH 4\.0\.2 is not CUDA-aware \(run time\): MPIX_GPU_query_support returned false/);
		// MPIR_CVAR_ENABLE_GPU already defaults to on: the fix is a build with --with-cuda, not the variable.
		assert.equal(f[0].fix?.command, 'mpichversion | grep -i cuda');
		assert.match(f[0].fix?.text ?? '', /--with-cuda/);
		assert.equal(analyze(debianMpichRaw(), 'x').summary.mpi.label, 'MPICH 4.0.2');
	});

	it('mpi-not-cuda-aware: real H200 capture without the component path is built with CUDA but not CUDA-aware at run time', () => {
		const nocp = h200Engine('inspect-np4-nocp.json');
		for (const raw of [[nocp], [...h200Raw(), nocp]]) {
			const f = find(raw, 'mpi-not-cuda-aware');
			assert.equal(f.length, 1);
			assert.match(f[0].message, /^Open MPI 5\.0\.7 is built with CUDA but not CUDA-aware at run time/);
			assert.match(f[0].message, /MPIX_Query_cuda_support returned false in rank 0/);
			assert.ok(f[0].evidence.some((e) => e.line === 'ranks[0].mpi.cuda_aware.run_time: false'));
		}
		assert.match(find([...h200Raw(), nocp], 'mpi-not-cuda-aware')[0].message, /ompi_info says so; MPIX_CUDA_AWARE_SUPPORT = 1/);
		assert.equal(analyze([...h200Raw(), nocp], 'x').summary.mpi.cudaAware, 'no');
		assert.equal(analyze([nocp], 'x').summary.mpi.detail, 'built with CUDA but not CUDA-aware at run time: MPIX_Query_cuda_support returned false in rank 0');
		// The same stack launched with --mca mca_base_component_path: CUDA-aware at run time.
		for (const file of ['inspect-np1.json', 'inspect-np4.json', 'inspect-np1-verbose.json'] as const) {
			assert.equal(find([...h200Raw(), h200Engine(file)], 'mpi-not-cuda-aware').length, 0, file);
			assert.equal(analyze([...h200Raw(), h200Engine(file)], 'x').summary.mpi.cudaAware, 'yes', file);
		}
	});

	it('ucx-without-cuda: Debian UCX fires, H200 UCX (cuda_copy, cuda_ipc) does not', () => {
		const f = find(debianRaw(), 'ucx-without-cuda');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /transports: self, tcp, sysv, posix, cma/);
		assert.equal(f[0].evidence[0].line, '# Version 1.13.1');
		assert.equal(find(h200Raw(), 'ucx-without-cuda').length, 0);
	});

	it('ompi-pml-ucx-disabled-by-param-file: quotes "pml = ^ucx" and its file; warning once a GPU is present', () => {
		const f = find(debianRaw(), 'ompi-pml-ucx-disabled-by-param-file');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info', 'no GPU and no CUDA UCX on the Debian machine');
		assert.deepEqual(f[0].evidence[0], { source: 'mca_params:/etc/openmpi/openmpi-mca-params.conf', line: 'pml = ^ucx', lineNo: 69 });
		assert.match(f[0].message, /\/etc\/openmpi\/openmpi-mca-params\.conf line 69/);
		// Debian's site file next to the H200 stack (GPU + CUDA UCX): same line, now a warning.
		const combo = [...h200Raw(), rawFromFixture('debian12-cpu', 'mca_params:/etc/openmpi/openmpi-mca-params.conf', 'mca_params.txt')];
		assert.equal(find(combo, 'ompi-pml-ucx-disabled-by-param-file')[0].severity, 'warning');
		assert.equal(find(h200Raw(), 'ompi-pml-ucx-disabled-by-param-file').length, 0);
	});

	it('ompi-component-path-overridden: fires for the path observed on the H200 device, not for the own path', () => {
		const env = rawText('env', `${fixtureText('h200-testbed', 'env.txt')}OMPI_MCA_mca_base_component_path=${OBSERVED_COMPONENT_PATH}\n`);
		const f = find([...withOut(h200Raw(), 'env'), env], 'ompi-component-path-overridden');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'error');
		assert.equal(f[0].fix?.command, 'mpirun --mca mca_base_component_path /opt/testbed2/lib/openmpi ...');
		assert.equal(f[0].evidence[0].line, `OMPI_MCA_mca_base_component_path=${OBSERVED_COMPONENT_PATH}`);
		// Seen only in the ranks' environment (how it really happened: the real np4 capture without --mca).
		const g = find([...h200Raw(), h200Engine('inspect-np4-nocp.json')], 'ompi-component-path-overridden');
		assert.equal(g.length, 1);
		assert.equal(g[0].severity, 'error');
		assert.match(g[0].message, /engine rank 0 environment/);
		assert.match(g[0].message, /The engine confirms it: rank 0 was built with CUDA/);
		assert.equal(g[0].evidence[0].line, `ranks[0].env.OMPI_MCA_mca_base_component_path: "${OBSERVED_COMPONENT_PATH}"`);
		// Engine alone (no ompi_info, prefix unknown): still an error, because the ranks confirm the failure.
		assert.equal(find([h200Engine('inspect-np4-nocp.json')], 'ompi-component-path-overridden')[0].severity, 'error');
		// The real captures with --mca mca_base_component_path /opt/testbed2/lib/openmpi: quiet, with or without ompi_info.
		for (const file of ['inspect-np1.json', 'inspect-np4.json'] as const) {
			assert.equal(find([...h200Raw(), h200Engine(file)], 'ompi-component-path-overridden').length, 0, file);
			assert.equal(find([h200Engine(file)], 'ompi-component-path-overridden').length, 0, file);
		}
		const own = rawText('env', 'OMPI_MCA_mca_base_component_path=/opt/testbed2/lib/openmpi\n');
		assert.equal(find([...withOut(h200Raw(), 'env'), own], 'ompi-component-path-overridden').length, 0);
		assert.equal(find(debianRaw(), 'ompi-component-path-overridden').length, 0);
	});

	it('ompi-pml-ucx-transport-defaults: none match on Debian (warning), cuda_ipc but no mlx device on H200 (info)', () => {
		const d = find(debianRaw(), 'ompi-pml-ucx-transport-defaults');
		assert.equal(d[0].severity, 'warning');
		assert.match(d[0].message, /did not match transport list/);
		assert.equal(d[0].fix?.command, 'mpirun --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any ...');
		const h = find(h200Raw(), 'ompi-pml-ucx-transport-defaults');
		assert.equal(h[0].severity, 'info');
		assert.match(h[0].message, /UCX offers cuda_ipc/);
		assert.equal(find(withOut(debianRaw(), 'ucx_info_d'), 'ompi-pml-ucx-transport-defaults').length, 0);
	});

	it('ucx-tls-excludes-cuda: UCX_TLS=tcp,self fires; the testbed\'s tcp,cuda_copy,self does not; ^cuda_ipc is info', () => {
		const base = withOut(h200Raw(), 'env');
		const bad = find([...base, rawText('env', 'UCX_TLS=tcp,self\n')], 'ucx-tls-excludes-cuda');
		assert.equal(bad.length, 1);
		assert.equal(bad[0].severity, 'warning');
		assert.equal(bad[0].fix?.command, 'export UCX_TLS=tcp,self,cuda_copy,cuda_ipc');
		assert.equal(find([...base, rawText('env', 'UCX_TLS=tcp,cuda_copy,self\n')], 'ucx-tls-excludes-cuda').length, 0);
		const ipcOff = find([...base, rawText('env', 'UCX_TLS=^cuda_ipc\n')], 'ucx-tls-excludes-cuda');
		assert.equal(ipcOff[0].severity, 'info');
		assert.equal(find(h200Raw(), 'ucx-tls-excludes-cuda').length, 0);
		// A deny list loses only its CUDA entries (was: UCX_TLS=all, which also undid the user's other exclusions).
		const deny = (v: string) => find([...base, rawText('env', `UCX_TLS=${v}\n`)], 'ucx-tls-excludes-cuda')[0]?.fix?.command;
		assert.equal(deny('^cuda,ud'), 'export UCX_TLS=^ud');
		assert.equal(deny('^cuda_copy'), 'unset UCX_TLS');
		// An allow list that has cuda_ipc already gets cuda_copy only, once.
		const allow = find([...base, rawText('env', 'UCX_TLS=sm,cuda_ipc\n')], 'ucx-tls-excludes-cuda')[0];
		assert.equal(allow?.fix?.command, 'export UCX_TLS=sm,cuda_ipc,cuda_copy');
		assert.match(allow?.message ?? '', /leaves out cuda_copy: UCX/);
	});

	it('running-as-root: fires for uid=0 with Open MPI, not for another uid', () => {
		const f = find(debianRaw(), 'running-as-root');
		assert.equal(f[0].evidence[0].line, 'uid=0');
		const user = [...withOut(debianRaw(), 'identity'), rawText('identity', 'uid=1000\nuser=alice\nhostname=vm\n')];
		assert.equal(find(user, 'running-as-root').length, 0);
		// The option first; the two variables only from Open MPI 4.0 (said).
		assert.match(f[0].fix?.command ?? '', /^mpirun --allow-run-as-root \.\.\.   # or, Open MPI >= 4\.0: export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1$/);
		// The collector's own note that it added --allow-run-as-root is no refusal: with both variables set, quiet.
		const note = '--allow-run-as-root added: running as root (uid 0) and Open MPI\'s mpirun refuses root without it';
		const allowed = [...withOut(withOut(debianRaw(), 'env'), 'engine'), rawText('env', 'OMPI_ALLOW_RUN_AS_ROOT=1\nOMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\n'),
			{ ...debianRaw().find((r) => r.id === 'engine')!, notes: [note] }];
		assert.ok(analyze(allowed, 't').facts.raw.length > 0);
		assert.equal(find(allowed, 'running-as-root').length, 0);
		// The real refusal (test-fixtures/repro/launch/ompi-launch-root.stderr) is one, uid known or not.
		const refusal = fs.readFileSync(path.join('test-fixtures', 'repro', 'launch', 'ompi-launch-root.stderr'), 'utf8');
		const refused = find([...withOut(user, 'engine'), rawText('engine', '', { exitCode: 1, stderr: refusal })], 'running-as-root');
		assert.equal(refused.length, 1);
		assert.match(refused[0].message, /^mpirun refused to start as root\./);
	});

	it('known-harmless-messages: without UCM hooks UCX keeps no memtype cache and asks the driver (memtype_cache.c@v1.13.1), not "takes memory for host"', () => {
		// The line as UCX prints it (the H200 testbed's runs; here in an engine stderr).
		const line = '[1733000000.000000] [h:1 :0] memtype_cache.c:400 UCX DIAG failed to set UCM memtype event handler: Unsupported operation';
		const f = find([...h200Raw(), h200Engine('inspect-np1.json', line)], 'known-harmless-messages');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /keeps no memory-type cache and asks the driver about every buffer: memory types are detected correctly/);
		assert.doesNotMatch(f[0].message, /may be taken for host memory — see/);
	});

	it('ucx-cuda-ipc-imported-pointers: H200 (pml ucx + cuda_ipc) and the seed report (inferred), not Debian', () => {
		const h = find(h200Raw(), 'ucx-cuda-ipc-imported-pointers');
		assert.equal(h.length, 1);
		// What the device runs showed (docs/device-results.md): unreliable, not "correct in every configuration"; no
		// workaround through UCX_TLS=^cuda_ipc; the fix the guard applies.
		assert.equal(h[0].fix?.command, 'gpumpi-doctor guard --mode fix -- mpirun -np 4 ./your_program');
		assert.match(h[0].message, /crashed in some trials of every run — unreliable/);
		assert.match(h[0].message, /UCX_TLS=\^cuda_ipc failed as often or more/);
		assert.doesNotMatch(h[0].message, /correct in every configuration|not yet confirmed/);
		assert.match(h[0].fix?.text ?? '', /bounce buffer/);
		assert.ok(!h[0].sources?.some((s) => /ucx\/issues\/(3192|4707)|ucx\/pull\/11754/.test(s.url)), 'no source for another failure');
		assert.ok(h[0].sources?.some((s) => s.url === 'docs/device-results.md#ipc-pointer-reproducer-with-trials-issue-12s-check'));
		assert.ok(h[0].sources?.some((s) => s.url === 'https://github.com/openucx/ucx/blob/v1.20.0/src/uct/cuda/cuda_ipc/cuda_ipc_md.c'));
		assert.doesNotMatch(`${h[0].message} ${h[0].source ?? ''}`, /14305/);
		const s = find(seedRaw(), 'ucx-cuda-ipc-imported-pointers');
		assert.equal(s.length, 1);
		assert.match(s[0].message, /inferred/);
		assert.equal(find(debianRaw(), 'ucx-cuda-ipc-imported-pointers').length, 0);
	});

	it('ucx-staging-pool-growth: H200 (cuda_copy, no gdr_copy, no IB), not Debian', () => {
		const f = find(h200Raw(), 'ucx-staging-pool-growth');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /set the size of the pool's chunks \(64 MiB host \/ 512 MiB GPU by default\), not a limit/);
		assert.match(f[0].message, /openucx\/ucx pull request 11062 \(not in a release\)/);
		assert.doesNotMatch(`${f[0].fix?.text} ${f[0].fix?.command}`, /UCX_RNDV_FRAG_ALLOC_COUNT|UCX_RNDV_FRAG_SIZE/);
		assert.equal(find(debianRaw(), 'ucx-staging-pool-growth').length, 0);
	});

	it('ucx-version-known-issues: UCX 1.13.1 predates dmabuf; no UCX facts → quiet', () => {
		assert.match(find(debianRaw(), 'ucx-version-known-issues')[0].message, /1\.13\.1 predates 1\.14/);
		assert.equal(find(seedRaw(), 'ucx-version-known-issues').length, 0);
		// 1.15.0rc3 is the version U#9287 measured (synthetic -v line in the real format).
		const rc = [rawText('ucx_info_v', '# Library version: 1.15.0rc3\n')];
		assert.equal(find(rc, 'ucx-version-known-issues')[0].severity, 'warning');
	});

	it('no-gpudirect-rdma: H200 without nvidia_peermem; not without a GPU', () => {
		const f = find(h200Raw(), 'no-gpudirect-rdma');
		assert.equal(f[0].evidence[0].source, 'sys_module_nvidia');
		assert.equal(find(withOut(h200Raw(), 'sys_module_nvidia'), 'no-gpudirect-rdma').length, 0);
		assert.equal(find(debianRaw(), 'no-gpudirect-rdma').length, 0);
	});

	it('gpu-visible-mpi-not-cuda-aware: H200 GPU with Debian\'s Open MPI; not with the testbed Open MPI', () => {
		const combo = [...withOut(withOut(h200Raw(), 'ompi_info'), 'mpirun_version'), rawFromFixture('debian12-cpu', 'ompi_info'), rawFromFixture('debian12-cpu', 'mpirun_version')];
		const f = find(combo, 'gpu-visible-mpi-not-cuda-aware');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'error');
		assert.match(f[0].evidence[0].line, /NVIDIA H200/);
		assert.equal(find(h200Raw(), 'gpu-visible-mpi-not-cuda-aware').length, 0);
	});

	it('no-gpu-visible: Debian (nvidia-smi absent, libcuda.so.1 not loadable), not H200', () => {
		const f = find(debianRaw(), 'no-gpu-visible');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /CUDA driver library could not be loaded \(libcuda\.so\.1: cannot open shared object file/);
		assert.equal(find(h200Raw(), 'no-gpu-visible').length, 0);
	});

	it('cuda-not-initialised-before-mpi-init: GPU rank without a context at MPI_Init (synthetic flip of a real capture)', () => {
		const f = find([...h200Raw(), uninitialisedEngine()], 'cuda-not-initialised-before-mpi-init');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /^1 rank\(s\) had no current CUDA context/);
		// Open MPI initialises CUDA lazily: reported as an observation (info), with no mechanism claimed.
		assert.equal(f[0].severity, 'info');
		assert.match(f[0].message, /crashed in 11 of 11 trials in that order/);
		assert.doesNotMatch(f[0].message, /not yet measured/);
		assert.doesNotMatch(f[0].message, /null accelerator|falls back/);
		assert.doesNotMatch(f[0].fix?.command ?? '', /MPI_Init/);
		for (const file of ['inspect-np1.json', 'inspect-np4.json', 'inspect-np4-nocp.json'] as const) {
			assert.equal(find([...h200Raw(), h200Engine(file)], 'cuda-not-initialised-before-mpi-init').length, 0, file);
		}
		// The real Debian engine has no GPU: initialised_before_mpi_init false must not fire.
		assert.equal(find(debianRaw(), 'cuda-not-initialised-before-mpi-init').length, 0);
	});

	it('smcuda-cumemhostregister-warning: explains the smcuda message when seen', () => {
		// Real np4 capture (stdout); its stderr was not captured, so the message text is the one quoted in
		// shared/knowledge/observed.md B ("The call to cuMemHostRegister(<addr>, 134217728, 0) failed … return value: 1").
		const eng = h200Engine('inspect-np4.json', 'The call to cuMemHostRegister(0x7f0000000000, 134217728, 0) failed.\n  return value: 1\n');
		const f = find([...h200Raw(), eng], 'smcuda-cumemhostregister-warning');
		assert.equal(f.length, 1);
		assert.equal(f[0].evidence[0].source, 'engine (stderr)');
		assert.ok(f[0].evidence.some((e) => /btl:smcuda/.test(e.line)));
		assert.equal(find(h200Raw(), 'smcuda-cumemhostregister-warning').length, 0);
		// Open MPI 5.0.7 has no switch for it (mpi_common_cuda_register_memory is 4.x only): no command; never ^smcuda.
		assert.equal(f[0].fix?.command, undefined);
		assert.match(f[0].fix?.text ?? '', /^Ignore it: Open MPI 5 has no switch/);
	});

	it('mpi-not-found: nothing identified an MPI; quiet on Debian', () => {
		const none: RawOutput[] = [
			rawText('which', 'mpicc=\nmpirun=\nmpiexec=\nompi_info=\nucx_info=\nnvidia-smi=\n'),
			{ id: 'ompi_info', command: ['ompi_info', '--parsable', '--all'], exitCode: null, stdout: '', stderr: '', durationMs: 0, error: 'not found' },
		];
		const f = find(none, 'mpi-not-found');
		assert.equal(f.length, 1);
		assert.equal(f[0].evidence[0].line, 'mpirun=');
		assert.equal(find(debianRaw(), 'mpi-not-found').length, 0);
		assert.doesNotMatch(JSON.stringify(f[0].fix), /apt-get install openmpi-bin/, 'not a distribution MPI: built without CUDA');
		// A launcher on PATH that no parser recognised (e.g. IBM Spectrum MPI; a stand-in launcher path here): no
		// "No MPI found", a warning that the family-specific checks are skipped.
		const unknown: RawOutput[] = [
			rawText('which', 'mpicc=\nmpirun=/opt/ibm/spectrum_mpi/bin/mpirun\nmpiexec=\nompi_info=\nucx_info=\nnvidia-smi=\n'),
			{ id: 'ompi_info', command: ['ompi_info', '--parsable', '--all'], exitCode: null, stdout: '', stderr: '', durationMs: 0, error: 'not found' },
		];
		const u = find(unknown, 'mpi-not-found');
		assert.equal(u[0]?.severity, 'warning');
		assert.match(u[0]?.message ?? '', /^An MPI is there \(\/opt\/ibm\/spectrum_mpi\/bin\/mpirun\), but none of ompi_info/);
	});

	it('mpi-tool-prefix-mismatch: mpirun from the testbed prefix, mpicc from /usr/bin', () => {
		const mixed = [...withOut(debianRaw(), 'which'), rawText('which', 'mpicc=/usr/bin/mpicc\nmpirun=/opt/testbed2/bin/mpirun\nompi_info=/usr/bin/ompi_info\n')];
		const f = find(mixed, 'mpi-tool-prefix-mismatch');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /2 different directories/);
		assert.equal(find(debianRaw(), 'mpi-tool-prefix-mismatch').length, 0);
	});

	it('known-harmless-messages: PMIx "bad prefix" noise is named harmless', () => {
		// Real np1 capture (stdout) with the PMIx message in the form shared/testbed/README.md quotes (stderr not captured).
		const eng = h200Engine('inspect-np1.json', '[vm:01234] process_repository_item: component path /opt/testbed2/lib/openmpi/mca_pml_ucx.so has bad prefix\n');
		assert.equal(find([...h200Raw(), eng], 'known-harmless-messages').length, 1);
		assert.equal(find(h200Raw(), 'known-harmless-messages').length, 0);
	});

	it('mpi-gpu-support-switched-off: Cray MPICH without MPICH_GPU_SUPPORT_ENABLED on a GPU host; MPICH only when switched off', () => {
		// SYNTHETIC mpirun --version text in Cray's format (no Cray system to capture from); GPU facts are the real H200 ones.
		const cray = [rawText('mpirun_version', 'MPI VERSION    : CRAY MPICH version 8.1.28.2 (ANL base 3.4a2)\n'), rawFromFixture('h200-testbed', 'nvidia_smi_xml')];
		const f = find(cray, 'mpi-gpu-support-switched-off');
		assert.equal(f.length, 1);
		assert.equal(f[0].fix?.command, 'export MPICH_GPU_SUPPORT_ENABLED=1');
		assert.equal(find([...cray, rawText('env', 'MPICH_GPU_SUPPORT_ENABLED=1\n')], 'mpi-gpu-support-switched-off').length, 0);
		// Real MPICH 4.0.2 engine run: quiet unless MPIR_CVAR_ENABLE_GPU is explicitly 0.
		assert.equal(find(debianMpichRaw(), 'mpi-gpu-support-switched-off').length, 0);
		const off = find([...debianMpichRaw(), rawText('env', 'MPIR_CVAR_ENABLE_GPU=0\n')], 'mpi-gpu-support-switched-off');
		assert.equal(off.length, 1);
		assert.equal(off[0].evidence[1].line, 'MPIR_CVAR_ENABLE_GPU=0');
	});

	it('launcher-env-differs: real nocp ranks got the PMIx component path the login shell lacks; --mca captures are quiet', () => {
		const f = find([...h200Raw(), h200Engine('inspect-np4-nocp.json')], 'launcher-env-differs');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /OMPI_MCA_mca_base_component_path=\/usr\/lib\/x86_64-linux-gnu\/pmix2\/lib\/pmix/);
		// With --mca mca_base_component_path on the command line (OMPI_ and PMIX_MCA_ copies in the ranks): quiet.
		assert.equal(find([...h200Raw(), h200Engine('inspect-np4.json')], 'launcher-env-differs').length, 0);
		// The real Debian engine run: OMPI_MCA_btl_tcp_if_include came from --mca on its command line, the rest is launcher bookkeeping.
		assert.equal(find(debianRaw(), 'launcher-env-differs').length, 0);
		// Under a Slurm GPU step (synthetic: the capture's rank env given SLURM_STEP_GPUS and a per-task
		// CUDA_VISIBLE_DEVICES), CUDA_VISIBLE_DEVICES is the scheduler's binding, never one value for every rank.
		const eng = h200Engine('inspect-np4-nocp.json');
		const doc = JSON.parse(eng.stdout) as { ranks: Array<{ env: Record<string, string> }> };
		for (const [i, r] of doc.ranks.entries()) { Object.assign(r.env, { SLURM_STEP_GPUS: String(i), CUDA_VISIBLE_DEVICES: String(i) }); }
		const slurm = find([...h200Raw(), { ...eng, stdout: JSON.stringify(doc) }], 'launcher-env-differs');
		assert.equal(slurm.length, 1, 'the component path is still reported');
		assert.doesNotMatch(slurm[0].message, /CUDA_VISIBLE_DEVICES/);
		// A PMIx parameter is passed with --pmixmca (docs/mca.rst@v5.0.7), not -x (synthetic: the rank env given one).
		const pm = JSON.parse(h200Engine('inspect-np4-nocp.json').stdout) as { ranks: Array<{ env: Record<string, string> }> };
		for (const r of pm.ranks) { r.env.PMIX_MCA_mca_base_component_path = '/somewhere/else'; }
		const pf = find([...h200Raw(), { ...h200Engine('inspect-np4-nocp.json'), stdout: JSON.stringify(pm) }], 'launcher-env-differs');
		assert.match(pf[0]?.fix?.command ?? '', /--pmixmca mca_base_component_path <value>/);
		assert.doesNotMatch(pf[0]?.fix?.command ?? '', /-x PMIX_MCA_/);
	});

	it('gpu-peer-access-missing: SYS link between two GPUs; single H200 is quiet', () => {
		// SYNTHETIC 2-GPU matrix in nvidia-smi topo -m's layout (the testbed has one GPU).
		const topo = rawText('nvidia_smi_topo', '\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tSYS\t0-47\t0\t\tN/A\nGPU1\tSYS\t X \t48-95\t1\t\tN/A\n\nLegend:\n');
		const f = find([topo], 'gpu-peer-access-missing');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /GPU0↔GPU1 \(SYS/);
		assert.equal(find(h200Raw(), 'gpu-peer-access-missing').length, 0);
		// The engine's answer (synthetic: the real np1 capture given a second device of another bus id, p2p false):
		// the pair named by bus id, as nvidia-smi topo -m shows them, not by rank 0's CUDA numbering.
		const eng = h200Engine('inspect-np1.json');
		const doc = JSON.parse(eng.stdout) as { ranks: Array<{ cuda: { devices: Array<Record<string, unknown>>; p2p: boolean[][] } }> };
		const d0 = doc.ranks[0].cuda.devices[0];
		doc.ranks[0].cuda.devices = [d0, { ...d0, pci_bus_id: '00000000:9A:00.0' }];
		doc.ranks[0].cuda.p2p = [[true, false], [false, true]];
		const p = find([...h200Raw(), { ...eng, stdout: JSON.stringify(doc) }], 'gpu-peer-access-missing');
		assert.match(p[0]?.message ?? '', new RegExp(`^1 GPU pair\\(s\\) cannot reach each other directly: ${String(d0.pci_bus_id).replace(/[.]/g, '\\.')}↔00000000:9A:00\\.0 \\(cuDeviceCanAccessPeer = false\\)`));
	});

	it('the real fixture sets give no parse problems and no rule failures', () => {
		const engines = (['inspect-np1.json', 'inspect-np4.json', 'inspect-np4-nocp.json', 'inspect-np1-verbose.json'] as const).map((f) => [...h200Raw(), h200Engine(f)]);
		for (const raw of [debianRaw(), h200Raw(), seedRaw(), debianMpichRaw(), ...engines]) {
			const bad = ids(raw).filter((i) => i === 'parse-problem' || i.startsWith('rule-failed'));
			assert.deepEqual(bad, []);
		}
	});
});
