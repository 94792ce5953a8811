// Minimal streaming JSON writer for the engine's machine-readable output (no dependencies).
// Usage: JsonWriter w; w.beginObject(); w.key("a").value(1); w.endObject(); std::string s = w.str();
// Not thread-safe; one writer per document.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace gpumpi {

class JsonWriter {
public:
	JsonWriter& beginObject() { sep(); mOut += '{'; mFirst.push_back(true); return *this; }
	JsonWriter& endObject() { mOut += '}'; mFirst.pop_back(); return *this; }
	JsonWriter& beginArray() { sep(); mOut += '['; mFirst.push_back(true); return *this; }
	JsonWriter& endArray() { mOut += ']'; mFirst.pop_back(); return *this; }
	JsonWriter& key(const std::string& k) { sep(); writeString(k); mOut += ':'; mAfterKey = true; return *this; }
	JsonWriter& value(const std::string& s) { sep(); writeString(s); return *this; }
	JsonWriter& value(const char* s) { if (!s) return null(); return value(std::string(s)); }
	JsonWriter& value(bool b) { sep(); mOut += b ? "true" : "false"; return *this; }
	JsonWriter& value(int v) { return value(static_cast<long long>(v)); }
	JsonWriter& value(long v) { return value(static_cast<long long>(v)); }
	JsonWriter& value(unsigned v) { return value(static_cast<unsigned long long>(v)); }
	JsonWriter& value(long long v) { sep(); mOut += std::to_string(v); return *this; }
	JsonWriter& value(unsigned long v) { return value(static_cast<unsigned long long>(v)); }
	JsonWriter& value(unsigned long long v) { sep(); mOut += std::to_string(v); return *this; }
	JsonWriter& value(double v) {
		sep();
		if (!std::isfinite(v)) { mOut += "null"; return *this; }
		char buf[64];
		std::snprintf(buf, sizeof buf, "%.17g", v);
		mOut += buf;
		return *this;
	}
	JsonWriter& null() { sep(); mOut += "null"; return *this; }
	/** Insert an already-serialised JSON value verbatim (caller guarantees validity). */
	JsonWriter& raw(const std::string& json) { sep(); mOut += json; return *this; }
	const std::string& str() const { return mOut; }

private:
	void sep() {
		if (mAfterKey) { mAfterKey = false; return; }
		if (!mFirst.empty()) {
			if (!mFirst.back()) mOut += ',';
			mFirst.back() = false;
		}
	}
	void writeString(const std::string& s) {
		mOut += '"';
		for (unsigned char c : s) {
			switch (c) {
				case '"': mOut += "\\\""; break;
				case '\\': mOut += "\\\\"; break;
				case '\n': mOut += "\\n"; break;
				case '\r': mOut += "\\r"; break;
				case '\t': mOut += "\\t"; break;
				default:
					if (c < 0x20) {
						char buf[8];
						std::snprintf(buf, sizeof buf, "\\u%04x", c);
						mOut += buf;
					} else {
						mOut += static_cast<char>(c);  // UTF-8 passes through; invalid bytes are the reader's concern
					}
			}
		}
		mOut += '"';
	}
	std::string mOut;
	std::vector<bool> mFirst;
	bool mAfterKey = false;
};

}  // namespace gpumpi
