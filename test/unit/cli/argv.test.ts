/**
 * The one argv mechanism of the CLI (extension/cli/argv.ts) on a small table of its own: the getopt_long syntax, each
 * value kind's check and message, repetition, refusals (unknown option with the nearest name, missing value, bad value,
 * stray word, refused option), --help, and the help text made from the same table. The subcommands' own tables are
 * tested in optionTables.test.ts.
 */
import * as assert from 'node:assert/strict';
import {
	decimal, flag, helpText, integer, nameList, nearestOption, oneOf, option, optionLabel, orList, pair, parseArgv, repeatable, size, sizeList, text,
	type OptionTable,
} from '../../../extension/cli/argv';
import { UsageError } from '../../../extension/cli/io';
import { FALLBACK_SIZE_LIMITS, IPC_SIZE_LIMITS } from '../../../extension/shared/sizeText';

const TABLE = {
	json: flag('print JSON'),
	verbose: flag('say more', '-v'),
	np: option(integer(2, 64), 'ranks, 2..64'),
	timeout: option(decimal(1, 60), 'seconds, 1..60'),
	size: option(size(IPC_SIZE_LIMITS), 'a size'),
	sizes: option(sizeList(FALLBACK_SIZE_LIMITS), 'sizes'),
	memory: option(oneOf(['device', 'host'] as const), 'buffers'),
	mode: option(oneOf(['report', 'warn', 'fix'] as const), 'mode'),
	modes: option(nameList(['mpi', 'staged', 'host'] as const, 'mode'), 'modes'),
	out: option(text('FILE', { empty: 'a file name' }), 'output file'),
	dir: option(text('DIR', { check: v => v.startsWith('/') ? null : 'needs an absolute directory' }), 'a directory'),
	mca: repeatable(pair('K V', 'a name and a value (e.g. --mca pml ob1)'), 'MCA parameter, repeatable'),
	arg: repeatable(text('X'), 'launcher argument, repeatable'),
};

/** The UsageError message of parsing `argv` (fails when it parses). */
function refusal(argv: string[], table: OptionTable = TABLE, rules = {}): string {
	try {
		parseArgv(table, argv, rules);
	} catch (e) {
		assert.ok(e instanceof UsageError, `${JSON.stringify(argv)} threw ${String(e)}`);
		return e.message;
	}
	return assert.fail(`${JSON.stringify(argv)} was accepted`);
}

describe('argv mechanism: syntax', () => {
	it('--name VALUE and --name=VALUE; the value is the next word whatever it looks like', () => {
		const { values } = parseArgv(TABLE, ['--np', '4', '--out=-', '--arg', '--host', '--arg', '-N2', '--arg=--x=1', '--out', '--json']);
		assert.equal(values.np, 4);
		assert.equal(values.out, '--json', 'the last --out wins, and its value is the word after it');
		assert.deepEqual(values.arg, ['--host', '-N2', '--x=1']);
		assert.equal(values.json, undefined, '"--json" was a value here, not the flag');
	});

	it('flags take no value; a short alias is the same option', () => {
		assert.deepEqual(parseArgv(TABLE, ['-v', '--json']).values, { verbose: true, json: true });
		assert.equal(refusal(['--json=1']), '--json takes no value, got "--json=1"');
	});

	it('a pair takes two words; a repeatable option keeps every value in order, a single one the last', () => {
		const p = parseArgv(TABLE, ['--mca', 'pml', 'ob1', '--np', '2', '--mca=btl', 'tcp,self', '--np', '8']);
		assert.deepEqual(p.values.mca, [['pml', 'ob1'], ['btl', 'tcp,self']]);
		assert.equal(p.values.np, 8);
		assert.deepEqual([...p.given].sort(), ['mca', 'np']);
	});

	it('a missing value names the option and what it needs', () => {
		assert.equal(refusal(['--np']), '--np needs a value');
		assert.equal(refusal(['--mca', 'pml']), '--mca needs a name and a value (e.g. --mca pml ob1)');
		assert.equal(refusal(['--mca']), '--mca needs a name and a value (e.g. --mca pml ob1)');
	});

	it('an unknown option is named, with the known option it most likely meant', () => {
		assert.equal(refusal(['--bogus']), 'unknown option "--bogus"');
		assert.equal(refusal(['--memroy', 'host']), 'unknown option "--memroy" (did you mean --memory?)');
		assert.equal(refusal(['--JSON']), 'unknown option "--JSON" (did you mean --json?)');
		assert.equal(refusal(['-np', '4']), 'unknown option "-np" (did you mean --np?)', 'the mpirun habit');
		assert.equal(refusal(['--verbos']), 'unknown option "--verbos" (did you mean --verbose?)');
		assert.equal(refusal(['-q']), 'unknown option "-q"');
		assert.equal(refusal(['--x=1']), 'unknown option "--x"');
		assert.equal(nearestOption(TABLE, '--timeuot'), '--timeout');
		assert.equal(nearestOption(TABLE, '--tmo'), null, 'too far from anything');
	});

	it('--help and -h ask for the help (an empty UsageError), unless they are a value', () => {
		for (const argv of [['--help'], ['-h'], ['--np', '4', '--help'], ['--help=1']]) { assert.equal(refusal(argv), '', JSON.stringify(argv)); }
		assert.equal(parseArgv(TABLE, ['--out', '--help']).values.out, '--help');
	});

	it('words that are not options: none by default, up to max, the rest after --', () => {
		assert.equal(refusal(['stray']), 'unexpected argument "stray"');
		assert.equal(refusal(['-']), 'unexpected argument "-"');
		const p = parseArgv(TABLE, ['a', '--json', '--', '--np', 'b'], { positionals: { max: 3 } });
		assert.deepEqual(p.positionals, ['a', '--np', 'b']);
		assert.equal(p.values.json, true);
		assert.equal(refusal(['a', 'b'], TABLE, { positionals: { max: 1, unexpected: () => 'give exactly one directory' } }), 'give exactly one directory');
	});

	it('refused options say why (another form\'s option, a launcher option that belongs in the command)', () => {
		assert.equal(refusal(['--json', '--mca', 'pml', 'ob1'], TABLE, { refused: { '--mca': 'is not an option of guard' } }), '--mca is not an option of guard');
		assert.equal(refusal(['--engine=/x'], TABLE, { refused: { '--engine': 'is not taken here' } }), '--engine is not taken here');
	});
});

describe('argv mechanism: value kinds', () => {
	it('integer: digits only, within its range', () => {
		assert.equal(parseArgv(TABLE, ['--np', '64']).values.np, 64);
		for (const bad of ['1', '65', '-4', '+4', ' 4', '4 ', '4.0', '1e1', '0x10', 'NaN', '', '99999999999999999999']) {
			assert.equal(refusal(['--np', bad]), `--np needs an integer 2..64, got ${JSON.stringify(bad)}`, JSON.stringify(bad));
		}
	});

	it('decimal: a number with an optional fraction, within its range', () => {
		assert.equal(parseArgv(TABLE, ['--timeout', '2.5']).values.timeout, 2.5);
		for (const bad of ['0.5', '61', '1e1', '.5', '5.', 'Infinity', '-1']) { assert.equal(refusal(['--timeout', bad]), `--timeout needs a number 1..60, got ${JSON.stringify(bad)}`); }
	});

	it('size and size list: the engine\'s syntax and limits (shared/sizeText.ts), text and bytes kept', () => {
		assert.deepEqual(parseArgv(TABLE, ['--size', '64M']).values.size, { text: '64M', bytes: 64 << 20 });
		assert.equal(refusal(['--size', '2G']), '--size needs a multiple of 4 bytes from 4 to 1G (2G is not), got "2G"');
		assert.equal(refusal(['--size', '64m']), '--size needs a multiple of 4 bytes from 4 to 1G, like 64M, 1G or 4096, got "64m"');
		assert.equal(parseArgv(TABLE, ['--sizes', '1M..1G']).values.sizes, '1M..1G');
		assert.match(refusal(['--sizes', '1G..1M']), /^--sizes: the range 1G\.\.1M is empty.*; got "1G\.\.1M"$/);
	});

	it('one of a list: "a or b", "a, b or c"', () => {
		assert.equal(orList(['device', 'host']), 'device or host');
		assert.equal(parseArgv(TABLE, ['--memory', 'host']).values.memory, 'host');
		assert.equal(refusal(['--memory', 'gpu']), '--memory needs device or host, got "gpu"');
		assert.equal(refusal(['--mode', 'Fix']), '--mode needs report, warn or fix, got "Fix"');
	});

	it('name list: known names, duplicates once in the order given, no empty item', () => {
		assert.deepEqual(parseArgv(TABLE, ['--modes', 'host,mpi,host']).values.modes, ['host', 'mpi']);
		for (const bad of [',', 'mpi,', ',mpi', 'mpi,,host', '']) { assert.equal(refusal(['--modes', bad]), `--modes needs a comma-separated list of mpi, staged, host, got ${JSON.stringify(bad)}`); }
		assert.equal(refusal(['--modes', 'mpi,lib']), '--modes: unknown mode "lib" (known: mpi, staged, host)');
	});

	it('text: an empty value and a refused one say what is needed', () => {
		assert.equal(refusal(['--out', '']), '--out needs a file name');
		assert.equal(refusal(['--out=']), '--out needs a file name');
		assert.equal(refusal(['--dir', 'rel']), '--dir needs an absolute directory');
		assert.equal(parseArgv(TABLE, ['--dir', '/abs']).values.dir, '/abs');
	});
});

describe('argv mechanism: the help from the same table', () => {
	const help = helpText(TABLE, { usage: 'tool sub [options]', intro: 'Does a thing.', footer: 'Exit code: 0.' });
	const lines = help.split('\n');

	it('synopsis, intro, one entry per option in table order, footer', () => {
		assert.equal(lines[0], 'Usage: tool sub [options]');
		assert.equal(lines[1], 'Does a thing.');
		const at = Object.entries(TABLE).map(([k, o]) => lines.findIndex(l => l.startsWith(`  ${optionLabel(k, o)} `)));
		assert.ok(at.every((i, n) => i > 1 && (n === 0 || i > at[n - 1])), `entries at lines ${at.join(',')}`);
		for (const label of ['--verbose, -v', '--mca K V', '--memory device|host', '--modes LIST', '--mode report|warn|fix']) {
			assert.ok(lines.some(l => l.startsWith(`  ${label} `)), label);
		}
		assert.equal(lines[lines.length - 2], 'Exit code: 0.');
	});

	it('long help wraps at 120 columns under the help column; hard lines and their indentation are kept', () => {
		const long = helpText({
			a: flag(`${'word '.repeat(60)}end`),
			b: option(oneOf(['crash', 'hang', 'crash-fraction=F', 'wrong-fraction=F']), 'a label longer than the column'),
			c: flag('a list:\n  one    1\n  two    2'),
		}, { usage: 'x' }).split('\n');
		assert.ok(long.every(l => l.length <= 120), long.find(l => l.length > 120));
		assert.ok(long.filter(l => /word/.test(l)).length >= 3 && long.filter(l => /word/.test(l)).slice(1).every(l => l.startsWith(' '.repeat(25) + 'word')));
		const b = long.findIndex(l => l.startsWith('  --b '));
		assert.equal(long[b], '  --b crash|hang|crash-fraction=F|wrong-fraction=F');
		assert.equal(long[b + 1], `${' '.repeat(25)}a label longer than the column`);
		assert.deepEqual(long.slice(-4, -1), [`  --c${' '.repeat(20)}a list:`, `${' '.repeat(25)}  one    1`, `${' '.repeat(25)}  two    2`]);
	});
});
