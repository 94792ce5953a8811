/**
 * No include cycle in native/: the `#include "…"` graph of the C/C++ sources, read from the files themselves, has no
 * cycle between units. A unit is a file without its last extension (guardState.cc + guardState.hh = guard/guardState),
 * so a cycle is also two sources that lean on each other's headers (guardState.cc including guardStage.hh while
 * guardStage.hh includes guardState.hh: neither is below the other), not only headers that include each other; a
 * unit including its own header is no edge. An include resolves as the compiler does for quotes: the including
 * file's folder first, else the one file of the tree whose path ends with it (CMake's include folders are folders of
 * the tree); names not in the tree (mpi.h, napi.h) are outside it. The same checker runs over planted trees in a temp
 * folder first, so a broken checker cannot pass the real tree by finding nothing.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const repo = path.resolve(__dirname, '../../..');
const SOURCE = /\.(c|cc|cpp|h|hh|hpp|def)$/;

/** One `#include "…"` that resolved to a file of the tree. */
interface Include { from: string; line: number; to: string }

/** Source files under `root` (relative, '/'-separated), skipping build output. */
function sources(root: string, dir = ''): string[] {
	const out: string[] = [];
	for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
		const rel = dir ? `${dir}/${e.name}` : e.name;
		if (e.isDirectory()) { if (e.name !== 'build' && !e.name.startsWith('.')) { out.push(...sources(root, rel)); } } else if (SOURCE.test(e.name)) { out.push(rel); }
	}
	return out.sort();
}

/** The includes of every source under `root` that name a file of the tree; `ambiguous` lists names two files end with. */
function includes(root: string): { files: string[]; edges: Include[]; ambiguous: string[] } {
	const files = sources(root);
	const known = new Set(files);
	const edges: Include[] = [];
	const ambiguous: string[] = [];
	for (const from of files) {
		const lines = fs.readFileSync(path.join(root, from), 'utf8').split('\n');
		lines.forEach((text, i) => {
			const m = /^\s*#\s*include\s*"([^"]+)"/.exec(text);
			if (!m) { return; }
			const sibling = path.posix.normalize(path.posix.join(path.posix.dirname(from), m[1]));
			const matches = known.has(sibling) ? [sibling] : files.filter((f) => f === m[1] || f.endsWith(`/${m[1]}`));
			if (matches.length > 1) { ambiguous.push(`${from}:${i + 1} "${m[1]}" (${matches.join(', ')})`); }
			if (matches.length === 1) { edges.push({ from, line: i + 1, to: matches[0] }); }
		});
	}
	return { files, edges, ambiguous };
}

const unitOf = (file: string): string => file.replace(/\.[^./]+$/, '');

/**
 * The unit-level cycles of the tree under `root`: each strongly connected set of two or more units (Tarjan), written
 * as one cycle through it with the include lines that make each step ("a -> b (a.cc:3 includes b.hh) -> a (…)").
 */
function includeCycles(root: string): { cycles: string[]; edges: Include[]; ambiguous: string[] } {
	const { edges, ambiguous } = includes(root);
	const next = new Map<string, Map<string, Include>>();
	for (const e of edges) {
		const [a, b] = [unitOf(e.from), unitOf(e.to)];
		if (!next.has(a)) { next.set(a, new Map()); }
		if (!next.has(b)) { next.set(b, new Map()); }
		if (a !== b && !next.get(a)!.has(b)) { next.get(a)!.set(b, e); }
	}
	const index = new Map<string, number>();
	const low = new Map<string, number>();
	const stack: string[] = [];
	const onStack = new Set<string>();
	const sets: string[][] = [];
	const visit = (u: string): void => {
		index.set(u, index.size);
		low.set(u, index.get(u)!);
		stack.push(u);
		onStack.add(u);
		for (const v of next.get(u)!.keys()) {
			if (!index.has(v)) { visit(v); low.set(u, Math.min(low.get(u)!, low.get(v)!)); } else if (onStack.has(v)) { low.set(u, Math.min(low.get(u)!, index.get(v)!)); }
		}
		if (low.get(u) !== index.get(u)) { return; }
		const set: string[] = [];
		for (let v = ''; v !== u;) { v = stack.pop()!; onStack.delete(v); set.push(v); }
		if (set.length > 1) { sets.push(set.sort()); }
	};
	for (const u of [...next.keys()].sort()) { if (!index.has(u)) { visit(u); } }
	const cycles = sets.map((set) => {
		// a shortest way back to the set's first unit, inside the set (breadth first)
		const inSet = new Set(set);
		const start = set[0];
		const prev = new Map<string, string>();
		const queue = [start];
		let last = '';
		while (queue.length > 0 && !last) {
			const u = queue.shift()!;
			for (const v of [...next.get(u)!.keys()].sort()) {
				if (!inSet.has(v)) { continue; }
				if (v === start) { last = u; break; }
				if (!prev.has(v)) { prev.set(v, u); queue.push(v); }
			}
		}
		const chain = [start];
		for (let u = last; u !== start; u = prev.get(u)!) { chain.splice(1, 0, u); }
		chain.push(start);
		return chain.map((u, i) => {
			if (i === 0) { return u; }
			const e = next.get(chain[i - 1])!.get(u)!;
			return `-> ${u} (${e.from}:${e.line} includes ${e.to})`;
		}).join(' ');
	});
	return { cycles, edges, ambiguous };
}

/** Writes `files` (relative path -> text) under a new temp folder; returns the folder. */
function plant(files: Record<string, string>): string {
	const root = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-includes-'));
	for (const [rel, text] of Object.entries(files)) {
		fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
		fs.writeFileSync(path.join(root, rel), text);
	}
	return root;
}

describe('include cycles in native/ (#include "…" graph between units)', () => {
	const planted: string[] = [];
	after(() => { for (const p of planted) { fs.rmSync(p, { recursive: true, force: true }); } });
	const tree = (files: Record<string, string>): string => { const root = plant(files); planted.push(root); return root; };

	it('the checker finds a planted cycle between two units, with the include lines that make it', () => {
		// state.cc uses stage.hh, stage.hh uses state.hh: no header includes itself, yet neither unit is below the other
		const root = tree({
			'g/state.hh': '#pragma once\n',
			'g/state.cc': '#include "state.hh"\n#include "stage.hh"\n',
			'g/stage.hh': '#pragma once\n#include "state.hh"\n',
			'g/stage.cc': '#include "stage.hh"\n',
			'g/report.cc': '#include "stage.hh"\n#include "state.hh"\n',
		});
		const r = includeCycles(root);
		assert.deepEqual(r.cycles, ['g/stage -> g/state (g/stage.hh:2 includes g/state.hh) -> g/stage (g/state.cc:2 includes g/stage.hh)']);
	});

	it('the checker finds a cycle of three headers across folders (resolved by the folder of the tree that has them)', () => {
		const root = tree({
			'a/x.hh': '#pragma once\n// #include "z.hh" is a comment, not an include\n#include "y.hh"\n',
			'b/y.hh': '#pragma once\n#include <vector>\n#include "z.hh"\n',
			'c/z.hh': '#pragma once\n  #  include "x.hh"\n#include "mpi.h"\n',
		});
		const r = includeCycles(root);
		assert.deepEqual(r.cycles, ['a/x -> b/y (a/x.hh:3 includes b/y.hh) -> c/z (b/y.hh:3 includes c/z.hh) -> a/x (c/z.hh:2 includes a/x.hh)']);
		assert.equal(r.edges.length, 3, 'mpi.h and <vector> are outside the tree');
	});

	it('the checker passes a layered tree: a unit including its own header, shared headers, one header below another', () => {
		const root = tree({
			'common/json.hh': '#pragma once\n',
			'g/state.hh': '#pragma once\n#include "json.hh"\n#include "calls.def"\n',
			'g/calls.def': 'CALL(Send)\n',
			'g/state.cc': '#include "state.hh"\n#include "calls.def"\n',
			'g/stage.hh': '#pragma once\n#include "state.hh"\n',
			'g/stage.cc': '#include "stage.hh"\n#include "state.hh"\n',
			'g/init.cc': '#include "stage.hh"\n#include "state.hh"\n',
		});
		const r = includeCycles(root);
		assert.deepEqual(r.cycles, []);
		assert.equal(r.edges.length, 9);
	});

	it('an include two files of the tree end with is reported, not guessed', () => {
		const root = tree({ 'a/util.hh': '', 'b/util.hh': '', 'c/main.cc': '#include "util.hh"\n' });
		assert.deepEqual(includeCycles(root).ambiguous, ['c/main.cc:1 "util.hh" (a/util.hh, b/util.hh)']);
	});

	it('native/guard/ has no include cycle (the lifecycle on top of state and STAGE)', () => {
		const r = includeCycles(path.join(repo, 'native', 'guard'));
		assert.deepEqual(r.ambiguous, []);
		assert.ok(r.edges.some((e) => e.from === 'guardStage.hh' && e.to === 'guardState.hh'), 'the guard\'s includes were not read');
		assert.deepEqual(r.cycles, []);
	});

	it('native/ as a whole has no include cycle (engine, library, guard, CLI, addon)', () => {
		const r = includeCycles(path.join(repo, 'native'));
		assert.deepEqual(r.ambiguous, []);
		assert.ok(r.edges.some((e) => e.from === 'engine/reproCommon.hh' && e.to === 'common/cudaDriver.hh'), 'includes across folders were not resolved');
		assert.ok(r.edges.length > 100, `only ${r.edges.length} includes read`);
		assert.deepEqual(r.cycles, []);
	});
});
