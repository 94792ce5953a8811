/**
 * Rules about UCX: built with CUDA or not, transports an MPI refuses or an environment excludes, known regressions,
 * staging-pool growth for large GPU messages, and the cuda_ipc behaviour with IPC-imported pointers (seed A).
 */
import type { Finding } from '../../shared/report';
import type { Facts } from '../facts';
import { componentsOf } from '../parsers/ompiInfo';
import { versionParts } from '../parsers/text';
import { compareVersions, CUDA_TRANSPORTS, envSettings, isIbTransport, isOpenMpi, pmlUcxRefusal, ucxTransports, visibleGpus } from './helpers';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';
import { MEASURED as M } from './measured.generated';

/** Does the MPI use UCX at all (Open MPI with pml ucx built, or MPICH ch4:ucx)? */
function mpiUsesUcx(facts: Facts): boolean {
	if (componentsOf(facts.mpi.openmpi, 'pml').some((c) => c.name === 'ucx')) { return true; }
	return /ucx/.test(facts.mpi.mpich?.device?.value ?? '');
}

const ucxNoCuda: Rule = {
	id: 'ucx-without-cuda', severity: 'warning', title: 'UCX has no CUDA transports',
	reads: ['ucx.builtWithCuda', 'ucx.transports', 'ucx.configureFlags', 'ucx.version'],
	appliesTo: { ucx: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.ucxFaq, 'UCX FAQ: a CUDA-capable UCX is configured --with-cuda and ucx_info -d lists cuda_copy / cuda_ipc'),
		src(U.obsDebian, 'Debian UCX 1.13.1 (no CUDA): no cuda transport in ucx_info -d; UCX_TLS=cuda_copy,cuda_ipc fails with "transports … are not available"'),
	],
	fixSummary: 'Use a UCX configured --with-cuda (and --with-gdrcopy where GDRCopy is installed); ucx_info -d must list cuda_copy and cuda_ipc.',
	evaluate(facts) {
		const u = facts.ucx;
		if (!u) { return []; }
		const tls = ucxTransports(facts);
		const cudaTls = tls.filter((t) => CUDA_TRANSPORTS.includes(t));
		const built = u.builtWithCuda?.value;
		if (cudaTls.length > 0 || (built !== false && !u.devicesListed)) { return []; }
		const why = built === false ? 'it was built without CUDA' : u.devicesListed ? 'ucx_info -d lists no cuda_copy / cuda_ipc transport' : '';
		const uses = mpiUsesUcx(facts);
		const sev = uses || visibleGpus(facts).count > 0 ? 'warning' : 'info';
		return [finding(this,
			`UCX ${u.version?.value ?? ''} cannot move GPU memory: ${why}${u.devicesListed ? ` (transports: ${tls.join(', ') || 'none'})` : ''}. ${uses ? 'The MPI here runs over UCX, so device buffers given to it through UCX fail ("transports … are not available" when UCX_TLS names cuda_copy).' : 'Any MPI that uses this UCX cannot pass GPU buffers through it.'}`,
			ev(u.version?.evidence, u.builtWithCuda?.evidence ?? u.configureFlags?.evidence, u.transports[0]?.evidence), {
				text: 'Load or build a UCX configured with CUDA, then rebuild / relink the MPI against it.',
				command: './configure --with-cuda=$CUDA_HOME [--with-gdrcopy=/usr] && ucx_info -d | grep -i cuda',
			}, sev)];
	},
};

const pmlUcxTls: Rule = {
	id: 'ompi-pml-ucx-transport-defaults', severity: 'warning', title: 'pml ucx defaults refuse the transports UCX has here',
	reads: ['mpi.openmpi.params.pml_ucx_tls', 'mpi.openmpi.params.pml_ucx_devices', 'ucx.transports'],
	appliesTo: { openmpi: '>=4.1' },
	verifiedAgainst: [
		src(U.ompiCommonUcx41, 'Open MPI 4.1.4 registers pml_ucx_tls (default rc_verbs,ud_verbs,rc_mlx5,dc_mlx5,ud_mlx5,cuda_ipc,rocm_ipc) and pml_ucx_devices (default mlx*) and checks UCX\'s transports against them', "char *default_tls = \"rc_verbs,ud_verbs,rc_mlx5,dc_mlx5,ud_mlx5,cuda_ipc,rocm_ipc\"; char *default_devices = \"mlx*\";"),
		src(U.obsDebian, 'Open MPI 4.1.4 + UCX 1.13.1 without InfiniBand: "did not match transport list", and pml_ucx_tls any / pml_ucx_devices any works'),
	],
	fixSummary: '--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any',
	evaluate(facts) {
		const r = pmlUcxRefusal(facts);
		if (!r) { return []; }
		const { tlsP, devP, avail, tlMatch } = r;
		const evidence = ev(tlsP.evidence, devP.evidence, ...avail.slice(0, 6).map((t) => t.evidence));
		const fix = { text: 'Let pml ucx accept every transport UCX offers (observed to work on Open MPI 4.1.4 / UCX 1.13.1).', command: 'mpirun --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any ...' };
		const names = [...new Set(avail.map((t) => t.name))].join(', ');
		if (r.refuses === 'transports') {
			return [finding(this, `pml_ucx_tls = ${tlsP.value} names none of the transports UCX offers here (${names}), so pml ucx disqualifies itself: every transport "did not match transport list", and --mca pml ucx alone fails with "No components were able to be opened in the pml framework".`, evidence, fix)];
		}
		if (r.refuses === 'devices') {
			return [finding(this, `UCX offers ${[...new Set(tlMatch.map((t) => t.name))].join(', ')} from pml_ucx_tls, but no device matches pml_ucx_devices = ${devP.value}: Open MPI's UCX support check then lowers pml ucx below ob1, so by default ob1 is used and UCX (with its CUDA transports) only when forced.`, evidence, fix, 'info')];
		}
		return [];
	},
};

const tlsExcludesCuda: Rule = {
	id: 'ucx-tls-excludes-cuda', severity: 'warning', title: 'UCX_TLS is set and leaves out the CUDA transports',
	reads: ['env.UCX_TLS', 'engine.ranks[].env.UCX_TLS', 'ucx.transports'],
	appliesTo: { ucx: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.ucxFaq, 'UCX FAQ: UCX_TLS selects the transports; GPU memory needs the cuda transports in it'),
		src(U.devIpc, 'H200 testbed: UCX_TLS=^cuda_ipc and tcp,cuda_copy,self on imported GPU pointers (crashes, a hang)'),
	],
	fixSummary: 'Add cuda_copy (and cuda_ipc, gdr_copy) to UCX_TLS, e.g. UCX_TLS=rc,sm,cuda_copy,cuda_ipc,gdr_copy, or unset it.',
	evaluate(facts) {
		const out: Finding[] = [];
		for (const s of envSettings(facts, 'UCX_TLS')) {
			const v = s.value.trim();
			const neg = v.startsWith('^');
			const list = v.replace(/^\^/, '').split(',').map((x) => x.trim());
			const names = (t: string): boolean => list.includes(t) || list.includes('cuda') || list.includes('all');
			const copyOk = neg ? !(list.includes('cuda_copy') || list.includes('cuda')) : names('cuda_copy');
			if (copyOk) {
				if (neg && list.includes('cuda_ipc')) {
					out.push(finding(this, `UCX_TLS=${v} (${s.origin}) turns off cuda_ipc: GPU-to-GPU traffic inside a node is staged through cuda_copy and host memory. It is often suggested as a workaround for IPC-imported pointers, but on the H200 testbed sends from imported memory crashed without cuda_ipc (docs/device-results.md); elsewhere it costs intra-node bandwidth for large messages (docs/device-results.md: the MPS and latency tables).`, [s.evidence], undefined, 'info'));
				}
				continue;
			}
			out.push(finding(this, `UCX_TLS=${v} (${s.origin}) leaves out cuda_copy${neg || list.includes('cuda_ipc') ? '' : ' and cuda_ipc'}: UCX then treats device buffers as host memory or cannot send them at all.`, [s.evidence],
				{ text: neg ? 'Take the CUDA transports off the exclusion list and keep the rest of it (or unset UCX_TLS to let UCX choose).' : 'Include the CUDA transports (or unset UCX_TLS to let UCX choose).',
					command: neg ? (list.filter((t) => t !== 'cuda' && t !== 'cuda_copy').length > 0 ? `export UCX_TLS=^${list.filter((t) => t !== 'cuda' && t !== 'cuda_copy').join(',')}` : 'unset UCX_TLS')
						: `export UCX_TLS=${[...list, ...['cuda_copy', 'cuda_ipc'].filter((t) => !list.includes(t))].join(',')}` }));
		}
		return out;
	},
};

const ipcImported: Rule = {
	id: 'ucx-cuda-ipc-imported-pointers', severity: 'warning', title: 'cudaIpcOpenMemHandle pointers with pml ucx and cuda_ipc',
	reads: ['mpi.openmpi.components', 'mpi.openmpi.configuredWithUcx', 'ucx.transports'],
	appliesTo: { openmpi: '>=4.1', ucx: '>=1.13' },
	verifiedAgainst: [
		src(U.ucxCudaIpcMd, 'UCX 1.20.0 uct_cuda_ipc_mem_add_reg: cuIpcGetMemHandle on the buffer; if it fails, registration fails with no fallback', "cuIpcGetMemHandle(&key->ph.handle.legacy, (CUdeviceptr)addr)); if (status != UCS_OK) { goto out_pop_ctx; }"),
		src(U.devUcxVersions, `H100, Open MPI 5.0.7 with UCX 1.20.0 (LD_LIBRARY_PATH over the 1.13.1 build), 4 ranks on one GPU, 64 MiB, 4 trials: receiving into the import ${M.ucx120Direct64M.text}, sending from it ${M.ucx120SendFromImport64M.text}; with UCX_TLS=^cuda_ipc ${M.ucx120NoIpcDirect64M.text} and ${M.ucx120NoIpcSendFromImport64M.text}`),
		src(U.devIpcTrials, 'H200 testbed, Open MPI 5.0.7 + UCX 1.13.1, 4 ranks on one GPU, 64 MiB, 11 trials per variant, three runs: receiving into an imported pointer (direct) and sending from one crashed in some trials of every run (class unreliable), UCX_TLS=^cuda_ipc as often or more; the bounce buffer and host staging correct in every trial'),
		src(U.devH100Cli, 'H100, the same stack: direct unreliable again, the crashed trial with UCX\'s own "cuIpcGetMemHandle … invalid argument"'),
		src(U.devIpc, 'H200 testbed, the first two-run measurement (no repeated trials yet): sends from imported memory without cuda_ipc crashed (UCX_TLS=^cuda_ipc, SIGSEGV in ucp_dt_pack) or hung (UCX_TLS=tcp,cuda_copy,self)'),
	],
	fixSummary: 'Receive into a buffer the rank allocated itself and copy into the imported pointer (bounce buffer: correct in every trial measured); UCX_TLS=^cuda_ipc is no workaround (it failed as often or more); `gpumpi-doctor guard --mode fix` does the bounce without a code change.',
	evaluate(facts) {
		if (!isOpenMpi(facts)) { return []; }
		const pmlUcx = componentsOf(facts.mpi.openmpi, 'pml').find((c) => c.name === 'ucx');
		if (!pmlUcx) { return []; }
		const ipc = facts.ucx?.transports.find((t) => t.name === 'cuda_ipc');
		const inferred = !facts.ucx?.devicesListed && facts.mpi.openmpi?.configuredWithUcx && facts.mpi.openmpi.builtWithCuda?.value === true;
		if (!ipc && !inferred) { return []; }
		return [finding(this,
			`Open MPI here can run over pml ucx with UCX's cuda_ipc transport. If a rank passes MPI a device pointer it obtained from cudaIpcOpenMemHandle (memory another process allocated), UCX tries to export that pointer again with cuIpcGetMemHandle when registering it (cuda_ipc_md.c, uct_cuda_ipc_mem_add_reg), which fails for an imported mapping ("cuIpcGetMemHandle … invalid argument"), and registration has no fallback. Measured on one node (Open MPI 5.0.7 + UCX 1.13.1, 4 ranks on one GPU, 64 MiB, repeated trials on an H200 and an H100): receiving into an imported pointer and sending from one crashed in some trials of every run — unreliable, not always, so one good run proves nothing; UCX_TLS=^cuda_ipc failed as often or more; only receiving into (and sending from) a buffer the rank allocated itself, then copying, was correct in every trial. With UCX 1.20.0 (the version of the Global Arrays report; same Open MPI, H100, 64 MiB) the default run was ${M.ucx120Direct64M.text} trials receiving into the import and ${M.ucx120SendFromImport64M.text} sending from it — 4 trials rule out only failure rates above 53 % —, and UCX_TLS=^cuda_ipc ${M.ucx120NoIpcDirect64M.text} receiving and ${M.ucx120NoIpcSendFromImport64M.text} sending: there the usual workaround is what breaks it. The inter-node case needs two nodes: run gpumpi-doctor repro ipc on your own layout.` +
			(inferred ? ' (ucx_info -d was not available: inferred from Open MPI being built --with-ucx and with CUDA.)' : ''),
			ev(pmlUcx.evidence, ipc?.evidence, inferred ? facts.mpi.openmpi?.configuredWithUcx?.evidence : undefined, facts.mpi.openmpi?.builtWithCuda?.evidence),
			{ text: 'Receive into (and send from) a buffer the rank allocated itself and cudaMemcpy to/from the imported pointer (the bounce buffer), or let the guard do it without a code change: gpumpi-doctor guard --mode fix (correct in every fix-mode launch measured). Check your own stack and layout with the reproducer before and after a change.', command: 'gpumpi-doctor guard --mode fix -- mpirun -np 4 ./your_program' })];
	},
};

const stagingPool: Rule = {
	id: 'ucx-staging-pool-growth', severity: 'info', title: 'Large GPU messages are staged through a UCX pool that grows without limit',
	reads: ['ucx.transports', 'ucx.version', 'gpu.peermemLoaded'],
	appliesTo: { ucx: '>=1.13' },
	verifiedAgainst: [
		src(U.ucxContext, 'UCX_RNDV_FRAG_SIZE (host:512K,cuda:4M) and UCX_RNDV_FRAG_ALLOC_COUNT (host:128,cuda:128): the size of a fragment and how many fragments one pool chunk holds', "{\"RNDV_FRAG_ALLOC_COUNT\", \"host:128,cuda:128\","),
		src(U.ucxRndvPpln, 'the pipeline allocates a fragment request for every fragment of the message in one loop', "while (!ucp_datatype_iter_is_end(&req->send.state.dt_iter)) { status = ucp_proto_rndv_frag_request_alloc(worker, req, &freq);"),
		src(U.ucxRndv120, 'the ucp_rndv_frags pool: elems_per_chunk from UCX_RNDV_FRAG_ALLOC_COUNT, no max_elems set', "mp_params.name            = \"ucp_rndv_frags\";"),
		src(U.ucxMpool120, 'ucs_mpool_params_reset: a pool has no upper limit unless its creator sets one', "params->max_elems       = UINT_MAX;"),
		src(U.ucxPr11062, 'UCX_RNDV_FRAG_WORKER_MAX_MEM, a cap on staging memory per worker (open, not in a release)'),
		src(U.rapidsmpf244, 'the same out-of-memory in the staging pool'),
		src(U.devRndv, `H200 testbed, UCX 1.13.1, 3 trials: a rank's resident memory grew by ${M.rndvDefaultRss1G.text} for one 1 GiB device message, ${M.rndvDefaultRss256M.text} for 256 MiB`),
		src(U.devRndv, `H200 testbed, UCX 1.13.1, 3 trials per setting: UCX_RNDV_SCHEME=put_zcopy/get_zcopy and UCX_RNDV_FRAG_MEM_TYPE=cuda end the host growth (${M.rndvNoGrowthRss1G.text} at 1 GiB) at ${M.rndvNoGrowthGbps1G.text} instead of ${M.rndvDefaultGbps1G.text}; plain UCX_RNDV_FRAG_SIZE / _ALLOC_COUNT values are rejected (1.13 wants host:…,cuda:…)`),
	],
	fixSummary: `Nothing in a released UCX caps the pool (UCX_RNDV_FRAG_* only size its chunks; the settings that end the growth, UCX_RNDV_SCHEME=put_zcopy/get_zcopy or UCX_RNDV_FRAG_MEM_TYPE=cuda, cost ${M.rndvNoGrowthCost.text} the bandwidth, measured): split very large messages, or stage through persistent pinned buffers (libgpumpi). GPUDirect RDMA (nvidia_peermem or dmabuf) avoids host staging between nodes.`,
	evaluate(facts) {
		const u = facts.ucx;
		if (!u || !u.devicesListed) { return []; }
		const copy = u.transports.find((t) => t.name === 'cuda_copy');
		if (!copy) { return []; }
		const ib = u.transports.some((t) => isIbTransport(t.name));
		const pm = facts.gpu.peermemLoaded;
		// Between nodes, an RDMA transport with GPUDirect RDMA (peer-memory module; dmabuf needs UCX >= 1.14) moves GPU memory without host staging.
		const vp = versionParts(u.version?.value ?? '');
		const gdrRdma = ib && (pm?.value === true || (pm === null && vp.length > 0 && compareVersions(vp, [1, 14]) >= 0));
		if (gdrRdma) { return []; }
		const why = ib ? 'GPUDirect RDMA is not available (no nvidia_peermem module seen)' : 'no InfiniBand/RoCE transport';
		return [finding(this,
			`UCX has cuda_copy but ${why}: GPU messages between nodes (and wherever cuda_ipc cannot be used) go through the rendezvous pipeline, which stages them in host/GPU fragments (defaults UCX_RNDV_FRAG_SIZE=host:512K,cuda:4M, UCX_RNDV_FRAG_ALLOC_COUNT=host:128,cuda:128). UCX_RNDV_FRAG_SIZE and UCX_RNDV_FRAG_ALLOC_COUNT set the size of the pool's chunks (64 MiB host / 512 MiB GPU by default), not a limit: all fragments of a message are posted at once and the ucp_rndv_frags pool has no upper bound ("failed to allocate 536870912 bytes … for ucp_rndv_frags"). A per-worker cap, UCX_RNDV_FRAG_WORKER_MAX_MEM, is proposed in openucx/ucx pull request 11062 (not in a release). Measured on the H200 testbed (UCX 1.13.1, UCX_TLS=sm,cuda_copy,self, 2 ranks): a single 1 GiB device message grew a rank's resident memory by ${M.rndvDefaultRss1G.text}, a 256 MiB one by ${M.rndvDefaultRss256M.text}. The settings measured there that end the growth (UCX_RNDV_SCHEME=put_zcopy or get_zcopy, UCX_RNDV_FRAG_MEM_TYPE=cuda: ${M.rndvNoGrowthRss1G.text} extra at 1 GiB) leave the pipelined protocol and moved data at ${M.rndvNoGrowthGbps1G.text} instead of ${M.rndvDefaultGbps1G.text}, 3 trials each; a UCX_RNDV_FRAG_SIZE without a memory type (e.g. 128K) made MPI_Init fail in UCX 1.13.`,
			ev(copy.evidence, u.version?.evidence, pm?.evidence),
			{ text: `Split very large messages into pieces of a few hundred MiB, or stage through persistent pinned buffers you own (libgpumpi: ${M.libShmRss1G.text} extra host memory on the H200 testbed where UCX took ${M.rndvDefaultRss1G.text} for 1 GiB). No released UCX setting caps the pool without giving up the bandwidth (measured: ${M.rndvNoGrowthGbps1G.text} vs ${M.rndvDefaultGbps1G.text}).`, command: 'gpumpi-doctor repro fallback --memory device' })];
	},
};

const oldUcx: Rule = {
	id: 'ucx-version-known-issues', severity: 'info', title: 'UCX version with known GPU limitations or regressions',
	reads: ['ucx.version'],
	appliesTo: { ucx: '<1.14 || =1.15.0-rc', cuda: '>=11.7' },
	verifiedAgainst: [
		src(U.ucxIssue9287, 'UCX 1.15.0rc3: inter-node osu_bw D D fell from 24.7 GB/s (1.13.1) to about 3.8 GB/s'),
		src(U.ucxIbMd, 'UCX\'s dmabuf registration path for GPU memory (UCX >= 1.14), besides the peer-memory module', "title = \"ibv_reg_dmabuf_mr\";"),
		src(U.gpudirectRdma, 'GPUDirect RDMA through nvidia-peermem or dmabuf'),
	],
	fixSummary: 'Use a released UCX ≥ 1.14 (and not 1.15.0 release candidates).',
	evaluate(facts) {
		const v = facts.ucx?.version;
		if (!v) { return []; }
		const parts = versionParts(v.value);
		if (parts.length === 0) { return []; }
		if (/^1\.15\.0-?rc/i.test(v.value)) {
			return [finding(this, `UCX ${v.value} is a 1.15.0 release candidate: inter-node device-to-device bandwidth fell from 24.7 GB/s (1.13.1) to about 3.8 GB/s in 1.15.0rc3 (openucx/ucx issue 9287).`, [v.evidence],
				{ text: 'Use a released UCX (1.15.0 final or newer).', command: 'ucx_info -v' }, 'warning')];
		}
		if (compareVersions(parts, [1, 14]) < 0) {
			return [finding(this, `UCX ${v.value} predates 1.14: it has no dmabuf GPUDirect RDMA path, so GPUDirect RDMA over InfiniBand needs the nvidia_peermem kernel module; without it inter-node GPU data is staged through host memory.`, [v.evidence],
				{ text: 'Use UCX ≥ 1.14 (with kernel ≥ 5.12, CUDA ≥ 11.7 and the open GPU kernel module for dmabuf), or load nvidia_peermem.', command: 'ucx_info -v' })];
		}
		return [];
	},
};

/** Rules about UCX. */
export const ucxRules: Rule[] = [ucxNoCuda, pmlUcxTls, tlsExcludesCuda, ipcImported, stagingPool, oldUcx];
