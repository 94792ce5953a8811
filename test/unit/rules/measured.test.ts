/**
 * Numbers are generated, not copied: the measurements rules state come from extension/core/rules/measured.generated.ts,
 * which scripts/genMeasured.mjs writes from the recorded device captures under test-fixtures/. This fails when the module
 * is hand-edited or no longer what the captures give, and when a rule's text carries a number that is not one of them.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { MEASURED } from '../../../extension/core/rules/measured.generated';
import { RULES } from '../../../extension/core/rules/index';

describe('measured numbers in the rules', () => {
	it('measured.generated.ts is what scripts/genMeasured.mjs reads from the captures', () => {
		const r = spawnSync(process.execPath, [path.resolve(process.cwd(), 'scripts/genMeasured.mjs'), '--check'], { encoding: 'utf8' });
		assert.equal(r.status, 0, r.stderr);
	});

	it('every measurement names its capture file and has a text', () => {
		for (const [k, v] of Object.entries(MEASURED)) {
			assert.match(v.from, /^test-fixtures\/\S+\.json/, k);
			assert.ok(v.text.length > 0, k);
		}
	});

	it('the H200 numbers in the rules\' sources are generated ones (no hand-typed GB/s, MiB or µs of our own measurements)', () => {
		const texts = Object.values(MEASURED).map((v) => v.text);
		for (const rule of RULES) {
			for (const s of rule.verifiedAgainst) {
				if (!/^docs\/device-results\.md#/.test(s.url)) { continue; }
				const numbers = s.shows.match(/\d[\d.,–]*\s*(GB\/s|MiB|µs)/g) ?? [];
				// a power of two in MiB is a message size the run was given (64 MiB, 256 MiB), not a measurement
				for (const n of numbers.filter((x) => !/^(\d+) MiB$/.test(x) || !Number.isInteger(Math.log2(Number(x.split(' ')[0]))))) {
					assert.ok(texts.some((t) => t === n || t.endsWith(n) || n.endsWith(t)), `${rule.id}: "${n}" in "${s.shows}" is not a generated measurement`);
				}
			}
		}
	});
});
