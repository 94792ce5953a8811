/* guard_stage: device-buffer point-to-point for gpumpi-guard's STAGE transfer (docs/guard.md "STAGE"); 2 ranks.
 *
 *   mpirun -np 2 guard_stage [--size BYTES]    the pattern: device messages of BYTES (default 2 MiB) interleaved with
 *                                              small host messages on the same and other tags; an Irecv posted before
 *                                              the send and one after; MPI_ANY_SOURCE and MPI_ANY_TAG; a receive larger
 *                                              than the message; Iprobe then Recv; Waitall, Waitany, Testsome; a
 *                                              cancelled Irecv. Every byte and every status field is checked; rank 1
 *                                              prints "STAGE checks N failed F" and "RESULT PASS|FAIL"
 *   mpirun -np 2 guard_stage --bench [--size BYTES] [--iters N]
 *                                              rank 0 sends N device messages of BYTES (default 1 GiB, 5) to rank 1;
 *                                              one JSON line per rank: bandwidth, correctness, VmHWM before / after
 * CUDA through dlopen (GPUMPI_LIBCUDA names a fake driver in CI), RTLD_GLOBAL as a program linked with -lcuda. */
/* MPICH defines MPI_STATUSES_IGNORE as (MPI_Status*)1: gcc then warns about MPI_Waitall's array argument */
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long dptr;
static int (*cuInit)(unsigned);
static int (*cuDeviceGet)(int*, int);
static int (*cuDevicePrimaryCtxRetain)(void**, int);
static int (*cuCtxSetCurrent)(void*);
static int (*cuMemAlloc)(dptr*, size_t);
static int (*cuMemFree)(dptr);
static int (*cuMemcpyHtoD)(dptr, const void*, size_t);
static int (*cuMemcpyDtoH)(void*, dptr, size_t);
static int (*cuMemsetD8)(dptr, unsigned char, size_t);
static int checks, failed;

static void check(int ok, const char* what, long long got, long long want) {
	checks++;
	if (!ok) { failed++; printf("FAIL %s: got %lld want %lld\n", what, got, want); }
}

static int cudaUp(void) {
	const char* lib = getenv("GPUMPI_LIBCUDA");
	void* h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!h) { fprintf(stderr, "guard_stage: no CUDA driver: %s\n", dlerror()); return 0; }
	cuInit = (int (*)(unsigned))dlsym(h, "cuInit");
	cuDeviceGet = (int (*)(int*, int))dlsym(h, "cuDeviceGet");
	cuDevicePrimaryCtxRetain = (int (*)(void**, int))dlsym(h, "cuDevicePrimaryCtxRetain");
	cuCtxSetCurrent = (int (*)(void*))dlsym(h, "cuCtxSetCurrent");
	cuMemAlloc = (int (*)(dptr*, size_t))dlsym(h, "cuMemAlloc_v2");
	cuMemFree = (int (*)(dptr))dlsym(h, "cuMemFree_v2");
	cuMemcpyHtoD = (int (*)(dptr, const void*, size_t))dlsym(h, "cuMemcpyHtoD_v2");
	cuMemcpyDtoH = (int (*)(void*, dptr, size_t))dlsym(h, "cuMemcpyDtoH_v2");
	cuMemsetD8 = (int (*)(dptr, unsigned char, size_t))dlsym(h, "cuMemsetD8_v2");
	int dev = 0;
	void* ctx = NULL;
	return cuInit && cuInit(0) == 0 && cuDeviceGet(&dev, 0) == 0 && cuDevicePrimaryCtxRetain(&ctx, dev) == 0 && cuCtxSetCurrent(ctx) == 0;
}

static long vmHwmKb(void) {
	FILE* f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = -1;
	while (f && fgets(line, sizeof line, f)) if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
	if (f) fclose(f);
	return kb;
}

/* device buffer filled with bytes (seed + i * 7) */
static dptr devFilled(size_t n, int seed, unsigned char* host) {
	dptr d = 0;
	if (cuMemAlloc(&d, n) != 0) { fprintf(stderr, "guard_stage: cuMemAlloc(%zu) failed\n", n); MPI_Abort(MPI_COMM_WORLD, 3); }
	for (size_t i = 0; i < n; i++) host[i] = (unsigned char)(seed + i * 7);
	cuMemcpyHtoD(d, host, n);
	return d;
}

static void checkDev(dptr d, size_t n, int seed, unsigned char* host, const char* what) {
	cuMemcpyDtoH(host, d, n);
	size_t bad = 0;
	for (size_t i = 0; i < n; i++) bad += host[i] != (unsigned char)(seed + i * 7);
	check(bad == 0, what, (long long)bad, 0);
}

static void checkStatus(const MPI_Status* s, int src, int tag, int bytes, const char* what) {
	int n = -1;
	MPI_Get_count(s, MPI_BYTE, &n);
	check(s->MPI_SOURCE == src, what, s->MPI_SOURCE, src);
	check(s->MPI_TAG == tag, what, s->MPI_TAG, tag);
	check(n == bytes, what, n, bytes);
}

static int pattern(int rank, size_t n) {
	unsigned char* host = malloc(n + 8192);
	int small[64], got[64];
	MPI_Status s[3];
	MPI_Request q[3];
	if (rank == 0) {
		dptr a = devFilled(n, 1, host), b = devFilled(n, 2, host), c = devFilled(n, 3, host);
		for (int i = 0; i < 64; i++) small[i] = 1000 + i;
		MPI_Barrier(MPI_COMM_WORLD);  /* rank 1 has posted its first receives */
		MPI_Send((void*)(uintptr_t)a, (int)n, MPI_BYTE, 1, 5, MPI_COMM_WORLD);      /* staged, same tag as ...     */
		MPI_Send(small, 64, MPI_INT, 1, 5, MPI_COMM_WORLD);                         /* ... this small one          */
		MPI_Isend((void*)(uintptr_t)b, (int)n, MPI_BYTE, 1, 6, MPI_COMM_WORLD, &q[0]);
		MPI_Send(small, 64, MPI_BYTE, 1, 7, MPI_COMM_WORLD);                        /* exactly HDR bytes, not staged */
		MPI_Wait(&q[0], MPI_STATUS_IGNORE);
		MPI_Send((void*)(uintptr_t)c, (int)n, MPI_BYTE, 1, 8, MPI_COMM_WORLD);      /* to an ANY_SOURCE, ANY_TAG recv */
		for (int k = 0; k < 3; k++) MPI_Isend((void*)(uintptr_t)(k == 0 ? a : k == 1 ? b : c), (int)n, MPI_BYTE, 1, 20 + k, MPI_COMM_WORLD, &q[k]);
		MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
		for (int k = 0; k < 3; k++) MPI_Isend((void*)(uintptr_t)(k == 0 ? a : k == 1 ? b : c), (int)n, MPI_BYTE, 1, 30 + k, MPI_COMM_WORLD, &q[k]);
		MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
		MPI_Barrier(MPI_COMM_WORLD);
		cuMemFree(a); cuMemFree(b); cuMemFree(c);
	} else {
		dptr big = 0, b2 = 0, b3 = 0, r[3];
		cuMemAlloc(&big, n + 4096); cuMemAlloc(&b2, n); cuMemAlloc(&b3, n);
		for (int k = 0; k < 3; k++) cuMemAlloc(&r[k], n);
		MPI_Irecv((void*)(uintptr_t)big, (int)n + 4096, MPI_BYTE, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &q[0]);  /* larger than the message */
		MPI_Irecv(got, 64, MPI_INT, 0, 5, MPI_COMM_WORLD, &q[1]);
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Waitall(2, q, s);
		checkStatus(&s[0], 0, 5, (int)n, "staged Irecv (ANY_SOURCE, larger) status");
		checkDev(big, n, 1, host, "staged Irecv bytes");
		checkStatus(&s[1], 0, 5, 256, "small Irecv after it, same tag");
		for (int i = 0; i < 64; i++) check(got[i] == 1000 + i, "small Irecv bytes", got[i], 1000 + i);
		int flag = 0;
		while (!flag) MPI_Iprobe(0, 6, MPI_COMM_WORLD, &flag, &s[0]);
		checkStatus(&s[0], 0, 6, (int)n, "Iprobe of a staged message: its real size");
		MPI_Recv((void*)(uintptr_t)b2, (int)n, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &s[0]);
		checkStatus(&s[0], 0, 6, (int)n, "Recv after Iprobe status");
		checkDev(b2, n, 2, host, "Recv after Iprobe bytes");
		unsigned char h64[128];
		MPI_Recv(h64, 128, MPI_BYTE, 0, 7, MPI_COMM_WORLD, &s[0]);
		checkStatus(&s[0], 0, 7, 64, "64-byte (header-sized) host message");
		for (int i = 0; i < 16; i++) small[i] = 1000 + i;
		check(memcmp(h64, small, 64) == 0, "64-byte host message bytes", 0, 0);
		MPI_Recv((void*)(uintptr_t)b3, (int)n, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &s[0]);
		checkStatus(&s[0], 0, 8, (int)n, "ANY_SOURCE ANY_TAG staged Recv");
		checkDev(b3, n, 3, host, "ANY_TAG staged bytes");
		for (int k = 0; k < 3; k++) MPI_Irecv((void*)(uintptr_t)r[k], (int)n, MPI_BYTE, 0, 22 - k, MPI_COMM_WORLD, &q[k]);
		int seen = 0;
		for (int k = 0; k < 3; k++) {
			int idx = -1;
			MPI_Waitany(3, q, &idx, &s[0]);
			check(idx >= 0 && idx < 3 && s[0].MPI_TAG == 22 - idx, "Waitany index/tag", s[0].MPI_TAG, 22 - idx);
			seen |= 1 << idx;
		}
		check(seen == 7, "Waitany completes each once", seen, 7);
		for (int k = 0; k < 3; k++) checkDev(r[k], n, 3 - k, host, "Waitany bytes");
		for (int k = 0; k < 3; k++) MPI_Irecv((void*)(uintptr_t)r[k], (int)n, MPI_BYTE, 0, 30 + k, MPI_COMM_WORLD, &q[k]);
		int done = 0;
		while (done < 3) {
			int out = 0, idx[3];
			MPI_Testsome(3, q, &out, idx, s);
			for (int k = 0; k < out && out != MPI_UNDEFINED; k++) check(s[k].MPI_TAG == 30 + idx[k], "Testsome tag", s[k].MPI_TAG, 30 + idx[k]);
			if (out != MPI_UNDEFINED) done += out;
		}
		for (int k = 0; k < 3; k++) checkDev(r[k], n, 1 + k, host, "Testsome bytes");
		MPI_Request cq;
		MPI_Irecv((void*)(uintptr_t)r[0], (int)n, MPI_BYTE, 0, 99, MPI_COMM_WORLD, &cq);  /* never sent */
		MPI_Cancel(&cq);
		MPI_Wait(&cq, &s[0]);
		int cancelled = 0;
		MPI_Test_cancelled(&s[0], &cancelled);
		check(cancelled == 1, "cancelled Irecv", cancelled, 1);
		MPI_Barrier(MPI_COMM_WORLD);
		printf("STAGE checks %d failed %d\n", checks, failed);
		printf("RESULT %s\n", failed ? "FAIL" : "PASS");
		cuMemFree(big); cuMemFree(b2); cuMemFree(b3);
		for (int k = 0; k < 3; k++) cuMemFree(r[k]);
	}
	free(host);
	return failed ? 1 : 0;
}

static int bench(int rank, size_t n, int iters) {
	dptr d = 0;
	if (cuMemAlloc(&d, n) != 0) { fprintf(stderr, "guard_stage: cuMemAlloc(%zu) failed\n", n); return 3; }
	cuMemsetD8(d, rank == 0 ? 0x5a : 0, n);
	/* warm-up message (connections, staging pages), then the VmHWM baseline */
	if (rank == 0) MPI_Send((void*)(uintptr_t)d, (int)(n < 1048576 ? n : 1048576), MPI_BYTE, 1, 1, MPI_COMM_WORLD);
	else MPI_Recv((void*)(uintptr_t)d, (int)(n < 1048576 ? n : 1048576), MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	long hwm0 = vmHwmKb();
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	double per[64];  /* per-message completion times on this rank (the first large message may cost more: UCX staging) */
	for (int i = 0; i < iters; i++) {
		double ts = MPI_Wtime();
		if (rank == 0) MPI_Send((void*)(uintptr_t)d, (int)n, MPI_BYTE, 1, 2, MPI_COMM_WORLD);
		else MPI_Recv((void*)(uintptr_t)d, (int)n, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (i < 64) per[i] = MPI_Wtime() - ts;
	}
	int ack = 0;
	if (rank == 1) MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
	else MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	double secs = MPI_Wtime() - t0;
	long hwm1 = vmHwmKb();
	int correct = 1;
	if (rank == 1) {
		unsigned char probe[4096];
		size_t offs[3] = {0, n / 2, n > 4096 ? n - 4096 : 0};
		for (int k = 0; k < 3; k++) {
			size_t len = n < 4096 ? n : 4096;
			cuMemcpyDtoH(probe, d + offs[k], len);
			for (size_t i = 0; i < len; i++) correct &= probe[i] == 0x5a;
		}
	}
	char times[64 * 16] = "";
	for (int i = 0, o = 0; i < iters && i < 64; i++) o += snprintf(times + o, sizeof times - (size_t)o, "%s%.6f", i ? "," : "", per[i]);
	printf("{\"rank\":%d,\"bytes\":%zu,\"iters\":%d,\"seconds\":%.6f,\"gbps\":%.3f,\"correct\":%s,\"vmHwmKbBefore\":%ld,\"vmHwmKbAfter\":%ld,\"timesS\":[%s]}\n", rank, n, iters, secs,
	       secs > 0 ? (double)n * iters / secs / 1e9 : 0.0, correct ? "true" : "false", hwm0, hwm1, times);
	cuMemFree(d);
	return correct ? 0 : 1;
}

int main(int argc, char** argv) {
	int benchMode = 0, iters = 5;
	size_t size = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bench")) benchMode = 1;
		else if (!strcmp(argv[i], "--size") && i + 1 < argc) size = (size_t)strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
		else { fprintf(stderr, "usage: guard_stage [--bench] [--size BYTES] [--iters N]\n"); return 2; }
	}
	if (!size) size = benchMode ? (size_t)1 << 30 : (size_t)2 << 20;
	if (size > 2147483647u || iters <= 0) { fprintf(stderr, "guard_stage: --size must be 1..2147483647, --iters > 0\n"); return 2; }
	if (!cudaUp()) return 3;
	MPI_Init(&argc, &argv);
	int rank = 0, nranks = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	int rc = 2;
	if (nranks != 2) { if (rank == 0) fprintf(stderr, "guard_stage: run it with 2 ranks\n"); }
	else rc = benchMode ? bench(rank, size, iters) : pattern(rank, size);
	MPI_Finalize();
	return rc;
}
