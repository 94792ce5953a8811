/* Shared helpers of the libgpumpi test programs (native/tests/lib_*.c). Each check prints one line
 *   CHECK <rank> <name> PASS|FAIL <detail>
 * which test/engine/lib.test.ts asserts; a program exits non-zero when any check failed. Lines go to stderr at once
 * (for debugging) and are gathered to rank 0, which prints all of them to stdout in rank order at the end, so
 * mpirun's output forwarding can never interleave two ranks' lines. */
#ifndef LIB_CHECK_H
#define LIB_CHECK_H
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpumpi.h"

static int g_rank = 0, g_failed = 0, g_device = 0;
static char* g_log = NULL;
static size_t g_logLen = 0, g_logCap = 0;

static inline void note(const char* fmt, ...) {
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0) return;
	if ((size_t)n > sizeof line - 2) n = (int)sizeof line - 2;
	line[n++] = '\n';
	line[n] = 0;
	fputs(line, stderr);
	if (g_logLen + (size_t)n + 1 > g_logCap) {
		g_logCap = (g_logCap + (size_t)n + 1) * 2;
		g_log = (char*)realloc(g_log, g_logCap);
	}
	memcpy(g_log + g_logLen, line, (size_t)n + 1);
	g_logLen += (size_t)n;
}

static inline void check(int ok, const char* name, const char* fmt, ...) {
	char detail[512] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	note("CHECK %d %s %s %s", g_rank, name, ok ? "PASS" : "FAIL", detail);
	if (!ok) g_failed = 1;
}

/* Deterministic pattern: byte i of a message with seed s. */
static inline unsigned char pat(size_t i, unsigned seed) { return (unsigned char)((i * 2654435761u + seed * 40503u + (i >> 12)) & 0xff); }

static inline void fill(unsigned char* p, size_t n, unsigned seed) { for (size_t i = 0; i < n; ++i) p[i] = pat(i, seed); }

/* Index of the first wrong byte, or (size_t)-1. */
static inline size_t verify(const unsigned char* p, size_t n, unsigned seed) {
	for (size_t i = 0; i < n; ++i) if (p[i] != pat(i, seed)) return i;
	return (size_t)-1;
}

/* Buffer for a transfer: host malloc, or device memory in --device mode (filled / read through gpumpi_memcpy). */
static inline void* buf_alloc(size_t n, int device) {
	if (!device) return malloc(n ? n : 1);
	void* p = NULL;
	if (gpumpi_device_alloc(&p, n) != GPUMPI_SUCCESS) return NULL;
	return p;
}
static inline void buf_free(void* p, int device) { if (device) gpumpi_device_free(p); else free(p); }
static inline void buf_fill(void* p, size_t n, unsigned seed, int device) {
	if (!device) { fill((unsigned char*)p, n, seed); return; }
	unsigned char* h = (unsigned char*)malloc(n ? n : 1);
	fill(h, n, seed);
	gpumpi_memcpy(p, h, n);
	free(h);
}
static inline size_t buf_verify(const void* p, size_t n, unsigned seed, int device) {
	if (!device) return verify((const unsigned char*)p, n, seed);
	unsigned char* h = (unsigned char*)malloc(n ? n : 1);
	gpumpi_memcpy(h, p, n);
	size_t r = verify(h, n, seed);
	free(h);
	return r;
}

/* Shared-segment bytes gpumpi_staging_bytes must count on top of the staging buffers, derived from the discovered
 * paths (the library sets up one outgoing nbuf x chunk segment per same-host peer whose protocol is shm, and per
 * same-host peer when both configs set GPUMPI_FORCE_SHM): with CUDA, a staged-same-host pair gets one on its own. */
static inline size_t expected_shm_bytes(gpumpi_ctx* ctx, int forced, int nbuf) {
	int size = 0;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	size_t n = 0;
	for (int j = 0; j < size; ++j) {
		gpumpi_path_info pi;
		if (j == g_rank || gpumpi_path(ctx, j, &pi) != GPUMPI_SUCCESS || !pi.same_host) continue;
		if (pi.protocol == GPUMPI_PROTO_SHM || forced) n += (size_t)nbuf * pi.chunk_bytes;
	}
	return n;
}

/* --device: CUDA before MPI_Init (primary context of the local rank's GPU), as the Open MPI CUDA docs ask. */
static inline void parse_args(int argc, char** argv) {
	for (int i = 1; i < argc; ++i) if (!strcmp(argv[i], "--device")) g_device = 1;
	if (g_device) {
		gpumpi_status st = gpumpi_cuda_preinit(-1, NULL);
		if (st != GPUMPI_SUCCESS) {
			fprintf(stderr, "--device: no usable CUDA (%s)\n", gpumpi_strerror(st));
			exit(3);
		}
	}
}

static inline int finish_checks(void) {
	int any = 0;
	MPI_Allreduce(&g_failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	int size = 1, len = (int)g_logLen;
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int* lens = (int*)calloc((size_t)size, sizeof(int));
	int* offs = (int*)calloc((size_t)size, sizeof(int));
	MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
	int total = 0;
	for (int i = 0; i < size; ++i) { offs[i] = total; total += lens[i]; }
	char* all = (char*)malloc((size_t)total + 1);
	MPI_Gatherv(g_log ? g_log : "", len, MPI_CHAR, all, lens, offs, MPI_CHAR, 0, MPI_COMM_WORLD);
	if (g_rank == 0) {
		all[total] = 0;
		fputs(all, stdout);
		printf("RESULT %s\n", any ? "FAIL" : "PASS");
	}
	free(all); free(lens); free(offs); free(g_log);
	g_log = NULL;
	fflush(stdout);
	return any ? 1 : 0;
}
#endif
