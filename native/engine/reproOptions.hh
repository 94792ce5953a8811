// The options of the two reproducers as the CLI validated them (native/cli/reproCmd.cc): what `gpumpi repro ipc` and
// `gpumpi repro fallback` run with. Their own header, below both the command (reproIpc.hh, reproFallback.hh: the
// whole run and its report) and the per-rank work (reproIpcRun.hh, reproTransfer.hh), which both read them.
#pragma once
#include <string>
#include <vector>

namespace gpumpi::repro {

/** Options of one `repro ipc` run (already validated by the CLI). */
struct IpcOptions {
	/** direct | bounce | host | send-from-import | pool | vmm | crash-test */
	std::string variant = "direct";
	unsigned long long sizeBytes = 64ull << 20;
	/** device | host */
	std::string memory = "device";
	/**
	 * "" | crash | hang | crash-fraction=F : a deliberate real crash (SIGSEGV in rank 1), a fake hang (rank 1 sleeps),
	 * or a real crash in a deterministic fraction F of the trials (see injectedCrash, reproIpcRun.hh).
	 */
	std::string inject;
	/** crash-fraction: F in [0, 1] (negative: not given). */
	double crashFraction = -1;
	/**
	 * wrong-fraction=F: in the trials the same draw selects (injectedCrash), the owner whose importer the draw names
	 * (rank 0 for 1, rank 2 for 3) overwrites the received data before verifying it: a deliberate wrong result.
	 */
	double wrongFraction = -1;
	/** crash-fraction: the seed (--inject-seed) and the runner's 1-based trial index (--trial). */
	unsigned long long injectSeed = 1;
	unsigned long long trial = 0;
	bool json = false;
};

/** Options of one `repro fallback` run (already validated by the CLI). */
struct FallbackOptions {
	std::vector<unsigned long long> sizes;  // bytes, each a multiple of 4
	std::vector<std::string> modes;         // mpi | staged | host | lib-… (libModes.hh)
	unsigned long long chunkBytes = 16ull << 20;
	int nbuf = 4;
	std::string memory = "device";  // device | host
	int iters = 3;
	bool json = false;
};

/** Largest single MPI message the fallback reproducer posts; bigger transfers are split, as users must (count is an int). */
constexpr unsigned long long kMaxMessageBytes = 1ull << 30;

}  // namespace gpumpi::repro
