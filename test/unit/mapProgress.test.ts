/**
 * mapRunner's progress line (what `gpumpi-doctor map` prints on stderr and the map panel logs) shows the command as
 * it is launched: with the private shared-memory directory runLaunch adds to an Open MPI launch (shmBacking.ts), and
 * quoted so it pastes into a shell. Before, it was built from the spec before runLaunch added the directory, joined
 * with plain spaces: `--mca btl_vader_backing_directory /dev/shm/gpumpi-shm-…` was missing from it.
 *
 * The host here is a recording stand-in (the unit tier launches nothing): it answers `mpirun --version` with the
 * real captured Debian 12 text and `mktemp -d` with a directory name, and fails the launch itself. The real launch
 * with a real directory is test/engine/shmBacking.test.ts.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Host, HostRunOptions } from '../../extension/core/host';
import type { ExecuteResult } from '../../extension/core/proc';
import { defaultSpec } from '../../extension/core/launch/launchSpec';
import { DEFAULT_MAP_OPTIONS, runMap } from '../../extension/core/map/mapRunner';

const VERSION = fs.readFileSync(path.resolve(process.cwd(), 'test-fixtures', 'tools', 'debian12-cpu', 'mpirun_version.txt'), 'utf8');
const SHM_DIR = '/dev/shm/gpumpi-shm-Ab3dE6gH';

function result(exitCode: number, stdout = ''): ExecuteResult {
	return { exitCode, signal: null, stdout, stderr: '', timedOut: false, durationMs: 1 };
}

/** Records every argv; answers --version and mktemp; the launch fails with exit 1 and no output. */
function recordingHost(): { host: Host; runs: string[][] } {
	const runs: string[][] = [];
	const host: Host = {
		ref: { id: 'local', label: 'this machine', kind: 'local' },
		async run(argv: readonly string[], _o: HostRunOptions) {
			runs.push([...argv]);
			if (argv[1] === '--version') { return result(0, VERSION); }
			if (argv[0] === 'mktemp') { return result(0, `${SHM_DIR}\n`); }
			if (argv[0] === 'rm') { return result(0); }
			return result(1);
		},
		async readFile() { return { ok: false, error: 'none', notFound: true }; },
		async env() { return {}; },
		async which() { return null; },
		async listDir() { return []; },
		async realpath(p: string) { return p; },
		async identity() { return { uid: 1000, user: 'u', hostname: 'h' }; },
		async cpuCount() { return 4; },
	};
	return { host, runs };
}

describe('mapRunner: the progress line shows the command as launched', () => {
	it('an Open MPI launch: the line has the private shm directory and is the launched argv, shell-quoted', async () => {
		const { host, runs } = recordingHost();
		const lines: string[] = [];
		const spec = { ...defaultSpec('openmpi', 'mpirun.openmpi', 4), env: [['GPUMPI_NOTE', 'a b']] as Array<[string, string]> };
		const r = await runMap({ engine: '/opt/eng ine/gpumpi', spec, host, config: { label: 'default', env: [], mca: [], extraArgs: [] }, map: DEFAULT_MAP_OPTIONS, timeoutMs: 10_000, onProgress: l => lines.push(l) });
		assert.equal(r.ok, false, 'the stand-in launch fails');
		const launched = runs.find(a => a.includes('map'));
		assert.ok(launched, `a launch among ${JSON.stringify(runs)}`);
		const running = lines.find(l => l.startsWith('running 4 ranks: '));
		assert.ok(running, `progress lines: ${JSON.stringify(lines)}`);
		assert.match(running, new RegExp(`--mca btl_vader_backing_directory ${SHM_DIR} `));
		assert.match(running, / '\/opt\/eng ine\/gpumpi' map /, 'a path with a space is quoted');
		assert.match(running, /'GPUMPI_NOTE=a b'/, 'an environment value with a space is quoted');
		// Undo the quoting of this simple case: the words are exactly the launched argv.
		const words = running.slice('running 4 ranks: '.length).match(/'[^']*'|\S+/g)!.map(w => w.replace(/^'(.*)'$/, '$1'));
		assert.deepEqual(words, launched);
		assert.ok(lines.indexOf(running) < lines.findIndex(l => l.startsWith('6 pairs in all')), 'then the pair count');
	});

	it('an invalid spec throws before anything runs or is shown', async () => {
		const { host, runs } = recordingHost();
		const lines: string[] = [];
		const spec = { ...defaultSpec('openmpi', 'mpirun.openmpi', 4), env: [['BAD NAME', 'x']] as Array<[string, string]> };
		await assert.rejects(runMap({ engine: 'gpumpi', spec, host, config: { label: 'default', env: [], mca: [], extraArgs: [] }, map: DEFAULT_MAP_OPTIONS, timeoutMs: 10_000, onProgress: l => lines.push(l) }), /bad environment variable name/);
		assert.deepEqual(runs, []);
		assert.deepEqual(lines, []);
	});
});
