/**
 * Issue 33: the seed's UCX (1.20.0) beside the testbed's 1.13.1, one call on the GPU machine (scripts/gpu/ucxVersions.sh;
 * the real capture test-fixtures/repro/h100-testbed/ucx-versions-2026-12-06.json.gz). The section of
 * docs/device-results.md is generated from it (scripts/ucxVersionsTable.mjs), and what the rules say about these
 * versions is read from it (scripts/genMeasured.mjs): this keeps the three in step with the capture.
 */
import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { gunzipSync } from 'node:zlib';

const FILE = path.resolve(process.cwd(), 'test-fixtures/repro/h100-testbed/ucx-versions-2026-12-06.json.gz');
type Variant = { config: string; variant: string; class: string; counts: Record<string, number> };
type Run = { stack: string; name: string; exit?: number; doc: { variants?: Variant[] } | null; skipped?: string };
const cap = JSON.parse(gunzipSync(fs.readFileSync(FILE)).toString('utf8')) as { stacks: Array<{ ucx: string; loaded: string; ucx_info_v: string }>; runs: Run[] };
const variant = (stack: string, run: string, v: string, noIpc = false): Variant =>
	cap.runs.find((r) => r.stack === stack && r.name === run)!.doc!.variants!.find((x) => x.variant === v && /UCX_TLS=\^cuda_ipc/.test(x.config) === noIpc)!;

describe('UCX 1.20.0 beside 1.13.1 on the GPU machine (real capture)', () => {
	it('each stack\'s ranks loaded that stack\'s libucp (the loader\'s trace), and ucx_info says the version', () => {
		assert.deepEqual(cap.stacks.map((s) => s.ucx), ['1.13.1', '1.20.0']);
		assert.match(cap.stacks[0].loaded, /\/opt\/testbed2\/lib\/libucp\.so\.0/);
		assert.match(cap.stacks[1].loaded, /\/opt\/ucx120\/lib\/libucp\.so\.0/);
		assert.doesNotMatch(cap.stacks[1].loaded, /testbed2\/lib\/libuc/);
		assert.match(cap.stacks[1].ucx_info_v, /Library version: 1\.20\.0/);
	});

	it('every run of both stacks ran (none skipped for time) and exited 0', () => {
		assert.equal(cap.runs.length, 10);
		for (const r of cap.runs) { assert.equal(r.skipped, undefined, `${r.stack} ${r.name}`); assert.equal(r.exit, 0, `${r.stack} ${r.name}`); }
	});

	it('1.20.0: IPC imports correct with cuda_ipc, crashed with UCX_TLS=^cuda_ipc at 64 MiB; the bounce buffer correct everywhere', () => {
		for (const v of ['direct', 'send-from-import']) {
			assert.equal(variant('1.20.0', 'ipc-64M', v).counts.correct, 4, v);
			assert.equal(variant('1.20.0', 'ipc-64M', v, true).counts.crashed, 4, `${v} ^cuda_ipc`);
		}
		for (const stack of ['1.13.1', '1.20.0']) {
			for (const size of ['4M', '64M']) {
				for (const noIpc of [false, true]) { assert.equal(variant(stack, `ipc-${size}`, 'bounce', noIpc).counts.correct, 4, `${stack} ${size}`); }
			}
		}
	});

	it('pool and VMM memory: crashes on 1.13.1, correct on 1.20.0', () => {
		assert.equal(variant('1.13.1', 'pool-64M', 'pool').class, 'fails');
		assert.ok(variant('1.13.1', 'pool-64M', 'vmm').counts.crashed > 0);
		for (const v of ['pool', 'vmm']) { assert.equal(variant('1.20.0', 'pool-64M', v).class, 'works', v); }
	});

	it('docs/device-results.md has the section this capture gives (scripts/ucxVersionsTable.mjs --check)', () => {
		const r = spawnSync(process.execPath, [path.resolve(process.cwd(), 'scripts/ucxVersionsTable.mjs'), '--check', FILE], { encoding: 'utf8' });
		assert.equal(r.status, 0, r.stderr);
	});
});
