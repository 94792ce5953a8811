#!/usr/bin/env node
/**
 * `npm run verify-sources`: every rule source that is a file at a release tag (github.com/<owner>/<repo>/blob/<tag>/
 * <path>) must carry the exact quote it rests on, and the quote must be in that file at that tag. Read from local
 * git mirrors of the repositories (bare clones: $GPUMPI_MIRRORS/<owner>+<repo>/repo, default /work/.mirror, as the
 * development machine's fetch tool leaves them; `git clone --mirror` works too), never from the network, so it runs
 * where a developer has the mirrors, not in CI. Writes docs/verify-sources.json (date, counts, one entry per source);
 * scripts/genRulesDoc.mjs puts the result into docs/rules.md, and test/unit/rules/ruleSources.test.ts fails when a
 * quote in the code has no "found" entry there. Issue threads, documentation pages and docs/ anchors are listed as
 * not checked by it. Usage: node scripts/verifySources.mjs [--mirrors DIR]. Exit 1 when a quote is missing or not found.
 */
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argi = process.argv.indexOf('--mirrors');
const mirrors = argi > 0 ? process.argv[argi + 1] : (process.env.GPUMPI_MIRRORS || '/work/.mirror');
const out = path.join(root, 'docs', 'verify-sources.json');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-verify-'));
const BLOB = /^https:\/\/github\.com\/([^/]+)\/([^/]+)\/blob\/([^/]+)\/(.+)$/;
const norm = (s) => s.replace(/\s+/g, ' ').trim();

try {
	await build({ entryPoints: [path.join(root, 'extension/core/rules/index.ts')], bundle: true, platform: 'node', format: 'cjs', outfile: path.join(tmp, 'rules.cjs'), logLevel: 'warning' });
	const { RULES } = createRequire(import.meta.url)(path.join(tmp, 'rules.cjs'));
	const files = new Map();
	const fileAt = (owner, repo, tag, file) => {
		const key = `${owner}/${repo}@${tag}:${file}`;
		if (files.has(key)) { return files.get(key); }
		const git = path.join(mirrors, `${owner}+${repo}`, 'repo');
		let text = null;
		let why = '';
		if (!fs.existsSync(git)) { why = `no mirror of ${owner}/${repo} under ${mirrors}`; }
		else {
			try { text = execFileSync('git', ['--git-dir', git, 'show', `${tag}:${file}`], { encoding: 'utf8', maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'pipe'] }); }
			catch (e) { why = `git show ${tag}:${file} failed: ${String(e.stderr || e.message).trim().split('\n')[0]}`; }
		}
		const r = { text, why };
		files.set(key, r);
		return r;
	};
	const results = [];
	for (const rule of RULES) {
		for (const s of rule.verifiedAgainst) {
			const m = BLOB.exec(s.url);
			if (!m) { results.push({ rule: rule.id, url: s.url, status: 'not a file at a tag (not checked by this script)' }); continue; }
			if (!s.quote) { results.push({ rule: rule.id, url: s.url, status: 'no quote' }); continue; }
			const [, owner, repo, tag, file] = m;
			const f = fileAt(owner, repo, tag, file.replace(/#.*$/, ''));
			if (f.text === null) { results.push({ rule: rule.id, url: s.url, quote: s.quote, status: 'cannot check', detail: f.why }); continue; }
			results.push({ rule: rule.id, url: s.url, quote: s.quote, status: norm(f.text).includes(norm(s.quote)) ? 'found' : 'not found' });
		}
	}
	const count = (st) => results.filter((r) => r.status === st).length;
	const doc = {
		schema: 'gpumpi.verify-sources/1', date: new Date().toISOString().slice(0, 10), mirrors,
		counts: { files_at_tags: results.filter((r) => BLOB.test(r.url)).length, found: count('found'), not_found: count('not found'), no_quote: count('no quote'), cannot_check: count('cannot check'), other_sources: results.filter((r) => !BLOB.test(r.url)).length },
		results,
	};
	fs.writeFileSync(out, `${JSON.stringify(doc, null, 1)}\n`);
	const c = doc.counts;
	process.stderr.write(`verify-sources: ${c.found} of ${c.files_at_tags} quotes found (${c.not_found} not found, ${c.no_quote} without a quote, ${c.cannot_check} not checkable here); ${c.other_sources} other sources not checked by it; wrote ${path.relative(root, out)}\n`);
	for (const r of results.filter((x) => x.status === 'not found' || x.status === 'no quote' || x.status === 'cannot check')) { process.stderr.write(`  ${r.status}: ${r.rule} ${r.url}${r.detail ? ` (${r.detail})` : ''}\n`); }
	process.exitCode = c.not_found + c.no_quote + c.cannot_check > 0 ? 1 : 0;
} finally {
	// (process.exit() in the try would skip this: the temp bundle was left in /tmp, as zz-leftovers.test.ts saw)
	fs.rmSync(tmp, { recursive: true, force: true });
}
