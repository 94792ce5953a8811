/**
 * The public sources the rules cite, in one place: source files at tagged releases, documentation pages, issue
 * threads, and the sections of docs/ pages we ship that record what was measured. Each rule pairs a URL with what
 * it shows there (`src`). test/unit/rules/ruleSources.test.ts fails on anything that is not an https URL or a
 * docs/…md#anchor that exists in this repository.
 */
import type { SourceRef } from '../../shared/report';

/** A source and what it shows for the rule citing it; `quote`: the exact text of a file at a tag it rests on. */
export function src(url: string, shows: string, quote?: string): SourceRef {
	return quote === undefined ? { url, shows } : { url, shows, quote };
}

const GH = 'https://github.com';
const OMPI5 = `${GH}/open-mpi/ompi/blob/v5.0.7`;
const OMPI4 = `${GH}/open-mpi/ompi/blob/v4.1.4`;
const UCX = `${GH}/openucx/ucx/blob/v1.20.0`;

export const URLS = {
	// Open MPI
	ompiCudaDocs: 'https://docs.open-mpi.org/en/v5.0.x/tuning-apps/networking/cuda.html',
	ompiCudaFaq41: 'https://www.open-mpi.org/faq/?category=runcuda',
	ompiMcaDocs: 'https://docs.open-mpi.org/en/v5.0.x/mca.html',
	ompiMpirun41: 'https://www.open-mpi.org/doc/v4.1/man1/mpirun.1.php',
	ompiMpirun5: 'https://docs.open-mpi.org/en/v5.0.x/man-openmpi/man1/mpirun.1.html',
	ompiAcceleratorCuda5: `${OMPI5}/opal/mca/accelerator/cuda/accelerator_cuda_component.c`,
	ompiCommonCuda41: `${OMPI4}/opal/mca/common/cuda/common_cuda.c`,
	ompiSmcuda5: `${OMPI5}/opal/mca/btl/smcuda/btl_smcuda_component.c`,
	ompiSmcuda41: `${OMPI4}/opal/mca/btl/smcuda/btl_smcuda_component.c`,
	ompiCommonUcx41: `${OMPI4}/opal/mca/common/ucx/common_ucx.c`,
	ompiMcaBaseOpen5: `${OMPI5}/opal/mca/base/mca_base_open.c`,
	ompiIssue6001: `${GH}/open-mpi/ompi/issues/6001`,
	ompiIssue9051: `${GH}/open-mpi/ompi/issues/9051`,
	ompiIssue12849: `${GH}/open-mpi/ompi/issues/12849`,
	ompiIssue11949: `${GH}/open-mpi/ompi/issues/11949`,
	climaSlurm54: `${GH}/CliMA/slurm-buildkite/issues/54`,
	// UCX
	ucxFaq: 'https://openucx.readthedocs.io/en/master/faq.html',
	ucxContext: `${UCX}/src/ucp/core/ucp_context.c`,
	ucxRndvPpln: `${UCX}/src/ucp/rndv/rndv_ppln.c`,
	ucxCudaIpcMd: `${UCX}/src/uct/cuda/cuda_ipc/cuda_ipc_md.c`,
	ucxCudaIpcMd117: `${GH}/openucx/ucx/blob/v1.17.0/src/uct/cuda/cuda_ipc/cuda_ipc_md.c`,
	ucxCudaIpcMd118: `${GH}/openucx/ucx/blob/v1.18.0/src/uct/cuda/cuda_ipc/cuda_ipc_md.c`,
	ucxCudaIpcMd122: `${GH}/openucx/ucx/blob/v1.22.0/src/uct/cuda/cuda_ipc/cuda_ipc_md.c`,
	ucxIbMd: `${UCX}/src/uct/ib/base/ib_md.c`,
	ucxCudaCopyIface118: `${GH}/openucx/ucx/blob/v1.18.0/src/uct/cuda/cuda_copy/cuda_copy_iface.c`,
	ucxCudaCopyIface119: `${GH}/openucx/ucx/blob/v1.19.0/src/uct/cuda/cuda_copy/cuda_copy_iface.c`,
	ucxIssue3192: `${GH}/openucx/ucx/issues/3192`,
	ucxIssue4707: `${GH}/openucx/ucx/issues/4707`,
	ucxIssue9287: `${GH}/openucx/ucx/issues/9287`,
	ucxIssue10104: `${GH}/openucx/ucx/issues/10104`,
	ucxPr11062: `${GH}/openucx/ucx/pull/11062`,
	ucxIssue11121: `${GH}/openucx/ucx/issues/11121`,
	ompiOrtedSubmit414: `${GH}/open-mpi/ompi/blob/v4.1.4/orte/orted/orted_submit.c`,
	ucxPr7083: `${GH}/openucx/ucx/pull/7083`,
	ucxRndv120: `${UCX}/src/ucp/rndv/rndv.c`,
	ucxMpool120: `${UCX}/src/ucs/datastruct/mpool.c`,
	ucxParser1131: `${GH}/openucx/ucx/blob/v1.13.1/src/ucs/config/parser.c`,
	ucxParser1150: `${GH}/openucx/ucx/blob/v1.15.0/src/ucs/config/parser.c`,
	ucxUcpContextH122: `${GH}/openucx/ucx/blob/v1.22.0/src/ucp/core/ucp_context.h`,
	ucxMemtypeCache1131: `${GH}/openucx/ucx/blob/v1.13.1/src/ucs/memory/memtype_cache.c`,
	ucxParser119: `${GH}/openucx/ucx/blob/v1.19.0/src/ucs/config/parser.c`,
	ucxPr11754: `${GH}/openucx/ucx/pull/11754`,
	ucxIssue9716: `${GH}/openucx/ucx/issues/9716`,
	ucxIssue7110: `${GH}/openucx/ucx/issues/7110`,
	ucxIssue11548: `${GH}/openucx/ucx/issues/11548`,
	ucxPr10189: `${GH}/openucx/ucx/pull/10189`,
	ucxPr11183: `${GH}/openucx/ucx/pull/11183`,
	ucxPr10618: `${GH}/openucx/ucx/pull/10618`,
	cudaJl1053: `${GH}/JuliaGPU/CUDA.jl/issues/1053`,
	nvidiaVmmBlog: 'https://developer.nvidia.com/blog/introducing-low-level-gpu-virtual-memory-management/',
	ompiIssue11855: `${GH}/open-mpi/ompi/issues/11855`,
	ucxPr10643: `${GH}/openucx/ucx/pull/10643`,
	ucxIssue10070: `${GH}/openucx/ucx/issues/10070`,
	ucxPr11514: `${GH}/openucx/ucx/pull/11514`,
	ucxCudaIpcIface122: `${GH}/openucx/ucx/blob/v1.22.0/src/uct/cuda/cuda_ipc/cuda_ipc_iface.c`,
	rapidsmpf244: `${GH}/rapidsai/rapidsmpf/issues/244`,
	// MPICH and vendor MPIs
	mpichReadme402: `${GH}/pmodels/mpich/blob/v4.0.2/README.vin`,
	mpichConfigure402: `${GH}/pmodels/mpich/blob/v4.0.2/configure.ac`,
	mpichMplConfigure402: `${GH}/pmodels/mpich/blob/v4.0.2/src/mpl/configure.ac`,
	mpichYaksaInit402: `${GH}/pmodels/mpich/blob/v4.0.2/src/mpi/datatype/typerep/src/typerep_yaksa_init.c`,
	mpichTyperepSubconfigure402: `${GH}/pmodels/mpich/blob/v4.0.2/src/mpi/datatype/typerep/src/subconfigure.m4`,
	mpichIssue7304: `${GH}/pmodels/mpich/issues/7304`,
	mpichIssue7302: `${GH}/pmodels/mpich/issues/7302`,
	mpichPr6461: `${GH}/pmodels/mpich/pull/6461`,
	mpichPr7862: `${GH}/pmodels/mpich/pull/7862`,
	mpichPr6526: `${GH}/pmodels/mpich/pull/6526`,
	mpichPr7980: `${GH}/pmodels/mpich/pull/7980`,
	mpichGpuPost402: `${GH}/pmodels/mpich/blob/v4.0.2/src/mpid/ch4/shm/ipc/gpu/gpu_post.c`,
	mpichGpuPost501: `${GH}/pmodels/mpich/blob/v5.0.1/src/mpid/ch4/shm/ipc/gpu/gpu_post.c`,
	mpichGpuQuery: 'https://manpages.ubuntu.com/manpages/kinetic/man3/MPIX_GPU_query_support.3.html',
	nerscCrayMpich: 'https://docs.nersc.gov/development/programming-models/mpi/cray-mpich/',
	mvapichGdrGuide: 'https://mvapich.cse.ohio-state.edu/userguide/gdr/',
	intelMpiDocs: 'https://www.intel.com/content/www/us/en/docs/mpi-library/developer-reference-linux/current/gpu-support.html',
	nvidiaGdrMvapich: 'https://docs.nvidia.com/networking/display/GPUDirectRDMAv18/Benchmark+Tests',
	reframe265: `${GH}/reframe-hpc/reframe/issues/265`,
	// Platform
	slurmMpiGuide: 'https://slurm.schedmd.com/mpi_guide.html',
	slurmSrun: 'https://slurm.schedmd.com/srun.html',
	cudaProgrammingGuide: 'https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html',
	gpudirectRdma: 'https://docs.nvidia.com/cuda/gpudirect-rdma/index.html',
	cudaDriverDeviceAttr: 'https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__TYPES.html',
	nvidiaSmi: 'https://docs.nvidia.com/deploy/nvidia-smi/index.html',
	cudaMps: 'https://docs.nvidia.com/deploy/mps/index.html',
	migUserGuide: 'https://docs.nvidia.com/datacenter/tesla/mig-user-guide/index.html',
	sysfsPci: 'https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci',
	sysfsNode: 'https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-devices-node',
	nccl897: `${GH}/NVIDIA/nccl/issues/897`,
	ncclNetIb: `${GH}/NVIDIA/nccl/blob/02aedae040e45a2ae37595c5a83c929f506330b9/src/transport/net_ib.cc`,
	// Pages we ship (what was measured, on what, how to reproduce it)
	devInspect: 'docs/device-results.md#inspect',
	devIpcMem: 'docs/device-results.md#memory-ipc-capability-pool-and-vmm-memory-issue-16-item-1',
	devIpc: 'docs/device-results.md#ipc-pointer-reproducer-the-global-arrays-report-4-ranks-on-the-one-gpu-64-mib-device-memory',
	devFallback: 'docs/device-results.md#fallback-reproducer-the-quest-report-2-ranks-1-gib-device-buffers-best-of-3-run-1--run-2',
	devLib: 'docs/device-results.md#libgpumpi-gpumpi-bench-2-ranks',
	devCli: 'docs/device-results.md#the-headless-cli-itself-on-the-h200-second-session-2026-12-02-1234-utc',
	devMps: 'docs/device-results.md#mps-latency',
	devCudaInit: 'docs/device-results.md#cuda-first-touched-after-mpi_init',
	devRndv: 'docs/device-results.md#ucx-rendezvous-settings-and-the-host-memory-of-the-staging-pipeline',
	devIpcTrials: 'docs/device-results.md#ipc-pointer-reproducer-with-trials-issue-12s-check',
	devH100Cli: 'docs/device-results.md#the-headless-cli-on-the-h100-second-call-0311-utc',
	devRndvForms: 'docs/device-results.md#ucx-rendezvous-settings-in-their-accepted-forms-call-c-item-8',
	ucxContext1131: `${GH}/openucx/ucx/blob/v1.13.1/src/ucp/core/ucp_context.c`,
	ucxContext1160: `${GH}/openucx/ucx/blob/v1.16.0/src/ucp/core/ucp_context.c`,
	obsDebian: 'docs/observations.md#debian-12-ci-machine-open-mpi-414-ucx-1131-mpich-402',
	obsSlurm: 'docs/observations.md#slurm-2205-on-the-ci-machine',
	obsH200: 'docs/observations.md#h200-testbed-open-mpi-507--ucx-1131',
} as const;
