/**
 * "Copy as bug report": turns reproducer reports (+ the host inspection Report when there is one) into Markdown
 * ready for the Open MPI / UCX mailing lists or a GitHub issue: versions, configuration (the mpirun command line per
 * configuration and the presets), results table, verdict, key evidence (crash backtrace head, UCX lanes), and how to
 * reproduce with `gpumpi-doctor repro …`. Pure: no I/O, no vscode.
 */
import { posixQuote } from '../../shared/shellQuote';
import type { Report } from '../../shared/report';
import type { FallbackResult, ReproFallbackReport, ReproIpcReport, ReproMpiInfo } from '../../shared/reproSchema';
import { spreadText } from '../../shared/trialStats';

/** What the bug report is made of. */
export interface BugReportInput {
	ipc?: ReproIpcReport | null;
	fallback?: ReproFallbackReport[];
	/** The host inspection of this session, if any (UCX version, CUDA driver, GPUs). */
	inspect?: Report | null;
	/** Raw output of each run, keyed by runKey(config, variant-or-modes) (saved device results carry it). */
	outputs?: Record<string, string>;
	/** Where the results came from, e.g. "saved device result repro-2026-12-02.json". */
	source?: string;
}

/** Key of a run's raw output in BugReportInput.outputs. */
export function runKey(config: string, what: string): string { return `${config}\u0000${what}`; }

const MiB = 1024 * 1024;
/** Launcher items that are evidence switches or testbed plumbing, not part of the user's configuration. */
const EVIDENCE_ENV = new Set(['UCX_LOG_LEVEL', 'UCX_PROTO_INFO', 'UCX_PROTO_ENABLE']);
const EVIDENCE_MCA = new Set(['btl_base_verbose']);

/** A log line without its timestamp and [host:pid] prefix (to fold the same line of several ranks). */
function norm(l: string): string { return l.replace(/^\[[\d.]+\]\s*/, '').replace(/^\[[^\]]*:\d+\s*:\d+\]\s*/, '').replace(/^\S+\.c:\d+\s+/, '').replace(/^UCX\s+[A-Z]+\s+/, '').trim(); }

function uniqueBy(lines: string[], key: (l: string) => string): string[] {
	const seen = new Set<string>();
	return lines.filter(l => { const k = key(l); if (seen.has(k)) { return false; } seen.add(k); return true; });
}

function argvText(command: readonly string[]): string { return command.filter(a => a !== '').map(posixQuote).join(' '); }

/** One line of text (labels and details come from tools and users). */
function oneLine(s: string): string { return s.replace(/[\r\n]+/g, ' '); }

function cell(s: string): string { return s.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|').replace(/`/g, 'ˋ'); }

/** A fenced code block whose fence is longer than any backtick run inside. */
function fence(lines: string[], lang = ''): string {
	const body = lines.join('\n');
	const longest = Math.max(2, ...(body.match(/`+/g) ?? []).map(m => m.length));
	const f = '`'.repeat(longest + 1);
	return `${f}${lang}\n${body}\n${f}`;
}

function sizeText(b: number): string {
	if (b >= 1 << 30 && b % (1 << 30) === 0) { return `${b / (1 << 30)} GiB`; }
	if (b >= 1 << 20 && b % (1 << 20) === 0) { return `${b / (1 << 20)} MiB`; }
	if (b >= 1024 && b % 1024 === 0) { return `${b / 1024} KiB`; }
	return `${b} B`;
}

/** `gpumpi-doctor repro …` arguments equivalent to one recorded mpirun command line (presets, MCA, launcher). */
export function reproduceArgs(kind: 'ipc' | 'fallback', command: readonly string[], variants: string[] = []): string[] {
	const out = ['gpumpi-doctor', 'repro', kind];
	const progAt = command.findIndex((a, i) => i > 0 && /(^|\/)gpumpi$/.test(a) && command[i + 1] === 'repro');
	const launcher = progAt > 0 ? command.slice(0, progAt) : [...command];
	const program = progAt > 0 ? command.slice(progAt + 3) : [];
	if (launcher[0] && !/(^|\/)mpirun$/.test(launcher[0])) { out.push('--mpirun', launcher[0]); } else if (launcher[0] && launcher[0].includes('/')) { out.push('--mpirun', launcher[0]); }
	const mca: Array<[string, string]> = [];
	const env: string[] = [];
	let np: string | null = null;
	for (let i = 1; i < launcher.length; i++) {
		const a = launcher[i];
		if (a === '--mca' && i + 2 < launcher.length) { mca.push([launcher[i + 1], launcher[i + 2]]); i += 2; }
		else if (a === '-x' && i + 1 < launcher.length) { env.push(launcher[++i]); }
		else if (a === '-genv' && i + 2 < launcher.length) { env.push(`${launcher[i + 1]}=${launcher[i + 2]}`); i += 2; }
		else if (a === '-np' && i + 1 < launcher.length) { np = launcher[++i]; }
	}
	const get = (k: string): string | undefined => mca.find(m => m[0] === k)?.[1];
	const pmlUcx = get('pml') === 'ucx' && get('pml_ucx_tls') === 'any' && get('pml_ucx_devices') === 'any';
	if (pmlUcx) { out.push('--pml-ucx'); }
	for (const [k, v] of mca) {
		if (EVIDENCE_MCA.has(k) || (pmlUcx && ['pml', 'pml_ucx_tls', 'pml_ucx_devices'].includes(k))) { continue; }
		out.push('--mca', k, v);
	}
	for (const e of env) {
		if (EVIDENCE_ENV.has(e.split('=')[0])) { continue; }
		if (e === 'UCX_PROTO_INFO=y') { continue; }
		out.push('--preset', e);
	}
	if (env.some(e => e.startsWith('UCX_PROTO_INFO='))) { out.push('--proto-info'); }
	if (np && np !== (kind === 'ipc' ? '4' : '2')) { out.push('--np', np); }
	const opt = (name: string): string | undefined => { const i = program.indexOf(name); return i >= 0 ? program[i + 1] : undefined; };
	const memory = opt('--memory');
	if (memory) { out.push('--memory', memory); }
	if (kind === 'ipc') {
		const size = opt('--size');
		if (size) { out.push('--size', /^\d+$/.test(size) ? compactSize(Number(size)) : size); }
		const vs = variants.length > 0 ? variants : [opt('--variant') ?? 'direct'];
		out.push('--variants', vs.join(','));
	} else {
		for (const k of ['--sizes', '--modes', '--iters', '--chunk', '--nbuf']) { const v = opt(k); if (v) { out.push(k, v); } }
	}
	return out;
}

function compactSize(b: number): string {
	if (b % (1 << 30) === 0) { return `${b / (1 << 30)}G`; }
	if (b % (1 << 20) === 0) { return `${b / (1 << 20)}M`; }
	if (b % 1024 === 0) { return `${b / 1024}K`; }
	return String(b);
}

/** The first lines of a UCX / Open MPI backtrace in a raw output ("==== backtrace" then numbered frames). */
export function backtraceHead(output: string, frames = 10): string[] {
	const lines = output.split('\n');
	const at = lines.findIndex(l => /==== backtrace|\[\s*\d+\]\s+\S+\(|^\s*\[[^\]]+\] \*\*\* Process received signal/.test(l));
	if (at < 0) { return []; }
	const out: string[] = [];
	for (const l of lines.slice(at, at + 60)) {
		if (out.length === 0 || /^\s*\d+\s+\S|^\s*\[[^\]]*\]\s*\[\s*\d+\]|^=+\s*$|signal|Signal/.test(l)) { out.push(l.trimEnd()); }
		if (out.length > frames) { break; }
	}
	return out;
}

function mpiVersionLine(mpi: ReproMpiInfo | null | undefined): string {
	return mpi ? mpi.library_version.split('\n')[0].trim() : 'unknown (no run printed a result)';
}

function ucxVersion(inspect: Report | null | undefined, texts: string[]): string {
	for (const t of texts) {
		const m = /UCX\s+INFO\s+Version\s+(\S+)(?:\s+\(loaded from ([^)]+)\))?/.exec(t);
		if (m) { return `${m[1]}${m[2] ? ` (loaded from ${m[2]})` : ''}`; }
	}
	if (inspect && inspect.summary.ucx.label) { return inspect.summary.ucx.label; }
	return 'not collected (run "GPU-MPI: Inspect Host" in the same session, or UCX_LOG_LEVEL=info output)';
}

function maxRss(r: FallbackResult): number | null {
	const v = r.memory.map(m => m.rss_peak_growth_bytes).filter((x): x is number => typeof x === 'number');
	return v.length ? Math.max(...v) : null;
}

/** The bug report as Markdown. */
export function bugReportMarkdown(input: BugReportInput): string {
	const ipc = input.ipc ?? null;
	const fallback = input.fallback ?? [];
	const topic = ipc && fallback.length > 0 ? 'IPC-imported GPU pointers and GPU-buffer fallback' : ipc ? 'receiving into a CUDA IPC-imported GPU pointer' : 'how MPI moves GPU buffers (fallback / staging)';
	const out: string[] = [`## GPU-aware MPI: ${topic}`, ''];
	if (input.source) { out.push(`Results: ${input.source}.`, ''); }
	out.push(...versionsSection(input));
	if (ipc) { out.push(...ipcSection(ipc, input.outputs ?? {})); }
	for (const f of fallback) { out.push(...fallbackSection(f)); }
	out.push('_Generated by GPU-MPI Doctor (gpumpi-doctor repro)._');
	return out.join('\n') + '\n';
}

/** "### Versions": MPI, CUDA-awareness, UCX, driver, GPUs, whether a host was inspected, the buffers' memory. */
function versionsSection(input: BugReportInput): string[] {
	const fallback = input.fallback ?? [];
	const mpi = input.ipc?.mpi ?? fallback.find(f => f.mpi)?.mpi ?? null;
	const ipcRuns = input.ipc?.variants.flatMap(v => v.runs) ?? [];
	const evidenceTexts = [...Object.values(input.outputs ?? {}), ...ipcRuns.flatMap(v => v.evidence), ...fallback.flatMap(f => f.transports.lines)];
	const out = ['### Versions', ''];
	out.push(`- MPI library: ${mpiVersionLine(mpi)}`);
	if (mpi) { out.push(`- CUDA-aware at run time: ${mpi.cuda_aware.run_time === null ? 'unknown' : mpi.cuda_aware.run_time ? 'yes' : 'no'}${mpi.cuda_aware.query ? ` (${mpi.cuda_aware.query})` : ''}`); }
	out.push(`- UCX: ${ucxVersion(input.inspect, evidenceTexts)}`);
	const driver = input.inspect?.summary.cuda.driverVersion;
	out.push(`- CUDA driver: ${driver ? driver : 'not collected (no host inspection in this session)'}`);
	if (input.inspect && input.inspect.summary.gpus.length > 0) {
		out.push(`- GPUs: ${input.inspect.summary.gpus.map(g => `${g.index}: ${g.name}`).join(', ')}`);
	}
	// Say so when no host was inspected: the readers of the report then know the versions above are the reproducer's only.
	out.push(input.inspect
		? `- Host inspection: ${input.inspect.headline?.text ?? 'ran'} (${input.inspect.createdAt ?? 'time unknown'})`
		: '- Host inspection: none in this session (run "GPU-MPI: Inspect Host" or `gpumpi-doctor inspect --json` and attach it)');
	const memory = ipcRuns.find(v => v.memory)?.memory ?? fallback.find(f => f.memory)?.memory ?? null;
	const reason = ipcRuns.find(v => v.gpuUnavailableReason)?.gpuUnavailableReason ?? fallback.find(f => f.gpuUnavailableReason)?.gpuUnavailableReason;
	out.push(`- Buffers: ${memory === 'device' ? 'device memory (cuMemAlloc)' : memory === 'host' ? `host memory — no GPU verdict (${reason ?? 'no GPU'})` : 'unknown'}`, '');
	return out;
}

/** The IPC reproducer: configurations, the rates table, the verdict, failure modes, UCX lanes, how to reproduce. */
function ipcSection(ipc: ReproIpcReport, outputs: Record<string, string>): string[] {
	const ipcRuns = ipc.variants.flatMap(v => v.runs);
	const out = ['### IPC-imported pointer reproducer', ''];
	out.push('Ranks 0 and 2 export a cuMemAlloc buffer (cuIpcGetMemHandle); ranks 1 and 3 import it on the same node (cuIpcOpenMemHandle); rank 0 sends to rank 3 and rank 2 to rank 1.', '');
	const configs = [...new Set(ipc.variants.map(v => v.config))];
	out.push(`Each variant ran as ${ipc.trials} independent trials (separate launches) per configuration${ipc.partial ? ' — cancelled before every trial ran (partial result)' : ''}.`, '');
	out.push('Configurations (mpirun command lines):', '');
	for (const c of configs) {
		const first = ipcRuns.find(v => v.config === c && v.variant !== 'crash-test') ?? ipcRuns.find(v => v.config === c)!;
		out.push(`- **${cell(c)}**`, '', fence([argvText(first.command)], 'sh'), '');
	}
	out.push('| configuration | variant | verdict | correct | crashed | hung | wrong data | other | launch error |', '|---|---|---|---:|---:|---:|---:|---:|---:|');
	for (const v of ipc.variants) {
		const k = v.counts;
		const other = k.mpi_error + k.setup_error + k.no_output + k.placement_error + k.usage_error;
		const name = v.variant === 'crash-test' ? 'crash-test (deliberate test hook)' : v.variant;
		out.push(`| ${cell(v.config)} | ${cell(name)} | ${cell(v.class)} | ${k.correct} of ${v.trials} | ${k.crashed} | ${k.timed_out} | ${k.wrong_data} | ${other} | ${k.launch_error} |`);
	}
	out.push('', `**Verdict:** ${oneLine(ipc.verdict.answer)}`, '');
	for (const v of ipc.variants) { out.push(`- ${cell(v.variant)} under ${cell(v.config)}: ${oneLine(v.sentence)}`); }
	out.push('');
	for (const w of ipc.verdict.why.filter(x => !x.startsWith('  ') && !/^(direct|bounce|host|send-from-import|crash-test)\b/.test(x))) { out.push(`- ${oneLine(w)}`); }
	out.push('');
	out.push(...failureModes(ipc, outputs));
	const lanes = [...new Set(ipc.variants.filter(v => v.variant === 'direct').flatMap(v => v.runs.flatMap(r => r.evidence.filter(l => /ep_cfg\[/.test(l)).map(l => `${oneLine(v.config)}: ${norm(l)}`))))].slice(0, 12);
	if (lanes.length > 0) { out.push('UCX lanes of the direct variant:', '', fence(lanes), ''); }
	out.push(`How to reproduce with GPU-MPI Doctor (each trial of each variant runs as its own mpirun):`, '');
	const cmds = configs.map(c => {
		const vs = ipc.variants.filter(v => v.config === c && v.variant !== 'crash-test');
		const first = vs[0]?.runs[0];
		return first ? argvText([...reproduceArgs('ipc', first.command.filter(a => a !== ''), vs.map(v => v.variant)), '--trials', String(ipc.trials)]) : '';
	}).filter(Boolean);
	out.push(fence(cmds, 'sh'), '');
	out.push('Exact command of each configuration\'s first trial (the others differ only in the variant):', '');
	out.push(fence(configs.map(c => { const r = ipcRuns.find(v => v.config === c); return r ? argvText(r.command) : ''; }).filter(Boolean), 'sh'), '');
	return out;
}

/** "#### Failure modes": per failing variant and mode, its explanations and one sample log (signatures, backtrace head). */
function failureModes(ipc: ReproIpcReport, outputs: Record<string, string>): string[] {
	const failing = ipc.variants.filter(v => v.failureModes.length > 0);
	const out: string[] = failing.length > 0 ? ['#### Failure modes (one sample log each)', ''] : [];
	for (const v of failing) {
		for (const m of v.failureModes) {
			out.push(`**${oneLine(v.variant)} under ${oneLine(v.config)}: ${oneLine(m.label)}** — ${m.count} of ${v.trials} trials (trial${m.trials.length > 1 ? 's' : ''} ${m.trials.join(', ')}${m.ranks.length ? `; rank${m.ranks.length > 1 ? 's' : ''} ${m.ranks.join(', ')}` : ''}).`, '');
			for (const e of m.explanations) { out.push(`- ${oneLine(e)}`); }
			if (m.explanations.length > 0) { out.push(''); }
			const raw = outputs[runKey(v.config, v.variant)] ?? m.sampleLog;
			const bt = raw ? backtraceHead(raw) : [];
			const inBt = new Set(bt.map(l => l.trim()));
			const sample = v.runs.find(r => r.trial === m.sampleTrial);
			const sigLines = sample ? sample.signatures.map(h => h.line) : [];
			const lines = [...uniqueBy([...sigLines, ...m.sampleEvidence.filter(l => !inBt.has(l.trim()) && /signal|Signal|error|Error|cuIpc|cuda_ipc|mca: bml: Using/.test(l))], norm).slice(0, 8), ...bt];
			out.push(`Sample: trial ${m.sampleTrial}:`, '', fence(lines.length > 0 ? lines : m.sampleEvidence.slice(0, 8)), '');
		}
	}
	return out;
}

/** One fallback configuration: its command, bandwidth and memory per size and mode, trial spread, verdict, transports. */
function fallbackSection(f: ReproFallbackReport): string[] {
	const out = [`### GPU-buffer fallback reproducer: ${cell(f.config)}`, ''];
	const cmd = f.runs[0]?.command ?? [];
	if (cmd.length > 0) { out.push(fence([argvText(cmd)], 'sh'), ''); }
	const sizes = [...new Set(f.results.map(r => r.size_bytes))].sort((a, b) => a - b);
	const modes = [...new Set(f.results.map(r => r.mode))];
	out.push(`| size | ${modes.map(m => `${m} GB/s`).join(' | ')} | ${modes.map(m => `${m} RSS+ MiB`).join(' | ')} |`);
	out.push(`|---:|${modes.map(() => '---:').join('|')}|${modes.map(() => '---:').join('|')}|`);
	for (const s of sizes) {
		const row = modes.map(m => { const r = f.results.find(x => x.mode === m && x.size_bytes === s); return r ? (r.status === 'ok' && r.best_gbps !== null ? r.best_gbps.toFixed(2) : r.status) : '-'; });
		const mem = modes.map(m => { const r = f.results.find(x => x.mode === m && x.size_bytes === s); const v = r ? maxRss(r) : null; return v === null ? '-' : (v / MiB).toFixed(1); });
		out.push(`| ${sizeText(s)} | ${row.join(' | ')} | ${mem.join(' | ')} |`);
	}
	out.push('', `${f.trials} trials per mode${f.partial ? ' (partial: cancelled)' : ''}: ${f.modes.map(m => `${m.mode} ${m.counts.ok} of ${m.trials} ok`).join(', ')}. Bandwidth: median (min–max) of the trials' best.`, '');
	out.push('| mode | size | trials ok | best GB/s median (min–max) | RSS+ MiB median (min–max) |', '|---|---:|---:|---:|---:|');
	for (const st of f.stats) {
		const r = st.rssGrowth;
		out.push(`| ${cell(st.mode)} | ${sizeText(st.sizeBytes)} | ${st.ok} of ${st.trials} | ${st.bestGbps ? spreadText(st.bestGbps) : '-'} | ${r ? `${(r.median / MiB).toFixed(1)} (${(r.min / MiB).toFixed(1)}–${(r.max / MiB).toFixed(1)})` : '-'} |`);
	}
	for (const r of f.runs.filter(x => x.outcome !== 'ok')) { out.push('', `Run ${r.modes.join(',')} (trial ${r.trial}): ${r.outcome}${r.detail ? `: ${cell(r.detail)}` : ''}`); }
	out.push('', '**Verdict:**', '');
	for (const t of f.verdict.text) { out.push(`- ${oneLine(t)}`); }
	out.push('');
	if (f.transports.lines.length > 0) {
		out.push('Transport evidence (mpi mode):', '', fence([...new Set(f.transports.lines.map(norm))].slice(0, 10)), '');
	}
	if (cmd.length > 0) { out.push('How to reproduce:', '', fence([argvText([...reproduceArgs('fallback', cmd.filter(a => a !== '')), '--trials', String(f.trials)])], 'sh'), ''); }
	return out;
}
