/**
 * libfabric as its own `fi_info` sees it (the collector's raw outputs, collect/libfabric.ts):
 * - `fi_info_version`: `fi_info --version` ("fi_info: 1.17.0", "libfabric: 1.17.0", "libfabric api: 1.17");
 * - `fi_info`: every provider/domain pair (`provider: tcp;ofi_rxm`, indented `fabric:`, `domain:`, `version:` …);
 * - `fi_info_hmem`: `fi_info -c FI_HMEM`, the pairs that accept FI_HMEM, run with FI_LOG_LEVEL=info so that its stderr
 *   carries libfabric's core log: what each GPU interface did at start-up (src/hmem.c ofi_hmem_init: "Hmem iface
 *   FI_HMEM_CUDA not supported" when the interface is a stub or found no runtime / device, "Failed to initialize hmem
 *   iface …" on an error; src/hmem_cuda.c: "Failed to dlopen libcudart.so", "Number of CUDA devices detected: N") and
 *   the FI_ variables it read ("read string var mr_cache_monitor=userfaultfd"). Exit 61 with "fi_getinfo: -61" is
 *   fi_info's answer when no provider matches (FI_ENODATA), not a failure.
 * Each output's failure is read here, not by the generic handler: a missing fi_info is "not installed" (no issue),
 * a timed-out one a fact a rule reports (`libfabric-probe-hung`), text that is not fi_info's format a parse issue.
 */
import type { RawOutput } from '../../shared/report';
import type { FiInfoEntry, LibfabricFacts, ParseIssue } from '../facts';
import { firstLineEvidence, issue, lineEvidence, looksBinary, splitLines } from './text';

/** Raw output ids of the collector's fi_info runs. */
export const FI_INFO_IDS = ['fi_info_version', 'fi_info', 'fi_info_hmem'] as const;

/** The empty facts the parsers fill in. */
export function emptyLibfabric(): LibfabricFacts {
	return {
		version: null, providers: null, hmemProviders: null, hmemRun: { state: 'unreadable', detail: 'not collected', seconds: null, evidence: null },
		logSeen: false, hmemIfaces: [], cudaRuntimeMissing: null, cudaDevices: null, settingsRead: [],
	};
}

const PROVIDER = /^provider:\s*(\S.*?)\s*$/;
const ATTR = /^\s+(fabric|domain|version|type|protocol):\s*(.*?)\s*$/;

/** Provider/domain pairs of fi_info's default output; `bad` when there is text but not one `provider:` block. */
export function parseFiInfoList(text: string, source: string): { entries: FiInfoEntry[]; bad: boolean } {
	const entries: FiInfoEntry[] = [];
	let cur: FiInfoEntry | null = null;
	let other = 0;
	for (const l of splitLines(text)) {
		if (l.text.trim() === '') { continue; }
		const p = PROVIDER.exec(l.text);
		if (p) {
			cur = { provider: p[1], fabric: '', domain: '', evidence: lineEvidence(source, l) };
			entries.push(cur);
			continue;
		}
		const a = ATTR.exec(l.text);
		if (a && cur) {
			if (a[1] === 'fabric') { cur.fabric = a[2]; }
			if (a[1] === 'domain') { cur.domain = a[2]; }
			continue;
		}
		other++;
	}
	return { entries, bad: entries.length === 0 && other > 0 };
}

/** libfabric's log line: `libfabric:PID:TIME:<domain>:<prov>:<subsys>:<func>():<line><level> <message>`. */
const LOG = /^libfabric:\d+:\d+:[^:]*:([^:]*):([^:]*):[^<]*<(\w+)>\s?(.*)$/;

/** Read libfabric's core log (stderr of the FI_LOG_LEVEL=info run) into the facts. */
export function parseFiLog(text: string, source: string, lf: LibfabricFacts): void {
	for (const l of splitLines(text)) {
		const m = LOG.exec(l.text);
		if (!m) { continue; }
		lf.logSeen = true;
		const msg = m[4];
		// ofi_hmem_init runs more than once per process (the core, then providers built as DL or with their own init):
		// the first report of an interface is kept.
		const ns = /^Hmem iface (FI_HMEM_[A-Z0-9_]+) not supported/.exec(msg);
		if (ns) { if (!lf.hmemIfaces.some((i) => i.iface === ns[1])) { lf.hmemIfaces.push({ iface: ns[1], state: 'not supported', detail: '', evidence: lineEvidence(source, l) }); } continue; }
		const failed = /^Failed to initialize hmem iface (FI_HMEM_[A-Z0-9_]+):?\s*(.*)$/.exec(msg);
		if (failed) { if (!lf.hmemIfaces.some((i) => i.iface === failed[1])) { lf.hmemIfaces.push({ iface: failed[1], state: 'failed', detail: failed[2], evidence: lineEvidence(source, l) }); } continue; }
		if (/^Failed to dlopen libcudart\.so/.test(msg)) { lf.cudaRuntimeMissing ??= { value: msg.trim(), evidence: lineEvidence(source, l) }; continue; }
		const devs = /^Number of CUDA devices detected: (\d+)/.exec(msg);
		if (devs) { lf.cudaDevices = { value: Number(devs[1]), evidence: lineEvidence(source, l) }; continue; }
		const read = /^read (?:string|bool|int|long|size_t) var ([a-z0-9_]+)=(.*)$/.exec(msg);
		if (read && !lf.settingsRead.some((s) => s.name === read[1])) { lf.settingsRead.push({ name: read[1], value: read[2], evidence: lineEvidence(source, l) }); }
	}
}

function failureText(r: RawOutput): string {
	return r.timedOut ? (r.error || 'timed out') : (r.error || (r.exitCode === null ? 'did not run' : `exit code ${r.exitCode}`));
}

/**
 * Read one fi_info raw output into `lf`. Returns the parse issues: none for a tool that is not installed (a normal
 * state) or for a time-out (a fact: `libfabric-probe-hung` reports it with what it means), one for a failed run or
 * output that is not fi_info's.
 */
export function parseFiInfoRaw(r: RawOutput, lf: LibfabricFacts): ParseIssue[] {
	const cmd = r.command.join(' ') || r.id;
	const notFound = r.exitCode === null && !r.timedOut && /not found|ENOENT|no such file/i.test(r.error ?? '');
	if (r.id === 'fi_info_hmem') {
		parseFiLog(r.stderr, `${r.id} (stderr)`, lf);
		const seconds = Number.isFinite(r.durationMs) ? Math.round(r.durationMs / 100) / 10 : null;
		const errLine = splitLines(r.stderr.slice(-4096)).reverse().find((l) => /^fi_getinfo:/.test(l.text) || (l.text.trim() !== '' && !LOG.test(l.text)));
		const errEv = errLine ? lineEvidence(`${r.id} (stderr)`, errLine) : null;
		if (notFound) { lf.hmemRun = { state: 'not installed', detail: r.error ?? 'not found', seconds: null, evidence: null }; return []; }
		if (r.timedOut) { lf.hmemRun = { state: 'timeout', detail: failureText(r), seconds, evidence: errEv ?? { source: r.id, line: `${cmd}: ${failureText(r)}` } }; return []; }
		// FI_ENODATA (61): fi_getinfo found no provider with FI_HMEM: an answer, not an error.
		if (r.exitCode === 61 || /^fi_getinfo: -61\b/m.test(r.stderr)) {
			lf.hmemProviders = [];
			lf.hmemRun = { state: 'no match', detail: 'no provider accepts FI_HMEM', seconds, evidence: errEv };
			return [];
		}
	}
	if (notFound || /^skipped:/.test(r.error ?? '')) { return []; }
	if (r.id === 'fi_info' && r.exitCode === 61) { lf.providers = []; return []; }
	if (r.timedOut || r.exitCode !== 0) {
		if (r.id === 'fi_info_hmem') { lf.hmemRun = { state: 'failed', detail: failureText(r), seconds: null, evidence: firstLineEvidence(`${r.id} (stderr)`, r.stderr)[0] ?? null }; }
		return [issue(r.id, r.timedOut ? 'warning' : 'info', `${cmd}: ${failureText(r)}.`, firstLineEvidence(`${r.id} (stderr)`, r.stderr))];
	}
	if (looksBinary(r.stdout)) {
		if (r.id === 'fi_info_hmem') { lf.hmemRun = { state: 'unreadable', detail: 'binary output', seconds: null, evidence: null }; }
		return [issue(r.id, 'warning', `${cmd}: the output looks binary, not fi_info's text; libfabric's facts from it are missing.`)];
	}
	if (r.id === 'fi_info_version') {
		const v = splitLines(r.stdout).find((l) => /^libfabric:\s*\d+\.\d+/.test(l.text));
		if (!v) { return [issue(r.id, 'info', `${cmd}: no "libfabric: <version>" line in its output; the libfabric version is unknown.`, firstLineEvidence(r.id, r.stdout))]; }
		lf.version = { value: v.text.replace(/^libfabric:\s*/, '').trim(), evidence: lineEvidence(r.id, v) };
		return [];
	}
	const { entries, bad } = parseFiInfoList(r.stdout, r.id);
	if (bad || (entries.length === 0 && r.id === 'fi_info_hmem')) {
		if (r.id === 'fi_info_hmem') { lf.hmemRun = { state: 'unreadable', detail: 'not fi_info\'s format', seconds: null, evidence: firstLineEvidence(r.id, r.stdout)[0] ?? null }; }
		return [issue(r.id, 'warning', `${cmd}: its output is not in fi_info's format (no "provider: <name>" line${r.stdout.trim() === '' ? '; it printed nothing' : ''}); which libfabric providers exist${r.id === 'fi_info_hmem' ? ' and which accept GPU memory' : ''} is not known.`, firstLineEvidence(r.id, r.stdout))];
	}
	if (r.id === 'fi_info') { lf.providers = entries; }
	else {
		lf.hmemProviders = entries;
		lf.hmemRun = { state: 'ok', detail: `${entries.length} provider/domain pair(s)`, seconds: null, evidence: entries[0]?.evidence ?? null };
	}
	return [];
}
