/**
 * `gpumpi map` under MPICH (Debian 4.0.2, ch4:ucx, hydra) across two REAL network-namespace hosts
 * (test/hosts/netnsHosts.ts: own hostname, own sshd, own eth0 on a bridge): `mpirun.mpich -launcher ssh -iface eth0
 * -hosts host-a:2,host-b:2 -np 4`, started on host-a over ssh. Hydra's ssh launcher needs no wrapper here: inside a
 * lab host /root/.ssh (key, config, known_hosts) and /etc/hosts are the lab's own, bind-mounted by the lab.
 *
 * What the MPICH evidence (UCX_LOG_LEVEL=info "ep_cfg[N]: tag(…)" lanes per rank) shows, both asserted:
 * 1. UCX decides that two processes are on the same machine from /proc/sys/kernel/random/boot_id, which network /
 *    UTS namespaces (and containers) on one kernel share: as-is, the "hosts" talk over sysv/cma, never tcp.
 * 2. With a distinct boot_id per lab host (a bind mount inside that host's private mount namespace, made over ssh —
 *    what separate machines have), each rank uses shared memory (sysv/cma) with its one same-host peer and tcp/eth0
 *    with the other host, and the map's pairs get channel shared_memory inside a host and network across.
 * Known, real: MPICH 4.0.2 + UCX 1.13.1 over tcp sometimes hangs in MPI_Finalize (one rank flushes a tcp endpoint in
 * ucp_worker_progress while its peer already waits in the PMI barrier — seen with gdb here). The map document is
 * complete before MPI_Finalize, so the test stops waiting 8 s after the document's end marker and says so.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { applyEvidence, lanesByRank } from '../../extension/core/map/mapEvidence';
import { extractJsonDocument } from '../../extension/core/parsers/framedDocument';
import { parseUcxLanes } from '../../extension/core/parsers/transportLines';
import { SshHost } from '../../extension/core/hosts/sshHost';
import { findEngine } from '../../extension/core/native';
import type { MapDocument } from '../../extension/shared/mapSchema';
import { createNetnsLab, type NetnsLab } from '../hosts/netnsHosts';

const END_MARKER = '@@GPUMPI-JSON-END@@';
const SHM = /^(sysv|posix|cma|xpmem|knem)\//;

interface MapRun { doc: MapDocument; stdout: string; stderr: string; exitCode: number | null; finalizeHung: boolean }

describe('gpumpi map under MPICH (hydra over ssh) across two namespace hosts', function () {
	this.timeout(60_000);
	let lab: NetnsLab;
	const open: SshHost[] = [];
	const host = (name: string): SshHost => {
		const h = new SshHost({ destination: name, configFile: lab.sshConfig, controlDir: path.join(lab.dir, 'cm'), connectTimeoutSeconds: 10 });
		open.push(h);
		return h;
	};

	before(async function () {
		this.timeout(60_000);
		lab = await createNetnsLab({ count: 2 });
	});

	after(async function () {
		this.timeout(30_000);
		await Promise.all(open.map(h => h.close().catch(() => undefined)));
		lab?.teardown();
	});

	/** Run the 2+2 map from host-a; resolves once it exits, or 8 s after the map document ended (finalize hang). */
	async function runMap(): Promise<MapRun> {
		const engine = findEngine('mpich', {});
		assert.ok(engine.path, `MPICH engine not built: ${engine.tried.join(', ')}`);
		const out: string[] = [], err: string[] = [];
		const abort = new AbortController();
		let grace: NodeJS.Timeout | undefined;
		let finalizeHung = false;
		const r = await host('host-a').run(['mpirun.mpich', '-launcher', 'ssh', '-iface', 'eth0', '-hosts', 'host-a:2,host-b:2', '-np', '4',
			'-genv', 'UCX_LOG_LEVEL', 'info', '-genv', 'UCX_NET_DEVICES', 'eth0', engine.path, 'map', '--large', '1M', '--iters', '2', '--json'], {
			timeoutMs: 45_000, signal: abort.signal,
			onLine: (stream, line) => {
				(stream === 'stdout' ? out : err).push(line);
				if (stream === 'stdout' && line.includes(END_MARKER) && !grace) { grace = setTimeout(() => { finalizeHung = true; abort.abort(); }, 8_000); }
			},
		});
		clearTimeout(grace);
		const stdout = out.join('\n'), stderr = err.join('\n');
		const extracted = extractJsonDocument(stdout);
		assert.ok('json' in extracted, `${'error' in extracted ? extracted.error : ''}; exit ${String(r.exitCode)} ${r.error ?? ''}\n${stderr.slice(-1500)}`);
		assert.ok(finalizeHung || r.exitCode === 0, `mpirun.mpich exit ${String(r.exitCode)} ${r.error ?? ''}\n${stderr.slice(-1500)}`);
		if (finalizeHung) { console.log('    (MPICH 4.0.2 + UCX tcp: MPI_Finalize hung after the map was complete; stopped waiting, the lab teardown kills it)'); }
		return { doc: applyEvidence(extracted.json as MapDocument, stdout, stderr), stdout, stderr, exitCode: r.exitCode, finalizeHung };
	}

	/** What a failing lane assertion must show to be fixable: the lane and rank lines seen, and the output's ends. */
	function laneEvidence(run: MapRun): string {
		const text = `${run.stdout}\n${run.stderr}`.split('\n');
		const epCfg = text.filter(l => l.includes('ep_cfg['));
		const ranks = text.filter(l => l.includes('@@GPUMPI-RANK@@'));
		return [`exit ${String(run.exitCode)}, finalize hung: ${run.finalizeHung}; ${epCfg.length} ep_cfg line(s), ${ranks.length} rank line(s)`,
			...epCfg.slice(0, 6), ...ranks, '-- stdout head --', ...run.stdout.split('\n').slice(0, 12), '-- stderr tail --', ...run.stderr.split('\n').slice(-12)]
			.map(l => l.slice(0, 240)).join('\n');
	}

	it('as-is, UCX treats the namespace hosts as one machine (one kernel boot_id): sysv/cma between them, no tcp', async () => {
		const run = await runMap();
		assert.equal(run.doc.mpi.implementation, 'mpich');
		assert.deepEqual(run.doc.ranks.map(r => r.host).sort(), ['host-a', 'host-a', 'host-b', 'host-b']);
		const lanes = lanesByRank(parseUcxLanes(run.stdout + '\n' + run.stderr), run.stdout + '\n' + run.stderr);
		assert.equal(lanes.size, 4, `UCX ep_cfg lanes of every rank: ${JSON.stringify([...lanes])}\n${laneEvidence(run)}`);
		for (const [rank, l] of lanes) {
			assert.ok(l.some(x => SHM.test(x)), `rank ${rank}: ${l.join(' ')}`);
			assert.ok(!l.some(x => x.startsWith('tcp/')), `rank ${rank} used no tcp although its peers are on another "host": ${l.join(' ')}`);
		}
		for (const p of run.doc.pairs) { assert.equal(p.status, 'ok', `pair ${p.a}-${p.b}: ${p.reason}`); }
	});

	it('with a boot_id per host (as separate machines have): shared memory inside a host, tcp/eth0 between hosts', async () => {
		for (const [name, id] of [['host-a', '6d0b7a2e-0000-4000-8000-00000000000a'], ['host-b', '6d0b7a2e-0000-4000-8000-00000000000b']]) {
			const file = path.join(lab.dir, `boot_id-${name}`);
			fs.writeFileSync(file, `${id}\n`);
			const h = host(name);
			const m = await h.run(['mount', '--bind', file, '/proc/sys/kernel/random/boot_id'], { timeoutMs: 10_000 });
			assert.equal(m.exitCode, 0, `mount on ${name}: ${m.stderr} ${m.error ?? ''}`);
			assert.equal((await h.run(['cat', '/proc/sys/kernel/random/boot_id'], { timeoutMs: 10_000 })).stdout.trim(), id);
		}
		const run = await runMap();
		const text = run.stdout + '\n' + run.stderr;
		const lanes = lanesByRank(parseUcxLanes(text), text);
		assert.equal(lanes.size, 4, `UCX ep_cfg lanes of every rank: ${JSON.stringify([...lanes])}\n${laneEvidence(run)}`);
		for (const [rank, l] of lanes) {
			assert.ok(l.includes('tcp/eth0'), `rank ${rank} reaches the other host over tcp/eth0: ${l.join(' ')}`);
			assert.ok(l.some(x => SHM.test(x)), `rank ${rank} reaches its same-host peer over shared memory: ${l.join(' ')}`);
		}
		assert.equal(run.doc.pairs.length, 6);
		for (const p of run.doc.pairs) {
			const sameHost = Math.floor(p.a / 2) === Math.floor(p.b / 2);
			assert.equal(p.same_host, sameHost, `pair ${p.a}-${p.b}`);
			assert.equal(p.channel, sameHost ? 'shared_memory' : 'network', `pair ${p.a}-${p.b}: ${p.evidence.join(' | ')}`);
			assert.equal(p.class, 'host_memory', 'no GPU here: host buffers');
			assert.equal(p.status, 'ok');
			assert.ok((p.bandwidth_gbps ?? 0) > 0, `pair ${p.a}-${p.b} measured`);
			assert.ok(p.evidence.some(e => e.startsWith('UCX tag lanes of rank') && e.includes('tcp/eth0')), `pair ${p.a}-${p.b}: ${p.evidence.join(' | ')}`);
		}
	});
});
