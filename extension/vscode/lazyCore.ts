/**
 * The heavy core (extension/core/coreApi.ts), loaded on first use: from dist/core.js next to dist/extension.js when
 * bundled (scripts/build.mjs builds it as its own entry and keeps it external to the extension bundle), so that
 * activation evaluates only the VS Code side. The first command pays the load once (a few ms).
 */
import type * as CoreApi from '../core/coreApi';

let loaded: typeof CoreApi | undefined;
const onLoad: Array<(c: typeof CoreApi) => void> = [];

/** The core module; loads it on the first call. */
export function core(): typeof CoreApi {
	if (loaded) { return loaded; }
	// A plain require of a path the bundler leaves alone ('./core.js' is external in the extension build): loaded on
	// the first command, not at activation, so an ES import would defeat it.
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const c = require('./core.js') as typeof CoreApi;
	loaded = c;
	for (const f of onLoad.splice(0)) { f(c); }
	return c;
}

/**
 * Run `f` with the core once it is loaded (at once if it is). For state that must live in the core bundle's own
 * modules, e.g. proc.ts's session recorder: the extension bundle has its own copy of any core module it imports.
 */
export function whenCoreLoaded(f: (c: typeof CoreApi) => void): void {
	if (loaded) { f(loaded); } else { onLoad.push(f); }
}
