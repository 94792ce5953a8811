/**
 * The guard's MPI entry points are generated from one spec (native/guard/mpiCalls.spec, scripts/genGuardWrappers.mjs):
 * the checked-in outputs are what the generator makes of the spec now, the spec's checks reject bad rows, and no
 * hand-written MPI_* definition is left in native/guard except the lifecycle ones.
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = process.cwd();
const GEN = path.join(ROOT, 'scripts', 'genGuardWrappers.mjs');

describe('guard wrappers generated from native/guard/mpiCalls.spec', () => {
	it('the checked-in outputs are up to date (node scripts/genGuardWrappers.mjs --check)', () => {
		const r = spawnSync(process.execPath, [GEN, '--check'], { encoding: 'utf8' });
		assert.equal(r.status, 0, r.stderr);
	});

	it('no hand-written MPI_* definition in native/guard but the lifecycle ones', () => {
		const dir = path.join(ROOT, 'native', 'guard');
		const defined: string[] = [];
		for (const f of fs.readdirSync(dir).filter(n => /\.(cc|hh)$/.test(n) && !n.includes('.gen.'))) {
			for (const m of fs.readFileSync(path.join(dir, f), 'utf8').matchAll(/^GUARD_API\s+int\s+(MPI_\w+)\s*\(/gm)) { defined.push(m[1]); }
		}
		assert.deepEqual(defined.sort(), ['MPI_Comm_free', 'MPI_Finalize', 'MPI_Init', 'MPI_Init_thread']);
	});

	it('the spec checks: a buffer without its count, an unknown role or kind, a call twice are errors naming the line', async () => {
		const { parseSpec } = await import(GEN) as { parseSpec: (t: string) => unknown[] };
		const ok = 'Send observe c | const void* buf@buf, int count@count, MPI_Datatype type@type, int dest@peer, int tag, MPI_Comm comm@comm';
		assert.equal(parseSpec(ok).length, 1);
		assert.throws(() => parseSpec('Send observe | const void* buf@buf, MPI_Datatype type@type, MPI_Comm comm@comm'), /:1: Send has a buffer but not its count/);
		assert.throws(() => parseSpec('# c\nSend observe | int x@bogus'), /:2: unknown role bogus/);
		assert.throws(() => parseSpec('Send watch | int x'), /kind watch/);
		assert.throws(() => parseSpec(`${ok}\n${ok}`), /:2: Send twice/);
	});

	it('the generated shells: observed calls pass the call site, MPI-4 _c forms only under MPI_VERSION >= 4 with MPI_Count counts', () => {
		const cc = fs.readFileSync(path.join(ROOT, 'native', 'guard', 'guardWrappers.gen.cc'), 'utf8');
		assert.match(cc, /GUARD_API int MPI_Send\(const void\* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm\) \{\n\tif \(!st\(\)\.active\) return PMPI_Send\(buf, count, type, dest, tag, comm\);\n\treturn on_Send\(buf, count, type, dest, tag, comm, __builtin_return_address\(0\)\);/);
		const large = cc.slice(cc.indexOf('#if defined(MPI_VERSION) && MPI_VERSION >= 4'));
		assert.match(large, /GUARD_API int MPI_Put_c\(const void\* obuf, MPI_Count ocount, MPI_Datatype otype, int target, MPI_Aint tdisp, MPI_Count tcount, MPI_Datatype ttype, MPI_Win win\)/);
		assert.ok(!cc.slice(0, cc.indexOf('#if defined(MPI_VERSION)')).includes('_c('), 'no _c form outside the MPI-4 block');
		const names = execFileSync('grep', ['-o', 'GUARD_CALL([A-Za-z_]*)', path.join(ROOT, 'native', 'guard', 'guardCalls.def')], { encoding: 'utf8' }).trim().split('\n');
		assert.equal(names.length, 43);
		assert.deepEqual(names.slice(0, 3), ['GUARD_CALL(Send)', 'GUARD_CALL(Ssend)', 'GUARD_CALL(Bsend)']);
	});
});
