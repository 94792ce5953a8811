/**
 * Inspections kept and compared: a saved report (the real H200 testbed inspection, test-fixtures/cli/h200-testbed,
 * `gpumpi-doctor inspect --json` of 2026-12-02) reads back as a report; damaged or foreign JSON is refused with the
 * field that is wrong (variants made here from that file, said so); the compared text of two inspections differs
 * exactly where they differ (here: one environment variable set in a copy, as a `module load` would).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { comparableText } from '../../extension/shared/reportCompare';
import { parseReportText } from '../../extension/shared/reportFile';
import type { Report } from '../../extension/shared/report';

const runs = JSON.parse(fs.readFileSync(path.join(process.cwd(), 'test-fixtures', 'cli', 'h200-testbed', 'cli-2026-12-02.json'), 'utf8')) as { runs: { name: string; doc: unknown }[] };
const h200 = runs.runs.find(r => r.name === 'inspect')?.doc as Report;

describe('saved inspections (open, compare)', () => {
	it('the real H200 inspection reads back whole', () => {
		const r = parseReportText(JSON.stringify(h200));
		assert.ok(r.ok, r.ok ? '' : r.error);
		assert.equal(r.report.findings.length, h200.findings.length);
		assert.equal(r.report.summary.mpi.label, h200.summary.mpi.label);
	});

	it('refuses what is not a saved inspection, naming the field', () => {
		const bad = (mut: (d: Record<string, unknown>) => void): string => {
			const d = JSON.parse(JSON.stringify(h200)) as Record<string, unknown>;
			mut(d);
			const r = parseReportText(JSON.stringify(d));
			return r.ok ? 'accepted' : r.error;
		};
		assert.match(bad(d => { d.schema = 'gpumpi.repro.ipc-report/2'; }), /schema is "gpumpi.repro.ipc-report\/2"/);
		assert.match(bad(d => { (d.findings as Record<string, unknown>[])[0].severity = 'fatal'; }), /findings\[0\]/);
		assert.match(bad(d => { (d.findings as { evidence: unknown[] }[])[0].evidence = [{ source: 1 }]; }), /findings\[0\]\.evidence\[0\]/);
		assert.match(bad(d => { (d.raw as Record<string, unknown>[])[1].exitCode = 'x'; }), /raw\[1\]/);
		assert.match(bad(d => { d.host = { id: 'h', label: 'h', kind: 'cloud' }; }), /host is not/);
		const notJson = parseReportText('{"schema":');
		assert.ok(!notJson.ok && /not JSON/.test(notJson.error));
		const arr = parseReportText('[]');
		assert.ok(!arr.ok && /not a JSON object/.test(arr.error));
	});

	it('two inspections compare line by line: only what changed differs', () => {
		const after = JSON.parse(JSON.stringify(h200)) as Report;
		const env = after.raw.find(r => r.id === 'env');
		assert.ok(env, 'the report has its environment');
		env.stdout += 'UCX_TLS=^cuda_ipc\n';
		const a = comparableText(h200).split('\n');
		const b = comparableText(after).split('\n');
		const added = b.filter(l => !a.includes(l));
		assert.deepEqual(added, ['  UCX_TLS=^cuda_ipc']);
		assert.deepEqual(a.filter(l => !b.includes(l)), []);
		// Stable order: the same report twice is the same text; findings by id.
		assert.equal(comparableText(h200), comparableText(JSON.parse(JSON.stringify(h200)) as Report));
		const ids = a.filter(l => /^ {2}\[(error|warning|info)\] /.test(l)).map(l => l.replace(/^ {2}\[\w+\] ([^:]+):.*$/, '$1'));
		assert.deepEqual(ids, [...ids].sort());
		assert.ok(a.some(l => l.startsWith('Verdict: ')) && a.some(l => l.startsWith('MPI: ')));
	});
});
