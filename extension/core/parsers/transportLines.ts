/**
 * The transport lines of a launched run's output: UCX's lane lines (`UCX_LOG_LEVEL=info`) and protocol tables
 * (`UCX_PROTO_INFO=y`), and Open MPI's bml selection lines (`--mca btl_base_verbose 100`), which say what carries
 * each peer (launch/evidenceSwitches.ts turns them on). Pure functions over text; they never throw on garbage.
 */
import type { TransportEvidence, UcxLaneLine, UcxProtoRow } from '../../shared/reproSchema';
import { cleanLine, MAX_LINES } from './text';

const MAX_EVIDENCE_LINES = 60;

function lines(text: string): string[] {
	return text.split(/\r\n|\n|\r/).slice(0, MAX_LINES);
}

/**
 * UCX prefix: "[1796203351.358063] [vm:20857:0]      ucp_worker.c:1763 UCX  INFO  " — the last one on the line: a
 * launcher may have put a label or the unterminated tail of another rank's line before it. UCX pads the pid to five
 * columns ("[host-a:2603 :0]"): on a freshly booted machine, where pids have four digits, a parser that wanted
 * digits right before the colon lost every lane line (the intermittent CI failure of mapMpich.test.ts, captured
 * 2026-12-03 in test-fixtures/repro/mpich-netns-short-pids.txt).
 */
const UCX_PREFIX = /\[[\d.]+\]\s+\[([^\]:\s]+):(\d+)\s*:\d+\]\s+(?!.*\[[\d.]+\]\s+\[[^\]:\s]+:\d+\s*:\d+\])/;

/** `UCX_LOG_LEVEL=info` lane lines: "ep_cfg[0]: tag(self/memory0 cma/memory) rma(...) am(...)". */
export function parseUcxLanes(text: string): UcxLaneLine[] {
	const out: UcxLaneLine[] = [];
	for (const l of lines(text)) {
		const i = l.indexOf('ep_cfg[');
		if (i < 0 || !/UCX\s+INFO/.test(l)) { continue; }
		const head = UCX_PREFIX.exec(l);
		const m = /ep_cfg\[(\d+)\]:\s*(.*)$/.exec(l.slice(i));
		if (!m) { continue; }
		const lanes: Record<string, string[]> = {};
		for (const g of m[2].matchAll(/([A-Za-z_]+)\(([^)]*)\)/g)) {
			lanes[g[1]] = g[2].trim().split(/\s+/).filter(x => x.length > 0);
		}
		if (Object.keys(lanes).length === 0) { continue; }
		out.push({ host: head?.[1] ?? '', pid: head ? Number(head[2]) : 0, epCfg: Number(m[1]), lanes, line: cleanLine(l.trim()) });
	}
	return out;
}

/**
 * `UCX_PROTO_INFO=y` tables (UCX ≥ 1.13 with UCX_PROTO_ENABLE=y): a title row "| <name> ep_cfg[N] | <operation> |"
 * followed by rows "| 0..5562 | eager short | self/memory0 |". Rows are attached to the last title of the same pid.
 */
export function parseUcxProtoInfo(text: string): UcxProtoRow[] {
	const out: UcxProtoRow[] = [];
	const current = new Map<number, { epCfg: number; operation: string; memoryType: string }>();
	for (const l of lines(text)) {
		const bar = l.indexOf('|');
		if (bar < 0) { continue; }
		const head = UCX_PREFIX.exec(l);
		const pid = head ? Number(head[2]) : 0;
		const cells = l.slice(bar).split('|').slice(1, -1).map(c => c.trim());
		if (cells.length < 2) { continue; }
		const title = /ep_cfg\[(\d+)\]/.exec(cells[0]);
		if (title) {
			const op = cells[1];
			const mem = /\b(?:from|into|to)\s+(host memory|[a-z_]+\/[A-Za-z0-9_[\]]+)/.exec(op);
			current.set(pid, { epCfg: Number(title[1]), operation: op, memoryType: mem ? mem[1] : '' });
			continue;
		}
		const range = /^(\d+)\.\.(\d+|inf)$/.exec(cells[0]);
		const cur = current.get(pid);
		if (!range || !cur || cells.length < 3) { continue; }
		out.push({
			pid, epCfg: cur.epCfg, operation: cur.operation, memoryType: cur.memoryType,
			fromBytes: Number(range[1]), toBytes: range[2] === 'inf' ? null : Number(range[2]),
			protocol: cells[1], lanes: cells[2], line: cleanLine(l.trim()),
		});
	}
	return out;
}

/** Open MPI `--mca btl_base_verbose 100`: "mca: bml: Using vader btl for send to [[…],1] on node vm" → unique btl names. */
export function parseBmlLines(text: string): { btls: string[]; lines: string[] } {
	const btls = new Set<string>();
	const ev: string[] = [];
	for (const l of lines(text)) {
		const m = /mca: bml: Using (\S+) btl for send to (\S+) on node (\S+)/.exec(l);
		if (!m) { continue; }
		btls.add(m[1]);
		const c = cleanLine(l.trim());
		if (ev.length < 20 && !ev.includes(c)) { ev.push(c); }
	}
	return { btls: [...btls], lines: ev };
}

/** Everything transport-related in one run's output. */
export function gatherTransportEvidence(stdout: string, stderr: string): TransportEvidence {
	const text = stdout + '\n' + stderr;
	const lanes = parseUcxLanes(text);
	const protocols = parseUcxProtoInfo(text);
	const bml = parseBmlLines(text);
	const evLines = [...lanes.map(l => l.line), ...bml.lines];
	const seen = new Set<string>();
	for (const p of protocols) {
		const key = `${p.memoryType}|${p.protocol}|${p.lanes}`;
		if (!seen.has(key) && (p.toBytes === null || p.fromBytes > 0)) {
			seen.add(key);
			evLines.push(cleanLine(`ep_cfg[${p.epCfg}] ${p.operation}: ${p.fromBytes}..${p.toBytes ?? 'inf'} ${p.protocol} [${p.lanes}]`));
		}
	}
	return { lanes, protocols, btls: bml.btls, lines: evLines.slice(0, MAX_EVIDENCE_LINES) };
}
