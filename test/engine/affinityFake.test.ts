/**
 * A rank bound to CPUs on another NUMA node than its GPU (issue 16 item 5), end to end: `gpumpi map` and `gpumpi
 * inspect` under Debian's real Open MPI 4.1.4 (`--bind-to core`) and MPICH 4.0.2 (hydra `-bind-to core`), the rank
 * record's `affinity`, the map's affinity section and the rule `rank-gpu-numa-binding`.
 * What is real: the engine, both MPIs binding each rank to one core for real (rank 0 → CPU 0, rank 1 → CPU 1, read
 * back with sched_getaffinity), the JSON, the TypeScript judgement and rule.
 * What is FAKE, because it cannot be produced here (no GPU, one NUMA node of 2 CPUs): the CUDA driver
 * (native/fakes/fakeCuda.c through GPUMPI_LIBCUDA; its GPU has the bus id 0000:fa:ce:00.0) and the sysfs tree the
 * engine reads the NUMA topology and that GPU's PCI device from (GPUMPI_TEST_SYSFS_ROOT, honoured for tests only):
 * node 0 = CPU 0, node 1 = CPU 1, the GPU on node 1 with local_cpulist "1". So rank 0 sits on the wrong node.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { analyze } from '../../extension/core/analyze';
import { repoRoot } from '../../extension/core/native';
import { execute } from '../../extension/core/proc';
import { mapAffinity } from '../../extension/core/map/mapAffinity';
import { extractJsonDocument } from '../../extension/core/parsers/framedDocument';
import { renderMapText } from '../../extension/cli/mapCli';
import { validateMapDocument } from '../../extension/shared/mapSchema';

const ROOT = repoRoot() ?? process.cwd();
const TIMEOUT_MS = 90_000;
const FAKE_BUS = '0000:fa:ce:00.0';
const FLAVORS = [
	{ flavor: 'openmpi', launch: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo', '-x', 'GPUMPI_TEST_SYSFS_ROOT', '--bind-to', 'core'] },
	{ flavor: 'mpich', launch: ['mpirun.mpich', '-bind-to', 'core'] },
] as const;

/** The fake sysfs tree: two NUMA nodes of one CPU each, the fake GPU's PCI device on node 1. */
function fakeSysfs(): string {
	const root = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-sysfs-'));
	const write = (rel: string, text: string): void => {
		fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
		fs.writeFileSync(path.join(root, rel), text);
	};
	write('sys/devices/system/node/node0/cpulist', '0\n');
	write('sys/devices/system/node/node1/cpulist', '1\n');
	write(`sys/bus/pci/devices/${FAKE_BUS}/numa_node`, '1\n');
	write(`sys/bus/pci/devices/${FAKE_BUS}/local_cpulist`, '1\n');
	return root;
}

for (const { flavor, launch } of FLAVORS) {
	describe(`rank affinity vs GPU NUMA node (fake driver + fake sysfs) under ${launch[0]}`, function () {
		this.timeout(TIMEOUT_MS * 3);
		const dir = path.join(ROOT, 'native', 'build', `engine-${flavor}`);
		const engine = path.join(dir, 'gpumpi');
		const fake = path.join(dir, 'libgpumpi_fakecuda.so');
		let sysfs = '';
		const env = (root: string): Record<string, string | undefined> => ({ ...process.env, GPUMPI_LIBCUDA: fake, GPUMPI_INSPECT_IPC_MEM: '0', UCX_NET_DEVICES: 'lo', GPUMPI_TEST_SYSFS_ROOT: root });
		before(function () {
			for (const p of [engine, fake]) { assert.ok(fs.existsSync(p), `${p} not built: run node scripts/ensure.mjs --all-mpis`); }
			if (os.cpus().length < 2) { this.skip(); } // two cores are needed to bind two ranks apart
			sysfs = fakeSysfs();
		});
		after(() => { if (sysfs) { fs.rmSync(sysfs, { recursive: true, force: true }); } });

		it('map: rank 0 bound to CPU 0 (node 0), its GPU local to CPU 1 (node 1): remote; rank 1 local; the text names the fix', async () => {
			const r = await execute([...launch, '-np', '2', engine, 'map', '--memory', 'device', '--large', '4K', '--iters', '1', '--json'], { timeoutMs: TIMEOUT_MS, env: env(sysfs) }).result;
			assert.equal(r.exitCode, 0, r.stderr.slice(-2000));
			const ex = extractJsonDocument(r.stdout);
			assert.ok('json' in ex, 'error' in ex ? ex.error : '');
			const doc = validateMapDocument(ex.json);
			assert.ok(typeof doc !== 'string', String(doc));
			assert.deepEqual(doc.ranks.map((x) => x.cpu_list), ['0', '1'], `${flavor} --bind-to core: one core per rank`);
			for (const rank of doc.ranks) {
				const a = rank.affinity;
				assert.ok(a, 'the engine records affinity');
				assert.deepEqual(a.numa_nodes, [{ node: 0, cpulist: '0' }, { node: 1, cpulist: '1' }]);
				assert.deepEqual(a.gpu, { pci_bus_id: FAKE_BUS, sysfs_path: `${sysfs}/sys/bus/pci/devices/${FAKE_BUS}`, numa_node: 1, local_cpulist: '1' });
				assert.equal(a.sysfs_root, sysfs);
				assert.equal(a.error, '');
				assert.equal(rank.gpu?.numa_node, 1, 'the map\'s own GPU record reads the same tree');
			}
			assert.deepEqual(doc.ranks.map((x) => x.affinity?.cpu_numa_nodes), [[0], [1]]);
			assert.deepEqual(mapAffinity(doc).map((j) => j.verdict), ['remote', 'local']);
			const text = renderMapText(doc);
			assert.match(text, /^\s+0\s+0\s+0\s+0000:fa:ce:00\.0\s+1\s+OTHER NUMA NODE than its GPU$/m, text);
			assert.match(text, /rank\(s\) 0 run on another NUMA node than their GPU: srun --cpu-bind=cores --gpu-bind=closest/);
			assert.match(text, /fake sysfs tree: GPUMPI_TEST_SYSFS_ROOT, tests only/);
		});

		it('inspect: the rule fires for rank 0 with its cpu list and the GPU\'s local_cpulist as evidence; the real sysfs is quiet', async () => {
			const r = await execute([...launch, '-np', '2', engine, 'inspect'], { timeoutMs: TIMEOUT_MS, env: env(sysfs) }).result;
			assert.equal(r.exitCode, 0, r.stderr.slice(-2000));
			const report = analyze([{ id: 'engine', command: [...launch, '-np', '2', engine, 'inspect'], exitCode: 0, stdout: r.stdout, stderr: r.stderr, durationMs: 1 }], 'test');
			const f = report.findings.filter((x) => x.id === 'rank-gpu-numa-binding');
			assert.equal(f.length, 1, JSON.stringify(report.findings.map((x) => x.id)));
			assert.equal(f[0].severity, 'warning');
			assert.match(f[0].message, /^rank 0 \(\S+\) may run on CPUs 0 \(NUMA node 0\); GPU 0000:fa:ce:00\.0 is local to CPUs 1 \(NUMA node 1\)/);
			const lines = f[0].evidence.map((e) => e.line);
			assert.ok(lines.includes('ranks[0].affinity.cpu_list: "0"'), lines.join('\n'));
			assert.ok(lines.includes(`ranks[0].affinity.gpu: {"pci_bus_id":"${FAKE_BUS}","numa_node":1,"local_cpulist":"1"}`), lines.join('\n'));

			// The same run on this machine's real sysfs (one NUMA node; no PCI device for the fake bus id): nothing to say.
			// A relative root is not honoured either (the engine takes absolute paths only).
			for (const root of ['', 'relative/sysfs']) {
				const real = await execute([...launch, '-np', '2', engine, 'inspect'], { timeoutMs: TIMEOUT_MS, env: env(root) }).result;
				assert.equal(real.exitCode, 0, real.stderr.slice(-2000));
				const rep = analyze([{ id: 'engine', command: [], exitCode: 0, stdout: real.stdout, stderr: '', durationMs: 1 }], 'test');
				const ranks = rep.facts.engine?.ranks ?? [];
				assert.deepEqual(ranks.map((x) => x.affinity?.value.sysfs_root), ['', ''], `GPUMPI_TEST_SYSFS_ROOT=${root}`);
				assert.deepEqual(ranks.map((x) => x.affinity?.value.gpu?.local_cpulist), ['', '']);
				assert.equal(rep.findings.filter((x) => x.id === 'rank-gpu-numa-binding').length, 0);
			}
		});
	});
}
