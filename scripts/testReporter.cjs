// Mocha reporter for scripts/test.mjs: the usual spec output, plus the counts and failures written as JSON to
// $GPUMPI_MOCHA_RESULT so the aggregator counts real results instead of parsing text.
'use strict';
const fs = require('node:fs');
const Mocha = require('mocha');

class CountingReporter extends Mocha.reporters.Spec {
	constructor(runner, options) {
		super(runner, options);
		const out = process.env.GPUMPI_MOCHA_RESULT;
		const failed = [];
		runner.on('fail', (test, err) => {
			failed.push({ title: test.fullTitle(), error: err && err.message ? String(err.message) : String(err) });
		});
		runner.once('end', () => {
			if (!out) { return; }
			const s = this.stats;
			fs.writeFileSync(out, JSON.stringify({ passes: s.passes, failures: s.failures, pending: s.pending, tests: s.tests, failed }, null, 2));
		});
	}
}

module.exports = CountingReporter;
