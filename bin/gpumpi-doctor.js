#!/usr/bin/env node
// gpumpi-doctor: headless GPU-MPI Doctor. The CLI itself is bundled into dist/cli.js by `npm run build`.
'use strict';
let cli;
try {
	cli = require('../dist/cli.js');
} catch (e) {
	if (e && e.code === 'MODULE_NOT_FOUND' && String(e.message).includes('dist/cli.js')) {
		process.stderr.write('gpumpi-doctor: dist/cli.js is missing; run `npm run build` first.\n');
		process.exit(3);
	}
	throw e;
}
cli.run();
