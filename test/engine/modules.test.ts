/**
 * Environment modules for real: Debian's Lmod (apt `lmod`, which installs /etc/profile.d/lmod.sh, so `module` is
 * defined in the non-interactive login shell `bash -l` that SshHost runs the setup line in) on a network-namespace
 * host reached over real ssh. Two Lua modulefiles written by this test, `mpi/openmpi` and `mpi/mpich`, prepend a
 * private bin folder whose `mpicc` / `mpirun` / `mpiexec` are symlinks to Debian's `.openmpi` / `.mpich` programs
 * (the way a cluster's MPI modules put their own mpicc first on PATH). A host whose setup line loads one module is
 * inspected through openRemoteTarget: deployEngine builds the engine there with that module's mpicc, the engine
 * runs under that module's mpirun, and the report names that MPI. MODULEPATH comes from the setup line
 * (`module use`), so the machine's real /etc is never changed. The lab's namespaces and processes are removed in
 * `after`, also when a test fails.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { nativeSourceFiles } from '../../extension/core/hosts/deployEngine';
import { hostSetting } from '../../extension/core/hosts/hostSettings';
import { openRemoteTarget } from '../../extension/core/hosts/remoteTarget';
import { SshHost } from '../../extension/core/hosts/sshHost';
import { inspectHost } from '../../extension/core/inspect';
import { repoRoot } from '../../extension/core/native';
import type { Report } from '../../extension/shared/report';
import { createNetnsLab, netnsUnavailable, type NetnsLab } from '../hosts/netnsHosts';

const LMOD_INIT = '/etc/profile.d/lmod.sh';

/** Why this suite cannot run here, or null. */
function unavailable(): string | null {
	const lab = netnsUnavailable();
	if (lab) { return lab; }
	if (!fs.existsSync(LMOD_INIT)) { return `${LMOD_INIT} missing (apt-get install lmod)`; }
	for (const p of ['/usr/bin/mpicc.openmpi', '/usr/bin/mpicc.mpich', '/usr/bin/mpirun.openmpi', '/usr/bin/mpirun.mpich']) {
		if (!fs.existsSync(p)) { return `${p} missing`; }
	}
	return null;
}

/** Write modulefile `mpi/<name>.lua` that prepends a bin folder of symlinks named after the generic programs. */
function writeMpiModule(root: string, name: string, links: Record<string, string>, whatis: string): void {
	const bin = path.join(root, 'opt', name, 'bin');
	fs.mkdirSync(bin, { recursive: true });
	for (const [link, target] of Object.entries(links)) { fs.symlinkSync(target, path.join(bin, link)); }
	fs.mkdirSync(path.join(root, 'modulefiles', 'mpi'), { recursive: true });
	fs.writeFileSync(path.join(root, 'modulefiles', 'mpi', `${name}.lua`),
		`-- written by test/engine/modules.test.ts\nwhatis(${JSON.stringify(whatis)})\nfamily("mpi")\nprepend_path("PATH", ${JSON.stringify(bin)})\n`);
}

describe('environment modules (Lmod) on an ssh host', function () {
	this.timeout(300_000);
	const why = unavailable();
	let lab: NetnsLab | undefined;
	let root = '';
	let nativeDir = '';

	before(async function () {
		if (why) { this.skip(); }
		this.timeout(60_000);
		lab = await createNetnsLab({ count: 1 });
		root = path.join(lab.dir, 'lmod');
		writeMpiModule(root, 'openmpi', {
			mpicc: '/usr/bin/mpicc.openmpi', mpirun: '/usr/bin/mpirun.openmpi', mpiexec: '/usr/bin/mpiexec.openmpi',
		}, 'Open MPI (Debian openmpi-bin)');
		writeMpiModule(root, 'mpich', {
			mpicc: '/usr/bin/mpicc.mpich', mpirun: '/usr/bin/mpirun.mpich', mpiexec: '/usr/bin/mpiexec.mpich',
			// Hydra (mpiexec.hydra) starts the hydra_pmi_proxy found next to the mpiexec it was invoked as.
			hydra_pmi_proxy: '/usr/bin/hydra_pmi_proxy',
		}, 'MPICH (Debian mpich)');
		// What deploy copies (no build folders), snapshotted so edits to the tree during the run change nothing.
		const source = path.join(repoRoot() ?? process.cwd(), 'native');
		nativeDir = path.join(lab.dir, 'native-snapshot');
		for (const f of nativeSourceFiles(source)) {
			fs.mkdirSync(path.dirname(path.join(nativeDir, f)), { recursive: true });
			fs.copyFileSync(path.join(source, f), path.join(nativeDir, f));
		}
	});

	after(function () {
		this.timeout(30_000);
		lab?.teardown();
	});

	/** Inspect host-a with `setup`, deploying the engine (built with the module's mpicc) into the lab. */
	async function inspectWith(name: string, setup: string): Promise<{ report: Report; progress: string[] }> {
		assert.ok(lab);
		const progress: string[] = [];
		const target = await openRemoteTarget(hostSetting({ name, sshHost: 'host-a', setup }), {
			configFile: lab.sshConfig, controlDir: path.join(lab.dir, `cm-${name}`), nativeDir,
			cacheRoot: path.join(lab.dir, 'engine-cache'), onProgress: m => progress.push(m),
		});
		try {
			assert.ok(target.deploy?.ok, `deploy failed: ${JSON.stringify(target.deploy)}`);
			const report = await inspectHost(target.host, {
				ranks: 1, timeoutSeconds: 90, enginePath: target.enginePath, mpirunPath: target.mpirunPath,
				locateEngine: target.locateEngine, probe: target.probe,
			});
			return { report, progress };
		} finally {
			await target.close();
		}
	}

	it('`module` is defined in the login shell the SshHost uses, and the modules switch mpicc', async () => {
		assert.ok(lab);
		const h = new SshHost({ destination: 'host-a', configFile: lab.sshConfig, controlDir: path.join(lab.dir, 'cm-probe'),
			setup: `module use ${root}/modulefiles && module load mpi/mpich` });
		try {
			const r = await h.run(['mpicc', '-show'], { timeoutMs: 30_000 });
			assert.equal(r.exitCode, 0, `${r.error} ${r.stderr}`);
			assert.match(r.stdout, /-lmpich\b/, 'mpicc of mpi/mpich is MPICH\'s');
			const missing = new SshHost({ destination: 'host-a', configFile: lab.sshConfig, controlDir: path.join(lab.dir, 'cm-probe2'),
				setup: `module use ${root}/modulefiles && module load mpi/nonexistent` });
			const bad = await missing.run(['true'], { timeoutMs: 30_000 });
			await missing.close();
			assert.match(bad.error ?? '', /setup line for host-a failed .*mpi\/nonexistent/s, 'Lmod\'s own error reaches the message');
		} finally {
			await h.close();
		}
	});

	it('setup `module load mpi/mpich`: the engine is built with MPICH there and the report shows MPICH 4.0.2', async () => {
		const { report } = await inspectWith('mod-mpich', `module use ${root}/modulefiles && module load mpi/mpich`);
		assert.equal(report.host.label, 'mod-mpich (host-a)');
		assert.match(report.summary.mpi.label, /^MPICH 4\.0\.2/, `summary: ${JSON.stringify(report.summary.mpi)}`);
		const engine = report.raw.find(r => r.id === 'engine');
		assert.equal(engine?.exitCode, 0, `engine: ${engine?.error} ${engine?.stderr}`);
		assert.match(engine?.stdout ?? '', /MPICH Version:\\t4\.0\.2/, 'the engine itself links MPICH 4.0.2');
	});

	it('setup `module load mpi/openmpi`: the engine is rebuilt with Open MPI and the report shows Open MPI 4.1.4', async () => {
		const { report, progress } = await inspectWith('mod-openmpi', `module use ${root}/modulefiles && module load mpi/openmpi`);
		assert.match(report.summary.mpi.label, /^Open MPI 4\.1\.4/, `summary: ${JSON.stringify(report.summary.mpi)}`);
		const engine = report.raw.find(r => r.id === 'engine');
		assert.equal(engine?.exitCode, 0, `engine: ${engine?.error} ${engine?.stderr}`);
		assert.match(engine?.stdout ?? '', /Open MPI v4\.1\.4/, 'the engine itself links Open MPI 4.1.4');
		assert.ok(progress.length > 0, 'deploy reported progress');
	});
});
