/**
 * Parsers for `nvidia-smi topo -m` (connection matrix, CPU/NUMA affinity) and `nvidia-smi -q -x` (driver and CUDA
 * version, GPUs). The XML is read line by line (nvidia-smi writes one element per line); no XML library needed.
 */
import type { GpuFacts, ParseIssue, SmiGpu, TopoRow } from '../facts';
import { firstLineEvidence, issue, lineEvidence, looksBinary, NumberedLine, splitLines } from './text';

// eslint-disable-next-line no-control-regex
const ANSI_RE = /\u001b\[[0-9;]*[A-Za-z]/g;

/** Parse `nvidia-smi topo -m` into rows. */
export function parseNvidiaSmiTopo(text: string, source = 'nvidia_smi_topo'): { rows: TopoRow[]; issues: ParseIssue[] } {
	const rows: TopoRow[] = [];
	if (looksBinary(text)) {
		return { rows, issues: [issue(source, 'warning', 'nvidia-smi topo -m output looks binary or corrupted.', firstLineEvidence(source, text))] };
	}
	const lines = splitLines(text);
	let header: string[] | null = null;
	for (const l of lines) {
		const clean = l.text.replace(ANSI_RE, '');
		if (clean.trim() === '') { if (header && rows.length > 0) { break; } continue; }
		if (/^\s*Legend:/.test(clean)) { break; }
		const cells = clean.split(/\t+/).map((c) => c.trim());
		if (header === null) {
			if (cells[0] === '') { cells.shift(); }
			if (cells.some((c) => /^GPU\d+$/.test(c))) { header = cells; }
			continue;
		}
		const device = cells[0];
		if (!/^(GPU|NIC|mlx|CPU)\S*$/.test(device)) { continue; }
		const row: TopoRow = { device, links: {}, cpuAffinity: '', numaAffinity: '', evidence: lineEvidence(source, l) };
		header.forEach((h, i) => {
			const v = cells[i + 1];
			if (v === undefined) { return; }
			if (h === 'CPU Affinity') { row.cpuAffinity = v; } else if (h === 'NUMA Affinity') { row.numaAffinity = v; }
			else if (/^(GPU|NIC)\d+$/.test(h)) { row.links[h] = v; }
		});
		rows.push(row);
	}
	const issues: ParseIssue[] = [];
	if (rows.length === 0 && text.trim() !== '') {
		issues.push(issue(source, 'warning', 'nvidia-smi topo -m printed no GPU matrix.', firstLineEvidence(source, text)));
	}
	return { rows, issues };
}

function tagValue(line: string, tag: string): string | null {
	const m = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(line);
	return m ? m[1].trim() : null;
}

/** Parse `nvidia-smi -q -x` into driver/CUDA versions and GPUs (fills `gpu`). */
export function parseNvidiaSmiXml(text: string, gpu: GpuFacts, source = 'nvidia_smi_xml'): ParseIssue[] {
	if (looksBinary(text)) {
		return [issue(source, 'warning', 'nvidia-smi -q -x output looks binary or corrupted.', firstLineEvidence(source, text))];
	}
	const lines = splitLines(text);
	if (!lines.some((l) => l.text.includes('<nvidia_smi_log'))) {
		return [issue(source, 'warning', 'nvidia-smi -q -x output has no <nvidia_smi_log> element.', firstLineEvidence(source, text))];
	}
	let cur: { g: SmiGpu; start: NumberedLine } | null = null;
	let inFb = false;
	let closed = false;
	for (const l of lines) {
		const t = l.text;
		if (t.includes('</nvidia_smi_log>')) { closed = true; }
		const gm = /<gpu id="([^"]*)">/.exec(t);
		if (gm) {
			cur = { g: { index: gpu.gpus.length, name: '', pciBusId: gm[1], uuid: '', memoryMiB: 0, evidence: lineEvidence(source, l), architecture: null, computeMode: null, migMode: null, pcieGen: null }, start: l };
			gpu.gpus.push(cur.g);
			continue;
		}
		if (t.includes('</gpu>')) { cur = null; continue; }
		if (!cur) {
			const dv = tagValue(t, 'driver_version');
			if (dv !== null && !gpu.driverVersion) { gpu.driverVersion = { value: dv, evidence: lineEvidence(source, l) }; }
			const cv = tagValue(t, 'cuda_version');
			if (cv !== null && !gpu.cudaVersion) { gpu.cudaVersion = { value: cv, evidence: lineEvidence(source, l) }; }
			continue;
		}
		if (t.includes('<fb_memory_usage>')) { inFb = true; continue; }
		if (t.includes('</fb_memory_usage>')) { inFb = false; continue; }
		const name = tagValue(t, 'product_name');
		if (name !== null && cur.g.name === '') { cur.g.name = name; cur.g.evidence = lineEvidence(source, l); }
		const uuid = tagValue(t, 'uuid');
		if (uuid !== null && cur.g.uuid === '') { cur.g.uuid = uuid; }
		const minor = tagValue(t, 'minor_number');
		if (minor !== null && /^\d+$/.test(minor)) { cur.g.index = Number(minor); }
		const bus = tagValue(t, 'pci_bus_id');
		if (bus !== null) { cur.g.pciBusId = bus; }
		const loc = (v: string): { value: string; evidence: ReturnType<typeof lineEvidence> } => ({ value: v, evidence: lineEvidence(source, l) });
		const arch = tagValue(t, 'product_architecture');
		if (arch !== null && !cur.g.architecture) { cur.g.architecture = loc(arch); }
		const cm = tagValue(t, 'compute_mode');
		if (cm !== null && !cur.g.computeMode) { cur.g.computeMode = loc(cm); }
		const mig = tagValue(t, 'current_mig');
		if (mig !== null && !cur.g.migMode) { cur.g.migMode = loc(mig); }
		const gen = tagValue(t, 'current_link_gen');
		if (gen !== null && !cur.g.pcieGen) { cur.g.pcieGen = loc(gen); }
		const total = inFb ? tagValue(t, 'total') : null;
		if (total !== null) { const mm = /^(\d+)\s*MiB/.exec(total); if (mm) { cur.g.memoryMiB = Number(mm[1]); } }
	}
	const issues: ParseIssue[] = [];
	if (!closed) {
		const last = lines[lines.length - 1];
		issues.push(issue(source, 'warning', 'nvidia-smi -q -x output ends before </nvidia_smi_log> (truncated?).', last ? [lineEvidence(source, last)] : []));
	}
	return issues;
}
