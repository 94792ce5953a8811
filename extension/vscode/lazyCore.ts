/**
 * The heavy core (extension/core/coreApi.ts), loaded on first use: from dist/core.js next to dist/extension.js when
 * bundled (scripts/build.mjs builds it as its own entry and keeps it external to the extension bundle), so that
 * activation evaluates only the VS Code side. The first command pays the load once (a few ms).
 */
import type * as CoreApi from '../core/coreApi';

let loaded: typeof CoreApi | undefined;

/** The core module; loads it on the first call. */
export function core(): typeof CoreApi {
	// A plain require of a path the bundler leaves alone ('./core.js' is external in the extension build): loaded on
	// the first command, not at activation, so an ES import would defeat it.
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	loaded ??= require('./core.js') as typeof CoreApi;
	return loaded;
}
