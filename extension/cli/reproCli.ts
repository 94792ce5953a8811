/**
 * `gpumpi-doctor repro ipc|fallback …`: runs the reproducers through mpirun (each IPC variant and each fallback mode
 * its own mpirun) and prints a readable summary (or the combined report with --json). `--from-json FILE` renders a
 * saved device result of scripts/gpu/repro.sh (or a saved --json report) instead of running anything; `--markdown`
 * prints a bug report (core/repro/bugReport.ts) instead of the summary. Returns the process exit code:
 * 0 a report was produced, 1 nothing could run (engine or mpirun missing), 2 usage error.
 */
import * as fs from 'node:fs';
import { runFallbackRepro } from '../core/repro/fallbackRunner';
import { runIpcVariants } from '../core/repro/ipcRunner';
import {
	PML_UCX_MCA, buildLaunchArgv, parsePreset, withConfig, withJobName, type LaunchConfig,
} from '../core/repro/launcher';
import { bugReportMarkdown } from '../core/repro/bugReport';
import { loadReproText } from '../core/repro/reproFile';
import { renderFallbackReport, renderIpcReport } from '../core/repro/reproRender';
import { IPC_VARIANTS, FALLBACK_MODES } from '../shared/reproSchema';
import { DEFAULT_TRIALS, MAX_TRIALS } from '../shared/trialStats';
import { posixQuoteArgv } from '../shared/shellQuote';
import type { LaunchTarget } from '../core/hosts/launchTarget';
import type { MapCliIo } from './mapCli';
import { cliLaunchTarget, optionInt, optionValue, readLaunchOption, TARGET_USAGE, UsageError, type LaunchCliOptions } from './launchArgs';

const USAGE = `Usage: gpumpi-doctor repro ipc|fallback [options]
  --json                 print the combined report as JSON instead of the summary
  --markdown             print a Markdown bug report (versions, command lines, results, verdict, evidence,
                         how to reproduce) ready for the Open MPI / UCX mailing lists or an issue
  --np N                 ranks (ipc: 4, fallback: 2; the reproducers need exactly these)
  --mpirun PATH          launcher (default: mpirun on PATH); --flavor openmpi|mpich overrides detection
  --engine PATH          gpumpi engine (default: native/build/engine*/gpumpi)
  --memory device|host   buffers (default device; without a GPU the engine falls back to host and says why)
  --size S               ipc message size (default 64M)
  --variants a,b         ipc variants (default direct,bounce,host,send-from-import)
  --sizes S              fallback sizes, "1M..1G" (x4 steps) or "1M,64M" (default 1M..1G)
  --modes a,b            fallback modes (default mpi,staged,host)   --iters N (default 3)
  --chunk S --nbuf N     fallback staging pipeline (default 16M x 4)
  --preset NAME=VALUE    environment for every rank (Open MPI -x, MPICH -genv), repeatable (e.g. UCX_TLS=^cuda_ipc)
  --mca K V              Open MPI MCA parameter, repeatable (e.g. btl_smcuda_use_cuda_ipc 0)
  --also NAME=VALUE      ipc: run every variant again with this preset added (a second configuration), repeatable
  --pml-ucx              Open MPI: --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any
  --launcher-arg X       extra launcher argument, repeatable (e.g. --launcher-arg --host --launcher-arg a:2,b:2)
  --loopback             Open MPI: --mca btl_tcp_if_include lo (and UCX_NET_DEVICES=lo)
  --proto-info           fallback: also UCX_PROTO_INFO=y UCX_PROTO_ENABLE=y on the mpi run
${TARGET_USAGE.trimEnd()}
  --trials N             independent trials (separate launches) of every variant / mode (default 11: catches a
                         failure rate of 25 % with 95 % probability; docs/repro-schema.md)
  --timeout S            per-trial timeout in seconds (default 120; the whole run may take it × every launch)
  --inject crash|hang|crash-fraction=F   ipc test hook passed to the engine (crash-fraction: a rank crashes in a
                         fraction F of the trials, chosen from --inject-seed S and the trial index)
  --inject-seed S        seed of --inject crash-fraction (default 1)
  --from-json FILE       render a saved device result (scripts/gpu/repro.sh's repro.json)
`;

interface CliOptions extends LaunchCliOptions {
	which: 'ipc' | 'fallback';
	json: boolean;
	markdown: boolean;
	np: number | null;
	size: string;
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
}


const SIZE_RE = /^\d+[KMG]?$/;

const PROCESS_IO: MapCliIo = {
	stdout: t => { process.stdout.write(t); },
	stderr: t => { process.stderr.write(t); },
	cwd: process.cwd(),
	signal: new AbortController().signal,
};

function parseArgs(argv: string[]): CliOptions {
	const which = argv[0];
	if (which === '--help' || which === '-h') { throw new UsageError(''); }
	if (which !== 'ipc' && which !== 'fallback') { throw new UsageError(`which reproducer? (ipc or fallback), got ${JSON.stringify(which ?? '')}`); }
	const o: CliOptions = {
		which, json: false, markdown: false, np: null, mpirun: 'mpirun', flavor: null, engine: null, memory: 'device', size: '64M',
		variants: [...IPC_VARIANTS], sizes: '1M..1G', modes: [...FALLBACK_MODES], iters: 3, chunk: null, nbuf: null,
		env: [], mca: [], extra: [], loopback: false, protoInfo: false, timeoutS: 120, inject: null, injectSeed: 1, trials: DEFAULT_TRIALS, fromJson: null, pmlUcx: false, also: [],
	};
	const value = (i: number, name: string): string => optionValue(argv, i, name);
	const int = optionInt;
	for (let i = 1; i < argv.length; i++) {
		const a = argv[i];
		const last = readLaunchOption(argv, i, o);
		if (last >= 0) { i = last; continue; }
		switch (a) {
			case '--json': o.json = true; break;
			case '--markdown': o.markdown = true; break;
			case '--loopback': o.loopback = true; break;
			case '--proto-info': o.protoInfo = true; break;
			case '--pml-ucx': o.pmlUcx = true; break;
			case '--np': o.np = int(value(i++, a), a, 1, 4096); break;
			case '--size': o.size = value(i++, a); if (!SIZE_RE.test(o.size)) { throw new UsageError('--size needs e.g. 64M'); } break;
			case '--sizes': o.sizes = value(i++, a); if (!/^[\dKMG.,]+$/.test(o.sizes)) { throw new UsageError('--sizes needs e.g. 1M..1G or 1M,64M'); } break;
			case '--variants': {
				o.variants = value(i++, a).split(',').filter(x => x.length > 0);
				for (const v of o.variants) {
					if (!(IPC_VARIANTS as readonly string[]).includes(v) && v !== 'crash-test') { throw new UsageError(`unknown variant ${JSON.stringify(v)}`); }
				}
				break;
			}
			case '--modes': {
				o.modes = value(i++, a).split(',').filter(x => x.length > 0);
				for (const m of o.modes) { if (!(FALLBACK_MODES as readonly string[]).includes(m)) { throw new UsageError(`unknown mode ${JSON.stringify(m)}`); } }
				break;
			}
			case '--iters': o.iters = int(value(i++, a), a, 1, 1000); break;
			case '--chunk': o.chunk = value(i++, a); if (!SIZE_RE.test(o.chunk)) { throw new UsageError('--chunk needs e.g. 16M'); } break;
			case '--nbuf': o.nbuf = int(value(i++, a), a, 1, 64); break;
			case '--also': {
				const p = parsePreset(value(i++, a));
				if (!p) { throw new UsageError('--also needs NAME=VALUE'); }
				o.also.push(p);
				break;
			}
			case '--launcher-arg': o.extra.push(value(i++, a)); break;
			case '--inject': {
				const v = value(i++, a);
				if (v !== 'crash' && v !== 'hang' && !/^crash-fraction=(0(\.\d{1,6})?|1(\.0{1,6})?)$/.test(v)) { throw new UsageError('--inject needs crash, hang or crash-fraction=F (0 ≤ F ≤ 1)'); }
				o.inject = v;
				break;
			}
			case '--inject-seed': o.injectSeed = int(value(i++, a), a, 0, 2_000_000_000); break;
			case '--trials': o.trials = int(value(i++, a), a, 1, MAX_TRIALS); break;
			case '--help': case '-h': throw new UsageError('');
			default: throw new UsageError(`unknown option ${JSON.stringify(a)}`);
		}
	}
	if (o.json && o.markdown) { throw new UsageError('--json and --markdown exclude each other'); }
	return o;
}

function configLabel(o: CliOptions): string {
	const parts: string[] = [o.pmlUcx ? 'pml ucx' : 'default'];
	for (const [k, v] of o.mca) { parts.push(`${k}=${v}`); }
	for (const [k, v] of o.env) { parts.push(`${k}=${v}`); }
	return parts.join(', ');
}

/** Entry point of `gpumpi-doctor repro …` (argv after "repro"). */
export async function reproMain(argv: string[], io: MapCliIo = PROCESS_IO): Promise<number> {
	const { cwd, signal } = io;
	let o: CliOptions;
	try {
		o = parseArgs(argv);
		if (o.fromJson && (o.host || o.srun)) { throw new UsageError('--from-json renders a saved file; --host and --srun launch runs'); }
	} catch (e) {
		const msg = e instanceof Error ? e.message : String(e);
		if (!msg) { io.stdout(USAGE); return 0; }
		io.stderr(`gpumpi-doctor repro: ${msg}\n\n${USAGE}`);
		return 2;
	}
	if (o.fromJson) {
		try {
			const rep = loadReproText(fs.readFileSync(o.fromJson, 'utf8'));
			const source = `${o.fromJson}${rep.kind === 'device-result' ? ' (saved device result)' : ' (saved report)'}`;
			if (o.which === 'ipc') {
				if (!rep.ipc) { io.stderr('gpumpi-doctor repro: the file has no ipc runs\n'); return 1; }
				io.stdout(o.markdown ? bugReportMarkdown({ ipc: rep.ipc, outputs: rep.outputs, source })
					: o.json ? JSON.stringify(rep.ipc, null, 2) + '\n' : renderIpcReport(rep.ipc));
			} else {
				if (rep.fallback.length === 0) { io.stderr('gpumpi-doctor repro: the file has no fallback runs\n'); return 1; }
				io.stdout(o.markdown ? bugReportMarkdown({ fallback: rep.fallback, outputs: rep.outputs, source })
					: o.json ? JSON.stringify(rep.fallback, null, 2) + '\n' : rep.fallback.map(renderFallbackReport).join('\n'));
			}
			return 0;
		} catch (e) {
			io.stderr(`gpumpi-doctor repro: cannot read ${o.fromJson}: ${e instanceof Error ? e.message : String(e)}\n`);
			return 1;
		}
	}
	const progress = (l: string): void => { if (!o.json && !o.markdown) { io.stderr(`  … ${l}\n`); } };
	let target;
	try {
		target = await cliLaunchTarget(o, o.np ?? (o.which === 'ipc' ? 4 : 2), cwd, progress);
	} catch (e) {
		io.stderr(`gpumpi-doctor repro: ${e instanceof Error ? e.message : String(e)}\n\n${USAGE}`);
		return 2;
	}
	for (const n of target.notes) { io.stderr(`gpumpi-doctor repro: ${n}\n`); }
	if (!target.ok) { io.stderr(`gpumpi-doctor repro: ${target.error}\n`); return 1; }
	try {
		return await runOn(o, target, io, progress, signal);
	} finally {
		await target.close();
	}
}

async function runOn(o: CliOptions, target: Extract<LaunchTarget, { ok: true }>, io: MapCliIo, progress: (l: string) => void, signal?: AbortSignal): Promise<number> {
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
		const shown = buildLaunchArgv(withJobName(withConfig(spec, config)), [engine, 'repro', o.which]);
		io.stderr(o.json || o.markdown ? '' : `launching on ${target.label}: ${posixQuoteArgv(shown)} …\n`);
	} catch (e) {
		io.stderr(`gpumpi-doctor repro: ${e instanceof Error ? e.message : String(e)}\n`);
		return 2;
	}
	const where = target.label === 'this machine' ? 'run on this host' : `run on ${target.label}`;
	const timeoutMs = o.timeoutS * 1000;
	if (o.which === 'ipc') {
		const sizeBytes = parseSizeText(o.size);
		const rep = await runIpcVariants({
			engine, host, spec, configs: [config, ...o.also.map(([k, v]): LaunchConfig => ({ ...config, label: `${config.label}, ${k}=${v}`, env: [...config.env, [k, v]] }))], variants: o.variants, sizeBytes, memory: o.memory, timeoutMs,
			engineArgs: o.inject ? ['--inject', o.inject, ...(o.inject.startsWith('crash-fraction=') ? ['--inject-seed', String(o.injectSeed)] : [])] : [],
			trials: o.trials, onProgress: progress, signal,
		});
		io.stdout(o.markdown ? bugReportMarkdown({ ipc: rep, source: where }) : o.json ? JSON.stringify(rep, null, 2) + '\n' : renderIpcReport(rep));
	} else {
		const rep = await runFallbackRepro({
			engine, host, spec, config, modes: o.modes, sizes: o.sizes, iters: o.iters, chunk: o.chunk ?? undefined, nbuf: o.nbuf ?? undefined,
			memory: o.memory, timeoutMs, trials: o.trials, protoInfo: o.protoInfo, onProgress: progress, signal,
		});
		io.stdout(o.markdown ? bugReportMarkdown({ fallback: [rep], source: where }) : o.json ? JSON.stringify(rep, null, 2) + '\n' : renderFallbackReport(rep));
	}
	return 0;
}

function parseSizeText(s: string): number {
	const m = /^(\d+)([KMG]?)$/.exec(s);
	if (!m) { return 64 << 20; }
	const mult = m[2] === 'K' ? 1024 : m[2] === 'M' ? 1 << 20 : m[2] === 'G' ? 1 << 30 : 1;
	return Number(m[1]) * mult;
}
