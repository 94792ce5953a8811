/**
 * Leftovers of the engine tier (issue 15): after every engine test (this file sorts last; its root `before` hook
 * runs before the first test of the tier), nothing new may be left in /dev/shm (Open MPI's vader segments, UCX's,
 * the fake CUDA's), in /tmp under gpumpi-* (test directories, labs, bundles), nor a network namespace of a lab
 * (gpd*). What was there before the tier is not counted (other runs on a shared machine); on a fresh CI machine
 * that is nothing. Kept by design and not counted: the lab registry directory /tmp/gpumpi-netns-labs when empty and
 * the ssh control directories /tmp/gpumpi-ssh-<uid>* (the product's own, reused across runs; their sockets are
 * checked: a ControlMaster left running is counted).
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sleep } from './faultHelpers';

const TMP = os.tmpdir();

function list(dir: string, keep: (name: string) => boolean): string[] {
	try { return fs.readdirSync(dir).filter(keep).map(n => path.join(dir, n)); } catch { return []; }
}

function netns(): string[] {
	try { return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8', timeout: 5000 }).split('\n').map(l => l.split(' ')[0]).filter(n => /^gpd[0-9a-f]{4}-/.test(n)).map(n => `netns ${n}`); } catch { return []; }
}

/** What the tier could leave, by name. */
function snapshot(): Set<string> {
	const byDesign = (p: string): boolean => {
		const n = path.basename(p);
		if (n === 'gpumpi-netns-labs') { return list(p, () => true).length === 0; }
		if (/^gpumpi-ssh-\d+/.test(n)) { return list(p, () => true).every(s => { try { return !fs.statSync(s).isSocket(); } catch { return true; } }); }
		return false;
	};
	return new Set([
		...list('/dev/shm', () => true),
		...list(TMP, n => n.startsWith('gpumpi-')).filter(p => !byDesign(p)),
		...netns(),
	]);
}

let before0: Set<string> | null = null;
before(() => { before0 = snapshot(); });

describe('leftovers after the engine tier', function () {
	this.timeout(30_000);
	it('leftovers: nothing new in /dev/shm, /tmp/gpumpi-* or the network namespaces (each left entry named)', async function () {
		if (!before0) { this.skip(); }
		let left: string[] = [];
		// Processes of the last test may still be exiting (an ssh ControlMaster persists, a rank unlinks its segment).
		for (let i = 0; i < 25; i++) {
			const now = snapshot();
			left = [...now].filter(p => !before0!.has(p)).sort();
			if (left.length === 0) { break; }
			await sleep(200);
		}
		const describe = (p: string): string => {
			try { const st = fs.statSync(p); return `${p} (${st.isDirectory() ? 'dir' : `${st.size} bytes`}, ${st.mtime.toISOString()})`; } catch { return p; }
		};
		// Open MPI's shared-memory segments (vader_segment.*) of ranks the suite kills on purpose (injected crashes in
		// reproTrials, the ssh cut in faultsSsh, cancels) count too: every Open MPI launch of the product puts them in a
		// directory of its own and removes it afterwards (extension/core/launch/shmBacking.ts).
		assert.deepEqual(left.map(describe), [], `the engine tier left ${left.length} thing(s) behind`);
	});
});
