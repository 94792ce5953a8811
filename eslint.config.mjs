// ESLint: the import zones of README's layout table, enforced (run by `node scripts/test.mjs typecheck`, so by
// `npm test` and CI), plus a few rules that only ever find mistakes. No style rules: formatting is not linted.
//   extension/shared/  imports only shared/ (no vscode, no node:*, no package): both sides and the webviews use it
//   extension/core/    Node only: never vscode, extension/cli/, extension/vscode/ or media/
//   extension/cli/     never vscode or extension/vscode/
//   extension/vscode/  never extension/cli/ (the CLI is a front end of core, like the extension)
//   media/             browser code: only extension/shared/ and its own files
// no-restricted-imports sees `import`, `import type` and `export … from`; `patterns[].regex` is matched against the
// specifier as written (relative), so each zone's regexes are written for the folder depth of that zone.
import tseslint from 'typescript-eslint';

/** A restriction: `regex` on the import specifier, and what to say. */
const ban = (regex, message) => ({ regex, message });
const vscode = { name: 'vscode', message: 'only extension/vscode/ may import vscode' };
const anyPackage = (zone) => ban('^[^.]', `${zone} imports no package and no node:* module`);

const zones = [
	{
		files: ['extension/shared/**/*.ts'],
		patterns: [
			ban('^\\.\\./', 'extension/shared/ imports only extension/shared/ (it is the contract every side uses)'),
			anyPackage('extension/shared/ (no vscode, no DOM, no Node)'),
		],
	},
	{
		files: ['extension/core/**/*.ts'],
		paths: [vscode],
		patterns: [
			ban('^(\\.\\./)+(cli|vscode)(/|$)', 'extension/core/ never imports extension/cli/ or extension/vscode/: they are its front ends'),
			ban('^(\\.\\./)+media(/|$)', 'extension/core/ never imports media/ (webview code)'),
		],
	},
	{
		files: ['extension/cli/**/*.ts'],
		paths: [vscode],
		patterns: [ban('^(\\.\\./)+vscode(/|$)', 'extension/cli/ never imports extension/vscode/')],
	},
	{
		files: ['extension/vscode/**/*.ts'],
		patterns: [ban('^(\\.\\./)+cli(/|$)', 'extension/vscode/ never imports extension/cli/: move what both need into extension/core/')],
	},
	{
		files: ['media/**/*.ts'],
		patterns: [
			ban('^\\.\\./\\.\\./(?!extension/shared/)', 'media/ imports only extension/shared/ and its own files'),
			ban('^(\\.\\./){3,}', 'media/ imports only extension/shared/ and its own files'),
			anyPackage('media/ (browser code)'),
		],
	},
];

export default tseslint.config(
	{ ignores: ['dist/**', 'node_modules/**', 'native/**', '.test-work/**', '.vscode-test/**'] },
	{
		files: ['**/*.ts'],
		languageOptions: { parser: tseslint.parser },
		plugins: { '@typescript-eslint': tseslint.plugin },
		// The tree's few `eslint-disable no-control-regex` comments mark deliberate control characters; that rule is not
		// on here (it would flag the same on purpose elsewhere), so do not report those comments as unused.
		linterOptions: { reportUnusedDisableDirectives: 'off' },
		rules: {
			// Mistakes, never style.
			'no-debugger': 'error',
			'no-dupe-keys': 'error',
			'no-duplicate-case': 'error',
			'no-self-assign': 'error',
			'no-unsafe-finally': 'error',
			'no-unreachable': 'error',
			'no-cond-assign': ['error', 'except-parens'],
			'no-empty-pattern': 'error',
			'no-sparse-arrays': 'error',
			'use-isnan': 'error',
			'valid-typeof': 'error',
			'@typescript-eslint/no-duplicate-enum-values': 'error',
			'@typescript-eslint/no-require-imports': 'error',
		},
	},
	// The host never writes to the console: extension/core/logger.ts and the log channel carry everything.
	{ files: ['extension/vscode/**/*.ts', 'extension/core/**/*.ts'], rules: { 'no-console': 'error' } },
	...zones.map(({ files, ignores, paths = [], patterns }) => ({
		files,
		...(ignores ? { ignores } : {}),
		rules: { 'no-restricted-imports': ['error', { paths, patterns }] },
	})),
);
