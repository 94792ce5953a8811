/**
 * collectSystemFacts (extension/core/sysCollect.ts) and its parsers (parsers/sysFacts.ts).
 * Runs once against this machine's real /proc and /sys, and against a SYNTHETIC sysfs tree written to a temp
 * directory (no machine with an NVIDIA GPU and an InfiniBand HCA was available here): the files hold values in the
 * formats the kernel documents (Documentation/ABI sysfs-class-infiniband: state "4: ACTIVE", rate "200 Gb/sec (4X HDR)").
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { analyze } from '../../../extension/core/analyze';
import { collectSystemFacts } from '../../../extension/core/sysCollect';
import type { RawOutput } from '../../../extension/shared/report';

const realRead = async (p: string): Promise<string | null> => { try { return await fs.promises.readFile(p, 'utf8'); } catch { return null; } };
const realList = async (p: string): Promise<string[] | null> => { try { return await fs.promises.readdir(p); } catch { return null; } };

function byId(raw: RawOutput[], id: string): RawOutput {
	const r = raw.find((x) => x.id === id);
	assert.ok(r, id);
	return r;
}

describe('collectSystemFacts', () => {
	let root = '';
	const write = (rel: string, text: string): void => {
		const p = path.join(root, rel);
		fs.mkdirSync(path.dirname(p), { recursive: true });
		fs.writeFileSync(p, text);
	};
	/** Readers confined to the temp tree: "/sys/x" → <root>/sys/x. */
	const read = (p: string): Promise<string | null> => realRead(path.join(root, p));
	const list = (p: string): Promise<string[] | null> => realList(path.join(root, p));

	before(() => {
		root = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-sys-'));
		write('proc/modules', 'nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\nnvidia_uvm 1540096 0 - Live 0x0000000000000000 (OE)\nnvidia 9871360 2 nvidia_peermem,nvidia_uvm, Live 0x0000000000000000 (OE)\nmlx5_ib 425984 0 - Live 0x0000000000000000\nib_core 434176 2 mlx5_ib,nvidia_peermem, Live 0x0000000000000000\next4 1019904 1 - Live 0x0000000000000000\n');
		write('sys/module/nvidia_peermem/version', '580.159.04\n');
		for (const [dev, node, pci] of [['mlx5_0', '0', '0000:3b:00.0'], ['mlx5_1', '1', '0000:af:00.0']]) {
			write(`sys/class/infiniband/${dev}/device/numa_node`, `${node}\n`);
			write(`sys/class/infiniband/${dev}/device/uevent`, `DRIVER=mlx5_core\nPCI_CLASS=20700\nPCI_SLOT_NAME=${pci}\n`);
			write(`sys/class/infiniband/${dev}/ports/1/state`, dev === 'mlx5_0' ? '4: ACTIVE\n' : '1: DOWN\n');
			write(`sys/class/infiniband/${dev}/ports/1/link_layer`, 'InfiniBand\n');
			write(`sys/class/infiniband/${dev}/ports/1/rate`, '200 Gb/sec (4X HDR)\n');
		}
		const pci: [string, string, string, string][] = [['0000:19:00.0', '0x10de', '0x030200', '1'], ['0000:3b:00.0', '0x15b3', '0x020700', '0'], ['0000:00:00.0', '0x8086', '0x060000', '-1'], ['0000:1a:00.0', '0x10de', '0x068000', '1']];
		for (const [addr, vendor, cls, node] of pci) {
			write(`sys/bus/pci/devices/${addr}/vendor`, `${vendor}\n`);
			write(`sys/bus/pci/devices/${addr}/class`, `${cls}\n`);
			write(`sys/bus/pci/devices/${addr}/numa_node`, `${node}\n`);
			write(`sys/bus/pci/devices/${addr}/local_cpulist`, '48-95\n');
		}
	});
	after(() => { fs.rmSync(root, { recursive: true, force: true }); });

	it('reads modules, RDMA ports and NVIDIA GPU NUMA nodes from a sysfs tree (synthetic)', async () => {
		const raw = await collectSystemFacts(read, list);
		assert.deepEqual(raw.map((r) => r.id), ['sys_modules', 'sys_infiniband', 'sys_gpu_numa']);
		assert.equal(byId(raw, 'sys_modules').stdout.split('\n').filter((l) => l !== '').length, 6, 'five relevant modules (not ext4) + the version line');
		assert.match(byId(raw, 'sys_modules').stdout, /^\/sys\/module\/nvidia_peermem\/version=580\.159\.04$/m);
		assert.equal(byId(raw, 'sys_infiniband').stdout, 'mlx5_0\tport=1\tstate=4: ACTIVE\tlink_layer=InfiniBand\trate=200 Gb/sec (4X HDR)\tnuma_node=0\tpci=0000:3b:00.0\nmlx5_1\tport=1\tstate=1: DOWN\tlink_layer=InfiniBand\trate=200 Gb/sec (4X HDR)\tnuma_node=1\tpci=0000:af:00.0\n');
		assert.equal(byId(raw, 'sys_gpu_numa').stdout, '0000:19:00.0\tclass=0x030200\tnuma_node=1\tlocal_cpulist=48-95\n', 'only the NVIDIA display-class function');
		const a = analyze(raw, 'x');
		assert.equal(a.facts.gpu.peermemLoaded?.value, true);
		assert.equal(a.facts.sys.peermemVersion?.value, '580.159.04');
		assert.deepEqual(a.facts.sys.ibPorts?.map((p) => [p.device, p.active, p.numaNode]), [['mlx5_0', true, 0], ['mlx5_1', false, 1]]);
		assert.deepEqual(a.facts.sys.gpuNuma?.map((g) => [g.pciBusId, g.numaNode]), [['0000:19:00.0', 1]]);
		// GPU on node 1, the only ACTIVE port on node 0.
		assert.equal(a.findings.filter((f) => f.id === 'gpu-nic-numa-mismatch').length, 1);
	});

	it('falls back to /sys/module when /proc/modules is unreadable, and skips hostile directory entries', async () => {
		fs.mkdirSync(path.join(root, 'sys/module/nvidia_uvm'), { recursive: true });
		const noProc = (p: string): Promise<string | null> => (p === '/proc/modules' ? Promise.resolve(null) : read(p));
		// SYNTHETIC hostile listing: names a real kernel never returns (traversal, newline, tab).
		const hostile = async (p: string): Promise<string[] | null> => { const l = await list(p); return l ? [...l, '../../etc', 'a\nb', 'x\ty', '..'] : l; };
		const raw = await collectSystemFacts(noProc, hostile);
		const mods = byId(raw, 'sys_modules');
		assert.deepEqual(mods.command, ['list', '/sys/module']);
		assert.match(mods.notes?.[0] ?? '', /\/proc\/modules could not be read/);
		assert.deepEqual(mods.stdout.split('\n').filter((l) => l !== ''), ['nvidia_peermem', 'nvidia_uvm', '/sys/module/nvidia_peermem/version=580.159.04']);
		for (const r of raw) { assert.doesNotMatch(r.stdout, /\.\.\/|a\nb|x\ty/); }
	});

	it('a GPU peer-memory client under /sys/kernel/mm/memory_peers is GPUDirect RDMA even without a peermem module line (synthetic)', async () => {
		// SYNTHETIC: MLNX_OFED's peer-memory interface (no machine here has an RDMA stack); the path NCCL and UCX test.
		const only = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-sys-peer-'));
		try {
			const put = (rel: string, text: string): void => { fs.mkdirSync(path.dirname(path.join(only, rel)), { recursive: true }); fs.writeFileSync(path.join(only, rel), text); };
			put('proc/modules', 'nvidia 9871360 0 - Live 0x0000000000000000 (OE)\n');
			put('sys/kernel/mm/memory_peers/nv_mem/version', '1.3-0\n');
			const raw = await collectSystemFacts((p) => realRead(path.join(only, p)), (p) => realList(path.join(only, p)));
			assert.match(byId(raw, 'sys_modules').stdout, /^\/sys\/kernel\/mm\/memory_peers\/nv_mem\/version=1\.3-0$/m);
			const a = analyze(raw, 'x');
			assert.equal(a.facts.sys.peerMemoryClient?.value, 'nv_mem 1.3-0');
			assert.equal(a.facts.gpu.peermemLoaded?.value, true);
			assert.match(a.facts.gpu.peermemLoaded?.evidence.line ?? '', /memory_peers\/nv_mem/);
			// and without it, the same listing reads as "not loaded"
			fs.rmSync(path.join(only, 'sys/kernel'), { recursive: true });
			const b = analyze(await collectSystemFacts((p) => realRead(path.join(only, p)), (p) => realList(path.join(only, p))), 'x');
			assert.equal(b.facts.gpu.peermemLoaded?.value, false);
		} finally { fs.rmSync(only, { recursive: true, force: true }); }
	});

	it('never rejects when the readers throw or nothing exists', async () => {
		const boom = (): Promise<never> => Promise.reject(new Error('EACCES'));
		const raw = await collectSystemFacts(boom, boom);
		assert.deepEqual(raw.map((r) => [r.id, r.exitCode]), [['sys_modules', null], ['sys_infiniband', null], ['sys_gpu_numa', null]]);
		assert.ok(raw.every((r) => /^not found/.test(r.error ?? '')));
		// Missing sysfs is normal (optional ids): no parse problem.
		assert.equal(analyze(raw, 'x').findings.filter((f) => f.id === 'parse-problem').length, 0);
	});

	it('runs against this machine\'s real /proc and /sys', async () => {
		const raw = await collectSystemFacts(realRead, realList);
		assert.deepEqual(raw.map((r) => r.id), ['sys_modules', 'sys_infiniband', 'sys_gpu_numa']);
		const a = analyze(raw, 'x');
		assert.deepEqual(a.findings.filter((f) => f.id === 'parse-problem' || f.id.startsWith('rule-failed')), []);
	});

	it('scripts/gpu/sysfs.sh (the device capture, no Node) writes what collectSystemFacts writes on this machine', async () => {
		const out = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-sysfs-sh-'));
		try {
			execFileSync('bash', [path.resolve('scripts/gpu/sysfs.sh')], { env: { ...process.env, OUT: out }, stdio: 'pipe', timeout: 30000 });
			const raw = await collectSystemFacts(realRead, realList);
			for (const id of ['sys_modules', 'sys_gpu_numa', 'sys_infiniband']) {
				const file = path.join(out, `${id}.txt`);
				const r = byId(raw, id);
				if (r.exitCode === null) { assert.equal(fs.existsSync(file), id === 'sys_modules', id); } else { assert.equal(fs.readFileSync(file, 'utf8'), r.stdout, id); }
			}
		} finally { fs.rmSync(out, { recursive: true, force: true }); }
	});

	it('parsers report malformed lines instead of throwing', () => {
		const raw: RawOutput[] = [
			{ id: 'sys_infiniband', command: ['x'], exitCode: 0, stdout: 'garbage without tabs\n', stderr: '', durationMs: 0 },
			{ id: 'sys_gpu_numa', command: ['x'], exitCode: 0, stdout: 'not-a-pci-address\tnuma_node=0\n', stderr: '', durationMs: 0 },
			{ id: 'sys_modules', command: ['x'], exitCode: 0, stdout: '\u0000\u0001\u0002binary', stderr: '', durationMs: 0 },
		];
		const issues = analyze(raw, 'x').findings.filter((f) => f.id === 'parse-problem');
		assert.equal(issues.length, 3);
	});
});
