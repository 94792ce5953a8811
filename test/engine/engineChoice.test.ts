/**
 * Which engine a local launch uses when none was built for the launcher's MPI (extension/core/hosts/launchTarget.ts
 * defaultEngineCheck). Real: the built CLI, copied into a package folder of its own that holds only the default engine
 * build (native/build/engine/gpumpi, a link to this checkout's, built with Debian's mpicc, i.e. Open MPI), real
 * `readelf -d`, real mpirun. Before: an MPICH launcher started that Open MPI engine as 4 separate one-rank jobs and the
 * message blamed the launcher's PMI ("does not match this MPI"), never naming the engine it had used.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { repoRoot } from '../../extension/core/native';

const ROOT = repoRoot() ?? process.cwd();
const DEFAULT_ENGINE = path.join(ROOT, 'native', 'build', 'engine', 'gpumpi');

function which(name: string): boolean {
	return spawnSync('sh', ['-c', 'command -v "$1"', 'sh', name]).status === 0;
}

describe('the default engine build used for another MPI\'s launcher', function () {
	this.timeout(180_000);
	let pkg = '';
	let soname = '';
	before(function () {
		if (!fs.existsSync(DEFAULT_ENGINE) || !which('readelf')) { this.skip(); }
		soname = /Shared library: \[(libmpi(?:ch)?\.so[^\]]*)\]/.exec(spawnSync('readelf', ['-d', DEFAULT_ENGINE], { encoding: 'utf8' }).stdout)?.[1] ?? '';
		pkg = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-enginechoice-'));
		fs.writeFileSync(path.join(pkg, 'package.json'), JSON.stringify({ name: 'gpumpi-doctor', version: '0.0.0' }));
		fs.mkdirSync(path.join(pkg, 'dist'));
		fs.copyFileSync(path.join(ROOT, 'dist', 'cli.js'), path.join(pkg, 'dist', 'cli.js'));
		fs.mkdirSync(path.join(pkg, 'native', 'build', 'engine'), { recursive: true });
		fs.symlinkSync(DEFAULT_ENGINE, path.join(pkg, 'native', 'build', 'engine', 'gpumpi'));
	});
	after(() => { if (pkg) { fs.rmSync(pkg, { recursive: true, force: true }); } });

	// dist/cli.js exports run(), which bin/gpumpi-doctor.js calls; bin itself is not copied (it would find this
	// checkout, which has every engine build).
	before(() => { if (pkg) { fs.writeFileSync(path.join(pkg, 'dist', 'main.js'), "require('./cli.js').run();\n"); } });
	const runMain = (mpirun: string) => {
		const env: Record<string, string | undefined> = { ...process.env };
		for (const k of Object.keys(env)) { if (k.startsWith('GPUMPI_')) { delete env[k]; } }
		return spawnSync(process.execPath, [path.join(pkg, 'dist', 'main.js'), 'repro', 'ipc', '--json', '--trials', '2', '--memory', 'host', '--size', '1M', '--variants', 'direct', '--mpirun', mpirun],
			{ cwd: pkg, env, encoding: 'utf8', timeout: 150_000 });
	};

	it('an MPICH launcher and only an Open MPI engine: refused before any launch, naming the engine, what it links and how to build one', function () {
		if (soname !== 'libmpi.so.40' || !which('mpirun.mpich')) { this.skip(); }
		const r = runMain('mpirun.mpich');
		assert.equal(r.status, 3, r.stderr); // EXIT.failed
		assert.equal(r.stdout, '');
		assert.match(r.stderr, new RegExp(`no engine built for MPICH was found, so the default build ${path.join(pkg, 'native', 'build', 'engine', 'gpumpi').replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} \\(built with the mpicc on PATH\\) is used, but it links libmpi\\.so\\.40 \\(Open MPI's; readelf: "0x[0-9a-f]+ \\(NEEDED\\) +Shared library: \\[libmpi\\.so\\.40\\]"\\): the MPICH launcher would start it as separate one-rank jobs\\. Build the engine for MPICH \\(npm run build:native -- --all-mpis`));
		assert.doesNotMatch(r.stderr, /separate MPI jobs of world size 1 started/);
	});

	it('an Open MPI launcher and that same engine: it runs, and stderr says which build was used and what it links', function () {
		if (soname !== 'libmpi.so.40' || !which('mpirun.openmpi')) { this.skip(); }
		const r = runMain('mpirun.openmpi');
		assert.equal(r.status, 0, r.stderr);
		assert.match(r.stderr, /no engine built for Open MPI was found, so the default build \S+ \(built with the mpicc on PATH\) is used; it links libmpi\.so\.40 \(Open MPI's\)/);
		const doc = JSON.parse(r.stdout) as { variants: Array<{ counts: Record<string, number> }> };
		assert.equal(doc.variants[0].counts.correct, 2, r.stdout.slice(0, 2000));
	});
});
