// `gpumpi inspect`'s memory IPC capability probe, per rank: a small buffer allocated each way applications do
// (common/gpuMemory: cuMemAlloc, the default pool, explicit pools with and without POSIX-FD export, VMM with and
// without) and, for each, what the driver says (legacy-IPC capable, allowed handle types, from a pool) and whether
// cuIpcGetMemHandle — the export that UCX < 1.22's cuda_ipc and Open MPI's smcuda rely on — succeeds.
// JSON: the rank record's `ipc_memory` (docs/engine-schema.md; EngineIpcMemory in extension/shared/engineSchema.ts).
// Thread: main thread, with the selected device's context current (after probeAndSelectCuda). Never throws.
#pragma once
#include <string>
#include <vector>

#include "json.hh"

namespace gpumpi::engine {

struct IpcMemProbe {
	std::string kind;   // memKindName
	std::string calls;  // memKindCalls
	bool allocated = false;
	std::string allocError;  // "call: CUDA_ERROR_X: text"
	int attrResult = -1;     // cuPointerGetAttributes
	bool legacyIpcCapable = false;
	unsigned long long allowedHandleTypes = 0;
	bool fromPool = false;
	int ipcGetResult = -1;   // cuIpcGetMemHandle (-1: not tried)
	std::string ipcGetError;
};

struct IpcMemReport {
	bool probed = false;
	std::string skipped;  // why not (no GPU selected, GPUMPI_INSPECT_IPC_MEM=0)
	unsigned long long bytes = 0;
	int poolsSupported = -1, vmmSupported = -1, posixFdSupported = -1;  // device attributes (-1: unknown)
	int poolHandleTypes = -1;  // CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES bitmask
	std::vector<IpcMemProbe> probes;
};

/** Probe every MemKind on `device` (-1: skipped). Set GPUMPI_INSPECT_IPC_MEM=0 to skip. */
IpcMemReport probeIpcMemory(int device);

void writeIpcMemJson(JsonWriter& w, const IpcMemReport& r);

}  // namespace gpumpi::engine
