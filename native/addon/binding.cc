// Node-API glue only: argument checks, queueing probeHost() on the libuv threadpool, converting its result to the
// JS shapes of extension/shared/addonTypes.ts. Built with NAPI_DISABLE_CPP_EXCEPTIONS: errors are raised with
// ThrowAsJavaScriptException / promise rejection, and no C++ exception crosses into Node.
#include <napi.h>

#include <exception>
#include <string>

#include "probe.hh"
#include "version.hh"

namespace {

using gpumpi::addon::HostProbe;

Napi::Object toJs(Napi::Env env, const gpumpi::addon::LibraryProbe& l) {
	Napi::Object o = Napi::Object::New(env);
	o.Set("kind", l.kind);
	o.Set("soname", l.soname);
	o.Set("loaded", l.loaded);
	o.Set("path", l.path);
	o.Set("version", l.version);
	o.Set("error", l.error);
	return o;
}

Napi::Value toJs(Napi::Env env, const std::optional<gpumpi::addon::NvmlInfo>& nvml) {
	if (!nvml) return env.Null();
	Napi::Object o = Napi::Object::New(env);
	o.Set("error", nvml->error);
	o.Set("driver_version", nvml->driverVersion);
	o.Set("cuda_driver_version", nvml->cudaDriverVersion);
	Napi::Array devices = Napi::Array::New(env, nvml->devices.size());
	for (size_t i = 0; i < nvml->devices.size(); ++i) {
		const auto& d = nvml->devices[i];
		Napi::Object dev = Napi::Object::New(env);
		dev.Set("index", d.index);
		dev.Set("name", d.name);
		dev.Set("uuid", d.uuid);
		dev.Set("pci_bus_id", d.pciBusId);
		Napi::Array links = Napi::Array::New(env, d.nvlinks.size());
		for (size_t k = 0; k < d.nvlinks.size(); ++k) {
			Napi::Object link = Napi::Object::New(env);
			link.Set("link", d.nvlinks[k].link);
			link.Set("active", d.nvlinks[k].active);
			link.Set("remote_pci_bus_id", d.nvlinks[k].remotePciBusId);
			links.Set(static_cast<uint32_t>(k), link);
		}
		dev.Set("nvlinks", links);
		devices.Set(static_cast<uint32_t>(i), dev);
	}
	o.Set("devices", devices);
	return o;
}

// Execute() runs on a threadpool thread and touches no JS value; OnOK/OnError run on the JS thread.
class ProbeWorker : public Napi::AsyncWorker {
public:
	explicit ProbeWorker(Napi::Env env) : Napi::AsyncWorker(env, "gpumpi.probe"), mDeferred(Napi::Promise::Deferred::New(env)) {}
	Napi::Promise promise() const { return mDeferred.Promise(); }

protected:
	void Execute() override {
		try {
			mResult = gpumpi::addon::probeHost();
		} catch (const std::exception& e) {
			SetError(std::string("probe failed: ") + e.what());
		} catch (...) {
			SetError("probe failed: unknown C++ exception");
		}
	}
	void OnOK() override {
		Napi::Env env = Env();
		Napi::HandleScope scope(env);
		Napi::Object result = Napi::Object::New(env);
		Napi::Array libs = Napi::Array::New(env, mResult.libraries.size());
		for (size_t i = 0; i < mResult.libraries.size(); ++i) libs.Set(static_cast<uint32_t>(i), toJs(env, mResult.libraries[i]));
		result.Set("libraries", libs);
		result.Set("nvml", toJs(env, mResult.nvml));
		result.Set("elapsed_ms", mResult.elapsedMs);
		mDeferred.Resolve(result);
	}
	void OnError(const Napi::Error& e) override { mDeferred.Reject(e.Value()); }

private:
	Napi::Promise::Deferred mDeferred;
	HostProbe mResult;
};

Napi::Value Probe(const Napi::CallbackInfo& info) {
	Napi::Env env = info.Env();
	if (info.Length() != 0) {
		Napi::TypeError::New(env, "Usage: probe()").ThrowAsJavaScriptException();
		return env.Null();
	}
	auto* worker = new ProbeWorker(env);  // deleted by Node-API after OnOK/OnError
	Napi::Promise p = worker->promise();
	worker->Queue();
	return p;
}

Napi::Value Version(const Napi::CallbackInfo& info) {
	Napi::Env env = info.Env();
	if (info.Length() != 0) {
		Napi::TypeError::New(env, "Usage: version()").ThrowAsJavaScriptException();
		return env.Null();
	}
	return Napi::String::New(env, GPUMPI_VERSION);
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
	exports.Set("probe", Napi::Function::New(env, Probe, "probe"));
	exports.Set("version", Napi::Function::New(env, Version, "version"));
	return exports;
}

}  // namespace

NODE_API_MODULE(gpumpi_addon, Init)
