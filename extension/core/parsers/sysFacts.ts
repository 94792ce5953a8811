/**
 * Parsers for the sysfs raw outputs of sysCollect.ts (`sys_modules`, `sys_infiniband`, `sys_gpu_numa`) and the
 * older `sys_module_nvidia` listing (`ls /sys/module | grep nvidia`). Line formats are documented in sysCollect.ts.
 */
import type { GpuFacts, GpuNuma, IbPort, KernelModule, ParseIssue, SysFacts } from '../facts';
import { issue, lineEvidence, looksBinary, splitLines } from './text';

/** Kernel modules that matter for GPU-aware MPI (GPU driver, peer memory, RDMA stacks). */
export const RELEVANT_MODULE = /^(nvidia(_[a-z0-9_]+)?|nv_peer_mem|gdrdrv|ib_[a-z0-9_]+|mlx[45]_[a-z0-9_]+|rdma_[a-z0-9_]+|irdma|bnxt_re|efa|hfi1|cxi[a-z0-9_]*)$/;

const MODULE_NAME = /^[A-Za-z0-9_]{1,64}$/;

function binaryIssue(source: string): ParseIssue {
	return issue(source, 'warning', `${source} looks binary; it was not parsed.`);
}

/** Parse a module listing (/proc/modules lines or bare names) into sys.modules and gpu.peermemLoaded. */
export function parseSysModules(text: string, sys: SysFacts, gpu: GpuFacts, source: string): ParseIssue[] {
	if (looksBinary(text)) { return [binaryIssue(source)]; }
	const modules: KernelModule[] = [];
	const issues: ParseIssue[] = [];
	for (const l of splitLines(text)) {
		const t = l.text.trim();
		if (t === '') { continue; }
		const ver = /^\/sys\/module\/(nvidia_peermem|nv_peer_mem)\/version=(.*)$/.exec(t);
		if (ver) { sys.peermemVersion = { value: ver[2], evidence: lineEvidence(source, l) }; continue; }
		const client = /^\/sys\/kernel\/mm\/memory_peers\/(nv_mem|nv_mem_nc|nvidia-peermem)\/version=(.*)$/.exec(t);
		if (client) { sys.peerMemoryClient ??= { value: `${client[1]} ${client[2]}`, evidence: lineEvidence(source, l) }; continue; }
		const name = t.split(/\s+/)[0];
		// Either a bare name (/sys/module listing) or a /proc/modules line: name size refcount deps state address.
		const procLine = /^\S+ \d+ (\d+|-) \S+ (Live|Loading|Unloading)\b/.test(t);
		if (!MODULE_NAME.test(name) || !RELEVANT_MODULE.test(name) || (t !== name && !procLine)) {
			if (issues.length === 0) { issues.push(issue(source, 'info', `${source}: line ${l.lineNo} is not a GPU/RDMA kernel module entry (the collector lists only those); skipped.`, [lineEvidence(source, l)])); }
			continue;
		}
		modules.push({ name, evidence: lineEvidence(source, l) });
	}
	sys.modules = [...(sys.modules ?? []), ...modules];
	const pm = sys.modules.find((m) => m.name === 'nvidia_peermem' || m.name === 'nv_peer_mem');
	if (pm) { gpu.peermemLoaded = { value: true, evidence: pm.evidence }; }
	else if (sys.peerMemoryClient) { gpu.peermemLoaded = { value: true, evidence: sys.peerMemoryClient.evidence }; }
	else if (!gpu.peermemLoaded?.value) {
		const first = sys.modules.find((m) => m.name.startsWith('nvidia')) ?? sys.modules[0];
		gpu.peermemLoaded = { value: false, evidence: first ? first.evidence : { source, line: '(no GPU or RDMA kernel modules listed)' } };
	}
	return issues;
}

function field(parts: string[], key: string): string {
	const p = parts.find((x) => x.startsWith(`${key}=`));
	return p === undefined ? '?' : p.slice(key.length + 1);
}

function numaOf(v: string): number | null {
	const n = Number(v.trim());
	return Number.isInteger(n) && n >= 0 && n < 4096 ? n : null;
}

/** Parse `sys_infiniband` lines into sys.ibPorts. */
export function parseSysInfiniband(text: string, sys: SysFacts, source: string): ParseIssue[] {
	if (looksBinary(text)) { return [binaryIssue(source)]; }
	const ports: IbPort[] = [];
	const issues: ParseIssue[] = [];
	for (const l of splitLines(text)) {
		if (l.text.trim() === '') { continue; }
		const parts = l.text.split('\t');
		if (parts.length < 2 || !parts.slice(1).every((p) => p.includes('='))) {
			if (issues.length === 0) { issues.push(issue(source, 'info', `${source}: line ${l.lineNo} is not in the "<device>\\tkey=value…" format; skipped.`, [lineEvidence(source, l)])); }
			continue;
		}
		const state = field(parts, 'state');
		ports.push({
			device: parts[0], port: field(parts, 'port'), state, active: /\bACTIVE\b/i.test(state) && !/ACTIVE_DEFER/i.test(state),
			linkLayer: field(parts, 'link_layer'), rate: field(parts, 'rate'), numaNode: numaOf(field(parts, 'numa_node')),
			pci: field(parts, 'pci'), evidence: lineEvidence(source, l),
		});
	}
	sys.ibPorts = ports;
	return issues;
}

/** Parse `sys_gpu_numa` lines into sys.gpuNuma. */
export function parseSysGpuNuma(text: string, sys: SysFacts, source: string): ParseIssue[] {
	if (looksBinary(text)) { return [binaryIssue(source)]; }
	const gpus: GpuNuma[] = [];
	const issues: ParseIssue[] = [];
	for (const l of splitLines(text)) {
		if (l.text.trim() === '') { continue; }
		const parts = l.text.split('\t');
		if (!/^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$/.test(parts[0])) {
			if (issues.length === 0) { issues.push(issue(source, 'info', `${source}: line ${l.lineNo} does not start with a PCI address; skipped.`, [lineEvidence(source, l)])); }
			continue;
		}
		gpus.push({ pciBusId: parts[0], numaNode: numaOf(field(parts, 'numa_node')), localCpus: field(parts, 'local_cpulist'), evidence: lineEvidence(source, l) });
	}
	sys.gpuNuma = gpus;
	return issues;
}
