// Schedules of `gpumpi map` (see mapSchedule.hh). Mirrors extension/shared/mapSchedule.ts line for line.
#include "mapSchedule.hh"

#include <algorithm>
#include <map>
#include <set>

namespace gpumpi::map {

std::vector<std::pair<int, int>> selectPairs(const std::vector<std::string>& hostOfRank, bool sampled) {
	std::vector<std::pair<int, int>> out;
	const int n = static_cast<int>(hostOfRank.size());
	std::set<std::pair<std::string, std::string>> seenHostPairs;
	for (int a = 0; a < n; a++) {
		for (int b = a + 1; b < n; b++) {
			if (!sampled || hostOfRank[a] == hostOfRank[b]) {
				out.emplace_back(a, b);
				continue;
			}
			// One representative pair per unordered host pair: the lowest ranks of both hosts.
			auto key = std::minmax(hostOfRank[a], hostOfRank[b]);
			if (seenHostPairs.insert({key.first, key.second}).second) out.emplace_back(a, b);
		}
	}
	return out;
}

std::vector<std::vector<std::pair<int, int>>> tournament(int m) {
	std::vector<std::vector<std::pair<int, int>>> out;
	if (m < 2) return out;
	const int slots = m % 2 == 0 ? m : m + 1;  // slot m (when m is odd) is the bye
	std::vector<int> at(slots);
	for (int r = 0; r < slots - 1; r++) {
		at[0] = 0;
		for (int i = 1; i < slots; i++) at[i] = 1 + (i - 1 + r) % (slots - 1);
		std::vector<std::pair<int, int>> round;
		for (int i = 0; i < slots / 2; i++) {
			const int x = at[i], y = at[slots - 1 - i];
			if (x >= m || y >= m) continue;
			round.emplace_back(std::min(x, y), std::max(x, y));
		}
		out.push_back(std::move(round));
	}
	return out;
}

namespace {

void addRound(Schedule& s, std::vector<std::pair<int, int>> round) {
	if (round.empty()) return;
	std::sort(round.begin(), round.end());
	std::vector<int> idx;
	for (const auto& p : round) {
		idx.push_back(static_cast<int>(s.pairs.size()));
		s.pairs.push_back(p);
	}
	s.roundPairs.push_back(std::move(idx));
}

}  // namespace

Schedule buildSchedule(const std::vector<std::string>& hostOfRank, bool sampled, bool rounds) {
	Schedule s;
	s.rounds = rounds;
	const int n = static_cast<int>(hostOfRank.size());
	if (!rounds) {
		s.pairs = selectPairs(hostOfRank, sampled);
		for (size_t i = 0; i < s.pairs.size(); i++) s.roundPairs.push_back({static_cast<int>(i)});
		return s;
	}
	if (!sampled) {
		for (auto& round : tournament(n)) addRound(s, std::move(round));
		return s;
	}
	// Hosts in the order of their first rank, each with its ranks ascending.
	std::vector<std::vector<int>> members;
	std::map<std::string, size_t> hostIndex;
	for (int r = 0; r < n; r++) {
		auto [it, added] = hostIndex.emplace(hostOfRank[r], members.size());
		if (added) members.emplace_back();
		members[it->second].push_back(r);
	}
	// Intra-host: round k of every host's own tournament, all hosts at once.
	std::vector<std::vector<std::vector<std::pair<int, int>>>> local;
	size_t localRounds = 0;
	for (const auto& m : members) {
		local.push_back(tournament(static_cast<int>(m.size())));
		localRounds = std::max(localRounds, local.back().size());
	}
	for (size_t k = 0; k < localRounds; k++) {
		std::vector<std::pair<int, int>> round;
		for (size_t h = 0; h < members.size(); h++) {
			if (k >= local[h].size()) continue;
			for (const auto& [x, y] : local[h][k]) round.emplace_back(members[h][x], members[h][y]);
		}
		addRound(s, std::move(round));
	}
	// Between hosts: a tournament over the hosts; each host's local ranks take turns round by round.
	const auto hostRounds = tournament(static_cast<int>(members.size()));
	for (size_t r = 0; r < hostRounds.size(); r++) {
		std::vector<std::pair<int, int>> round;
		for (const auto& [x, y] : hostRounds[r]) {
			const int a = members[x][r % members[x].size()], b = members[y][r % members[y].size()];
			round.emplace_back(std::min(a, b), std::max(a, b));
		}
		addRound(s, std::move(round));
	}
	return s;
}

}  // namespace gpumpi::map
