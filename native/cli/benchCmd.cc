// `gpumpi bench`: libgpumpi bandwidth and memory, 2 ranks (rank 0 sends, rank 1 receives), per size and mode:
//   mpi     the buffer straight to MPI (device pointers need a CUDA-aware MPI; split into <= 1 GiB messages)
//   direct  libgpumpi, GPUMPI_FORCE_DIRECT          staged  libgpumpi, GPUMPI_FORCE_STAGED (pipelined staging)
//   shm     libgpumpi, GPUMPI_FORCE_SHM (same host)  auto    libgpumpi, the protocol discovery chose
// plus the limits: D2H and H2D copy bandwidth with pinned buffers, and MPI host-to-host bandwidth. Every transfer
// is verified (pattern written by the sender, checked by the receiver; device data is copied back first).
// Memory: peak extra host RSS during a mode (VmHWM reset via /proc/self/clear_refs) and the lowest free device
// memory sampled during the transfer (cuMemGetInfo). JSON schema "gpumpi.bench/1" (docs/library.md).
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "args.hh"
#include "benchLimits.hh"
#include "command.hh"
#include "cudaDriver.hh"
#include "gpumpi.h"
#include "json.hh"
#include "libModes.hh"

namespace {

using gpumpi::cudaDriver;
using namespace gpumpi::cli;

const char* kUsage =
    "Usage: gpumpi bench [--sizes 1G,8G] [--modes mpi,direct,staged,shm,auto] [--chunk 16M] [--nbuf 4] [--iters 3]\n"
    "                    [--piece 256M] [--memory device|host] [--json]   (run under mpirun -np 2)\n";

long procKb(const char* key) {
	FILE* f = std::fopen("/proc/self/status", "r");
	if (!f) return -1;
	char line[256];
	long kb = -1;
	size_t n = std::strlen(key);
	while (std::fgets(line, sizeof line, f)) if (!std::strncmp(line, key, n)) { kb = std::atol(line + n + 1); break; }
	std::fclose(f);
	return kb;
}

void resetPeakRss() {
	if (FILE* f = std::fopen("/proc/self/clear_refs", "w")) { std::fputs("5", f); std::fclose(f); }
}

uint64_t word(size_t i, uint64_t seed) { return (i * 0x9E3779B97F4A7C15ull) ^ seed; }

struct Bench {
	int rank = 0;
	bool device = false;
	size_t chunk = 16u << 20;
	int nbuf = 4;
	char* pinned = nullptr;  // one chunk-sized pinned host buffer for fill/verify (device) — allocated once
	size_t pinnedBytes = 0;
	size_t minFreeDev = SIZE_MAX;
	double lastSample = 0;

	void sampleDev() {
		if (!device) return;
		double now = MPI_Wtime();
		if (now - lastSample < 0.002) return;
		lastSample = now;
		size_t fr = 0, tot = 0;
		if (gpumpi_device_mem_info(&fr, &tot) == GPUMPI_SUCCESS) minFreeDev = std::min(minFreeDev, fr);
	}
	/** Writes the pattern into buf (device: through the pinned buffer). */
	void fill(char* buf, size_t bytes, uint64_t seed) {
		size_t step = device ? pinnedBytes : bytes;
		for (size_t off = 0; off < bytes; off += step) {
			size_t n = std::min(step, bytes - off);
			uint64_t* w = reinterpret_cast<uint64_t*>(device ? pinned : buf + off);
			for (size_t i = 0; i < n / 8; ++i) w[i] = word(off / 8 + i, seed);
			for (size_t i = n / 8 * 8; i < n; ++i) reinterpret_cast<char*>(w)[i] = static_cast<char>(i);
			if (device) gpumpi_memcpy(buf + off, pinned, n);
		}
	}
	/** First wrong byte offset or -1. */
	long long verify(const char* buf, size_t bytes, uint64_t seed) {
		size_t step = device ? pinnedBytes : bytes;
		for (size_t off = 0; off < bytes; off += step) {
			size_t n = std::min(step, bytes - off);
			if (device) gpumpi_memcpy(pinned, buf + off, n);
			const uint64_t* w = reinterpret_cast<const uint64_t*>(device ? pinned : buf + off);
			for (size_t i = 0; i < n / 8; ++i) if (w[i] != word(off / 8 + i, seed)) return static_cast<long long>(off + i * 8);
			for (size_t i = n / 8 * 8; i < n; ++i) if (reinterpret_cast<const char*>(w)[i] != static_cast<char>(i)) return static_cast<long long>(off + i);
		}
		return -1;
	}
};

/** Raw MPI transfer of bytes (pieces <= 1 GiB), rank 0 -> 1. */
int rawMpi(Bench& b, char* buf, size_t bytes) {
	const size_t piece = 1u << 30;
	std::vector<MPI_Request> reqs;
	for (size_t off = 0; off < bytes || (bytes == 0 && reqs.empty()); off += piece) {
		int n = static_cast<int>(std::min(piece, bytes - off));
		MPI_Request r;
		int rc = b.rank == 0 ? MPI_Isend(buf + off, n, MPI_BYTE, 1, 77, MPI_COMM_WORLD, &r) : MPI_Irecv(buf + off, n, MPI_BYTE, 0, 77, MPI_COMM_WORLD, &r);
		if (rc != MPI_SUCCESS) return rc;
		reqs.push_back(r);
		if (bytes == 0) break;
	}
	int done = 0;
	while (!done) {
		int rc = MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &done, MPI_STATUSES_IGNORE);
		if (rc != MPI_SUCCESS) return rc;
		b.sampleDev();
	}
	return MPI_SUCCESS;
}

double median(std::vector<double> v) {
	if (v.empty()) return 0;
	std::sort(v.begin(), v.end());
	return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

/** Options of one `gpumpi bench` run. */
struct BenchOptions {
	std::vector<unsigned long long> sizes{1ull << 30};
	std::vector<std::string> modes{"mpi", "staged", "shm"};
	unsigned long long chunk = 16ull << 20, piece = 256ull << 20;
	int nbuf = 4, iters = 3;
	bool json = false;
	std::string memory = "device";
};

int usageError(const std::string& msg) { return gpumpi::cli::usageError("bench", msg, kUsage); }

/** Step 1: the arguments. Returns -1 to go on, else the exit status (0 after --help, 2 on a usage error). */
int parseArgs(const std::vector<std::string>& args, BenchOptions& o) {
	for (size_t i = 0; i < args.size(); ++i) {
		const std::string& a = args[i];
		std::string v;
		if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); return 0; }
		if (a == "--json") { o.json = true; continue; }
		if (!valueOf(args, i, v)) return usageError(a + " needs a value (or is unknown)");
		if (a == "--sizes") {
			o.sizes.clear();
			for (const auto& s : split(v)) {
				unsigned long long x = 0;
				if (!parseSize(s, x)) return usageError("bad size '" + s + "'");
				o.sizes.push_back(x);
			}
		} else if (a == "--modes") {
			o.modes = split(v);
			for (const auto& m : o.modes)
				if (m != "mpi" && m != "direct" && m != "staged" && m != "shm" && m != "auto") return usageError("unknown mode '" + m + "'");
		} else if (a == "--chunk") {
			if (!parseSize(v, o.chunk)) return usageError("bad chunk '" + v + "'");
		} else if (a == "--piece") {
			if (!parseSize(v, o.piece)) return usageError("bad piece '" + v + "'");
		} else if (a == "--nbuf") {
			o.nbuf = std::atoi(v.c_str());
		} else if (a == "--iters") {
			o.iters = std::max(1, std::atoi(v.c_str()));
		} else if (a == "--memory") {
			o.memory = v;
			if (v != "device" && v != "host") return usageError("--memory device|host");
		} else {
			return usageError("unknown option " + a);
		}
	}
	return -1;
}

/** What step 2 set up: the libgpumpi context, the peer's path, and what the JSON reports about the set-up. */
struct BenchStart {
	gpumpi_ctx* ctx = nullptr;
	gpumpi_path_info info{};
	std::string noDevice;  // why host memory stands in for device memory ("" when device)
	long initRssKb = 0;    // VmRSS growth of gpumpi_init
	size_t stagingBytes = 0;
};

/**
 * Step 2: CUDA before MPI_Init (device memory), MPI with exactly 2 ranks, the libgpumpi context (shared segments
 * forced, staging allocated) and the pinned verify buffer. Returns -1 to go on, else the exit status.
 */
int start(const BenchOptions& o, Bench& b, BenchStart& s) {
	b.chunk = o.chunk;
	b.nbuf = o.nbuf;
	if (o.memory == "device") {
		gpumpi_status st = gpumpi_cuda_preinit(-1, nullptr);  // before MPI_Init
		if (st == GPUMPI_SUCCESS) b.device = true;
		else s.noDevice = std::string("no usable CUDA (") + gpumpi_strerror(st) + "): host memory instead";
	}
	int provided = 0;
	MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
	int size = 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (b.rank == 0) std::fprintf(stderr, "gpumpi bench: run with exactly 2 ranks (mpirun -np 2), got %d\n", size);
		MPI_Finalize();
		return 2;
	}
	gpumpi_config cfg;
	gpumpi_config_default(&cfg);
	cfg.chunk_bytes = o.chunk;
	cfg.num_buffers = o.nbuf;
	cfg.direct_piece_bytes = o.piece;
	cfg.alloc_staging = 1;
	cfg.flags = GPUMPI_FORCE_SHM;  // segments for the shm mode even where auto would not pick it
	long rssBeforeInit = procKb("VmRSS:");
	if (gpumpi_init(MPI_COMM_WORLD, &cfg, &s.ctx) != GPUMPI_SUCCESS) {
		std::fprintf(stderr, "rank %d: gpumpi_init: %s\n", b.rank, gpumpi_last_error(nullptr));
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	s.initRssKb = procKb("VmRSS:") - rssBeforeInit;
	gpumpi_path(s.ctx, 1 - b.rank, &s.info);
	s.stagingBytes = gpumpi_staging_bytes(s.ctx);
	if (b.device) {
		size_t maxSize = *std::max_element(o.sizes.begin(), o.sizes.end());
		b.pinnedBytes = std::min<size_t>(maxSize ? maxSize : 8, 256u << 20);
		b.pinnedBytes = (b.pinnedBytes + 7) / 8 * 8;
		void* p = nullptr;
		if (cudaDriver().cuMemHostAlloc(&p, b.pinnedBytes, gpumpi::CU_MEMHOSTALLOC_PORTABLE) != gpumpi::CUDA_SUCCESS) {
			std::fprintf(stderr, "rank %d: cuMemHostAlloc for the verify buffer failed\n", b.rank);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		b.pinned = static_cast<char*>(p);
	}
	return -1;
}

/** One result row: a size whose buffer could not be allocated (mode ""), a skipped mode, or a measured one. */
struct Row {
	size_t size = 0;       // bytes moved (host-mpi: at most 1 GiB)
	size_t requested = 0;  // the size asked for
	std::string mode, skipped, protocol, error;
	std::vector<double> times;
	double best = 0, median = 0;
	bool verified = false;
	long long firstBad = -1, extraHost = 0, extraDev = 0;  // worst of both ranks
	bool failed() const { return skipped.empty() && !verified; }
};

/** Step 3, one mode at one size: iters verified transfers rank 0 -> 1, timed, with the memory they cost. */
Row measure(Bench& b, const BenchOptions& o, const BenchStart& s, const std::string& mode, char* buf, size_t bytes) {
	Row row;
	row.mode = mode;
	row.requested = bytes;
	const bool hostLimit = mode == "host-mpi";
	char* tbuf = buf;
	if (hostLimit) {
		size_t n = std::min(bytes, static_cast<size_t>(1) << 30);
		tbuf = static_cast<char*>(std::malloc(n ? n : 1));
		std::memset(tbuf, 0, n);
	}
	const size_t tbytes = hostLimit ? std::min(bytes, static_cast<size_t>(1) << 30) : bytes;
	row.size = tbytes;
	if (mode == "mpi" && b.device && s.info.mpi_cuda_aware != 1) row.skipped = "MPI is not CUDA-aware: device pointers cannot go to MPI";
	if (mode != "mpi" && !hostLimit) row.skipped = gpumpi::libSkipReason(mode, s.info, b.device);
	long long bad = -1;
	gpumpi_protocol proto = GPUMPI_PROTO_DIRECT;
	size_t devFree0 = 0, tot = 0;
	b.minFreeDev = SIZE_MAX;
	if (b.device) gpumpi_device_mem_info(&devFree0, &tot);
	resetPeakRss();
	long rss0 = procKb("VmRSS:");
	bool savedDev = b.device;
	if (hostLimit) b.device = false;
	for (int it = 0; it < o.iters && row.skipped.empty() && row.error.empty(); ++it) {
		uint64_t seed = 0xabc0ull + static_cast<uint64_t>(it) * 7919u + bytes;
		if (b.rank == 0) b.fill(tbuf, tbytes, seed);
		else if (b.device) gpumpi_device_memset(tbuf, 0, tbytes);
		else std::memset(tbuf, 0, tbytes);
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		if (mode == "mpi" || hostLimit) {
			int rc = rawMpi(b, tbuf, tbytes);
			if (rc != MPI_SUCCESS) row.error = "MPI error " + std::to_string(rc);
		} else {
			unsigned fl = gpumpi::libCallFlags(mode, true) & ~static_cast<unsigned>(GPUMPI_STAGE_HOST);  // bench: host buffers stay as they are
			gpumpi_status st = gpumpi::libTransfer(s.ctx, b.rank, tbuf, tbytes, fl, &proto, [&b] { b.sampleDev(); });
			if (st != GPUMPI_SUCCESS) row.error = std::string(gpumpi_strerror(st)) + ": " + gpumpi_last_error(s.ctx);
		}
		double mine = MPI_Wtime() - t0, secs = 0;
		MPI_Allreduce(&mine, &secs, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
		if (b.rank == 1 && row.error.empty()) {
			long long v = b.verify(tbuf, tbytes, seed);
			if (v >= 0 && bad < 0) bad = v;
		}
		row.times.push_back(secs);
		int e = !row.error.empty(), any = 0;
		MPI_Allreduce(&e, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (any && row.error.empty()) row.error = "the peer failed";
	}
	b.device = savedDev;
	long hwm = procKb("VmHWM:");
	long long extraHost = hwm > 0 && rss0 > 0 ? (hwm - rss0) * 1024LL : -1;
	long long extraDev = b.device && b.minFreeDev != SIZE_MAX && devFree0 > b.minFreeDev ? static_cast<long long>(devFree0 - b.minFreeDev) : 0;
	long long peers[3] = {bad, extraHost, extraDev}, worst[3] = {0, 0, 0};
	MPI_Allreduce(peers, worst, 3, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
	row.firstBad = worst[0];
	row.extraHost = worst[1];
	row.extraDev = worst[2];
	std::vector<double> bw;
	for (double t : row.times) bw.push_back(t > 0 ? tbytes / t / 1e9 : 0);
	row.best = bw.empty() ? 0 : *std::max_element(bw.begin(), bw.end());
	row.median = median(bw);
	row.verified = row.skipped.empty() && row.error.empty() && row.firstBad < 0;
	row.protocol = mode == "mpi" || hostLimit ? "mpi" : gpumpi_protocol_name(proto);
	if (hostLimit) std::free(tbuf);
	return row;
}

/** Step 3: every size, the MPI host-to-host limit first and then each mode; the human table grows as rows come. */
std::vector<Row> measureAll(Bench& b, const BenchOptions& o, const BenchStart& s) {
	std::vector<Row> rows;
	for (size_t bytes : o.sizes) {
		char* buf = nullptr;
		if (b.device) { if (gpumpi_device_alloc(reinterpret_cast<void**>(&buf), bytes) != GPUMPI_SUCCESS) buf = nullptr; }
		else if ((buf = static_cast<char*>(std::malloc(bytes ? bytes : 1)))) std::memset(buf, 0, bytes);  // first touch outside the measurement
		int ok = buf != nullptr, all = 0;
		MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
		if (!all) {
			Row r;
			r.size = r.requested = bytes;
			r.skipped = "buffer allocation failed";
			rows.push_back(r);
			if (buf) { if (b.device) gpumpi_device_free(buf); else std::free(buf); }
			continue;
		}
		std::vector<std::string> todo = o.modes;
		todo.insert(todo.begin(), "host-mpi");  // the limit: MPI host-to-host on the same path
		for (const std::string& mode : todo) {
			rows.push_back(measure(b, o, s, mode, buf, bytes));
			const Row& r = rows.back();
			if (b.rank != 0 || o.json) continue;
			if (!r.skipped.empty()) std::printf("%-8zu %-7s skipped: %s\n", r.size, r.mode.c_str(), r.skipped.c_str());
			else
				std::printf("%-8zu %-7s %-7s %10.2f %10.2f %14.1f %14.1f %s%s\n", r.size, r.mode.c_str(), r.protocol.c_str(), r.best, r.median,
				            r.extraHost / 1048576.0, r.extraDev / 1048576.0, r.verified ? "yes" : "NO", r.error.empty() ? "" : (" " + r.error).c_str());
		}
		if (b.device) gpumpi_device_free(buf); else std::free(buf);
	}
	return rows;
}

/** The MPI library's version line: Open MPI counts the terminating NUL in len (observed.md A), so cut at the first NUL / newline and trim. */
std::string mpiLibrary() {
	char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
	int len = 0;
	MPI_Get_library_version(lib, &len);
	if (len < 0 || len > MPI_MAX_LIBRARY_VERSION_STRING) len = static_cast<int>(std::strlen(lib));
	std::string libs(lib, static_cast<size_t>(len));
	libs = libs.substr(0, libs.find_first_of(std::string("\n\0", 2)));
	while (!libs.empty() && (libs.back() == ' ' || libs.back() == '\t' || libs.back() == '\r')) libs.pop_back();
	return libs;
}

/** Step 4: the gpumpi.bench/1 document (docs/library.md). */
std::string benchJson(const Bench& b, const BenchOptions& o, const BenchStart& s, const std::vector<Row>& rows, const CopyLimits& L, const PairLimits& P, int failures) {
	gpumpi::JsonWriter w;
	w.beginObject().key("schema").value("gpumpi.bench/1");
	w.key("mpi").value(mpiLibrary()).key("memory").value(b.device ? "device" : "host");
	if (!s.noDevice.empty()) w.key("memoryNote").value(s.noDevice);
	w.key("path").beginObject().key("class").value(gpumpi_path_name(s.info.path)).key("protocol").value(gpumpi_protocol_name(s.info.protocol))
	    .key("reason").value(s.info.reason).key("mpiCudaAware").value(s.info.mpi_cuda_aware).endObject();
	w.key("config").beginObject().key("chunkBytes").value(o.chunk).key("numBuffers").value(o.nbuf).key("directPieceBytes").value(o.piece).key("iters").value(o.iters)
	    .key("stagingBytes").value(static_cast<unsigned long long>(s.stagingBytes))
	    .key("initRssKb").value(static_cast<long long>(s.initRssKb)).endObject();
	w.key("results").beginArray();
	for (const Row& r : rows) {
		w.beginObject().key("size").value(static_cast<unsigned long long>(r.size));
		if (!r.mode.empty()) w.key("mode").value(r.mode);
		if (!r.skipped.empty()) {
			w.key("skipped").value(r.skipped);
		} else {
			w.key("protocol").value(r.protocol).key("bestGBps").value(r.best).key("medianGBps").value(r.median).key("timesS").beginArray();
			for (double t : r.times) w.value(t);
			w.endArray().key("verified").value(r.verified).key("extraHostBytes").value(r.extraHost).key("extraDeviceBytes").value(r.extraDev);
			if (!r.error.empty()) w.key("error").value(r.error);
			if (r.firstBad >= 0) w.key("firstBadByte").value(r.firstBad);
		}
		w.endObject();
	}
	w.endArray();
	w.key("limits").beginObject().key("d2hGBps").value(L.d2h).key("h2dGBps").value(L.h2d).key("duplexGBps").value(L.duplex).key("hostMpiGBps").beginArray();
	for (const Row& r : rows)
		if (r.mode == "host-mpi") w.beginObject().key("size").value(static_cast<unsigned long long>(r.requested)).key("bestGBps").value(r.best).endObject();
	w.endArray();
	if (P.measured()) {
		w.key("pair").beginObject().key("chunkBytes").value(static_cast<unsigned long long>(P.chunk)).key("numBuffers").value(P.nbuf)
		    .key("aloneD2hGBps").value(P.aloneD2h).key("aloneH2dGBps").value(P.aloneH2d).key("bothD2hGBps").value(P.bothD2h).key("bothH2dGBps").value(P.bothH2d)
		    .key("bothRegisteredD2hGBps").value(P.bothRegD2h).key("bothRegisteredH2dGBps").value(P.bothRegH2d)
		    .key("bothHugeD2hGBps").value(P.bothHugeD2h).key("bothHugeH2dGBps").value(P.bothHugeH2d)
		    .key("bothWholeD2hGBps").value(P.bothWholeD2h).key("bothWholeH2dGBps").value(P.bothWholeH2d).endObject();
	}
	w.endObject();
	w.key("failures").value(failures).endObject();
	return w.str();
}

int run(const std::vector<std::string>& args) {
	BenchOptions o;
	if (int rc = parseArgs(args, o); rc >= 0) return rc;
	Bench b;
	BenchStart s;
	if (int rc = start(o, b, s); rc >= 0) return rc;
	if (b.rank == 0 && !o.json) {
		std::printf("gpumpi bench: %s memory, path %s (%s): %s\n", b.device ? "device" : "host", gpumpi_path_name(s.info.path),
		            gpumpi_protocol_name(s.info.protocol), s.info.reason);
		std::printf("%-8s %-7s %-7s %10s %10s %14s %14s %s\n", "size", "mode", "proto", "best GB/s", "med GB/s", "extra host MB", "extra dev MB", "verified");
	}
	const std::vector<Row> rows = measureAll(b, o, s);
	int failures = 0;
	for (const Row& r : rows) failures += !r.mode.empty() && r.failed();
	CopyLimits L;
	const size_t largest = *std::max_element(o.sizes.begin(), o.sizes.end());
	if (b.rank == 0) L = copyLimits(b.device, largest);
	const PairLimits P = pairLimits(b.device, b.rank, largest, o.chunk, o.nbuf);  // collective
	const std::string doc = benchJson(b, o, s, rows, L, P, failures);
	if (b.rank == 0) {
		if (o.json) std::printf("%s\n", doc.c_str());
		else std::printf("limits: D2H %.2f GB/s, H2D %.2f GB/s, both at once %.2f GB/s each (pinned, transfers of min(size, 1 GiB)); failures %d\n", L.d2h, L.h2d, L.duplex, failures);
		if (!o.json && P.measured())
			std::printf("two processes, %llu-byte copies through %d slots: alone D2H %.2f / H2D %.2f GB/s; both at once D2H %.2f / H2D %.2f (registered shared ring %.2f / %.2f, with MADV_HUGEPAGE %.2f / %.2f; whole copies %.2f / %.2f)\n",
			            static_cast<unsigned long long>(P.chunk), P.nbuf, P.aloneD2h, P.aloneH2d, P.bothD2h, P.bothH2d, P.bothRegD2h, P.bothRegH2d, P.bothHugeD2h, P.bothHugeH2d, P.bothWholeD2h, P.bothWholeH2d);
	}
	if (b.pinned) cudaDriver().cuMemFreeHost(b.pinned);
	gpumpi_finalize(&s.ctx);
	MPI_Finalize();
	return failures ? 1 : 0;
}

const gpumpi::cli::Registration reg{"bench", "libgpumpi bandwidth + memory per mode (mpirun -np 2)", run};

}  // namespace
