// Test program for cupmon-run (tests/tools/cupmon_run_test.py): a program that never uses CUDA, as
// the shell scripts and helper processes of a job are. It prints its thread count, its open file
// descriptors, its caught-signal mask and whether libcupmon-preload.so is mapped, so that the test
// can compare a run with it preloaded (cupmon-run's default) against one without.
#include <dirent.h>
#include <link.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace {

int CountEntries(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) ++n;
  closedir(d);
  return n;
}

std::string StatusField(const std::string& field) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(field + ":", 0) == 0) return line.substr(line.find_first_not_of(" \t", field.size() + 1));
  return "?";
}

bool CupmonMapped() {
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        const char* name = info->dlpi_name ? info->dlpi_name : "";
        const size_t n = std::strlen(name);
        constexpr size_t kLen = sizeof("libcupmon-preload.so") - 1;
        if (n >= kLen && std::strcmp(name + n - kLen, "libcupmon-preload.so") == 0)
          *static_cast<bool*>(data) = true;
        return 0;
      },
      &found);
  return found;
}

}  // namespace

int main() {
  // /proc/self/fd counts the descriptor opendir holds while it reads: one more than are open.
  std::printf("threads %d fds %d sigcgt %s cupmon %d\n", CountEntries("/proc/self/task"),
              CountEntries("/proc/self/fd") - 1, StatusField("SigCgt").c_str(), CupmonMapped() ? 1 : 0);
  return 0;
}
