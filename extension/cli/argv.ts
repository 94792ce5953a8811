/**
 * The one command-line mechanism of every `gpumpi-doctor` subcommand: a table of options, each with its value kind (the
 * check and conversion) and its help, from which both the parser and the `--help` text are made, so the two cannot
 * drift apart. Options that several subcommands take are declared once (launchArgs.ts) and put into their tables.
 *
 * Syntax, getopt_long's (what mpirun and srun users know): `--name VALUE` or `--name=VALUE`; the value is the next word
 * whatever it looks like (`--srun-arg -N2`, `--launcher-arg --host`), so a value is never mistaken for an option; `--mca
 * K V` takes two words; a flag takes none (`--json=1` is refused); `-h` / `--help` prints the help; `--` ends the
 * options. A single-valued option given twice keeps the last value (as getopt does); a repeatable one keeps every value
 * in order. Every refusal is a UsageError that names the option and the accepted form: an unknown option (with the
 * nearest known name), a missing value, a bad value, a word that is not an option where none is taken.
 */
import { checkSizeListText, checkSizeText, type SizeLimits } from '../shared/sizeText';
import { shown, UsageError } from './io';

/** How an option reads its value: how many words, the placeholder shown in the help, and the check. */
export interface Kind<T> {
	/** The value's placeholder in the help ("N", "device|host", "K V"); "" for a flag. */
	readonly metavar: string;
	/** Words the option takes after its name: 0 (a flag), 1, or 2 (`--mca K V`). */
	readonly arity: 0 | 1 | 2;
	/** What the error says the option needs when its words are missing (default "a value"). */
	readonly needs?: string;
	/** The checked value of `words` (arity of them); throws UsageError naming `option` (e.g. "--np") otherwise. */
	parse(words: readonly string[], option: string): T;
}

/** One option of a table: its kind, its help text, an optional one-letter alias, whether it repeats. */
export interface OptionSpec<T = unknown, R extends boolean = boolean> {
	readonly kind: Kind<T>;
	/** Help text: wrapped to the terminal width of the help; "\n" starts a new line, leading spaces are kept. */
	readonly help: string;
	/** A short alias ("-v"). */
	readonly short?: string;
	readonly repeatable: R;
}

/** A subcommand's options, keyed by long name without the dashes, in help order. */
export type OptionTable = Readonly<Record<string, OptionSpec>>;

/** The parsed values of a table: each given option's value (every value, in order, for a repeatable one). */
export type OptionValues<O extends OptionTable> = {
	-readonly [K in keyof O]?: O[K] extends OptionSpec<infer T, infer R> ? (R extends true ? T[] : T) : never;
};

/** A flag (no value): true when given. */
export function flag(help: string, short?: string): OptionSpec<true, false> {
	return { kind: FLAG, help, repeatable: false, ...(short ? { short } : {}) };
}

/** An option with one value (the last one given wins). */
export function option<T>(kind: Kind<T>, help: string, short?: string): OptionSpec<T, false> {
	return { kind, help, repeatable: false, ...(short ? { short } : {}) };
}

/** An option that may be given any number of times; its values in the order given. */
export function repeatable<T>(kind: Kind<T>, help: string): OptionSpec<T, true> {
	return { kind, help, repeatable: true };
}

/** The same option (kind, check, repetition) with another help text, for a subcommand where it means more. */
export function withHelp<T, R extends boolean>(spec: OptionSpec<T, R>, help: string): OptionSpec<T, R> {
	return { ...spec, help };
}

// ---- value kinds ----

const FLAG: Kind<true> = { metavar: '', arity: 0, parse: () => true };

/**
 * Any text. `empty`: what the option needs, for an empty value ("a file name" → "--out needs a file name"); `check`:
 * why a value is refused, as the rest of the sentence after the option's name, or null when it is fine.
 */
export function text(metavar: string, opts: { empty?: string; check?: (v: string) => string | null } = {}): Kind<string> {
	return {
		metavar, arity: 1,
		parse([v], option) {
			if (v === '' && opts.empty) { throw new UsageError(`${option} needs ${opts.empty}`); }
			const why = opts.check?.(v) ?? null;
			if (why !== null) { throw new UsageError(`${option} ${why}`); }
			return v;
		},
	};
}

/** A decimal integer in lo..hi (no sign, no exponent, no spaces). */
export function integer(lo: number, hi: number, metavar = 'N'): Kind<number> {
	return {
		metavar, arity: 1,
		parse([v], option) {
			const n = Number(v);
			if (!/^\d{1,16}$/.test(v) || n < lo || n > hi) { throw new UsageError(`${option} needs an integer ${lo}..${hi}, got ${shown(v)}`); }
			return n;
		},
	};
}

/** A decimal number (fraction allowed) in lo..hi. */
export function decimal(lo: number, hi: number, metavar = 'S'): Kind<number> {
	return {
		metavar, arity: 1,
		parse([v], option) {
			const n = Number(v);
			if (!/^\d{1,16}(\.\d{1,9})?$/.test(v) || n < lo || n > hi) { throw new UsageError(`${option} needs a number ${lo}..${hi}, got ${shown(v)}`); }
			return n;
		},
	};
}

/** One size in the engine's syntax (shared/sizeText.ts: "4096", "64K", "64M", "1G") within `limits`. */
export function size(limits: SizeLimits, metavar = 'S'): Kind<{ text: string; bytes: number }> {
	return {
		metavar, arity: 1,
		parse([v], option) {
			const n = checkSizeText(v, limits);
			if (typeof n === 'string') { throw new UsageError(`${option} needs ${n}, got ${shown(v)}`); }
			return { text: v, bytes: n };
		},
	};
}

/** Sizes as a range "1M..1G" (×4 steps) or a list "1M,64M", each within `limits`; the text, checked. */
export function sizeList(limits: SizeLimits, metavar = 'S'): Kind<string> {
	return {
		metavar, arity: 1,
		parse([v], option) {
			const r = checkSizeListText(v, limits);
			if (typeof r === 'string') { throw new UsageError(`${option}: ${r}; got ${shown(v)}`); }
			return v;
		},
	};
}

/** "a or b", "a, b or c". */
export function orList(values: readonly string[]): string {
	return values.length <= 1 ? values.join('') : `${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
}

/** One of `values`. */
export function oneOf<V extends string>(values: readonly V[]): Kind<V> {
	return {
		metavar: values.join('|'), arity: 1,
		parse([v], option) {
			if (!(values as readonly string[]).includes(v)) { throw new UsageError(`${option} needs ${orList(values)}, got ${shown(v)}`); }
			return v as V;
		},
	};
}

/** A comma-separated list of names from `known` (`noun`: what one is called), duplicates dropped, in the order given. */
export function nameList<V extends string>(known: readonly V[], noun: string, metavar = 'LIST'): Kind<V[]> {
	return {
		metavar, arity: 1,
		parse([v], option) {
			const items = v.split(',');
			if (items.some(x => x === '')) { throw new UsageError(`${option} needs a comma-separated list of ${known.join(', ')}, got ${shown(v)}`); }
			for (const x of items) {
				if (!(known as readonly string[]).includes(x)) { throw new UsageError(`${option}: unknown ${noun} ${shown(x)} (known: ${known.join(', ')})`); }
			}
			return [...new Set(items)] as V[];
		},
	};
}

/** Two words (`--mca K V`); `needs` says what they are when either is missing. */
export function pair(metavar: string, needs: string): Kind<[string, string]> {
	return { metavar, arity: 2, needs, parse: ([k, v]) => [k, v] };
}

// ---- the parser ----

/** What a subcommand accepts besides its options. */
export interface ParseRules {
	/** Words that are not options (default none); `unexpected` gives the message for one too many. */
	positionals?: { max: number; unexpected?: (word: string) => string };
	/** Options refused with a reason (another form's options; launcher options that belong in the user's command). */
	refused?: Readonly<Record<string, string>>;
}

/** The result of parseArgv. */
export interface ParsedArgv<O extends OptionTable> {
	values: OptionValues<O>;
	positionals: string[];
	/** The options given (long names without dashes). */
	given: ReadonlySet<keyof O & string>;
}

/** The table's long name for an argv word that names an option ("--np", "-v"), or null. */
function lookup(table: OptionTable, word: string): string | null {
	if (word.startsWith('--')) { return Object.hasOwn(table, word.slice(2)) ? word.slice(2) : null; }
	return Object.keys(table).find(k => table[k].short === word) ?? null;
}

/** Edit distance with adjacent transpositions (optimal string alignment), for "did you mean". */
function distance(a: string, b: string): number {
	const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
	for (let i = 1; i <= a.length; i++) {
		for (let j = 1; j <= b.length; j++) {
			d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
			if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) { d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1); }
		}
	}
	return d[a.length][b.length];
}

/** The known option nearest to an unknown one (a typo, a case slip), if one is near enough to be meant. */
export function nearestOption(table: OptionTable, word: string): string | null {
	const name = word.replace(/^-+/, '').toLowerCase();
	if (name.length < 2) { return null; }
	let best: string | null = null;
	let bestD = Infinity;
	for (const k of Object.keys(table)) {
		const d = distance(name, k);
		if (d < bestD) { best = k; bestD = d; }
	}
	return best !== null && bestD <= Math.min(2, Math.floor(best.length / 3)) ? `--${best}` : null;
}

/**
 * Parse `argv` against `table` (see the file header for the syntax). Throws UsageError with an empty message for
 * `-h` / `--help`, and with the reason for anything refused. Pure.
 */
export function parseArgv<O extends OptionTable>(table: O, argv: readonly string[], rules: ParseRules = {}): ParsedArgv<O> {
	const values: Record<string, unknown> = {};
	const positionals: string[] = [];
	const given = new Set<string>();
	const max = rules.positionals?.max ?? 0;
	const positional = (w: string): void => {
		if (positionals.length >= max) { throw new UsageError(rules.positionals?.unexpected?.(w) ?? `unexpected argument ${shown(w)}`); }
		positionals.push(w);
	};
	for (let i = 0; i < argv.length; i++) {
		const word = argv[i];
		if (word === '--') { argv.slice(i + 1).forEach(positional); break; }
		if (word.length < 2 || !word.startsWith('-')) { positional(word); continue; }
		const eq = word.startsWith('--') ? word.indexOf('=') : -1;
		const head = eq > 0 ? word.slice(0, eq) : word;
		const name = lookup(table, head);
		if (name === null && (head === '--help' || head === '-h')) { throw new UsageError(''); }
		const refused = rules.refused?.[head];
		if (refused !== undefined) { throw new UsageError(`${head} ${refused}`); }
		if (name === null) {
			const near = nearestOption(table, head);
			throw new UsageError(`unknown option ${shown(head)}${near ? ` (did you mean ${near}?)` : ''}`);
		}
		const spec = table[name];
		const option = `--${name}`;
		const words: string[] = [];
		if (eq > 0) {
			if (spec.kind.arity === 0) { throw new UsageError(`${option} takes no value, got ${shown(word)}`); }
			words.push(word.slice(eq + 1));
		}
		while (words.length < spec.kind.arity) {
			if (i + 1 >= argv.length) { throw new UsageError(`${option} needs ${spec.kind.needs ?? 'a value'}`); }
			words.push(argv[++i]);
		}
		const v = spec.kind.parse(words, option);
		values[name] = spec.repeatable ? [...(values[name] as unknown[] | undefined ?? []), v] : v;
		given.add(name);
	}
	return { values: values as OptionValues<O>, positionals, given: given as Set<keyof O & string> };
}

// ---- the help ----

/** What a subcommand's help says around its options. */
export interface HelpSpec {
	/** The synopsis after "Usage: " (may span lines). */
	usage: string;
	/** Text between the synopsis and the options. */
	intro?: string;
	/** Text after the options (exit codes, notes). */
	footer?: string;
}

/** The help's width and the column where option help starts. */
const WIDTH = 120;
const COLUMN = 25;

/** The lines of `text` that start at column `indent`: each line that does not fit in WIDTH wrapped at spaces (its leading spaces kept). */
function wrap(text: string, indent: number): string[] {
	const out: string[] = [];
	for (const hard of text.split('\n')) {
		if (indent + hard.length <= WIDTH) { out.push(hard); continue; }
		const lead = /^ */.exec(hard)![0];
		let line = '';
		for (const w of hard.slice(lead.length).split(/ +/)) {
			if (line !== '' && indent + lead.length + line.length + 1 + w.length > WIDTH) { out.push(lead + line); line = w; } else { line = line === '' ? w : `${line} ${w}`; }
		}
		out.push(lead + line);
	}
	return out;
}

/** The name column of one option: "--np N", "--verbose, -v", "--mca K V". */
export function optionLabel(name: string, spec: OptionSpec): string {
	return `--${name}${spec.short ? `, ${spec.short}` : ''}${spec.kind.metavar ? ` ${spec.kind.metavar}` : ''}`;
}

/** The `--help` text of a table: the synopsis, the intro, one entry per option in table order, the footer. */
export function helpText(table: OptionTable, spec: HelpSpec): string {
	const out: string[] = [`Usage: ${spec.usage}`];
	if (spec.intro) { out.push(...wrap(spec.intro, 0)); }
	const pad = ' '.repeat(COLUMN);
	for (const [name, o] of Object.entries(table)) {
		const label = `  ${optionLabel(name, o)}`;
		const lines = wrap(o.help, COLUMN);
		if (label.length < COLUMN) {
			out.push(label.padEnd(COLUMN) + lines[0], ...lines.slice(1).map(l => pad + l));
		} else {
			out.push(label, ...lines.map(l => pad + l));
		}
	}
	if (spec.footer) { out.push(...wrap(spec.footer, 0)); }
	return out.join('\n') + '\n';
}
