/**
 * Parsers for ucx_info, nvidia-smi, mpirun/mpichversion, env/which/identity on real captured outputs.
 */
import * as assert from 'node:assert/strict';
import { emptyFacts } from '../../../extension/core/facts';
import { parseEnv, parseIdentity, parseWhich } from '../../../extension/core/parsers/mcaParams';
import { classifyVersionText, parseMpichVersion, parseMpirunVersion } from '../../../extension/core/parsers/mpiVersion';
import { parseNvidiaSmiTopo, parseNvidiaSmiXml } from '../../../extension/core/parsers/nvidiaSmi';
import { emptyUcx, parseUcxBuild, parseUcxDevices, parseUcxVersion, transportNames } from '../../../extension/core/parsers/ucxInfo';
import { fixtureText } from '../rules/fixtureRaw';

describe('ucx_info parsers', () => {
	it('Debian 12 UCX 1.13.1 has no CUDA', () => {
		const u = emptyUcx();
		assert.deepEqual(parseUcxVersion(fixtureText('debian12-cpu', 'ucx_info_v.txt'), u), []);
		assert.deepEqual(parseUcxBuild(fixtureText('debian12-cpu', 'ucx_info_b.txt'), u), []);
		assert.deepEqual(parseUcxDevices(fixtureText('debian12-cpu', 'ucx_info_d.txt'), u), []);
		assert.equal(u.version?.value, '1.13.1');
		assert.equal(u.version?.evidence.line, '# Version 1.13.1');
		assert.equal(u.builtWithCuda, null, 'neither --with-cuda nor HAVE_CUDA appear');
		assert.deepEqual(transportNames(u), ['self', 'tcp', 'sysv', 'posix', 'cma']);
		assert.deepEqual(u.memoryDomains.map((m) => m.value), ['self', 'tcp', 'sysv', 'posix', 'cma']);
	});

	it('H200 testbed UCX 1.13.1 has cuda_copy and cuda_ipc', () => {
		const u = emptyUcx();
		parseUcxVersion(fixtureText('h200-testbed', 'ucx_info_v.txt'), u);
		parseUcxBuild(fixtureText('h200-testbed', 'ucx_info_b.txt'), u);
		parseUcxDevices(fixtureText('h200-testbed', 'ucx_info_d.txt'), u);
		assert.equal(u.version?.value, '1.13.1');
		assert.equal(u.builtWithCuda?.value, true);
		assert.equal(u.builtWithCuda?.evidence.source, 'ucx_info_b');
		assert.match(u.builtWithCuda?.evidence.line ?? '', /^#define HAVE_CUDA\s+1$/);
		assert.match(u.configureFlags?.value ?? '', /--with-cuda=\/usr\/local\/cuda/);
		assert.equal(u.builtWithGdrcopy, null);
		const copy = u.transports.find((t) => t.name === 'cuda_copy');
		assert.deepEqual([copy?.device, copy?.memoryDomain, copy?.evidence.lineNo], ['cuda', 'cuda_cpy', 189]);
		assert.equal(u.transports.find((t) => t.name === 'cuda_ipc')?.memoryDomain, 'cuda_ipc');
		// tcp appears once per device (lo, eth0)
		assert.deepEqual(u.transports.filter((t) => t.name === 'tcp').map((t) => t.device), ['lo', 'eth0']);
	});

	it('reports garbage instead of throwing', () => {
		const u = emptyUcx();
		assert.equal(parseUcxVersion('hello', u)[0].severity, 'warning');
		assert.equal(parseUcxDevices('nothing here', u)[0].evidence[0].line, 'nothing here');
	});
});

describe('nvidia-smi parsers', () => {
	it('reads the H200 topology matrix (ANSI escapes included)', () => {
		const { rows, issues } = parseNvidiaSmiTopo(fixtureText('h200-testbed', 'nvidia_smi_topo.txt'));
		assert.deepEqual(issues, []);
		assert.equal(rows.length, 1);
		assert.deepEqual([rows[0].device, rows[0].links.GPU0, rows[0].cpuAffinity, rows[0].numaAffinity], ['GPU0', 'X', '0-15', '0']);
	});

	it('reads a multi-GPU matrix with NVLink and NIC columns', () => {
		// Synthetic: the layout of `nvidia-smi topo -m` on a 2-GPU NVLink node (we have no such machine to capture).
		const text = '\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tNV18\tPIX\t0-47\t0\t\tN/A\nGPU1\tNV18\t X \tSYS\t48-95\t1\t\tN/A\nNIC0\tPIX\tSYS\t X \t\t\t\t\n\nLegend:\n';
		const { rows } = parseNvidiaSmiTopo(text);
		assert.equal(rows[0].links.GPU1, 'NV18');
		assert.equal(rows[1].numaAffinity, '1');
		assert.equal(rows[2].device, 'NIC0');
	});

	it('reads the H200 XML', () => {
		const gpu = emptyFacts('x').gpu;
		assert.deepEqual(parseNvidiaSmiXml(fixtureText('h200-testbed', 'nvidia_smi_xml.txt'), gpu), []);
		assert.equal(gpu.driverVersion?.value, '580.159.04');
		assert.equal(gpu.cudaVersion?.value, '13.0');
		assert.deepEqual(gpu.gpus.map((g) => [g.index, g.name, g.pciBusId, g.memoryMiB]), [[0, 'NVIDIA H200', '00000000:00:06.0', 143771]]);
		assert.equal(gpu.gpus[0].uuid, 'GPU-0ddbe2e2-e6b4-8f0b-324b-d29938131116');
	});

	it('flags truncated XML', () => {
		const gpu = emptyFacts('x').gpu;
		const text = fixtureText('h200-testbed', 'nvidia_smi_xml.txt').slice(0, 3000);
		assert.match(parseNvidiaSmiXml(text, gpu)[0].message, /truncated/);
		assert.equal(gpu.gpus.length, 1);
	});
});

describe('MPI version parsers', () => {
	it('mpirun --version of Debian Open MPI and the H200 testbed', () => {
		const d = parseMpirunVersion(fixtureText('debian12-cpu', 'mpirun_version.txt'));
		assert.deepEqual([d.info.implementation, d.info.version?.value], ['openmpi', '4.1.4']);
		const h = parseMpirunVersion(fixtureText('h200-testbed', 'mpirun_version.txt'));
		assert.deepEqual([h.info.implementation, h.info.version?.value], ['openmpi', '5.0.7']);
	});

	it('mpirun --version of MPICH\'s Hydra', () => {
		const m = parseMpirunVersion(fixtureText('debian12-cpu', 'mpirun_version_mpich.txt'));
		assert.deepEqual([m.info.implementation, m.info.version?.value, m.info.version?.evidence.lineNo], ['mpich', '4.0.2', 2]);
		assert.deepEqual(m.issues, []);
	});

	it('mpichversion of Debian MPICH 4.0.2', () => {
		const { facts } = parseMpichVersion(fixtureText('debian12-cpu', 'mpichversion.txt'));
		assert.equal(facts?.version?.value, '4.0.2');
		assert.equal(facts?.device?.value, 'ch4:ucx');
		assert.equal(facts?.configuredWithCuda?.value, false);
		assert.match(facts?.configure?.value ?? '', /--without-yaksa/);
	});

	it('classifies MPI_Get_library_version strings', () => {
		assert.equal(classifyVersionText('Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022', 'e').version?.value, '4.1.4');
		const m = classifyVersionText('MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 2022\nMPICH Device:\tch4:ucx', 'e');
		assert.deepEqual([m.implementation, m.version?.value], ['mpich', '4.0.2']);
		assert.equal(classifyVersionText('Intel(R) MPI Library 2021.10 for Linux* OS', 'e').implementation, 'intel');
		assert.equal(classifyVersionText('something else', 'e').implementation, 'unknown');
	});
});

describe('env / which / identity', () => {
	it('reads the captured Debian outputs', () => {
		const w = parseWhich(fixtureText('debian12-cpu', 'which.txt')).which;
		assert.equal(w.mpirun?.value, '/usr/bin/mpirun');
		assert.equal(w['nvidia-smi']?.value, null);
		const id = parseIdentity(fixtureText('debian12-cpu', 'identity.txt')).identity;
		assert.equal(id.uid?.value, 0);
		assert.equal(id.user?.value, 'root');
		const env = parseEnv(fixtureText('h200-testbed', 'env.txt')).entries;
		assert.equal(env.find((e) => e.name === 'OMPI_MCA_btl_vader_single_copy_mechanism')?.value, 'none');
	});
});
