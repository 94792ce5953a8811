// Argument helpers shared by the `gpumpi` subcommands (cli/*Cmd.cc): the usage-error line, option values, lists,
// whole numbers, and the one size syntax every command takes. Nothing here starts MPI: arguments are checked before
// MPI_Init, so a usage error never starts it.
#pragma once
#include <string>
#include <vector>

namespace gpumpi::cli {

/** The exit status of a usage error. */
constexpr int kUsageExit = 2;

/** Prints "gpumpi <command>: <msg>", a blank line and the usage text on stderr; returns kUsageExit. */
int usageError(const char* command, const std::string& msg, const char* usage);

/** The value after option args[i] (i advances to it); false when args[i] is the last argument. */
bool valueOf(const std::vector<std::string>& args, size_t& i, std::string& out);

/** s cut at every sep; empty items are kept ("a,,b" -> "a", "", "b"), so a caller rejects them. */
std::vector<std::string> split(const std::string& s, char sep = ',');

/** A whole number lo..hi (strtol: nothing may follow it). */
bool parseInt(const std::string& text, long lo, long hi, int& out);

/**
 * The size syntax of every command, the same as gpumpi-doctor's (extension/cli/reproCli.ts, /^\d+[KMG]?$/): digits
 * with an optional binary unit K, M or G: "4096", "64K", "64M", "1G". False on anything else or on overflow.
 */
bool parseSize(const std::string& text, unsigned long long& out);

/** "1M..1G" (x4 steps, the upper end included) or "1M,64M,1G": sizes > 0, multiples of 4, at most 64 of them. */
bool parseSizeList(const std::string& text, std::vector<unsigned long long>& out, std::string& error);

}  // namespace gpumpi::cli
