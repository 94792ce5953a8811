/**
 * docs/benchmarks.md has more than one writer: scripts/bench.mjs rewrites the file and must keep the sections other
 * bench scripts own (scripts/benchMapSchedule.mjs's map-schedule section), which replace only their own section.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { keptSections, replaceSection, withKeptSections } from '../../scripts/benchSections.mjs';

const BEGIN = '<!-- map-schedule:begin (scripts/benchMapSchedule.mjs writes this section) -->';
const END = '<!-- map-schedule:end -->';
const section = (n: number) => [BEGIN, '## Transport map: rounds against one pair at a time', '', `| row | ${n} |`, END].join('\n');

describe('benchmarks.md sections (scripts/benchSections.mjs)', () => {
	it('bench.mjs keeps a marked section of the file it rewrites, after its own body, and drops its old body', () => {
		const old = ['# Benchmarks', '', 'old numbers 11 ms', '', section(1), ''].join('\n');
		const out = withKeptSections(['# Benchmarks', '', 'new numbers 12 ms', ''].join('\n'), old);
		assert.ok(out.startsWith('# Benchmarks\n\nnew numbers 12 ms'));
		assert.ok(!out.includes('old numbers'));
		assert.ok(out.includes(`${section(1)}\n`), out);
		assert.strictEqual(out.split(BEGIN).length, 2, 'the section once');
	});

	it('keeps every marked section in order, nothing between them, and none when there are none or no file', () => {
		const other = '<!-- other-bench:begin -->\n## Other\n| x |\n<!-- other-bench:end -->';
		const text = `# B\n\nbody\n\n${section(2)}\n\nstray text\n\n${other}\n`;
		assert.strictEqual(keptSections(text), `${section(2)}\n\n${other}`);
		assert.strictEqual(withKeptSections('# B\n', '# B\n\nnothing marked\n'), '# B\n');
		assert.strictEqual(withKeptSections('# B\n', undefined), '# B\n');
	});

	it('a begin marker without its own end keeps nothing (no half section, no other section swallowed)', () => {
		assert.strictEqual(keptSections(`${BEGIN}\n## half\n<!-- other-bench:end -->\n`), '');
	});

	it('benchMapSchedule.mjs replaces its own section in place, or appends it once', () => {
		const before = `# Benchmarks\n\nbench body\n\n${section(1)}\n\ntail\n`;
		const after = replaceSection(before, BEGIN, END, section(2));
		assert.strictEqual(after, `# Benchmarks\n\nbench body\n\n${section(2)}\n\ntail\n`);
		const appended = replaceSection('# Benchmarks\n\nbench body\n', BEGIN, END, section(3));
		assert.strictEqual(appended, `# Benchmarks\n\nbench body\n\n${section(3)}\n`);
		// And bench.mjs after it keeps the new numbers.
		assert.ok(withKeptSections('# Benchmarks\n\nnew body\n', appended).endsWith(`${section(3)}\n`));
	});

	it('the committed docs/benchmarks.md: a rewrite by bench.mjs would keep its map-schedule section', () => {
		const file = fs.readFileSync(path.join(process.cwd(), 'docs', 'benchmarks.md'), 'utf8');
		const kept = keptSections(file);
		assert.ok(kept.startsWith(BEGIN) && kept.endsWith(END), kept.slice(0, 200) || 'no map-schedule section in docs/benchmarks.md');
		assert.ok(kept.includes('| sequential |') && kept.includes('| rounds |'), 'both schedules measured');
	});
});
