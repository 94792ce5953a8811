/**
 * The platform, sysfs and tuning rules (platformRules.ts, tuningRules.ts, no-gpudirect-rdma on sys_modules) on the
 * real fixtures. Every input that is not a capture says what it is: a setting a user would make (env / MCA file
 * lines, quoted from observed.md or gpu-mpi-sources.md), a public quote (with its source), or a labelled synthetic
 * edit of a real capture where no such machine was available.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze } from '../../../extension/core/analyze';
import type { Finding, RawOutput } from '../../../extension/shared/report';
import { debianMpichRaw, debianRaw, FIXTURES, fixtureText, h200Engine, h200Raw, rawFromFixture, rawText } from './fixtureRaw';
import { MEASURED } from '../../../extension/core/rules/measured.generated';

function find(raw: RawOutput[], id: string): Finding[] { return analyze(raw, 'test').findings.filter((f) => f.id === id); }
function withOut(raw: RawOutput[], id: string): RawOutput[] { return raw.filter((r) => r.id !== id); }
/** The H200 fixture set with extra environment lines appended to its real env.txt. */
function h200WithEnv(lines: string): RawOutput[] { return [...withOut(h200Raw(), 'env'), rawText('env', fixtureText('h200-testbed', 'env.txt') + lines)]; }
/** The real sysfs capture of the Debian machine (test-fixtures/tools/debian12-cpu/sys_collect.json). */
function debianSys(): RawOutput[] { return JSON.parse(fs.readFileSync(path.join(FIXTURES, 'debian12-cpu', 'sys_collect.json'), 'utf8')) as RawOutput[]; }
/** SYNTHETIC edit of the real H200 `nvidia-smi -q -x` (no exclusive-mode / MIG GPU was available to capture). */
function h200XmlEdited(from: string, to: string): RawOutput {
	const xml = fixtureText('h200-testbed', 'nvidia_smi_xml.txt');
	assert.ok(xml.includes(from));
	return rawText('nvidia_smi_xml', xml.replace(from, to));
}

/** SYNTHETIC sysfs lines in sysCollect.ts's format (no machine with InfiniBand was available); values in the form the kernel's sysfs-class-infiniband ABI documents ("4: ACTIVE"). */
const SYNTH_IB_NODE0 = rawText('sys_infiniband', 'mlx5_0\tport=1\tstate=4: ACTIVE\tlink_layer=InfiniBand\trate=200 Gb/sec (4X HDR)\tnuma_node=0\tpci=0000:3b:00.0\n');
const synthGpuNuma = (node: number): RawOutput => rawText('sys_gpu_numa', `0000:19:00.0\tclass=0x030200\tnuma_node=${node}\tlocal_cpulist=0-47\n`);

describe('sysfs rules', () => {
	it('gpu-nic-numa-mismatch: sysfs GPU on node 1, active HCA on node 0 (synthetic); same node and the real Debian sysfs are quiet', () => {
		const f = find([synthGpuNuma(1), SYNTH_IB_NODE0], 'gpu-nic-numa-mismatch');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /GPU 0000:19:00\.0 is on NUMA node 1, the active RDMA ports on node\(s\) 0/);
		assert.match(f[0].message, /UCX's topology model rates a GPU–NIC path across NUMA nodes at 220 MB\/s .*openucx\/ucx#11121 measured 85 Gb\/s with ib_write_bw across NUMA nodes and 65 Gb\/s through UCX/);
		assert.equal(find([synthGpuNuma(0), SYNTH_IB_NODE0], 'gpu-nic-numa-mismatch').length, 0);
		assert.equal(find([...h200Raw(), ...debianSys()], 'gpu-nic-numa-mismatch').length, 0);
	});

	it('gpu-nic-numa-mismatch: nvidia-smi topo with a GPU that reaches the NIC only via SYS (synthetic matrix); the real H200 matrix is quiet', () => {
		// SYNTHETIC: the layout of `nvidia-smi topo -m` on a 2-GPU node with one NIC (same text as tools.test.ts).
		const topo = rawText('nvidia_smi_topo', '\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tNV18\tPIX\t0-47\t0\t\tN/A\nGPU1\tNV18\t X \tSYS\t48-95\t1\t\tN/A\nNIC0\tPIX\tSYS\t X \t\t\t\t\n\nLegend:\n');
		const f = find([topo], 'gpu-nic-numa-mismatch');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /^GPU1 reaches every NIC only across the CPU interconnect \(SYS\)/);
		assert.equal(find(h200Raw(), 'gpu-nic-numa-mismatch').length, 0);
	});

	it('gpu-nic-numa-mismatch: MVAPICH2-GDR\'s socket warning (public quote)', () => {
		// Public quote: test-fixtures/tools/public-quotes/ (reframe-hpc/reframe#265, MVAPICH2-GDR 2.2 run output).
		const out = rawText('repro', '', { stderr: fixtureText('public-quotes', 'mvapich2gdr_gpu_ib_socket.txt') });
		const f = find([out], 'gpu-nic-numa-mismatch');
		assert.equal(f.length, 1);
		assert.equal(f[0].evidence[0].line, 'Warning *** The GPU and IB selected are not on the same socket.');
	});

	it('no-gpudirect-rdma: reads sys_modules (the real H200 module listing); warning once an RDMA port is active', () => {
		const h = [...withOut(h200Raw(), 'sys_module_nvidia'), rawFromFixture('h200-testbed', 'sys_modules', 'sys_module_nvidia.txt', ['list', '/sys/module'])];
		const f = find(h, 'no-gpudirect-rdma');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'info');
		assert.deepEqual(f[0].evidence[0], { source: 'sys_modules', line: 'nvidia', lineNo: 1 });
		const withIb = find([...h, SYNTH_IB_NODE0], 'no-gpudirect-rdma');
		assert.equal(withIb[0].severity, 'warning');
		assert.match(withIb[0].message, /1 active RDMA port\(s\) \(mlx5_0:1 InfiniBand\)/);
		// /proc/modules format with nvidia_peermem loaded (SYNTHETIC line in /proc/modules layout): quiet.
		const loaded = rawText('sys_modules', 'nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\nnvidia 9871360 1 nvidia_peermem, Live 0x0000000000000000 (OE)\n/sys/module/nvidia_peermem/version=580.159.04\n');
		assert.equal(find([...withOut(h200Raw(), 'sys_module_nvidia'), loaded], 'no-gpudirect-rdma').length, 0);
		// The real Debian sysfs capture: no GPU, no finding.
		assert.equal(find([...debianRaw(), ...debianSys()], 'no-gpudirect-rdma').length, 0);
	});
	it('no-gpudirect-rdma: what the CUDA driver says about dma_buf (engine device attribute), and that it is unknown when not reported', () => {
		// The real H200 engine capture predates the attribute: "not known".
		const base = [...h200Raw(), h200Engine('inspect-np1.json')];
		assert.match(find(base, 'no-gpudirect-rdma')[0].message, /Whether this GPU supports dma_buf is not known/);
		// SYNTHETIC: the same capture with the fields the engine now prints set by hand.
		const withAttr = (dmaBuf: boolean): RawOutput => {
			const doc = JSON.parse(h200Engine('inspect-np1.json').stdout) as { ranks: Array<{ cuda: { devices: Array<Record<string, unknown>> } }> };
			for (const r of doc.ranks) { for (const d of r.cuda.devices) { d.gpu_direct_rdma_supported = true; d.dma_buf_supported = dmaBuf; } }
			return { ...h200Engine('inspect-np1.json'), stdout: JSON.stringify(doc) };
		};
		const yes = find([...h200Raw(), withAttr(true)], 'no-gpudirect-rdma')[0];
		assert.match(yes.message, /The CUDA driver reports dma_buf support for 0000:00:06\.0, but UCX 1\.13\.1 is older than 1\.14/);
		assert.ok(yes.evidence.some((e) => /cuda\.devices\[0\]: .*"dma_buf_supported":true/.test(e.line)), JSON.stringify(yes.evidence));
		const no = find([...h200Raw(), withAttr(false)], 'no-gpudirect-rdma')[0];
		assert.match(no.message, /reports no dma_buf support for 0000:00:06\.0: dma_buf is no way around the module there/);
	});

	it('the real Debian sysfs capture parses without problems', () => {
		const a = analyze([...debianRaw(), ...debianSys()], 'x');
		assert.deepEqual(a.findings.filter((f) => f.id === 'parse-problem' || f.id.startsWith('rule-failed')), []);
		assert.deepEqual(a.facts.sys.modules, []);
		assert.equal(a.facts.sys.ibPorts, null, 'no /sys/class/infiniband: not read');
		assert.deepEqual(a.facts.sys.gpuNuma, []);
	});
});

describe('GPU platform rules', () => {
	it('cuda-visible-devices-hides-gpus: empty CUDA_VISIBLE_DEVICES with nvidia-smi GPUs; a real index is quiet', () => {
		const f = find(h200WithEnv('CUDA_VISIBLE_DEVICES=\n'), 'cuda-visible-devices-hides-gpus');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'error');
		assert.match(f[0].message, /nvidia-smi \(which ignores the variable\) lists 1 GPU/);
		assert.equal(find(h200WithEnv('CUDA_VISIBLE_DEVICES=0\n'), 'cuda-visible-devices-hides-gpus').length, 0);
		assert.equal(find(h200Raw(), 'cuda-visible-devices-hides-gpus').length, 0);
		assert.match(f[0].fix?.command ?? '', /^srun --gres=gpu:/, 'request GPUs, not unset a value a scheduler may have set');
		// Only in the collector's shell, while every rank of the real 4-rank capture saw the GPU: no claim.
		assert.equal(find([...h200WithEnv('CUDA_VISIBLE_DEVICES=\n'), h200Engine('inspect-np4.json')], 'cuda-visible-devices-hides-gpus').length, 0);
		// A rank whose cuInit failed for another reason (synthetic: the real np1 capture with 0 devices and a driver
		// mismatch error) is told that error, not CUDA_VISIBLE_DEVICES; "no CUDA devices" keeps the old answer.
		const blind = (error: string) => {
			const eng = h200Engine('inspect-np1.json');
			const doc = JSON.parse(eng.stdout) as { ranks: Array<{ cuda: Record<string, unknown> }> };
			Object.assign(doc.ranks[0].cuda, { device_count: 0, devices: [], p2p: [], selected_device: -1, error });
			return find([...h200Raw(), { ...eng, stdout: JSON.stringify(doc) }], 'cuda-visible-devices-hides-gpus')[0];
		};
		const mismatch = blind('cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH');
		assert.match(mismatch?.message ?? '', /CUDA said "cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", which is the cause here, not CUDA_VISIBLE_DEVICES/);
		assert.match(blind('cuDeviceGetCount: no CUDA devices')?.message ?? '', /hides them/);
		assert.equal(find([...h200Raw(), h200Engine('inspect-np4.json')], 'cuda-visible-devices-hides-gpus').length, 0);
	});

	it('cuda-visible-devices-hides-gpus: a rank saw 0 devices while nvidia-smi saw one (synthetic flip of a real capture)', () => {
		const real = h200Engine('inspect-np1.json');
		const doc = JSON.parse(real.stdout) as { ranks: { cuda: Record<string, unknown> }[] };
		doc.ranks[0].cuda.device_count = 0;
		doc.ranks[0].cuda.devices = [];
		const f = find([...h200Raw(), { ...real, stdout: JSON.stringify(doc) }], 'cuda-visible-devices-hides-gpus');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /^Rank 0 loaded the CUDA driver but saw 0 devices/);
	});

	it('gpu-compute-mode-exclusive: Exclusive_Process with the real 4-rank capture on one GPU; Default is quiet', () => {
		const excl = h200XmlEdited('<compute_mode>Default</compute_mode>', '<compute_mode>Exclusive_Process</compute_mode>');
		const base = withOut(h200Raw(), 'nvidia_smi_xml');
		const f = find([...base, excl, h200Engine('inspect-np4.json')], 'gpu-compute-mode-exclusive');
		assert.equal(f.length, 1);
		// The capture ran in Default mode (the mode is edited in, synthetic): 4 ranks held contexts on the one GPU at
		// once, which under Exclusive_Process only MPS allows: said so as info, not "the others fail".
		assert.equal(f[0].severity, 'info');
		assert.match(f[0].message, /4 ranks held a CUDA context on that one GPU at the same time: only CUDA MPS allows that/);
		assert.ok(!/nvidia-smi -i 0 /.test(JSON.stringify(f)), 'never a command on GPU index 0 for a GPU named by its bus id');
		assert.equal(find([...base, excl, h200Engine('inspect-np1.json')], 'gpu-compute-mode-exclusive')[0].severity, 'info');
		assert.equal(find([...h200Raw(), h200Engine('inspect-np4.json')], 'gpu-compute-mode-exclusive').length, 0);
		const prohibited = h200XmlEdited('<compute_mode>Default</compute_mode>', '<compute_mode>Prohibited</compute_mode>');
		const p = find([...base, prohibited], 'gpu-compute-mode-exclusive')[0];
		assert.match(p?.fix?.command ?? '', /^nvidia-smi -i [0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d -c DEFAULT/, 'the GPU the message names, by bus id');
	});

	it('gpu-mig-enabled: current_mig Enabled (synthetic edit); the real Disabled is quiet', () => {
		const mig = h200XmlEdited('<current_mig>Disabled</current_mig>', '<current_mig>Enabled</current_mig>');
		const f = find([...withOut(h200Raw(), 'nvidia_smi_xml'), mig], 'gpu-mig-enabled');
		assert.equal(f.length, 1);
		assert.match(f[0].evidence[0].line, /<current_mig>Enabled<\/current_mig>/);
		assert.equal(find(h200Raw(), 'gpu-mig-enabled').length, 0);
	});
});

describe('tuning rules', () => {
	it('ompi-smcuda-cuda-ipc-disabled: the setting measured on the H200, from env or the engine\'s mpirun line; the default is quiet', () => {
		const f = find(h200WithEnv('OMPI_MCA_btl_smcuda_use_cuda_ipc=0\n'), 'ompi-smcuda-cuda-ipc-disabled');
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /^btl_smcuda_use_cuda_ipc is 0 \(env\): GPU-to-GPU messages between ranks on this node no longer use CUDA IPC, whichever GPUs they use/);
		assert.ok(f[0].message.includes(`from ${MEASURED.smcudaIpc1G.text} to ${MEASURED.smcudaNoIpc1G.text}`), f[0].message);
		assert.equal(f[0].fix?.command, 'mpirun --mca btl_smcuda_use_cuda_ipc 1 ...');
		// The same-GPU switch concerns only ranks that share a GPU: named as such, info.
		const same = find(h200WithEnv('OMPI_MCA_btl_smcuda_use_cuda_ipc_same_gpu=0\n'), 'ompi-smcuda-cuda-ipc-disabled');
		assert.equal(same.length, 1);
		assert.equal(same[0].severity, 'info');
		assert.match(same[0].message, /^btl_smcuda_use_cuda_ipc_same_gpu is 0 \(env\): ranks that share one GPU no longer use CUDA IPC between them \(ranks on different GPUs still do\)/);
		assert.equal(same[0].fix?.command, 'mpirun --mca btl_smcuda_use_cuda_ipc_same_gpu 1 ...');
		assert.equal(f[0].evidence[0].line, 'OMPI_MCA_btl_smcuda_use_cuda_ipc=0');
		const eng = h200Engine('inspect-np1.json');
		const cmd = { ...eng, command: [...eng.command.slice(0, 4), '--mca', 'btl_smcuda_use_cuda_ipc', '0', ...eng.command.slice(4)] };
		assert.equal(find([...h200Raw(), cmd], 'ompi-smcuda-cuda-ipc-disabled').length, 1);
		assert.equal(find([...h200Raw(), eng], 'ompi-smcuda-cuda-ipc-disabled').length, 0);
		assert.equal(find(debianRaw(), 'ompi-smcuda-cuda-ipc-disabled').length, 0);
	});

	it('ompi-cuda-support-param-off: a parameter file with opal_cuda_support = 0 on the CUDA build; env true overrides; Debian is quiet', () => {
		// opal_cuda_support switched off in an MCA parameter file (as a packaged build could ship it).
		const file = rawText('mca_params:/opt/conda/etc/openmpi-mca-params.conf', '# conda-forge\nopal_cuda_support = 0\n', { command: ['read', '/opt/conda/etc/openmpi-mca-params.conf'] });
		const f = find([...h200Raw(), file], 'ompi-cuda-support-param-off');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /opal_cuda_support is off \(\/opt\/conda\/etc\/openmpi-mca-params\.conf sets it to 0\)/);
		assert.equal(f[0].fix?.command, 'export OMPI_MCA_opal_cuda_support=true');
		assert.equal(find([...h200WithEnv('OMPI_MCA_opal_cuda_support=true\n'), file], 'ompi-cuda-support-param-off').length, 0);
		assert.equal(find(h200Raw(), 'ompi-cuda-support-param-off').length, 0);
		assert.equal(find(debianRaw(), 'ompi-cuda-support-param-off').length, 0, 'built without CUDA: mpi-not-cuda-aware covers it');
	});

	it('mpich-built-without-gpu: Debian MPICH (--without-yaksa): warning when in use, info when only installed; no --with-cuda alone is only a hint; H200 quiet', () => {
		const used = find(debianMpichRaw(), 'mpich-built-without-gpu');
		assert.equal(used[0].severity, 'warning');
		assert.match(used[0].message, /is the MPI in use; its configure line names no --with-cuda\. That alone does not settle it: MPICH's configure looks for CUDA on the build machine's default paths anyway/);
		assert.match(used[0].message, /but it has --without-yaksa, so it lacks yaksa/);
		assert.match(used[0].message, /MPIX_GPU_query_support returned false in rank 0 \(on a host with no GPU visible, where that says nothing about the build\)/);
		assert.ok(used[0].sources?.some((x) => x.url.endsWith('/pmodels/mpich/blob/v4.0.2/src/mpl/configure.ac')));
		// Without --without-yaksa and with no run-time answer: only a hint (synthetic configure line: the yaksa flag removed).
		const plain = debianMpichRaw().map(r => ({ ...r, stdout: r.stdout.replace(/ --without-yaksa/g, '') }));
		const hint = find(plain, 'mpich-built-without-gpu');
		assert.equal(hint[0]?.severity, 'info');
		assert.doesNotMatch(hint[0]?.message ?? '', /yaksa/);
		// --without-cuda settles it (synthetic configure line).
		const no = debianMpichRaw().map(r => ({ ...r, stdout: r.stdout.replace(/ --without-yaksa/g, ' --without-cuda') }));
		assert.match(find(no, 'mpich-built-without-gpu')[0]?.message ?? '', /--without-cuda: GPU support was left out at build time/);
		assert.equal(find(no, 'mpich-built-without-gpu')[0]?.severity, 'warning');
		assert.equal(find(debianRaw(), 'mpich-built-without-gpu')[0].severity, 'info');
		assert.equal(find(h200Raw(), 'mpich-built-without-gpu').length, 0);
	});

	it('ucx-cache-settings: explains UCX_MEMTYPE_CACHE / UCX_CUDA_IPC_CACHE when set', () => {
		const n = find(h200WithEnv('UCX_MEMTYPE_CACHE=n\nUCX_CUDA_IPC_CACHE=n\n'), 'ucx-cache-settings');
		assert.equal(n.length, 2);
		assert.match(n[0].message, /^UCX_MEMTYPE_CACHE=n \(collector environment; default try\)/);
		assert.match(n[1].message, /open-mpi\/ompi#9051, where the UCX maintainers suggest UCX_CUDA_IPC_CACHE=n/);
		// "y" is no riskier than the default "try" (both use the cache when the hooks are in): info, and the fix is n.
		const y = find(h200WithEnv('UCX_MEMTYPE_CACHE=y\n'), 'ucx-cache-settings')[0];
		assert.equal(y.severity, 'info');
		assert.equal(y.fix?.command, 'export UCX_MEMTYPE_CACHE=n');
		assert.match(y.message, /This UCX does not see: a statically linked CUDA runtime .*stream-ordered pools \(cudaMallocAsync; hooked from UCX 1\.14\)/);
		// Values UCX 1.13.1 does not take (on / off only from 1.15, exactly; never true): a warning that UCX stops.
		for (const bad of ['off', 'OFF', 'true']) {
			const f = find(h200WithEnv(`UCX_MEMTYPE_CACHE=${bad}\n`), 'ucx-cache-settings')[0];
			assert.equal(f?.severity, 'warning', bad);
			assert.match(f?.message ?? '', /is not a value UCX 1\.13\.1 takes .*aborts at library load/, bad);
		}
		// From 1.15 "off" is n (version line rewritten: synthetic).
		const v120 = h200WithEnv('UCX_MEMTYPE_CACHE=off\n').map(r => r.id === 'ucx_info_v' ? { ...r, stdout: r.stdout.replace(/# Version 1\.13\.1/, '# Version 1.20.0') } : r);
		assert.match(find(v120, 'ucx-cache-settings')[0]?.message ?? '', /asks CUDA for the memory type of every buffer/);
		assert.equal(find(h200Raw(), 'ucx-cache-settings').length, 0);
	});

	it('ucx-rndv-settings: explains UCX_RNDV_* when set, quoting ucx_info -c', () => {
		const raw = [...h200WithEnv('UCX_RNDV_FRAG_ALLOC_COUNT=host:16,cuda:16\nUCX_RNDV_SCHEME=put_zcopy\n'), rawFromFixture('h200-testbed', 'ucx_info_c')];
		const f = find(raw, 'ucx-rndv-settings');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /^2 UCX rendezvous setting/);
		assert.match(f[0].message, /UCX_RNDV_FRAG_ALLOC_COUNT=host:16,cuda:16 \(collector environment\): fragments allocated per pool chunk.*ucx_info -c shows host:128,cuda:128/);
		assert.equal(find([...h200Raw(), rawFromFixture('h200-testbed', 'ucx_info_c')], 'ucx-rndv-settings').length, 0);
		// UCX 1.13.1 (the H200 testbed): the default engine is the old one, so no UCX_PROTO_ENABLE=y as a way to look.
		assert.doesNotMatch(f[0].fix?.command ?? '', /PROTO_ENABLE/);
		assert.match(f[0].fix?.text ?? '', /UCX 1\.13\.1 selects protocols with its older engine: UCX_PROTO_INFO needs UCX_PROTO_ENABLE=y there, which switches to another engine/);
		assert.ok(f[0].sources?.some(s => s.url.endsWith('/openucx/ucx/blob/v1.13.1/src/ucp/core/ucp_context.c')));
	});

	it('ucx-rndv-settings on UCX 1.16 and later (the same capture with the version line edited here): UCX_PROTO_INFO=y alone', () => {
		const raw = [...h200WithEnv('UCX_RNDV_SCHEME=put_zcopy\n'), rawFromFixture('h200-testbed', 'ucx_info_c')]
			.map(r => r.id === 'ucx_info_v' ? { ...r, stdout: r.stdout.replace(/# Version 1\.13\.1/, '# Version 1.20.0') } : r);
		const f = find(raw, 'ucx-rndv-settings');
		assert.equal(f[0]?.fix?.command, 'UCX_PROTO_INFO=y mpirun ...');
	});

	it('ucx-cuda-copy-bw-model: H200 (Hopper, PCIe Gen5) with UCX 1.13.1\'s 10000 MBps model; quiet when set or without CUDA UCX', () => {
		const raw = [...h200Raw(), rawFromFixture('h200-testbed', 'ucx_info_c')];
		const f = find(raw, 'ucx-cuda-copy-bw-model');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /UCX_CUDA_COPY_BW=10000\.00MBps, far below what a Hopper GPU on PCIe Gen5/);
		assert.deepEqual(f[0].evidence.map((e) => e.line.trim()), ['UCX_CUDA_COPY_BW=10000.00MBps', '<product_architecture>Hopper</product_architecture>', '<current_link_gen>5</current_link_gen>']);
		assert.equal(f[0].fix?.command, 'export UCX_CUDA_COPY_BW=45000MBps');
		// Without ucx_info -c: the 1.13 default from the version.
		assert.match(find(h200Raw(), 'ucx-cuda-copy-bw-model')[0].message, /10000\.00MBps \(default of UCX 1\.13\)/);
		assert.equal(find([...h200WithEnv('UCX_CUDA_COPY_BW=45000MBps\n'), rawFromFixture('h200-testbed', 'ucx_info_c')], 'ucx-cuda-copy-bw-model').length, 0);
		assert.equal(find(debianRaw(), 'ucx-cuda-copy-bw-model').length, 0);
		assert.ok(f[0].sources?.some((x) => x.url.endsWith('/openucx/ucx/pull/7083')) && !f[0].sources?.some((x) => /11605/.test(x.url)), 'cites the PR that made the variable, not #11605');
		// UCX >= 1.19 without ucx_info -c (version line rewritten, synthetic): the per-direction default as cuda_copy_iface.c@v1.19.0
		// has it, and a per-direction fix that changes h2d / d2h and keeps UCX's own default and d2d entries (the
		// key-value parser of parser.c@v1.19.0 refuses a value that leaves a key without one: "no value configured").
		const v120 = h200Raw().map(r => r.id === 'ucx_info_v' ? { ...r, stdout: r.stdout.replace(/# Version 1\.13\.1/, '# Version 1.20.0') } : r);
		const g = find(v120, 'ucx-cuda-copy-bw-model')[0];
		assert.match(g?.message ?? '', /UCX_CUDA_COPY_BW=10000MBs,h2d:8300MBs,d2h:11660MBs,d2d:320GBs \(default of UCX ≥ 1\.19\)/);
		assert.equal(g?.fix?.command, 'export UCX_CUDA_COPY_BW=10000MBs,h2d:45GBs,d2h:45GBs,d2d:320GBs');
	});
});

/**
 * SYNTHETIC combination: the real H200 np1 engine capture with its MPI_Get_library_version replaced by a public
 * quote (test-fixtures/tools/public-quotes/README.md) — no Cray or MVAPICH system was available to capture from.
 */
function engineWithLibraryVersion(libraryVersion: string): RawOutput {
	const real = h200Engine('inspect-np1.json');
	const doc = JSON.parse(real.stdout) as { ranks: { mpi: Record<string, unknown> }[] };
	for (const r of doc.ranks) { r.mpi.library_version = libraryVersion; r.mpi.implementation = 'mpich'; r.mpi.cuda_aware = { compile_time: null, run_time: null, query: '' }; }
	return { ...real, stdout: JSON.stringify(doc) };
}

describe('GPU switches of other MPI families (public version strings)', () => {
	it('Cray MPICH 8.1.28.2 (ALCF Polaris quote) on a GPU host without MPICH_GPU_SUPPORT_ENABLED; =1 is quiet', () => {
		const eng = engineWithLibraryVersion(fixtureText('public-quotes', 'cray_mpich_library_version.txt'));
		const raw = [rawFromFixture('h200-testbed', 'nvidia_smi_xml'), eng];
		const a = analyze(raw, 'x');
		assert.equal(a.summary.mpi.label, 'Cray MPICH 8.1.28.2');
		const f = a.findings.filter((x) => x.id === 'mpi-gpu-support-switched-off');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /^Cray MPICH 8\.1\.28\.2 passes GPU buffers through its GPU path only when MPICH_GPU_SUPPORT_ENABLED enables it; here MPICH_GPU_SUPPORT_ENABLED is not set/);
		assert.equal(f[0].fix?.command, 'export MPICH_GPU_SUPPORT_ENABLED=1');
		assert.equal(find([...raw, rawText('env', 'MPICH_GPU_SUPPORT_ENABLED=1\n')], 'mpi-gpu-support-switched-off').length, 0);
	});

	it('MVAPICH2 2.3rc2 (firemodels/fds#6960 quote) without MV2_USE_CUDA; MV2_USE_CUDA=1 is quiet', () => {
		const lib = fixtureText('public-quotes', 'mvapich2_library_version.txt').replace(/^ MPI library version: /, '');
		const raw = [rawFromFixture('h200-testbed', 'nvidia_smi_xml'), engineWithLibraryVersion(lib)];
		const a = analyze(raw, 'x');
		assert.equal(a.summary.mpi.label, 'MVAPICH 2.3rc2');
		const f = a.findings.filter((x) => x.id === 'mpi-gpu-support-switched-off');
		assert.equal(f.length, 1);
		assert.match(f[0].message, /MV2_USE_CUDA is not set/);
		assert.equal(f[0].fix?.command, 'export MV2_USE_CUDA=1');
		assert.equal(find([...raw, rawText('env', 'MV2_USE_CUDA=1\n')], 'mpi-gpu-support-switched-off').length, 0);
	});
});
