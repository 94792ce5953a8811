/* libgpumpi transfers (2+ ranks, every rank exchanges with its ring neighbours): sizes that are not multiples of
 * the chunk, zero bytes, every protocol (auto / forced direct / forced staged / the staging pipeline with host
 * memcpy standing in for the GPU copies), 64 outstanding requests on one tag and on reversed tags, gpumpi_test
 * polling, library-allocated staging, and constant staging memory. --device: the same with device buffers
 * (staging through D2H / H2D copies) plus a receive into and a send from CUDA-IPC-imported memory. */
#include "lib_check.h"

#define CHUNK (64u << 10)
static int g_size = 0, g_next = 0, g_prev = 0;

/* Both ranks send `bytes` to the next rank and receive from the previous one; returns 1 when data is right. */
static int exchange(gpumpi_ctx* ctx, size_t bytes, unsigned flags, int tag, unsigned seed, gpumpi_protocol* proto, char* why, size_t whyLen) {
	void* s = buf_alloc(bytes, g_device);
	void* r = buf_alloc(bytes, g_device);
	if (!s || !r) { snprintf(why, whyLen, "allocation of %zu bytes failed", bytes); return 0; }
	buf_fill(s, bytes, seed + (unsigned)g_rank, g_device);
	if (g_device) gpumpi_device_memset(r, 0, bytes); else memset(r, 0, bytes);
	gpumpi_request* req[2] = {NULL, NULL};
	gpumpi_status st = gpumpi_irecv_ex(ctx, r, bytes, g_prev, tag, flags, &req[0]);
	if (st == GPUMPI_SUCCESS) st = gpumpi_isend_ex(ctx, s, bytes, g_next, tag, flags, &req[1]);
	if (proto && req[1]) *proto = gpumpi_request_protocol(req[1]);
	if (st == GPUMPI_SUCCESS) st = gpumpi_waitall(ctx, 2, req);
	int ok = st == GPUMPI_SUCCESS;
	size_t bad = ok ? buf_verify(r, bytes, seed + (unsigned)g_prev, g_device) : 0;
	if (!ok) snprintf(why, whyLen, "%s: %s", gpumpi_strerror(st), gpumpi_last_error(ctx));
	else if (bad != (size_t)-1) { ok = 0; snprintf(why, whyLen, "byte %zu of %zu wrong", bad, bytes); }
	else snprintf(why, whyLen, "%zu bytes ok", bytes);
	buf_free(s, g_device);
	buf_free(r, g_device);
	return ok;
}

/* 32 sends + 32 receives in flight per rank (n = 64 requests), all on one tag or on reversed tags; waited in reverse. */
static void many(gpumpi_ctx* ctx, unsigned flags, int sameTag, const char* name) {
	enum { N = 32 };
	void* sb[N];
	void* rb[N];
	size_t len[N];
	gpumpi_request* req[2 * N];
	gpumpi_status st = GPUMPI_SUCCESS;
	for (int k = 0; k < N; ++k) {
		len[k] = 1000 + (size_t)k * 7919;  /* up to ~4 chunks, never a multiple */
		sb[k] = buf_alloc(len[k], g_device);
		rb[k] = buf_alloc(len[k], g_device);
		buf_fill(sb[k], len[k], 100u + (unsigned)k + 1000u * (unsigned)g_rank, g_device);
	}
	for (int k = 0; k < N && st == GPUMPI_SUCCESS; ++k) {
		int tag = sameTag ? 5 : 100 + (N - 1 - k);  /* receives posted in reverse tag order */
		int rk = sameTag ? k : N - 1 - k;
		st = gpumpi_irecv_ex(ctx, rb[rk], len[rk], g_prev, tag, flags, &req[k]);
	}
	for (int k = 0; k < N && st == GPUMPI_SUCCESS; ++k) st = gpumpi_isend_ex(ctx, sb[k], len[k], g_next, sameTag ? 5 : 100 + k, flags, &req[N + k]);
	gpumpi_status ws = GPUMPI_SUCCESS;
	if (st == GPUMPI_SUCCESS) {
		for (int k = 2 * N - 1; k >= 0; --k) {
			gpumpi_status w = gpumpi_wait(ctx, &req[k]);
			if (w != GPUMPI_SUCCESS && ws == GPUMPI_SUCCESS) ws = w;
		}
	}
	int bad = -1;
	for (int k = 0; k < N && st == GPUMPI_SUCCESS && ws == GPUMPI_SUCCESS; ++k)
		if (buf_verify(rb[k], len[k], 100u + (unsigned)k + 1000u * (unsigned)g_prev, g_device) != (size_t)-1) { bad = k; break; }
	check(st == GPUMPI_SUCCESS && ws == GPUMPI_SUCCESS && bad < 0, name, "64 requests: post %s, wait %s, first bad message %d; %s", gpumpi_strerror(st),
	      gpumpi_strerror(ws), bad, gpumpi_last_error(ctx));
	for (int k = 0; k < N; ++k) { buf_free(sb[k], g_device); buf_free(rb[k], g_device); }
}

int main(int argc, char** argv) {
	parse_args(argc, argv);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &g_size);
	g_next = (g_rank + 1) % g_size;
	g_prev = (g_rank - 1 + g_size) % g_size;

	gpumpi_config cfg;
	gpumpi_config_default(&cfg);
	cfg.chunk_bytes = CHUNK;
	cfg.num_buffers = 4;
	cfg.direct_piece_bytes = 1u << 20;  /* so the direct protocol splits too */
	cfg.flags = GPUMPI_FORCE_SHM;       /* shared segments to same-host peers, used by the per-call "shm" mode */
	gpumpi_ctx* ctx = NULL;
	gpumpi_status st = gpumpi_init(MPI_COMM_WORLD, &cfg, &ctx);
	check(st == GPUMPI_SUCCESS, "init", "%s", gpumpi_last_error(NULL));
	if (!ctx) { MPI_Finalize(); return 1; }
	size_t sbytes = 4 * (size_t)CHUNK + 100;  /* 4 slots; the 100-byte tail is unused */
	unsigned char* stage = (unsigned char*)malloc(sbytes);
	st = gpumpi_register_staging(ctx, stage, sbytes, GPUMPI_STAGING_PIN);
	check(st == GPUMPI_SUCCESS, "register_staging", "%s", gpumpi_last_error(ctx));
	gpumpi_path_info info;
	gpumpi_path(ctx, g_next, &info);
	note("PATH %d -> %d %s protocol=%s reason=%s", g_rank, g_next, gpumpi_path_name(info.path), gpumpi_protocol_name(info.protocol), info.reason);

	struct { const char* name; unsigned flags; int device_ok; } modes[] = {
		{"auto", 0, 1},
		{"direct", GPUMPI_FORCE_DIRECT, info.mpi_cuda_aware == 1},
		{"staged", GPUMPI_FORCE_STAGED, 1},
		{"pipeline", GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST, 1},
		{"shm", GPUMPI_FORCE_SHM, 1},
	};
	const size_t sizes[] = {0, 1, 4095, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + CHUNK / 2 + 7, (10u << 20) + 13};
	int tag = 0;
	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; ++m) {
		if (g_device && !modes[m].device_ok) { note("SKIP %d %s: MPI is not CUDA-aware", g_rank, modes[m].name); continue; }
		for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
			char why[512], name[96];
			gpumpi_protocol proto = GPUMPI_PROTO_DIRECT;
			int ok = exchange(ctx, sizes[i], modes[m].flags, tag++, (unsigned)(7 * i + 31 * m), &proto, why, sizeof why);
			snprintf(name, sizeof name, "xfer_%s_%zu", modes[m].name, sizes[i]);
			check(ok, name, "%s (protocol %s)", why, gpumpi_protocol_name(proto));
		}
	}
	many(ctx, GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST, 1, "many_pipeline_same_tag");
	many(ctx, GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST, 0, "many_pipeline_reversed_tags");
	many(ctx, 0, 1, "many_auto_same_tag");
	many(ctx, GPUMPI_FORCE_SHM, 1, "many_shm_same_tag");
	many(ctx, GPUMPI_FORCE_SHM, 0, "many_shm_reversed_tags");
	/* 4 slots of 64 KiB registered + one outgoing 4 x 64 KiB segment per same-host peer (config GPUMPI_FORCE_SHM) */
	size_t segs = expected_shm_bytes(ctx, 1, cfg.num_buffers);
	check(gpumpi_staging_bytes(ctx) == sbytes + segs, "staging_constant", "%zu bytes registered + %zu shared, still %zu after all transfers", sbytes, segs, gpumpi_staging_bytes(ctx));

	/* gpumpi_test polling instead of wait */
	{
		size_t n = 5 * CHUNK + 3;
		unsigned char* s = (unsigned char*)malloc(n);
		unsigned char* r = (unsigned char*)calloc(1, n);
		fill(s, n, 77u + (unsigned)g_rank);
		gpumpi_request *rr = NULL, *sr = NULL;
		gpumpi_irecv_ex(ctx, r, n, g_prev, 999, GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST, &rr);
		gpumpi_isend_ex(ctx, s, n, g_next, 999, GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST, &sr);
		int d1 = 0, d2 = 0, polls = 0;
		gpumpi_status t = GPUMPI_SUCCESS;
		while ((!d1 || !d2) && t == GPUMPI_SUCCESS && polls < 50000000) {
			if (!d1) t = gpumpi_test(ctx, &rr, &d1);
			if (!d2 && t == GPUMPI_SUCCESS) t = gpumpi_test(ctx, &sr, &d2);
			++polls;
		}
		check(t == GPUMPI_SUCCESS && d1 && d2 && rr == NULL && sr == NULL && verify(r, n, 77u + (unsigned)g_prev) == (size_t)-1, "test_polling",
		      "%d polls, %s", polls, gpumpi_last_error(ctx));
		free(s);
		free(r);
	}

	/* library-allocated staging (alloc_staging): no registration needed */
	{
		gpumpi_config c2 = cfg;
		c2.flags = 0;
		c2.alloc_staging = 1;
		c2.num_buffers = 3;
		gpumpi_ctx* ctx2 = NULL;
		st = gpumpi_init(MPI_COMM_WORLD, &c2, &ctx2);
		char why[512];
		int ok = st == GPUMPI_SUCCESS && exchange(ctx2, (1u << 20) + 5, GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST, 1, 9, NULL, why, sizeof why);
		/* 3 allocated slots, plus a 3-slot segment per same-host peer whose own protocol is shm (a staged-same-host GPU
		 * pair: no FORCE_SHM here, so none on host-only pairs) */
		size_t want = 3 * (size_t)CHUNK + (ctx2 ? expected_shm_bytes(ctx2, 0, c2.num_buffers) : 0);
		check(ok && gpumpi_staging_bytes(ctx2) == want, "alloc_staging", "%s, %zu staging bytes (want %zu)", ok ? why : gpumpi_last_error(ctx2),
		      gpumpi_staging_bytes(ctx2), want);
		if (ctx2) gpumpi_finalize(&ctx2);
	}

	/* --device: CUDA-IPC-imported memory as receive and send buffer (the IPC-pointer report): rank r exports a
	 * device buffer to rank next, which receives into the imported pointer from rank prev... kept to 2 ranks. */
	if (g_device && g_size == 2) {
		size_t n = 3 * (1u << 20) + 17;
		void* mine = buf_alloc(n, 1);
		gpumpi_ipc_handle h, ph;
		st = gpumpi_ipc_export(ctx, mine, &h);
		check(st == GPUMPI_SUCCESS, "ipc_export", "%s", gpumpi_last_error(ctx));
		MPI_Sendrecv(&h, sizeof h, MPI_BYTE, g_next, 1, &ph, sizeof ph, MPI_BYTE, g_prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		void* theirs = NULL;
		st = gpumpi_ipc_open(ctx, &ph, &theirs);
		check(st == GPUMPI_SUCCESS && theirs, "ipc_open", "%s", gpumpi_last_error(ctx));
		/* rank 1 receives into rank 0's buffer (imported), from rank 0's separate source buffer */
		void* src = buf_alloc(n, 1);
		buf_fill(src, n, 4242, 1);
		gpumpi_request* q = NULL;
		if (g_rank == 0) st = gpumpi_isend(ctx, src, n, 1, 50, &q);
		else st = gpumpi_irecv(ctx, theirs, n, 0, 50, &q);
		gpumpi_protocol proto = q ? gpumpi_request_protocol(q) : GPUMPI_PROTO_DIRECT;
		if (st == GPUMPI_SUCCESS) st = gpumpi_wait(ctx, &q);
		MPI_Barrier(MPI_COMM_WORLD);
		if (g_rank == 0) check(buf_verify(mine, n, 4242, 1) == (size_t)-1, "ipc_imported_receive", "rank 0 sees the data rank 1 received into its imported mapping");
		else check(st == GPUMPI_SUCCESS, "ipc_imported_receive_ok", "%s (protocol %s)", gpumpi_last_error(ctx), gpumpi_protocol_name(proto));
		/* and rank 1 sends from the imported mapping back to rank 0 */
		void* dst = buf_alloc(n, 1);
		if (g_rank == 1) st = gpumpi_isend(ctx, theirs, n, 0, 51, &q);
		else st = gpumpi_irecv(ctx, dst, n, 1, 51, &q);
		if (st == GPUMPI_SUCCESS) st = gpumpi_wait(ctx, &q);
		if (g_rank == 0) check(st == GPUMPI_SUCCESS && buf_verify(dst, n, 4242, 1) == (size_t)-1, "ipc_imported_send", "%s", gpumpi_last_error(ctx));
		MPI_Barrier(MPI_COMM_WORLD);
		check(gpumpi_ipc_close(ctx, theirs) == GPUMPI_SUCCESS, "ipc_close", "%s", gpumpi_last_error(ctx));
		MPI_Barrier(MPI_COMM_WORLD);
		buf_free(src, 1); buf_free(dst, 1); buf_free(mine, 1);
	}

	st = gpumpi_finalize(&ctx);
	check(st == GPUMPI_SUCCESS, "finalize", "%s", gpumpi_strerror(st));
	free(stage);
	int rc = finish_checks();
	MPI_Finalize();
	return rc;
}
