// Decodes the recording of one gpu_scenarios run (OUTDIR/rec) with cupmon::decoder, the code behind
// cupmon-decode, and compares it with the known answers in gpu_scenarios.h and OUTDIR/expect.txt.
// Prints one line per check with what it measured; exit status 1 when any check fails.
//   check_gpu_scenarios SCENARIO OUTDIR
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"
#include "gpu_scenarios.h"

namespace {

namespace gs = cupmon::gpu_scenarios;
namespace dec = cupmon::decoder;
using dec::Row;
using dec::RowType;

int g_failures = 0;

bool Expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  g_failures += !ok;
  return ok;
}

std::string N(uint64_t v) { return std::to_string(v); }

// Collects the rows. Views inside the rows stay valid while the builder lives.
class CollectingSink : public dec::RowSink {
 public:
  explicit CollectingSink(bool keep_rows) : keep_rows_(keep_rows) {}
  void OnRow(const Row& r) override {
    if (keep_rows_) rows.push_back(r);
    ++by_type[static_cast<int>(r.type)];
    if (r.type == RowType::kKernel) ++kernels_by_name[std::string(r.name)];
  }
  std::vector<Row> rows;
  uint64_t by_type[4] = {0, 0, 0, 0};  // indexed by RowType
  std::map<std::string, uint64_t> kernels_by_name;

 private:
  bool keep_rows_;
};

// The trace builder, also noting the footers it sees.
class Builder : public dec::TraceBuilder {
 public:
  using TraceBuilder::TraceBuilder;
  void OnFooter(const cupmon::pb::Footer& footer) override {
    ++footers;
    last_footer_ended = footer.recording_ended();
    TraceBuilder::OnFooter(footer);
  }
  uint64_t footers = 0;
  bool last_footer_ended = false;
};

std::map<std::string, std::string> ReadExpect(const std::string& path) {
  std::map<std::string, std::string> m;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string k, v;
    if (ls >> k >> v) m[k] = v;
  }
  return m;
}

uint64_t Count(const std::map<std::string, uint64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

std::vector<const Row*> RowsOf(const CollectingSink& sink, RowType type) {
  std::vector<const Row*> out;
  for (const Row& r : sink.rows)
    if (r.type == type) out.push_back(&r);
  return out;
}

std::vector<const Row*> KernelsNamed(const CollectingSink& sink, const std::string& name) {
  std::vector<const Row*> out;
  for (const Row& r : sink.rows)
    if (r.type == RowType::kKernel && r.name == name) out.push_back(&r);
  return out;
}

void PrintKernelNames(const CollectingSink& sink) {
  for (const auto& [name, n] : sink.kernels_by_name)
    std::printf("     kernel x%llu \"%s\"\n", static_cast<unsigned long long>(n), name.c_str());
}

// ---- per scenario ----

void CheckBasic(const CollectingSink& sink) {
  PrintKernelNames(sink);
  const std::map<std::string, uint64_t> want = {{gs::kScaleName, gs::kScaleLaunches},
                                                {gs::kFillName, gs::kFillLaunches},
                                                {gs::kPlainName, gs::kPlainLaunches}};
  for (const auto& [name, n] : want)
    Expect(Count(sink.kernels_by_name, name) == n,
           "kernel \"" + name + "\": " + N(Count(sink.kernels_by_name, name)) + " launches, expected " + N(n));
  Expect(sink.kernels_by_name.size() == want.size(),
         "exactly " + N(want.size()) + " distinct kernel names (demangled names equal the expected "
         "strings exactly): " + N(sink.kernels_by_name.size()));

  std::vector<std::pair<uint32_t, uint64_t>> copies, want_copies;
  for (const Row* r : RowsOf(sink, RowType::kMemcpy)) {
    std::printf("     memcpy %s copy_kind %u bytes %llu stream %u\n", std::string(r->name).c_str(),
                r->copy.kind, static_cast<unsigned long long>(r->bytes), r->stream);
    copies.emplace_back(r->copy.kind, r->bytes);
  }
  for (const auto& c : gs::kCopies) want_copies.emplace_back(c.copy_kind, c.bytes);
  std::sort(copies.begin(), copies.end());
  std::sort(want_copies.begin(), want_copies.end());
  auto kind_count = [](const std::vector<std::pair<uint32_t, uint64_t>>& v, uint32_t k) {
    return static_cast<uint64_t>(std::count_if(v.begin(), v.end(), [k](const auto& p) { return p.first == k; }));
  };
  for (uint32_t k : {gs::kHtoD, gs::kDtoH, gs::kDtoD})
    Expect(kind_count(copies, k) == kind_count(want_copies, k),
           std::string(dec::MemcpyKindName(k)) + " copies: " + N(kind_count(copies, k)) + ", expected " +
               N(kind_count(want_copies, k)));
  Expect(copies == want_copies, "memcpy (direction, bytes) set equals the " + N(want_copies.size()) +
                                    " copies made (" + N(copies.size()) + " memcpy rows)");

  std::vector<uint64_t> sets, want_sets(std::begin(gs::kMemsets), std::end(gs::kMemsets));
  for (const Row* r : RowsOf(sink, RowType::kMemset)) {
    std::printf("     memset bytes %llu stream %u\n", static_cast<unsigned long long>(r->bytes), r->stream);
    sets.push_back(r->bytes);
  }
  std::sort(sets.begin(), sets.end());
  std::sort(want_sets.begin(), want_sets.end());
  Expect(sets == want_sets, "memset sizes equal the " + N(want_sets.size()) + " memsets made (" +
                                N(sets.size()) + " memset rows)");
  Expect(sink.by_type[static_cast<int>(RowType::kApi)] == 0,
         "no API rows (no window): " + N(sink.by_type[static_cast<int>(RowType::kApi)]));
}

void CheckTiming(const CollectingSink& sink, const std::map<std::string, std::string>& expect) {
  auto spins = KernelsNamed(sink, gs::kSpinName);
  std::sort(spins.begin(), spins.end(), [](const Row* a, const Row* b) { return a->start < b->start; });
  if (!Expect(spins.size() == gs::kSpinRuns + 1,
              "\"" + std::string(gs::kSpinName) + "\" rows: " + N(spins.size()) + ", expected " +
                  N(gs::kSpinRuns + 1) + " (1 warm-up + " + N(gs::kSpinRuns) + " timed)"))
    return;
  // CUDA events bracket the kernel and also time its launch and whatever the GPU did around it,
  // so a run's event time can jump while cupmon's duration stays the same. Each run: cupmon's
  // duration is valid and no longer than the events' interval; the median of the runs: within
  // kSpinTolerance of theirs.
  std::vector<double> rels;
  for (int i = 0; i < gs::kSpinRuns; ++i) {
    const Row* r = spins[i + 1];
    auto it = expect.find("spin_event_ns_" + std::to_string(i));
    if (!Expect(it != expect.end(), "event time of run " + std::to_string(i) + " in expect.txt")) continue;
    const double event_ns = std::stod(it->second);
    const double cupmon_ns = static_cast<double>(r->duration);
    const double rel = (cupmon_ns - event_ns) / event_ns;
    rels.push_back(rel);
    char line[256];
    std::snprintf(line, sizeof line,
                  "spin run %d: cupmon %.1f us, CUDA events %.1f us, difference %+.3f%% (cupmon "
                  "within the events' interval)",
                  i, cupmon_ns / 1e3, event_ns / 1e3, 100.0 * rel);
    // 1 us of slack: the two clocks' resolutions.
    Expect(r->valid_time && cupmon_ns <= event_ns + 1000.0, line);
  }
  if (rels.empty()) return;
  std::sort(rels.begin(), rels.end());
  const double median = rels[rels.size() / 2];
  char line[160];
  std::snprintf(line, sizeof line, "median difference over %zu runs %+.3f%% (limit %.0f%%)",
                rels.size(), 100.0 * median, 100.0 * gs::kSpinTolerance);
  Expect(std::fabs(median) <= gs::kSpinTolerance, line);
}

void CheckStreams(const CollectingSink& sink) {
  std::map<uint32_t, uint64_t> kernels_per_stream;
  for (const Row* r : RowsOf(sink, RowType::kKernel)) ++kernels_per_stream[r->stream];
  for (const auto& [stream, n] : kernels_per_stream)
    std::printf("     stream %u: %llu kernels\n", stream, static_cast<unsigned long long>(n));
  std::set<uint32_t> used;
  for (int i = 0; i < gs::kStreams; ++i) {
    const auto rows = KernelsNamed(sink, gs::kStreamNames[i]);
    std::set<uint32_t> streams;
    for (const Row* r : rows) streams.insert(r->stream);
    const uint64_t want = gs::StreamLaunches(i);
    Expect(rows.size() == want, "\"" + std::string(gs::kStreamNames[i]) + "\": " + N(rows.size()) +
                                    " kernels, expected " + N(want));
    if (!Expect(streams.size() == 1, "stream " + std::to_string(i) + "'s kernels on one stream id: " +
                                         N(streams.size()) + " ids"))
      continue;
    const uint32_t id = *streams.begin();
    Expect(kernels_per_stream[id] == want, "stream id " + N(id) + " (stream " + std::to_string(i) +
                                               ") holds " + N(kernels_per_stream[id]) +
                                               " kernels, expected " + N(want));
    Expect(used.insert(id).second, "stream id " + N(id) + " used by one stream only");
  }
}

void CheckGraph(const Builder& b, const CollectingSink& sink) {
  PrintKernelNames(sink);
  Expect(b.windows().size() == 1, "one trace window in the recording: " + N(b.windows().size()));
  for (const auto& [id, w] : b.windows())
    std::printf("     window #%u source %s, %s, note '%s'\n", id, w.source.c_str(),
                w.end ? "closed" : "no end", w.note.c_str());
  const auto nodes = KernelsNamed(sink, gs::kGraphNodeName);
  const uint64_t want = uint64_t{gs::kGraphNodes} * gs::kGraphLaunches;
  Expect(nodes.size() == want, "\"" + std::string(gs::kGraphNodeName) + "\" kernels: " + N(nodes.size()) +
                                   ", expected " + N(want) + " (" + N(gs::kGraphNodes) + " nodes x " +
                                   N(gs::kGraphLaunches) + " launches)");
  Expect(sink.by_type[static_cast<int>(RowType::kKernel)] == nodes.size(),
         "no other kernels: " + N(sink.by_type[static_cast<int>(RowType::kKernel)]) + " kernel rows");

  std::map<uint32_t, uint64_t> per_corr;
  std::set<uint32_t> graph_ids;
  uint64_t joined = 0, without_api = 0;
  std::map<std::string, uint64_t> api_names;
  for (const Row* r : nodes) {
    ++per_corr[r->correlation];
    graph_ids.insert(r->launch.graph_id);
    if (r->api.found) {
      ++api_names[std::string(r->api.name)];
      if (r->api.name == gs::kGraphLaunchApi) ++joined;
    } else {
      ++without_api;
    }
  }
  for (const auto& [name, n] : api_names)
    std::printf("     graph kernels joined to \"%s\": %llu\n", name.c_str(), static_cast<unsigned long long>(n));
  Expect(joined == nodes.size(), "every graph kernel joined to a " + std::string(gs::kGraphLaunchApi) +
                                     " API record: " + N(joined) + " of " + N(nodes.size()) + " (" +
                                     N(without_api) + " without an API record)");
  Expect(per_corr.size() == uint64_t{gs::kGraphLaunches},
         "distinct correlation ids over the graph kernels: " + N(per_corr.size()) + ", expected " +
             N(gs::kGraphLaunches) + " (one per launch)");
  uint64_t exact = 0;
  for (const auto& [corr, n] : per_corr) {
    if (n == uint64_t{gs::kGraphNodes}) ++exact;
    else std::printf("     correlation id %u has %llu kernels\n", corr, static_cast<unsigned long long>(n));
  }
  Expect(exact == per_corr.size() && !per_corr.count(0),
         "each launch's correlation id has exactly " + N(gs::kGraphNodes) + " kernels: " + N(exact) + " of " +
             N(per_corr.size()) + " ids");
  Expect(graph_ids.size() == 1 && !graph_ids.count(0),
         "graph kernels carry one non-zero graph id: " + N(graph_ids.size()) + " distinct, first " +
             N(graph_ids.empty() ? 0 : *graph_ids.begin()));

  uint64_t launches = 0, launched_ok = 0, matched = 0;
  for (const Row* r : RowsOf(sink, RowType::kApi)) {
    if (r->name != gs::kGraphLaunchApi) continue;
    ++launches;
    if (r->launched == uint64_t{gs::kGraphNodes}) ++launched_ok;
    else std::printf("     %s correlation %u launched %u kernels\n", gs::kGraphLaunchApi, r->correlation, r->launched);
    if (per_corr.count(r->correlation)) ++matched;
  }
  Expect(launches == uint64_t{gs::kGraphLaunches},
         std::string(gs::kGraphLaunchApi) + " API rows: " + N(launches) + ", expected " + N(gs::kGraphLaunches));
  Expect(launched_ok == launches && matched == launches,
         std::string(gs::kGraphLaunchApi) + " rows with launched == " + N(gs::kGraphNodes) + ": " +
             N(launched_ok) + "; with the correlation id of graph kernels: " + N(matched));
}

void CheckThreads(const CollectingSink& sink) {
  PrintKernelNames(sink);
  uint64_t total = 0;
  std::set<uint32_t> used;
  for (int t = 0; t < gs::kThreads; ++t) {
    const auto rows = KernelsNamed(sink, gs::kThreadNames[t]);
    const uint64_t want = gs::ThreadLaunches(t);
    total += want;
    std::set<uint32_t> streams;
    for (const Row* r : rows) streams.insert(r->stream);
    Expect(rows.size() == want && streams.size() == 1,
           "thread " + std::to_string(t) + " \"" + gs::kThreadNames[t] + "\": " + N(rows.size()) +
               " kernels (expected " + N(want) + ") on " + N(streams.size()) + " stream id(s)");
    if (streams.size() == 1) used.insert(*streams.begin());
  }
  Expect(used.size() == uint64_t{gs::kThreads}, "each thread's stream has its own id: " + N(used.size()) + " ids");
  Expect(sink.by_type[static_cast<int>(RowType::kKernel)] == total,
         "kernel rows in all: " + N(sink.by_type[static_cast<int>(RowType::kKernel)]) + ", expected " + N(total));
}

void CheckFork(const dec::Recording& rec, const CollectingSink& sink,
               const std::map<std::string, std::string>& expect) {
  PrintKernelNames(sink);
  auto it = expect.find("pid");
  Expect(it != expect.end() && it->second == N(rec.header.pid()),
         "the recording is the parent's: header pid " + N(rec.header.pid()) + ", parent pid " +
             (it == expect.end() ? std::string("(missing)") : it->second));
  Expect(Count(sink.kernels_by_name, gs::kForkNames[0]) == gs::kForkBefore,
         "kernels launched before the forks: " + N(Count(sink.kernels_by_name, gs::kForkNames[0])) +
             ", expected " + N(gs::kForkBefore));
  Expect(Count(sink.kernels_by_name, gs::kForkNames[1]) == gs::kForkAfter,
         "kernels launched after the forks: " + N(Count(sink.kernels_by_name, gs::kForkNames[1])) +
             ", expected " + N(gs::kForkAfter));
  for (const char* key : {"child_quick_ms", "child_exit_ms"}) {
    auto c = expect.find(key);
    Expect(c != expect.end(), std::string(key) + " (child ended in time): " +
                                  (c == expect.end() ? std::string("missing") : c->second + " ms"));
  }
}

void CheckRotation(const dec::Recording& rec, const Builder& b, const CollectingSink& sink,
                   const std::map<std::string, std::string>& expect) {
  PrintKernelNames(sink);
  const auto& st = b.counts().stats;
  auto it = expect.find("launches");
  if (!Expect(it != expect.end(), "launch count in expect.txt")) return;
  const uint64_t launches = std::stoull(it->second);
  const uint64_t decoded = Count(sink.kernels_by_name, gs::kRotationName);
  std::printf("     %llu launches; %zu files left (first index %u); stats: files_deleted %llu, "
              "bytes_deleted %llu, records %llu, records_deleted %llu, kernel_records %llu, "
              "kernel_records_deleted %llu; decoded kernels %llu, decoded records %llu\n",
              static_cast<unsigned long long>(launches), rec.files.size(),
              rec.files.empty() ? 0u : rec.files.front().file_index,
              static_cast<unsigned long long>(st.files_deleted()),
              static_cast<unsigned long long>(st.bytes_deleted()), static_cast<unsigned long long>(st.records()),
              static_cast<unsigned long long>(st.records_deleted()),
              static_cast<unsigned long long>(st.kernel_records()),
              static_cast<unsigned long long>(st.kernel_records_deleted()),
              static_cast<unsigned long long>(decoded), static_cast<unsigned long long>(b.counts().records));
  Expect(st.files_deleted() >= 2, "retention deleted files: " + N(st.files_deleted()) + " (want >= 2)");
  Expect(rec.files.size() <= gs::kRotationKeepFiles && rec.files.size() >= 2,
         "files left: " + N(rec.files.size()) + " (retention keeps " + N(gs::kRotationKeepFiles) + ")");
  Expect(!rec.files.empty() && rec.files.front().file_index == st.files_deleted(),
         "the deleted files are the oldest: first file index left " +
             N(rec.files.empty() ? 0 : rec.files.front().file_index) + " == files deleted " + N(st.files_deleted()));
  Expect(sink.by_type[static_cast<int>(RowType::kKernel)] == decoded,
         "every kernel row is \"" + std::string(gs::kRotationName) + "\": " +
             N(sink.by_type[static_cast<int>(RowType::kKernel)]) + " rows");
  Expect(decoded + st.kernel_records_deleted() == launches,
         "decoded kernels " + N(decoded) + " + kernel records deleted by retention " +
             N(st.kernel_records_deleted()) + " = " + N(decoded + st.kernel_records_deleted()) +
             " == launches " + N(launches));
  Expect(st.kernel_records() == launches,
         "Stats kernel_records " + N(st.kernel_records()) + " == launches " + N(launches));
  Expect(b.counts().records + st.records_deleted() == st.records(),
         "decoded records " + N(b.counts().records) + " + records deleted " + N(st.records_deleted()) +
             " == Stats records " + N(st.records()));
}

// ---- multigpu ----

using Triple = std::array<uint64_t, 3>;

std::string Triples(std::vector<Triple> v) {
  std::sort(v.begin(), v.end());
  std::string s = "{";
  for (const Triple& t : v)
    s += (s.size() > 1 ? " (" : "(") + N(t[0]) + "," + N(t[1]) + "," + N(t[2]) + ")";
  return s + "}";
}

bool SameMultiset(std::vector<Triple> a, std::vector<Triple> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

// Whether records of `kind` carry srcDeviceId and dstDeviceId in the decoder's layout for the
// recording's CUPTI version (CUpti_ActivityMemcpyPtoP4 does, CUpti_ActivityMemcpy6 does not: a
// plain MEMCPY row reads 0 for both).
bool HasPeerDevices(uint32_t kind, uint32_t api_version) {
  const dec::RecordLayout* l = dec::FindLayout(kind, api_version);
  if (!l) return false;
  bool src = false, dst = false;
  for (const dec::FieldOffset& f : l->fields) {
    src |= f.field == dec::Field::kSrcDeviceId;
    dst |= f.field == dec::Field::kDstDeviceId;
  }
  return src && dst;
}

const char* RecordKindName(uint32_t kind) {
  return kind == dec::kKindMemcpy ? "MEMCPY" : kind == dec::kKindMemcpy2 ? "MEMCPY2" : "other";
}

void CheckMultigpu(const dec::Recording& rec, const CollectingSink& sink,
                   const std::map<std::string, std::string>& expect) {
  PrintKernelNames(sink);
  const auto p2p = expect.find("p2p_access");
  const auto devices = expect.find("device_count");
  const std::string access = p2p == expect.end() ? "(missing)"
                             : p2p->second == "1"  ? "enabled both ways"
                                                   : "NOT possible both ways (the runtime may stage copies through the host)";
  Expect(p2p != expect.end() && devices != expect.end(),
         "p2p_access and device_count in expect.txt: peer access " + access + ", " +
             (devices == expect.end() ? std::string("(missing)") : devices->second) + " devices");
  Expect(devices != expect.end() && N(rec.header.devices_size()) == devices->second,
         "the recording header lists every device: " + N(rec.header.devices_size()) + " devices");
  const auto& kinds = rec.header.enabled_kinds();
  Expect(std::find(kinds.begin(), kinds.end(), uint32_t{dec::kKindMemcpy2}) != kinds.end(),
         "memcpy2 (kind 22) among the recording's enabled kinds");

  // Kernels: each name its exact count, all on its own device.
  uint64_t want_kernels = 0;
  for (int d = 0; d < gs::kDevices; ++d) {
    const auto rows = KernelsNamed(sink, gs::kDeviceWorkNames[d]);
    const uint64_t want = gs::DeviceLaunches(d);
    want_kernels += want;
    std::map<uint32_t, uint64_t> per_device;
    for (const Row* r : rows) ++per_device[r->device];
    std::string where;
    for (const auto& [dev, n] : per_device) where += (where.empty() ? "" : ", ") + N(n) + " on device " + N(dev);
    Expect(rows.size() == want && per_device.size() == 1 && per_device.count(d),
           "\"" + std::string(gs::kDeviceWorkNames[d]) + "\": " + N(rows.size()) + " kernels (expected " +
               N(want) + ", all on device " + std::to_string(d) + "): " + (where.empty() ? "none" : where));
  }
  Expect(sink.by_type[static_cast<int>(RowType::kKernel)] == want_kernels,
         "kernel rows in all: " + N(sink.by_type[static_cast<int>(RowType::kKernel)]) + ", expected " + N(want_kernels));

  // Memcpy rows: every one printed. A peer copy is a MEMCPY2 record or a PTOP copy; it is identified
  // by its correlation id, so that a copy CUPTI reports twice is seen as one copy reported twice.
  const uint32_t api = rec.header.cupti_api_version();
  std::map<uint32_t, std::vector<const Row*>> peer_by_corr;
  std::vector<Triple> others;  // (copy kind, bytes, device)
  for (const Row* r : RowsOf(sink, RowType::kMemcpy)) {
    const bool ends = HasPeerDevices(r->kind, api);
    std::printf("     memcpy record %s (kind %u) copy_kind %u %s bytes %llu device %u src_device %s "
                "dst_device %s stream %u correlation %u\n",
                RecordKindName(r->kind), r->kind, r->copy.kind, dec::MemcpyKindName(r->copy.kind),
                static_cast<unsigned long long>(r->bytes), r->device,
                ends ? N(r->copy.src_device).c_str() : "(none)", ends ? N(r->copy.dst_device).c_str() : "(none)",
                r->stream, r->correlation);
    if (r->kind == dec::kKindMemcpy2 || r->copy.kind == gs::kPtoP) peer_by_corr[r->correlation].push_back(r);
    else others.push_back({r->copy.kind, r->bytes, r->device});
  }
  std::vector<Triple> peers, want_peers;  // (bytes, src device, dst device)
  uint64_t twice = 0, without_ends = 0;
  for (const auto& [corr, rows] : peer_by_corr) {
    const Row* with_ends = nullptr;
    for (const Row* r : rows)
      if (!with_ends && HasPeerDevices(r->kind, api)) with_ends = r;
    if (rows.size() > 1) {
      ++twice;
      std::string what;
      for (const Row* r : rows) what += std::string(what.empty() ? "" : ", ") + RecordKindName(r->kind) + " " + N(r->bytes) + " bytes";
      std::printf("     peer copy with correlation id %u reported %zu times: %s\n", corr, rows.size(), what.c_str());
    }
    if (with_ends) {
      peers.push_back({with_ends->bytes, with_ends->copy.src_device, with_ends->copy.dst_device});
    } else {
      ++without_ends;
      std::printf("     peer copy with correlation id %u (%llu bytes) has no MEMCPY2 record: src/dst device "
                  "ids missing\n", corr, static_cast<unsigned long long>(rows.front()->bytes));
    }
  }
  for (const auto& c : gs::kPeerCopies) want_peers.push_back({c.bytes, c.src_device, c.dst_device});
  Expect(twice == 0, "each peer copy reported once: " + N(twice) +
                         " correlation id(s) reported more than once (the same copy as MEMCPY and MEMCPY2, "
                         "or split into several records)");
  Expect(without_ends == 0, "peer copies with source and destination device: " + N(without_ends) + " of " +
                                N(peer_by_corr.size()) +
                                " reported only as plain MEMCPY records, whose src/dst device ids are missing");
  Expect(peer_by_corr.size() == std::size(gs::kPeerCopies),
         "peer copies (distinct correlation ids of MEMCPY2 or PTOP rows): " + N(peer_by_corr.size()) + ", expected " +
             N(std::size(gs::kPeerCopies)));
  Expect(SameMultiset(peers, want_peers),
         "peer copy (bytes, src device, dst device) multiset " + Triples(peers) + " equals the copies made " +
             Triples(want_peers));

  // The other copies: per device its HtoD copy, and the read-backs of its destination and counter.
  std::vector<Triple> want_others, htod, want_htod;
  for (int d = 0; d < gs::kDevices; ++d) {
    const uint64_t dev = static_cast<uint64_t>(d);
    want_htod.push_back({gs::kHtoD, gs::kDeviceHtoD[d], dev});
    want_others.push_back({gs::kHtoD, gs::kDeviceHtoD[d], dev});
    want_others.push_back({gs::kDtoH, gs::PeerDestinationBytes(d), dev});
    want_others.push_back({gs::kDtoH, gs::kDeviceCounterBytes, dev});
  }
  uint64_t dtod = 0;
  for (const Triple& t : others) {
    if (t[0] == gs::kHtoD) htod.push_back(t);
    dtod += t[0] == gs::kDtoD;
  }
  if (dtod)
    std::printf("     note: %llu DtoD memcpy rows; the scenario makes none, so these may be peer copies that "
                "CUPTI reported as DtoD\n", static_cast<unsigned long long>(dtod));
  Expect(SameMultiset(htod, want_htod),
         "HtoD copies (copy kind, bytes, device) " + Triples(htod) + " equal " + Triples(want_htod));
  Expect(SameMultiset(others, want_others),
         "the other memcpy rows (copy kind, bytes, device) " + Triples(others) + " equal " + Triples(want_others) +
             " (per device: its HtoD copy, the read-backs of its peer destination and its counter)");

  std::vector<Triple> sets, want_sets;  // (bytes, device, 0)
  for (const Row* r : RowsOf(sink, RowType::kMemset)) sets.push_back({r->bytes, r->device, 0});
  for (int d = 0; d < gs::kDevices; ++d) {
    const uint64_t dev = static_cast<uint64_t>(d);
    want_sets.push_back({gs::kDeviceCounterBytes, dev, 0});
    want_sets.push_back({gs::kPeerSourceBytes[d], dev, 0});
    want_sets.push_back({gs::PeerDestinationBytes(d), dev, 0});
  }
  Expect(SameMultiset(sets, want_sets), "memset rows (bytes, device, 0) " + Triples(sets) + " equal " +
                                            Triples(want_sets) + " (per device: counter, source, destination)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: check_gpu_scenarios SCENARIO OUTDIR\n");
    return 2;
  }
  const std::string scenario = argv[1];
  const std::string dir = argv[2];
  const auto expect = ReadExpect(dir + "/expect.txt");
  if (!Expect(expect.count("scenario_" + scenario) == 1,
              dir + "/expect.txt was written by the " + scenario + " scenario"))
    return 1;

  auto listing = dec::ListRecordings(dir + "/rec");
  if (!Expect(listing.has_value(), "list " + dir + "/rec" + (listing ? "" : ": " + listing.error().message)))
    return 1;
  for (const auto& f : listing->refused) std::printf("     refused: %s\n", f.c_str());
  for (const auto& f : listing->ignored) std::printf("     ignored: %s\n", f.c_str());
  Expect(listing->refused.empty(), "no refused files: " + N(listing->refused.size()));
  if (!Expect(listing->recordings.size() == 1,
              "exactly one recording (one process wrote): " + N(listing->recordings.size())))
    return 1;
  const dec::Recording& rec = listing->recordings.front();
  for (const auto& f : rec.files)
    std::printf("     file [%u] %s (%llu bytes)\n", f.file_index, f.path.c_str(),
                static_cast<unsigned long long>(f.bytes));

  const bool keep_rows = scenario != "rotation";  // rotation: ~1M rows, counted only
  CollectingSink sink(keep_rows);
  Builder builder(dec::TraceFilter{}, &sink);
  dec::ReadIntegrity integrity;
  dec::ReadRecording(rec, builder, &integrity);
  builder.Finish();
  const auto& c = builder.counts();
  const auto& st = c.stats;
  for (const auto& m : integrity.messages) std::printf("     reader: %s\n", m.c_str());
  for (const auto& m : c.messages) std::printf("     builder: %s\n", m.c_str());

  // What every scenario must satisfy.
  Expect(!rec.header.synthetic(), "header written by real CUPTI (not synthetic)");
  Expect(!integrity.HasWarnings() && integrity.damaged_bytes == 0,
         "no damage: " + N(integrity.damaged_ranges) + " damaged ranges, " + N(integrity.undecodable_chunks) +
             " undecodable chunks, " + N(integrity.sequence_gaps) + " sequence gaps, " +
             N(integrity.missing_files) + " missing files, " + N(integrity.unreadable_files) + " unreadable");
  Expect(integrity.files_without_footer == 0 && builder.footers == rec.files.size() && builder.last_footer_ended,
         "every file has a footer and the last says recording_ended: " + N(builder.footers) + " footers for " +
             N(rec.files.size()) + " files, " + N(integrity.files_without_footer) + " without, ended " +
             (builder.last_footer_ended ? "yes" : "no"));
  Expect(c.have_stats || builder.footers > 0, "stats present");
  Expect(st.dropped_records() == 0 && st.pool_exhausted() == 0,
         "nothing dropped: " + N(st.dropped_records()) + " dropped records, " + N(st.pool_exhausted()) +
             " unmet buffer requests");
  Expect(st.zero_timestamp_records() == 0 && c.unknown_timestamps == 0,
         "all timestamps valid: " + N(st.zero_timestamp_records()) + " zero-timestamp records, " +
             N(c.unknown_timestamps) + " unknown");
  Expect(st.write_errors() == 0 && st.chunks_lost() == 0 && st.truncated_buffers() == 0,
         "writer clean: " + N(st.write_errors()) + " write errors, " + N(st.chunks_lost()) + " chunks lost, " +
             N(st.truncated_buffers()) + " truncated buffers");
  Expect(c.unresolved_names == 0 && c.buffers_stopped == 0 && c.duplicate_api_correlation == 0,
         "decoder clean: " + N(c.unresolved_names) + " unresolved names, " + N(c.buffers_stopped) +
             " buffers cut short, " + N(c.duplicate_api_correlation) + " duplicate API correlation ids");
  const uint64_t gpu_rows = sink.by_type[0] + sink.by_type[1] + sink.by_type[2];
  std::printf("     rows: %llu kernel, %llu memcpy, %llu memset, %llu api\n",
              static_cast<unsigned long long>(sink.by_type[0]), static_cast<unsigned long long>(sink.by_type[1]),
              static_cast<unsigned long long>(sink.by_type[2]), static_cast<unsigned long long>(sink.by_type[3]));
  if (scenario != "rotation")
    Expect(gpu_rows == st.kernel_records() + st.memcpy_records() + st.memset_records(),
           "GPU rows " + N(gpu_rows) + " == the writer's kernel+memcpy+memset records " +
               N(st.kernel_records() + st.memcpy_records() + st.memset_records()));

  if (scenario == "basic") CheckBasic(sink);
  else if (scenario == "timing") CheckTiming(sink, expect);
  else if (scenario == "streams") CheckStreams(sink);
  else if (scenario == "graph") CheckGraph(builder, sink);
  else if (scenario == "threads") CheckThreads(sink);
  else if (scenario == "fork") CheckFork(rec, sink, expect);
  else if (scenario == "rotation") CheckRotation(rec, builder, sink, expect);
  else if (scenario == "multigpu") CheckMultigpu(rec, sink, expect);
  else Expect(false, "known scenario " + scenario);

  std::printf("%s: %s (%d failed checks)\n", scenario.c_str(), g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
