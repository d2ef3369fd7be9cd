// How much memory the merged reports may still take for ranks read at once (memory_room.h,
// RankJobs): what the system, the cgroup and the address-space limit leave.
#include "memory_room.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace cupmon::decoder {
namespace {

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return in ? text.str() : std::string();
}

// The memory cgroup directories named in `self_cgroup` (the text of /proc/self/cgroup), innermost
// first: cgroup v2 ("0::/path", the unified hierarchy at `root`) and v1 ("N:memory:/path", or
// memory among other controllers, at `root`/memory), with the names of their limit and usage
// files; each directory's parents follow it up to the hierarchy's root.
struct CgroupFiles {
  std::string dir, limit, usage;
};
std::vector<CgroupFiles> CgroupDirs(const std::string& self_cgroup, const std::string& root_dir) {
  std::vector<CgroupFiles> out;
  std::istringstream lines(self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    const std::string path = line.substr(second + 1);
    std::string root, limit, usage;
    if (line.rfind("0::", 0) == 0) {
      root = root_dir;
      limit = "memory.max";
      usage = "memory.current";
    } else if (controllers.find(",memory,") != std::string::npos) {
      root = root_dir + "/memory";
      limit = "memory.limit_in_bytes";
      usage = "memory.usage_in_bytes";
    } else {
      continue;
    }
    for (std::string p = path; !p.empty() && p != "/"; p = p.substr(0, p.rfind('/')))
      out.push_back({root + p, limit, usage});
  }
  return out;
}

}  // namespace

uint64_t MeminfoAvailable(const std::string& meminfo) {
  std::istringstream lines(meminfo);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    uint64_t kib = 0;
    std::istringstream(line.substr(13)) >> kib;
    return kib * 1024;
  }
  return 0;
}

uint64_t CgroupRoom(const std::string& max, const std::string& current) {
  uint64_t limit = 0, used = 0;
  if (max.empty() || max.rfind("max", 0) == 0 || !(std::istringstream(max) >> limit)) return 0;
  if (limit >= uint64_t{1} << 60) return 0;  // v1's "no limit" (a page-rounded INT64_MAX)
  if (!(std::istringstream(current) >> used)) return 0;
  return limit > used ? limit - used : 1;  // 1: none left, yet known
}

namespace {
// `room` lowered to `other` when `other` is known (not 0) and tighter.
void Tighter(uint64_t* room, uint64_t other) {
  if (other) *room = *room ? std::min(*room, other) : other;
}
}  // namespace

uint64_t CgroupsRoom(const std::string& self_cgroup, const std::string& root) {
  uint64_t room = 0;
  for (const CgroupFiles& c : CgroupDirs(self_cgroup, root))
    Tighter(&room,
            CgroupRoom(ReadSmallFile(c.dir + "/" + c.limit), ReadSmallFile(c.dir + "/" + c.usage)));
  return room;
}

uint64_t MemoryRoom() {
  uint64_t room = MeminfoAvailable(ReadSmallFile("/proc/meminfo"));
  // The cgroup and those above it: the tightest limit counts.
  Tighter(&room, CgroupsRoom(ReadSmallFile("/proc/self/cgroup"), "/sys/fs/cgroup"));
  // The address-space limit (ulimit -v) against what the process maps now.
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    std::istringstream statm(ReadSmallFile("/proc/self/statm"));
    uint64_t pages = 0;
    statm >> pages;
    const long page = sysconf(_SC_PAGESIZE);
    const uint64_t mapped = pages * static_cast<uint64_t>(page > 0 ? page : 4096);
    Tighter(&room, as.rlim_cur > mapped ? as.rlim_cur - mapped : 1);
  }
  return room;
}

}  // namespace cupmon::decoder
