/* libgpumpi: path discovery on this machine and every wrong-usage error (2 ranks).
 * Host mode (CI, no CUDA): every peer is GPUMPI_PATH_HOST_ONLY with a reason. --device: a GPU path class.
 * --shm: both ranks set up shared segments (config GPUMPI_FORCE_SHM) and the transfers below use them (per-call
 * GPUMPI_FORCE_SHM), so host memory in CI takes the shm protocol code that a staged-same-host GPU pair takes by
 * itself (there, host buffers go through the pair's shm protocol too). Expectations follow the protocol really used. */
#include "lib_check.h"

static int expect(gpumpi_status got, gpumpi_status want, const char* name, gpumpi_ctx* ctx) {
	check(got == want, name, "got %d (%s), want %d; detail: %s", (int)got, gpumpi_strerror(got), (int)want, gpumpi_last_error(ctx));
	return got == want;
}

int main(int argc, char** argv) {
	parse_args(argc, argv);
	int forceShm = 0;
	for (int i = 1; i < argc; ++i) if (!strcmp(argv[i], "--shm")) forceShm = 1;
	unsigned callFlags = forceShm ? GPUMPI_FORCE_SHM : 0u;
	MPI_Init(&argc, &argv);
	int size = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int peer = (g_rank + 1) % size;

	/* invalid config fails locally, before any collective, with a detail string */
	gpumpi_config bad;
	gpumpi_config_default(&bad);
	bad.chunk_bytes = 100;
	gpumpi_ctx* none = NULL;
	gpumpi_status st = gpumpi_init(MPI_COMM_WORLD, &bad, &none);
	check(st == GPUMPI_ERR_ARG && none == NULL && strstr(gpumpi_last_error(NULL), "chunk_bytes"), "init_bad_config", "%s: %s", gpumpi_strerror(st), gpumpi_last_error(NULL));
	bad.chunk_bytes = 1 << 16;
	bad.num_buffers = 1;
	st = gpumpi_init(MPI_COMM_WORLD, &bad, &none);
	check(st == GPUMPI_ERR_ARG, "init_bad_nbuf", "%s: %s", gpumpi_strerror(st), gpumpi_last_error(NULL));
	check(gpumpi_init(MPI_COMM_WORLD, NULL, NULL) == GPUMPI_ERR_ARG, "init_null_out", "%s", gpumpi_last_error(NULL));

	gpumpi_config cfg;
	gpumpi_config_default(&cfg);
	cfg.chunk_bytes = 1 << 16;
	cfg.flags = GPUMPI_CALIBRATE | (forceShm ? GPUMPI_FORCE_SHM : 0u);
	gpumpi_ctx* ctx = NULL;
	st = gpumpi_init(MPI_COMM_WORLD, &cfg, &ctx);
	check(st == GPUMPI_SUCCESS && ctx, "init", "%s %s", gpumpi_strerror(st), gpumpi_last_error(NULL));
	if (!ctx) { MPI_Finalize(); return 1; }

	gpumpi_path_info info;
	st = gpumpi_path(ctx, peer, &info);
	note("PATH %d -> %d %s protocol=%s same_host=%d aware=%d chunk=%zu calib_us=%.1f reason=%s", g_rank, peer,
	       gpumpi_path_name(info.path), gpumpi_protocol_name(info.protocol), info.same_host, info.mpi_cuda_aware, info.chunk_bytes,
	       info.calib_us, info.reason);
	check(st == GPUMPI_SUCCESS && info.same_host == 1, "path_same_host", "same_host=%d host=%s", info.same_host, info.peer_host);
	if (!g_device) {
		check(info.path == GPUMPI_PATH_HOST_ONLY && info.protocol == GPUMPI_PROTO_DIRECT, "path_host_only", "%s / %s",
		      gpumpi_path_name(info.path), gpumpi_protocol_name(info.protocol));
		check(strstr(info.reason, "no usable CUDA") != NULL, "path_reason", "%s", info.reason);
	} else {
		check(info.path != GPUMPI_PATH_HOST_ONLY && info.path != GPUMPI_PATH_SELF, "path_gpu_class", "%s: %s", gpumpi_path_name(info.path), info.reason);
		check(info.peer_gpu[0] != 0, "path_peer_gpu", "peer GPU %s", info.peer_gpu);
	}
	check(info.chunk_bytes == (size_t)(1 << 16), "path_chunk", "%zu", info.chunk_bytes);
	check(info.calib_us > 0, "path_calibrated", "%.1f us", info.calib_us);
	st = gpumpi_path(ctx, g_rank, &info);
	check(st == GPUMPI_SUCCESS && info.path == GPUMPI_PATH_SELF, "path_self", "%s", gpumpi_path_name(info.path));
	/* the pair agrees: compare this rank's view with the peer's view of us */
	gpumpi_path_info back;
	gpumpi_path(ctx, peer, &info);
	int mine[2] = {(int)info.path, (int)info.protocol}, theirs[2] = {-1, -1};
	MPI_Sendrecv(mine, 2, MPI_INT, peer, 7, theirs, 2, MPI_INT, (g_rank - 1 + size) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	gpumpi_path(ctx, (g_rank - 1 + size) % size, &back);
	check(theirs[0] == (int)back.path && theirs[1] == (int)back.protocol, "path_symmetric", "peer says %d/%d, we say %d/%d", theirs[0], theirs[1], (int)back.path, (int)back.protocol);
	/* a shared segment to the peer exists when the pair's protocol is shm (a staged-same-host GPU pair) or --shm */
	gpumpi_path(ctx, peer, &info);
	int shmLink = info.protocol == GPUMPI_PROTO_SHM || forceShm;
	size_t shmBytes = expected_shm_bytes(ctx, forceShm, cfg.num_buffers);

	/* wrong usage: clear errors, never a crash */
	char small[64];
	gpumpi_request* r = NULL;
	expect(gpumpi_path(ctx, size, &info), GPUMPI_ERR_PEER, "err_path_peer", ctx);
	expect(gpumpi_path(ctx, 0, NULL), GPUMPI_ERR_ARG, "err_path_null", ctx);
	expect(gpumpi_path(NULL, 0, &info), GPUMPI_ERR_ARG, "err_null_ctx", NULL);
	expect(gpumpi_isend(ctx, small, 8, size, 0, &r), GPUMPI_ERR_PEER, "err_peer_high", ctx);
	expect(gpumpi_isend(ctx, small, 8, MPI_ANY_SOURCE, 0, &r), GPUMPI_ERR_PEER, "err_any_source", ctx);
	expect(gpumpi_irecv(ctx, small, 8, peer, -1, &r), GPUMPI_ERR_TAG, "err_tag_negative", ctx);
	expect(gpumpi_irecv(ctx, small, 8, peer, MPI_ANY_TAG, &r), GPUMPI_ERR_TAG, "err_any_tag", ctx);
	expect(gpumpi_isend(ctx, NULL, 8, peer, 0, &r), GPUMPI_ERR_ARG, "err_null_buf", ctx);
	expect(gpumpi_isend(ctx, small, (size_t)-8, peer, 0, &r), GPUMPI_ERR_ARG, "err_size_overflow", ctx);
	expect(gpumpi_isend(ctx, small, 8, peer, 0, NULL), GPUMPI_ERR_ARG, "err_null_req", ctx);
	expect(gpumpi_isend_ex(ctx, small, 8, peer, 0, GPUMPI_FORCE_DIRECT | GPUMPI_FORCE_STAGED, &r), GPUMPI_ERR_ARG, "err_flag_conflict", ctx);
	expect(gpumpi_isend_ex(ctx, small, 8, peer, 0, 1u << 20, &r), GPUMPI_ERR_ARG, "err_unknown_flag", ctx);
	expect(gpumpi_isend_ex(ctx, small, 64, peer, 0, GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST, &r), GPUMPI_ERR_NO_STAGING, "err_no_staging", ctx);
	/* with a segment to the peer FORCE_SHM is legal (and a successful call would leave a request in flight) */
	if (!shmLink) expect(gpumpi_isend_ex(ctx, small, 64, peer, 0, GPUMPI_FORCE_SHM, &r), GPUMPI_ERR_UNSUPPORTED, "err_shm_not_set_up", ctx);
	else note("SKIP %d err_shm_not_set_up: a shared segment to peer %d exists (protocol %s%s)", g_rank, peer, gpumpi_protocol_name(info.protocol), forceShm ? ", --shm" : "");
	expect(gpumpi_isend_ex(ctx, small, 64, g_rank, 0, GPUMPI_FORCE_SHM, &r), GPUMPI_ERR_UNSUPPORTED, "err_shm_self", ctx);
	expect(gpumpi_isend_ex(ctx, small, 64, peer, 0, GPUMPI_FORCE_SHM | GPUMPI_FORCE_STAGED, &r), GPUMPI_ERR_ARG, "err_shm_flag_conflict", ctx);
	check(r == NULL, "err_no_request_leak", "request stays NULL after an error");
	expect(gpumpi_register_staging(ctx, small, sizeof small, GPUMPI_STAGING_PIN), GPUMPI_ERR_STAGING, "err_staging_too_small", ctx);
	expect(gpumpi_register_staging(ctx, NULL, 1 << 20, GPUMPI_STAGING_PIN), GPUMPI_ERR_ARG, "err_staging_null", ctx);
	expect(gpumpi_register_staging(ctx, small, 1 << 20, 99), GPUMPI_ERR_ARG, "err_staging_flags", ctx);
	/* before any registration the library holds exactly its shared segments (none without a shm link) */
	check(gpumpi_staging_bytes(ctx) == shmBytes, "staging_base", "%zu bytes held, want %zu of shared segments", gpumpi_staging_bytes(ctx), shmBytes);
	size_t sbytes = (size_t)3 << 16;
	unsigned char* stage = (unsigned char*)malloc(sbytes);
	expect(gpumpi_register_staging(ctx, stage, sbytes, GPUMPI_STAGING_PIN), GPUMPI_SUCCESS, "staging_register", ctx);
	/* the overlap is found before anything is pinned (with CUDA, pinning first would fail with a CUDA error) */
	st = gpumpi_register_staging(ctx, stage + 4096, 1 << 16, GPUMPI_STAGING_PIN);
	check(st == GPUMPI_ERR_STAGING && strstr(gpumpi_last_error(ctx), "overlaps"), "err_staging_overlap", "got %d (%s), want %d; detail: %s", (int)st,
	      gpumpi_strerror(st), (int)GPUMPI_ERR_STAGING, gpumpi_last_error(ctx));
	check(gpumpi_staging_bytes(ctx) == sbytes + shmBytes, "staging_bytes", "%zu, want %zu registered + %zu shared", gpumpi_staging_bytes(ctx), sbytes, shmBytes);
	expect(gpumpi_unregister_staging(ctx, small), GPUMPI_ERR_NOT_FOUND, "err_unregister_unknown", ctx);
	gpumpi_ipc_handle h;
	void* mapped = NULL;
	if (!g_device) {
		expect(gpumpi_ipc_export(ctx, small, &h), GPUMPI_ERR_NO_CUDA, "err_ipc_no_cuda", ctx);
		memset(&h, 0, sizeof h);
		expect(gpumpi_ipc_open(ctx, &h, &mapped), GPUMPI_ERR_NO_CUDA, "err_ipc_open_no_cuda", ctx);
	} else {
		expect(gpumpi_ipc_export(ctx, small, &h), GPUMPI_ERR_ARG, "err_ipc_export_host", ctx);
	}
	expect(gpumpi_ipc_close(ctx, small), GPUMPI_ERR_NOT_FOUND, "err_ipc_close_unknown", ctx);

	/* size mismatch: rank 0 sends 1000 bytes, rank 1 expects 2000 -> GPUMPI_ERR_MISMATCH on the receiver. On the
	 * direct protocol MPI delivers the 1000 bytes and only the receiver can tell; the staged and shm protocols
	 * exchange sizes first (clear-to-send + size header), so there BOTH sides fail. Either way each failed request
	 * completes with its error and is released (nothing stays in flight: see after_mismatch_ok and finalize). */
	unsigned char big[2000];
	if (size >= 2 && g_rank <= 1) {
		gpumpi_protocol mp = GPUMPI_PROTO_DIRECT;
		if (g_rank == 0) {
			fill(big, 1000, 5);
			st = gpumpi_isend_ex(ctx, big, 1000, 1, 3, callFlags, &r);
			if (r) mp = gpumpi_request_protocol(r);
			if (st == GPUMPI_SUCCESS) st = gpumpi_wait(ctx, &r);
			if (mp == GPUMPI_PROTO_DIRECT) check(st == GPUMPI_SUCCESS, "mismatch_sender_ok", "%s (protocol direct)", gpumpi_last_error(ctx));
			else check(st == GPUMPI_ERR_MISMATCH && strstr(gpumpi_last_error(ctx), "2000"), "mismatch_sender_fails", "%s: %s (protocol %s)", gpumpi_strerror(st), gpumpi_last_error(ctx), gpumpi_protocol_name(mp));
		} else {
			st = gpumpi_irecv_ex(ctx, big, 2000, 0, 3, callFlags, &r);
			if (r) mp = gpumpi_request_protocol(r);
			if (st == GPUMPI_SUCCESS) st = gpumpi_wait(ctx, &r);
			check(st == GPUMPI_ERR_MISMATCH && strstr(gpumpi_last_error(ctx), "1000") && strstr(gpumpi_last_error(ctx), "2000"), "err_size_mismatch",
			      "%s: %s (protocol %s)", gpumpi_strerror(st), gpumpi_last_error(ctx), gpumpi_protocol_name(mp));
		}
		check(r == NULL, "mismatch_request_freed", "");
		/* the same (peer, tag) works right after: no request of the failed pair is left queued or in flight */
		unsigned char ok1[1000], got1[1000];
		gpumpi_request* q[2] = {NULL, NULL};
		int other = 1 - g_rank;
		fill(ok1, sizeof ok1, 60u + (unsigned)g_rank);
		memset(got1, 0, sizeof got1);
		st = gpumpi_irecv_ex(ctx, got1, sizeof got1, other, 3, callFlags, &q[0]);
		if (st == GPUMPI_SUCCESS) st = gpumpi_isend_ex(ctx, ok1, sizeof ok1, other, 3, callFlags, &q[1]);
		gpumpi_protocol ap = q[1] ? gpumpi_request_protocol(q[1]) : GPUMPI_PROTO_DIRECT;
		if (st == GPUMPI_SUCCESS) st = gpumpi_waitall(ctx, 2, q);
		else { gpumpi_status ignored = gpumpi_waitall(ctx, 2, q); (void)ignored; }
		check(st == GPUMPI_SUCCESS && verify(got1, sizeof got1, 60u + (unsigned)other) == (size_t)-1, "after_mismatch_ok", "%s: %s (protocol %s)",
		      gpumpi_strerror(st), gpumpi_last_error(ctx), gpumpi_protocol_name(ap));
	}

	/* the same through the staged protocol: the clear-to-send / size header exchange makes BOTH sides fail, no hang */
	if (size >= 2 && g_rank <= 1) {
		unsigned fl = GPUMPI_FORCE_STAGED;
		if (g_rank == 0) st = gpumpi_isend_ex(ctx, big, 1000, 1, 4, fl, &r);
		else st = gpumpi_irecv_ex(ctx, big, 2000, 0, 4, fl, &r);
		if (st == GPUMPI_SUCCESS) st = gpumpi_wait(ctx, &r);
		check(st == GPUMPI_ERR_MISMATCH, "err_size_mismatch_staged", "%s: %s", gpumpi_strerror(st), gpumpi_last_error(ctx));
	}

	/* finalize while a request is in flight -> BUSY, context kept */
	r = NULL;
	st = gpumpi_irecv_ex(ctx, small, 8, peer, 9, callFlags, &r);
	/* exactly the one receive just posted is in flight: a request left over by the checks above would show here */
	st = gpumpi_finalize(&ctx);
	check(st == GPUMPI_ERR_BUSY && strstr(gpumpi_last_error(ctx), "1 request(s) still in flight"), "err_finalize_busy", "got %d (%s), want %d; detail: %s",
	      (int)st, gpumpi_strerror(st), (int)GPUMPI_ERR_BUSY, gpumpi_last_error(ctx));
	check(ctx != NULL, "finalize_busy_keeps_ctx", "");
	expect(gpumpi_unregister_staging(ctx, stage), GPUMPI_SUCCESS, "staging_unregister", ctx);
	gpumpi_request* s = NULL;
	memset(small, 0x5a, sizeof small);
	gpumpi_isend_ex(ctx, small, 8, (g_rank - 1 + size) % size, 9, callFlags, &s);
	gpumpi_request* both[2] = {r, s};
	expect(gpumpi_waitall(ctx, 2, both), GPUMPI_SUCCESS, "waitall", ctx);
	check(both[0] == NULL && both[1] == NULL && small[0] == 0x5a, "waitall_frees", "");
	int ok = 1;
	for (int e = 0; e <= GPUMPI_ERR_INTERNAL; ++e) if (!gpumpi_strerror((gpumpi_status)e)[0]) ok = 0;
	check(ok && strcmp(gpumpi_strerror((gpumpi_status)999), "unknown gpumpi status") == 0, "strerror_all", "");
	expect(gpumpi_finalize(&ctx), GPUMPI_SUCCESS, "finalize", NULL);
	check(ctx == NULL, "finalize_nulls_ctx", "");
	free(stage);
	int rc = finish_checks();
	MPI_Finalize();
	return rc;
}
