/**
 * docs/device-results.md's "guard on programs it was not written for" tables are generated, not copied: every table
 * row scripts/foreignTable.mjs prints from the recorded runs (test-fixtures/guard-foreign/*.jsonl) is in the doc, and
 * the landed guard's rows show report mode identical to no guard in every trial (the claim the doc makes).
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = process.cwd();
const DIR = path.join(ROOT, 'test-fixtures', 'guard-foreign');
const table = (args: string[]): string[] => execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'foreignTable.mjs'), ...args], { encoding: 'utf8' })
	.split('\n').filter(l => l.startsWith('| ') && !l.startsWith('| run') && !l.startsWith('| ---'));

describe('device-results: the foreign-program tables come from the recorded runs', () => {
	const doc = fs.readFileSync(path.join(ROOT, 'docs', 'device-results.md'), 'utf8');
	const landed = table(['--as', 'h100 (2 calls)', path.join(DIR, 'h100-2026-12-06b-files.jsonl'), path.join(DIR, 'h100-2026-12-06c-files.jsonl')]);

	it('every generated row is in the doc', () => {
		const first = table(fs.readdirSync(DIR).filter(f => /^h(100|200)-2026-12-06-.*\.jsonl$/.test(f)).sort().map(f => path.join(DIR, f)));
		assert.ok(landed.length >= 9 && first.length >= 10, `${landed.length} / ${first.length} rows`);
		for (const row of [...landed, ...first]) { assert.ok(doc.includes(row), `not in docs/device-results.md: ${row}`); }
	});

	it('landed guard: in every scenario report mode has the none column\'s correct count and exit codes, and fix is correct in every trial', () => {
		for (const row of landed) {
			const cells = row.split(' | ');
			const none = cells[2].split(';')[0], report = cells[4].split(';')[0], fix = cells[5].split(';')[0];
			assert.equal(report, none, row);
			const [ok, n] = fix.match(/^(\d+)\/(\d+) correct/)?.slice(1).map(Number) ?? [NaN, NaN];
			assert.ok(ok === n && n >= 5, row);
		}
	});
});
