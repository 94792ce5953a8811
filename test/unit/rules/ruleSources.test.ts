/**
 * Every rule says which releases it applies to and which public sources it was checked against; a source is an
 * https URL or a section of a page shipped in docs/ whose anchor exists (GitHub's heading slugs). Internal notes
 * (observed.md, gpu-mpi-sources.md §n, U#n / O#n shorthands) fail here, in findings' text too.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { analyze } from '../../../extension/core/analyze';
import { RULES } from '../../../extension/core/rules/index';
import type { AppliesTo, Rule } from '../../../extension/core/rules/rule';
import { debianMpichRaw, debianRaw, h200Raw, seedRaw } from './fixtureRaw';

/** Repository root: the tests run from it (as fixtureRaw.ts assumes). */
const ROOT = process.cwd();
const COMPONENTS: readonly (keyof AppliesTo)[] = ['openmpi', 'mpich', 'vendorMpi', 'ucx', 'cuda', 'slurm', 'libfabric', 'any'];
/** `all`, or alternatives (`||`) of space-separated comparisons such as `>=1.19.0`, `<5`, `=1.15.0-rc`. */
const RANGE = /^(all|(?:(?:>=|<=|>|<|=)\d+(?:\.\d+)*(?:-rc\d*)?)(?: (?:>=|<=|>|<|=)\d+(?:\.\d+)*(?:-rc\d*)?)*(?: \|\| (?:(?:>=|<=|>|<|=)\d+(?:\.\d+)*(?:-rc\d*)?)(?: (?:>=|<=|>|<|=)\d+(?:\.\d+)*(?:-rc\d*)?)*)*)$/;
const INTERNAL = /observed\.md|gpu-mpi-sources|recurring-problems|shared\/(knowledge|testbed)|\b[UO]#\d|\bseed [AB]\b|§/;

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
	return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
}

/** The anchors of a markdown file: its headings' slugs and explicit id/name attributes. */
function anchors(file: string): Set<string> {
	const text = fs.readFileSync(file, 'utf8');
	const out = new Set<string>();
	for (const m of text.matchAll(/^#{1,6} (.+)$/gm)) { out.add(slug(m[1])); }
	for (const m of text.matchAll(/<a (?:id|name)="([^"]+)"/g)) { out.add(m[1]); }
	return out;
}

/** Why a source is not acceptable, or null. */
function sourceProblem(url: string): string | null {
	if (/^https:\/\/[^\s<>"'`]+$/.test(url)) { return INTERNAL.test(url) ? 'names an internal note' : null; }
	const m = /^(docs\/[A-Za-z0-9_.-]+\.md)#([a-z0-9_-]+)$/.exec(url);
	if (!m) { return 'neither an https URL nor docs/<page>.md#<anchor>'; }
	const file = path.join(ROOT, m[1]);
	if (!fs.existsSync(file)) { return `${m[1]} does not exist`; }
	return anchors(file).has(m[2]) ? null : `${m[1]} has no section #${m[2]}`;
}

describe('rule sources and versions', () => {
	it('the check itself rejects internal notes, bare paths and missing anchors', () => {
		for (const bad of ['observed.md A', 'gpu-mpi-sources.md §3', 'U#9287', 'http://example.org/x', 'docs/device-results.md', 'docs/device-results.md#no-such-section', 'docs/nope.md#inspect', 'https://github.com/x/shared/knowledge/observed.md']) {
			assert.notEqual(sourceProblem(bad), null, bad);
		}
		assert.equal(sourceProblem('docs/device-results.md#inspect'), null);
		assert.equal(sourceProblem('https://github.com/openucx/ucx/pull/11062'), null);
		assert.equal(slug('Fallback reproducer (the QuEST report), 2 ranks, 1 GiB, device buffers (best of 3; run 1 / run 2)'), 'fallback-reproducer-the-quest-report-2-ranks-1-gib-device-buffers-best-of-3-run-1--run-2');
	});

	it('every rule states the releases it applies to', () => {
		for (const r of RULES as readonly Rule[]) {
			const keys = Object.keys(r.appliesTo ?? {}) as (keyof AppliesTo)[];
			assert.ok(keys.length > 0, `${r.id} has no version range`);
			for (const k of keys) {
				assert.ok(COMPONENTS.includes(k), `${r.id}: unknown component ${k}`);
				assert.match(String(r.appliesTo[k]), RANGE, `${r.id}: ${k} range`);
			}
		}
		assert.doesNotMatch('>= 1.19', RANGE);
		assert.match('<1.14 || =1.15.0-rc', RANGE);
	});

	it('every rule is verified against public sources, each saying what it shows', () => {
		for (const r of RULES) {
			assert.ok(Array.isArray(r.verifiedAgainst) && r.verifiedAgainst.length > 0, `${r.id} has no verifiedAgainst source`);
			for (const s of r.verifiedAgainst) {
				assert.equal(sourceProblem(s.url), null, `${r.id}: ${s.url}: ${sourceProblem(s.url)}`);
				assert.ok(s.shows.trim().length > 0 && !INTERNAL.test(s.shows), `${r.id}: ${s.url} needs a public description`);
			}
		}
	});

	it('no rule text and no finding on the real fixtures cites an internal note', () => {
		for (const r of RULES) { assert.doesNotMatch(`${r.title} ${r.fixSummary}`, INTERNAL, r.id); }
		for (const raw of [debianRaw(), debianMpichRaw(), h200Raw(), seedRaw()]) {
			for (const f of analyze(raw, 'x').findings) {
				assert.doesNotMatch(`${f.message} ${f.fix?.text ?? ''} ${f.source ?? ''}`, INTERNAL, f.id);
				for (const s of f.sources ?? []) { assert.equal(sourceProblem(s.url), null, `${f.id}: ${s.url}`); }
			}
		}
	});
	it('every source that is a file at a release tag carries its exact quote, found there by npm run verify-sources (docs/verify-sources.json)', () => {
		// The check itself needs the repositories' mirrors (scripts/verifySources.mjs, run by a developer); this test
		// holds the code to its recorded result: a quote added or changed without running it again fails here.
		const doc = JSON.parse(fs.readFileSync(path.join(ROOT, 'docs', 'verify-sources.json'), 'utf8')) as { date: string; results: Array<{ url: string; quote?: string; status: string }> };
		assert.match(doc.date, /^\d{4}-\d{2}-\d{2}$/);
		const blob = /^https:\/\/github\.com\/[^/]+\/[^/]+\/blob\/[^/]+\/.+$/;
		let n = 0;
		for (const r of RULES) {
			for (const s of r.verifiedAgainst) {
				if (!blob.test(s.url)) { continue; }
				n++;
				assert.ok(s.quote && s.quote.trim().length >= 10, `${r.id}: ${s.url} has no quote`);
				assert.ok(doc.results.some((x) => x.url === s.url && x.quote === s.quote && x.status === 'found'), `${r.id}: the quote for ${s.url} has no "found" result in docs/verify-sources.json: run npm run verify-sources`);
			}
		}
		assert.ok(n >= 30, `only ${n} file sources`);
	});
});
