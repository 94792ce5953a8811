/**
 * Functions that mixed several jobs were split into named steps (issue 34); this keeps them split. Every function in
 * the files below (declarations, methods, constructors, accessors, arrow functions and function expressions, nested
 * ones included in their parent's length) is measured with the TypeScript compiler's own parser, from the line its
 * declaration starts on to the line it ends on, and none may be longer than MAX_LINES.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as TS from 'typescript';

// typescript is loaded at run time (the test bundle keeps it external, as it does eslint).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const ts = require('typescript') as typeof TS;

const repo = path.resolve(__dirname, '../../..');

const MAX_LINES = 80;

/** The files whose long functions issue 34 named (mergeGuardReports, execute, activate, bugReportMarkdown, drawGraph). */
const FILES = [
	'extension/core/guard/guardMerge.ts',
	'extension/core/proc.ts',
	'extension/vscode/extension.ts',
	'extension/core/repro/bugReport.ts',
	'media/map/main.ts',
];

interface FunctionSpan { name: string; line: number; lines: number }

/** Every function-like node with a body in `text`, with its first line and its length in lines. */
function functionSpans(fileName: string, text: string): FunctionSpan[] {
	const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
	const spans: FunctionSpan[] = [];
	const lineOf = (pos: number): number => source.getLineAndCharacterOfPosition(pos).line + 1;
	const visit = (node: TS.Node): void => {
		if (ts.isFunctionLike(node) && 'body' in node && node.body) {
			const first = lineOf(node.getStart(source));
			spans.push({ name: nameOf(node, source), line: first, lines: lineOf(node.getEnd()) - first + 1 });
		}
		ts.forEachChild(node, visit);
	};
	visit(source);
	return spans;
}

/** The function's own name, else the name it is assigned to ("const f = () => …", "{ f: () => … }"), else "<anonymous>". */
function nameOf(node: TS.SignatureDeclaration, source: TS.SourceFile): string {
	if (node.name) { return node.name.getText(source); }
	const parent = node.parent;
	if ((ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) && parent.name) {
		return parent.name.getText(source);
	}
	return ts.isConstructorDeclaration(node) ? 'constructor' : '<anonymous>';
}

describe(`function length (at most ${MAX_LINES} lines, TypeScript's parser)`, () => {
	it('measures what it should: a planted long function, a nested one and an arrow are found with their lengths', () => {
		const body = (n: number): string => Array.from({ length: n }, (_, i) => `\tconst v${i} = ${i};`).join('\n');
		const text = `export function long(): void {\n${body(85)}\n}\nconst short = (): number => {\n\treturn 1;\n};\nclass C {\n\tm(): void {\n\t\tfunction inner(): void {\n${body(3)}\n\t\t}\n\t\tinner();\n\t}\n}\n`;
		const spans = functionSpans('planted.ts', text);
		assert.deepEqual(spans.map(s => [s.name, s.line, s.lines]), [['long', 1, 87], ['short', 88, 3], ['m', 92, 8], ['inner', 93, 5]]);
		assert.deepEqual(spans.filter(s => s.lines > MAX_LINES).map(s => s.name), ['long']);
	});

	for (const file of FILES) {
		it(`${file}: no function over ${MAX_LINES} lines`, () => {
			const spans = functionSpans(file, fs.readFileSync(path.join(repo, file), 'utf8'));
			assert.ok(spans.length > 3, `${file}: only ${spans.length} functions found`);
			const over = spans.filter(s => s.lines > MAX_LINES).map(s => `${s.name} (line ${s.line}): ${s.lines} lines`);
			assert.deepEqual(over, [], `${file}: split these into named steps`);
		});
	}
});
