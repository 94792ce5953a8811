// The CUDA half of `gpumpi inspect`: what the CUDA driver API (dlopened by common/cudaDriver) reports in one rank,
// and making a context current BEFORE MPI_Init. No MPI here, so it can run before MPI_Init.
// Why before MPI_Init: Open MPI's CUDA accelerator component looks for a current context during MPI_Init and falls
// back to the `null` accelerator (device pointers treated as host memory) when there is none
// (shared/knowledge/observed.md B). Thread: call from the main thread only (it changes the thread's current context).
#pragma once
#include <string>
#include <vector>

#include "json.hh"

namespace gpumpi::engine {

/** One device as cuDeviceGet* reports it (fields match EngineCudaDevice in extension/shared/engineSchema.ts). */
struct CudaDeviceInfo {
	int ordinal = 0;
	std::string name;
	std::string pciBusId;
	std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" or ""
	unsigned long long totalMemBytes = 0;
	std::string computeCapability;  // "9.0" or ""
	std::string computeMode;        // CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: "default", "exclusive_process", ... or ""
	// CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED (116) and DMA_BUF_SUPPORTED (124): 1 / 0, or -1 when the driver does
	// not answer (an older driver, a fake): what a NIC could use to reach this GPU's memory (issue 16 item 6).
	int gpuDirectRdma = -1;
	int dmaBuf = -1;
};

/** Everything the CUDA section of one rank's record holds (EngineCuda). */
struct CudaReport {
	bool driverLoaded = false;
	std::string library;  // resolved path, or the dlopen error
	std::string error;    // "" when every call succeeded; otherwise "; "-joined failures
	int driverVersion = 0;
	int initResult = -1;
	int deviceCount = 0;
	std::vector<CudaDeviceInfo> devices;
	std::vector<std::vector<bool>> p2p;
	int selectedDevice = -1;
	bool initialisedBeforeMpiInit = false;
};

/**
 * Load the driver, cuInit(0), describe every device, then retain the primary context of device
 * (localRank % deviceCount) and make it current on the calling thread. Never throws; failures land in `error`.
 * The retained context stays current until releaseCuda() (call it after MPI_Finalize).
 */
CudaReport probeAndSelectCuda(int localRank);

/** Release the primary context retained by probeAndSelectCuda (no-op when none was retained). */
void releaseCuda(const CudaReport& report);

/** Append the report as the JSON object EngineCuda (the writer must be positioned for a value). */
void writeCudaJson(JsonWriter& w, const CudaReport& report);

/** "GPU-" + 16 bytes formatted 8-4-4-4-12 in lower-case hex, as nvidia-smi prints UUIDs. */
std::string formatGpuUuid(const unsigned char bytes[16]);

}  // namespace gpumpi::engine
