/**
 * What people install: `npm run package` (scripts/package.mjs) run for real, then
 *  - the .vsix holds exactly the build outputs (top-level dist/*.js|css, production, no source maps, no tests), the
 *    prebuilt addon, every engine with the libraries it NEEDs from its own build folder (readelf -d), and the native
 *    sources deployEngine copies to ssh hosts (nativeSourceFiles) — nothing missing, nothing else;
 *  - unpacked, each engine resolves every library (ldd), libgpumpi.so from next to itself ($ORIGIN), not the build tree;
 *  - the shipped native sources configure and build the engine CLI with cmake + mpicc, as on a remote host;
 *  - the CLI tarball installs with `npm install -g --offline` into a fresh prefix with no registry reachable, and
 *    `gpumpi-doctor inspect --json` from there parses and ran the engine and addon of that install.
 * The install into a fresh code-server is test/vscode/runVsix.mjs (vscode suite).
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { nativeSourceFiles } from '../../extension/core/hosts/deployEngine';

const repo = path.resolve(__dirname, '../../..');
const ENGINE_DIRS = ['engine', 'engine-openmpi', 'engine-mpich'];

function sh(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeout?: number } = {}): string {
	return execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 << 20, timeout: opts.timeout ?? 600_000, cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** NEEDED sonames of an ELF file, from readelf -d. */
function needed(file: string): string[] {
	return [...sh('readelf', ['-d', file]).matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map(m => m[1]);
}

/** The files of the repository the users' README (docs/vsix/README.md) shows or names (`docs/…`), in the order it does. */
export function vsixReadmeFiles(): string[] {
	const text = fs.readFileSync(path.join(repo, 'docs', 'vsix', 'README.md'), 'utf8');
	return [...new Set([...text.matchAll(/(?:\]\(|`)(docs\/[A-Za-z0-9_./-]+\.(?:png|md))/g)].map(m => m[1]))];
}

describe('npm run package: the .vsix and the CLI tarball', function () {
	this.timeout(1_200_000);
	let tmp = '';
	let vsix = '';
	let tgz = '';

	before(function () {
		tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-pkg-'));
		const r = spawnSync(process.execPath, [path.join(repo, 'scripts', 'package.mjs')], { cwd: repo, encoding: 'utf8', timeout: 1_000_000, maxBuffer: 64 << 20 });
		assert.equal(r.status, 0, `package.mjs failed:\n${r.stderr.slice(-4000)}`);
		const written = r.stdout.trim().split('\n');
		vsix = written.find(f => f.endsWith('.vsix')) ?? '';
		tgz = written.find(f => f.endsWith('.tgz')) ?? '';
		assert.ok(fs.existsSync(vsix) && fs.existsSync(tgz), `package.mjs printed ${JSON.stringify(r.stdout)}`);
		console.log(`      .vsix ${(fs.statSync(vsix).size / 2 ** 20).toFixed(2)} MiB, .tgz ${(fs.statSync(tgz).size / 2 ** 20).toFixed(2)} MiB`);
	});
	after(() => { if (tmp) { fs.rmSync(tmp, { recursive: true, force: true }); } });

	it('the .vsix holds exactly the build outputs, the addon, the engines with their NEEDED libgpumpi.so, and the native sources', () => {
		const listed = sh('unzip', ['-Z1', vsix]).split('\n').filter(l => l && !l.endsWith('/'));
		const files = new Set(listed.filter(l => l.startsWith('extension/')).map(l => l.slice('extension/'.length)));
		const want = new Set<string>(['package.json', 'readme.md', 'bin/gpumpi-doctor.js', 'prebuilds/linux-x64/gpumpi_addon.node']);
		for (const f of fs.readdirSync(path.join(repo, 'dist'))) { if (/\.(js|css)$/.test(f)) { want.add(`dist/${f}`); } }
		for (const dir of ENGINE_DIRS) {
			const engine = path.join(repo, 'native', 'build', dir, 'gpumpi');
			if (!fs.existsSync(engine)) { continue; }
			want.add(`native/build/${dir}/gpumpi`);
			for (const lib of needed(engine)) {
				if (fs.existsSync(path.join(repo, 'native', 'build', dir, lib))) { want.add(`native/build/${dir}/${lib}`); }
			}
			// gpumpi-guard, LD_PRELOADed into the user's program (docs/guard.md), ships with each engine it was built with
			if (fs.existsSync(path.join(repo, 'native', 'build', dir, 'libgpumpi_guard.so'))) { want.add(`native/build/${dir}/libgpumpi_guard.so`); }
		}
		assert.ok(want.has('native/build/engine/libgpumpi.so'), 'the default engine no longer NEEDs libgpumpi.so: update this test');
		for (const f of nativeSourceFiles(path.join(repo, 'native'))) { want.add(`native/${f}`); }
		// the walkthrough's images and text pages (package.json contributes.walkthroughs[].steps[].media.image / .markdown) ship with it
		const manifest = JSON.parse(fs.readFileSync(path.join(repo, 'package.json'), 'utf8')) as { contributes?: { walkthroughs?: { steps?: { media?: { image?: string; markdown?: string } }[] }[] } };
		for (const w of manifest.contributes?.walkthroughs ?? []) {
			for (const st of w.steps ?? []) { for (const m of [st.media?.image, st.media?.markdown]) { if (m) { want.add(m); } } }
		}
		// the icon, and every file the users' README (docs/vsix/README.md) names
		const icon = (manifest as { icon?: string }).icon;
		if (icon) { want.add(icon); }
		for (const f of vsixReadmeFiles()) { want.add(f); }
		for (const page of ['panel', 'map', 'repro']) { assert.ok(want.has(`dist/${page}.js`) && want.has(`dist/${page}.css`), `dist/${page}.* not built`); }
		const missing = [...want].filter(f => !files.has(f)).sort();
		const extra = [...files].filter(f => !want.has(f)).sort();
		assert.deepEqual({ missing, extra }, { missing: [], extra: [] });
		assert.ok(listed.includes('extension.vsixmanifest'));
		assert.equal(sh('unzip', ['-p', vsix, 'extension/readme.md']), fs.readFileSync(path.join(repo, 'docs', 'vsix', 'README.md'), 'utf8'), 'the users\' README, unchanged');
		assert.match(sh('unzip', ['-p', vsix, 'extension.vsixmanifest']), /TargetPlatform="linux-x64"/);
	});

	it('unpacked, each engine finds every library, libgpumpi.so next to itself', () => {
		const dir = path.join(tmp, 'vsix');
		sh('unzip', ['-q', vsix, '-d', dir]);
		let checked = 0;
		for (const d of ENGINE_DIRS) {
			const engine = path.join(dir, 'extension', 'native', 'build', d, 'gpumpi');
			if (!fs.existsSync(engine)) { continue; }
			const ldd = sh('ldd', [engine]);
			assert.doesNotMatch(ldd, /not found/, ldd);
			const lib = /libgpumpi\.so => (\S+)/.exec(ldd)?.[1];
			assert.equal(lib, path.join(path.dirname(engine), 'libgpumpi.so'), ldd);
			checked++;
		}
		assert.ok(checked >= 1, 'no engine in the .vsix');
	});

	it('the shipped native sources build the engine CLI with cmake and mpicc (what deployEngine does on an ssh host)', () => {
		const src = path.join(tmp, 'vsix', 'extension', 'native');
		assert.ok(fs.existsSync(path.join(src, 'CMakeLists.txt')), 'run after the unpack test');
		const build = path.join(tmp, 'remote-build');
		sh('cmake', ['-S', src, '-B', build, '-DCMAKE_BUILD_TYPE=Release', '-DMPI_C_COMPILER=mpicc']);
		sh('cmake', ['--build', build, '--target', 'gpumpi_cli', '-j', '2']);
		assert.ok(fs.statSync(path.join(build, 'gpumpi')).isFile());
	});

	it('the CLI tarball installs offline with npm install -g and its inspect --json parses, using its own engine and addon', () => {
		const prefix = path.join(tmp, 'prefix');
		// No registry reachable (a closed local port) and an empty cache: the install must need nothing from outside.
		const env = { ...process.env, npm_config_registry: 'http://127.0.0.1:9/', npm_config_cache: path.join(tmp, 'npm-cache'), npm_config_update_notifier: 'false' };
		sh('npm', ['install', '-g', '--offline', '--no-audit', '--no-fund', '--prefix', prefix, tgz], { env, cwd: tmp });
		const bin = path.join(prefix, 'bin', 'gpumpi-doctor');
		assert.ok(fs.existsSync(bin), `${bin} not installed`);
		const installed = fs.realpathSync(path.join(prefix, 'lib', 'node_modules', 'gpumpi-doctor'));
		const r = spawnSync(bin, ['inspect', '--json'], { cwd: tmp, encoding: 'utf8', timeout: 180_000, maxBuffer: 256 << 20, env: { ...process.env, GPUMPI_ENGINE: '', GPUMPI_ADDON: '' } });
		assert.equal(r.status, 0, r.stderr);
		const report = JSON.parse(r.stdout) as { schema: string; raw: Array<{ id: string; command: string[]; exitCode: number | null }> };
		assert.equal(report.schema, 'gpumpi-doctor.report/1');
		const engine = report.raw.find(x => x.id === 'engine');
		assert.ok(engine, 'the report has no engine run');
		assert.ok(engine.command.some(a => a.startsWith(installed + path.sep)), `engine not from the install: ${engine.command.join(' ')}`);
		assert.equal(engine.exitCode, 0);
		assert.equal(report.raw.find(x => x.id === 'probe')?.exitCode, 0, 'the addon probe did not run from the install');
	});
});
