/**
 * Rules about the MPI library itself: is there one, is it CUDA-aware (per implementation, compile vs run time),
 * do its tools belong together, and which site settings disable its CUDA-capable paths.
 */
import type { Evidence, Finding } from '../../shared/report';
import type { Facts } from '../facts';
import { componentsOf, mcaParam } from '../parsers/ompiInfo';
import { dirOf, envSettings, isOpenMpi, pmlUcxRefusal, ucxTransports, visibleGpus } from './helpers';
import { ALL_VERSIONS, ev, finding, Rule } from './rule';
import { src, URLS as U } from './sources';

/** The MPI's CUDA-awareness as far as the facts tell, with the lines that show it. */
export interface CudaAwareness {
	aware: boolean | null;
	/** "compile time", "run time" or "build" — where the "no" was seen. */
	stage: string;
	detail: string;
	evidence: Evidence[];
}

/** Decide CUDA-awareness from the engine (run time, compile time) first, then ompi_info / mpichversion. */
export function cudaAwareness(facts: Facts): CudaAwareness {
	const ranks = facts.engine?.ranks ?? [];
	const r0 = ranks[0];
	if (r0) {
		const ct = r0.compileTime.value;
		const rt = r0.runTime.value;
		if (ct === false) { return { aware: false, stage: 'compile time', detail: `the MPI headers say no CUDA support (MPIX_CUDA_AWARE_SUPPORT = 0)`, evidence: ev(r0.compileTime.evidence, r0.runTime.evidence) }; }
		if (rt === false) { return { aware: false, stage: 'run time', detail: `${r0.query || 'the run-time query'} returned false in rank ${r0.rank}`, evidence: ev(r0.runTime.evidence, r0.compileTime.evidence) }; }
		if (rt === true) { return { aware: true, stage: 'run time', detail: `${r0.query || 'the run-time query'} returned true in rank ${r0.rank}`, evidence: [r0.runTime.evidence] }; }
	}
	const impl = facts.mpi.implementation?.value ?? null;
	const ompi = facts.mpi.openmpi;
	if ((impl === 'openmpi' || impl === null) && ompi?.builtWithCuda) {
		const how = ompi.builtWithCudaBasis === 'parameter' ? 'ompi_info built_with_cuda_support' : ompi.builtWithCudaBasis === 'components' ? 'CUDA components in ompi_info' : 'the configure line';
		return { aware: ompi.builtWithCuda.value, stage: 'build', detail: `${how} says ${ompi.builtWithCuda.value ? 'built with' : 'built without'} CUDA`, evidence: [ompi.builtWithCuda.evidence] };
	}
	return { aware: null, stage: '', detail: 'no source said whether the MPI is CUDA-aware', evidence: [] };
}

const notFound: Rule = {
	id: 'mpi-not-found', severity: 'error', title: 'No MPI found',
	reads: ['mpi.implementation', 'mpi.openmpi', 'mpi.mpich', 'which', 'raw'],
	appliesTo: { any: ALL_VERSIONS },
	verifiedAgainst: [src(U.obsDebian, 'what ompi_info, mpirun --version and mpichversion print on a host with Open MPI and MPICH; the collector reads those')],
	fixSummary: 'Load a CUDA-aware MPI so mpirun is on PATH (the site\'s module: module avail openmpi; Spack: openmpi +cuda; NVIDIA HPC-X); distribution packages (Debian / Ubuntu openmpi-bin) are built without CUDA.',
	evaluate(facts) {
		if (facts.mpi.implementation || facts.mpi.openmpi || facts.mpi.mpich) { return []; }
		const w = facts.which;
		const evidence = ev(w.mpirun?.evidence, w.mpiexec?.evidence, w.ompi_info?.evidence, w.mpicc?.evidence);
		if (Object.keys(w).length === 0 && facts.raw.length === 0) { return []; }
		// A launcher on PATH, or engine ranks that ran, mean an MPI is there that no parser recognised (IBM Spectrum MPI,
		// HPE MPT, …): "no MPI found" and "install one" would be wrong there.
		const launcher = [w.mpirun, w.mpiexec].find((x) => typeof x?.value === 'string' && x.value !== '');
		const ranks = facts.engine?.ranks ?? [];
		if (launcher || ranks.length > 0) {
			return [finding(this, `An MPI is there${launcher ? ` (${launcher.value})` : ''}${ranks.length > 0 ? `, and ${ranks.length} engine rank(s) ran under it` : ''}, but none of ompi_info, mpirun --version or mpichversion identified it as Open MPI or MPICH: the checks that depend on the MPI family are skipped.`, evidence,
				{ text: 'If it is an Open MPI or MPICH build, put its ompi_info / mpichversion on PATH too; other MPIs are not inspected in depth.' }, 'warning')];
		}
		return [finding(this, 'Neither ompi_info, mpirun --version nor mpichversion identified an MPI on this host, and no engine rank reported one.', evidence,
			{ text: 'Put a CUDA-aware MPI on PATH (the site\'s environment module, Spack openmpi +cuda, or NVIDIA HPC-X) and inspect again; distribution packages such as Debian\'s openmpi-bin are built without CUDA.', command: 'module avail openmpi   # then: module load <a CUDA-aware one>' })];
	},
};

const notCudaAware: Rule = {
	id: 'mpi-not-cuda-aware', severity: 'warning', title: 'MPI is not CUDA-aware',
	reads: ['engine.ranks[].compileTime', 'engine.ranks[].runTime', 'mpi.openmpi.builtWithCuda', 'mpi.mpich.configure'],
	appliesTo: { openmpi: '>=4.0', mpich: '>=4.0' },
	verifiedAgainst: [
		src(U.ompiCudaDocs, 'Open MPI: --with-cuda, ompi_info mpi_built_with_cuda_support, MPIX_CUDA_AWARE_SUPPORT and MPIX_Query_cuda_support()'),
		src(U.mpichGpuQuery, 'MPICH: MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &ok)'),
		src(U.mpichReadme402, 'MPICH 4.0.2 README, "GPU support": enabled at configure time when CUDA is found (--with-cuda=<path>)', "GPU support is automatically enabled if CUDA, ZE, or HIP runtime is detected during configure."),
		src(U.obsDebian, 'Debian Open MPI 4.1.4 and MPICH 4.0.2: not CUDA-aware at compile and run time'),
		src(U.devInspect, 'H200 testbed: built with CUDA, MPIX_Query_cuda_support() = 0 when the CUDA component is not found'),
	],
	fixSummary: 'Use an MPI built with CUDA (Open MPI --with-cuda [--with-ucx on a UCX --with-cuda]; MPICH --with-cuda) or stage GPU buffers through host memory.',
	evaluate(facts) {
		const out: Finding[] = [];
		const a = cudaAwareness(facts);
		const impl = facts.mpi.implementation?.value ?? (facts.mpi.openmpi ? 'openmpi' : 'unknown');
		if (a.aware === false) {
			const name = `${impl === 'openmpi' ? 'Open MPI' : impl === 'mpich' ? 'MPICH' : 'The MPI'}${facts.mpi.version ? ' ' + facts.mpi.version.value : ''}`;
			const ompiBuilt = facts.mpi.openmpi?.builtWithCuda?.value;
			let message = `${name} is not CUDA-aware (${a.stage}): ${a.detail}. Passing device pointers to MPI calls will crash or read garbage.`;
			let fix = { text: 'Rebuild or load an Open MPI configured with --with-cuda (and --with-ucx on a UCX built --with-cuda), then check again.', command: 'ompi_info --parsable --all | grep built_with_cuda_support:value' };
			const ctTrue = facts.engine?.ranks[0]?.compileTime.value === true;
			if (impl === 'openmpi' && a.stage === 'run time' && (ompiBuilt === true || ctTrue)) {
				const basis = [ompiBuilt === true ? 'ompi_info says so' : '', ctTrue ? 'MPIX_CUDA_AWARE_SUPPORT = 1 at compile time' : ''].filter((x) => x !== '').join('; ');
				message = `${name} is built with CUDA but not CUDA-aware at run time (${basis}): ${a.detail}. The CUDA component was not loaded or CUDA was not usable in the rank, so device pointers are treated as host memory (segmentation faults).`;
				fix = { text: 'Make sure the ranks find Open MPI\'s own components (see the component-path finding) and look at what the CUDA component reports.', command: `--mca accelerator_base_verbose 100` };
			} else if (impl === 'mpich') {
				fix = { text: 'Use an MPICH built with CUDA (--with-cuda); GPU support is then on by default unless MPIR_CVAR_ENABLE_GPU=0 switches it off.', command: 'mpichversion | grep -i cuda' };
			}
			const o = facts.mpi.openmpi;
			const extra = impl === 'openmpi' && o ? ev(a.stage !== 'build' && o.builtWithCuda ? o.builtWithCuda.evidence : undefined, o.configuredWithCuda ? undefined : o.configureLine?.evidence) : [];
			out.push(finding(this, message, [...a.evidence, ...extra], fix));
		}
		return out;
	},
};

const pmlUcxDisabledByFile: Rule = {
	id: 'ompi-pml-ucx-disabled-by-param-file', severity: 'warning', title: 'pml ucx is disabled by a site MCA parameter file',
	reads: ['mpi.paramFiles[].settings', 'mpi.openmpi.params.pml', 'mpi.openmpi.components', 'mpi.openmpi.params.pml_ucx_tls', 'mpi.openmpi.params.pml_ucx_devices', 'ucx.transports'],
	appliesTo: { openmpi: ALL_VERSIONS },
	verifiedAgainst: [
		src(U.ompiMcaDocs, 'MCA parameter files and their precedence: command line and environment beat the files'),
		src(U.obsDebian, 'Debian\'s /etc/openmpi/openmpi-mca-params.conf has pml = ^ucx'),
	],
	fixSummary: 'Override on the command line (--mca pml ucx) or environment (OMPI_MCA_pml=ucx), or remove the line from the file; where pml ucx\'s pml_ucx_tls / pml_ucx_devices defaults refuse every transport UCX has (ompi-pml-ucx-transport-defaults), add --mca pml_ucx_tls any --mca pml_ucx_devices any (the line alone is then no fix, and no quick fix edits it).',
	evaluate(facts) {
		if (!isOpenMpi(facts)) { return []; }
		const hasUcx = componentsOf(facts.mpi.openmpi, 'pml').some((c) => c.name === 'ucx');
		const out: Finding[] = [];
		for (const file of facts.mpi.paramFiles) {
			for (const s of file.settings) {
				if (s.name !== 'pml') { continue; }
				const list = s.value.replace(/^\^/, '').split(',').map((x) => x.trim());
				const disables = s.value.startsWith('^') ? list.includes('ucx') : !list.includes('ucx');
				if (!disables) { continue; }
				const overridden = facts.mpi.envParams.find((e) => e.name === 'pml');
				const p = mcaParam(facts.mpi.openmpi, 'pml');
				const gpu = visibleGpus(facts).count > 0;
				const ucxCuda = ucxTransports(facts).some((t) => t.startsWith('cuda'));
				const sev = gpu || ucxCuda ? 'warning' : 'info';
				// Never a fix the same inspection contradicts: where pml ucx refuses every transport with its defaults
				// (ompi-pml-ucx-transport-defaults), pml = ucx alone makes every run fail; the fix then carries the
				// parameters that let it select (and the file's line alone is no fix: findingLocations offers no edit).
				const refused = pmlUcxRefusal(facts)?.refuses === 'transports';
				out.push(finding(this,
					`${file.path} line ${s.evidence.lineNo ?? '?'} sets "pml = ${s.value}", so Open MPI never selects pml ucx${hasUcx ? ' although the ucx component is installed' : ''}; GPU traffic then goes through ob1 (smcuda / tcp) instead of UCX's cuda_copy / cuda_ipc paths.${overridden ? ` The environment overrides it here (OMPI_MCA_pml=${overridden.value}).` : ''}${refused ? ' Removing the line alone would not help here: pml ucx also refuses every transport UCX offers with its pml_ucx_tls / pml_ucx_devices defaults (see ompi-pml-ucx-transport-defaults), so the fix sets those too.' : ''}${sev === 'info' ? ' No GPU or CUDA-capable UCX is visible here, so this matters only once there is one.' : ''}`,
					ev(s.evidence, p?.sourceEvidence, componentsOf(facts.mpi.openmpi, 'pml').find((c) => c.name === 'ucx')?.evidence),
					refused
						? { text: 'Select UCX explicitly for a run, with the transport parameters it needs here (command line and environment beat parameter files).', command: 'mpirun --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any ...   # or: export OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any' }
						: { text: 'Select UCX explicitly for a run (command line and environment beat parameter files), or delete the line from the file.', command: 'mpirun --mca pml ucx ...   # or: export OMPI_MCA_pml=ucx' }, sev));
			}
		}
		return out;
	},
};

const prefixMismatch: Rule = {
	id: 'mpi-tool-prefix-mismatch', severity: 'warning', title: 'mpicc, mpirun and ompi_info come from different installations',
	reads: ['which.mpicc', 'which.mpirun', 'which.ompi_info', 'mpi.openmpi.prefix'],
	appliesTo: { any: ALL_VERSIONS },
	verifiedAgainst: [src(U.ompiCudaDocs, 'checking CUDA support means running the ompi_info of the installation you compile with (ompi_info --parsable --all)')],
	fixSummary: 'Put one MPI installation first on PATH (module purge; module load ...), so mpicc, mpirun and ompi_info share a bin directory.',
	evaluate(facts) {
		const w = facts.which;
		const tools = ['mpicc', 'mpirun', 'ompi_info'].map((n) => ({ n, l: w[n] })).filter((t) => t.l && t.l.value);
		const dirs = new Set(tools.map((t) => dirOf(t.l?.value ?? '')));
		const prefix = facts.mpi.openmpi?.prefix;
		const out: Finding[] = [];
		if (dirs.size > 1) {
			out.push(finding(this, `The MPI tools on PATH live in ${dirs.size} different directories (${tools.map((t) => `${t.n} → ${t.l?.value}`).join(', ')}): a program compiled with one MPI and launched or inspected with another fails in confusing ways.`,
				tools.map((t) => t.l?.evidence).filter((e): e is Evidence => e !== undefined),
				{ text: 'Make one installation first on PATH.', command: 'which -a mpicc mpirun ompi_info' }));
		} else if (prefix && w.ompi_info?.value && isOpenMpi(facts)) {
			const bin = dirOf(w.ompi_info.value);
			if (bin !== `${prefix.value.replace(/\/$/, '')}/bin`) {
				out.push(finding(this, `ompi_info on PATH is in ${bin}, but the Open MPI it describes has prefix ${prefix.value}: the tools on PATH are not the installation being reported (a wrapper, a moved install, or a different MPI).`,
					ev(w.ompi_info.evidence, prefix.evidence), { text: 'Run the ompi_info of the installation you compile with.', command: `${prefix.value}/bin/ompi_info --parsable --all` }, 'info'));
			}
		}
		return out;
	},
};

/** Run-time switches that turn GPU support on, per implementation (sources: the rule's verifiedAgainst). */
const GPU_SWITCHES: Record<string, { name: string; on: RegExp; label: string }> = {
	cray: { name: 'MPICH_GPU_SUPPORT_ENABLED', on: /^1$/, label: 'Cray MPICH' },
	intel: { name: 'I_MPI_OFFLOAD', on: /^[1-9]/, label: 'Intel MPI' },
	mvapich: { name: 'MV2_USE_CUDA', on: /^1$/, label: 'MVAPICH2-GDR' },
	mpich: { name: 'MPIR_CVAR_ENABLE_GPU', on: /^(1|yes|true)$/i, label: 'MPICH' },
};

const gpuSwitchOff: Rule = {
	id: 'mpi-gpu-support-switched-off', severity: 'warning', title: 'The MPI\'s GPU support is switched off at run time',
	reads: ['mpi.implementation', 'env.MPICH_GPU_SUPPORT_ENABLED', 'env.I_MPI_OFFLOAD', 'env.MV2_USE_CUDA', 'env.MPIR_CVAR_ENABLE_GPU', 'engine.ranks[].env', 'gpu.gpus'],
	appliesTo: { vendorMpi: ALL_VERSIONS, mpich: '>=4.0' },
	verifiedAgainst: [
		src(U.nerscCrayMpich, 'Cray MPICH: MPICH_GPU_SUPPORT_ENABLED=1 and the GTL library for GPU buffers'),
		src(U.intelMpiDocs, 'Intel MPI Developer Reference, GPU Support: I_MPI_OFFLOAD=0 (disabled) is the default, 1 enables GPU buffers; I_MPI_OFFLOAD_MODE=cuda selects the CUDA driver API (NVIDIA GPUs are supported from 2021.13 on; the 2021.8–2021.10 pages name Level Zero only)'),
		src(U.mvapichGdrGuide, 'MVAPICH2-GDR user guide: MV2_USE_CUDA=1'),
		src(U.nvidiaGdrMvapich, 'NVIDIA GPUDirect RDMA manual: MVAPICH2-GDR runs with MV2_USE_CUDA=1 (and MV2_USE_GPUDIRECT=1) for device buffers'),
		src(U.mpichReadme402, 'MPICH: GPU support can be switched off at run time with MPIR_CVAR_ENABLE_GPU=0', "If desirable, GPU support can be disabled during runtime by setting environment variable MPIR_CVAR_ENABLE_GPU=0."),
	],
	fixSummary: 'Set the implementation\'s switch: MPICH_GPU_SUPPORT_ENABLED=1 (Cray), I_MPI_OFFLOAD=1 I_MPI_OFFLOAD_MODE=cuda (Intel), MV2_USE_CUDA=1 (MVAPICH2-GDR); for MPICH remove MPIR_CVAR_ENABLE_GPU=0 (on by default).',
	evaluate(facts) {
		const impl = facts.mpi.implementation;
		const sw = impl ? GPU_SWITCHES[impl.value] : undefined;
		if (!impl || !sw) { return []; }
		const settings = envSettings(facts, sw.name);
		const set = settings[0];
		// MPICH enables GPU support by default when built with it: only an explicit "off" is a finding there.
		if (impl.value === 'mpich') {
			if (!set || !/^(0|no|false)$/i.test(set.value.trim())) { return []; }
		} else if (set && sw.on.test(set.value.trim())) {
			return [];
		}
		const gtl = facts.messages.find((m) => m.kind === 'gtl-not-linked');
		if (!set && visibleGpus(facts).count === 0 && !gtl) { return []; }
		const value = set ? `${sw.name}=${set.value} (${set.origin})` : `${sw.name} is not set`;
		return [finding(this, `${sw.label}${facts.mpi.version ? ' ' + facts.mpi.version.value : ''} passes GPU buffers through its GPU path only when ${sw.name} enables it; here ${value}, so device pointers are treated as host memory.${gtl ? ' The launcher also reported that the GPU transfer library (GTL) is not linked: link libmpi_gtl_cuda (Cray: load craype-accel-nvidia*).' : ''}`,
			ev(impl.evidence, set?.evidence, gtl?.evidence),
			{ text: `Enable GPU support for the job${impl.value === 'intel' ? ' (and select CUDA)' : ''}.`, command: impl.value === 'intel' ? 'export I_MPI_OFFLOAD=1 I_MPI_OFFLOAD_MODE=cuda' : `export ${sw.name}=1` })];
	},
};

/** Rules about the MPI library. */
export const mpiRules: Rule[] = [notFound, notCudaAware, pmlUcxDisabledByFile, prefixMismatch, gpuSwitchOff];
