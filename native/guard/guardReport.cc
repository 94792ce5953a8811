// The per-rank JSON report (schema gpumpi-guard-rank/1, docs/guard.md "Report"): written to a temp name and renamed,
// so a reader never sees half a file. Written at MPI_Finalize (or exit), and also at each new danger ("interim":
// true), so a program that crashes or is killed after a dangerous call still leaves its evidence (on the H200 the
// seed's IPC pattern aborted in 12 of 12 runs, and the final report never came). A write error is one stderr line.
#include <cstdio>
#include <cstring>
#include <string>

#include "guardStage.hh"
#include "guardState.hh"
#include "json.hh"

namespace gpumpi::guard {
namespace {

void classes(JsonWriter& w, const uint64_t (&cls)[kNumCls]) {
	w.key("bufferClasses").beginObject();
	for (int c = 0; c < kNumCls; ++c) w.key(kClsNames[c]).value(static_cast<unsigned long long>(cls[c]));
	w.endObject();
}

std::string hex(uintptr_t v) {
	char b[32];
	std::snprintf(b, sizeof b, "0x%zx", size_t(v));
	return b;
}


/** ticks -> ns (1 where nowNs is clock_gettime; the TSC rate over this run on x86-64). */
double nsPerTick(const State& g, double t1, uint64_t tick1) {
	double r = 1.0;
#if defined(__x86_64__)
	r = tick1 > g.tick0 && t1 > g.t0 ? (t1 - g.t0) * 1e9 / double(tick1 - g.tick0) : 1.0;
#endif
	return r;
}

/** Who wrote the report, in which mode, whether STAGE is on, and when. */
void writeHead(JsonWriter& w, const State& g, bool finalized, bool interim) {
	w.key("schema").value("gpumpi-guard-rank/1");
	w.key("rank").value(g.rank).key("size").value(g.size);
	w.key("host").value(g.host).key("pid").value(g.pid);
	w.key("mode").value(g.mode == Mode::Warn ? "warn" : g.mode == Mode::Fix ? "fix" : g.mode == Mode::Off ? "off" : "report");
	if (!g.offReason.empty()) w.key("off").value(g.offReason);
	w.key("stage").value(stageOn());
	w.key("stageAsked").value(g.stageAsked).key("stageAgreed").value(g.stageAgreed).key("stageRanks").value(g.stageRanks);
	if (g.stageAgreed) w.key("stageDetail").raw(stageReportJson());
	w.key("finalized").value(finalized);
	w.key("interim").value(interim);
}

/** "mpi" and "cuda": what the guard learnt of the MPI and the CUDA driver. */
void writeFacts(JsonWriter& w, const State& g) {
	w.key("mpi").beginObject();
	w.key("library").value(g.library);
	w.key("cudaAware").value(g.cudaAware);
	if (g.pml.empty()) w.key("pml").null(); else w.key("pml").value(g.pml);
	if (g.ucxCudaIpc < 0) w.key("ucxCudaIpc").null(); else w.key("ucxCudaIpc").value(g.ucxCudaIpc == 1);
	w.endObject();
	bool avail = false;
	std::string detail = cudaDetail(&avail);
	w.key("cuda").beginObject().key("available").value(avail).key("detail").value(detail).endObject();
}

void writeCalls(JsonWriter& w, const State& g, double nsPerTick) {
	w.key("calls").beginArray();
	for (int c = 0; c < C_COUNT; ++c) {
		const CallStat& s = g.calls[c];
		if (s.count == 0) continue;
		w.beginObject().key("name").value(kCallNames[c]).key("count").value(static_cast<unsigned long long>(s.count))
			.key("bytes").value(static_cast<unsigned long long>(s.bytes)).key("timeInMpiNs").value(static_cast<unsigned long long>(double(s.ns) * nsPerTick + 0.5)).endObject();
	}
	w.endArray();
}

void writePeers(JsonWriter& w, const State& g) {
	w.key("peers").beginArray();
	for (size_t p = 0; p < g.peers.size(); ++p) {
		const PeerStat& s = g.peers[p];
		if (s.sendCalls == 0 && s.recvCalls == 0) continue;
		w.beginObject().key("peer").value(static_cast<unsigned long long>(p));
		w.key("sendCalls").value(static_cast<unsigned long long>(s.sendCalls)).key("recvCalls").value(static_cast<unsigned long long>(s.recvCalls));
		w.key("sentBytes").value(static_cast<unsigned long long>(s.sentBytes)).key("recvBytes").value(static_cast<unsigned long long>(s.recvBytes));
		w.key("largestMessage").value(static_cast<unsigned long long>(s.largest));
		classes(w, s.cls);
		w.key("path").value(p < g.peerPath.size() ? g.peerPath[p] : "unknown");
		w.endObject();
	}
	w.endArray();
}

void writeCollectives(JsonWriter& w, const State& g) {
	w.key("collectives").beginArray();
	for (int c = 0; c < C_COUNT; ++c) {
		const CollStat& s = g.coll[c];
		if (s.count == 0) continue;
		w.beginObject().key("name").value(kCallNames[c]).key("count").value(static_cast<unsigned long long>(s.count))
			.key("bytes").value(static_cast<unsigned long long>(s.bytes));
		classes(w, s.cls);
		w.endObject();
	}
	w.endArray();
}

void writeDangers(JsonWriter& w, const State& g) {
	w.key("dangers").beginArray();
	for (const Danger& d : g.dangers) {
		w.beginObject().key("kind").value(dangerName(d.kind)).key("call").value(kCallNames[d.call]);
		if (d.peer < 0) w.key("peer").null(); else w.key("peer").value(d.peer);
		w.key("count").value(static_cast<unsigned long long>(d.count)).key("bytes").value(static_cast<unsigned long long>(d.bytes));
		w.key("firstSite").beginObject().key("address").value(hex(d.site.address));
		if (d.site.symbol.empty()) w.key("symbol").null(); else w.key("symbol").value(d.site.symbol);
		if (d.site.object.empty()) w.key("object").null(); else w.key("object").value(d.site.object);
		w.key("offset").value(hex(d.site.offset)).endObject();
		w.key("detail").value(d.detail).key("action").value(d.action).endObject();
	}
	w.endArray();
}

/** "unsupported", "exchange", "ucxMemtypeCache" and "overhead": the rest of the report. */
void writeTail(JsonWriter& w, const State& g) {
	w.key("unsupported").beginArray();
	for (const Unsupported& u : g.unsupported) {
		w.beginObject().key("call").value(u.call).key("count").value(static_cast<unsigned long long>(u.count))
			.key("note").value("passed through, not observed").endObject();
	}
	w.endArray();
	w.key("exchange").value(g.exchange);
	const UcxMemtypeFacts& u = ucxMemtypeFacts();
	w.key("ucxMemtypeCache").beginObject().key("state").value(u.state);
	if (u.major) w.key("ucx").value(std::to_string(u.major) + "." + std::to_string(u.minor) + "." + std::to_string(u.release));
	w.key("replayedRegions").value(static_cast<unsigned long long>(u.replayedRegions))
		.key("missedRanges").value(static_cast<unsigned long long>(u.missedRanges))
		.key("toldRanges").value(static_cast<unsigned long long>(u.toldRanges)).endObject();
	w.key("overhead").beginObject().key("classifyQueries").value(static_cast<unsigned long long>(g.classifyQueries))
		.key("cacheHits").value(static_cast<unsigned long long>(g.cacheHits)).endObject();
}

void writeDoc(bool finalized, bool interim) {
	State& g = st();
	double t1 = finalized ? g.t1 : double(clockNs()) * 1e-9;
	uint64_t tick1 = finalized ? g.tick1 : nowNs();
	JsonWriter w;
	w.beginObject();
	writeHead(w, g, finalized, interim);
	writeFacts(w, g);
	w.key("wallS").value(t1 - g.t0);
	writeCalls(w, g, nsPerTick(g, t1, tick1));
	writePeers(w, g);
	writeCollectives(w, g);
	writeDangers(w, g);
	writeTail(w, g);
	w.endObject();
	const std::string file = g.dir + "/guard-" + g.host + "-" + std::to_string(g.pid) + ".json", tmp = file + ".tmp";
	const char* step = "";
	std::string why;
	if (writeFileAtomically(file, w.str() + "\n", &step, &why)) return;
	if (std::strcmp(step, "rename") == 0) say("report not written: cannot rename " + tmp + " to " + file + ": " + why);
	else say("report not written: cannot " + std::string(step) + " " + tmp + ": " + why);
}

}  // namespace

void writeReport(bool finalized) {
	Lock l;
	if (st().written) return;
	st().written = true;
	writeDoc(finalized, false);
}

void writeInterimReport() {
	if (st().written || !st().active) return;
	writeDoc(false, true);
}

}  // namespace gpumpi::guard
