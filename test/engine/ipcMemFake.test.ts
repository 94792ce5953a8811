/**
 * The memory IPC capability probe of `gpumpi inspect` and the `repro ipc` variants pool and vmm, through the FAKE
 * CUDA driver (native/fakes/fakeCuda.c, loaded with GPUMPI_LIBCUDA): there is no GPU here. What is real: the engine,
 * both MPIs and their launchers, the allocation code (common/gpuMemory: cuMemAllocAsync, cuMemPoolCreate +
 * cuMemAllocFromPoolAsync, cuMemCreate + cuMemAddressReserve + cuMemMap + cuMemSetAccess, and their frees), the
 * attribute query, the JSON, and MPI moving the words between ranks (the fake's "device memory" is host shared memory).
 * What the fake decides: which kinds are legacy-IPC capable and cuIpcGetMemHandle's error. The real driver's answers
 * are the H200 run's (scripts/gpu/ipcMem.sh).
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { repoRoot } from '../../extension/core/native';
import { execute } from '../../extension/core/proc';
import { extractJsonDocument } from '../../extension/core/parsers/framedDocument';

const ROOT = repoRoot() ?? process.cwd();
const TIMEOUT_MS = 90_000;
const FLAVORS = [
	{ flavor: 'openmpi', launch: ['mpirun.openmpi', '--allow-run-as-root', '--oversubscribe', '--mca', 'btl_tcp_if_include', 'lo'] },
	{ flavor: 'mpich', launch: ['mpirun.mpich'] },
] as const;

for (const { flavor, launch } of FLAVORS) {
	describe(`memory IPC probe and repro ipc pool/vmm (fake driver) under ${launch[0]}`, function () {
		this.timeout(TIMEOUT_MS * 3);
		const dir = path.join(ROOT, 'native', 'build', `engine-${flavor}`);
		const engine = path.join(dir, 'gpumpi');
		const fake = path.join(dir, 'libgpumpi_fakecuda.so');
		const env = (): Record<string, string | undefined> => {
			const e: Record<string, string | undefined> = { ...process.env, GPUMPI_LIBCUDA: fake, UCX_NET_DEVICES: 'lo' };
			delete e.GPUMPI_INSPECT_IPC_MEM;
			return e;
		};
		before(() => { for (const p of [engine, fake]) { assert.ok(fs.existsSync(p), `${p} not built: run node scripts/ensure.mjs --all-mpis`); } });

		it('inspect: every rank probes six kinds; only cuMemAlloc is legacy-IPC capable, handle types as created', async () => {
			const r = await execute([...launch, '-np', '2', engine, 'inspect'], { timeoutMs: TIMEOUT_MS, env: env() }).result;
			assert.equal(r.exitCode, 0, r.stderr.slice(-2000));
			const doc = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))) as { ranks: { ipc_memory: { probed: boolean; allocations: { kind: string; allocated: boolean; legacy_ipc_capable: boolean; allowed_handle_types: string; from_pool: boolean; ipc_get_mem_handle: string }[] } }[] };
			assert.equal(doc.ranks.length, 2);
			for (const rank of doc.ranks) {
				const a = rank.ipc_memory.allocations;
				assert.deepEqual(a.map((x) => x.kind), ['cuMemAlloc', 'pool-default', 'pool', 'pool-posix-fd', 'vmm', 'vmm-posix-fd']);
				assert.ok(a.every((x) => x.allocated));
				assert.deepEqual(a.map((x) => x.legacy_ipc_capable), [true, false, false, false, false, false]);
				assert.deepEqual(a.map((x) => x.allowed_handle_types), ['none', 'none', 'none', 'posix_fd', 'none', 'posix_fd']);
				assert.deepEqual(a.map((x) => x.from_pool), [false, true, true, true, false, false]);
				assert.equal(a[0].ipc_get_mem_handle, 'ok');
				assert.ok(a.slice(1).every((x) => x.ipc_get_mem_handle !== 'ok'));
			}
			// The fake driver refuses attributes 116 / 124 (GPUDirect RDMA, dma_buf): "unknown" (null), not a rank error.
			const raw = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))) as { ranks: { cuda: { error: string; devices: Record<string, unknown>[] } }[] };
			for (const rank of raw.ranks) {
				assert.deepEqual(rank.cuda.devices.map((d) => [d.gpu_direct_rdma_supported, d.dma_buf_supported]), [[null, null]]);
				assert.doesNotMatch(rank.cuda.error, /attribute/i);
			}
			const off = await execute([...launch, '-np', '1', engine, 'inspect'], { timeoutMs: TIMEOUT_MS, env: { ...env(), GPUMPI_INSPECT_IPC_MEM: '0' } }).result;
			assert.match(off.stdout, /"ipc_memory":\{"probed":false,"skipped":"GPUMPI_INSPECT_IPC_MEM=0"/);
		});

		for (const variant of ['pool', 'vmm']) {
			it(`repro ipc --variant ${variant}: every word arrives (eager 4K and rendezvous 4M), buffers named by their IPC capability`, async () => {
				for (const size of ['4K', '4M']) {
					const r = await execute([...launch, '-np', '4', engine, 'repro', 'ipc', '--variant', variant, '--size', size, '--json'], { timeoutMs: TIMEOUT_MS, env: env() }).result;
					assert.equal(r.exitCode, 0, r.stderr.slice(-2000));
					const ex = extractJsonDocument(r.stdout);
					assert.ok('json' in ex, 'error' in ex ? ex.error : '');
					const doc = ex.json as { outcome: string; memory: string; ranks: { buffer: string; verified?: { words: number; wrong: number } }[] };
					assert.equal(doc.outcome, 'correct', JSON.stringify(doc).slice(0, 2000));
					assert.equal(doc.memory, 'device');
					assert.match(doc.ranks[1].buffer, variant === 'pool' ? /^pool-default buffer, legacy IPC no, handles none \(receive\)/ : /^vmm-posix-fd buffer, legacy IPC no, handles posix_fd \(receive\)/);
					assert.equal(doc.ranks[1].verified?.wrong, 0);
					assert.equal(doc.ranks[3].verified?.words, size === '4K' ? 1024 : 1 << 20);
				}
			});
		}
	});
}
