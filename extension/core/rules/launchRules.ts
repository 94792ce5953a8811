/**
 * Rules about how ranks are launched: environment that overrides MCA component paths, running as root,
 * and launcher messages worth explaining.
 */
import type { Finding } from '../../shared/report';
import type { Facts, McaSetting } from '../facts';
import { mcaParam } from '../parsers/ompiInfo';
import { isOpenMpi, mcaSettings } from './helpers';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';
import { versionParts } from '../parsers/text';

function componentPathSettings(facts: Facts): McaSetting[] {
	return mcaSettings(facts).filter((s) => s.name === 'mca_base_component_path' || s.name === 'mca_component_path');
}

const componentPath: Rule = {
	id: 'ompi-component-path-overridden', severity: 'error', title: 'MCA component path overridden by the environment',
	reads: ['env.OMPI_MCA_mca_base_component_path', 'engine.ranks[].env.OMPI_MCA_mca_base_component_path', 'mpi.openmpi.prefix', 'mpi.openmpi.pkglibdir'],
	appliesTo: { openmpi: '>=4.0' },
	verifiedAgainst: [
		src(U.ompiMcaBaseOpen5, 'mca_base_component_path (synonym mca_component_path): the directories Open MPI loads its components from', "var_id = mca_base_var_register(\"opal\", \"mca\", \"base\", \"component_path\", \"Path where to look for additional components\","),
		src(U.ompiMcaDocs, 'MCA parameters from the environment (OMPI_MCA_<name>) and the command line, and which wins'),
		src(U.devInspect, 'H200 testbed, Open MPI 5.0.7: with the PMIx path in the ranks\' environment MPIX_Query_cuda_support() returned 0; with --mca mca_base_component_path <prefix>/lib/openmpi it returned 1'),
		src(U.obsH200, 'where the setting came from (the image\'s MPI/PMIx configuration, not the login environment)'),
	],
	fixSummary: '--mca mca_base_component_path <prefix>/lib/openmpi (or unset OMPI_MCA_mca_base_component_path in the job environment).',
	evaluate(facts) {
		if (facts.mpi.implementation && facts.mpi.implementation.value !== 'openmpi') { return []; }
		const o = facts.mpi.openmpi;
		const prefix = o?.prefix?.value.replace(/\/$/, '') ?? null;
		const pkglib = o?.pkglibdir?.value ?? (prefix ? `${prefix}/lib/openmpi` : null);
		const out: Finding[] = [];
		const seen = new Set<string>();
		for (const s of componentPathSettings(facts)) {
			if (s.origin !== 'env' && !s.origin.startsWith('engine')) { continue; }
			const dirs = s.value.replace(/^"|"$/g, '').split(':').filter((d) => d !== '');
			const own = pkglib !== null && dirs.some((d) => d.replace(/\/$/, '') === pkglib.replace(/\/$/, ''));
			if (own || seen.has(s.value)) { continue; }
			// Ranks that received this path and still report run-time CUDA support found their components.
			const holders = (facts.engine?.ranks ?? []).filter((r) => r.env.some((e) => e.name === 'OMPI_MCA_mca_base_component_path' && e.value === s.value));
			if (holders.length > 0 && holders.every((r) => r.runTime.value === true)) { continue; }
			const confirmed = holders.find((r) => r.runTime.value === false && r.compileTime.value === true);
			seen.add(s.value);
			const outside = prefix === null ? dirs : dirs.filter((d) => !d.startsWith(`${prefix}/`));
			if (outside.length === 0 && prefix !== null) { continue; }
			out.push(finding(this,
				`OMPI_MCA_mca_base_component_path=${s.value} (${s.origin === 'env' ? 'collector environment' : s.origin}) replaces Open MPI's own component directory${pkglib ? ` (${pkglib})` : ''}. Components that are loaded as plugins (the CUDA accelerator, smcuda, pml ucx in many builds) are then never found; on the H200 testbed (Open MPI 5.0.7) the ranks then reported no CUDA support at run time and crashed on device pointers.${confirmed ? ` The engine confirms it: rank ${confirmed.rank} was built with CUDA (compile time) but MPIX_Query_cuda_support returned false.` : ''}${prefix === null ? ' (The Open MPI prefix is unknown here, so the path could not be compared with it.)' : ''}`,
				ev(s.evidence, confirmed?.runTime.evidence, o?.pkglibdir?.evidence ?? o?.prefix?.evidence, mcaParam(o, 'mca_base_component_path')?.evidence),
				{ text: 'Point the component path back at this Open MPI (command-line MCA settings beat the environment), or find and remove the setting from the job environment.', command: `mpirun --mca mca_base_component_path ${pkglib ?? '<prefix>/lib/openmpi'} ...` },
				prefix === null && !confirmed ? 'warning' : 'error'));
		}
		return out;
	},
};

const runAsRoot: Rule = {
	id: 'running-as-root', severity: 'info', title: 'Running as root: Open MPI\'s mpirun needs --allow-run-as-root',
	reads: ['identity.uid', 'env.OMPI_ALLOW_RUN_AS_ROOT', 'messages[run-as-root-refused]'],
	appliesTo: { openmpi: '>=1.8.1' },
	verifiedAgainst: [
		src(U.ompiMpirun41, 'mpirun man page (4.1): --allow-run-as-root, OMPI_ALLOW_RUN_AS_ROOT and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM'),
		src(U.ompiOrtedSubmit414, 'Open MPI 4.1.4 refuses root unless --allow-run-as-root, or both variables are "1" (the variables exist from 4.0.0; 1.8.1-3.1 know only the option)', 'if (0 == geteuid() && !orte_cmd_options.run_as_root) {'),
		src(U.obsDebian, 'Open MPI 4.1.4\'s mpirun refused to start as root without them'),
	],
	fixSummary: 'mpirun --allow-run-as-root ... (or, Open MPI >= 4.0, OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1); better: run as a normal user.',
	evaluate(facts) {
		const uid = facts.identity.uid;
		const refused = facts.messages.find((m) => m.kind === 'run-as-root-refused');
		if ((!uid || uid.value !== 0) && !refused) { return []; }
		if (!isOpenMpi(facts) && !refused) { return []; }
		const allowed = facts.env.find((e) => e.name === 'OMPI_ALLOW_RUN_AS_ROOT' && e.value === '1') && facts.env.find((e) => e.name === 'OMPI_ALLOW_RUN_AS_ROOT_CONFIRM' && e.value === '1');
		if (allowed && !refused) { return []; }
		return [finding(this, `${uid?.value === 0 ? 'This inspection ran as root (uid 0).' : 'mpirun refused to start as root.'} Open MPI's mpirun refuses to start as root unless told otherwise, so every mpirun here needs --allow-run-as-root (containers often run as root).`,
			ev(uid?.evidence, refused?.evidence), { text: 'Allow it explicitly (the two variables work from Open MPI 4.0 on; older releases know only the option), or run as an unprivileged user.', command: 'mpirun --allow-run-as-root ...   # or, Open MPI >= 4.0: export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1' })];
	},
};

const harmlessNoise: Rule = {
	id: 'known-harmless-messages', severity: 'info', title: 'Known harmless messages in the output',
	reads: ['messages[pmix-bad-prefix]', 'messages[ucm-memtype-handler]', 'messages[cuda-host-unregister-failed]', 'messages[cuda-ipc-close-failed]'],
	appliesTo: { ucx: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.obsH200, 'both lines printed on the H200 testbed (Open MPI 5.0.7, UCX 1.13.1) in runs whose data was correct'),
		src(U.ucxMemtypeCache1131, 'UCX 1.13.1: when the memtype event handler cannot be set, no memory-type cache is created', 'failed to set UCM memtype event handler: %s'),
		src(U.ucxIssue9716, 'UCX 1.15.0 + Open MPI 5.0.2: "cudaHostUnregister(address)() failed: pointer does not correspond to a registered memory region", then "failed to dereg from md[2]=cuda_cpy"'),
		src(U.ucxPr10643, 'UCX: the host unregister error is printed as diag only; cuMemHostUnregister fails when the context the memory was registered in is destroyed'),
		src(U.ompiIssue11855, 'Open MPI 5.0.0rc12 + UCX 1.14.1: "UCX ERROR cuIpcCloseMemHandle" reported on every rank at MPI_Finalize'),
		src(U.ucxPr10618, 'UCX (merged 2025): pushes the primary context before cuIpcCloseMemHandle, because without a current context it failed with "invalid device context" while closing cached mappings'),
	],
	fixSummary: 'Nothing to fix; listed so they are not mistaken for the cause of a failure.',
	evaluate(facts) {
		const out: Finding[] = [];
		const prefix = facts.messages.find((m) => m.kind === 'pmix-bad-prefix');
		if (prefix) {
			out.push(finding(this, 'PMIx prints "process_repository_item … has bad prefix" while scanning Open MPI\'s component folder when mca_base_component_path points there; runs with this line were correct on the H200 testbed.', [prefix.evidence]));
		}
		const ucm = facts.messages.find((m) => m.kind === 'ucm-memtype-handler');
		if (ucm) {
			out.push(finding(this, 'UCX prints "failed to set UCM memtype event handler: Unsupported operation" when it cannot install its memory hooks (UCX_MEM_EVENTS=n, or a hook installer failed); transfers still completed on the H200 testbed. Without the hooks UCX keeps no memory-type cache and asks the driver about every buffer: memory types are detected correctly, at some cost per call (memtype_cache.c: the cache is not created; ucp_context.h: only a cache that lacks the address assumes host memory). The opposite case is the risky one: a cache in use and GPU memory allocated where its hooks did not see it (UCX_MEMTYPE_CACHE=n avoids it).', [ucm.evidence]));
		}
		const unreg = facts.messages.find((m) => m.kind === 'cuda-host-unregister-failed');
		if (unreg) {
			out.push(finding(this, 'UCX\'s cuda_copy could not unregister host memory (cudaHostUnregister / cuMemHostUnregister failed): this happens when the CUDA context the memory was registered in is already destroyed, typically at teardown (openucx/ucx#9716; UCX PR #10643 prints it as a diagnostic only). It is noise when it appears at the end of a run; it does not explain wrong data or a hang earlier in the run.', [unreg.evidence]));
		}
		const close = facts.messages.find((m) => m.kind === 'cuda-ipc-close-failed');
		if (close) {
			out.push(finding(this, 'UCX\'s cuda_ipc could not close a peer\'s memory mapping (cuIpcCloseMemHandle failed, typically "invalid device context"): its mapping cache is flushed at MPI_Finalize, after the thread\'s CUDA context is gone or no longer current (open-mpi/ompi#11855, printed on every rank; UCX PR #10618 makes the primary context current first). Harmless when it appears only at MPI_Finalize in a run whose data was correct: the process exits and the driver drops its mappings. Not harmless when it appears during the run (before the last transfers): a mapping that cannot be closed stays, and reopening the same peer allocation later can fail ("already mapped" / "Element already exists") or hold GPU memory.', [close.evidence]));
		}
		return out;
	},
};

/** Settings that change what MPI/UCX do with GPU buffers (launcher bookkeeping such as OMPI_MCA_orte_* is not). */
const GPU_RELEVANT = /^(UCX_|OMPI_MCA_(pml|btl|osc|mtl|accelerator|smsc|coll|opal_cuda|mpi_cuda)|(OMPI|PMIX)_MCA_mca_base_component_path$|CUDA_VISIBLE_DEVICES$|MPIR_CVAR_|MPICH_GPU|I_MPI_OFFLOAD|MV2_USE_CUDA)/;

/** Names given explicitly on the engine's command line (`--mca name v`, `-x NAME[=v]`). */
function commandLineNames(argv: readonly string[]): Set<string> {
	const names = new Set<string>();
	for (let i = 0; i < argv.length - 1; i++) {
		// Open MPI 5's launcher (PRRTE) also exports a --mca setting as PMIX_MCA_<name> (seen in the H200 captures).
		if (argv[i] === '--mca' || argv[i] === '-mca' || argv[i] === '--gmca') { names.add(`OMPI_MCA_${argv[i + 1]}`); names.add(`PMIX_MCA_${argv[i + 1]}`); }
		if (argv[i] === '-x') { names.add(argv[i + 1].split('=')[0]); }
	}
	return names;
}

const launcherEnv: Rule = {
	id: 'launcher-env-differs', severity: 'info', title: 'The launcher hands ranks GPU-relevant settings the login shell does not have',
	reads: ['engine.ranks[].env', 'env', 'engine.command'],
	appliesTo: { any: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.ompiMcaRst507, 'Open MPI 5.0.7: PMIx parameters on the command line take --pmixmca (-x reaches the application processes, not the PMIx server)', '| PMIx | ``--pmixmca`` |'),
		src(U.obsH200, 'OMPI_MCA_mca_base_component_path reached the ranks from the image\'s MPI/PMIx configuration, not from the login environment'),
		src(U.ompiMcaDocs, 'command-line MCA settings beat the environment and parameter files'),
	],
	fixSummary: 'Find where the launcher or job environment sets them (site MCA/PMIx files, module files, Slurm --export) and pass the intended values explicitly with mpirun -x / --mca.',
	evaluate(facts) {
		const ranks = facts.engine?.ranks ?? [];
		if (ranks.length === 0 || !facts.raw.some((r) => r.id === 'env' && r.ok)) { return []; }
		const given = commandLineNames(facts.engine?.command ?? []);
		const login = new Map(facts.env.map((e) => [e.name, e.value]));
		// Under a Slurm GPU step, CUDA_VISIBLE_DEVICES per task is the scheduler's binding, not a stray setting: passing
		// one value to every rank (the fix below) would undo it (gres_common.c sets it per task).
		const slurmGpus = ranks[0].env.some((e) => /^SLURM_(STEP|JOB)_GPUS$|^SLURM_GPUS_ON_NODE$/.test(e.name));
		const diffs = ranks[0].env.filter((e) => GPU_RELEVANT.test(e.name) && !given.has(e.name) && login.get(e.name) !== e.value && !(slurmGpus && e.name === 'CUDA_VISIBLE_DEVICES'));
		if (diffs.length === 0) { return []; }
		return [finding(this, `Rank ${ranks[0].rank} received ${diffs.length} GPU-relevant setting(s) that differ from the environment this inspection started in and were not on the engine's command line: ${diffs.slice(0, 6).map((d) => `${d.name}=${d.value}`).join(', ')}${diffs.length > 6 ? ', …' : ''}. Your own mpirun gets them too, whatever your shell says.`,
			diffs.slice(0, 6).map((d) => d.evidence),
			{ text: 'Pass the values you intend explicitly (command-line settings beat the environment and files).', command: facts.mpi.implementation?.value === 'mpich' ? `mpiexec ${diffs.slice(0, 2).map((d) => `-genv ${d.name} <value>`).join(' ')} ...   # MPICH Hydra; under srun: --export=ALL,NAME=value` : `mpirun ${diffs.slice(0, 2).map((d) => d.name.startsWith('OMPI_MCA_') ? `--mca ${d.name.slice(9)} <value>` : d.name.startsWith('PMIX_MCA_') ? `--pmixmca ${d.name.slice(9)} <value>` : `-x ${d.name}=<value>`).join(' ')} ...` })];
	},
};

const pmiMismatch: Rule = {
	id: 'launcher-pmi-mismatch', severity: 'error', title: 'The launcher did not start one MPI job: its PMI does not match this MPI',
	reads: ['messages[direct-launch-without-pmi]', 'messages[singleton-start]', 'messages[ompi-no-slurm-support]', 'messages[ompi5-no-pmix]', 'engine.command', 'mpi.mpich.configure'],
	appliesTo: { slurm: '>=22.05', openmpi: '>=4.1', mpich: '>=4.0' },
	verifiedAgainst: [
		src(U.slurmMpiGuide, 'Slurm MPI guide: the srun --mpi plugin must fit how the MPI was built ("Use of an MPI implementation without the appropriate Slurm plugin may result in application failure"); srun --mpi=list'),
		src(U.obsSlurm, 'Slurm 22.05: Open MPI 4.1.4 aborts in MPI_Init under --mpi=pmi2 / none; MPICH 4.0.2 under --mpi=none starts one-rank jobs that exit 0'),
		src(U.ompiHelpEssBase414, 'Open MPI 4.1.4 [slurm-error] (no Slurm PMI support) and [slurm-error2] (no Slurm support at all)', 'but OMPI was not built with SLURM support. This usually happens'),
		src(U.ompiHelpMpiRuntime507, 'Open MPI 5.0.7: no PMIx server reachable; with a PMI-1/2 plugin it starts singletons', 'No PMIx server was reachable, but a PMI1/2 was detected.'),
	],
	fixSummary: 'srun --mpi=<the plugin this MPI was built for> (Open MPI 5: pmix; Open MPI 4.x: pmix, or pmi2 where it has the s2 component; MPICH: pmi2, or pmix for a --with-pmi=pmix build; check srun --mpi=list), or mpirun inside the allocation; an Open MPI built without Slurm support: mpirun only.',
	evaluate(facts) {
		const direct = facts.messages.find((m) => m.kind === 'direct-launch-without-pmi');
		const single = facts.messages.find((m) => m.kind === 'singleton-start');
		const noSlurm = facts.messages.find((m) => m.kind === 'ompi-no-slurm-support');
		const noPmix = facts.messages.find((m) => m.kind === 'ompi5-no-pmix');
		if (!direct && !single && !noSlurm && !noPmix) { return []; }
		const cmd = facts.engine?.command ?? [];
		const plugin = cmd.find((a) => a.startsWith('--mpi='));
		if (noSlurm) {
			return [finding(this, 'This Open MPI was built without Slurm support ([slurm-error2]): it cannot be started by srun, and a program started directly inside an allocation prints the same message without any srun. Launch it with mpirun inside the allocation.',
				ev(noSlurm.evidence, direct?.evidence), { text: 'Use mpirun inside the allocation (salloc / sbatch), or an Open MPI built with Slurm support.', command: 'salloc -N <nodes> mpirun <program>' })];
		}
		// The [no-pmix-but] / [no-pmi] texts are Open MPI 5's own: that family and major, whatever else was collected.
		const openmpi = isOpenMpi(facts) || noPmix !== undefined;
		const ompiMajor = noPmix ? 5 : versionParts(facts.mpi.version?.value ?? '')[0];
		const mpichPmix = /--with-pmi=pmix|--with-pmix/.test(facts.mpi.mpich?.configure?.value ?? '');
		const want = openmpi ? 'pmix' : mpichPmix ? 'pmix' : 'pmi2';
		const what = direct || noPmix
			? `The MPI refused the launch: it was started directly by srun${plugin ? ` (${plugin})` : ''} with a process-management interface it was not built for${noPmix ? ' (Open MPI 5 needs a PMIx server)' : ''}, so MPI_Init aborted${noPmix && /singletons/.test(noPmix.evidence.line) ? ' or each rank started alone' : ''}.`
			: `The ranks were started as separate one-process MPI jobs (each says world size 1) instead of one job: srun${plugin ? ` ${plugin}` : ''} gave them no process-management interface this MPI understands. Such a run exits 0 and every collective "works" — on one rank.`;
		const note = openmpi ? (ompiMajor === 4 ? ' (Open MPI 4.x: pmix where srun lists it; pmi2 only where ompi_info shows the s2 component)' : ' (Open MPI 5 speaks PMIx only; srun --mpi=list must list pmix)') : mpichPmix ? ' (this MPICH was configured for PMIx)' : ' (MPICH\'s own PMI client speaks PMI-1/2; a --with-pmi=pmix build needs pmix)';
		return [finding(this, what, ev(direct?.evidence, single?.evidence, noPmix?.evidence),
			{ text: `Give srun the PMI plugin this MPI was built for${note}, listed by srun --mpi=list, or launch with mpirun inside an allocation (salloc).`, command: `srun --mpi=${want} -n <ranks> <program>   # check: srun --mpi=list` })];
	},
};

/** Rules about launching. */
export const launchRules: Rule[] = [componentPath, runAsRoot, launcherEnv, harmlessNoise, pmiMismatch];
