// How many ranks the merged reports read at once (RankJobs), within the memory this process may
// still take (MemoryRoom: what the system, the cgroup and the address-space limit leave).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>

namespace cupmon::decoder {

// Memory this process may still take: the least of MemAvailable (/proc/meminfo), what its memory
// cgroup and those above it leave (v2 memory.max - memory.current, v1 memory.limit_in_bytes -
// memory.usage_in_bytes) and what the address-space limit (RLIMIT_AS) leaves; 0 when none of
// them is known. The parsers are exposed for the tests.
uint64_t MemoryRoom();
uint64_t MeminfoAvailable(const std::string& meminfo);                 // 0: no MemAvailable line
uint64_t CgroupRoom(const std::string& max, const std::string& current);  // 0: no limit or unknown
// The least room of the memory cgroups that `self_cgroup` (the text of /proc/self/cgroup) names
// and those above them, their files read under `root` (/sys/fs/cgroup; v1's at root/memory); 0
// when none is limited or known.
uint64_t CgroupsRoom(const std::string& self_cgroup, const std::string& root);

// Ranks a merged report reads at once (RankReadOptions::jobs; 0 chooses): as many as the CPUs hold
// reads of `threads_per_read` threads (DecodeThreads()), at most kMaxRankJobs and the ranks: 8 on
// 16 CPUs, 1 on 2, where two reads at once gain no wall time (one read's two threads already use
// both CPUs) and take twice the memory. And at
// most one read per kBytesPerRankRead of `room` (MemoryRoom(); 0: not known, no bound): above a
// read's peak on synthetic ranks, with room for the names and windows real ones hold.
// An asked number is taken as asked.
inline constexpr size_t kMaxRankJobs = 8;
inline constexpr uint64_t kBytesPerRankRead = uint64_t{128} << 20;
inline size_t RankJobs(size_t ranks, size_t asked, int threads_per_read, uint64_t room) {
  if (asked) return std::min(asked, ranks);
  const size_t cpus = std::max(1u, std::thread::hardware_concurrency());
  size_t fit = std::max<size_t>(1, cpus / static_cast<size_t>(std::max(threads_per_read, 1)));
  if (room) fit = std::min<size_t>(fit, std::max<uint64_t>(1, room / kBytesPerRankRead));
  return std::min({fit, kMaxRankJobs, ranks});
}
inline size_t RankJobs(size_t ranks, size_t asked, int threads_per_read) {
  return RankJobs(ranks, asked, threads_per_read, asked ? 0 : MemoryRoom());
}

}  // namespace cupmon::decoder
