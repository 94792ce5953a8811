/**
 * Kernel and sysfs facts for GPUDirect RDMA and GPU/NIC placement: which GPU/RDMA kernel modules are loaded,
 * which InfiniBand/RoCE ports exist (state, link layer, rate, NUMA node) and which NUMA node each NVIDIA GPU hangs
 * off. Pure with respect to the two injected readers, so the same code serves a local host, an SSH host and tests.
 *
 * Raw output formats (one line per item; analysed by parsers/sysFacts.ts, documented in docs/bundle.md):
 * - `sys_modules`: the matching lines of /proc/modules verbatim (`nvidia_peermem 16384 0 - Live 0x… (OE)`), or,
 *   when /proc/modules cannot be read, the matching names of /sys/module (one per line); then
 *   `/sys/module/<m>/version=<v>` for nvidia_peermem / nv_peer_mem when that file exists, and
 *   `/sys/kernel/mm/memory_peers/<client>/version=<v>` for the GPU peer-memory clients nv_mem, nv_mem_nc, nvidia-peermem.
 * - `sys_infiniband`: `<dev>\tport=<n>\tstate=<s>\tlink_layer=<l>\trate=<r>\tnuma_node=<n>\tpci=<addr>`.
 * - `sys_gpu_numa`: `<pci address>\tclass=<0x03xxxx>\tnuma_node=<n>\tlocal_cpulist=<cpus>` per NVIDIA display device.
 */
import { performance } from 'node:perf_hooks';
import type { RawOutput } from '../shared/report';
import { RELEVANT_MODULE } from './parsers/sysFacts';

/** Reads a text file; null when it does not exist or cannot be read. */
export type SysReadFile = (p: string) => Promise<string | null>;
/** Lists a directory's entry names; null when it does not exist or cannot be listed. */
export type SysListDir = (p: string) => Promise<string[] | null>;

/** GPU peer-memory clients under /sys/kernel/mm/memory_peers (nv_peer_mem, its non-coherent twin, nvidia-peermem). */
export const PEER_MEMORY_CLIENTS = ['nv_mem', 'nv_mem_nc', 'nvidia-peermem'] as const;

/** Directory entry names accepted from the host (anything else is skipped: no traversal, no control characters). */
const SAFE_NAME = /^[A-Za-z0-9_.:-]{1,64}$/;
const MAX_IB_DEVICES = 64;
const MAX_PORTS = 16;
const MAX_PCI_DEVICES = 4096;
const BATCH = 16;

function safeNames(names: string[] | null, max: number): string[] {
	return (names ?? []).filter((n) => SAFE_NAME.test(n) && n !== '.' && n !== '..').sort().slice(0, max);
}

/** One sysfs value on one line: trimmed, tabs/newlines/control characters replaced, capped. */
function oneLine(v: string | null): string {
	if (v === null) { return '?'; }
	// eslint-disable-next-line no-control-regex
	const s = v.trim().replace(/[\u0000-\u001f\u007f]+/g, ' ');
	return s.length > 200 ? s.slice(0, 200) : s;
}

async function safeRead(readFile: SysReadFile, p: string): Promise<string | null> {
	try { return await readFile(p); } catch { return null; }
}

async function safeList(listDir: SysListDir, p: string): Promise<string[] | null> {
	try { return await listDir(p); } catch { return null; }
}

/** Map over items in batches (bounded parallelism for hosts where each read is a remote command). */
async function mapBatched<T, R>(items: readonly T[], fn: (t: T) => Promise<R>): Promise<R[]> {
	const out: R[] = [];
	for (let i = 0; i < items.length; i += BATCH) { out.push(...await Promise.all(items.slice(i, i + BATCH).map(fn))); }
	return out;
}

function raw(id: string, command: string[], started: number, stdout: string, error?: string, notes?: string[]): RawOutput {
	const r: RawOutput = { id, command, exitCode: error === undefined ? 0 : null, stdout, stderr: '', durationMs: Math.round(performance.now() - started) };
	if (error !== undefined) { r.error = error; }
	if (notes && notes.length > 0) { r.notes = notes; }
	return r;
}

async function collectModules(readFile: SysReadFile, listDir: SysListDir): Promise<RawOutput> {
	const started = performance.now();
	const lines: string[] = [];
	let command = ['read', '/proc/modules'];
	const notes: string[] = [];
	const proc = await safeRead(readFile, '/proc/modules');
	if (proc !== null) {
		for (const l of proc.split('\n')) {
			const name = l.split(' ')[0] ?? '';
			if (RELEVANT_MODULE.test(name)) { lines.push(oneLine(l)); }
		}
	} else {
		const names = await safeList(listDir, '/sys/module');
		if (names === null) { return raw('sys_modules', command, started, '', 'not found: neither /proc/modules nor /sys/module can be read'); }
		command = ['list', '/sys/module'];
		notes.push('/proc/modules could not be read; /sys/module listed instead (also lists modules built into the kernel)');
		lines.push(...safeNames(names, 100000).filter((n) => RELEVANT_MODULE.test(n)));
	}
	for (const m of ['nvidia_peermem', 'nv_peer_mem']) {
		const v = await safeRead(readFile, `/sys/module/${m}/version`);
		if (v !== null) { lines.push(`/sys/module/${m}/version=${oneLine(v)}`); }
	}
	// The peer-memory clients the RDMA core registered (MLNX_OFED's peer-memory interface): NCCL, UCC and UCX's ib md
	// test these files for GPUDirect RDMA, so a client here is GPUDirect RDMA even where no module line matched.
	for (const c of PEER_MEMORY_CLIENTS) {
		const v = await safeRead(readFile, `/sys/kernel/mm/memory_peers/${c}/version`);
		if (v !== null) { lines.push(`/sys/kernel/mm/memory_peers/${c}/version=${oneLine(v)}`); }
	}
	return raw('sys_modules', command, started, lines.map((l) => l + '\n').join(''), undefined, notes);
}

async function collectInfiniband(readFile: SysReadFile, listDir: SysListDir): Promise<RawOutput> {
	const started = performance.now();
	const base = '/sys/class/infiniband';
	const devs = await safeList(listDir, base);
	if (devs === null) { return raw('sys_infiniband', ['list', base], started, '', 'not found: no /sys/class/infiniband (no RDMA devices or driver)'); }
	const lines = await mapBatched(safeNames(devs, MAX_IB_DEVICES), async (dev) => {
		const d = `${base}/${dev}`;
		const numa = oneLine(await safeRead(readFile, `${d}/device/numa_node`));
		const uevent = await safeRead(readFile, `${d}/device/uevent`);
		const pci = oneLine(/^PCI_SLOT_NAME=(.*)$/m.exec(uevent ?? '')?.[1] ?? null);
		const ports = safeNames(await safeList(listDir, `${d}/ports`), MAX_PORTS);
		if (ports.length === 0) { return [`${dev}\tport=\tstate=?\tlink_layer=?\trate=?\tnuma_node=${numa}\tpci=${pci}`]; }
		return Promise.all(ports.map(async (p) => {
			const [state, layer, rate] = await Promise.all(['state', 'link_layer', 'rate'].map((f) => safeRead(readFile, `${d}/ports/${p}/${f}`)));
			return `${dev}\tport=${p}\tstate=${oneLine(state)}\tlink_layer=${oneLine(layer)}\trate=${oneLine(rate)}\tnuma_node=${numa}\tpci=${pci}`;
		}));
	});
	return raw('sys_infiniband', ['list', base], started, lines.flat().map((l) => l + '\n').join(''));
}

async function collectGpuNuma(readFile: SysReadFile, listDir: SysListDir): Promise<RawOutput> {
	const started = performance.now();
	const base = '/sys/bus/pci/devices';
	const devs = await safeList(listDir, base);
	if (devs === null) { return raw('sys_gpu_numa', ['list', base], started, '', 'not found: /sys/bus/pci/devices cannot be listed'); }
	const lines = await mapBatched(safeNames(devs, MAX_PCI_DEVICES), async (dev) => {
		const d = `${base}/${dev}`;
		if (oneLine(await safeRead(readFile, `${d}/vendor`)).toLowerCase() !== '0x10de') { return null; }
		const cls = oneLine(await safeRead(readFile, `${d}/class`)).toLowerCase();
		if (!cls.startsWith('0x03')) { return null; }
		const [numa, cpus] = await Promise.all([safeRead(readFile, `${d}/numa_node`), safeRead(readFile, `${d}/local_cpulist`)]);
		return `${dev}\tclass=${cls}\tnuma_node=${oneLine(numa)}\tlocal_cpulist=${oneLine(cpus)}`;
	});
	return raw('sys_gpu_numa', ['list', base], started, lines.filter((l): l is string => l !== null).map((l) => l + '\n').join(''));
}

/** Collect the three sysfs raw outputs. Never rejects: unreadable places become RawOutputs with an error. */
export async function collectSystemFacts(readFile: SysReadFile, listDir: SysListDir): Promise<RawOutput[]> {
	return Promise.all([collectModules(readFile, listDir), collectInfiniband(readFile, listDir), collectGpuNuma(readFile, listDir)]);
}
