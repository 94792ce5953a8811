/**
 * What the .vsix shows a user before anything runs: its README (docs/vsix/README.md, packed as readme.md by
 * scripts/package.mjs) and its icon. Every file the README shows or names exists and ships (named in .vscodeignore),
 * every command it lists is contributed, every setting it lists is declared; the icon is a PNG of at least 128 px.
 * The built .vsix itself is checked by test/engine/package.test.ts.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = process.cwd();

describe('the .vsix README for users and the icon', () => {
	const readme = fs.readFileSync(path.join(ROOT, 'docs', 'vsix', 'README.md'), 'utf8');
	const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { icon?: string; contributes: { commands: { title: string; category?: string }[]; configuration: { properties: Record<string, unknown> } } };
	const ignore = fs.readFileSync(path.join(ROOT, '.vscodeignore'), 'utf8').split('\n').map(l => l.trim());

	it('every file it shows or names exists and ships', () => {
		const files = [...new Set([...readme.matchAll(/(?:\]\(|`)(docs\/[A-Za-z0-9_./-]+\.(?:png|md))/g)].map(m => m[1]))];
		assert.ok(files.length >= 4, files.join(', '));
		for (const f of files) {
			assert.ok(fs.existsSync(path.join(ROOT, f)), `${f} exists`);
			assert.ok(ignore.includes(`!${f}`), `${f} is named in .vscodeignore`);
		}
		// Images have alt text; no developer instructions (npm test, .ci/run) in the users' README.
		for (const m of readme.matchAll(/!\[([^\]]*)\]\(/g)) { assert.ok(m[1].length > 10, `alt text "${m[1]}"`); }
		assert.ok(!/npm (test|run)|\.ci\/run/.test(readme));
	});

	it('the commands it lists are contributed, the settings it lists are declared', () => {
		const titles = new Set(pkg.contributes.commands.map(c => `${c.category ? `${c.category}: ` : ''}${c.title}`));
		const listed = [...readme.matchAll(/^\| (GPU-MPI: [^|]+?) \|/gm)].flatMap(m => m[1].split(' / ').map((t, i, all) => (i === 0 ? t : `GPU-MPI: ${t}`).trim()).map(t => (t.startsWith('GPU-MPI: ') ? t : `GPU-MPI: ${t}`)));
		assert.ok(listed.length >= 8, listed.join(' | '));
		for (const t of listed) { assert.ok(titles.has(t), `"${t}" is a contributed command title`); }
		const settings = [...readme.matchAll(/^\| `(gpumpiDoctor\.[A-Za-z.]+)` \|/gm)].map(m => m[1]);
		assert.deepEqual(settings.sort(), Object.keys(pkg.contributes.configuration.properties).sort());
	});

	it('has an icon: a PNG of at least 128×128 that ships', () => {
		assert.equal(pkg.icon, 'media/icon.png');
		const b = fs.readFileSync(path.join(ROOT, pkg.icon));
		assert.equal(b.subarray(1, 4).toString(), 'PNG');
		assert.ok(b.readUInt32BE(16) >= 128 && b.readUInt32BE(20) >= 128, `${b.readUInt32BE(16)}×${b.readUInt32BE(20)}`);
		assert.ok(ignore.includes('!media/icon.png'));
	});
});
