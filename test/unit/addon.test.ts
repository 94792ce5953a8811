/**
 * The real Node addon (native/build/addon/Release/gpumpi_addon.node; build it first with
 * `node scripts/buildNative.mjs --addon-only`) and the loader in extension/core/native.ts, on this CPU machine:
 * Debian Open MPI 4.1.4, MPICH 4.0.2 and UCX 1.13.1 are installed; there is no CUDA driver and no NVML.
 *
 * The probe dlopens MPI and UCX, whose constructors run in the calling process; a Node process that did so has died
 * now and then with SIGSEGV in Node's own code (extension/core/inspect.ts addonProbe, docs/reliability.md). The
 * product never probes in its own process, and these tests do not either: the probe is the product's (a child
 * process, run once more if it was killed before it printed), and the calls that check the addon's own API run in
 * a child of their own, whose death is a failure naming the signal and its stderr, not a dead test runner.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ProbeResult, ProbedLibrary } from '../../extension/shared/addonTypes';
import { candidateRoots, findAddonFile, findEngine, loadAddon, repoRoot } from '../../extension/core/native';
import { addonProbe } from '../../extension/core/inspect';
import { execute } from '../../extension/core/proc';

function lib(r: ProbeResult, soname: string): ProbedLibrary {
	const found = r.libraries.find(l => l.soname === soname);
	assert.ok(found, `${soname} missing from libraries: ${r.libraries.map(l => l.soname).join(', ')}`);
	return found;
}

/** What the API child reports: version(), two probes at once, and the usage errors of wrong arguments. */
interface ApiChecks { version: string; concurrent: [ProbeResult, ProbeResult]; usage: string[] }

const API_CHILD = `const a = require(process.argv[1]);
const usage = [];
for (const f of [() => a.probe(1), () => a.version(1)]) { try { f(); usage.push('no throw'); } catch (e) { usage.push(e.name + ': ' + e.message); } }
Promise.all([a.probe(), a.probe()]).then(c => process.stdout.write(JSON.stringify({ version: a.version(), concurrent: c, usage }), () => process.exit(0)));`;

describe('native addon', function () {
	this.timeout(60_000);
	let result: ProbeResult;
	let api: ApiChecks;

	before(async () => {
		const outcome = await addonProbe();
		assert.ok('result' in outcome, 'error' in outcome ? outcome.error : '');
		if (outcome.note) { console.log(`      (probe note: ${outcome.note})`); }
		result = outcome.result;
		const file = findAddonFile().file;
		assert.ok(file, 'addon not built');
		const child = () => execute([process.execPath, '-e', API_CHILD, file], { timeoutMs: 30_000 }).result;
		let r = await child();
		if (r.signal && !r.timedOut) {
			// The product's policy (addonProbe): a process killed by a signal is run once more, the crash logged.
			console.log(`      (the API child was killed by ${r.signal}; once more. Its stderr: ${r.stderr.slice(-1500)})`);
			r = await child();
		}
		assert.ok(r.exitCode === 0, `the API child ended with ${r.signal ?? `exit code ${r.exitCode}`}${r.error ? ` (${r.error})` : ''}: ${r.stderr.slice(-2000)}`);
		api = JSON.parse(r.stdout) as ApiChecks;
	});

	it('loadAddon reports the paths it tried, ending at the one it loaded', () => {
		// Loading runs no library constructor of MPI or UCX (the addon links neither); only probe() dlopens them.
		const load = loadAddon({});
		assert.ok(load.tried.length > 0);
		assert.equal(load.error, undefined);
		assert.ok(load.addon);
		assert.match(load.tried[load.tried.length - 1], /native\/build\/addon\/Release\/gpumpi_addon\.node$/);
	});

	it('version() is the package version', () => {
		const root = repoRoot();
		assert.ok(root);
		const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
		assert.equal(api.version, pkg.version);
	});

	it('probe() tries every library in order, each entry complete', () => {
		assert.deepEqual(result.libraries.map(l => l.soname), ['libmpi.so.40', 'libmpi.so.12', 'libmpich.so.12',
			'libmpi_cray.so.12', 'libmpi.so', 'libucp.so.0', 'libcuda.so.1', 'libnvidia-ml.so.1']);
		for (const l of result.libraries) {
			assert.ok(['mpi', 'ucx', 'cuda', 'nvml'].includes(l.kind));
			assert.ok(l.soname.length > 0);
			for (const k of ['path', 'version', 'error'] as const) { assert.equal(typeof l[k], 'string'); }
			if (l.loaded) { assert.ok(path.isAbsolute(l.path), `${l.soname} path ${l.path}`); }
			else { assert.equal(l.path, ''); assert.ok(l.error.length > 0, `${l.soname} not loaded but no error`); }
		}
		assert.ok(result.elapsed_ms > 0 && result.elapsed_ms < 10_000);
	});
	it('finds Open MPI 4.1.4 through libmpi.so.40, version from MPI_Get_library_version before MPI_Init', () => {
		const l = lib(result, 'libmpi.so.40');
		assert.equal(l.loaded, true);
		assert.equal(l.kind, 'mpi');
		assert.match(l.path, /libmpi\.so\.40/);
		assert.match(l.version, /^Open MPI v4\.1\.4, package: Debian OpenMPI/);
		assert.doesNotMatch(l.version, /[\0\s]$/);
		assert.equal(l.error, '');
	});

	it('finds MPICH 4.0.2 through libmpich.so.12 with its whole multi-line version', () => {
		const l = lib(result, 'libmpich.so.12');
		assert.equal(l.loaded, true);
		assert.match(l.version, /^MPICH Version:\t4\.0\.2\n/);
		assert.match(l.version, /\nMPICH Device:\tch4:ucx\n/);
	});

	it('reports absent MPI ABIs as not loaded with the dlopen error', () => {
		for (const soname of ['libmpi.so.12', 'libmpi_cray.so.12']) {
			const l = lib(result, soname);
			assert.equal(l.loaded, false);
			assert.match(l.error, new RegExp(`${soname.replace(/\./g, '\\.')}: cannot open shared object file`));
		}
	});

	it('finds UCX 1.13.1 through libucp.so.0', () => {
		const l = lib(result, 'libucp.so.0');
		assert.equal(l.loaded, true);
		assert.equal(l.kind, 'ucx');
		assert.match(l.version, /^1\.13\.1/);
	});

	it('has no CUDA driver and no NVML here: not loaded, error text, nvml null', () => {
		const cuda = lib(result, 'libcuda.so.1');
		assert.equal(cuda.loaded, false);
		assert.match(cuda.error, /libcuda\.so\.1/);
		const nvml = lib(result, 'libnvidia-ml.so.1');
		assert.equal(nvml.loaded, false);
		assert.ok(nvml.error.length > 0);
		assert.equal(result.nvml, null);
	});

	it('concurrent probes both resolve with the same libraries (serialised in the addon)', () => {
		assert.deepEqual(api.concurrent[0].libraries, result.libraries);
		assert.deepEqual(api.concurrent[1].libraries, result.libraries);
	});

	it('rejects wrong arguments with a usage TypeError instead of crashing', () => {
		assert.deepEqual(api.usage, ['TypeError: Usage: probe()', 'TypeError: Usage: version()']);
	});
});

describe('native loader (extension/core/native.ts)', () => {
	it('GPUMPI_ADDON pointing to a nonexistent file is tried first, then falls through', () => {
		const missing = path.join(os.tmpdir(), 'gpumpi-no-such-dir', 'gpumpi_addon.node');
		const load = loadAddon({ GPUMPI_ADDON: missing });
		assert.equal(load.tried[0], missing);
		assert.ok(load.addon, load.error);
		assert.ok(load.tried.length >= 2);
	});

	it('a file that exists but is not a loadable addon stops the search with that error', () => {
		// A fake, corrupt .node file: a broken binary cannot be produced any other way here.
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpumpi-addon-'));
		const bad = path.join(dir, 'gpumpi_addon.node');
		fs.writeFileSync(bad, 'not an ELF file\n');
		try {
			const load = loadAddon({ GPUMPI_ADDON: bad });
			assert.equal(load.addon, null);
			assert.deepEqual(load.tried, [bad]);
			assert.match(load.error ?? '', /gpumpi_addon\.node failed to load: .*(invalid ELF header|file too short)/);
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});

	it('candidate roots include the package root, without duplicates', () => {
		const roots = candidateRoots();
		assert.equal(new Set(roots).size, roots.length);
		assert.ok(roots.includes(repoRoot() ?? '<none>'));
	});

	it('findEngine finds each built flavour and honours GPUMPI_ENGINE only when it is executable', () => {
		for (const flavor of ['default', 'openmpi', 'mpich'] as const) {
			const e = findEngine(flavor, {});
			assert.ok(e.path, `engine ${flavor} not built; tried ${e.tried.join(', ')}`);
			assert.ok(e.path.endsWith(path.join('native', 'build', flavor === 'default' ? 'engine' : `engine-${flavor}`, 'gpumpi')));
		}
		const notExec = path.join(repoRoot() ?? '.', 'package.json');
		const e = findEngine('default', { GPUMPI_ENGINE: notExec });
		assert.equal(e.tried[0], notExec);
		assert.notEqual(e.path, notExec);
		const explicit = findEngine('mpich', { GPUMPI_ENGINE: findEngine('openmpi', {}).path ?? '' });
		assert.match(explicit.path ?? '', /engine-openmpi\/gpumpi$/);
	});
});

describe('scripts/buildNative.mjs refuses clearly', function () {
	this.timeout(30_000);
	const script = (): string => path.join(repoRoot() ?? '.', 'scripts', 'buildNative.mjs');
	const runScript = (args: string[], env: NodeJS.ProcessEnv) =>
		execute([process.execPath, script(), ...args], { timeoutMs: 20_000, env }).result;

	it('names cmake when it is not on PATH (exit 1, nothing built)', async () => {
		const r = await runScript(['--engine-only'], { ...process.env, PATH: '/nonexistent' });
		assert.equal(r.exitCode, 1);
		assert.match(r.stderr, /cmake not found on PATH/);
	});

	it('names the MPI compiler wrapper it cannot find', async () => {
		const r = await runScript(['--engine-only', '--mpicc', '/nonexistent/mpicc'], process.env);
		assert.equal(r.exitCode, 1);
		assert.match(r.stderr, /\/nonexistent\/mpicc not found: install an MPI development package/);
	});

	it('rejects contradictory or unknown flags', async () => {
		const both = await runScript(['--addon-only', '--engine-only'], process.env);
		assert.equal(both.exitCode, 1);
		assert.match(both.stderr, /exclude each other/);
		const unknown = await runScript(['--frobnicate'], process.env);
		assert.equal(unknown.exitCode, 1);
		assert.match(unknown.stderr, /unknown argument '--frobnicate'/);
	});
});
