/**
 * The walkthrough (package.json contributes.walkthroughs) can only point at what ships: every command link in a
 * step is a contributed command, every image exists and is named in .vscodeignore (so it is in the .vsix), and the
 * five steps are inspect, repro ipc, repro fallback, map and the guard.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = process.cwd();

interface Step { id: string; description: string; media: { image?: string; markdown?: string; altText?: string }; completionEvents?: string[] }

describe('walkthrough', () => {
	const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { contributes: { commands: { command: string }[]; walkthroughs: { id: string; steps: Step[] }[] } };
	const commands = new Set(pkg.contributes.commands.map(c => c.command));
	const walk = pkg.contributes.walkthroughs[0];
	const ignore = fs.readFileSync(path.join(ROOT, '.vscodeignore'), 'utf8').split('\n').map(l => l.trim());

	it('has the five steps, each opening its command', () => {
		assert.deepEqual(walk.steps.map(s => s.id), ['inspect', 'reproIpc', 'reproFallback', 'map', 'guard']);
		for (const s of walk.steps) {
			const links = [...s.description.matchAll(/\(command:([A-Za-z.]+)\)/g)].map(m => m[1]);
			assert.equal(links.length, 1, `${s.id}: one command link`);
			assert.ok(commands.has(links[0]), `${s.id}: ${links[0]} is contributed`);
			assert.deepEqual(s.completionEvents, [`onCommand:${links[0]}`]);
		}
	});

	it('the empty Hosts view offers "Inspect this machine" and "Add SSH host" (viewsWelcome), both contributed commands', () => {
		const welcome = (pkg.contributes as { viewsWelcome?: { view: string; contents: string }[] }).viewsWelcome ?? [];
		const hosts = welcome.find(w => w.view === 'gpumpiDoctor.hostsView');
		assert.ok(hosts, 'viewsWelcome for gpumpiDoctor.hostsView');
		const links = [...hosts.contents.matchAll(/\[([^\]]+)\]\(command:([A-Za-z.]+)\)/g)].map(m => [m[1], m[2]]);
		assert.deepEqual(links, [['Inspect this machine', 'gpumpiDoctor.inspectHost'], ['Add SSH host', 'gpumpiDoctor.addHost']]);
		for (const [, c] of links) { assert.ok(commands.has(c), `${c} is contributed`); }
	});

	it('shows images that exist and ship in the .vsix, each with alt text; text pages that exist and ship', () => {
		for (const s of walk.steps) {
			if (s.media.markdown) {
				const md = s.media.markdown;
				assert.ok(fs.readFileSync(path.join(ROOT, md), 'utf8').startsWith('# '), `${md} exists, with a title`);
				assert.ok(ignore.includes('!media/walkthrough/*.md') && md.startsWith('media/walkthrough/') && md.endsWith('.md'), `${md} ships (.vscodeignore)`);
				continue;
			}
			const img = s.media.image;
			assert.ok(img, `${s.id} has an image`);
			assert.ok(fs.statSync(path.join(ROOT, img)).size > 1000, `${img} exists`);
			assert.ok(ignore.includes(`!${img}`), `${img} is named in .vscodeignore`);
			assert.ok((s.media.altText ?? '').length > 10, `${s.id} has alt text`);
		}
	});
});
