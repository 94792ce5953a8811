/**
 * A rank's CPU binding against its GPU's NUMA node (core/parsers/rankAffinity.ts), the rule `rank-gpu-numa-binding` and
 * the map's affinity section. What is real and what is not:
 * - REAL (Debian 12 CI machine, Open MPI 4.1.4, `--bind-to core`, one NUMA node, 2 CPUs): the bound capture
 *   test-fixtures/engine/debian12-fakecuda/inspect-np2-affinity-bound.json (CUDA answers from the FAKE driver; sysfs
 *   real, so the fake GPU's bus id has no sysfs entry) and the map test-fixtures/map/map-2-openmpi-bind-core-affinity.json
 *   (host memory, no GPU); the H200 captures (one socket; engines from before the affinity field).
 * - FAKE: inspect-np2-affinity-fakesysfs.json, the same run with GPUMPI_TEST_SYSFS_ROOT naming a fake sysfs tree of
 *   two NUMA nodes (node 0 = CPU 0, node 1 = CPU 1) and the fake GPU on node 1: no two-socket machine with a GPU was
 *   available. The multi-node judgements below are SYNTHETIC affinity objects in the engine's format.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze } from '../../extension/core/analyze';
import { mapAffinity } from '../../extension/core/map/mapAffinity';
import { judgeAffinity, parseCpuList, readRankAffinity } from '../../extension/core/parsers/rankAffinity';
import { renderMapText } from '../../extension/cli/mapCli';
import type { RankAffinity } from '../../extension/shared/engineSchema';
import { validateMapDocument, type MapDocument } from '../../extension/shared/mapSchema';
import type { Finding, RawOutput } from '../../extension/shared/report';
import { h200Engine, h200EngineRun } from './rules/fixtureRaw';

const ROOT = process.cwd();
const FAKECUDA = path.join(ROOT, 'test-fixtures', 'engine', 'debian12-fakecuda');
const BIND = ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo', '--bind-to', 'core', '-np', '2', 'gpumpi', 'inspect'];

function engineRaw(file: string): RawOutput {
	return { id: 'engine', command: BIND, exitCode: 0, stdout: fs.readFileSync(path.join(FAKECUDA, file), 'utf8'), stderr: '', durationMs: 1 };
}
function findings(raw: RawOutput[]): Finding[] { return analyze(raw, 'test').findings.filter((f) => f.id === 'rank-gpu-numa-binding'); }
function loadMap(file: string): MapDocument {
	const doc = validateMapDocument(JSON.parse(fs.readFileSync(path.join(ROOT, 'test-fixtures', 'map', file), 'utf8')));
	assert.ok(typeof doc !== 'string', String(doc));
	return doc;
}

/** SYNTHETIC: a two-socket host (node 0 = CPUs 0-15, node 1 = 16-31) with the GPU on node 1. */
function twoSocket(cpuList: string, gpu: Partial<NonNullable<RankAffinity['gpu']>> = {}): RankAffinity {
	return {
		cpu_list: cpuList, cpu_numa_nodes: [], numa_nodes: [{ node: 0, cpulist: '0-15' }, { node: 1, cpulist: '16-31' }],
		gpu: { pci_bus_id: '0000:c1:00.0', sysfs_path: '/sys/bus/pci/devices/0000:c1:00.0', numa_node: 1, local_cpulist: '16-31', ...gpu },
		sysfs_root: '', error: '',
	};
}

describe('rank CPU affinity against the GPU\'s NUMA node', () => {
	it('the H200 (a VM: one NUMA node, the GPU\'s numa_node -1, local_cpulist 0-15): single_node bound or not, and the rule is quiet (real capture, 2026-12-04 evening)', () => {
		for (const run of ['np2-bind-core', 'np2-bind-none'] as const) {
			const raw = h200EngineRun('inspect-2026-12-04-affinity.json', run);
			const doc = JSON.parse(raw.stdout) as { ranks: Array<{ rank: number; host: string; affinity: unknown }> };
			assert.equal(doc.ranks.length, 2, run);
			for (const r of doc.ranks) {
				const a = readRankAffinity(r.affinity);
				assert.ok(a, `${run} rank ${r.rank}: no affinity`);
				assert.equal(a.gpu?.numa_node, -1, 'the VM\'s sysfs gives the GPU no NUMA node');
				const j = judgeAffinity(r.rank, r.host, a);
				assert.equal(j.verdict, 'single_node', `${run}: ${j.text}`);
				assert.match(j.text, /one NUMA node, so every CPU is as close to 0000:00:06\.0 as any other/);
			}
			assert.deepEqual(doc.ranks.map(r => readRankAffinity(r.affinity)?.cpu_list), run === 'np2-bind-core' ? ['0', '1'] : ['0-15', '0-15']);
			assert.deepEqual(findings([raw]), [], run);
		}
	});

	it('parseCpuList reads the kernel\'s list format and skips what is malformed', () => {
		assert.deepEqual(parseCpuList('0-3,8,10-11'), [0, 1, 2, 3, 8, 10, 11]);
		assert.deepEqual(parseCpuList('5,1-2,2'), [1, 2, 5]);
		assert.deepEqual(parseCpuList(''), []);
		assert.deepEqual(parseCpuList('x,3-1,7'), [7]);
	});

	it('judges local, remote, spans and unbound on a two-socket host (synthetic)', () => {
		assert.equal(judgeAffinity(0, 'h', twoSocket('16-19')).verdict, 'local');
		const remote = judgeAffinity(1, 'h', twoSocket('0-3'));
		assert.equal(remote.verdict, 'remote');
		assert.deepEqual(remote.cpuNodes, [0]);
		assert.equal(remote.gpuNode, 1);
		assert.match(remote.text, /rank 1 \(h\) may run on CPUs 0-3 \(NUMA node 0\); GPU 0000:c1:00\.0 is local to CPUs 16-31 \(NUMA node 1\)/);
		assert.equal(judgeAffinity(2, 'h', twoSocket('12-19')).verdict, 'spans');
		assert.equal(judgeAffinity(3, 'h', twoSocket('0-31')).verdict, 'unbound');
		// No numa_node from the kernel: the node is the one its local_cpulist falls in.
		const derived = judgeAffinity(4, 'h', twoSocket('0', { numa_node: -1 }));
		assert.equal(derived.gpuNode, 1);
		assert.equal(derived.verdict, 'remote');
		// Neither numa_node nor local_cpulist: cannot be judged.
		assert.equal(judgeAffinity(5, 'h', twoSocket('0', { numa_node: -1, local_cpulist: '' })).verdict, 'unknown');
		assert.equal(judgeAffinity(6, 'h', { ...twoSocket('0'), gpu: null }).verdict, 'unknown');
	});

	it('readRankAffinity keeps what is well-typed and drops the rest (null for older engines)', () => {
		assert.equal(readRankAffinity(undefined), null);
		assert.equal(readRankAffinity('x'), null);
		const a = readRankAffinity({ cpu_list: '0', cpu_numa_nodes: [0, 'x', -1], numa_nodes: [{ node: 0, cpulist: '0-1' }, { node: 'y' }], gpu: { pci_bus_id: 7 } });
		assert.deepEqual(a, { cpu_list: '0', cpu_numa_nodes: [0], numa_nodes: [{ node: 0, cpulist: '0-1' }], gpu: { pci_bus_id: '', sysfs_path: '', numa_node: -1, local_cpulist: '' }, sysfs_root: '', error: '' });
	});

	it('fires: rank 0 bound to CPU 0 (node 0) while its GPU\'s local_cpulist is CPU 1 (fake sysfs tree, real Open MPI binding)', () => {
		const f = findings([engineRaw('inspect-np2-affinity-fakesysfs.json')]);
		assert.equal(f.length, 1);
		assert.equal(f[0].severity, 'warning');
		assert.match(f[0].message, /^rank 0 \(\S+\) may run on CPUs 0 \(NUMA node 0\); GPU 0000:fa:ce:00\.0 is local to CPUs 1 \(NUMA node 1\): none of the rank's CPUs is on its GPU's NUMA node\./);
		assert.doesNotMatch(f[0].message, /rank 1 /, 'rank 1 is bound to CPU 1, next to the GPU');
		const lines = f[0].evidence.map((e) => e.line);
		assert.ok(lines.includes('ranks[0].affinity.cpu_list: "0"'), lines.join('\n'));
		assert.ok(lines.includes('ranks[0].affinity.gpu: {"pci_bus_id":"0000:fa:ce:00.0","numa_node":1,"local_cpulist":"1"}'), lines.join('\n'));
		assert.ok(lines.some((l) => /affinity\.sysfs_root: .*tests only/.test(l)), 'a fake sysfs tree is named as such');
		assert.match(f[0].fix?.command ?? '', /^srun --cpu-bind=cores --gpu-bind=closest \.\.\.   # mpirun: --report-bindings/);
		// --map-by numa alone can cause the mismatch (local rank 1 on node 1, local_rank % ngpus gives it GPU 1): said, not offered.
		assert.match(f[0].fix?.text ?? '', /--map-by numa --bind-to core alone does not do it/);
		const urls = (f[0].sources ?? []).map((s) => s.url);
		for (const u of ['https://www.open-mpi.org/doc/v4.1/man1/mpirun.1.php', 'https://slurm.schedmd.com/srun.html', 'https://docs.nvidia.com/deploy/nvidia-smi/index.html']) {
			assert.ok(urls.includes(u), u);
		}
	});

	it('info, not a warning, when ranks are unbound or span nodes (synthetic two-socket documents)', () => {
		const doc = (cpuLists: string[]): RawOutput => ({
			id: 'engine', command: ['mpirun', 'gpumpi', 'inspect'], exitCode: 0, stderr: '', durationMs: 1,
			stdout: JSON.stringify({
				schema: 'gpumpi.inspect/1', engine_version: '0.1.0', world_size: cpuLists.length,
				ranks: cpuLists.map((c, i) => ({ rank: i, local_rank: i, host: 'two-socket', pid: 1, mpi: {}, cuda: { devices: [] }, env: {}, affinity: twoSocket(c) })),
			}),
		});
		const info = findings([doc(['0-31', '12-19'])]);
		assert.equal(info.length, 1);
		assert.equal(info[0].severity, 'info');
		assert.match(info[0].message, /rank 0 .*not bound.*rank 1 .*spans nodes, 4 of its 8 CPUs are local/);
		assert.equal(findings([doc(['16-23', '24-31'])]).length, 0, 'both ranks next to their GPU');
		assert.equal(findings([doc(['0-31', '0-7'])])[0].severity, 'warning', 'a remote rank makes it a warning');
	});

	it('stays quiet on the real captures: Debian bound to cores on one NUMA node, and the one-socket H200', () => {
		const bound = analyze([engineRaw('inspect-np2-affinity-bound.json')], 'test');
		const ranks = bound.facts.engine?.ranks ?? [];
		assert.deepEqual(ranks.map((r) => r.affinity?.value.cpu_list), ['0', '1'], 'Open MPI 4.1.4 --bind-to core: one core per rank');
		assert.deepEqual(ranks.map((r) => r.affinity?.judgement.verdict), ['single_node', 'single_node']);
		assert.equal(bound.findings.filter((f) => f.id === 'rank-gpu-numa-binding').length, 0);
		assert.equal(findings([h200Engine('inspect-np4.json')]).length, 0);
		assert.equal(findings([h200EngineRun('inspect-2026-12-03-ns-mps.json', 'np4')]).length, 0);
	});

	it('the map text has an affinity section when the engine recorded it (real Debian map: one NUMA node, no GPU)', () => {
		const doc = loadMap('map-2-openmpi-bind-core-affinity.json');
		const judged = mapAffinity(doc);
		assert.deepEqual(judged.map((j) => [j.rank, j.cpuList, j.verdict]), [[0, '0', 'unknown'], [1, '1', 'unknown']]);
		const text = renderMapText(doc);
		assert.match(text, /CPU affinity\s+rank\s+cpus\s+NUMA\s+GPU\s+GPU NUMA\s+verdict/);
		assert.match(text, /^\s+0\s+0\s+0\s+no GPU\s+—\s+unknown$/m);
		assert.doesNotMatch(text, /--map-by numa/);
		// An older map (the H200's of 2026-12-02, before the field) prints no affinity section.
		const h200 = JSON.parse(fs.readFileSync(path.join(ROOT, 'test-fixtures', 'map', 'h200-testbed-map-2026-12-02.json'), 'utf8')) as { runs: { document: unknown }[] };
		const old = validateMapDocument(h200.runs[0].document);
		assert.ok(typeof old !== 'string');
		assert.doesNotMatch(renderMapText(old), /CPU affinity/);
	});

	it('the map text names the remote rank and the fix (synthetic two-socket affinity on the real map)', () => {
		const doc = loadMap('map-2-openmpi-bind-core-affinity.json');
		doc.ranks[0].affinity = twoSocket('0-3');
		doc.ranks[1].affinity = twoSocket('16-19');
		const text = renderMapText(doc);
		assert.match(text, /^\s+0\s+0-3\s+0\s+0000:c1:00\.0\s+1\s+OTHER NUMA NODE than its GPU$/m);
		assert.match(text, /^\s+1\s+16-19\s+1\s+0000:c1:00\.0\s+1\s+local to its GPU$/m);
		assert.match(text, /rank\(s\) 0 run on another NUMA node than their GPU: srun --cpu-bind=cores --gpu-bind=closest/);
	});
});
