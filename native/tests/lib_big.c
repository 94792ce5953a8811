/* libgpumpi: one message larger than 2 GiB (2.5 GiB, beyond MPI's int count) from rank 0 to rank 1 through the
 * staging pipeline (host memcpy copy engine, 16 MiB chunks, 4 registered slots). Needs ~5.5 GiB free: it skips (and says so) when MemAvailable is lower. */
#include "lib_check.h"

static size_t mem_available(void) {
	FILE* f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t kb = 0;
	if (!f) return 0;
	while (fgets(line, sizeof line, f)) if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) break;
	fclose(f);
	return kb * 1024;
}

static uint64_t word(size_t i, uint64_t seed) { return (i * 0x9E3779B97F4A7C15ull) ^ seed; }

int main(int argc, char** argv) {
	parse_args(argc, argv);
	MPI_Init(&argc, &argv);
	int size = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	const size_t bytes = ((size_t)5 << 29) + 8;  /* 2.5 GiB + 8: > INT_MAX and not a multiple of any chunk */
	int enough = mem_available() > (size_t)11 << 29;  /* ~5.5 GiB */
	int all = 0;
	MPI_Allreduce(&enough, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all || size < 2 || g_device) {
		note("SKIP %d big: %s", g_rank, g_device ? "host-memory test" : size < 2 ? "needs 2 ranks" : "less than 5.5 GiB MemAvailable");
		check(1, "big_skipped", "not enough memory or ranks");
		int rc = finish_checks();
		MPI_Finalize();
		return rc;
	}
	gpumpi_config cfg;
	gpumpi_config_default(&cfg);
	gpumpi_ctx* ctx = NULL;
	gpumpi_status st = gpumpi_init(MPI_COMM_WORLD, &cfg, &ctx);
	check(st == GPUMPI_SUCCESS, "init", "%s", gpumpi_last_error(NULL));
	size_t sbytes = 4 * cfg.chunk_bytes;
	void* stage = malloc(sbytes);
	gpumpi_register_staging(ctx, stage, sbytes, GPUMPI_STAGING_PIN);
	uint64_t* buf = NULL;
	if (g_rank <= 1) buf = (uint64_t*)malloc(bytes);
	size_t words = bytes / 8;
	/* One mode keeps CI short on a shared 2-core runner: the staging pipeline, whose 64-bit chunk offsets are the
	 * library's own code (the direct protocol's piece splitting is covered at 10 MiB with 1 MiB pieces in lib_transfer). */
	const char* names[1] = {"big_pipeline_2.5GiB"};
	unsigned flags[1] = {GPUMPI_FORCE_STAGED | GPUMPI_STAGE_HOST};
	for (int m = 0; m < 1 && ctx && buf; ++m) {
		uint64_t seed = 0x1234u + (uint64_t)m;
		gpumpi_request* r = NULL;
		double t0 = MPI_Wtime();
		if (g_rank == 0) {
			for (size_t i = 0; i < words; ++i) buf[i] = word(i, seed);
			note("INFO 0 filled in %.2f s", MPI_Wtime() - t0);
			t0 = MPI_Wtime();
			st = gpumpi_isend_ex(ctx, buf, bytes, 1, 1, flags[m], &r);
		} else if (g_rank == 1) {
			memset(buf, 0, bytes);
			t0 = MPI_Wtime();
			st = gpumpi_irecv_ex(ctx, buf, bytes, 0, 1, flags[m], &r);
		}
		if (st == GPUMPI_SUCCESS && r) st = gpumpi_wait(ctx, &r);
		double secs = MPI_Wtime() - t0;
		if (g_rank == 1) {
			size_t bad = (size_t)-1;
			for (size_t i = 0; i < words && st == GPUMPI_SUCCESS; ++i) if (buf[i] != word(i, seed)) { bad = i * 8; break; }
			check(st == GPUMPI_SUCCESS && bad == (size_t)-1, names[m], "%zu bytes in %.2f s (%.2f GB/s), first bad byte %zd; %s", bytes, secs,
			      bytes / secs / 1e9, (ssize_t)bad, gpumpi_last_error(ctx));
		} else if (g_rank == 0) {
			check(st == GPUMPI_SUCCESS, names[m], "sent %zu bytes: %s", bytes, gpumpi_last_error(ctx));
		}
	}
	check(gpumpi_staging_bytes(ctx) == sbytes, "big_staging_constant", "%zu staging bytes for a 2.5 GiB message", gpumpi_staging_bytes(ctx));
	free(buf);
	gpumpi_finalize(&ctx);
	free(stage);
	int rc = finish_checks();
	MPI_Finalize();
	return rc;
}
