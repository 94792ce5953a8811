#include "docFrame.hh"

#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>
#include <utility>
#include <vector>

namespace gpumpi {

namespace {

struct CrcTable {
	uint32_t t[256];
	CrcTable() {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;
			for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
			t[i] = c;
		}
	}
};

std::string hex8(uint32_t v) {
	char buf[9];
	std::snprintf(buf, sizeof buf, "%08x", v);
	return buf;
}

/** A fresh id: random where the system has entropy, else time and pid. */
std::string newId() {
	uint32_t v = 0;
	try {
		std::random_device rd;
		v = rd();
	} catch (...) {
		v = 0;
	}
	v ^= static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
	     (static_cast<uint32_t>(getpid()) << 16);
	return hex8(v);
}

bool writeAll(const char* p, size_t n, std::string& error) {
	while (n > 0) {
		ssize_t w = ::write(1, p, n);
		if (w < 0) {
			if (errno == EINTR) continue;
			error = std::string("write: ") + std::strerror(errno);
			return false;
		}
		p += w;
		n -= static_cast<size_t>(w);
	}
	return true;
}

}  // namespace

uint32_t crc32(const void* data, size_t n) {
	static const CrcTable table;
	const auto* p = static_cast<const unsigned char*>(data);
	uint32_t c = 0xFFFFFFFFu;
	for (size_t i = 0; i < n; i++) c = table.t[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
	return c ^ 0xFFFFFFFFu;
}

std::string frameDocument(const std::string& json, const std::string& id) {
	// Chunk boundaries first (never inside a UTF-8 sequence: a continuation byte is 10xxxxxx).
	std::vector<std::pair<size_t, size_t>> spans;
	for (size_t at = 0; at < json.size();) {
		size_t end = at + kDocChunkBytes < json.size() ? at + kDocChunkBytes : json.size();
		while (end < json.size() && end > at + 1 && (static_cast<unsigned char>(json[end]) & 0xC0) == 0x80) end--;
		spans.emplace_back(at, end - at);
		at = end;
	}
	// Every chunk line repeats the document's shape (chunk count, length, checksum), so no single line is needed.
	const std::string shape = std::to_string(spans.size()) + " " + std::to_string(json.size()) + " " +
	                          hex8(crc32(json.data(), json.size()));
	std::string out = std::string(kDocBeginMarker) + " v2 id=" + id + " bytes=" + std::to_string(json.size()) +
	                  " chunks=" + std::to_string(spans.size()) + " crc32=" + hex8(crc32(json.data(), json.size())) +
	                  " copies=" + std::to_string(kDocCopies) + "\n";
	for (int c = 0; c < kDocCopies; c++) {
		for (size_t i = 0; i < spans.size(); i++) {
			const auto [at, len] = spans[i];
			out += std::string(kDocChunkMarker) + " " + id + " " + std::to_string(i) + " " + shape + " " +
			       std::to_string(len) + " " + hex8(crc32(json.data() + at, len)) + " ";
			out.append(json, at, len);
			out += '\n';
		}
	}
	out += std::string(kDocEndMarker) + " v2 id=" + id + "\n";
	return out;
}

bool writeFramedDocument(const std::string& json, std::string& error) {
	if (std::fflush(stdout) != 0) {
		error = std::string("flushing stdout: ") + std::strerror(errno);
		return false;
	}
	const std::string framed = frameDocument(json, newId());
	// One write per line: each line reaches the pipe whole. A forwarder that reads the pipe in pieces (Open MPI's
	// IOF: 4 KiB reads) cuts a line only where a read ends, so the writer pauses after every ~3 KB to let it drain.
	size_t at = 0, sincePause = 0;
	while (at < framed.size()) {
		size_t nl = framed.find('\n', at);
		size_t end = nl == std::string::npos ? framed.size() : nl + 1;
		if (!writeAll(framed.data() + at, end - at, error)) return false;
		sincePause += end - at;
		at = end;
		if (sincePause >= kDocPauseBytes && at < framed.size()) {
			std::this_thread::sleep_for(std::chrono::milliseconds(2));
			sincePause = 0;
		}
	}
	return true;
}

}  // namespace gpumpi
