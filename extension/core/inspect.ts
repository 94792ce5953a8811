/**
 * One inspection of one host: collect (tools + addon probe + engine) → analyze → Report.
 * Shared by the VS Code command and the headless CLI; also validates their settings the same way.
 */
import type { SrunSpec } from './launch/launchSpec';
import { performance } from 'node:perf_hooks';
import { name as toolName, version as toolVersion } from '../../package.json';
import type { ProbeResult } from '../shared/addonTypes';
import { reportHeadline } from '../shared/headline';
import { REPORT_SCHEMA, type Report } from '../shared/report';
import { analyze } from './analyze';
import { collect } from './collect';
import type { Host } from './host';
import { nullLogger, errorText, type Logger } from './logger';
import { findAddonFile, findEngine, loadAddon, type EngineLocator, type ProbeOutcome } from './native';
import { execute } from './proc';
import type { InspectSettings } from './inspectSettings';

export { DEFAULT_SETTINGS, normalizeSettings, type InspectSettings } from './inspectSettings';

/** Options for `inspectHost`. */
export interface InspectOptions extends InspectSettings {
	signal?: AbortSignal;
	onProgress?(message: string): void;
	logger?: Logger;
	/** Replace the native addon probe / engine lookup (tests, and hosts where the addon can't run). */
	probe?: () => Promise<ProbeOutcome>;
	locateEngine?: EngineLocator;
	/** Launch the engine with srun instead of mpirun (a Slurm host: the ranks run on the allocation's nodes). */
	srun?: Omit<SrunSpec, 'jobName'> | null;
	/** A program (or Python / Julia script) on the host to read too, for the program rules (`inspect --program`). */
	program?: string | null;
}

/** What the probe child runs: load the addon named by argv[1], print probe()'s result as JSON. */
// The child exits as soon as its result is flushed: the crash seen in teardown (below) then has no teardown to run in.
const PROBE_CHILD_SCRIPT = 'const a=require(process.argv[1]);a.probe().then(r=>{process.stdout.write(JSON.stringify(r),()=>process.exit(0))},'
	+ 'e=>{process.stderr.write(String(e&&e.message||e));process.exit(3)})';

/**
 * The default probe: run the addon's probe() in a short-lived Node child (the extension host's own binary with
 * ELECTRON_RUN_AS_NODE=1). dlopen of MPI and UCX runs their library constructors (UCX's installs signal handlers) in
 * a Node process; now and then that process dies with SIGSEGV in Node's own code: seen 2026-12-02 (about one in ten
 * fresh processes under load, docs/benchmarks.md), 2026-12-03 in v8::Isolate::Deinit after the probe had answered,
 * and 2026-12-06 in CI in a threadpool thread (strcmp on an unmapped category string in V8's TracingController,
 * docs/reliability.md). In a child, such a crash or hang becomes a finding instead of taking the extension host
 * down; a complete result printed before the child died is kept (the crash is named beside it); and a child killed
 * by a signal before it printed anything is run once more, the first crash named in the outcome's note.
 */
export async function addonProbe(timeoutMs = 20_000): Promise<ProbeOutcome> {
	const found = findAddonFile();
	if (!found.file) {
		return { error: `native addon not found (tried ${found.tried.length} paths); build it with 'npm run build:native'`, tried: found.tried };
	}
	const file = found.file;
	const once = () => execute([process.execPath, '-e', PROBE_CHILD_SCRIPT, file], {
		env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' },
		timeoutMs,
	}).result;
	const tail = (stderr: string) => (stderr.trim() ? `: ${stderr.trim().slice(-500)}` : '');
	let r = await once();
	let earlier = '';
	if (r.signal && !r.timedOut && !parseProbeResult(r.stdout)) {
		earlier = `a first probe process was killed by ${r.signal} before it printed a result${tail(r.stderr)}; this result is from a second process`;
		r = await once();
	}
	const why = r.error ?? (r.signal ? `killed by ${r.signal}` : `exit code ${r.exitCode}`);
	const parsed = parseProbeResult(r.stdout);
	if (parsed && r.exitCode === 0) { return earlier ? { result: parsed, note: earlier } : { result: parsed }; }
	if (parsed && r.signal) {
		const after = `the probe's process was ${why} after it had printed this complete result${tail(r.stderr)}`;
		return { result: parsed, note: earlier ? `${earlier}; ${after}` : after };
	}
	const prefix = earlier ? `${earlier.replace(/; this result is from a second process$/, '')}; the second ` : '';
	if (r.exitCode === 0) {
		return { error: `${prefix}addon probe printed no result: ${r.stdout.slice(0, 200)}`, tried: found.tried };
	}
	return { error: `${prefix}addon probe (${file}) failed: ${why}${tail(r.stderr)}`, tried: found.tried };
}

/** A complete probe result document, or null (empty, cut off, or not the probe's shape). */
export function parseProbeResult(stdout: string): ProbeResult | null {
	try {
		const parsed = JSON.parse(stdout) as ProbeResult;
		return parsed && typeof parsed === 'object' && Array.isArray(parsed.libraries) ? parsed : null;
	} catch { return null; }
}

/** The probe in this process (no isolation): for benchmarks and tests of the addon itself. */
export async function addonProbeInProcess(): Promise<ProbeOutcome> {
	const loaded = loadAddon();
	if (!loaded.addon) {
		return { error: `native addon not loaded: ${loaded.error ?? 'not found'}`, tried: loaded.tried };
	}
	try {
		return { result: await loaded.addon.probe() };
	} catch (e) {
		return { error: `addon probe failed: ${errorText(e)}`, tried: loaded.tried };
	}
}

/** Inspect `host` and build the report. Rejects only on programming errors; tool failures are in the report. */
export async function inspectHost(host: Host, opts: InspectOptions): Promise<Report> {
	const started = performance.now();
	const createdAt = new Date().toISOString();
	const log = opts.logger ?? nullLogger;
	const probeFn = opts.probe ?? addonProbe;
	let probe: ProbeResult | null = null;
	const raw = await collect(host, {
		ranks: opts.ranks,
		enginePath: opts.enginePath || null,
		locateEngine: opts.locateEngine ?? findEngine,
		mpirunPath: opts.mpirunPath || undefined,
		srun: opts.srun ?? null,
		program: opts.program ?? null,
		timeoutMs: Math.round(opts.timeoutSeconds * 1000),
		signal: opts.signal,
		onProgress: opts.onProgress,
		logger: log.child('collect'),
		probe: async () => {
			const outcome = await probeFn();
			if ('result' in outcome) { probe = outcome.result; }
			return outcome;
		},
	});
	for (const r of raw) {
		if (r.error) { log.info(`${r.id}: ${r.error}`); } else { log.debug(`${r.id}: exit ${r.exitCode} in ${r.durationMs} ms`); }
	}
	opts.onProgress?.('Analysing');
	const { facts, findings, summary } = analyze(raw, host.ref.label);
	log.info(`analysis: ${findings.length} finding(s)`);
	const engine = facts.engine?.document ?? null;
	return {
		schema: REPORT_SCHEMA,
		tool: { name: toolName, version: toolVersion },
		createdAt,
		host: host.ref,
		summary,
		headline: reportHeadline({ host: host.ref, summary, findings, raw, engine }),
		findings,
		facts,
		raw,
		engine,
		probe,
		elapsedMs: Math.round(performance.now() - started),
	};
}
