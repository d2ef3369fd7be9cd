// Monitor configuration: defaults, CUPMON_* environment variables, kind names.
#include "cupmon/monitor/config.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <cstdlib>
#include <utility>

namespace cupmon {
namespace {

struct KindEntry {
  const char* name;
  uint32_t kind;
};
// CUpti_ActivityKind values (cupti_activity.h, CUDA 13.0).
constexpr KindEntry kKinds[] = {
    {"memcpy", 1},           {"memset", 2},
    {"kernel", 3},           {"driver", 4},
    {"runtime", 5},          {"concurrent_kernel", 10},
    {"name", 11},            {"marker", 12},
    {"overhead", 17},        {"memcpy2", 22},
    {"cuda_event", 36},      {"synchronization", 38},
    {"external_correlation", 39}, {"memory2", 49},
    {"memory_pool", 50},     {"graph_trace", 51},
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename T>
Expected<T> ParseInt(std::string_view text) {
  text = Trim(text);
  T v{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty())
    return MakeError("not an integer");
  return v;
}

}  // namespace

std::string DefaultOutputDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = (tmp && *tmp) ? tmp : "/tmp";
  return base + "/cupmon-" + std::to_string(getuid());
}

Expected<uint64_t> ParseSize(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return MakeError("empty size");
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr == text.data()) return MakeError("not a size");
  std::string_view suffix(ptr, static_cast<size_t>(text.data() + text.size() - ptr));
  if (suffix.ends_with("iB")) suffix.remove_suffix(2);
  else if (suffix.ends_with("B") && suffix.size() == 2) suffix.remove_suffix(1);
  int shift = 0;
  if (suffix.empty()) shift = 0;
  else if (suffix == "K" || suffix == "k") shift = 10;
  else if (suffix == "M" || suffix == "m") shift = 20;
  else if (suffix == "G" || suffix == "g") shift = 30;
  else return MakeError("unknown size suffix '" + std::string(suffix) + "' (use K, M or G)");
  if (shift && v > (~uint64_t{0} >> shift)) return MakeError("size too large");
  return v << shift;
}

const char* KindName(uint32_t kind) {
  for (const auto& k : kKinds)
    if (k.kind == kind) return k.name;
  return "unknown";
}

std::vector<uint32_t> ParseKinds(std::string_view text, std::vector<std::string>* warnings) {
  std::vector<uint32_t> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    uint32_t kind = 0;
    for (const auto& k : kKinds)
      if (item == k.name) kind = k.kind;
    if (kind == 0) {
      if (auto n = ParseInt<uint32_t>(item); n && *n > 0 && *n < 128) kind = *n;
    }
    if (kind == 0) {
      warnings->push_back("unknown activity kind '" + std::string(item) + "', ignored");
      continue;
    }
    bool seen = false;
    for (uint32_t k : out) seen |= k == kind;
    if (!seen) out.push_back(kind);
  }
  return out;
}

const char* EncodingConfigName(Encoding e) {
  switch (e) {
    case Encoding::kStored: return "stored";
    case Encoding::kZstd: return "zstd";
    case Encoding::kColumnsZstd: return "columns";
    case Encoding::kColumnsDeltaZstd: return "columns-delta";
  }
  return "unknown";
}

Expected<Encoding> ParseEncoding(std::string_view text) {
  text = Trim(text);
  for (Encoding e : {Encoding::kStored, Encoding::kZstd, Encoding::kColumnsZstd,
                     Encoding::kColumnsDeltaZstd})
    if (text == EncodingConfigName(e)) return e;
  return MakeError("unknown encoding (use stored, zstd, columns or columns-delta)");
}

void ApplyEnvironment(MonitorConfig* c, std::vector<std::string>* warnings, GetEnvFn getenv_fn) {
  if (!getenv_fn) getenv_fn = [](const char* n) -> const char* { return std::getenv(n); };
  auto bad = [&](const char* var, const char* value, const std::string& why, const std::string& dflt) {
    warnings->push_back(std::string(var) + "='" + value + "' is invalid (" + why +
                        "); using the default " + dflt);
  };
  auto size_var = [&](const char* var, uint64_t* field) {
    const char* v = getenv_fn(var);
    if (!v) return;
    auto r = ParseSize(v);
    if (!r) return bad(var, v, r.error().message, std::to_string(*field));
    *field = *r;
  };
  auto u32_var = [&](const char* var, uint32_t* field) {
    const char* v = getenv_fn(var);
    if (!v) return;
    auto r = ParseInt<uint32_t>(v);
    if (!r) return bad(var, v, "expected a non-negative integer", std::to_string(*field));
    *field = *r;
  };
  if (const char* v = getenv_fn("CUPMON_OUTPUT_DIR"); v && *v) c->output_dir = v;
  if (const char* v = getenv_fn("CUPMON_KINDS")) {
    std::vector<std::string> kind_warnings;
    std::vector<uint32_t> kinds = ParseKinds(v, &kind_warnings);
    for (auto& w : kind_warnings) warnings->push_back("CUPMON_KINDS: " + w);
    if (kinds.empty()) {
      warnings->push_back(std::string("CUPMON_KINDS='") + v +
                          "' names no known kind; using the default concurrent_kernel,memcpy,memset");
    } else {
      c->kinds = std::move(kinds);
    }
  }
  size_var("CUPMON_BUFFER_SIZE", &c->buffer_bytes);
  size_var("CUPMON_POOL_SIZE", &c->pool_bytes);
  u32_var("CUPMON_FLUSH_MS", &c->flush_ms);
  u32_var("CUPMON_RECLAIM_MS", &c->reclaim_ms);
  u32_var("CUPMON_STATS_MS", &c->stats_ms);
  size_var("CUPMON_FILE_SIZE", &c->file_bytes);
  size_var("CUPMON_RETENTION_BYTES", &c->retention_bytes);
  u32_var("CUPMON_RETENTION_FILES", &c->retention_files);
  if (const char* v = getenv_fn("CUPMON_ZSTD_LEVEL")) {
    auto r = ParseInt<int32_t>(v);
    if (!r || *r < -7 || *r > 19)
      bad("CUPMON_ZSTD_LEVEL", v, "expected an integer from -7 to 19", std::to_string(c->zstd_level));
    else
      c->zstd_level = *r;
  }
  if (const char* v = getenv_fn("CUPMON_ENCODING")) {
    auto r = ParseEncoding(v);
    if (!r) bad("CUPMON_ENCODING", v, r.error().message, EncodingConfigName(c->encoding));
    else c->encoding = *r;
  }
  ApplyControlEnvironment(c, warnings, getenv_fn);
  ApplyCuptiAttributeEnvironment(c, warnings, getenv_fn);
  if (const char* v = getenv_fn("CUPMON_ZERO_BUFFERS")) {
    std::string_view s = Trim(v);
    if (s == "1" || s == "on" || s == "true") c->zero_buffers = true;
    else if (s == "0" || s == "off" || s == "false") c->zero_buffers = false;
    else bad("CUPMON_ZERO_BUFFERS", v, "expected 0 or 1", c->zero_buffers ? "1" : "0");
  }
  if (const char* v = getenv_fn("CUPMON_REBIND_IMPORTS")) {
    std::string_view s = Trim(v);
    if (s == "1" || s == "on" || s == "true") c->rebind_imports = true;
    else if (s == "0" || s == "off" || s == "false") c->rebind_imports = false;
    else bad("CUPMON_REBIND_IMPORTS", v, "expected 0 or 1", c->rebind_imports ? "1" : "0");
  }
}

void ApplyCuptiAttributeEnvironment(MonitorConfig* c, std::vector<std::string>* warnings,
                                    GetEnvFn getenv_fn) {
  if (!getenv_fn) getenv_fn = [](const char* n) -> const char* { return std::getenv(n); };
  MonitorConfig::CuptiAttributes& a = c->cupti_attributes;
  auto bad = [&](const char* var, const char* value, const char* expected) {
    warnings->push_back(std::string(var) + "='" + value + "' is invalid (expected " + expected +
                        "); CUPTI's default is kept");
  };
  if (const char* v = getenv_fn("CUPMON_CUPTI_PER_THREAD_BUFFERS"); v && *v) {
    const std::string_view s = Trim(v);
    if (s == "1" || s == "on") a.per_thread_buffers = true;
    else if (s == "0" || s == "off") a.per_thread_buffers = false;
    else bad("CUPMON_CUPTI_PER_THREAD_BUFFERS", v, "0 or 1");
  }
  if (const char* v = getenv_fn("CUPMON_CUPTI_DEVICE_BUFFER_SIZE"); v && *v) {
    auto r = ParseSize(v);
    if (!r || *r < (64u << 10) || *r > (1u << 30))
      bad("CUPMON_CUPTI_DEVICE_BUFFER_SIZE", v, "a size from 64K to 1G, such as 32M");
    else
      a.device_buffer_bytes = *r;
  }
  auto count_var = [&](const char* var, uint64_t min, std::optional<uint64_t>* field) {
    const char* v = getenv_fn(var);
    if (!v || !*v) return;
    auto r = ParseInt<uint64_t>(v);
    if (!r || *r < min || *r > 4096)
      bad(var, v, min ? "a number of buffers from 1 to 4096" : "a number of buffers from 0 to 4096");
    else
      *field = *r;
  };
  count_var("CUPMON_CUPTI_DEVICE_BUFFER_PREALLOCATE", 0, &a.device_buffer_preallocate);
  count_var("CUPMON_CUPTI_DEVICE_BUFFER_POOL_LIMIT", 1, &a.device_buffer_pool_limit);
}

Expected<uint64_t> ParseDurationMs(std::string_view text) {
  const std::string_view t = Trim(text);
  size_t digits = 0;
  while (digits < t.size() && t[digits] >= '0' && t[digits] <= '9') ++digits;
  const std::string_view unit = t.substr(digits);
  uint64_t scale = 0;
  if (unit.empty() || unit == "ms") scale = 1;
  else if (unit == "s") scale = 1000;
  else if (unit == "m" || unit == "min") scale = 60'000;
  else if (unit == "h") scale = 3'600'000;
  auto n = ParseInt<uint64_t>(t.substr(0, digits));
  constexpr uint64_t kMaxMs = 7ull * 24 * 3'600'000;  // a week
  if (digits == 0 || scale == 0 || !n)
    return MakeError("expected a duration such as 10m, 90s, 2h or 600000ms");
  if (*n > kMaxMs / scale) return MakeError("longer than a week");
  return *n * scale;
}

Expected<double> ParseSlowFactor(std::string_view text) {
  const std::string t(Trim(text));
  char* end = nullptr;
  errno = 0;
  const double f = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || errno != 0 || !(f > 1.0) || f > 1000.0)
    return MakeError("expected a number above 1 and at most 1000, such as 1.5");
  return f;
}

Expected<std::string> ParseStepAnchor(std::string_view text) {
  const std::string t(Trim(text));
  constexpr std::string_view kKernel = "kernel:", kAnnotation = "annotation:";
  if (t.starts_with(kKernel) && t.size() > kKernel.size()) return t.substr(kKernel.size());
  if (t.starts_with(kAnnotation) || t.starts_with("nvtx:"))
    return MakeError("annotation anchors are not supported: NVTX ranges (MARKER records) are "
                     "recorded in trace windows only, so the always-on writer never sees them; "
                     "use kernel:TEXT, such as kernel:adam");
  return MakeError("expected kernel:TEXT (a step begins at each kernel whose name contains "
                   "TEXT), such as kernel:adam");
}

Expected<AutoWindowBy> ParseAutoWindowBy(std::string_view text) {
  const std::string_view t = Trim(text);
  for (AutoWindowBy by : {AutoWindowBy::kStep, AutoWindowBy::kWork, AutoWindowBy::kHostGap,
                          AutoWindowBy::kOwn})
    if (t == AutoWindowByName(by)) return by;
  return MakeError("expected step, work, host-gap or own (work + host gap)");
}

const char* AutoWindowByName(AutoWindowBy by) {
  switch (by) {
    case AutoWindowBy::kStep: return "step";
    case AutoWindowBy::kWork: return "work";
    case AutoWindowBy::kHostGap: return "host-gap";
    case AutoWindowBy::kOwn: return "own";
  }
  return "step";
}

bool SumsSteps(const MonitorConfig& c) {
  if (c.auto_window && c.auto_window_by != AutoWindowBy::kStep) return true;
  return c.step_metrics.value_or(false);
}

Expected<int> ParseSignal(std::string_view text) {
  text = Trim(text);
  if (text == "off" || text == "0" || text == "none") return 0;
  if (auto n = ParseInt<int>(text); n) {
    if (*n > 0 && *n < NSIG) return *n;
    return MakeError("signal number out of range");
  }
  std::string name(text);
  for (char& ch : name) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (name.starts_with("SIG")) name.erase(0, 3);
  struct Named {
    const char* name;
    int number;
  };
  static constexpr Named kSignals[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"HUP", SIGHUP},
                                       {"URG", SIGURG},   {"WINCH", SIGWINCH}, {"PWR", SIGPWR}};
  for (const auto& s : kSignals)
    if (name == s.name) return s.number;
  if (name.starts_with("RTMIN+")) {
    if (auto n = ParseInt<int>(std::string_view(name).substr(6)); n && SIGRTMIN + *n <= SIGRTMAX)
      return SIGRTMIN + *n;
  }
  return MakeError("unknown signal (use USR1, USR2, HUP, URG, WINCH, PWR, RTMIN+N, a number or off)");
}

void ApplyControlEnvironment(MonitorConfig* c, std::vector<std::string>* warnings,
                             GetEnvFn getenv_fn) {
  if (!getenv_fn) getenv_fn = [](const char* n) -> const char* { return std::getenv(n); };
  if (const char* v = getenv_fn("CUPMON_CONTROL_DIR"); v && *v) {
    if (Trim(v) == "off") c->control = false;
    else c->control_dir = v;
  }
  if (const char* v = getenv_fn("CUPMON_REGISTRY_DIR"); v && *v) c->registry_dir = v;
  if (const char* v = getenv_fn("CUPMON_EXIT_TIMEOUT_MS")) {
    auto r = ParseInt<uint32_t>(v);
    if (!r || *r > 600000)
      warnings->push_back(std::string("CUPMON_EXIT_TIMEOUT_MS='") + v +
                          "' is invalid (expected 0 to 600000 ms); using the default " +
                          std::to_string(c->exit_timeout_ms));
    else
      c->exit_timeout_ms = *r;
  }
  if (const char* v = getenv_fn("CUPMON_TERM_FLUSH")) {
    const std::string_view t = Trim(v);
    if (t == "1" || t == "on") c->term_flush = true;
    else if (t == "0" || t == "off") c->term_flush = false;
    else
      warnings->push_back(std::string("CUPMON_TERM_FLUSH='") + v +
                          "' is invalid (expected 1, 0, on or off); using the default 1");
  }
  if (const char* v = getenv_fn("CUPMON_SIGNAL")) {
    if (auto sig = ParseSignal(v); sig) c->signal_number = *sig;
    else
      warnings->push_back(std::string("CUPMON_SIGNAL='") + v + "' is invalid (" +
                          sig.error().message + "); using the default USR2");
  }
  if (const char* v = getenv_fn("CUPMON_AUTO_WINDOW")) {
    const std::string_view t = Trim(v);
    if (t == "1" || t == "on") c->auto_window = true;
    else if (t == "0" || t == "off" || t.empty()) c->auto_window = false;
    else
      warnings->push_back(std::string("CUPMON_AUTO_WINDOW='") + v +
                          "' is invalid (expected 1, 0, on or off); automatic windows stay off");
  }
  if (const char* v = getenv_fn("CUPMON_AUTO_WINDOW_FACTOR")) {
    if (auto r = ParseSlowFactor(v); r) c->auto_window_factor = *r;
    else
      warnings->push_back(std::string("CUPMON_AUTO_WINDOW_FACTOR='") + v + "' is invalid (" +
                          r.error().message + "); using the default 3");
  }
  if (const char* v = getenv_fn("CUPMON_AUTO_WINDOW_ANCHOR")) {
    if (auto r = ParseStepAnchor(v); r)
      c->auto_window_anchor_kernel = *r;
    else
      warnings->push_back(std::string("CUPMON_AUTO_WINDOW_ANCHOR='") + v + "' is invalid (" +
                          r.error().message + "); steps are found in the kernel-name pattern");
  }
  if (const char* v = getenv_fn("CUPMON_AUTO_WINDOW_MIN_STEPS")) {
    auto r = ParseInt<uint32_t>(v);
    if (!r || *r < 3 || *r > 100000)
      warnings->push_back(std::string("CUPMON_AUTO_WINDOW_MIN_STEPS='") + v +
                          "' is invalid (expected 3 to 100000 steps); using the default " +
                          std::to_string(c->auto_window_min_steps));
    else
      c->auto_window_min_steps = *r;
  }
  if (const char* v = getenv_fn("CUPMON_AUTO_WINDOW_MIN_GAP")) {
    auto r = ParseDurationMs(v);
    if (!r)
      warnings->push_back(std::string("CUPMON_AUTO_WINDOW_MIN_GAP='") + v + "' is invalid (" +
                          r.error().message + "); using the default 10m");
    else
      c->auto_window_min_gap_ms = *r;
  }
  if (const char* v = getenv_fn("CUPMON_AUTO_WINDOW_BY")) {
    if (auto r = ParseAutoWindowBy(v); r)
      c->auto_window_by = *r;
    else
      warnings->push_back(std::string("CUPMON_AUTO_WINDOW_BY='") + v + "' is invalid (" +
                          r.error().message + "); using the default step");
  }
  if (const char* v = getenv_fn("CUPMON_STEP_METRICS")) {
    const std::string_view t = Trim(v);
    if (t == "1" || t == "on") c->step_metrics = true;
    else if (t == "0" || t == "off") c->step_metrics = false;
    else
      warnings->push_back(std::string("CUPMON_STEP_METRICS='") + v +
                          "' is invalid (expected 1, 0, on or off); steps are summed while the "
                          "metrics endpoint is on");
  }
  if (const char* v = getenv_fn("CUPMON_WINDOW_MS")) {
    auto r = ParseInt<uint32_t>(v);
    if (!r || *r == 0 || *r > 24u * 3600 * 1000)
      warnings->push_back(std::string("CUPMON_WINDOW_MS='") + v +
                          "' is invalid (expected 1 to 86400000 ms); using the default " +
                          std::to_string(c->window_ms));
    else
      c->window_ms = *r;
  }
  if (const char* v = getenv_fn("CUPMON_WINDOW_KINDS")) {
    std::vector<std::string> kind_warnings;
    std::vector<uint32_t> kinds = ParseKinds(v, &kind_warnings);
    // Only what the control socket accepts too: KERNEL, for one, would serialise every kernel.
    constexpr uint32_t kWindowKinds[] = {5, 4, 17, 38, 36, 39, 12};
    std::erase_if(kinds, [&](uint32_t k) {
      if (std::find(std::begin(kWindowKinds), std::end(kWindowKinds), k) != std::end(kWindowKinds))
        return false;
      kind_warnings.push_back(std::string("'") + KindName(k) + "' (" + std::to_string(k) +
                              ") is not a window kind (runtime, driver, overhead, synchronization, "
                              "cuda_event, external_correlation, marker), ignored");
      return true;
    });
    for (auto& w : kind_warnings) warnings->push_back("CUPMON_WINDOW_KINDS: " + w);
    if (kinds.empty())
      warnings->push_back(std::string("CUPMON_WINDOW_KINDS='") + v +
                          "' names no known kind; using the default window kinds");
    else
      c->window_kinds = std::move(kinds);
  }
  if (const char* v = getenv_fn("CUPMON_API_FILTER")) {
    c->api_filter.clear();
    std::string_view text = v;
    while (!text.empty()) {
      const size_t comma = text.find(',');
      std::string_view item = Trim(text.substr(0, comma));
      text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
      if (!item.empty() && item != "none") c->api_filter.emplace_back(item);
    }
  }
  if (const char* v = getenv_fn("CUPMON_METRICS_ADDRESS")) {
    if (Trim(v) == "off") c->metrics_address.clear();
    else c->metrics_address = std::string(Trim(v));
  }
  if (const char* v = getenv_fn("CUPMON_METRICS_ALLOW_REMOTE")) {
    std::string_view s = Trim(v);
    if (s == "1" || s == "on" || s == "true") c->metrics_allow_remote = true;
    else if (s == "0" || s == "off" || s == "false" || s.empty()) c->metrics_allow_remote = false;
    else
      warnings->push_back(std::string("CUPMON_METRICS_ALLOW_REMOTE='") + v +
                          "' is invalid (expected 0 or 1); using the default 0 (loopback only)");
  }
}

void NormalizeConfig(MonitorConfig* c, std::vector<std::string>* warnings) {
  const MonitorConfig defaults;
  if (c->output_dir.empty()) c->output_dir = DefaultOutputDir();
  if (c->buffer_bytes < (64u << 10) || c->buffer_bytes > (128u << 20)) {
    warnings->push_back("buffer size " + std::to_string(c->buffer_bytes) +
                        " is outside 64K..128M; using the default " +
                        std::to_string(defaults.buffer_bytes));
    c->buffer_bytes = defaults.buffer_bytes;
  }
  c->buffer_bytes &= ~uint64_t{7};
  if (c->pool_bytes < 2 * c->buffer_bytes) {
    warnings->push_back("pool size " + std::to_string(c->pool_bytes) +
                        " holds fewer than 2 buffers; using 2 buffers");
    c->pool_bytes = 2 * c->buffer_bytes;
  }
  if (c->pool_bytes / c->buffer_bytes > 4096) {
    warnings->push_back("pool size " + std::to_string(c->pool_bytes) +
                        " holds more than 4096 buffers; capped at 4096");
    c->pool_bytes = 4096 * c->buffer_bytes;
  }
  if (c->file_bytes < (1u << 20)) {
    warnings->push_back("file size " + std::to_string(c->file_bytes) +
                        " is below 1M; using 1M");
    c->file_bytes = 1u << 20;
  }
  if (c->kinds.empty()) c->kinds = defaults.kinds;
  // cupti_activity.h: the pre-allocated count must be below the pool limit (250 unless set).
  auto& a = c->cupti_attributes;
  if (a.device_buffer_preallocate &&
      *a.device_buffer_preallocate >= a.device_buffer_pool_limit.value_or(250)) {
    warnings->push_back("CUPTI device buffer pre-allocation " +
                        std::to_string(*a.device_buffer_preallocate) +
                        " is not below the pool limit " +
                        std::to_string(a.device_buffer_pool_limit.value_or(250)) +
                        "; CUPTI's default pre-allocation is kept");
    a.device_buffer_preallocate.reset();
  }
  if (c->control && c->control_dir.empty()) c->control_dir = c->output_dir + "/control";
  if (c->window_ms == 0 || c->window_ms > 24u * 3600 * 1000) {
    warnings->push_back("window duration " + std::to_string(c->window_ms) +
                        " ms is outside 1 ms..24 h; using " + std::to_string(defaults.window_ms));
    c->window_ms = defaults.window_ms;
  }
}

}  // namespace cupmon
