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
	/** Length of the valid UTF-8 sequence starting at s[i] (2–4), or 0 when it is not one. */
	static size_t utf8Length(const std::string& s, size_t i) {
		const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
		const unsigned char c = b(i);
		size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
		if (n == 0 || i + n > s.size()) return 0;
		for (size_t k = 1; k < n; k++) if ((b(i + k) & 0xC0) != 0x80) return 0;
		if (n == 3 && ((c == 0xE0 && b(i + 1) < 0xA0) || (c == 0xED && b(i + 1) >= 0xA0))) return 0;  // overlong, surrogate
		if (n == 4 && ((c == 0xF0 && b(i + 1) < 0x90) || (c == 0xF4 && b(i + 1) >= 0x90))) return 0;  // overlong, > U+10FFFF
		return n;
	}
	void writeString(const std::string& s) {
		mOut += '"';
		for (size_t i = 0; i < s.size(); i++) {
			const unsigned char c = static_cast<unsigned char>(s[i]);
			if (c >= 0x80) {
				// Valid UTF-8 passes through; an invalid byte becomes U+FFFD, so every document is valid UTF-8.
				const size_t n = utf8Length(s, i);
				if (n == 0) {
					mOut += "\\ufffd";
				} else {
					mOut.append(s, i, n);
					i += n - 1;
				}
				continue;
			}
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
						mOut += static_cast<char>(c);
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
