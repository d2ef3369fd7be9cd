// cupmon-run: runs a program with libcupmon.so injected through CUDA_INJECTION64_PATH and, unless
// --no-preload, libcupmon-preload.so (found beside it) in LD_PRELOAD, so that cupmon shares CUPTI
// with torch.profiler and other CUPTI clients (docs/COEXISTENCE.md), configured by CUPMON_* variables built from its options. It execs
// the program, so the exit status is the program's own.
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cupmon/format/build_info.h"
#include "cupmon/monitor/cupti_library.h"

namespace {

std::string SelfDir() {
  char buf[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  return std::filesystem::path(std::string(buf, static_cast<size_t>(n))).parent_path().string();
}

// --lib, then next to this binary, then the install layout (../lib), then the build tree.
std::string FindLibrary(const std::string& explicit_path) {
  // Absolute: children that change directory must still find it (LD_PRELOAD is inherited).
  if (!explicit_path.empty()) return std::filesystem::absolute(explicit_path).lexically_normal();
  const std::string dir = SelfDir();
  for (const std::string& c : {dir + "/libcupmon.so", dir + "/../lib/libcupmon.so",
                               std::string(CUPMON_BUILD_LIBRARY)}) {
    if (access(c.c_str(), R_OK) == 0) return std::filesystem::absolute(c).lexically_normal();
  }
  return "";
}

// ld.so splits LD_PRELOAD at ':' and ' '.
std::vector<std::string> PreloadEntries(const std::string& value) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : value) {
    if (c == ':' || c == ' ') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// The sanitizer runtime this cupmon-run was built with (an ASan or TSan build of cupmon): its
// libcupmon.so is instrumented too and needs the runtime first in the initial library list of an
// uninstrumented program. Empty in a normal build.
std::string SanitizerRuntime() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) noexcept -> int {
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        const std::string base = std::filesystem::path(name).filename().string();
        if (base.starts_with("libasan.so") || base.starts_with("libtsan.so")) {
          *static_cast<std::string*>(data) = name;
          return 1;
        }
        return 0;
      },
      &found);
  return found;
#else
  return "";
#endif
}

// LD_PRELOAD for the program: the user's entries stay in front, in their order (an ASan runtime of
// the user's must stay first), cupmon's library goes after them; the sanitizer runtime of a
// sanitizer build goes first. Nothing is added twice (cupmon-run under cupmon-run).
std::string PreloadValue(const char* old, const std::string& library) {
  std::vector<std::string> entries = PreloadEntries(old ? old : "");
  auto has = [&](const std::string& path) {
    for (const std::string& e : entries) {
      std::error_code ec;
      if (e == path || std::filesystem::equivalent(e, path, ec)) return true;
    }
    return false;
  };
  const std::string runtime = SanitizerRuntime();
  if (!runtime.empty() && !has(runtime)) entries.insert(entries.begin(), runtime);
  if (!has(library)) entries.push_back(library);
  std::string value;
  for (const std::string& e : entries) value += (value.empty() ? "" : ":") + e;
  return value;
}

// The libcupti that cupmon's loader would open in the program (the first candidate that loads
// here, with the same environment): NVTX's injection must be that library, since a second copy
// of libcupti in one process would keep its own state. "" when none loads.
std::string CuptiForNvtx() {
  for (const std::string& c : cupmon::CuptiLibraryCandidates()) {
    void* lib = dlopen(c.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (!lib) continue;
    dlclose(lib);
    return c;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Run a program under the cupmon always-on CUDA activity monitor."};
  app.footer(
      "Examples:\n"
      "  cupmon-run -- python3 train.py --epochs 3\n"
      "  cupmon-run -o /data/cupmon --file-size 128M --retention-bytes 20G -- ./my_cuda_app\n"
      "  cupmon-run --kinds concurrent_kernel,memcpy,memset,memcpy2 -- ./app\n"
      "  cupmon-run --no-preload -- ./app   # injection only (docs/COEXISTENCE.md)\n"
      "  cupmon-run --no-nvtx -- ./app   # leave NVTX_INJECTION64_PATH alone\n"
      "  cupmon-run --auto-window -- python3 train.py   # a window at a step 3x the median\n"
      "  cupmon-run --auto-window-factor 2 --auto-window-min-gap 30m -- python3 train.py\n"
      "  CUPMON_CUPTI_PER_THREAD_BUFFERS=0 cupmon-run -- ./app   # a CUPTI activity attribute\n"
      "    (also CUPMON_CUPTI_DEVICE_BUFFER_SIZE, _PREALLOCATE, _POOL_LIMIT: docs/CONTROL.md)\n"
      "  cupmon-run --auto-window-anchor kernel:multi_tensor_apply -- python3 train.py\n"
      "  cupmon-run --auto-window-by own -- torchrun --nproc-per-node 8 train.py\n"
      "      # a window on the rank whose work + host gap grew, not on those that waited for it\n"
      "  cupmon-run --auto-window --flush-ms 5 --buffer-size 256K -- python3 train.py\n"
      "      # the window within a few steps of the slow one (a slow step is seen at the flush\n"
      "      # after it; 1000 ms by default); small buffers, as each flush hands back every one\n"
      "NVTX ranges (torch.cuda.nvtx, Megatron, NeMo) reach cupmon's trace windows through\n"
      "NVTX_INJECTION64_PATH, which cupmon-run points at the libcupti cupmon loads, unless it\n"
      "is already set (another NVTX tool keeps it) or --no-nvtx is given.\n"
      "libcupmon.so goes into CUDA_INJECTION64_PATH, and the small libcupmon-preload.so beside\n"
      "it into LD_PRELOAD (after entries already there), so that torch.profiler and other CUPTI\n"
      "clients share CUPTI with cupmon. Child processes inherit both; a program that never\n"
      "starts CUDA loads only libcupmon-preload.so, which then does nothing. --no-preload:\n"
      "injection only; another CUPTI client then takes CUPTI from cupmon (a marked gap) until\n"
      "cupmon takes it back after CUPMON_RECLAIM_MS.\n"
      "Options left out keep the library's defaults (see monitor/README.md); CUPMON_* variables\n"
      "already set in the environment are kept unless an option overrides them.\n"
      "The exit status is the program's.");
  std::string lib, output_dir, kinds, buffer_size, pool_size, file_size, retention_bytes, encoding;
  int flush_ms = -1, retention_files = -1, zstd_level = INT_MIN, zero_buffers = -1;
  bool preload = false, no_preload = false, no_nvtx = false, auto_window = false;
  std::string auto_factor, auto_min_gap, auto_min_steps, auto_anchor, auto_by;
  app.add_flag("--auto-window", auto_window,
               "CUPMON_AUTO_WINDOW=1: open a trace window (CUPMON_WINDOW_KINDS/_MS) by itself at a "
               "step slower than the factor times the median step and than the median plus 10 "
               "median absolute deviations");
  app.add_option("--auto-window-factor", auto_factor,
                 "CUPMON_AUTO_WINDOW_FACTOR (3; implies --auto-window)");
  app.add_option("--auto-window-anchor", auto_anchor,
                 "CUPMON_AUTO_WINDOW_ANCHOR=kernel:TEXT: a step begins at each kernel whose name "
                 "contains TEXT (default: the repeating kernel pattern; implies --auto-window)");
  app.add_option("--auto-window-by", auto_by,
                 "CUPMON_AUTO_WINDOW_BY: what the slow-step test compares: step (the step time), "
                 "work, host-gap or own (work + host gap: a rank that only waited in a collective "
                 "does not fire); implies --auto-window")
      ->check(CLI::IsMember({"step", "work", "host-gap", "own"}));
  app.add_option("--auto-window-min-gap", auto_min_gap,
                 "CUPMON_AUTO_WINDOW_MIN_GAP: at most one automatic window per (10m)");
  app.add_option("--auto-window-min-steps", auto_min_steps,
                 "CUPMON_AUTO_WINDOW_MIN_STEPS: steps timed before any comparison (10)");
  std::vector<std::string> command;
  app.add_option("--lib", lib, "libcupmon.so to inject (default: found next to cupmon-run)");
  app.add_option("-o,--output-dir", output_dir, "CUPMON_OUTPUT_DIR: where the files go");
  app.add_option("--kinds", kinds, "CUPMON_KINDS: comma-separated activity kinds");
  app.add_option("--buffer-size", buffer_size, "CUPMON_BUFFER_SIZE: CUPTI buffer size (4M)");
  app.add_option("--pool-size", pool_size, "CUPMON_POOL_SIZE: total buffer memory cap (64M)");
  app.add_option("--flush-ms", flush_ms, "CUPMON_FLUSH_MS: periodic flush period (1000)");
  app.add_option("--file-size", file_size, "CUPMON_FILE_SIZE: rotate files at this size (64M)");
  app.add_option("--retention-bytes", retention_bytes, "CUPMON_RETENTION_BYTES: keep at most (2G)");
  app.add_option("--retention-files", retention_files, "CUPMON_RETENTION_FILES: keep at most N files");
  app.add_option("--zstd-level", zstd_level, "CUPMON_ZSTD_LEVEL (1)");
  app.add_option("--encoding", encoding, "CUPMON_ENCODING: columns-delta, columns, zstd, stored");
  app.add_option("--zero-buffers", zero_buffers, "CUPMON_ZERO_BUFFERS: 1 = writer pre-zeroes (0)");
  auto* preload_flag = app.add_flag(
      "--preload", preload, "the default: also put libcupmon-preload.so in LD_PRELOAD (kept for scripts)");
  app.add_flag("--no-preload", no_preload,
               "CUDA_INJECTION64_PATH only, LD_PRELOAD left alone: cupmon then loses CUPTI to "
               "another CUPTI client (torch.profiler) for CUPMON_RECLAIM_MS instead of sharing it "
               "(docs/COEXISTENCE.md)")
      ->excludes(preload_flag);
  app.add_flag("--no-nvtx", no_nvtx,
               "do not set NVTX_INJECTION64_PATH: NVTX ranges and marks are then not recorded");
  app.add_option("command", command, "the program and its arguments (after --)")->required();
  app.set_version_flag("--version", cupmon::VersionText("cupmon-run"));
  CLI11_PARSE(app, argc, argv);

  const std::string library = FindLibrary(lib);
  if (library.empty() || access(library.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "cupmon: libcupmon.so not found%s%s; pass --lib PATH\n",
                 lib.empty() ? "" : " at ", lib.c_str());
    return 127;
  }
  setenv("CUDA_INJECTION64_PATH", library.c_str(), 1);
  if (!no_preload) {
    // The interposed CUPTI entry points live in a library of their own beside libcupmon.so, which
    // needs it: libcupmon.so's dependency then resolves to the preloaded copy.
    const std::string preload_library =
        (std::filesystem::path(library).parent_path() / "libcupmon-preload.so").string();
    if (access(preload_library.c_str(), R_OK) != 0) {
      std::fprintf(stderr,
                   "cupmon: %s not found beside %s; injection only, so another CUPTI client "
                   "would take CUPTI from cupmon (docs/COEXISTENCE.md)\n",
                   preload_library.c_str(), library.c_str());
    } else if (preload_library.find_first_of(": ") != std::string::npos) {
      // ld.so would split the path and print an error in every process of the job.
      std::fprintf(stderr,
                   "cupmon: %s cannot go into LD_PRELOAD (it holds ':' or ' '); injection only, "
                   "so another CUPTI client would take CUPTI from cupmon (docs/COEXISTENCE.md)\n",
                   preload_library.c_str());
    } else {
      setenv("LD_PRELOAD", PreloadValue(std::getenv("LD_PRELOAD"), preload_library).c_str(), 1);
    }
  }
  if (!no_nvtx && !std::getenv("NVTX_INJECTION64_PATH")) {
    // NVTX reads the variable at a program's first NVTX call and loads that library, whose
    // handlers turn ranges into CUPTI MARKER records while a window has the marker kind on.
    const std::string cupti = CuptiForNvtx();
    if (cupti.empty())
      std::fprintf(stderr, "cupmon: libcupti not found here; NVTX ranges will not be recorded "
                           "(set CUDA_HOME, or NVTX_INJECTION64_PATH to libcupti)\n");
    else
      setenv("NVTX_INJECTION64_PATH", cupti.c_str(), 1);
  }
  auto set = [](const char* var, const std::string& v) {
    if (!v.empty()) setenv(var, v.c_str(), 1);
  };
  set("CUPMON_OUTPUT_DIR", output_dir);
  set("CUPMON_KINDS", kinds);
  set("CUPMON_BUFFER_SIZE", buffer_size);
  set("CUPMON_POOL_SIZE", pool_size);
  set("CUPMON_FILE_SIZE", file_size);
  set("CUPMON_RETENTION_BYTES", retention_bytes);
  set("CUPMON_ENCODING", encoding);
  if (flush_ms >= 0) set("CUPMON_FLUSH_MS", std::to_string(flush_ms));
  if (retention_files >= 0) set("CUPMON_RETENTION_FILES", std::to_string(retention_files));
  if (zstd_level != INT_MIN) set("CUPMON_ZSTD_LEVEL", std::to_string(zstd_level));
  if (zero_buffers >= 0) set("CUPMON_ZERO_BUFFERS", std::to_string(zero_buffers));
  // Bad values are refused by the library with a warning naming the variable (monitor/README.md).
  if (auto_window || !auto_factor.empty() || !auto_anchor.empty() || !auto_by.empty())
    set("CUPMON_AUTO_WINDOW", "1");
  set("CUPMON_AUTO_WINDOW_BY", auto_by);
  set("CUPMON_AUTO_WINDOW_FACTOR", auto_factor);
  set("CUPMON_AUTO_WINDOW_ANCHOR", auto_anchor);
  set("CUPMON_AUTO_WINDOW_MIN_GAP", auto_min_gap);
  set("CUPMON_AUTO_WINDOW_MIN_STEPS", auto_min_steps);

  std::vector<char*> args;
  for (auto& a : command) args.push_back(a.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "cupmon: cannot run %s: %s\n", args[0], std::strerror(errno));
  return errno == ENOENT ? 127 : 126;
}
