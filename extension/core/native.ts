/**
 * The one place that finds the native binaries: the Node addon (gpumpi_addon.node) and the `gpumpi` engine CLI.
 * Candidates are tried in a fixed order, relative to the bundle (dist/ -> its parent) and to the source tree
 * (extension/core/ -> two levels up, for unbundled runs), and every path tried is reported.
 * No vscode import: plain mocha tests use it.
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import type { NativeAddon, ProbeResult } from '../shared/addonTypes';
import ENGINE_FLAVORS from '../shared/engineFlavors.json';

/** Which engine build: the default (mpicc on PATH) or one built against a named distro MPI. */
export type EngineFlavor = 'default' | 'openmpi' | 'mpich';

/** The addon probe's outcome: a result (`note`: what happened beside it, a crashed first process, a crash after printing), or why the addon could not be used. */
export type ProbeOutcome = { result: ProbeResult; note?: string } | { error: string; tried: string[] };

/** Where the engine is: an explicit path or a lookup by the mpirun's flavor (`findEngine`). */
export type EngineLocator = (flavor: EngineFlavor) => { path: string | null; tried: string[] };

/** Result of `loadAddon`. */
export interface AddonLoad {
	addon: NativeAddon | null;
	/** Every file tried, in order. */
	tried: string[];
	/** Why no addon was loaded (absent when `addon` is set). */
	error?: string;
}

/** Result of `findEngine`. */
export interface EngineLocation {
	path: string | null;
	/** Every file tried, in order. */
	tried: string[];
	/** Set when no build for this flavour was found and `path` is the default build (the `mpicc` on PATH) instead. */
	defaultInsteadOf?: EngineFlavor;
}

const PACKAGE_NAME = 'gpumpi-doctor';

/** Addon locations relative to a root, in order of preference. */
const ADDON_CANDIDATES = [
	['native', 'build', 'addon', 'Release', 'gpumpi_addon.node'],
	['native', 'build', 'addon', 'Debug', 'gpumpi_addon.node'],
	['prebuilds', `${process.platform}-${process.arch}`, 'gpumpi_addon.node'],
];

/** native/build/ folder of each engine flavour (the one table, shared with scripts/buildNative.mjs and ensure.mjs). */
const ENGINE_DIRS: Record<EngineFlavor, string> = {
	default: ENGINE_FLAVORS.default.dir,
	openmpi: ENGINE_FLAVORS.openmpi.dir,
	mpich: ENGINE_FLAVORS.mpich.dir,
};

/** How a flavour's engine is built: its folder under native/build/ and the MPI compiler wrapper (engineFlavors.json). */
export function engineBuildOf(flavor: EngineFlavor): { dir: string; mpicc: string } {
	return { dir: ENGINE_DIRS[flavor], mpicc: ENGINE_FLAVORS[flavor].mpicc };
}

function isOurPackageDir(dir: string): boolean {
	try {
		const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown };
		return pkg.name === PACKAGE_NAME;
	} catch {
		return false;
	}
}

function findUp(start: string): string | null {
	let dir = path.resolve(start);
	for (;;) {
		if (isOurPackageDir(dir)) { return dir; }
		const parent = path.dirname(dir);
		if (parent === dir) { return null; }
		dir = parent;
	}
}

/**
 * The extension's root folder (the one whose package.json is named "gpumpi-doctor"), searched upwards from this
 * module's folder and then from the working directory; null when neither is inside it.
 */
export function repoRoot(): string | null {
	return findUp(__dirname) ?? findUp(process.cwd());
}

/** Roots the candidates are joined to: bundle parent (dist/..), source tree (extension/core/../..), package root. */
export function candidateRoots(): string[] {
	const roots = [path.join(__dirname, '..'), path.join(__dirname, '..', '..')];
	const pkg = repoRoot();
	if (pkg) { roots.push(pkg); }
	return [...new Set(roots.map(r => path.resolve(r)))];
}

function isMissingModule(e: unknown): boolean {
	const code = (e as { code?: unknown } | null)?.code;
	return code === 'MODULE_NOT_FOUND' || code === 'ENOENT';
}

function isNativeAddon(m: unknown): m is NativeAddon {
	const o = m as Partial<Record<keyof NativeAddon, unknown>> | null;
	return !!o && typeof o.probe === 'function' && typeof o.version === 'function';
}

/**
 * Load the addon from the first candidate that exists: $GPUMPI_ADDON, then native/build/addon/{Release,Debug},
 * then prebuilds/<platform>-<arch>, each under every candidate root. A missing file is skipped; a file that exists
 * but fails to load (wrong architecture, missing symbol) stops the search with that error.
 */
/** The addon files loadAddon tries, in order ($GPUMPI_ADDON first). */
function addonCandidates(env: NodeJS.ProcessEnv): string[] {
	const files: string[] = [];
	const explicit = env.GPUMPI_ADDON;
	if (explicit) { files.push(path.resolve(explicit)); }
	for (const root of candidateRoots()) {
		for (const parts of ADDON_CANDIDATES) { files.push(path.join(root, ...parts)); }
	}
	return [...new Set(files)];
}

/** The first addon file that exists, without loading it (for probing in a child process), and every path tried. */
export function findAddonFile(env: NodeJS.ProcessEnv = process.env): { file: string | null; tried: string[] } {
	const tried: string[] = [];
	for (const file of addonCandidates(env)) {
		tried.push(file);
		if (fs.existsSync(file)) { return { file, tried }; }
	}
	return { file: null, tried };
}

export function loadAddon(env: NodeJS.ProcessEnv = process.env): AddonLoad {
	const files = addonCandidates(env);
	const tried: string[] = [];
	const nodeRequire = createRequire(__filename);
	for (const file of files) {
		tried.push(file);
		if (!fs.existsSync(file)) { continue; }
		try {
			const m: unknown = nodeRequire(file);
			if (!isNativeAddon(m)) {
				return { addon: null, tried, error: `${file} is not the GPU-MPI Doctor addon (no probe()/version())` };
			}
			return { addon: m, tried };
		} catch (e) {
			if (isMissingModule(e)) { continue; }
			return { addon: null, tried, error: `${file} failed to load: ${e instanceof Error ? e.message : String(e)}` };
		}
	}
	return {
		addon: null,
		tried,
		error: `gpumpi_addon.node not found (tried ${tried.length} paths); build it with 'npm run build:native'`,
	};
}

function isExecutableFile(file: string): boolean {
	try {
		if (!fs.statSync(file).isFile()) { return false; }
		fs.accessSync(file, fs.constants.X_OK);
		return true;
	} catch {
		return false;
	}
}

/**
 * Find the `gpumpi` engine: $GPUMPI_ENGINE first (any flavour), then native/build/engine[-flavor]/gpumpi under
 * every candidate root. Only executable regular files count.
 */
export function findEngine(flavor: EngineFlavor = 'default', env: NodeJS.ProcessEnv = process.env): EngineLocation {
	const files: string[] = [];
	if (env.GPUMPI_ENGINE) { files.push(path.resolve(env.GPUMPI_ENGINE)); }
	for (const root of candidateRoots()) { files.push(path.join(root, 'native', 'build', ENGINE_DIRS[flavor], 'gpumpi')); }
	const tried: string[] = [];
	for (const file of [...new Set(files)]) {
		tried.push(file);
		if (isExecutableFile(file)) { return { path: file, tried }; }
	}
	return { path: null, tried };
}

/** The engine built with this MPI flavour, else the default build (the `mpicc` on PATH); `tried` lists both searches. */
export function findEngineFor(flavor: EngineFlavor, env: NodeJS.ProcessEnv = process.env): EngineLocation {
	const own = findEngine(flavor, env);
	if (own.path || flavor === 'default') { return own; }
	const fallback = findEngine('default', env);
	return { path: fallback.path, tried: [...own.tried, ...fallback.tried], ...(fallback.path ? { defaultInsteadOf: flavor } : {}) };
}
