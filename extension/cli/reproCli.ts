/**
 * `gpumpi-doctor repro ipc|fallback …`: runs the reproducers through mpirun (each IPC variant and each fallback mode
 * its own mpirun) and prints a readable summary (or the combined report with --json). `--from-json FILE` renders a
 * saved device result of scripts/gpu/repro.sh (or a saved --json report) instead of running anything; `--markdown`
 * prints a bug report (core/repro/bugReport.ts) instead of the summary. Every option is checked (parseReproArgs)
 * before anything is launched, ssh'd to or deployed; exit codes are the table of io.ts (0 a report was produced, even
 * one of crashes: the findings are the output; 2 usage error; 3 nothing could run, or the file could not be read).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { LaunchConfig } from '../core/launch/launchSpec';
import { PML_UCX_MCA } from '../core/launch/evidenceSwitches';
import { bugReportMarkdown } from '../core/repro/bugReport';
import { loadReproText } from '../core/repro/reproFile';
import { renderFallbackReport, renderIpcReport } from '../core/repro/reproRender';
import { runReproUseCase } from '../core/repro/reproUseCase';
import { IPC_ALLOC_VARIANTS, IPC_VARIANTS, FALLBACK_MODES } from '../shared/reproSchema';
import { DEFAULT_TRIALS, MAX_TRIALS } from '../shared/trialStats';
import { posixQuoteArgv } from '../shared/shellQuote';
import { checkSizeText, CHUNK_SIZE_LIMITS, FALLBACK_SIZE_LIMITS, IPC_SIZE_LIMITS } from '../shared/sizeText';
import type { LaunchTarget } from '../core/hosts/launchTarget';
import { EXIT, runSubcommand, shown, UsageError, type CliIo } from './io';
import { DEFAULT_CHOICES, UCX_STAGING_TRIES, ucxTryList } from '../core/repro/reproChoices';
import { flag, helpText, integer, nameList, option, parseArgv, repeatable, size, sizeList, text, withHelp, type Kind } from './argv';
import { assignment, checkLaunchOptions, cliLaunchTarget, launchCliOptions, LAUNCH_OPTIONS, TARGET_OPTIONS, type LaunchCliOptions } from './launchArgs';

/** The reproducers' rank counts: the engine refuses any other (native/engine/reproIpc.cc, reproFallback.cc). */
const RANKS = { ipc: 4, fallback: 2 } as const;

/** `--try-ucx`: one UCX setting or "staging" (the same check as the VS Code picker's, core/repro/reproChoices.ts). */
const UCX_TRY: Kind<string> = text('NAME=VALUE', {
	check: v => typeof ucxTryList([v]) === 'string' ? `needs UCX_NAME=VALUE (VALUE of letters, digits and _.:,^+-) or "staging", got ${shown(v)}` : null,
});

/** `--inject`: the engine's ipc test hooks. */
const INJECT: Kind<string> = text('crash|hang|crash-fraction=F|wrong-fraction=F', {
	check: v => v === 'crash' || v === 'hang' || /^(crash|wrong)-fraction=(0(\.\d{1,6})?|1(\.0{1,6})?)$/.test(v) ? null
		: `needs crash, hang, crash-fraction=F or wrong-fraction=F (0 ≤ F ≤ 1), got ${shown(v)}`,
});

/** The options of `repro`, in help order. */
export const REPRO_OPTIONS = {
	json: flag('print the combined report as JSON instead of the summary'),
	verbose: flag('the summary (verdict first, then one row per variant / mode and size) followed by every trial, the transport lines and sample failures', '-v'),
	markdown: flag('print a Markdown bug report (versions, command lines, results, verdict, evidence, how to reproduce) ready for the Open MPI / UCX mailing lists or an issue'),
	np: option(integer(1, 4096), 'ranks: ipc runs exactly 4, fallback exactly 2 (the engine\'s reproducers need these)'),
	mpirun: LAUNCH_OPTIONS.mpirun,
	flavor: LAUNCH_OPTIONS.flavor,
	engine: LAUNCH_OPTIONS.engine,
	memory: withHelp(LAUNCH_OPTIONS.memory, 'buffers (default device; without a GPU the engine falls back to host and says why)'),
	size: option(size(IPC_SIZE_LIMITS), `ipc: message size, a multiple of 4 bytes from 4 to 1G (default ${DEFAULT_CHOICES.size}, as in VS Code)`),
	variants: option(nameList([...IPC_VARIANTS, ...IPC_ALLOC_VARIANTS, 'crash-test'], 'variant', 'a,b'), `ipc: variants (default ${IPC_VARIANTS.join(',')}; also ${IPC_ALLOC_VARIANTS.join(', ')})`),
	also: repeatable(assignment(), 'ipc: run every variant again with this preset added (a second configuration), repeatable'),
	sizes: option(sizeList(FALLBACK_SIZE_LIMITS), `fallback: sizes, "1M..1G" (x4 steps) or "1M,64M", at most 64, multiples of 4 bytes (default ${DEFAULT_CHOICES.sizes}, as in VS Code; 1M..1G adds 1 GiB)`),
	modes: option(nameList(FALLBACK_MODES, 'mode', 'a,b'), `fallback: modes (default ${FALLBACK_MODES.join(',')})`),
	iters: option(integer(1, 1000), 'fallback: iterations per size, 1..1000 (default 3)'),
	chunk: option(size(CHUNK_SIZE_LIMITS), 'fallback: staging pipeline chunk, a multiple of 4 bytes from 4K to 1G (default 16M)'),
	nbuf: option(integer(1, 64), 'fallback: staging pipeline buffers, 1..64 (default 4)'),
	preset: LAUNCH_OPTIONS.preset,
	mca: withHelp(LAUNCH_OPTIONS.mca, 'Open MPI MCA parameter, repeatable (e.g. btl_smcuda_use_cuda_ipc 0)'),
	'pml-ucx': flag('Open MPI: --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any'),
	'launcher-arg': repeatable(text('X'), 'extra launcher argument, repeatable (e.g. --launcher-arg --host --launcher-arg a:2,b:2)'),
	loopback: flag('Open MPI: --mca btl_tcp_if_include lo (and UCX_NET_DEVICES=lo)'),
	'proto-info': flag('fallback: also UCX_PROTO_INFO=y UCX_PROTO_ENABLE=y on the mpi run'),
	'try-ucx': repeatable(UCX_TRY, `fallback: also run the mpi mode with this UCX setting added, every trial, and rank it beside the other options (bandwidth and host memory against MPI as configured); repeatable, at most 8. --try-ucx staging = the staging-pool settings measured on the H200 (${UCX_STAGING_TRIES.join(' ')})`),
	...TARGET_OPTIONS,
	trials: option(integer(1, MAX_TRIALS), `independent trials (separate launches) of every variant / mode, 1..${MAX_TRIALS} (default ${DEFAULT_TRIALS}: catches a failure rate of 25 % with 95 % probability; docs/repro-schema.md)`),
	timeout: withHelp(LAUNCH_OPTIONS.timeout, 'per-trial timeout in seconds, 1..86400 (default 120; the whole run may take it × every launch)'),
	inject: option(INJECT, 'ipc: test hook passed to the engine (crash-fraction: a rank crashes in a fraction F of the trials, chosen from --inject-seed S and the trial index; wrong-fraction: those trials return wrong data instead)'),
	'inject-seed': option(integer(0, 2_000_000_000, 'S'), 'ipc: seed of --inject crash-fraction / wrong-fraction (default 1)'),
	'from-json': withHelp(LAUNCH_OPTIONS['from-json'], 'render a saved device result (scripts/gpu/repro.sh\'s repro.json) or a saved --json report instead of running'),
};

/** Options that apply to one reproducer only: naming them for the other is a usage error, not silently ignored. */
const ONLY: Partial<Record<keyof typeof REPRO_OPTIONS, 'ipc' | 'fallback'>> = {
	size: 'ipc', variants: 'ipc', also: 'ipc', inject: 'ipc', 'inject-seed': 'ipc',
	sizes: 'fallback', modes: 'fallback', iters: 'fallback', chunk: 'fallback', nbuf: 'fallback', 'proto-info': 'fallback', 'try-ucx': 'fallback',
};

const USAGE = helpText(REPRO_OPTIONS, { usage: 'gpumpi-doctor repro ipc|fallback [options]' });

/** What `repro` runs, from its command line. */
export interface CliOptions extends LaunchCliOptions {
	which: 'ipc' | 'fallback';
	json: boolean;
	markdown: boolean;
	/** Text output: every trial, the transport lines and sample failures after the verdict and the table. */
	verbose: boolean;
	np: number | null;
	size: string;
	/** --size in bytes. */
	sizeBytes: number;
	variants: string[];
	sizes: string;
	modes: string[];
	iters: number;
	chunk: string | null;
	nbuf: number | null;
	extra: string[];
	loopback: boolean;
	protoInfo: boolean;
	inject: string | null;
	injectSeed: number;
	trials: number;
	pmlUcx: boolean;
	also: Array<[string, string]>;
	/** fallback --try-ucx settings, in the order given. */
	tryUcx: Array<[string, string]>;
}

/** The bytes of a size text the defaults hold (checked, so a bad default fails at once, loudly). */
function sizeBytesOf(s: string): number {
	const n = checkSizeText(s, IPC_SIZE_LIMITS);
	if (typeof n === 'string') { throw new Error(`default size ${s}: ${n}`); }
	return n;
}

/**
 * `repro` argv (after "repro") → options, every value checked against what the engine accepts; UsageError otherwise
 * (an empty message: --help). Pure: nothing is run, read or launched.
 */
export function parseReproArgs(argv: readonly string[]): CliOptions {
	const which = argv[0];
	if (which === '--help' || which === '-h') { throw new UsageError(''); }
	if (which !== 'ipc' && which !== 'fallback') { throw new UsageError(`which reproducer? (ipc or fallback), got ${shown(which ?? '')}`); }
	const refused = Object.fromEntries(Object.entries(ONLY).filter(([, w]) => w !== which).map(([k, w]) => [`--${k}`, `is a repro ${w} option, not one of repro ${which}`]));
	const v = parseArgv(REPRO_OPTIONS, argv.slice(1), { refused }).values;
	const ipcSize = v.size ?? { text: DEFAULT_CHOICES.size, bytes: sizeBytesOf(DEFAULT_CHOICES.size) };
	const o: CliOptions = {
		...launchCliOptions(v, { memory: 'device', timeoutS: 120 }),
		which, json: v.json === true, markdown: v.markdown === true, verbose: v.verbose === true, np: v.np ?? null,
		size: ipcSize.text, sizeBytes: ipcSize.bytes, variants: v.variants ?? [...IPC_VARIANTS], sizes: v.sizes ?? DEFAULT_CHOICES.sizes,
		modes: v.modes ?? [...FALLBACK_MODES], iters: v.iters ?? 3, chunk: v.chunk?.text ?? null, nbuf: v.nbuf ?? null,
		extra: v['launcher-arg'] ?? [], loopback: v.loopback === true, protoInfo: v['proto-info'] === true, inject: v.inject ?? null,
		injectSeed: v['inject-seed'] ?? 1, trials: v.trials ?? DEFAULT_TRIALS, pmlUcx: v['pml-ucx'] === true, also: v.also ?? [], tryUcx: [],
	};
	if (o.np !== null && o.np !== RANKS[which]) {
		throw new UsageError(`--np: repro ${which} runs exactly ${RANKS[which]} ranks (the engine's ${which} reproducer needs ${RANKS[which]}), got ${o.np}`);
	}
	const tried = ucxTryList(v['try-ucx'] ?? []);
	if (typeof tried === 'string') { throw new UsageError(`--try-ucx: ${tried}`); }
	o.tryUcx = tried;
	if (o.json && o.markdown) { throw new UsageError('--json and --markdown exclude each other'); }
	if (o.tryUcx.length > 0 && !o.modes.includes('mpi')) { throw new UsageError(`--try-ucx compares UCX settings in the mpi mode, and --modes ${o.modes.join(',')} has no mpi`); }
	if (o.fromJson !== null) {
		if (o.host || o.srun) { throw new UsageError('--from-json renders a saved file; --host and --srun launch runs'); }
	} else {
		checkLaunchOptions(o, RANKS[which]);
	}
	return o;
}

function configLabel(o: CliOptions): string {
	const parts: string[] = [o.pmlUcx ? 'pml ucx' : 'default'];
	for (const [k, v] of o.mca) { parts.push(`${k}=${v}`); }
	for (const [k, v] of o.env) { parts.push(`${k}=${v}`); }
	return parts.join(', ');
}

/** Entry point of `gpumpi-doctor repro …` (argv after "repro"). Never rejects. */
export function reproMain(argv: readonly string[], io: CliIo): Promise<number> {
	return runSubcommand('repro', USAGE, io, async () => {
		const o = parseReproArgs(argv);
		if (o.fromJson) { return fromJson(o, o.fromJson, io); }
		const progress = (l: string): void => { if (!o.json && !o.markdown) { io.stderr(`  … ${l}\n`); } };
		const target = await cliLaunchTarget(o, o.np ?? RANKS[o.which], io.cwd, progress, io.signal);
		for (const n of target.notes) { io.stderr(`gpumpi-doctor repro: ${n}\n`); }
		if (!target.ok && io.signal.aborted) { io.stderr('gpumpi-doctor repro: interrupted before any run started; nothing was launched\n'); return EXIT.interrupted; }
		if (!target.ok) { io.stderr(`gpumpi-doctor repro: ${target.error}\n`); return EXIT.failed; }
		try {
			const code = await runOn(o, target, io, progress, io.signal);
			if (io.signal.aborted) { io.stderr('gpumpi-doctor repro: interrupted; the runs were stopped (the report above is partial)\n'); return EXIT.interrupted; }
			return code;
		} finally {
			await target.close();
		}
	});
}

/** `--from-json FILE`: render a saved device result or report. */
function fromJson(o: CliOptions, file: string, io: CliIo): number {
	let rep;
	try {
		rep = loadReproText(fs.readFileSync(path.resolve(io.cwd, file), 'utf8'));
	} catch (e) {
		io.stderr(`gpumpi-doctor repro: cannot read ${file}: ${e instanceof Error ? e.message : String(e)}\n`);
		return EXIT.failed;
	}
	const source = `${file}${rep.kind === 'device-result' ? ' (saved device result)' : ' (saved report)'}`;
	if (o.which === 'ipc') {
		if (!rep.ipc) { io.stderr('gpumpi-doctor repro: the file has no ipc runs\n'); return EXIT.failed; }
		io.stdout(o.markdown ? bugReportMarkdown({ ipc: rep.ipc, outputs: rep.outputs, source })
			: o.json ? JSON.stringify(rep.ipc, null, 2) + '\n' : renderIpcReport(rep.ipc, o));
	} else {
		if (rep.fallback.length === 0) { io.stderr('gpumpi-doctor repro: the file has no fallback runs\n'); return EXIT.failed; }
		io.stdout(o.markdown ? bugReportMarkdown({ fallback: rep.fallback, outputs: rep.outputs, source })
			: o.json ? JSON.stringify(rep.fallback, null, 2) + '\n' : rep.fallback.map(r => renderFallbackReport(r, o)).join('\n'));
	}
	return EXIT.ok;
}

async function runOn(o: CliOptions, target: Extract<LaunchTarget, { ok: true }>, io: CliIo, progress: (l: string) => void, signal?: AbortSignal): Promise<number> {
	const config: LaunchConfig = {
		label: configLabel(o),
		env: [...(o.loopback ? [['UCX_NET_DEVICES', 'lo'] as [string, string]] : []), ...o.env],
		mca: [...(o.pmlUcx ? PML_UCX_MCA : []), ...o.mca],
		extraArgs: o.extra,
	};
	const common = {
		target, loopback: o.loopback, memory: o.memory, trials: o.trials, timeoutMs: o.timeoutS * 1000, onProgress: progress, signal,
		onLaunchLine: (argv: string[]): void => io.stderr(o.json || o.markdown ? '' : `launching on ${target.label}: ${posixQuoteArgv(argv)} …\n`),
	};
	const run = await runReproUseCase(o.which === 'ipc' ? {
		...common, which: 'ipc', configs: [config, ...o.also.map(([k, v]): LaunchConfig => ({ ...config, label: `${config.label}, ${k}=${v}`, env: [...config.env, [k, v]] }))],
		variants: o.variants, sizeBytes: o.sizeBytes,
		engineArgs: o.inject ? ['--inject', o.inject, ...(/^(crash|wrong)-fraction=/.test(o.inject) ? ['--inject-seed', String(o.injectSeed)] : [])] : [],
	} : {
		...common, which: 'fallback', configs: [config], modes: o.modes, sizes: o.sizes, iters: o.iters, chunk: o.chunk ?? undefined, nbuf: o.nbuf ?? undefined,
		protoInfo: o.protoInfo, ucxSettings: o.tryUcx,
	});
	// Known only once the flavour is detected (MCA parameters with an MPICH launcher): still before any launch.
	if (!run.ok) { throw new UsageError(run.error); }
	const where = target.label === 'this machine' ? 'run on this host' : `run on ${target.label}`;
	if (run.ipc) {
		const rep = run.ipc;
		io.stdout(o.markdown ? bugReportMarkdown({ ipc: rep, source: where }) : o.json ? JSON.stringify(rep, null, 2) + '\n' : renderIpcReport(rep, o));
	} else {
		const rep = run.fallback[0];
		io.stdout(o.markdown ? bugReportMarkdown({ fallback: [rep], source: where }) : o.json ? JSON.stringify(rep, null, 2) + '\n' : renderFallbackReport(rep, o));
	}
	return EXIT.ok;
}
