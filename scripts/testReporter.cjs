// Mocha reporter for scripts/test.mjs: the usual spec output, plus the counts and failures written as JSON to
// $GPUMPI_MOCHA_RESULT so the aggregator counts real results instead of parsing text. The file is rewritten at
// every test start and end ("complete": false, with the test running now), so a suite killed at its time limit
// still says which tests passed and which one it was in; "complete": true only at the end of the run.
'use strict';
const fs = require('node:fs');
const Mocha = require('mocha');

class CountingReporter extends Mocha.reporters.Spec {
	constructor(runner, options) {
		super(runner, options);
		const out = process.env.GPUMPI_MOCHA_RESULT;
		const failed = [];
		let running = null;
		const write = (complete) => {
			if (!out) { return; }
			const s = this.stats;
			const doc = { complete, passes: s.passes, failures: s.failures, pending: s.pending, tests: s.tests, failed, running };
			try {
				fs.writeFileSync(`${out}.tmp`, JSON.stringify(doc, null, 2));
				fs.renameSync(`${out}.tmp`, out); // whole or not at all: a kill mid-write leaves the previous version
			} catch { /* the next write tries again */ }
		};
		runner.on('test', (test) => { running = test.fullTitle(); write(false); });
		runner.on('fail', (test, err) => {
			failed.push({ title: test.fullTitle(), error: err && err.message ? String(err.message) : String(err) });
		});
		runner.on('test end', () => { running = null; write(false); });
		runner.on('hook', (hook) => { running = hook.fullTitle(); });
		runner.on('hook end', () => { running = null; });
		runner.once('end', () => write(true));
	}
}

module.exports = CountingReporter;
