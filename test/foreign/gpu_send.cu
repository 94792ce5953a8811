// A GPU-aware MPI program the way application developers write one: CUDA runtime API, buffers from cudaMalloc,
// cudaMallocAsync (stream-ordered pool) or the virtual memory management API (cuMemCreate + cuMemMap), handed to
// MPI_Send / MPI_Recv; or the seed's IPC pattern (4 ranks: MPI_Irecv into memory another rank allocated and this one
// imported with cudaIpcOpenMemHandle). Not linked with anything of GPU-MPI Doctor; built as nvcc builds by default
// (static cudart): `nvcc gpu_send.cu -lmpi -lcuda`.
//   gpu_send --alloc malloc|pool|vmm [--bytes N] [--iters K]   2 ranks: rank 0 sends K messages to rank 1
//   gpu_send --alloc ipc [--bytes N]                             4 ranks: the seed's pattern
//   gpu_send --probe                                             2 ranks: what the driver says about each kind
// Prints "BW <GB/s>" (the receiver's steady state, first message excluded), "CHECK <wrong words>" and "RESULT PASS|FAIL".
#include <cuda.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)
#define CU(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s_ = ""; cuGetErrorString(r_, &s_); fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, s_); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

__global__ void fill(unsigned* p, size_t n, unsigned seed) {
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = (unsigned)i * 2654435761u + seed;
}
__global__ void count_wrong(const unsigned* p, size_t n, unsigned seed, unsigned long long* wrong) {
	unsigned long long w = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) w += p[i] != (unsigned)i * 2654435761u + seed;
	if (w) atomicAdd(wrong, w);
}
static unsigned long long wrong_words(const void* p, size_t bytes, unsigned seed) {
	unsigned long long* d; CK(cudaMalloc(&d, sizeof *d)); CK(cudaMemset(d, 0, sizeof *d));
	count_wrong<<<264, 256>>>((const unsigned*)p, bytes / 4, seed, d);
	unsigned long long h = 0; CK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost)); CK(cudaFree(d));
	return h;
}

struct Vmm { CUdeviceptr ptr; size_t size; CUmemGenericAllocationHandle h; };
static void* alloc_vmm(size_t bytes, Vmm* v) {
	int dev; CK(cudaGetDevice(&dev));
	CUmemAllocationProp prop; memset(&prop, 0, sizeof prop);
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED; prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE; prop.location.id = dev;
	size_t gran = 0; CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
	v->size = (bytes + gran - 1) / gran * gran;
	CU(cuMemCreate(&v->h, v->size, &prop, 0));
	CU(cuMemAddressReserve(&v->ptr, v->size, 0, 0, 0));
	CU(cuMemMap(v->ptr, v->size, 0, v->h, 0));
	CUmemAccessDesc acc; memset(&acc, 0, sizeof acc);
	acc.location = prop.location; acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CU(cuMemSetAccess(v->ptr, v->size, &acc, 1));
	return (void*)v->ptr;
}

static void probe(const char* what, void* p) {
	CUmemorytype mt = (CUmemorytype)0; int legacy = -1; unsigned long long handles = 0; void* pool = nullptr; CUdeviceptr start = 0; size_t size = 0;
	CUpointer_attribute a[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
	void* d[] = {&mt, &legacy, &handles, &pool, &start, &size};
	CUresult r = cuPointerGetAttributes(6, a, d, (CUdeviceptr)p);
	CUmemGenericAllocationHandle h = 0;
	CUresult rr = cuMemRetainAllocationHandle(&h, p);
	if (rr == CUDA_SUCCESS) cuMemRelease(h);
	unsigned long long mapping = 0; CUresult rm = cuPointerGetAttribute(&mapping, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, (CUdeviceptr)p);
	printf("PROBE %s: attrs=%d type=%d legacyIpc=%d handles=0x%llx pool=%p range=%zu retainHandle=%d mappingBase=%d(%s)\n", what, (int)r, (int)mt, legacy, handles, pool, size, (int)rr, (int)rm, rm == CUDA_SUCCESS ? (mapping == (unsigned long long)p ? "self" : "other") : "-");
}

int main(int argc, char** argv) {
	const char* alloc = "malloc"; size_t bytes = 256u << 20; int iters = 5; bool doProbe = false;
	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--alloc") && i + 1 < argc) alloc = argv[++i];
		else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = strtoull(argv[++i], nullptr, 0);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--probe")) doProbe = true;
	}
	MPI_Init(&argc, &argv);
	int rank, size; MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
	int ndev = 0; CK(cudaGetDeviceCount(&ndev)); CK(cudaSetDevice(rank % ndev));
	bool pass = true;
	if (doProbe) {
		void *m, *pl; Vmm v; CK(cudaMalloc(&m, 1 << 20)); CK(cudaMallocAsync(&pl, 1 << 20, 0)); CK(cudaStreamSynchronize(0));
		alloc_vmm(1 << 20, &v);
		cudaIpcMemHandle_t mine, theirs; CK(cudaIpcGetMemHandle(&mine, m));
		MPI_Sendrecv(&mine, sizeof mine, MPI_BYTE, rank ^ 1, 0, &theirs, sizeof theirs, MPI_BYTE, rank ^ 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		void* imp; CK(cudaIpcOpenMemHandle(&imp, theirs, cudaIpcMemLazyEnablePeerAccess));
		if (rank == 0) { probe("cudaMalloc", m); probe("cudaMallocAsync", pl); probe("cuMemCreate", (void*)v.ptr); probe("ipc-import", imp); probe("ipc-import+4096", (char*)imp + 4096); }
		MPI_Barrier(MPI_COMM_WORLD);
		CK(cudaIpcCloseMemHandle(imp));
		MPI_Barrier(MPI_COMM_WORLD);
		printf("RESULT PASS\n");
		MPI_Finalize();
		return 0;
	}
	if (!strcmp(alloc, "ipc")) {
		// ranks 0 and 2 own; 1 imports 0's buffer and receives into it from 2; 3 imports 2's and receives from 0
		void* own = nullptr; cudaIpcMemHandle_t h;
		if (rank % 2 == 0) { CK(cudaMalloc(&own, bytes)); CK(cudaMemset(own, 0, bytes)); CK(cudaDeviceSynchronize()); CK(cudaIpcGetMemHandle(&h, own)); MPI_Send(&h, sizeof h, MPI_BYTE, rank + 1, 1, MPI_COMM_WORLD); }
		else { MPI_Recv(&h, sizeof h, MPI_BYTE, rank - 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
		if (rank % 2 == 1) {
			void* imp; CK(cudaIpcOpenMemHandle(&imp, h, cudaIpcMemLazyEnablePeerAccess));
			int from = rank == 1 ? 2 : 0; MPI_Request rq;
			MPI_Irecv(imp, (int)(bytes / 4), MPI_UNSIGNED, from, 2, MPI_COMM_WORLD, &rq);
			MPI_Wait(&rq, MPI_STATUS_IGNORE);
			CK(cudaDeviceSynchronize());
			CK(cudaIpcCloseMemHandle(imp));
			MPI_Send(nullptr, 0, MPI_BYTE, rank - 1, 3, MPI_COMM_WORLD);
		} else {
			void* src; CK(cudaMalloc(&src, bytes)); fill<<<264, 256>>>((unsigned*)src, bytes / 4, 7u + rank); CK(cudaDeviceSynchronize());
			MPI_Send(src, (int)(bytes / 4), MPI_UNSIGNED, rank == 0 ? 3 : 1, 2, MPI_COMM_WORLD);
			MPI_Recv(nullptr, 0, MPI_BYTE, rank + 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			unsigned long long w = wrong_words(own, bytes, 7u + (rank == 0 ? 2 : 0));
			printf("CHECK rank %d: %llu wrong\n", rank, w);
			pass = w == 0;
			CK(cudaFree(src)); CK(cudaFree(own));
		}
	} else {
		void* buf = nullptr; Vmm v = {};
		if (!strcmp(alloc, "malloc")) CK(cudaMalloc(&buf, bytes));
		else if (!strcmp(alloc, "pool")) { CK(cudaMallocAsync(&buf, bytes, 0)); CK(cudaStreamSynchronize(0)); }
		else if (!strcmp(alloc, "vmm")) buf = alloc_vmm(bytes, &v);
		else { fprintf(stderr, "unknown --alloc %s\n", alloc); MPI_Abort(MPI_COMM_WORLD, 2); }
		int n = (int)(bytes / 4); double best = 0, total = 0;
		for (int it = 0; it <= iters; ++it) {
			if (rank == 0) { fill<<<264, 256>>>((unsigned*)buf, bytes / 4, 11u + it); CK(cudaDeviceSynchronize()); }
			else { CK(cudaMemset(buf, 0, bytes)); CK(cudaDeviceSynchronize()); }
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = MPI_Wtime();
			if (rank == 0) MPI_Send(buf, n, MPI_UNSIGNED, 1, 5, MPI_COMM_WORLD);
			else if (rank == 1) MPI_Recv(buf, n, MPI_UNSIGNED, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			double dt = MPI_Wtime() - t0;
			if (rank == 1) {
				unsigned long long w = wrong_words(buf, bytes, 11u + it);
				if (w) { pass = false; printf("CHECK iter %d: %llu wrong\n", it, w); }
				if (it > 0) { total += dt; if (bytes / dt > best) best = bytes / dt; }
			}
		}
		if (rank == 1) printf("BW %.2f GB/s (best %.2f) alloc=%s bytes=%zu iters=%d\n", iters * (double)bytes / total / 1e9, best / 1e9, alloc, bytes, iters);
		if (!strcmp(alloc, "pool")) { CK(cudaFreeAsync(buf, 0)); CK(cudaStreamSynchronize(0)); }
		else if (!strcmp(alloc, "vmm")) { cuMemUnmap(v.ptr, v.size); cuMemAddressFree(v.ptr, v.size); cuMemRelease(v.h); }
		else CK(cudaFree(buf));
	}
	int ok = pass ? 1 : 0, all = 0;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (rank == 0) printf("RESULT %s\n", all ? "PASS" : "FAIL");
	MPI_Finalize();
	return all ? 0 : 1;
}
