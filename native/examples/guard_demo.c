/* guard_demo: a fixed, known pattern of MPI calls for gpumpi-guard (docs/guard.md), in three modes.
 *
 *   mpirun -np 2 guard_demo            host buffers, every call kind the guard models once or more, plus one
 *                                      MPI_Sendrecv_replace (not modelled); rank 0 prints "CHECKSUM r0 r1" (FNV-1a
 *                                      of everything each rank received) and "RESULT PASS|FAIL"
 *   mpirun -np 2 guard_demo --bench [--iters N]
 *                                      8-byte ping-pong through MPI_Send/MPI_Recv (through the guard when it is
 *                                      preloaded) and through PMPI_Send/PMPI_Recv (never through it), alternating
 *                                      batches in one run; plus MPI_Send to MPI_PROC_NULL vs PMPI_Send: one JSON line
 *   mpirun -np 2|4 guard_demo --ipc [--size BYTES] [--via irecv|recv|persistent] [--send-from-import] [--cuda-local]
 *                                      the seed's pattern on GPUs: even ranks allocate device memory and export it
 *                                      (cuIpcGetMemHandle), the next rank imports it (cuIpcOpenMemHandle) and
 *                                      MPI_Irecv's into the import from a third rank's (or rank 0's) own device
 *                                      buffer (--via: MPI_Irecv + MPI_Wait, MPI_Recv, or a persistent request);
 *                                      the owner verifies word by word: "IPC rank R: W words, M wrong".
 *                                      --send-from-import: the importers send from the import instead (the seed's
 *                                      "send-from-import" variant); the partner verifies what it received
 *   --no-finalize                      exit without MPI_Finalize (the guard then reports from exit)
 * The per-call pattern of the default mode (both ranks, peer = the other rank; ranks >= 2 only join collectives):
 *   MPI_Send/MPI_Recv 100 int; 3 × (MPI_Irecv + MPI_Isend 64 int, MPI_Waitall); MPI_Irecv(MPI_ANY_SOURCE) +
 *   MPI_Isend 8 int, MPI_Waitall(MPI_STATUSES_IGNORE); MPI_Send_init/MPI_Recv_init 32 int, 4 × MPI_Startall +
 *   MPI_Waitall, 2 × MPI_Request_free, the same once with count 0; MPI_Sendrecv 16 int; MPI_Send/MPI_Recv 4 int on a communicator with the
 *   ranks reversed; MPI_Isend 12 int + MPI_Mprobe(MPI_ANY_SOURCE) + MPI_Mrecv + MPI_Wait; MPI_Bcast 10 int;
 *   MPI_Allreduce 8 double; MPI_Sendrecv_replace 4 int; MPI_Gather of the checksums (test/engine/guard.test.ts).
 * CUDA is reached through dlopen(RTLD_GLOBAL) + dlsym(RTLD_DEFAULT), as a program linked with -lcuda would resolve
 * it, so an LD_PRELOADed guard sees cuIpcOpenMemHandle. */
/* MPICH defines MPI_STATUSES_IGNORE as (MPI_Status*)1: gcc then warns about MPI_Waitall's array argument */
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t fnv(uint64_t h, const void* p, size_t n) {
	const unsigned char* b = (const unsigned char*)p;
	for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
	return h;
}

static int demo(int rank, int size) {
	uint64_t h = 1469598103934665603ull;
	int peer = rank ^ 1, inPair = rank < 2 && size >= 2;
	int a[100], b[100];
	for (int i = 0; i < 100; i++) a[i] = rank * 1000 + i;
	if (inPair) {
		if (rank == 0) {
			MPI_Send(a, 100, MPI_INT, peer, 1, MPI_COMM_WORLD);
			MPI_Recv(b, 100, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(b, 100, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(a, 100, MPI_INT, peer, 1, MPI_COMM_WORLD);
		}
		h = fnv(h, b, sizeof b);
		for (int round = 0; round < 3; round++) {
			int s[64], r[64];
			MPI_Request q[2];
			MPI_Status sts[2];
			for (int i = 0; i < 64; i++) s[i] = rank * 7 + round * 64 + i;
			MPI_Irecv(r, 64, MPI_INT, peer, 10 + round, MPI_COMM_WORLD, &q[0]);
			MPI_Isend(s, 64, MPI_INT, peer, 10 + round, MPI_COMM_WORLD, &q[1]);
			MPI_Waitall(2, q, sts);
			h = fnv(h, r, sizeof r);
		}
		{
			int s[8], r[8];
			MPI_Request q[2];
			for (int i = 0; i < 8; i++) s[i] = 31 * rank + i;
			MPI_Irecv(r, 8, MPI_INT, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, &q[0]);
			MPI_Isend(s, 8, MPI_INT, peer, 20, MPI_COMM_WORLD, &q[1]);
			MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
			h = fnv(h, r, sizeof r);
		}
		{
			int s[32], r[32];
			MPI_Request q[2];
			MPI_Send_init(s, 32, MPI_INT, peer, 30, MPI_COMM_WORLD, &q[0]);
			MPI_Recv_init(r, 32, MPI_INT, peer, 30, MPI_COMM_WORLD, &q[1]);
			for (int it = 0; it < 4; it++) {
				for (int i = 0; i < 32; i++) s[i] = rank * 100000 + it * 100 + i;
				MPI_Startall(2, q);
				MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
				h = fnv(h, r, sizeof r);
			}
			MPI_Request_free(&q[0]);
			MPI_Request_free(&q[1]);
			/* zero-count persistent requests: a message without a buffer to classify */
			MPI_Send_init(NULL, 0, MPI_INT, peer, 31, MPI_COMM_WORLD, &q[0]);
			MPI_Recv_init(NULL, 0, MPI_INT, peer, 31, MPI_COMM_WORLD, &q[1]);
			MPI_Startall(2, q);
			MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
			MPI_Request_free(&q[0]);
			MPI_Request_free(&q[1]);
		}
		{
			int s[16], r[16];
			for (int i = 0; i < 16; i++) s[i] = rank - i;
			MPI_Sendrecv(s, 16, MPI_INT, peer, 40, r, 16, MPI_INT, peer, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			h = fnv(h, r, sizeof r);
		}
		{  /* a communicator with the ranks reversed: the report must still name the world rank */
			MPI_Comm rev;
			int rr, s[4], r[4];
			MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &rev);
			MPI_Comm_rank(rev, &rr);
			for (int i = 0; i < 4; i++) s[i] = 17 * rank + i;
			if (rank == 0) { MPI_Send(s, 4, MPI_INT, rr ^ 1, 45, rev); MPI_Recv(r, 4, MPI_INT, rr ^ 1, 45, rev, MPI_STATUS_IGNORE); }
			else { MPI_Recv(r, 4, MPI_INT, rr ^ 1, 45, rev, MPI_STATUS_IGNORE); MPI_Send(s, 4, MPI_INT, rr ^ 1, 45, rev); }
			h = fnv(h, r, sizeof r);
			MPI_Comm_free(&rev);
		}
		{  /* matched probe: the source comes from the message */
			int s[12], r[12];
			MPI_Request q;
			MPI_Message m;
			for (int i = 0; i < 12; i++) s[i] = 3 * rank + i;
			MPI_Isend(s, 12, MPI_INT, peer, 60, MPI_COMM_WORLD, &q);
			MPI_Mprobe(MPI_ANY_SOURCE, 60, MPI_COMM_WORLD, &m, MPI_STATUS_IGNORE);
			MPI_Mrecv(r, 12, MPI_INT, &m, MPI_STATUS_IGNORE);
			MPI_Wait(&q, MPI_STATUS_IGNORE);
			h = fnv(h, r, sizeof r);
		}
	}
	int bc[10];
	for (int i = 0; i < 10; i++) bc[i] = rank == 0 ? 5 * i + 1 : -1;
	MPI_Bcast(bc, 10, MPI_INT, 0, MPI_COMM_WORLD);
	h = fnv(h, bc, sizeof bc);
	double in[8], out[8];
	for (int i = 0; i < 8; i++) in[i] = 0.5 * (rank + 1) + i;
	MPI_Allreduce(in, out, 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	h = fnv(h, out, sizeof out);
	if (inPair) {
		int rep[4];
		for (int i = 0; i < 4; i++) rep[i] = rank * 11 + i;
		MPI_Sendrecv_replace(rep, 4, MPI_INT, peer, 50, peer, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		h = fnv(h, rep, sizeof rep);
	}
	unsigned long long mine = h, *all = rank == 0 ? calloc((size_t)size, sizeof *all) : NULL;
	MPI_Gather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("CHECKSUM");
		for (int r = 0; r < size; r++) printf(" %016llx", all[r]);
		printf("\nRESULT PASS\n");
		fflush(stdout);
		free(all);
	}
	return 0;
}

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}
static int cmpd(const void* x, const void* y) {
	double a = *(const double*)x, b = *(const double*)y;
	return a < b ? -1 : a > b;
}

/* One batch of `iters` round trips; ns per round trip. */
static double pingpong(int rank, int iters, int viaPmpi) {
	char buf[8] = {0};
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = now();
	for (int i = 0; i < iters; i++) {
		if (rank == 0) {
			if (viaPmpi) { PMPI_Send(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD); PMPI_Recv(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
			else { MPI_Send(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD); MPI_Recv(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
		} else if (rank == 1) {
			if (viaPmpi) { PMPI_Recv(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); PMPI_Send(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD); }
			else { MPI_Recv(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(buf, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD); }
		}
	}
	return (now() - t0) / iters;
}
static double procNull(int iters, int viaPmpi) {
	char buf[8] = {0};
	double t0 = now();
	for (int i = 0; i < iters; i++) {
		if (viaPmpi) PMPI_Send(buf, 8, MPI_BYTE, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
		else MPI_Send(buf, 8, MPI_BYTE, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
	}
	return (now() - t0) / iters;
}

static int bench(int rank, int size, int iters) {
	enum { BATCHES = 31 };
	double g[BATCHES], p[BATCHES], ng[BATCHES], np[BATCHES];
	if (size < 2) { if (rank == 0) fprintf(stderr, "guard_demo --bench needs 2 ranks\n"); return 2; }
	pingpong(rank, iters / 10 + 1, 0);  /* warm-up, both paths */
	pingpong(rank, iters / 10 + 1, 1);
	for (int k = 0; k < BATCHES; k++) {
		int first = k & 1;  /* alternate which path goes first */
		double x = pingpong(rank, iters, first), y = pingpong(rank, iters, !first);
		p[k] = first ? x : y;
		g[k] = first ? y : x;
		double u = procNull(iters * 10, first), v = procNull(iters * 10, !first);
		np[k] = first ? u : v;
		ng[k] = first ? v : u;
	}
	qsort(g, BATCHES, sizeof *g, cmpd);
	qsort(p, BATCHES, sizeof *p, cmpd);
	qsort(ng, BATCHES, sizeof *ng, cmpd);
	qsort(np, BATCHES, sizeof *np, cmpd);
	double mg = g[BATCHES / 2], mp = p[BATCHES / 2], mng = ng[BATCHES / 2], mnp = np[BATCHES / 2];
	if (rank == 0) {
		/* a round trip crosses 4 intercepted calls (2 per rank) */
		printf("{\"bench\":\"guard-overhead\",\"iters\":%d,\"batches\":%d,\"pingpong\":{\"guardNsPerRoundTrip\":%.1f,\"plainNsPerRoundTrip\":%.1f,"
		       "\"addedNsPerRoundTrip\":%.1f,\"addedNsPerCall\":%.1f},\"procNullSend\":{\"guardNs\":%.1f,\"plainNs\":%.1f,\"addedNsPerCall\":%.1f}}\n",
		       iters, BATCHES, mg, mp, mg - mp, (mg - mp) / 4, mng, mnp, mng - mnp);
		fflush(stdout);
	}
	return 0;
}

/* ---- --ipc: CUDA driver through the global scope ---- */
typedef int (*fn_i)(unsigned);
/* every step runs only while all before it succeeded on this rank; the ranks agree (MPI_Allreduce) before the
 * transfer, so a failure on one rank never leaves another waiting for a message */
#define CU(call, what) do { if (ok) { int rc_ = (call); if (rc_ != 0) { fprintf(stderr, "guard_demo: rank %d: %s failed (CUresult %d)\n", rank, what, rc_); ok = 0; } } } while (0)

/* --cuda-local: the driver loaded RTLD_LOCAL, as cudart and UCX's CUDA module load it. Most entry points then come
 * from its handle; the IPC open / close and cuMemFree calls go through the global scope (where a preloaded guard's
 * wrappers are, as a library linked against libcuda but loaded RTLD_LOCAL reaches them), else from the handle. */
static void* symOf(void* h, const char* name, int cudaLocal, int global) {
	void* p = (!cudaLocal || global) ? dlsym(RTLD_DEFAULT, name) : NULL;
	return p ? p : dlsym(h, name);
}
#define SYM(name) symOf(h, name, cudaLocal, 0)
#define SYMG(name) symOf(h, name, cudaLocal, 1)

static int ipc(int rank, int size, size_t bytes, const char* via, int mirror, int cudaLocal) {
	int ok = 1;
	if (size != 2 && size != 4) { if (rank == 0) fprintf(stderr, "guard_demo --ipc needs 2 or 4 ranks\n"); return 2; }
	const char* lib = getenv("GPUMPI_LIBCUDA");  /* tests: a fake driver (native/fakes) */
	void* h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | (cudaLocal ? RTLD_LOCAL : RTLD_GLOBAL));
	if (!h) { fprintf(stderr, "guard_demo: rank %d: %s\n", rank, dlerror()); return 3; }
	int (*cuInit)(unsigned) = (int (*)(unsigned))SYM("cuInit");
	int (*cuDeviceGetCount)(int*) = (int (*)(int*))SYM("cuDeviceGetCount");
	int (*cuDeviceGet)(int*, int) = (int (*)(int*, int))SYM("cuDeviceGet");
	int (*cuDevicePrimaryCtxRetain)(void**, int) = (int (*)(void**, int))SYM("cuDevicePrimaryCtxRetain");
	int (*cuCtxSetCurrent)(void*) = (int (*)(void*))SYM("cuCtxSetCurrent");
	int (*cuCtxSynchronize)(void) = (int (*)(void))SYM("cuCtxSynchronize");
	int (*cuMemAlloc)(unsigned long long*, size_t) = (int (*)(unsigned long long*, size_t))SYM("cuMemAlloc_v2");
	int (*cuMemFree)(unsigned long long) = (int (*)(unsigned long long))SYMG("cuMemFree_v2");
	int (*cuMemcpyHtoD)(unsigned long long, const void*, size_t) = (int (*)(unsigned long long, const void*, size_t))SYM("cuMemcpyHtoD_v2");
	int (*cuMemcpyDtoH)(void*, unsigned long long, size_t) = (int (*)(void*, unsigned long long, size_t))SYM("cuMemcpyDtoH_v2");
	typedef struct { char reserved[64]; } Handle;
	int (*cuIpcGetMemHandle)(Handle*, unsigned long long) = (int (*)(Handle*, unsigned long long))SYM("cuIpcGetMemHandle");
	int (*cuIpcOpenMemHandle)(unsigned long long*, Handle, unsigned) = (int (*)(unsigned long long*, Handle, unsigned))SYMG("cuIpcOpenMemHandle_v2");
	int (*cuIpcCloseMemHandle)(unsigned long long) = (int (*)(unsigned long long))SYMG("cuIpcCloseMemHandle");
	if (!cuInit || !cuMemAlloc || !cuIpcOpenMemHandle || !cuIpcGetMemHandle) { fprintf(stderr, "guard_demo: rank %d: driver entry points missing\n", rank); return 3; }
	int owner = (rank % 2) == 0, partner = owner ? rank + 1 : rank - 1;
	int sender = size == 4 ? (rank == 1 ? 2 : rank == 3 ? 0 : -1) : (rank == 1 ? 0 : -1); /* an importer's message partner */
	int target = size == 4 ? (rank == 0 ? 3 : rank == 2 ? 1 : -1) : (rank == 0 ? 1 : -1);  /* an owner's message partner */
	unsigned long long owned = 0, local = 0, imported = 0;
	size_t words = bytes / 4;
	uint32_t* host = malloc(bytes);
	long wrong = -1;
	void* ctx = NULL;
	int n = 0, dev = 0;
	struct { int ok; Handle hd; } msg;
	memset(&msg, 0, sizeof msg);
	if (!host) { fprintf(stderr, "guard_demo: rank %d: cannot allocate %zu bytes of host memory\n", rank, bytes); ok = 0; }
	CU(cuInit(0), "cuInit");
	CU(cuDeviceGetCount(&n), "cuDeviceGetCount");
	CU(cuDeviceGet(&dev, n > 0 ? rank % n : 0), "cuDeviceGet");
	CU(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	CU(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	/* default: owners send from their own device buffer; importers receive into the import (the owner verifies).
	 * --send-from-import: owners fill the exported memory; importers send from the import; the rank that sent before
	 * now receives into its own device buffer and verifies. */
	if (owner) {
		CU(cuMemAlloc(&owned, bytes), "cuMemAlloc (exported)");
		for (size_t i = 0; ok && i < words; i++) host[i] = mirror ? (uint32_t)(rank * 0x01000193u) ^ (uint32_t)i : 0xA5A5A5A5u;
		CU(cuMemcpyHtoD(owned, host, bytes), "fill exported");
		CU(cuIpcGetMemHandle(&msg.hd, owned), "cuIpcGetMemHandle");
		msg.ok = ok;
		MPI_Send(&msg, sizeof msg, MPI_BYTE, partner, 3, MPI_COMM_WORLD);  /* always: the importer waits for it */
		CU(cuMemAlloc(&local, bytes), "cuMemAlloc (own buffer)");
		for (size_t i = 0; ok && i < words; i++) host[i] = mirror ? 0xA5A5A5A5u : (uint32_t)(rank * 0x01000193u) ^ (uint32_t)i;
		CU(cuMemcpyHtoD(local, host, bytes), "fill own buffer");
	} else {
		MPI_Recv(&msg, sizeof msg, MPI_BYTE, partner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (ok && !msg.ok) { fprintf(stderr, "guard_demo: rank %d: the owner (rank %d) could not export its memory\n", rank, partner); ok = 0; }
		CU(cuIpcOpenMemHandle(&imported, msg.hd, 1), "cuIpcOpenMemHandle");
	}
	int agreed = 0;
	MPI_Allreduce(&ok, &agreed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (agreed && (target >= 0 || sender >= 0)) {
		int receiving = mirror ? target >= 0 : sender >= 0, other = target >= 0 ? target : sender;
		void* buf = (void*)(uintptr_t)(target >= 0 ? local : imported);
		MPI_Request q;
		if (!receiving) {
			if (!strcmp(via, "recv")) MPI_Send(buf, (int)bytes, MPI_BYTE, other, 7, MPI_COMM_WORLD);
			else if (!strcmp(via, "persistent")) { MPI_Send_init(buf, (int)bytes, MPI_BYTE, other, 7, MPI_COMM_WORLD, &q); MPI_Start(&q); MPI_Wait(&q, MPI_STATUS_IGNORE); MPI_Request_free(&q); }
			else { MPI_Isend(buf, (int)bytes, MPI_BYTE, other, 7, MPI_COMM_WORLD, &q); MPI_Wait(&q, MPI_STATUS_IGNORE); }
		} else {
			if (!strcmp(via, "recv")) MPI_Recv(buf, (int)bytes, MPI_BYTE, other, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			else if (!strcmp(via, "persistent")) { MPI_Recv_init(buf, (int)bytes, MPI_BYTE, other, 7, MPI_COMM_WORLD, &q); MPI_Start(&q); MPI_Wait(&q, MPI_STATUS_IGNORE); MPI_Request_free(&q); }
			else { MPI_Irecv(buf, (int)bytes, MPI_BYTE, other, 7, MPI_COMM_WORLD, &q); MPI_Wait(&q, MPI_STATUS_IGNORE); }
		}
		CU(cuCtxSynchronize(), "cuCtxSynchronize");
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (agreed && owner && ok) {
		/* the rank whose pattern must be in this owner's checked buffer */
		int from = size == 4 ? (rank == 0 ? 2 : 0) : 0;
		CU(cuMemcpyDtoH(host, mirror ? local : owned, bytes), "verify copy");
		wrong = ok ? 0 : -1;
		for (size_t i = 0; ok && i < words; i++) wrong += host[i] != ((uint32_t)(from * 0x01000193u) ^ (uint32_t)i);
		if (ok) printf("IPC rank %d: %zu words, %ld wrong\n", rank, words, wrong);
		fflush(stdout);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	if (imported) cuIpcCloseMemHandle(imported);
	MPI_Barrier(MPI_COMM_WORLD);
	if (owned) cuMemFree(owned);
	if (local) cuMemFree(local);
	free(host);
	int mine = ok && (owner ? wrong == 0 : 1), all = 0;
	MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (rank == 0) { printf("RESULT %s\n", all ? "PASS" : "FAIL"); fflush(stdout); }
	return all ? 0 : 1;
}

int main(int argc, char** argv) {
	MPI_Init(&argc, &argv);
	int rank = 0, size = 1, rc = 0, iters = 2000;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const char* mode = "demo";
	const char* via = "irecv";
	int mirror = 0, finalize = 1, cudaLocal = 0;
	size_t bytes = 64u << 20;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bench")) mode = "bench";
		else if (!strcmp(argv[i], "--ipc")) mode = "ipc";
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--via") && i + 1 < argc && (!strcmp(argv[i + 1], "irecv") || !strcmp(argv[i + 1], "recv") || !strcmp(argv[i + 1], "persistent"))) via = argv[++i];
		else if (!strcmp(argv[i], "--send-from-import")) mirror = 1;
		else if (!strcmp(argv[i], "--cuda-local")) cudaLocal = 1;
		else if (!strcmp(argv[i], "--no-finalize")) finalize = 0;
		else if (!strcmp(argv[i], "--size") && i + 1 < argc) bytes = (size_t)strtoull(argv[++i], NULL, 10);
		else { if (rank == 0) fprintf(stderr, "usage: guard_demo [--no-finalize] [--bench [--iters N]] [--ipc [--size BYTES] [--via irecv|recv|persistent] [--send-from-import] [--cuda-local]] (unknown: %s)\n", argv[i]); MPI_Finalize(); return 2; }
	}
	if (iters < 1 || bytes < 4 || bytes > (size_t)2147483647) { if (rank == 0) fprintf(stderr, "guard_demo: --iters >= 1, 4 <= --size < 2 GiB\n"); MPI_Finalize(); return 2; }
	if (!strcmp(mode, "bench")) rc = bench(rank, size, iters);
	else if (!strcmp(mode, "ipc")) rc = ipc(rank, size, bytes, via, mirror, cudaLocal);
	else rc = demo(rank, size);
	if (!finalize) exit(rc);  /* --no-finalize: the guard's report comes from its atexit handler */
	MPI_Finalize();
	return rc;
}
