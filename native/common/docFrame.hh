// Framed result documents on stdout: the one JSON document a command prints for the product survives the other
// ranks' output, UCX / PMIx log lines and launchers that forward output in pieces (Slurm forwards at most 1 KiB per
// message, so a long line is cut and other tasks' lines land inside it; seen in CI as "Bad control character").
//
//   @@GPUMPI-JSON-BEGIN@@ v2 id=<8 hex> bytes=<N> chunks=<K> crc32=<8 hex> copies=3       (for people; optional)
//   @@GPUMPI-JSON@@ <id> <i> <K> <N> <crc32 of all> <len> <crc32 of chunk> <payload: len bytes>  (i = 0 … K-1, 3 times)
//   @@GPUMPI-JSON-END@@ v2 id=<id>                                                          (for people; optional)
//
// Each line is at most ~700 bytes and written by one write(2), so it reaches a pipe whole (PIPE_BUF) and fits one
// forwarded message (Slurm forwards whole lines up to 1 KiB). Launchers that forward raw reads (Open MPI's IOF reads
// up to 4 KiB) still cut a line where a read ends and another rank's output lands there (seen in the engine tier
// with GPUMPI_TEST_NOISE): the writer pauses every ~3 KB so the reader drains the pipe, every chunk line carries the
// document's shape (no single line is needed), and every chunk is written three times; the reader takes an intact
// copy of each. Chunks never split a UTF-8 sequence. The reader (extension/core/parsers/framedDocument.ts) checks every
// chunk's length and CRC-32 and the whole document's, and names the chunk and byte range of any damage
// (docs/repro-schema.md). No MPI, no CUDA; thread: any, one call at a time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace gpumpi {

constexpr const char* kDocBeginMarker = "@@GPUMPI-JSON-BEGIN@@";
constexpr const char* kDocChunkMarker = "@@GPUMPI-JSON@@";
constexpr const char* kDocEndMarker = "@@GPUMPI-JSON-END@@";
/** Payload bytes per chunk line (before moving back to a UTF-8 boundary). */
constexpr size_t kDocChunkBytes = 600;
/** How many times the chunks are written. */
constexpr int kDocCopies = 3;
/** Bytes written between two 2-ms pauses. */
constexpr size_t kDocPauseBytes = 3000;

/** CRC-32 (IEEE 802.3, the zlib one) of `n` bytes. */
uint32_t crc32(const void* data, size_t n);

/** The framed lines for `json` (each ending in '\n'), with the given 8-hex-digit id. */
std::string frameDocument(const std::string& json, const std::string& id);

/**
 * Flush stdio's stdout, then write `json` framed to file descriptor 1, one write(2) per line. Returns false with
 * the reason in `error` (e.g. "write: Broken pipe") when stdout cannot take it.
 */
bool writeFramedDocument(const std::string& json, std::string& error);

}  // namespace gpumpi
