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
import { runFallbackRepro } from '../core/repro/fallbackRunner';
import { runIpcVariants } from '../core/repro/ipcRunner';
import { buildLaunchArgv } from '../core/launch/launchArgv';
import { parsePreset, withConfig, withJobName, type LaunchConfig } from '../core/launch/launchSpec';
import { PML_UCX_MCA } from '../core/repro/evidence';
import { bugReportMarkdown } from '../core/repro/bugReport';
import { loadReproText } from '../core/repro/reproFile';
import { renderFallbackReport, renderIpcReport } from '../core/repro/reproRender';
import { IPC_ALLOC_VARIANTS, IPC_VARIANTS, FALLBACK_MODES } from '../shared/reproSchema';
import { DEFAULT_TRIALS, MAX_TRIALS } from '../shared/trialStats';
import { posixQuoteArgv } from '../shared/shellQuote';
import { checkSizeListText, checkSizeText, CHUNK_SIZE_LIMITS, FALLBACK_SIZE_LIMITS, IPC_SIZE_LIMITS } from '../shared/sizeText';
import type { LaunchTarget } from '../core/hosts/launchTarget';
import { EXIT, runSubcommand, shown, UsageError, type CliIo } from './io';
import { DEFAULT_CHOICES, UCX_STAGING_TRIES, ucxTryList } from '../core/repro/reproChoices';
import { checkLaunchOptions, cliLaunchTarget, optionInt, optionValue, readLaunchOption, TARGET_USAGE, type LaunchCliOptions } from './launchArgs';

const USAGE = `Usage: gpumpi-doctor repro ipc|fallback [options]
  --json                 print the combined report as JSON instead of the summary
  --verbose, -v          the summary (verdict first, then one row per variant / mode and size) followed by every
                         trial, the transport lines and sample failures
  --markdown             print a Markdown bug report (versions, command lines, results, verdict, evidence,
                         how to reproduce) ready for the Open MPI / UCX mailing lists or an issue
  --np N                 ranks: ipc runs exactly 4, fallback exactly 2 (the engine's reproducers need these)
  --mpirun PATH          launcher (default: mpirun on PATH); --flavor openmpi|mpich overrides detection
  --engine PATH          gpumpi engine (default: native/build/engine*/gpumpi)
  --memory device|host   buffers (default device; without a GPU the engine falls back to host and says why)
  --size S               ipc message size, a multiple of 4 bytes from 4 to 1G (default ${DEFAULT_CHOICES.size}, as in VS Code)
  --variants a,b         ipc variants (default direct,bounce,host,send-from-import; also pool, vmm)
  --sizes S              fallback sizes, "1M..1G" (x4 steps) or "1M,64M", at most 64, multiples of 4 bytes
                         (default ${DEFAULT_CHOICES.sizes}, as in VS Code; 1M..1G adds 1 GiB)
  --modes a,b            fallback modes (default mpi,staged,host,lib-auto,lib-staged,lib-shm) --iters N (default 3)
  --chunk S --nbuf N     fallback staging pipeline (default 16M x 4; chunk 4K..1G, nbuf 1..64)
  --preset NAME=VALUE    environment for every rank (Open MPI -x, MPICH -genv), repeatable (e.g. UCX_TLS=^cuda_ipc)
  --mca K V              Open MPI MCA parameter, repeatable (e.g. btl_smcuda_use_cuda_ipc 0)
  --also NAME=VALUE      ipc: run every variant again with this preset added (a second configuration), repeatable
  --pml-ucx              Open MPI: --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
  --launcher-arg X       extra launcher argument, repeatable (e.g. --launcher-arg --host --launcher-arg a:2,b:2)
  --loopback             Open MPI: --mca btl_tcp_if_include lo (and UCX_NET_DEVICES=lo)
  --proto-info           fallback: also UCX_PROTO_INFO=y UCX_PROTO_ENABLE=y on the mpi run
  --try-ucx NAME=VALUE   fallback: also run the mpi mode with this UCX setting added, every trial, and rank it
                         beside the other options (bandwidth and host memory against MPI as configured); repeatable,
                         at most 8. --try-ucx staging = the staging-pool settings measured on the H200
                         (${UCX_STAGING_TRIES.join(' ')})
${TARGET_USAGE.trimEnd()}
  --trials N             independent trials (separate launches) of every variant / mode (default 11: catches a
                         failure rate of 25 % with 95 % probability; docs/repro-schema.md)
  --timeout S            per-trial timeout in seconds (default 120; the whole run may take it × every launch)
  --inject crash|hang|crash-fraction=F|wrong-fraction=F   ipc test hook passed to the engine (crash-fraction: a
                         rank crashes in a fraction F of the trials, chosen from --inject-seed S and the trial index;
                         wrong-fraction: those trials return wrong data instead)
  --inject-seed S        seed of --inject crash-fraction / wrong-fraction (default 1)
  --from-json FILE       render a saved device result (scripts/gpu/repro.sh's repro.json)
`;

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


/** The reproducers' rank counts: the engine refuses any other (native/engine/reproIpc.cc, reproFallback.cc). */
const RANKS = { ipc: 4, fallback: 2 } as const;
/** Options that apply to one reproducer only: naming them for the other is a usage error, not silently ignored. */
const ONLY: Record<string, 'ipc' | 'fallback'> = {
	'--size': 'ipc', '--variants': 'ipc', '--also': 'ipc', '--inject': 'ipc',
	'--sizes': 'fallback', '--modes': 'fallback', '--iters': 'fallback', '--chunk': 'fallback', '--nbuf': 'fallback', '--proto-info': 'fallback', '--try-ucx': 'fallback',
};

/** A comma-separated list of names from `known`, duplicates dropped; UsageError for an empty list or an unknown name. */
function nameList(text: string, option: string, known: readonly string[]): string[] {
	const items = [...new Set(text.split(',').filter(x => x.length > 0))];
	if (items.length === 0) { throw new UsageError(`${option} needs a comma-separated list of ${known.join(', ')}`); }
	for (const v of items) {
		if (!known.includes(v)) { throw new UsageError(`${option}: unknown ${option === '--modes' ? 'mode' : 'variant'} ${shown(v)} (known: ${known.join(', ')})`); }
	}
	return items;
}

/** The bytes of a size text the defaults hold (checked, so a bad default fails at once, loudly). */
function sizeBytesOf(text: string): number {
	const n = checkSizeText(text, IPC_SIZE_LIMITS);
	if (typeof n === 'string') { throw new Error(`default size ${text}: ${n}`); }
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
	const o: CliOptions = {
		which, json: false, markdown: false, verbose: false, np: null, mpirun: 'mpirun', flavor: null, engine: null, memory: 'device', size: DEFAULT_CHOICES.size, sizeBytes: sizeBytesOf(DEFAULT_CHOICES.size),
		variants: [...IPC_VARIANTS], sizes: DEFAULT_CHOICES.sizes, modes: [...FALLBACK_MODES], iters: 3, chunk: null, nbuf: null,
		env: [], mca: [], extra: [], loopback: false, protoInfo: false, timeoutS: 120, inject: null, injectSeed: 1, trials: DEFAULT_TRIALS, fromJson: null, pmlUcx: false, also: [], tryUcx: [],
	};
	const value = (i: number, name: string): string => optionValue(argv, i, name);
	const int = optionInt;
	for (let i = 1; i < argv.length; i++) {
		const a = argv[i];
		const last = readLaunchOption(argv, i, o);
		if (last >= 0) { i = last; continue; }
		if (ONLY[a] && ONLY[a] !== which) { throw new UsageError(`${a} is a repro ${ONLY[a]} option, not one of repro ${which}`); }
		switch (a) {
			case '--json': o.json = true; break;
			case '--verbose': case '-v': o.verbose = true; break;
			case '--markdown': o.markdown = true; break;
			case '--loopback': o.loopback = true; break;
			case '--proto-info': o.protoInfo = true; break;
			case '--pml-ucx': o.pmlUcx = true; break;
			case '--np': {
				o.np = int(value(i++, a), a, 1, 4096);
				if (o.np !== RANKS[which]) { throw new UsageError(`--np: repro ${which} runs exactly ${RANKS[which]} ranks (the engine's ${which} reproducer needs ${RANKS[which]}), got ${o.np}`); }
				break;
			}
			case '--size': {
				o.size = value(i++, a);
				const n = checkSizeText(o.size, IPC_SIZE_LIMITS);
				if (typeof n === 'string') { throw new UsageError(`--size needs ${n}, got ${shown(o.size)}`); }
				o.sizeBytes = n;
				break;
			}
			case '--sizes': {
				o.sizes = value(i++, a);
				const r = checkSizeListText(o.sizes, FALLBACK_SIZE_LIMITS);
				if (typeof r === 'string') { throw new UsageError(`--sizes: ${r}; got ${shown(o.sizes)}`); }
				break;
			}
			case '--variants': o.variants = nameList(value(i++, a), a, [...IPC_VARIANTS, ...IPC_ALLOC_VARIANTS, 'crash-test']); break;
			case '--modes': o.modes = nameList(value(i++, a), a, FALLBACK_MODES); break;
			case '--iters': o.iters = int(value(i++, a), a, 1, 1000); break;
			case '--chunk': {
				o.chunk = value(i++, a);
				const n = checkSizeText(o.chunk, CHUNK_SIZE_LIMITS);
				if (typeof n === 'string') { throw new UsageError(`--chunk needs ${n}, got ${shown(o.chunk)}`); }
				break;
			}
			case '--nbuf': o.nbuf = int(value(i++, a), a, 1, 64); break;
			case '--also': {
				const p = parsePreset(value(i++, a));
				if (!p) { throw new UsageError(`--also needs NAME=VALUE with NAME an environment variable name, got ${shown(argv[i])}`); }
				o.also.push(p);
				break;
			}
			case '--try-ucx': {
				// The same check as the VS Code picker's (core/repro/reproChoices.ts ucxTryList).
				const v = value(i++, a);
				const t = ucxTryList([...o.tryUcx.map(([k, x]) => `${k}=${x}`), v]);
				if (typeof t === 'string') {
					throw new UsageError(/^at most/.test(t) ? `--try-ucx: ${t}` : `--try-ucx needs UCX_NAME=VALUE (VALUE of letters, digits and _.:,^+-) or "staging", got ${shown(v)}`);
				}
				o.tryUcx = t;
				break;
			}
			case '--launcher-arg': o.extra.push(value(i++, a)); break;
			case '--inject': {
				const v = value(i++, a);
				if (v !== 'crash' && v !== 'hang' && !/^(crash|wrong)-fraction=(0(\.\d{1,6})?|1(\.0{1,6})?)$/.test(v)) { throw new UsageError(`--inject needs crash, hang, crash-fraction=F or wrong-fraction=F (0 ≤ F ≤ 1), got ${shown(v)}`); }
				o.inject = v;
				break;
			}
			case '--inject-seed': o.injectSeed = int(value(i++, a), a, 0, 2_000_000_000); break;
			case '--trials': o.trials = int(value(i++, a), a, 1, MAX_TRIALS); break;
			case '--help': case '-h': throw new UsageError('');
			default: throw new UsageError(`unknown option ${shown(a)}`);
		}
	}
	if (o.json && o.markdown) { throw new UsageError('--json and --markdown exclude each other'); }
	if (o.tryUcx.length > 0 && !o.modes.includes('mpi')) { throw new UsageError(`--try-ucx compares UCX settings in the mpi mode, and --modes ${o.modes.join(',')} has no mpi`); }
	if (o.fromJson !== null) {
		if (o.fromJson === '') { throw new UsageError('--from-json needs a file name'); }
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
	const { engine, flavor, host } = target;
	const spec = { ...target.spec, loopbackOnly: o.loopback && flavor === 'openmpi' };
	const config: LaunchConfig = {
		label: configLabel(o),
		env: [...(o.loopback ? [['UCX_NET_DEVICES', 'lo'] as [string, string]] : []), ...o.env],
		mca: [...(o.pmlUcx ? PML_UCX_MCA : []), ...o.mca],
		extraArgs: o.extra,
	};
	try {
		// Validate early; the run adds its own switches, and an srun run its own --job-name.
		const argvShown = buildLaunchArgv(withJobName(withConfig(spec, config)), [engine, 'repro', o.which]);
		io.stderr(o.json || o.markdown ? '' : `launching on ${target.label}: ${posixQuoteArgv(argvShown)} …\n`);
	} catch (e) {
		// Known only once the flavour is detected (MCA parameters with an MPICH launcher): still before any launch.
		throw new UsageError(e instanceof Error ? e.message : String(e));
	}
	const where = target.label === 'this machine' ? 'run on this host' : `run on ${target.label}`;
	const timeoutMs = o.timeoutS * 1000;
	if (o.which === 'ipc') {
		const sizeBytes = o.sizeBytes;
		const rep = await runIpcVariants({
			engine, host, spec, configs: [config, ...o.also.map(([k, v]): LaunchConfig => ({ ...config, label: `${config.label}, ${k}=${v}`, env: [...config.env, [k, v]] }))], variants: o.variants, sizeBytes, memory: o.memory, timeoutMs,
			engineArgs: o.inject ? ['--inject', o.inject, ...(/^(crash|wrong)-fraction=/.test(o.inject) ? ['--inject-seed', String(o.injectSeed)] : [])] : [],
			trials: o.trials, onProgress: progress, signal,
		});
		io.stdout(o.markdown ? bugReportMarkdown({ ipc: rep, source: where }) : o.json ? JSON.stringify(rep, null, 2) + '\n' : renderIpcReport(rep, o));
	} else {
		const rep = await runFallbackRepro({
			engine, host, spec, config, modes: o.modes, sizes: o.sizes, iters: o.iters, chunk: o.chunk ?? undefined, nbuf: o.nbuf ?? undefined,
			memory: o.memory, timeoutMs, trials: o.trials, protoInfo: o.protoInfo, ucxSettings: o.tryUcx, onProgress: progress, signal,
		});
		io.stdout(o.markdown ? bugReportMarkdown({ fallback: [rep], source: where }) : o.json ? JSON.stringify(rep, null, 2) + '\n' : renderFallbackReport(rep, o));
	}
	return EXIT.ok;
}
