/**
 * Merges the per-rank guard reports of one run (gpumpi-guard-rank/1, guardReport.ts) into what the product already
 * shows: totals, the program's real traffic per pair as a transport-map document (shared/mapSchema.ts, with each
 * pair's `traffic`), and findings with evidence and fixes (shared/report.ts). Pure: report texts in, the merge out.
 * A damaged file, a rank that wrote nothing and a program that failed are findings, never dropped silently.
 */
import type { Finding, SourceRef } from '../../shared/report';
import { MAP_SCHEMA, type MapDocument, type MapPair, type MapRank, type PathClass } from '../../shared/mapSchema';
import { launchFailureText, type LaunchFailure } from '../launch/launcherOutput';
import { src, URLS } from '../rules/sources';
import { BUFFER_CLASSES, parseGuardReport, siteText, type BufferCounts, type GuardDanger, type GuardRankReport } from '../parsers/guardReport';

/** One report file as read from the report directory. */
export interface GuardReportFile { name: string; text: string }

/** What the merge needs besides the files. */
export interface GuardMergeInput {
	files: GuardReportFile[];
	/** Ranks the command asked for (-np / -n), when it could be read from the command line. */
	expectedRanks: number | null;
	/** The program's exit code (null: killed or not started) and signal. */
	exitCode: number | null;
	signal: string | null;
	/** The command line as run, shown in fixes ("gpumpi-doctor guard --mode fix -- …"). */
	userCommand: string[];
	/** Where the ranks ran, for messages ("this machine", an ssh host). */
	where: string;
	/** The mode asked for. */
	mode: string;
	/** The `gpumpi-doctor guard` options before `--` (kept in the fix-mode command; --mode, --json and --out are not). */
	guardOptions?: string[];
	/** What the launcher said when it could not start the program (launch/launcherOutput.ts detectLaunchFailure). */
	launchFailure?: LaunchFailure | null;
}

/** Totals over every rank. */
export interface GuardTotals {
	calls: number; bytes: number; p2pMessages: number; p2pBytes: number; collectiveCalls: number;
	dangerKinds: number; dangerCalls: number; bounced: number; unsupportedCalls: number;
	/** Device messages STAGE moved through libgpumpi's staging (sender side), and their bytes; 0 without STAGE. */
	stagedMessages: number; stagedBytes: number;
}

/** One merged MPI call name. */
export interface GuardCallTotal { name: string; count: number; bytes: number; timeInMpiNs: number | null; ranks: number }

/** One ordered direction between two ranks. */
export interface GuardPairTraffic { a: number; b: number; calls: number; bytes: number; largestMessage: number; bufferClasses: BufferCounts; path: string }

/** The merge. */
export interface GuardMerge {
	reports: GuardRankReport[];
	/** Ranks of MPI_COMM_WORLD with no (valid) report. */
	missingRanks: number[];
	worldSize: number | null;
	totals: GuardTotals;
	calls: GuardCallTotal[];
	/** a → b sends (from a's report; b's receives when a wrote none), a ≠ b, sorted. */
	traffic: GuardPairTraffic[];
	findings: Finding[];
	/** The traffic as a transport map (null when no rank reported). */
	map: MapDocument | null;
	/** One line: the verdict the text output opens with. */
	verdict: string;
}

const GUARD_DOC = 'docs/guard.md';

/** Control characters and other invisible text of a report (a symbol name is whatever the binary says) as escapes. */
export function printable(s: string): string {
	// eslint-disable-next-line no-control-regex
	return s.replace(/[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** 1234567 → "1.2 MB" (decimal units, as byte counts are shown elsewhere in the CLI). */
export function bytesText(n: number): string {
	if (n < 1000) { return `${n} B`; }
	const units = ['kB', 'MB', 'GB', 'TB', 'PB'];
	let v = n;
	let u = -1;
	while (v >= 1000 && u < units.length - 1) { v /= 1000; u++; }
	return `${v >= 100 ? v.toFixed(0) : v.toFixed(1)} ${units[u]}`;
}

const emptyClasses = (): BufferCounts => Object.fromEntries(BUFFER_CLASSES.map(c => [c, 0])) as BufferCounts;
const addClasses = (to: BufferCounts, from: BufferCounts): void => { for (const c of BUFFER_CLASSES) { to[c] += from[c]; } };

interface DangerSpec { severity: Finding['severity']; title: string; fix: (cmd: string) => NonNullable<Finding['fix']>; sources: SourceRef[] }

const DANGERS: Record<string, DangerSpec> = {
	'ipc-import-ucx-cuda-ipc': {
		severity: 'error',
		title: 'MPI call on a CUDA-IPC-imported buffer under UCX',
		fix: cmd => ({ text: 'Run with the guard in fix mode: it bounces these calls through a device buffer the rank owns (no code change). Or send from / receive into a buffer the rank allocated itself and copy to the import (libgpumpi does it: docs/library.md).', command: `gpumpi-doctor guard --mode fix ${cmd}` }),
		sources: [src(`${GUARD_DOC}#dangers`, 'which calls the guard flags and why'), src(`${GUARD_DOC}#fix-mode`, 'what fix mode does with them'), src(URLS.devIpc, 'the crash and corruption measured on the H200 testbed')],
	},
	'device-buffer-mpi-not-cuda-aware': {
		severity: 'error',
		title: 'GPU buffer passed to an MPI that is not CUDA-aware at run time',
		fix: () => ({ text: 'Use a CUDA-aware MPI build (Open MPI with UCX or smcuda built --with-cuda), or copy to host memory before the call (libgpumpi stages through persistent buffers: docs/library.md).' }),
		sources: [src(`${GUARD_DOC}#dangers`, 'MPIX_Query_cuda_support() returned 0 while a device buffer was passed'), src(URLS.ompiCudaDocs, "Open MPI's CUDA support and how to check it")],
	},
	'pool-or-vmm-legacy-ipc': {
		severity: 'warning',
		title: 'Pool (cudaMallocAsync) or VMM memory sent to a same-host GPU peer with cuda_ipc allowed',
		fix: cmd => ({ text: "Run with the guard in fix mode: it sends these buffers through a cudaMalloc buffer the rank owns, which UCX's cuda_ipc can export (measured speeds before and after: docs/device-results.md, \"guard on programs it was not written for\"). Or allocate MPI buffers with cudaMalloc. UCX_TLS=^cuda_ipc avoids the failed export too, but was measured slower than the bounce.", command: `gpumpi-doctor guard --mode fix ${cmd}` }),
		sources: [src(`${GUARD_DOC}#dangers`, 'legacy CUDA IPC cannot export pool or VMM memory'), src(URLS.ucxCudaIpcMd, "UCX's cuda_ipc memory domain")],
	},
	'ucx-memtype-cache-miss': {
		severity: 'error',
		title: "GPU buffer UCX's memory-type cache does not know: UCX takes it for host memory",
		fix: cmd => ({ text: "Run with the guard in fix mode: it tells UCX's memory-type cache about each such buffer before the call (no code change). Or run with UCX_MEMTYPE_CACHE=n (UCX then asks the driver about every buffer), or make the program's first MPI transfer after the GPU allocations it sends from.", command: `gpumpi-doctor guard --mode fix ${cmd}` }),
		sources: [
			src(`${GUARD_DOC}#ucx-memory-type-cache`, 'when UCX builds the cache, which allocations it learns of per release, what the guard does'),
			src('https://github.com/openucx/ucx/blob/v1.13.1/src/ucp/core/ucp_context.h', 'UCX 1.13.1: "not found in memtype cache, assuming host memory"'),
			src('https://github.com/openucx/ucx/blob/v1.13.1/src/ucm/cuda/cudamem.c', 'UCX 1.13.1 hooks cuMemAlloc*, cuMemAllocManaged, cuMemAllocPitch (not cuMemMap, cuMemAllocAsync, cuIpcOpenMemHandle)'),
			src(URLS.ucxFaq, 'UCX FAQ: UCX_MEMTYPE_CACHE=n when GPU memory is taken for host memory'),
		],
	},
	'huge-device-to-host-staged-peer': {
		severity: 'warning',
		title: 'Large device messages to a host-staged peer under UCX (unbounded host staging)',
		fix: cmd => ({ text: "Run with the guard's STAGE (no code change): it sends these messages through persistent staging buffers the rank holds, so host memory stays bounded (measured on the H200 at 1 GiB: +76-92 kB instead of +985 MB, 39-44 GB/s). Or stage through the program's own buffers with libgpumpi (docs/library.md).", command: /(^| )--stage /.test(cmd) ? `gpumpi-doctor guard ${cmd}` : `gpumpi-doctor guard --stage ${cmd}` }),
		sources: [src(`${GUARD_DOC}#dangers`, 'the size threshold GPUMPI_GUARD_STAGE_MIN'), src(URLS.devFallback, 'the host memory MPI staging used for 1 GiB messages'), src(URLS.devRndv, "UCX's rendezvous settings and the staging pipeline's memory")],
	},
};

/** The reports of one run as read, and what the findings say about the run as a whole. */
interface MergeContext {
	input: GuardMergeInput;
	/** Valid reports, by rank order. */
	reports: GuardRankReport[];
	byRank: Map<number, GuardRankReport>;
	/** Each reporting rank's file name, for evidence. */
	files: Map<number, string>;
	/** Files that are no valid report (or a second one for a rank). */
	damaged: Array<{ name: string; error: string }>;
	/** MPI_COMM_WORLD's size as the reports say (the command line's when none reported). */
	worldSize: number | null;
	missingRanks: number[];
	/** The user's command, quoted as a shell would need it. */
	cmd: string;
	/** What follows `gpumpi-doctor guard` in a fix: the guard options kept, then `-- COMMAND`. */
	fixCmd: string;
	/** "exit code 1", "ended by SIGKILL", "no exit code". */
	exitText: string;
}

/** Merge one run's report files. */
export function mergeGuardReports(input: GuardMergeInput): GuardMerge {
	const ctx = mergeContext(input);
	const { reports, worldSize, exitText } = ctx;
	// The order findings are pushed in is their order within one severity.
	const findings: Finding[] = [...runFindings(ctx), ...rankStateFindings(ctx)];
	const calls = mergeCalls(reports);
	const traffic = mergeTraffic(reports, ctx.byRank);
	const dangers = dangerFindings(ctx);
	findings.push(...dangers.findings);
	const unsupported = unsupportedFinding(reports);
	if (unsupported.finding) { findings.push(unsupported.finding); }
	const staged = stageFindings(reports, ctx.files, findings);
	const totals: GuardTotals = {
		calls: calls.reduce((s, c) => s + c.count, 0), bytes: calls.reduce((s, c) => s + c.bytes, 0),
		p2pMessages: traffic.reduce((s, t) => s + t.calls, 0), p2pBytes: traffic.reduce((s, t) => s + t.bytes, 0),
		collectiveCalls: reports.reduce((s, r) => s + r.collectives.reduce((t, c) => t + c.count, 0), 0),
		dangerKinds: dangers.kinds, dangerCalls: dangers.calls, bounced: dangers.bounced, unsupportedCalls: unsupported.calls,
		stagedMessages: staged.messages, stagedBytes: staged.bytes,
	};
	if (reports.length > 0 && dangers.kinds === 0) { findings.push(noDangerFinding(ctx, totals)); }
	const order = { error: 0, warning: 1, info: 2 } as const;
	findings.sort((a, b) => order[a.severity] - order[b.severity]);
	const map = reports.length > 0 && worldSize !== null ? trafficMap(reports, traffic, worldSize) : null;
	return { reports, missingRanks: ctx.missingRanks, worldSize, totals, calls, traffic, findings, map, verdict: verdictLine(input, reports.length, worldSize, totals, findings, exitText) };
}

/** Words for a shell: quoted only where needed. */
function shellWords(args: readonly string[]): string {
	return args.map(a => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

/** Parse the files (a damaged one and a second report for a rank are kept aside), the world size, the fix command. */
function mergeContext(input: GuardMergeInput): MergeContext {
	const byRank = new Map<number, GuardRankReport>();
	const files = new Map<number, string>();
	const damaged: Array<{ name: string; error: string }> = [];
	const sizes = new Set<number>();
	for (const f of input.files) {
		const p = parseGuardReport(f.text);
		if (!p.ok) { damaged.push({ name: f.name, error: p.error }); continue; }
		if (byRank.has(p.report.rank)) { damaged.push({ name: f.name, error: `a second report for rank ${p.report.rank} (the first: ${files.get(p.report.rank)})` }); continue; }
		byRank.set(p.report.rank, p.report);
		files.set(p.report.rank, f.name);
		sizes.add(p.report.size);
	}
	const worldSize = sizes.size > 0 ? Math.max(...sizes) : input.expectedRanks;
	const missingRanks: number[] = [];
	if (worldSize !== null) { for (let r = 0; r < worldSize; r++) { if (!byRank.has(r)) { missingRanks.push(r); } } }
	// The fix keeps the user's guard options but the mode (the fix names its own) and where the output goes.
	const opts = input.guardOptions ?? [];
	const kept: string[] = [];
	for (let i = 0; i < opts.length; i++) {
		if (opts[i] === '--mode' || opts[i] === '--out') { i++; continue; }
		if (opts[i] !== '--json') { kept.push(opts[i]); }
	}
	const cmd = shellWords(input.userCommand);
	return {
		input, reports: [...byRank.values()].sort((a, b) => a.rank - b.rank), byRank, files, damaged, worldSize, missingRanks, cmd,
		fixCmd: `${kept.length > 0 ? `${shellWords(kept)} ` : ''}-- ${cmd}`,
		exitText: input.exitCode !== null ? `exit code ${input.exitCode}` : input.signal ? `ended by ${input.signal}` : 'no exit code',
	};
}

/** The run as a whole: the program failed, damaged files, and why no rank (or not every rank) reported. */
function runFindings(ctx: MergeContext): Finding[] {
	const { input, cmd, exitText } = ctx;
	const findings: Finding[] = [];
	if (input.exitCode !== 0) {
		findings.push({
			id: 'guard-program-failed', severity: 'error', title: `The program did not succeed (${exitText})`,
			message: `The command under the guard ended with ${exitText}. Its output is above; the counts below are what the ranks that reported saw.`,
			evidence: [{ source: 'command', line: printable(cmd) }],
		});
	}
	for (const d of ctx.damaged) {
		findings.push({
			id: 'guard-report-damaged', severity: 'warning', title: `A guard report could not be read: ${printable(d.name)}`,
			message: `The file ${printable(d.name)} is not a valid gpumpi-guard-rank/1 report (${printable(d.error)}); its rank is counted as missing.`,
			evidence: [{ source: printable(d.name), line: printable(d.error) }], sources: [src(`${GUARD_DOC}#report`, 'the report format')],
		});
	}
	const missing = ctx.reports.length === 0 ? noReportFinding(ctx) : missingReportsFinding(ctx);
	if (missing) { findings.push(missing); }
	return findings;
}

/** No rank reported: the launcher refused to run as root, could not start the program, or nothing says why. */
function noReportFinding(ctx: MergeContext): Finding {
	const { input, worldSize, exitText } = ctx;
	const launch = input.launchFailure ?? null;
	const launcherLines = (l: LaunchFailure): Finding['evidence'] => l.evidence.slice(0, 8).map(line => ({ source: 'launcher output', line: printable(line) }));
	if (launch?.rootRefused) {
		// The same cause Inspect's running-as-root rule names: one answer, with its fix, not four guesses.
		return {
			id: 'guard-run-as-root-refused', severity: 'error', title: `${printable(input.userCommand[0] ?? 'mpirun')} refused to run as root`,
			message: `${printable(launch.reason)}. Nothing was started, so no rank wrote a guard report and the guard saw no MPI call.`,
			evidence: launcherLines(launch),
			fix: { text: 'Run as an unprivileged user; or, where root is intended (a container), allow it explicitly and run the same command again.', command: `OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 gpumpi-doctor guard ${ctx.fixCmd}` },
			sources: [src('https://github.com/open-mpi/ompi/blob/v4.1.4/orte/orted/orted_submit.c', 'Open MPI 4.1.4 orted_submit.c: "has detected an attempt to run as root", and the two ways to allow it')],
		};
	}
	if (launch !== null) {
		// The cause is in the launcher's own lines: nothing ran, so nothing could report.
		const exe = launch.executable !== null ? printable(launch.executable) : 'the program';
		return {
			id: 'guard-program-not-started', severity: 'error', title: `The launcher could not start ${exe}`,
			message: `${printable(launchFailureText(launch, input.userCommand[0] ?? 'the launcher'))}. No rank ran, so no rank wrote a guard report and the guard saw no MPI call.`,
			evidence: launcherLines(launch),
			fix: { text: `Check that ${exe} exists at that path on ${launch.node !== null ? `${printable(launch.node)} and ` : ''}every node of the run, is executable, and was built for that node's architecture; then run the same command again.` },
		};
	}
	return {
		id: 'guard-no-report', severity: 'error', title: 'No rank wrote a guard report',
		message: `No rank wrote a report (${exitText}${worldSize !== null ? `, ${worldSize} ranks asked for` : ''}). The program may not be an MPI program, may have failed before MPI_Init or crashed before MPI_Finalize, the guard library may not match its MPI, or the ranks ran on hosts where the report directory does not exist (give --report-dir on a shared file system).`,
		evidence: [{ source: 'command', line: printable(ctx.cmd) }], sources: [src(`${GUARD_DOC}#how-to-run-it`, 'how the guard is loaded and where reports go')],
	};
}

/** Some ranks reported, others did not (null when every rank of the world reported). */
function missingReportsFinding(ctx: MergeContext): Finding | null {
	const { reports, missingRanks, worldSize, files } = ctx;
	if (missingRanks.length === 0) { return null; }
	const hosts = [...new Set(reports.map(r => r.host))];
	const list = missingRanks.length <= 16 ? missingRanks.join(', ') : `${missingRanks.slice(0, 16).join(', ')}, …`;
	return {
		id: 'guard-missing-reports', severity: ctx.input.exitCode === 0 ? 'warning' : 'error',
		title: `No report from ${missingRanks.length} of ${worldSize} ranks`,
		message: `No report from ${missingRanks.length} of ${worldSize} ranks (rank${missingRanks.length > 1 ? 's' : ''} ${list}): it may have crashed before MPI_Finalize, or ran on a host other than ${hosts.map(printable).join(', ')} where the report directory does not exist; ${ctx.exitText}. Their traffic is counted from their peers' side only.`,
		evidence: reports.slice(0, 4).map(r => ({ source: printable(files.get(r.rank) ?? ''), line: `rank ${r.rank} of ${r.size} on ${printable(r.host)}, pid ${r.pid}: reported` })),
	};
}

const BYPASS = "MPI was initialised without the guard's MPI_Init";

/** Ranks whose guard saw nothing (the program's MPI bypassed it, or it turned itself off) or that never finalised. */
function rankStateFindings({ reports, files }: MergeContext): Finding[] {
	const findings: Finding[] = [];
	const fileOf = (r: GuardRankReport): string => printable(files.get(r.rank) ?? '');
	const bypassed = reports.filter(r => r.off !== null && r.off.startsWith(BYPASS));
	if (bypassed.length > 0) {
		findings.push({
			id: 'guard-bypassed', severity: 'warning', title: `The program's MPI calls bypassed the guard on ${bypassed.length} rank${bypassed.length > 1 ? 's' : ''}: nothing was observed`,
			message: `MPI was initialised on rank${bypassed.length > 1 ? 's' : ''} ${bypassed.map(r => r.rank).join(', ')} without passing the guard's MPI_Init, so none of the program's calls reached the guard (nothing was observed or changed). Open MPI's Fortran bindings (use mpi, use mpi_f08, mpif.h) call PMPI_* directly; MPICH's call the C MPI_* functions and are seen. The program's own exit code and output are unchanged.`,
			evidence: bypassed.slice(0, 4).map(r => ({ source: fileOf(r), line: `rank ${r.rank} (${printable(r.host)}): "off": ${printable(r.off ?? '')}` })),
			sources: [src(`${GUARD_DOC}#limits`, 'Fortran bindings and the guard')],
		});
	}
	const offRanks = reports.filter(r => r.off !== null && !r.off.startsWith(BYPASS));
	if (offRanks.length > 0) {
		findings.push({
			id: 'guard-off-at-init', severity: 'error', title: `The guard turned itself off on ${offRanks.length} rank${offRanks.length > 1 ? 's' : ''} at MPI_Init`,
			message: `Rank${offRanks.length > 1 ? 's' : ''} ${offRanks.map(r => r.rank).join(', ')} could not learn that every rank runs the guard, so ${offRanks.length > 1 ? 'their guards' : 'its guard'} passed every call through unobserved (a mixed launch: some ranks without LD_PRELOAD, or hosts that do not share GPUMPI_GUARD_DIR). Preload the guard on every rank, or run the program under \`gpumpi-doctor guard\`, which does.`,
			evidence: offRanks.slice(0, 4).map(r => ({ source: fileOf(r), line: `rank ${r.rank} (${printable(r.host)}): "off": ${printable(r.off ?? '')}` })),
			sources: [src(`${GUARD_DOC}#at-mpi_init-what-the-ranks-learn-of-each-other-without-sending-first`, 'how the guard agrees at MPI_Init')],
		});
	}
	const unfinalized = reports.filter(r => !r.finalized);
	if (unfinalized.length > 0) {
		findings.push({
			id: 'guard-not-finalized', severity: 'warning', title: `${unfinalized.length} rank${unfinalized.length > 1 ? 's' : ''} ended without MPI_Finalize`,
			message: `Rank${unfinalized.length > 1 ? 's' : ''} ${unfinalized.map(r => r.rank).join(', ')} reported from exit, not from MPI_Finalize: the counts are what was seen until exit.`,
			evidence: unfinalized.slice(0, 4).map(r => ({ source: fileOf(r), line: `"finalized": false (rank ${r.rank}, ${printable(r.host)})` })),
		});
	}
	return findings;
}

/** Every MPI call name over all ranks, most called first. */
function mergeCalls(reports: GuardRankReport[]): GuardCallTotal[] {
	const callMap = new Map<string, GuardCallTotal>();
	for (const r of reports) {
		for (const c of r.calls) {
			const t = callMap.get(c.name) ?? { name: c.name, count: 0, bytes: 0, timeInMpiNs: 0, ranks: 0 };
			t.count += c.count; t.bytes += c.bytes; t.ranks++;
			t.timeInMpiNs = t.timeInMpiNs === null || c.timeInMpiNs === null ? null : t.timeInMpiNs + c.timeInMpiNs;
			callMap.set(c.name, t);
		}
	}
	return [...callMap.values()].sort((a, b) => b.count - a.count || a.name.localeCompare(b.name));
}

/** Traffic per ordered pair: the sender's report, else (the sender wrote none) the receiver's. */
function mergeTraffic(reports: GuardRankReport[], byRank: Map<number, GuardRankReport>): GuardPairTraffic[] {
	const dir = new Map<string, GuardPairTraffic>();
	const key = (a: number, b: number): string => `${a}>${b}`;
	for (const r of reports) {
		for (const p of r.peers) {
			if (p.peer === r.rank) { continue; }
			if (p.sendCalls > 0 || p.sentBytes > 0) {
				dir.set(key(r.rank, p.peer), { a: r.rank, b: p.peer, calls: p.sendCalls, bytes: p.sentBytes, largestMessage: p.largestMessage, bufferClasses: { ...p.bufferClasses }, path: p.path });
			}
		}
	}
	for (const r of reports) {
		for (const p of r.peers) {
			if (p.peer === r.rank || byRank.has(p.peer) || (p.recvCalls === 0 && p.recvBytes === 0)) { continue; }
			dir.set(key(p.peer, r.rank), { a: p.peer, b: r.rank, calls: p.recvCalls, bytes: p.recvBytes, largestMessage: p.largestMessage, bufferClasses: { ...p.bufferClasses }, path: p.path });
		}
	}
	return [...dir.values()].sort((x, y) => x.a - y.a || x.b - y.b);
}

type DangerSeen = Array<{ r: GuardRankReport; d: GuardDanger }>;

/** Dangers, one finding per kind (all ranks), evidence per rank + call + site; with the counts for the totals. */
function dangerFindings(ctx: MergeContext): { findings: Finding[]; kinds: number; calls: number; bounced: number } {
	const kinds = new Map<string, DangerSeen>();
	for (const r of ctx.reports) { for (const d of r.dangers) { kinds.set(d.kind, [...(kinds.get(d.kind) ?? []), { r, d }]); } }
	let calls = 0;
	let bounced = 0;
	const findings: Finding[] = [];
	for (const [kind, list] of kinds) {
		calls += list.reduce((s, x) => s + x.d.count, 0);
		bounced += list.filter(x => x.d.action === 'bounced').reduce((s, x) => s + x.d.count, 0);
		findings.push(dangerFinding(ctx, kind, list));
	}
	return { findings, kinds: kinds.size, calls, bounced };
}

/** One kind of danger: fixed by the guard in this run (info, how) or not (its severity and fix). */
function dangerFinding(ctx: MergeContext, kind: string, list: DangerSeen): Finding {
	const spec = DANGERS[kind];
	const count = list.reduce((s, x) => s + x.d.count, 0);
	const bytes = list.reduce((s, x) => s + x.d.bytes, 0);
	const fixed = list.every(x => x.d.action === 'bounced' || x.d.action === 'staged' || x.d.action === 'told-ucx');
	const told = list.some(x => x.d.action === 'told-ucx');
	const stagedCalls = list.filter(x => x.d.action === 'staged').reduce((s, x) => s + x.d.count, 0);
	const fixedHow = !fixed ? ''
		: told ? " In this run the guard told UCX's memory-type cache about these buffers before each call, so UCX detected them as GPU memory."
		: stagedCalls === count ? ' In this run STAGE sent every one of them through its bounded staging.'
			: stagedCalls === 0 ? ' In this run the guard bounced every one of them through a buffer the rank owns.'
				: ` In this run the guard took every one of them: ${stagedCalls} through STAGE's bounded staging, ${count - stagedCalls} bounced through a buffer the rank owns.`;
	const partly = !fixed && stagedCalls > 0 ? ` STAGE took ${stagedCalls} of them; the other ${count - stagedCalls} were not staged.` : '';
	const fixedBy = [...new Set(list.map(x => x.d.action))].sort().join(', ');
	const ranks = [...new Set(list.map(x => x.r.rank))].sort((a, b) => a - b);
	// The same code in every rank: one site, whatever address ASLR gave each process.
	const sites = [...new Set(list.map(x => printable(siteText(x.d.firstSite && x.d.firstSite.object ? { ...x.d.firstSite, address: null } : x.d.firstSite))))];
	const title = spec?.title ?? `Dangerous GPU-buffer call: ${printable(kind)}`;
	return {
		id: `guard-${kind.replace(/[^a-z0-9-]/g, '-').slice(0, 64)}`,
		severity: fixed ? 'info' : spec?.severity ?? 'warning',
		title: fixed ? `${title} — fixed by the guard (${printable(fixedBy)})` : title,
		message: `${count} call${count > 1 ? 's' : ''} (${bytesText(bytes)}) on rank${ranks.length > 1 ? 's' : ''} ${ranks.join(', ')}, first at ${sites.slice(0, 3).join('; ')}${sites.length > 3 ? ` and ${sites.length - 3} more sites` : ''}. ${printable(list[0].d.detail)}${fixedHow}${partly}`,
		evidence: list.slice(0, 12).map(({ r, d }) => ({
			source: printable(ctx.files.get(r.rank) ?? `rank ${r.rank}`),
			line: `rank ${r.rank} (${printable(r.host)}): ${printable(d.call)} ${d.peer === null ? '' : `${/recv/i.test(d.call) ? 'from' : 'with'} rank ${d.peer} `}×${d.count}, ${d.bytes} bytes, first at ${printable(siteText(d.firstSite))}, action ${printable(d.action)}`,
		})),
		fix: fixed ? undefined : spec?.fix(ctx.fixCmd) ?? { text: 'See docs/guard.md for this kind.' },
		sources: spec?.sources ?? [src(`${GUARD_DOC}#dangers`, 'the dangers the guard records')],
		source: (spec?.sources ?? []).map(s => s.url).join(' ') || `${GUARD_DOC}#dangers`,
	};
}

/** The calls the guard passed through without looking at their buffers (null finding when there were none). */
function unsupportedFinding(reports: GuardRankReport[]): { finding: Finding | null; calls: number } {
	const unsupported = new Map<string, number>();
	for (const r of reports) { for (const u of r.unsupported) { unsupported.set(u.call, (unsupported.get(u.call) ?? 0) + u.count); } }
	const calls = [...unsupported.values()].reduce((s, n) => s + n, 0);
	if (unsupported.size === 0) { return { finding: null, calls }; }
	return {
		calls,
		finding: {
			id: 'guard-unsupported-calls', severity: 'info', title: `${calls} call${calls > 1 ? 's' : ''} the guard passes through without looking at the buffers`,
			message: `The program used MPI calls whose buffers the guard does not model; they ran unchanged and are not in the counts: ${[...unsupported].map(([c, n]) => `${printable(c)} ×${n}`).join(', ')}.`,
			evidence: [...unsupported].slice(0, 12).map(([c, n]) => ({ source: 'reports', line: `${printable(c)}: ${n} call${n > 1 ? 's' : ''}, passed through, not observed` })),
			sources: [src(`${GUARD_DOC}#what-the-guard-can-see`, 'what the guard observes and what it passes through')],
		},
	};
}

/** Ranks reported and none saw a dangerous call: say so, with what was observed. */
function noDangerFinding({ reports, files }: MergeContext, totals: GuardTotals): Finding {
	const gpu = reports.some(r => r.cuda.available);
	return {
		id: 'guard-no-dangers', severity: 'info', title: 'No dangerous GPU-buffer call seen',
		message: `${totals.calls} MPI calls on ${reports.length} rank${reports.length > 1 ? 's' : ''} (${bytesText(totals.bytes)}): none of the combinations the guard knows to be dangerous.${gpu ? '' : ` ${printable(reports[0].cuda.detail)}.`}`,
		evidence: reports.slice(0, 4).map(r => ({ source: printable(files.get(r.rank) ?? ''), line: `rank ${r.rank}: ${r.calls.reduce((s, c) => s + c.count, 0)} calls, mode ${printable(r.mode)}, pml ${printable(r.mpi.pml ?? 'unknown')}, CUDA ${r.cuda.available ? 'loaded' : 'not loaded'}` })),
		sources: [src(`${GUARD_DOC}#dangers`, 'the dangers the guard records')],
	};
}

const STAGE_DOC = `${GUARD_DOC}#stage-bounded-host-memory-without-a-code-change`;

/**
 * What GPUMPI_GUARD_STAGE did, from each rank's stageAsked / stageAgreed / stageDetail: asked on only some ranks (off
 * everywhere), agreed but turned off, active with its staged messages, bytes and the host staging held, and the
 * device messages to staged peers that went through MPI unchanged (refused, per reason). Pushes its findings.
 */
function stageFindings(reports: GuardRankReport[], files: Map<number, string>, findings: Finding[]): { messages: number; bytes: number } {
	const asked = reports.filter(r => r.stageAsked);
	if (asked.length === 0) { return { messages: 0, bytes: 0 }; }
	const srcOf = (r: GuardRankReport): string => printable(files.get(r.rank) ?? `rank ${r.rank}`);
	const agreed = reports.filter(r => r.stageAgreed);
	if (agreed.length === 0) {
		findings.push({
			id: 'guard-stage-not-agreed', severity: 'warning', title: `STAGE was asked on ${asked.length} of ${reports[0].size} ranks: off everywhere`,
			message: `GPUMPI_GUARD_STAGE=1 reached ${asked.length} of ${reports[0].size} ranks (rank${asked.length > 1 ? 's' : ''} ${asked.map(r => r.rank).slice(0, 16).join(', ')}); STAGE needs every rank, so the ranks agreed at MPI_Init to leave it off and every message went through MPI as usual. Set it for every rank (gpumpi-doctor guard --stage forwards it through the launcher).`,
			evidence: asked.slice(0, 4).map(r => ({ source: srcOf(r), line: `rank ${r.rank}: "stageAsked": true, "stageAgreed": false${r.stageRanks !== null ? `, "stageRanks": ${r.stageRanks}` : ''}` })),
			sources: [src(STAGE_DOC, 'STAGE needs every rank: the ranks agree at MPI_Init')],
		});
		return { messages: 0, bytes: 0 };
	}
	const withDetail = agreed.filter((r): r is GuardRankReport & { stageDetail: NonNullable<GuardRankReport['stageDetail']> } => r.stageDetail !== null);
	const off = withDetail.filter(r => r.stageDetail.off !== null);
	if (off.length > 0) {
		findings.push({
			id: 'guard-stage-off', severity: 'warning', title: 'STAGE turned itself off: every message went through MPI',
			message: `Every rank set GPUMPI_GUARD_STAGE=1, but STAGE turned off: ${printable(off[0].stageDetail.off ?? '')}. Device messages went through MPI unchanged, with its own host staging.`,
			evidence: off.slice(0, 4).map(r => ({ source: srcOf(r), line: `rank ${r.rank}: stageDetail.off = ${printable(r.stageDetail.off ?? '')}` })),
			sources: [src(STAGE_DOC, 'when STAGE turns itself off')],
		});
		return { messages: 0, bytes: 0 };
	}
	let messages = 0;
	let bytes = 0;
	const refused = new Map<string, number>();
	const stagedPeers = new Set<number>();
	let held = 0;
	for (const r of withDetail) {
		for (const p of r.stageDetail.peers) { messages += p.sentMessages; bytes += p.sentBytes; }
		for (const [k, n] of Object.entries(r.stageDetail.refused)) { if (n > 0) { refused.set(k, (refused.get(k) ?? 0) + n); } }
		for (const p of r.stageDetail.stagedPeers) { stagedPeers.add(p); }
		held = Math.max(held, r.stageDetail.stagingBytes);
	}
	const evidence = withDetail.slice(0, 8).map(r => {
		const sent = r.stageDetail.peers.filter(p => p.sentMessages > 0).map(p => `${p.sentMessages} to rank ${p.peer} (${bytesText(p.sentBytes)})`);
		const got = r.stageDetail.peers.filter(p => p.recvMessages > 0).map(p => `${p.recvMessages} from rank ${p.peer} (${bytesText(p.recvBytes)})`);
		return { source: srcOf(r), line: `rank ${r.rank}: staged peers [${r.stageDetail.stagedPeers.join(', ')}], sent ${sent.join(', ') || 'none'}, received ${got.join(', ') || 'none'}, staging held ${bytesText(r.stageDetail.stagingBytes)} (${bytesText(r.stageDetail.chunk)} × ${r.stageDetail.buffers})` };
	});
	const first = withDetail[0]?.stageDetail;
	findings.push({
		id: 'guard-stage', severity: 'info',
		title: messages > 0 ? `STAGE moved ${messages} device message${messages > 1 ? 's' : ''} (${bytesText(bytes)}) through bounded staging` : stagedPeers.size === 0 ? 'STAGE was on, but no peer is host-staged: nothing to stage' : 'STAGE was on; no device message large enough went to a staged peer',
		message: messages > 0
			? `With GPUMPI_GUARD_STAGE=1 on every rank, ${messages} device message${messages > 1 ? 's' : ''} (${bytesText(bytes)}) to host-staged peers went through libgpumpi's persistent staging instead of MPI's: host memory for them is bounded by the staging each rank holds (at most ${bytesText(held)}${first ? `, ${bytesText(first.chunk)} × ${first.buffers} buffers per staged peer` : ''}) whatever the message size. Matching, ordering and status stay MPI's.`
			: stagedPeers.size === 0
				? 'Every rank set GPUMPI_GUARD_STAGE=1; libgpumpi\'s discovery found no peer reached through host memory (same GPU, peer access or CUDA IPC, or GPUDirect RDMA), so every message went through MPI unchanged.'
				: `Every rank set GPUMPI_GUARD_STAGE=1 and ${stagedPeers.size} peer${stagedPeers.size > 1 ? 's are' : ' is'} host-staged, but no device message of GPUMPI_GUARD_STAGE_MIN bytes or more went to one.`,
		evidence,
		sources: [src(STAGE_DOC, 'what STAGE stages, and its limits'), src(URLS.devFallback, 'the host memory MPI staging used for 1 GiB messages on the H200')],
	});
	if (refused.size > 0) {
		const n = [...refused.values()].reduce((s, x) => s + x, 0);
		findings.push({
			id: 'guard-stage-refused', severity: 'warning', title: `${n} device message${n > 1 ? 's' : ''} to staged peers went through MPI unchanged`,
			message: `STAGE does not stage these (${[...refused].map(([k, c]) => `${printable(k)} ×${c}`).join(', ')}): they took MPI's own host staging, unbounded under UCX. send-mode: MPI_Ssend / Bsend / Rsend and their I forms; persistent: MPI_Send_init; non-contiguous: a derived datatype with holes.`,
			evidence: withDetail.filter(r => Object.values(r.stageDetail.refused).some(x => x > 0)).slice(0, 8).map(r => ({ source: srcOf(r), line: `rank ${r.rank}: stageDetail.refused ${Object.entries(r.stageDetail.refused).map(([k, c]) => `${printable(k)} ${c}`).join(', ')}` })),
			fix: { text: 'Use MPI_Send / MPI_Isend with a contiguous buffer for the large device messages, or stage them with libgpumpi in the program (docs/library.md).' },
			sources: [src(STAGE_DOC, 'what is not staged, per reason')],
		});
	}
	return { messages, bytes };
}

function verdictLine(input: GuardMergeInput, reported: number, worldSize: number | null, t: GuardTotals, findings: Finding[], exitText: string): string {
	const ranks = `${reported}${worldSize !== null && worldSize !== reported ? ` of ${worldSize}` : ''} rank${(worldSize ?? reported) === 1 ? '' : 's'} reported`;
	const open = findings.filter(f => f.id.startsWith('guard-') && f.severity !== 'info' && !['guard-program-failed', 'guard-program-not-started', 'guard-run-as-root-refused', 'guard-missing-reports', 'guard-no-report', 'guard-not-finalized', 'guard-report-damaged'].includes(f.id));
	let what: string;
	const off = findings.find(f => f.id === 'guard-off-at-init') ?? findings.find(f => f.id === 'guard-bypassed');
	const notStarted = findings.find(f => f.id === 'guard-program-not-started');
	const rootRefused = findings.find(f => f.id === 'guard-run-as-root-refused');
	if (reported === 0 && rootRefused) { what = `not run: ${rootRefused.title}`; }
	else if (reported === 0 && notStarted) { what = `not run: ${notStarted.title.replace(/^The launcher/, 'the launcher')}`; }
	else if (reported === 0) { what = 'no guard report: nothing was observed'; }
	else if (off && t.dangerKinds === 0) { what = `not observed: ${off.title.toLowerCase()}${off.id === 'guard-off-at-init' ? ' (a mixed launch?)' : ''}`; }
	else if (t.dangerKinds === 0) { what = 'no dangerous GPU-buffer call'; }
	else if (open.length === 0) { what = `${t.dangerCalls} dangerous call${t.dangerCalls > 1 ? 's' : ''}, all fixed by the guard (${[t.bounced > 0 || t.stagedMessages === 0 ? `${t.bounced} bounced` : '', t.stagedMessages > 0 ? 'large device messages staged' : ''].filter(x => x).join(', ')})`; }
	else { what = `${t.dangerCalls} dangerous call${t.dangerCalls > 1 ? 's' : ''} of ${t.dangerKinds} kind${t.dangerKinds > 1 ? 's' : ''}${t.bounced > 0 ? ` (${t.bounced} bounced by the guard)` : ''}; not fixed: ${open.map(f => f.title).join('; ')}`; }
	const staged = t.stagedMessages > 0 ? `, ${t.stagedMessages} staged (${bytesText(t.stagedBytes)})` : '';
	return `gpumpi-guard (${input.mode}): ${what} — ${t.calls} MPI calls, ${t.p2pMessages} point-to-point messages (${bytesText(t.p2pBytes)})${staged}; ${ranks}; program ${exitText}`;
}

const PATH_TO_CLASS: Record<string, PathClass> = { 'same-gpu': 'same_gpu', p2p: 'p2p', 'host-staged': 'host_staging', network: 'host_staging', 'host-only': 'host_memory', unknown: 'host_memory' };

function trafficMap(reports: GuardRankReport[], traffic: GuardPairTraffic[], worldSize: number): MapDocument {
	const first = reports[0];
	const ranks: MapRank[] = reports.map(r => ({ rank: r.rank, host: printable(r.host), pid: r.pid, local_rank: -1, cpus: [], cpu_list: '', gpu: null, nics: [], peermem: { loaded: false, module: '' } }));
	const pairs: MapPair[] = [];
	const byPair = new Map<string, { ab: GuardPairTraffic | null; ba: GuardPairTraffic | null }>();
	for (const t of traffic) {
		const [a, b] = t.a < t.b ? [t.a, t.b] : [t.b, t.a];
		const k = `${a}-${b}`;
		const e = byPair.get(k) ?? { ab: null, ba: null };
		if (t.a === a) { e.ab = t; } else { e.ba = t; }
		byPair.set(k, e);
	}
	const hostOf = new Map(reports.map(r => [r.rank, r.host]));
	for (const [k, { ab, ba }] of byPair) {
		const [a, b] = k.split('-').map(Number);
		const cls = emptyClasses();
		if (ab) { addClasses(cls, ab.bufferClasses); }
		if (ba) { addClasses(cls, ba.bufferClasses); }
		const gpuBuffers = BUFFER_CLASSES.filter(c => c !== 'host' && c !== 'pinned-host').reduce((s, c) => s + cls[c], 0);
		const path = (ab ?? ba)?.path ?? 'unknown';
		const cudaAware = reports.find(r => r.rank === a || r.rank === b)?.mpi.cudaAware;
		const klass: PathClass = gpuBuffers === 0 ? 'host_memory' : cudaAware === 'no' ? 'not_cuda_aware' : PATH_TO_CLASS[path] ?? 'host_memory';
		const bytes = (ab?.bytes ?? 0) + (ba?.bytes ?? 0);
		const messages = (ab?.calls ?? 0) + (ba?.calls ?? 0);
		const usedClasses = BUFFER_CLASSES.filter(c => cls[c] > 0).map(c => `${c} ${cls[c]}`).join(', ');
		const ha = hostOf.get(a);
		const hb = hostOf.get(b);
		pairs.push({
			a, b, same_host: ha !== undefined && ha === hb, class: klass,
			reason: `${messages} message${messages === 1 ? '' : 's'}, ${bytesText(bytes)} seen by the guard (path ${path}${gpuBuffers === 0 ? ', host buffers only' : ''})`,
			evidence: [
				`${a}→${b}: ${ab?.calls ?? 0} messages, ${ab?.bytes ?? 0} bytes${ab ? `, largest ${ab.largestMessage}` : ''}`,
				`${b}→${a}: ${ba?.calls ?? 0} messages, ${ba?.bytes ?? 0} bytes${ba ? `, largest ${ba.largestMessage}` : ''}`,
				`buffer classes: ${usedClasses || 'none'}`,
			],
			status: 'ok', bandwidth_gbps: null, latency_us: null,
			channel: ha !== undefined && hb !== undefined ? (ha === hb ? 'shared_memory' : 'network') : undefined,
			traffic: { bytes_ab: ab?.bytes ?? 0, bytes_ba: ba?.bytes ?? 0, calls_ab: ab?.calls ?? 0, calls_ba: ba?.calls ?? 0, largest_message: Math.max(ab?.largestMessage ?? 0, ba?.largestMessage ?? 0), buffer_classes: cls, path },
		});
	}
	pairs.sort((x, y) => x.a - y.a || x.b - y.b);
	return {
		schema: MAP_SCHEMA,
		tool: { name: 'gpumpi-guard', version: '1' },
		options: { pairs: 'all', max_ranks: worldSize, large_bytes: 0, small_bytes: 0, iters: 0, latency_iters: 0, memory: reports.some(r => r.cuda.available) ? 'device' : 'host' },
		memory: reports.some(r => r.cuda.available) ? 'device' : 'host',
		gpu_unavailable_reason: reports.some(r => r.cuda.available) ? null : printable(first.cuda.detail) || null,
		mpi: { library_version: printable(first.mpi.library ?? ''), implementation: printable(first.mpi.pml ?? ''), cuda_aware: { compile_time: null, run_time: first.mpi.cudaAware === 'unknown' ? null : first.mpi.cudaAware === 'yes', query: 'MPIX_Query_cuda_support (gpumpi-guard)' } },
		world_size: worldSize, sampled: false, total_pairs: pairs.length, setup_error: null,
		ranks, pairs, errors: [],
		traffic_source: 'gpumpi-guard',
	};
}
