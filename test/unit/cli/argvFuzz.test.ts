/**
 * Fuzz the argument parsers of every subcommand (fixed seed, bounded iterations), the way fuzz.test.ts fuzzes the
 * tool-output parsers: random and hostile argv (unknown flags, missing values, huge numbers, unicode, lone
 * surrogates, NUL, values that start with "-", shell metacharacters, 5 000-character values) must give a parsed
 * result that honours the engine's limits, or a UsageError — never another exception. The options drawn are every
 * option of each subcommand's table (extension/cli/argv.ts), so a new option is fuzzed as soon as it exists. Then a
 * sample of the refused command lines goes through the real `main()`: exit 2 (125 for guard, whose usage error must
 * not look like its program's 2; 0 for --help) and not one child process started (test/unit/cli/spawnSpy.ts). The
 * argv are synthetic by design.
 */
import * as assert from 'node:assert/strict';
import type { OptionTable } from '../../../extension/cli/argv';
import { ANALYZE_OPTIONS, COLLECT_OPTIONS, parseAnalyzeArgs, parseCollectArgs } from '../../../extension/cli/bundleCli';
import { main } from '../../../extension/cli/gpumpiDoctor';
import { EXIT, UsageError } from '../../../extension/cli/io';
import { GUARD_EXIT } from '../../../extension/core/guard/guardResult';
import { GUARD_OPTIONS, parseGuardArgs } from '../../../extension/cli/guardCli';
import { INSPECT_OPTIONS, parseInspectArgs } from '../../../extension/cli/inspectCli';
import { MAP_OPTIONS, parseMapArgs } from '../../../extension/cli/mapCli';
import { parseReproArgs, REPRO_OPTIONS } from '../../../extension/cli/reproCli';
import { FALLBACK_MODES, IPC_VARIANTS } from '../../../extension/shared/reproSchema';
import {
	checkSizeListText, checkSizeText, CHUNK_SIZE_LIMITS, FALLBACK_SIZE_LIMITS, IPC_SIZE_LIMITS, MAP_LARGE_LIMITS, MAP_SMALL_LIMITS,
} from '../../../extension/shared/sizeText';
import { prng } from '../prng';
import { captureIo } from './captureIo';
import { withSpawnSpy } from './spawnSpy';

const rand = prng(0xa5917);
const int = (n: number): number => Math.floor(rand() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];

/** Every option word of a table: `--name` and the short alias. */
const words = (t: OptionTable): string[] => Object.entries(t).flatMap(([k, o]) => [`--${k}`, ...(o.short ? [o.short] : [])]);
/** Per subcommand: its options, --help, and for guard launcher options it refuses and words of a COMMAND. */
const OPTIONS: Record<string, string[]> = {
	repro: [...words(REPRO_OPTIONS), '--help'],
	map: [...words(MAP_OPTIONS), '--help'],
	inspect: [...words(INSPECT_OPTIONS), '--help'],
	collect: [...words(COLLECT_OPTIONS), '--help'],
	analyze: [...words(ANALYZE_OPTIONS), '--help'],
	guard: [...words(GUARD_OPTIONS), '--engine', '--mca', '--help', '--', '--', 'mpirun', './app', 'srun'],
};
const UNKNOWN = ['--bogus', '-q', '---', '--json=1', '--np=4', '--', '-', '--HOST', '--size=64M', '-np'];
/** Values that are valid for some option, so that a good share of the command lines parse. */
const GOOD = ['4', '2', '3', '64M', '1M', '4K', '1G', '1M..1G', '1M,64M', 'direct', 'direct,bounce', 'crash-test', 'mpi', 'mpi,staged',
	'host', 'device', 'openmpi', 'mpich', 'all', 'sampled', 'crash', 'hang', 'UCX_TLS=^cuda_ipc', 'pml', 'ob1', 'a:2,b:2', 'node1,node2',
	'mpirun', '/bin/true', 'out.json', 'bundle-dir', '16M', '8', '120', 'pmi2', 'login1', 'user@login1', 'module load openmpi', '-N2'];
const HOSTILE = ['', '-', '--', '-x', '--json', '99999999999999999999', '1e309', '-1', '0', 'NaN', '0x10', ' 4', '4 ', '4.5', '1G..1M',
	'1M..', '..', '0..4', '1M,,4M', 'x:1,y;z:2', '日本語', '\u202e', 'a\u0000b', '\u0000', '\ud800', '💥', '$(reboot)', '`id`',
	'; rm -rf /', '|', '&&', '\n', '=x', 'A=', '-oProxyCommand=touch /tmp/gpumpi-fuzz', '--mpirun=/bin/sh', '64m', '64MiB', '1T'];

function randomText(): string {
	const n = int(12);
	let s = '';
	for (let i = 0; i < n; i++) { s += String.fromCodePoint(rand() < 0.7 ? 32 + int(95) : int(0x3000)); }
	return s;
}

function token(sub: string): string {
	const r = rand();
	if (r < 0.4) { return pick(OPTIONS[sub]); }
	if (r < 0.47) { return pick(UNKNOWN); }
	if (r < 0.75) { return pick(GOOD); }
	if (r < 0.95) { return pick(HOSTILE); }
	return rand() < 0.5 ? randomText() : 'x'.repeat(5000);
}

function argvFor(sub: string): string[] {
	const out: string[] = sub === 'repro' ? [rand() < 0.45 ? 'ipc' : rand() < 0.9 ? 'fallback' : pick([...HOSTILE, '--help'])] : [];
	for (let i = 0, n = int(9); i < n; i++) { out.push(token(sub)); }
	return out;
}

const sizeOk = (text: string, limits: typeof IPC_SIZE_LIMITS): boolean => typeof checkSizeText(text, limits) === 'number';

/** What a parsed result must honour (the engine's limits: a parsed command line is one the engine accepts). */
function checkParsed(sub: string, argv: string[], v: unknown): void {
	const what = `${sub} ${JSON.stringify(argv)}`;
	if (sub === 'repro') {
		const o = v as ReturnType<typeof parseReproArgs>;
		assert.ok(o.np === null || o.np === (o.which === 'ipc' ? 4 : 2), what);
		assert.ok(sizeOk(o.size, IPC_SIZE_LIMITS) && o.sizeBytes % 4 === 0 && o.sizeBytes <= 1 << 30, what);
		assert.ok(Array.isArray(checkSizeListText(o.sizes, FALLBACK_SIZE_LIMITS)), what);
		assert.ok(o.chunk === null || sizeOk(o.chunk, CHUNK_SIZE_LIMITS), what);
		assert.ok(o.modes.length > 0 && o.modes.every(m => (FALLBACK_MODES as readonly string[]).includes(m)), what);
		assert.ok(o.variants.length > 0 && o.variants.every(x => [...IPC_VARIANTS, 'crash-test'].includes(x)), what);
		assert.ok(!(o.json && o.markdown), what);
		assert.ok(o.iters >= 1 && o.iters <= 1000 && (o.nbuf === null || (o.nbuf >= 1 && o.nbuf <= 64)), what);
	} else if (sub === 'map') {
		const o = v as ReturnType<typeof parseMapArgs>;
		assert.ok(Number.isInteger(o.np) && o.np >= 2 && o.np <= 4096, what);
		assert.ok(sizeOk(o.map.large, MAP_LARGE_LIMITS) && sizeOk(o.map.small, MAP_SMALL_LIMITS), what);
		assert.ok(o.map.iters >= 1 && o.map.iters <= 1000 && o.map.maxRanks >= 2, what);
	} else if (sub === 'guard') {
		const o = v as ReturnType<typeof parseGuardArgs>;
		assert.ok(['report', 'warn', 'fix'].includes(o.mode) && o.command.length > 0 && o.command[0] !== '', what);
		assert.ok(o.np === null || (Number.isInteger(o.np) && o.np >= 1 && o.np <= 4096), what);
		assert.deepEqual(o.command, argv.slice(argv.indexOf('--') + 1), what);
	}
}

function parse(sub: string, argv: string[]): unknown {
	switch (sub) {
		case 'repro': return parseReproArgs(argv);
		case 'map': return parseMapArgs(argv);
		case 'inspect': return parseInspectArgs(argv, '/tmp');
		case 'collect': return parseCollectArgs(argv);
		case 'guard': return parseGuardArgs(argv);
		default: return parseAnalyzeArgs(argv);
	}
}

describe('fuzz the CLI argument parsers', function () {
	this.timeout(60_000);
	/** Per subcommand: refused command lines (and whether the refusal was --help), for the main() check. */
	const refused: Record<string, Array<{ argv: string[]; help: boolean }>> = {};

	for (const sub of Object.keys(OPTIONS)) {
		it(`${sub}: 3000 random command lines give a result within the engine's limits or a usage error`, () => {
			let parsed = 0, usage = 0;
			refused[sub] = [];
			for (let i = 0; i < 3000; i++) {
				const argv = argvFor(sub);
				let v: unknown;
				try {
					v = parse(sub, argv);
				} catch (e) {
					if (!(e instanceof UsageError)) {
						assert.fail(`${sub} ${JSON.stringify(argv)} threw ${e instanceof Error ? `${e.constructor.name}: ${e.message}` : String(e)}`);
					}
					usage++;
					// main() refuses a NUL byte anywhere first (a real argv cannot hold one; an injected one can).
					refused[sub].push({ argv, help: e instanceof UsageError && e.message === '' && !argv.some(a => a.includes('\0')) });
					continue;
				}
				checkParsed(sub, argv, v);
				parsed++;
			}
			// Both outcomes occur, so the generator reaches past the first option and the checks above ran.
			assert.ok(parsed >= 30, `${sub}: only ${parsed} parsed`);
			assert.ok(usage >= 300, `${sub}: only ${usage} refused`);
		});
	}

	it('main() on 150 refused command lines per subcommand: exit 2 (guard: 125; 0 for --help), nothing on stdout but help, no process started', async () => {
		for (const sub of Object.keys(OPTIONS)) {
			for (const { argv, help } of (refused[sub] ?? []).slice(0, 150)) {
				const io = captureIo('/tmp');
				const { value: code, spawned } = await withSpawnSpy(() => main([sub, ...argv], io));
				const what = `${sub} ${JSON.stringify(argv)}: ${io.err.slice(0, 300)}`;
				assert.deepEqual(spawned, [], `${what} started processes`);
				if (help) { assert.equal(code, EXIT.ok, what); continue; }
				assert.equal(code, sub === 'guard' ? GUARD_EXIT.guardFailed : EXIT.usage, what);
				assert.equal(io.out, '', what);
				assert.match(io.err, /^gpumpi-doctor/, what);
			}
		}
	});
});
