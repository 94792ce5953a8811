/**
 * The layers inside extension/core/ (eslint.config.mjs, README "Layout") hold:
 * - the real ESLint with the repository's config reports an upward or sideways import in every layer and lets the
 *   allowed ones through (lintText: nothing is written), also when it is planted into a real file of the tree;
 * - every file of core/ is under a layer rule (a new root file falls under the inspection's, a deeper folder under a
 *   rule that refuses every import), and core uses no `import()`, which no-restricted-imports would not see;
 * - core/ has no import cycle, type-only imports included: the graph is built from the sources with the TypeScript
 *   parser (`import`, `import type`, `export … from`, `import()`, `import('…')` types, `import x = require()`), and the
 *   same builder finds a planted cycle through each of those kinds of edge.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

// eslint and typescript are loaded at run time (the test bundle keeps them external, as it does mocha).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ESLint } = require('eslint') as typeof import('eslint');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const ts = require('typescript') as typeof import('typescript');

const repo = path.resolve(__dirname, '../../..');
const CORE = path.join(repo, 'extension', 'core');

/** Every .ts file under `dir`, absolute. */
function tsFiles(dir: string): string[] {
	return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? tsFiles(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []);
}

/** The module specifiers of one source, of every kind of import, each with the kind it came from. */
function importSpecifiers(fileName: string, text: string): Array<{ spec: string; kind: string }> {
	const sf = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
	const out: Array<{ spec: string; kind: string }> = [];
	const visit = (n: import('typescript').Node): void => {
		if (ts.isImportDeclaration(n) && ts.isStringLiteral(n.moduleSpecifier)) {
			out.push({ spec: n.moduleSpecifier.text, kind: n.importClause?.isTypeOnly ? 'import type' : 'import' });
		} else if (ts.isExportDeclaration(n) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
			out.push({ spec: n.moduleSpecifier.text, kind: n.isTypeOnly ? 'export type from' : 'export from' });
		} else if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments.length > 0 && ts.isStringLiteralLike(n.arguments[0])) {
			out.push({ spec: n.arguments[0].text, kind: 'import()' });
		} else if (ts.isImportTypeNode(n) && ts.isLiteralTypeNode(n.argument) && ts.isStringLiteral(n.argument.literal)) {
			out.push({ spec: n.argument.literal.text, kind: "import('…') type" });
		} else if (ts.isImportEqualsDeclaration(n) && ts.isExternalModuleReference(n.moduleReference) && ts.isStringLiteral(n.moduleReference.expression)) {
			out.push({ spec: n.moduleReference.expression.text, kind: 'import = require()' });
		}
		ts.forEachChild(n, visit);
	};
	visit(sf);
	return out;
}

/** The import graph of `sources` (absolute path → text) among themselves: relative specifiers resolved as TypeScript does. */
function importGraph(sources: ReadonlyMap<string, string>): Map<string, string[]> {
	const graph = new Map<string, string[]>();
	for (const [file, text] of sources) {
		const deps = new Set<string>();
		for (const { spec } of importSpecifiers(file, text)) {
			if (!spec.startsWith('.')) { continue; }
			const base = path.resolve(path.dirname(file), spec);
			const hit = [base, `${base}.ts`, path.join(base, 'index.ts')].find((c) => sources.has(c));
			if (hit) { deps.add(hit); }
		}
		graph.set(file, [...deps]);
	}
	return graph;
}

/** The cycles of a graph: its strongly connected components of more than one file, or of one file importing itself (Tarjan). */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
	let next = 0;
	const index = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [], onStack = new Set<string>();
	const out: string[][] = [];
	const connect = (v: string): void => {
		index.set(v, next); low.set(v, next); next++;
		stack.push(v); onStack.add(v);
		for (const w of graph.get(v) ?? []) {
			if (!index.has(w)) { connect(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); } else if (onStack.has(w)) { low.set(v, Math.min(low.get(v)!, index.get(w)!)); }
		}
		if (low.get(v) === index.get(v)) {
			const scc: string[] = [];
			let w: string;
			do { w = stack.pop()!; onStack.delete(w); scc.push(w); } while (w !== v);
			if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) { out.push(scc.sort()); }
		}
	};
	for (const v of graph.keys()) { if (!index.has(v)) { connect(v); } }
	return out;
}

/** ESLint's messages for `source` linted as if it were `file` (repository-relative). */
async function lint(file: string, source: string): Promise<Array<{ ruleId: string | null; message: string; line: number }>> {
	const eslint = new ESLint({ cwd: repo });
	const [result] = await eslint.lintText(source, { filePath: path.join(repo, file) });
	return result.messages.map((m) => ({ ruleId: m.ruleId, message: m.message, line: m.line }));
}

/** The specifiers no-restricted-imports reports for `source` at `file`. */
async function restricted(file: string, source: string): Promise<string[]> {
	return (await lint(file, source)).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => /'([^']+)' import is restricted/.exec(m.message)?.[1] ?? m.message);
}

const imports = (specs: string[]): string => specs.map((s, i) => `import * as m${i} from '${s}';\nvoid m${i};\n`).join('');

describe('core layers (eslint.config.mjs) and no import cycle in extension/core/', function () {
	this.timeout(180_000);

	// One probe per layer: what it may not import (a higher layer, another use case, the facade) and what it may.
	const cases: Array<{ file: string; banned: string[]; allowed: string[] }> = [
		{ file: 'extension/core/logger.ts', banned: ['./parsers/text', './launch/launchSpec', './hosts/localHost', './collect', './repro/reproChoices', './coreApi'], allowed: ['./proc', './host', '../shared/report', 'node:fs'] },
		{ file: 'extension/core/parsers/layerProbe.ts', banned: ['../launch/launchSpec', '../hosts/localHost', '../rules/rule', '../sysCollect', '../map/mapAffinity', '../coreApi'], allowed: ['../facts', '../proc', './text', '../../shared/report'] },
		{ file: 'extension/core/launch/layerProbe.ts', banned: ['../hosts/localHost', '../repro/reproChoices', '../guard/guardRunner', '../map/mapRunner', '../rules/rule', '../collect', '../coreApi'], allowed: ['../host', '../proc', '../parsers/framedDocument', './launchSpec', '../../shared/reproSchema'] },
		{ file: 'extension/core/rules/layerProbe.ts', banned: ['../launch/launchSpec', '../hosts/localHost', '../params/fixParams', '../map/mapAffinity', '../analyze'], allowed: ['../facts', '../parsers/ompiInfo', './rule', '../../shared/report'] },
		{ file: 'extension/core/params/layerProbe.ts', banned: ['../rules/rule', '../launch/launchSpec', '../inspect'], allowed: ['../facts', '../parsers/text'] },
		{ file: 'extension/core/collect/layerProbe.ts', banned: ['../hosts/localHost', '../guard/guardRunner', '../repro/reproChoices', '../map/mapRunner', '../collect', '../inspect', '../params/fixParams', '../coreApi'], allowed: ['../host', '../proc', '../parsers/guardReport', '../launch/launchSpec', '../rules/index', './mpi4pyProbe'] },
		{ file: 'extension/core/hosts/layerProbe.ts', banned: ['../collect', '../inspect', '../repro/evidence', '../guard/guardRunner', '../map/mapRunner', '../rules/rule', '../coreApi'], allowed: ['../launch/runLaunch', '../parsers/linkOrder', '../native', '../host', './sshHost'] },
		{ file: 'extension/core/repro/layerProbe.ts', banned: ['../map/mapRunner', '../guard/guardMerge', '../collect', '../coreApi'], allowed: ['../launch/launcherOutput', '../hosts/localHost', '../parsers/transportLines', '../rules/sources', './ipcRunner'] },
		{ file: 'extension/core/map/layerProbe.ts', banned: ['../repro/reproChoices', '../guard/guardRunner', '../analyze', '../coreApi'], allowed: ['../launch/evidenceSwitches', '../hosts/localHost', '../parsers/rankAffinity', './mapRunner', '../../shared/mapSchema'] },
		{ file: 'extension/core/guard/layerProbe.ts', banned: ['../repro/reproFile', '../map/mapFile', '../inspect', '../collect', '../coreApi'], allowed: ['../launch/launcherOutput', '../rules/sources', '../hosts/launchTarget', '../collect/programLinks', './guardMerge', '../../../package.json'] },
		// A root file in no list: the inspection's rule.
		{ file: 'extension/core/layerProbe.ts', banned: ['./repro/reproChoices', './map/mapRunner', './guard/guardRunner', './coreApi'], allowed: ['./collect', './analyze', './proc', './launch/runLaunch', './hosts/localHost', './rules/index', './params/fixParams', './collect/libfabric'] },
		{ file: 'extension/core/coreApi.ts', banned: ['../cli/mapCli', '../vscode/commands'], allowed: ['./inspect', './repro/reproFile', './map/mapRunner', './guard/guardResult', './hosts/launchTarget'] },
		{ file: 'extension/core/map/deeper/layerProbe.ts', banned: ['./x', '../mapRunner', '../../launch/launchSpec'], allowed: [] },
	];
	for (const c of cases) {
		it(`${path.relative('extension/core', c.file)}: refuses ${c.banned.join(', ')}${c.allowed.length ? `; allows ${c.allowed.join(', ')}` : ''}`, async () => {
			const found = await restricted(c.file, imports([...c.banned, ...c.allowed]));
			assert.deepEqual([...new Set(found)].sort(), [...c.banned].sort());
		});
	}

	it('an upward import planted into a real file (launch/runLaunch.ts → hosts/, type-only) fails the lint, with the layer named', async () => {
		const file = 'extension/core/launch/runLaunch.ts';
		const real = fs.readFileSync(path.join(repo, file), 'utf8');
		assert.deepEqual(await lint(file, real), [], 'the real file lints clean');
		const planted = real.replace(/^(import [^\n]*\n)/m, `$1import type { SshHost } from '../hosts/sshHost';\n`);
		const found = await lint(file, planted);
		assert.equal(found.length, 1, JSON.stringify(found));
		assert.equal(found[0].ruleId, 'no-restricted-imports');
		assert.match(found[0].message, /'\.\.\/hosts\/sshHost' import is restricted.*core layer launch\/ imports, inside extension\/core\/, only core\/\{proc,.*\}\.ts, parsers\/ and its own folder/);
		// `export … from` is seen too.
		const reexport = await lint(file, `${real}export { openRemoteTarget } from '../hosts/remoteTarget';\n`);
		assert.deepEqual(reexport.map((m) => m.ruleId), ['no-restricted-imports']);
	});

	it('core uses no import(): it would get past the layer rules', async () => {
		const found = await lint('extension/core/launch/layerProbe.ts', "export async function f(): Promise<unknown> { return import('../hosts/localHost'); }\n");
		assert.deepEqual(found.map((m) => m.ruleId), ['no-restricted-syntax']);
	});

	it('every file of extension/core/ is under a layer rule', async () => {
		const eslint = new ESLint({ cwd: repo });
		const files = tsFiles(CORE);
		assert.ok(files.length > 50, `only ${files.length} files under ${CORE}`);
		const without: string[] = [];
		for (const f of files) {
			const config = await eslint.calculateConfigForFile(f) as { rules?: Record<string, unknown> };
			const rule = config.rules?.['no-restricted-imports'] as [unknown, { patterns?: Array<{ message?: string }> }] | undefined;
			const layered = rule?.[1]?.patterns?.some((p) => /^core layer /.test(p.message ?? '')) ?? false;
			if (!layered && path.relative(CORE, f) !== 'coreApi.ts') { without.push(path.relative(repo, f)); }
		}
		assert.deepEqual(without, []);
	});

	it('extension/core/ has no import cycle, type-only imports included', () => {
		const sources = new Map(tsFiles(CORE).map((f) => [f, fs.readFileSync(f, 'utf8')] as const));
		const graph = importGraph(sources);
		const edges = [...graph.values()].reduce((n, d) => n + d.length, 0);
		assert.ok(edges > 200, `only ${edges} import edges found among ${graph.size} files: the graph builder is broken`);
		assert.deepEqual(cycles(graph).map((c) => c.map((f) => path.relative(repo, f))), []);
	});

	it('the graph builder finds a planted cycle through each kind of import', () => {
		const dir = path.join(CORE, 'planted');
		const at = (name: string): string => path.join(dir, `${name}.ts`);
		const kinds: Array<[string, (to: string) => string]> = [
			['import', (to) => `import { x } from './${to}';\nvoid x;\n`],
			['import type', (to) => `import type { X } from './${to}';\nexport type Y = X;\n`],
			['export from', (to) => `export { x } from './${to}';\n`],
			['export type from', (to) => `export type { X } from './${to}';\n`],
			['import()', (to) => `export const load = (): Promise<unknown> => import('./${to}');\n`],
			["import('…') type", (to) => `export type T = import('./${to}').X;\n`],
			['import = require()', (to) => `import m = require('./${to}');\nvoid m;\n`],
		];
		for (const [kind, edge] of kinds) {
			// a → b by a plain import, b → a only by the kind under test; c is imported by a and closes no cycle.
			const a = "import { x } from './b';\nvoid x;\nimport { z } from './c';\nvoid z;\n";
			const sources = new Map([[at('a'), a], [at('b'), edge('a')], [at('c'), 'export const z = 1;\n']]);
			assert.deepEqual(importSpecifiers(at('b'), edge('a')).map((s) => s.kind), [kind], `${kind} is read as its own kind`);
			assert.deepEqual(cycles(importGraph(sources)), [[at('a'), at('b')]], `a cycle through ${kind}`);
			// Without b's edge there is none.
			assert.deepEqual(cycles(importGraph(new Map([...sources, [at('b'), 'export const x = 1;\n']]))), [], `no cycle without ${kind}`);
		}
		// A longer cycle through a folder's index.ts and a file importing itself.
		const ring = new Map([[at('a'), "export * from './sub';\n"], [path.join(dir, 'sub', 'index.ts'), "export * from '../c';\n"], [at('c'), "import type { A } from './a';\nexport type C = A;\n"], [at('self'), "export * from './self';\n"]]);
		assert.deepEqual(cycles(importGraph(ring)).map((c) => c.map((f) => path.relative(dir, f))).sort(), [['a.ts', 'c.ts', 'sub/index.ts'], ['self.ts']]);
	});
});
