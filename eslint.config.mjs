// ESLint: the import zones of README's layout table and the layers inside extension/core/, enforced (run by
// `node scripts/test.mjs typecheck`, so by `npm test` and CI), plus a few rules that only ever find mistakes. No style
// rules: formatting is not linted.
//   extension/shared/  imports only shared/ (no vscode, no node:*, no package): both sides and the webviews use it
//   extension/core/    Node only: never vscode, extension/cli/, extension/vscode/ or media/; inside it, the layers below
//   extension/cli/     never vscode or extension/vscode/
//   extension/vscode/  never extension/cli/ (the CLI is a front end of core, like the extension)
//   media/             browser code: only extension/shared/ and its own files
// no-restricted-imports sees `import`, `import type` and `export … from`; `patterns[].regex` is matched against the
// specifier as written (relative), so each zone's regexes are written for the folder depth of that zone. Core uses no
// `import()` (no-restricted-syntax), so nothing gets past them; test/unit/coreLayers.test.ts checks both, and that
// core has no import cycle.
import tseslint from 'typescript-eslint';

/** A restriction: `regex` on the import specifier, and what to say. */
const ban = (regex, message) => ({ regex, message });
const vscode = { name: 'vscode', message: 'only extension/vscode/ may import vscode' };
const anyPackage = (zone) => ban('^[^.]', `${zone} imports no package and no node:* module`);

/** The zone rules of extension/core/, part of every core layer's rule (a later config replaces a rule's options). */
const coreZone = [
	ban('^(\\.\\./)+(cli|vscode)(/|$)', 'extension/core/ never imports extension/cli/ or extension/vscode/: they are its front ends'),
	ban('^(\\.\\./)+media(/|$)', 'extension/core/ never imports media/ (webview code)'),
];

// The layers inside extension/core/ (README, "Layout"), lowest first. A layer imports only the layers it lists (and
// its own files); the use cases never import one another, and nothing imports coreApi.ts.
//   base         core/*.ts: proc, logger, host (the Host interface), fileWrite, activeRuns, runMarkers, native, facts
//   parsers/     tool output → facts, pure                                      base
//   launch/      specs, argv, runLaunch on a given Host, what a launch printed  base, parsers
//   rules/       facts → findings; params/: MCA parameter fixes                base, parsers
//   hosts/       LocalHost, SshHost, engine deployment, launch targets          base, parsers, launch
//   collect/     collectors the inspection and the guard share (a program's     base, parsers, launch, rules
//                link order, fi_info, the mpi4py probe)
//   use cases    the inspection (core/*.ts below), repro/, map/, guard/         all of the above
//   coreApi.ts   the facade the VS Code extension loads lazily                  anything
const CORE_BASE = ['proc', 'logger', 'host', 'fileWrite', 'activeRuns', 'runMarkers', 'native', 'facts'];
const CORE_INSPECTION = ['sysCollect', 'collect', 'analyze', 'inspect', 'inspectSettings', 'bundle', 'unreachable'];
const BELOW_USE_CASES = ['parsers', 'launch', 'rules', 'params', 'hosts', 'collect'];
/** A layer that is a folder of core: it may import the base files and `folders`. */
const folderLayer = (folder, folders, name = `${folder}/`) => ({ name, files: [`extension/core/${folder}/*.ts`], up: '\\.\\./', rootFiles: CORE_BASE, folders });
const coreLayers = [
	// Root files in no list are held to the inspection's rule (it comes first: the configs after it replace it).
	{ name: 'the inspection use case', files: ['extension/core/*.ts'], up: '\\./', rootFiles: [...CORE_BASE, ...CORE_INSPECTION], folders: BELOW_USE_CASES },
	{ name: 'base', files: CORE_BASE.map((f) => `extension/core/${f}.ts`), up: '\\./', rootFiles: CORE_BASE, folders: [] },
	folderLayer('parsers', []),
	folderLayer('launch', ['parsers']),
	folderLayer('rules', ['parsers']),
	folderLayer('params', ['parsers']),
	folderLayer('hosts', ['parsers', 'launch']),
	folderLayer('collect', ['parsers', 'launch', 'rules']),
	...['repro', 'map', 'guard'].map((u) => folderLayer(u, BELOW_USE_CASES, `the ${u} use case (${u}/)`)),
];

/** The two bans of a core layer: core root files it may not import (`./x` from the root, `../x` from a folder), and folders. */
function layerBans({ name, up, rootFiles, folders }) {
	const message = `core layer ${name} imports, inside extension/core/, only ${[`core/{${rootFiles.join(',')}}.ts`, ...folders.map((f) => `${f}/`)].join(', ')} and its own folder (eslint.config.mjs, README "Layout")`;
	return [
		ban(`^${up}(?!(${rootFiles.join('|')})$)[^./][^/]*$`, message),
		ban(folders.length ? `^${up}(?!(${folders.join('|')})/)[^./][^/]*/` : `^${up}[^./][^/]*/`, message),
	];
}

const coreConfigs = [
	...coreLayers.map((l) => ({ files: l.files, paths: [vscode], patterns: [...coreZone, ...layerBans(l)] })),
	// The facade: any core module, still none of the front ends.
	{ files: ['extension/core/coreApi.ts'], paths: [vscode], patterns: coreZone },
	// The regexes above are written per folder depth: core has one level of folders, and keeps it.
	{ files: ['extension/core/*/*/**/*.ts'], paths: [vscode], patterns: [...coreZone, ban('.', 'extension/core/ has one level of folders: the layer rules of eslint.config.mjs are written per depth')] },
];

const zones = [
	{
		files: ['extension/shared/**/*.ts'],
		patterns: [
			ban('^\\.\\./', 'extension/shared/ imports only extension/shared/ (it is the contract every side uses)'),
			anyPackage('extension/shared/ (no vscode, no DOM, no Node)'),
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
	// Imports are static in core, so that the layer rules above see every one of them.
	{ files: ['extension/core/**/*.ts'], rules: { 'no-restricted-syntax': ['error', { selector: 'ImportExpression', message: 'extension/core/ uses static imports only: the layer rules of eslint.config.mjs do not see import()' }] } },
	...[...zones, ...coreConfigs].map(({ files, ignores, paths = [], patterns }) => ({
		files,
		...(ignores ? { ignores } : {}),
		rules: { 'no-restricted-imports': ['error', { paths, patterns }] },
	})),
);
