#include "args.hh"

#include <cstdio>
#include <cstdlib>

namespace gpumpi::cli {

int usageError(const char* command, const std::string& msg, const char* usage) {
	std::fprintf(stderr, "gpumpi %s: %s\n\n%s", command, msg.c_str(), usage);
	return kUsageExit;
}

bool valueOf(const std::vector<std::string>& args, size_t& i, std::string& out) {
	if (i + 1 >= args.size()) return false;
	out = args[++i];
	return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
	std::vector<std::string> out;
	size_t start = 0;
	while (true) {
		size_t p = s.find(sep, start);
		out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
		if (p == std::string::npos) return out;
		start = p + 1;
	}
}

bool parseInt(const std::string& text, long lo, long hi, int& out) {
	char* end = nullptr;
	long n = std::strtol(text.c_str(), &end, 10);
	if (text.empty() || !end || *end || n < lo || n > hi) return false;
	out = static_cast<int>(n);
	return true;
}

bool parseSize(const std::string& text, unsigned long long& out) {
	size_t i = 0;
	unsigned long long v = 0;
	while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
		unsigned long long nv = v * 10 + static_cast<unsigned>(text[i] - '0');
		if (nv / 10 != v) return false;
		v = nv;
		i++;
	}
	if (i == 0) return false;
	const std::string unit = text.substr(i);
	int shift = 0;
	if (unit == "K") shift = 10;
	else if (unit == "M") shift = 20;
	else if (unit == "G") shift = 30;
	else if (!unit.empty()) return false;
	if (shift && v > (~0ull >> shift)) return false;
	out = v << shift;
	return true;
}

bool parseSizeList(const std::string& text, std::vector<unsigned long long>& out, std::string& error) {
	out.clear();
	size_t dots = text.find("..");
	if (dots != std::string::npos) {
		unsigned long long lo = 0, hi = 0;
		if (!parseSize(text.substr(0, dots), lo) || !parseSize(text.substr(dots + 2), hi) || lo == 0 || hi < lo) {
			error = "bad size range '" + text + "' (expected e.g. 1M..1G)";
			return false;
		}
		for (unsigned long long s = lo; s <= hi; s *= 4) {
			out.push_back(s);
			if (s > (~0ull >> 3)) break;
		}
		if (out.back() != hi) out.push_back(hi);
	} else {
		for (const std::string& item : split(text)) {
			unsigned long long v = 0;
			if (!parseSize(item, v) || v == 0) {
				error = "bad size '" + item + "' in '" + text + "'";
				return false;
			}
			out.push_back(v);
		}
	}
	for (auto s : out)
		if (s % 4) {
			error = "sizes must be multiples of 4 bytes (" + std::to_string(s) + ")";
			return false;
		}
	if (out.size() > 64) {
		error = "too many sizes (" + std::to_string(out.size()) + ", at most 64)";
		return false;
	}
	return true;
}

}  // namespace gpumpi::cli
