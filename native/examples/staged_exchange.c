/* staged_exchange.c — a complete libgpumpi program to copy from.
 *
 * Every rank exchanges a large GPU buffer with its ring neighbours. The library picks, per peer, whether the
 * device pointer goes straight to MPI (CUDA IPC / GPUDirect RDMA paths) or through YOUR pinned host buffers in a
 * pipelined staging protocol (paths where MPI would stage through host memory itself, or is not CUDA-aware).
 * Staging memory is registered once; it never grows with the message size.
 *
 * Build:  cmake --install native/build/engine-openmpi --prefix <prefix>   (or engine-mpich; docs/library.md)
 *         mpicc staged_exchange.c $(PKG_CONFIG_PATH=<prefix>/lib/pkgconfig pkg-config --cflags --libs gpumpi) -o staged_exchange
 *         (or CMake: find_package(gpumpi) + target_link_libraries(app PRIVATE gpumpi::gpumpi), CMAKE_PREFIX_PATH=<prefix>)
 * Run:    mpirun -np 2 ./staged_exchange [bytes] [--force-staged]
 * Without a GPU (or CUDA driver) it runs the same code on host memory, so it is also a CI test.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumpi.h"

#define CHECK(call)                                                                                  \
	do {                                                                                             \
		gpumpi_status st_ = (call);                                                                  \
		if (st_ != GPUMPI_SUCCESS) {                                                                 \
			fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #call, gpumpi_strerror(st_),     \
			        gpumpi_last_error(ctx));                                                         \
			MPI_Abort(MPI_COMM_WORLD, 1);                                                            \
		}                                                                                            \
	} while (0)

int main(int argc, char** argv) {
	size_t bytes = (size_t)64 << 20;
	unsigned flags = 0;
	for (int i = 1; i < argc; ++i) {
		if (!strcmp(argv[i], "--force-staged")) flags |= GPUMPI_FORCE_STAGED;
		else bytes = (size_t)strtoull(argv[i], NULL, 0);
	}
	/* 1. CUDA before MPI_Init (with the CUDA runtime: cudaSetDevice(local_rank); cudaFree(0);) */
	int gpu = gpumpi_cuda_preinit(-1, NULL) == GPUMPI_SUCCESS;

	MPI_Init(&argc, &argv);
	int rank = 0, size = 0;
	gpumpi_ctx* ctx = NULL;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int next = (rank + 1) % size, prev = (rank - 1 + size) % size;

	/* 2. Context: discovers each peer's path (collective). */
	gpumpi_config cfg;
	gpumpi_config_default(&cfg);
	cfg.chunk_bytes = (size_t)8 << 20;
	cfg.num_buffers = 4;
	CHECK(gpumpi_init(MPI_COMM_WORLD, &cfg, &ctx));

	/* 3. Persistent staging: your own host buffer (pinned by the library here), used by every transfer. */
	size_t staging_bytes = cfg.chunk_bytes * (size_t)cfg.num_buffers;
	void* staging = malloc(staging_bytes);
	CHECK(gpumpi_register_staging(ctx, staging, staging_bytes, GPUMPI_STAGING_PIN));

	/* 4. What will happen with a GPU buffer to the next rank, and why. */
	gpumpi_path_info info;
	CHECK(gpumpi_path(ctx, next, &info));
	printf("rank %d -> %d: path %s, protocol %s (%s)\n", rank, next, gpumpi_path_name(info.path), gpumpi_protocol_name(info.protocol), info.reason);

	/* 5. Device buffers (cudaMalloc in a CUDA program); host memory when this machine has no GPU. */
	unsigned char *sendbuf = NULL, *recvbuf = NULL, *host = (unsigned char*)malloc(bytes);
	for (size_t i = 0; i < bytes; ++i) host[i] = (unsigned char)(i * 7 + (size_t)rank);
	if (gpu) {
		CHECK(gpumpi_device_alloc((void**)&sendbuf, bytes));
		CHECK(gpumpi_device_alloc((void**)&recvbuf, bytes));
		CHECK(gpumpi_memcpy(sendbuf, host, bytes));
	} else {
		sendbuf = (unsigned char*)malloc(bytes);
		recvbuf = (unsigned char*)malloc(bytes);
		memcpy(sendbuf, host, bytes);
	}

	/* 6. Nonblocking exchange; progress happens inside wait/test. Both sides pass the same size, tag and flags. */
	gpumpi_request* reqs[2];
	double t0 = MPI_Wtime();
	CHECK(gpumpi_irecv_ex(ctx, recvbuf, bytes, prev, 0, flags, &reqs[0]));
	CHECK(gpumpi_isend_ex(ctx, sendbuf, bytes, next, 0, flags, &reqs[1]));
	CHECK(gpumpi_waitall(ctx, 2, reqs));
	double secs = MPI_Wtime() - t0;

	/* 7. Check what arrived. */
	if (gpu) CHECK(gpumpi_memcpy(host, recvbuf, bytes));
	else memcpy(host, recvbuf, bytes);
	size_t bad = 0;
	for (size_t i = 0; i < bytes; ++i) if (host[i] != (unsigned char)(i * 7 + (size_t)prev)) ++bad;
	printf("rank %d: received %zu bytes from %d in %.3f s (%.2f GB/s), %zu wrong, %s memory, staging %zu bytes\n", rank, bytes, prev, secs,
	       bytes / secs / 1e9, bad, gpu ? "device" : "host", gpumpi_staging_bytes(ctx));

	/* 8. Clean up: finalize (collective) unpins and forgets the staging buffer; then free it. */
	if (gpu) { gpumpi_device_free(sendbuf); gpumpi_device_free(recvbuf); }
	else { free(sendbuf); free(recvbuf); }
	CHECK(gpumpi_finalize(&ctx));
	free(staging);
	free(host);
	int any = bad != 0, all = 0;
	MPI_Allreduce(&any, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0) printf("staged_exchange: %s\n", all ? "FAILED" : "OK");
	MPI_Finalize();
	return all ? 1 : 0;
}
