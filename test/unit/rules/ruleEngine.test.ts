/**
 * The rule engine itself: a throwing rule becomes an info finding and the other findings survive; ordering;
 * every registered rule is documented well enough for docs/rules.md.
 */
import * as assert from 'node:assert/strict';
import { analyze } from '../../../extension/core/analyze';
import { emptyFacts } from '../../../extension/core/facts';
import { RULES, runRules, Rule } from '../../../extension/core/rules/index';
import { finding } from '../../../extension/core/rules/rule';
import { debianRaw } from './fixtureRaw';

function rule(id: string, severity: Rule['severity'], evaluate: Rule['evaluate']): Rule {
	return { id, severity, title: id, reads: [], appliesTo: { any: 'all' }, verifiedAgainst: [{ url: 'https://example.org/test', shows: 'test' }], fixSummary: '', evaluate };
}

describe('rule engine', () => {
	it('turns a throwing rule into an info finding and keeps the others', () => {
		const ok = rule('ok-rule', 'warning', function (this: Rule) { return [finding(this, 'fine', [])]; });
		const boom = rule('boom', 'error', () => { throw new Error('kaput'); });
		const out = runRules([boom, ok], emptyFacts('h'));
		assert.deepEqual(out.map((f) => [f.id, f.severity]), [['ok-rule', 'warning'], ['rule-failed:boom', 'info']]);
		assert.equal(out[1].message, 'rule boom failed: kaput');
	});

	it('orders findings error, warning, info and keeps rule order within a severity', () => {
		const mk = (id: string, s: Rule['severity']): Rule => rule(id, s, function (this: Rule) { return [finding(this, id, [])]; });
		const out = runRules([mk('i1', 'info'), mk('w1', 'warning'), mk('e1', 'error'), mk('w2', 'warning')], emptyFacts('h'));
		assert.deepEqual(out.map((f) => f.id), ['e1', 'w1', 'w2', 'i1']);
	});

	it('every registered rule has a unique id, reads, a fix summary and a title (sources: ruleSources.test.ts)', () => {
		const seen = new Set<string>();
		for (const r of RULES) {
			assert.ok(!seen.has(r.id), `duplicate ${r.id}`);
			seen.add(r.id);
			assert.ok(r.reads.length > 0 && r.fixSummary !== '' && r.title !== '', r.id);
		}
		assert.ok(RULES.length >= 18);
	});

	it('every finding on the Debian fixtures has evidence, a source and a fix', () => {
		for (const f of analyze(debianRaw(), 'vm').findings) {
			assert.ok(f.evidence.length > 0, `${f.id} has no evidence`);
			assert.ok(f.source && f.sources && f.sources.length > 0, `${f.id} has no source`);
			assert.ok(f.fix?.command, `${f.id} has no fix command`);
		}
	});

	it('analyze survives untyped garbage from a bundle', () => {
		const junk = [null, 42, { id: 7 }, { id: 'ompi_info', stdout: 12 }, { id: 'engine', stdout: '{"ranks":[null,{"mpi":5}]}' }] as unknown as Parameters<typeof analyze>[0];
		const a = analyze(junk, 'bundle');
		assert.equal(a.summary.hostname, 'bundle');
		assert.ok(a.findings.some((f) => f.id === 'parse-problem'));
		assert.equal(analyze(undefined as unknown as Parameters<typeof analyze>[0], 'u').summary.mpi.label, 'not found');
	});
});
