// What the long-running monitor tests read of their own process: resident memory, threads, and
// one Prometheus scrape of a monitor's endpoint.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "../sanitized.h"

namespace cupmon::testing {

inline int64_t RssBytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
}

// Resident bytes of each mapping, keyed by its start address, permissions and name ("[heap]", a
// file, or nothing for anonymous memory such as malloc's per-thread arenas).
inline std::map<std::string, int64_t> RssByMapping() {
  std::map<std::string, int64_t> rss;
  std::ifstream in("/proc/self/smaps");
  std::string line, mapping;
  while (std::getline(in, line)) {
    if (line.starts_with("Rss:")) {
      std::istringstream fields(line.substr(4));
      int64_t kib = 0;
      fields >> kib;
      rss[mapping] += kib * 1024;
    } else if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
               line.find(' ') != std::string::npos && line.find(':') > line.find(' ')) {
      // "start-end perms offset dev inode [name]".
      std::istringstream fields(line);
      std::string range, perms, offset, dev, inode, name;
      fields >> range >> perms >> offset >> dev >> inode;
      std::getline(fields, name);
      const size_t first = name.find_first_not_of(' ');
      // The start only: a mapping that grows (the heap, an arena) keeps its start.
      mapping = range.substr(0, range.find('-')) + " " + perms +
                (first == std::string::npos ? "" : " " + name.substr(first));
    }
  }
  return rss;
}

// The mappings whose resident size changed by at least `threshold` bytes from `before` to
// `after`, one per line with the change in MiB: what a failed RSS check prints.
inline std::string RssChanges(const std::map<std::string, int64_t>& before,
                              const std::map<std::string, int64_t>& after,
                              int64_t threshold = 256 << 10) {
  std::ostringstream out;
  std::map<std::string, int64_t> change = after;
  for (const auto& [mapping, bytes] : before) change[mapping] -= bytes;
  for (const auto& [mapping, bytes] : change)
    if (bytes >= threshold || bytes <= -threshold)
      out << "  " << (bytes > 0 ? "+" : "") << static_cast<double>(bytes) / 1048576.0 << " MiB  "
          << mapping << "\n";
  return out.str();
}

inline size_t ThreadCount() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) (void)e, ++n;
  return n;
}

// One GET /metrics over loopback; the body, or empty on any failure.
inline std::string Scrape(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[16384];
      for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) reply.append(buf, n);
    }
  }
  ::close(fd);
  const size_t body = reply.find("\r\n\r\n");
  return reply.starts_with("HTTP/1.1 200") && body != std::string::npos ? reply.substr(body + 4)
                                                                        : std::string();
}

}  // namespace cupmon::testing
