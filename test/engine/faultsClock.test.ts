/**
 * Clock skew between this machine and an ssh host (issue 15). What the product does with times (read from the code):
 * the engine cache on a host is keyed by content (sha256 of the sources + the host's toolchain) and a `built.ok`
 * marker, never by a time; report, bundle and log times are this machine's; durations and timeouts are measured on
 * one clock of one machine (performance.now / setTimeout: monotonic; the engine: steady_clock, MPI_Wtime). The one
 * place where two machines' clocks meet is the deploy: tar carries this machine's file times to the host, where make
 * compares them with the host's clock. A host whose clock is behind ours sees our sources as written in its future.
 * CLOCK_REALTIME cannot be namespaced (`unshare --time` moves only the monotonic and boot clocks), and changing the
 * machine's clock would move every process on it; so the skew is made real from the other side: the sources sent
 * carry file times a day ahead of the host's clock (what a host a day behind sees), and, separately, 25 years behind
 * (a host far ahead). Real ssh, tar, cmake and make on a namespace host; the deploy must build, the engine run, a
 * second deploy reuse it, and a second `cmake --build` there must find nothing to do (no "Clock skew detected", no
 * rebuild: the build tree is consistent under the host's own clock).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { deployEngine, nativeSourceFiles } from '../../extension/core/hosts/deployEngine';
import { SshHost } from '../../extension/core/hosts/sshHost';
import { repoRoot } from '../../extension/core/native';
import { createNetnsLab, type NetnsLab } from '../hosts/netnsHosts';

describe('faults: clock skew between this machine and the ssh host (file times in the deploy)', function () {
	this.timeout(400_000);
	let lab: NetnsLab;
	let h: SshHost;
	before(async function () {
		this.timeout(60_000);
		if (process.getuid?.() !== 0) { this.skip(); }
		lab = await createNetnsLab({ count: 1 });
		h = new SshHost({ destination: 'host-a', configFile: lab.sshConfig, controlDir: path.join(lab.dir, 'cm') });
	});
	after(async function () {
		this.timeout(30_000);
		await h?.close().catch(() => undefined);
		lab?.teardown();
	});

	for (const [label, offsetS] of [['a day ahead of the host\'s clock (a host whose clock is behind)', 86_400], ['25 years behind (a host whose clock is far ahead)', -25 * 365 * 86_400]] as const) {
		it(`sources with file times ${label}: the deploy builds, the engine runs, it is reused, and the build tree is consistent there`, async () => {
			const source = path.join(repoRoot() ?? process.cwd(), 'native');
			const nativeDir = path.join(lab.dir, `native-${offsetS > 0 ? 'future' : 'past'}`);
			const when = new Date(Date.now() + offsetS * 1000);
			for (const f of nativeSourceFiles(source)) {
				fs.mkdirSync(path.dirname(path.join(nativeDir, f)), { recursive: true });
				fs.copyFileSync(path.join(source, f), path.join(nativeDir, f));
				fs.utimesSync(path.join(nativeDir, f), when, when);
			}
			const cacheRoot = path.join(lab.dir, `cache-${offsetS > 0 ? 'future' : 'past'}`);
			const t0 = Date.now();
			const first = await deployEngine(h, { nativeDir, cacheRoot, mpicc: 'mpicc.openmpi' });
			assert.ok(first.ok, `deploy failed: ${!first.ok ? `${first.error}\n${first.lines.join('\n')}` : ''}`);
			const took = Date.now() - t0;
			const run = await h.run([first.enginePath, '--version'], { timeoutMs: 30_000 });
			assert.equal(run.exitCode, 0, `${run.error} ${run.stderr}`);
			const second = await deployEngine(h, { nativeDir, cacheRoot, mpicc: 'mpicc.openmpi' });
			assert.ok(second.ok && second.reused && second.enginePath === first.enginePath, 'the built engine was not reused');
			// What the host's own make thinks of the tree: nothing to rebuild, no skew warning.
			const again = await h.run(['cmake', '--build', path.posix.join(first.dir, 'build'), '--target', 'gpumpi_cli'], { timeoutMs: 300_000 });
			const text = `${again.stdout}\n${again.stderr}`;
			const rebuilt = text.split('\n').filter(l => /Building|Linking|Re-running CMake/.test(l));
			const skew = text.split('\n').filter(l => /[Cc]lock skew|in the future/.test(l));
			console.log(`  [clock skew ${offsetS > 0 ? '+1 day' : '-25 years'}] first deploy ${took} ms; a second cmake --build: exit ${again.exitCode}, ${rebuilt.length} rebuild line(s), ${skew.length} skew warning(s)${skew.length ? `: ${skew[0].slice(0, 160)}` : ''}`);
			assert.equal(again.exitCode, 0, text.slice(-1500));
			assert.deepEqual(skew, [], 'make saw file times in the future');
			assert.deepEqual(rebuilt, [], 'make rebuilt a tree that was complete');
		});
	}
});
