// What the long-running monitor tests read of their own process: resident memory, threads, and
// one Prometheus scrape of a monitor's endpoint.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "../sanitized.h"

namespace cupmon::testing {

inline int64_t RssBytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  in >> size >> resident;
  return static_cast<int64_t>(resident) * sysconf(_SC_PAGESIZE);
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
