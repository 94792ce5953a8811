// `gpumpi repro ipc`: the IPC-pointer scenario of shared/seeds (Open MPI users list, "GPU-aware MPI"): 4 ranks; ranks
// 0 and 2 allocate GPU memory and export it (cuIpcGetMemHandle), rank 1 imports rank 0's allocation and rank 3 imports
// rank 2's; rank 0 sends to rank 3 and rank 2 to rank 1, each receiver receiving INTO THE IMPORTED POINTER (or a
// variant). Verification is word by word in the owner's memory. One variant per process run: the runner isolates
// variants by starting one mpirun each (docs/repro-schema.md). The whole run (MPI_Init .. MPI_Finalize) lives here.
#pragma once
#include <string>

namespace gpumpi::repro {

/** Options of one `repro ipc` run (already validated by the CLI). */
struct IpcOptions {
	/** direct | bounce | host | send-from-import | crash-test */
	std::string variant = "direct";
	unsigned long long sizeBytes = 64ull << 20;
	/** device | host */
	std::string memory = "device";
	/**
	 * "" | crash | hang | crash-fraction=F : a deliberate real crash (SIGSEGV in rank 1), a fake hang (rank 1 sleeps),
	 * or a real crash in a deterministic fraction F of the trials (see injectedCrash).
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

/** Variants the CLI accepts (crash-test is a test hook: direct + inject crash). */
bool isIpcVariant(const std::string& v);

/** What --inject crash-fraction does in one trial. */
struct InjectedCrash {
	bool crash = false;
	/** 1: SIGSEGV (store through 0x10), 3: abort() (SIGABRT). */
	int rank = -1;
	/** The uniform draw in [0, 1) compared with the fraction (printed, so a test can check it). */
	double draw = 0;
};

/**
 * Deterministic decision from (seed, trial): z = splitmix64(seed XOR trial * 0x9E3779B97F4A7C15); draw = top 53 bits
 * of z / 2^53; crash (or, with wrong-fraction, wrong data) when draw < F; the lowest bit of z picks SIGSEGV in rank 1
 * (0) or abort() in rank 3 (1); with wrong-fraction the owner of that importer (rank 0 or 2) overwrites its data.
 */
InjectedCrash injectedCrash(const IpcOptions& opts);

/** Run one variant in this rank; returns the process exit code (0 even when the variant's outcome is bad). */
int runIpc(const IpcOptions& opts);

}  // namespace gpumpi::repro
