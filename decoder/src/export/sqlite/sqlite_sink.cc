// The SQLite export's database writer (see sqlite_sink.h): the nsys tables and CUPMON_* tables of
// nsys_schema.h, filled from the export's rows.
#include "export/sqlite/sqlite_sink.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "cupmon/decoder/record_layout.h"
#include "export/sqlite/nsys_schema.h"
#include "export/sqlite/sqlite_tables.h"
#include "hex_text.h"
#include "text/utc_time.h"

#ifndef CUPMON_VERSION_STRING
#define CUPMON_VERSION_STRING "unknown"
#endif

namespace cupmon::decoder {
namespace {


constexpr const char* kTypeNames[6] = {"kernel",  "memcpy",        "memset",
                                       "runtime", "secondary_api", "synchronization"};
enum TypeIndex { kTKernel, kTMemcpy, kTMemset, kTRuntime, kTSecondary, kTSync };

// The tables Close writes.
constexpr const char* kInsertString = "INSERT INTO StringIds (id, value) VALUES (?1, ?2)";
constexpr const char* kInsertRank =
    "INSERT INTO CUPMON_RANKS (globalPid, rank, rankFromLauncher, label, jobId, host, pid, node, "
    "recordingId, localRank, worldSize, commandLine, processStartUtcNs, cuptiApiVersion, "
    "cudaDriverVersion, cudaRuntimeVersion, cupmonVersion, synthetic, files, calibrated, "
    "calibrationSamples, calibrationNonMonotonic, clockDomainChanges, firstStart, lastEnd) VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
    "?21, ?22, ?23, ?24, ?25)";
constexpr const char* kInsertWindow =
    "INSERT INTO CUPMON_WINDOWS (globalPid, windowId, start, end, source, beginNote, endNote, "
    "firstApiCorrelationId, launchedBefore) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
constexpr const char* kInsertGap =
    "INSERT INTO CUPMON_GAPS (globalPid, gapId, start, end, note) VALUES (?1, ?2, ?3, ?4, ?5)";
constexpr const char* kInsertBehind =
    "INSERT INTO CUPMON_BEHIND (globalPid, behindId, start, end, note) VALUES (?1, ?2, ?3, ?4, ?5)";
constexpr const char* kInsertCounter =
    "INSERT INTO CUPMON_COUNTERS (globalPid, name, value) VALUES (?1, ?2, ?3)";
constexpr const char* kInsertAnnotation =
    "INSERT INTO CUPMON_ANNOTATIONS (globalPid, externalId, labelId, start, end, rows) VALUES "
    "(?1, ?2, ?3, ?4, ?5, ?6)";
constexpr const char* kInsertGpu =
    "INSERT INTO TARGET_INFO_GPU (vmId, id, name, uuid, totalMemory, smCount, cuDevice, "
    "computeMajor, computeMinor, smMajor, smMinor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
    "?8, ?9)";
constexpr const char* kInsertSessionStart =
    "INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime) VALUES (?1, ?2)";
constexpr const char* kInsertMeta = "INSERT INTO META_DATA_EXPORT (name, value) VALUES (?1, ?2)";
constexpr const char* kInsertNvtxDomain =
    "INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES "
    "(?1, ?2, ?3, ?4, ?5)";

}  // namespace

// ---- creation and the connection ----

Expected<std::unique_ptr<SqliteSink>> SqliteSink::Create(const std::string& path, Options options) {
  if (path.empty()) return unexpected(Error{"no output file given"});
  std::string target = path;
  struct stat st{};
  if (lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      // Written through the link, as the other formats write to the file it names.
      char* real = realpath(path.c_str(), nullptr);
      if (real) {
        target = real;
        std::free(real);
        if (stat(target.c_str(), &st) != 0) st.st_mode = S_IFREG;
      } else {
        st.st_mode = S_IFREG;  // a dangling link: the database takes its place
      }
    }
    if (S_ISDIR(st.st_mode)) return unexpected(Error{path + " is a directory", EISDIR});
    if (!S_ISREG(st.st_mode))
      return unexpected(Error{path + " is not a regular file (the database is written beside it "
                                     "and renamed onto it)"});
  }
  std::unique_ptr<SqliteSink> sink(new SqliteSink(target));
  // The temporary sits beside the target, so that the final rename stays on one file system.
  // The destructor removes what was created when anything below fails.
  const auto make_temp = [](std::string pattern, std::string* made) -> int {
    const int fd = mkostemp(pattern.data(), O_CLOEXEC);
    if (fd >= 0) *made = pattern;
    return fd;
  };
  const int fd = make_temp(target + ".XXXXXX", &sink->conns_[kMain].path);
  if (fd < 0) {
    const int e = errno;
    return unexpected(Error{"cannot write " + path + ": " + std::strerror(e), e});
  }
  // The other exports create their file with the umask's permissions; mkstemp's are 0600.
  const mode_t mask = umask(0);
  umask(mask);
  (void)fchmod(fd, 0666 & ~mask);
  close(fd);
  SqliteConnection& main = sink->conns_[kMain];
  if (!main.Open(main.path))
    return unexpected(Error{"cannot write " + path + ": " + main.error});
  for (const nsys::Table& t : nsys::Tables()) main.Exec(t.create);
  for (const nsys::EnumRow& row : nsys::EnumRows()) {
    char* sql = sqlite3_mprintf("INSERT INTO %s (id, name, label) VALUES (%d, %Q, %Q)", row.table,
                                row.id, row.name, row.label);
    main.Exec(sql);
    sqlite3_free(sql);
  }
  const bool threads = options.writer_thread && std::thread::hardware_concurrency() > 1;
  if (options.own_pages && !(threads && options.split)) {
    // The pages' two files (the tables' leaves, the indexes' runs): beside the target (the
    // copy into the database stays within one file system), unlinked at once (nothing is left
    // behind, whatever happens).
    for (int* temp : {&main.pages_fd, &main.runs_fd}) {
      std::string made;
      *temp = make_temp(target + ".pages.XXXXXX", &made);
      if (*temp < 0) {
        const int e = errno;
        return unexpected(Error{"cannot write " + path + ": cannot create a temporary file beside "
                                "it: " + std::strerror(e), e});
      }
      unlink(made.c_str());
    }
    const int64_t page_size = main.PragmaInt("PRAGMA page_size");
    // Reserved bytes and the schema format are SQLite's defaults for a new database (0, and 4);
    // Finish checks them against the header.
    main.pages = std::make_unique<SqliteTablePages>(main.pages_fd, main.runs_fd,
                                                    static_cast<uint32_t>(page_size), 0, true);
  }
  for (int t = 0; t < kTableCount; ++t)
    if (t != kNvtx && !main.PrepareInsert(t)) break;
  // Indexes on the pages' tables: created now (empty), built by the pages at Close.
  if (main.pages)
    for (const nsys::Index& index : nsys::Indexes()) main.IndexForPages(index);
  if (!main.error.empty()) return unexpected(Error{"cannot write " + path + ": " + main.error});
  if (threads && options.split) {
    // The tables but the kernel table's rows, in a file of their own (removed by Close).
    std::string dir = options.split_dir;
    if (dir.empty()) {
      const size_t slash = target.rfind('/');
      dir = slash == std::string::npos ? "." : target.substr(0, slash == 0 ? 1 : slash);
    }
    const std::string base = target.substr(target.rfind('/') + 1);
    SqliteConnection& rest = sink->conns_[kRest];
    const int rfd = make_temp(dir + "/" + base + ".rest.XXXXXX", &rest.path);
    if (rfd < 0) {
      const int e = errno;
      return unexpected(Error{"cannot write " + path + ": cannot create a temporary file in " +
                              dir + ": " + std::strerror(e), e});
    }
    close(rfd);
    if (rest.Open(rest.path))
      for (const nsys::Table& t : nsys::Tables()) rest.Exec(t.create);
    for (int t = 0; t < kTableCount; ++t)
      if (t != kNvtx && t != kKernel && !rest.PrepareInsert(t)) break;
    if (!rest.error.empty()) return unexpected(Error{"cannot write " + path + ": " + rest.error});
  }
  if (threads) {
    for (int c = 0; c < kConnCount; ++c)
      if (sink->conns_[c].db) sink->batches_.Start(c);
  }
  return sink;
}

SqliteSink::SqliteSink(std::string path) : path_(std::move(path)) {
  for (SqliteConnection& c : conns_) c.failed = &failed_;
}

SqliteSink::~SqliteSink() {
  if (!closed_) failed_.store(true, std::memory_order_relaxed);  // the writers skip what is left
  batches_.Stop();
  for (int c = 0; c < kConnCount; ++c) batches_.Join(c);
  for (SqliteConnection& c : conns_) {
    c.CloseDb();
    if (!closed_ && !c.path.empty()) unlink(c.path.c_str());  // Close removes its own
    for (int fd : {c.pages_fd, c.runs_fd})
      if (fd >= 0) close(fd);
  }
}

// ---- ids (caller's thread) ----

int64_t SqliteSink::ThreadTid(uint32_t cupti_pid, uint32_t cupti_tid) {
  const uint64_t key = static_cast<uint64_t>(cupti_pid) << 32 | cupti_tid;
  if (key == last_thread_key_) return last_thread_tid_;
  auto [it, inserted] = threads_.try_emplace(key, 0);
  if (inserted) {
    const auto number = static_cast<uint32_t>(std::min<size_t>(threads_.size(), nsys::kIdMask24));
    it->second = nsys::GlobalTid(global_pid_, number);
    int64_t* c = batches_.NewRow(kThreads);
    c[0] = it->second;
    c[1] = cupti_tid;
    c[2] = cupti_pid;
    batches_.RowDone(kThreads);
  }
  last_thread_key_ = key;
  last_thread_tid_ = it->second;
  return it->second;
}

uint32_t SqliteSink::NodeFor(const std::string& host, uint32_t pid) {
  // The first node of this host whose pid is free; a second recording of one (host, pid) (a
  // restarted monitor, a reused pid) gets a node of its own, so that its rows stay apart.
  for (uint32_t n = 0; n < node_hosts_.size(); ++n)
    if (node_hosts_[n] == host && !node_pids_.count({n, pid})) return n;
  node_hosts_.push_back(host);
  return static_cast<uint32_t>(std::min<size_t>(node_hosts_.size() - 1, nsys::kMaxNode));
}

// ---- rows (caller's thread) ----

void SqliteSink::Begin(const TraceBuilder& /*builder*/, const Recording& recording,
                       const Rank* rank) {
  rank_ = rank;
  const auto& h = recording.header;
  node_ = NodeFor(h.host(), h.pid());
  node_pids_.insert({node_, h.pid()});
  global_pid_ = nsys::GlobalPid(node_, h.pid());
  strings_.BeginRank();
  threads_.clear();
  last_thread_key_ = ~uint64_t{0};
  context_devices_.clear();
  last_context_ = last_device_ = ~0u;
  sync_unknown_device_ = 0;
  annotations_.clear();
  nvtx_domains_.clear();
  nvtx_rows_ = nvtx_untimed_ = 0;
  std::fill(std::begin(rank_rows_), std::end(rank_rows_), 0);
  std::fill(std::begin(rank_untimed_), std::end(rank_untimed_), 0);
}

void SqliteSink::NoteDevice(uint32_t context, uint32_t device) {
  if (context == last_context_ && device == last_device_) return;
  context_devices_[context] = device;
  last_context_ = context;
  last_device_ = device;
}

void SqliteSink::Write(const Row& r) {
  if (failed()) return;
  int type = kTKernel;
  switch (r.type) {
    case RowType::kKernel: type = kTKernel; break;
    case RowType::kMemcpy: type = kTMemcpy; break;
    case RowType::kMemset: type = kTMemset; break;
    case RowType::kApi: type = r.nested || r.duplicate ? kTSecondary : kTRuntime; break;
    case RowType::kSynchronization: type = kTSync; break;
    case RowType::kRange:
      WriteRange(r);
      return;
    case RowType::kMemory:
      return;  // never asked for (the sink does not answer WantsMemory)
  }
  if (!r.valid_time) {
    ++rank_untimed_[type];
    return;
  }
  ++rank_rows_[type];
  ++activity_rows_;
  if (r.external_id) Annotate(r);
  int64_t* c = nullptr;
  switch (r.type) {
    case RowType::kKernel: {
      NoteDevice(r.context, r.device);
      const SqliteStrings::KernelNames& n = strings_.KernelNamesOf(r);
      c = batches_.NewRow(kKernel);
      c[7] = n.demangled;
      c[8] = n.short_name;
      c[9] = n.mangled ? n.mangled : kNull;
      c[10] = r.registers;
      c[11] = r.grid[0];
      c[12] = r.grid[1];
      c[13] = r.grid[2];
      c[14] = r.block[0];
      c[15] = r.block[1];
      c[16] = r.block[2];
      c[17] = r.static_smem;
      c[18] = r.dynamic_smem;
      c[19] = r.graph_id ? r.graph_id : kNull;  // CUPTI: 0 when not launched by a graph
      break;
    }
    case RowType::kMemcpy: {
      NoteDevice(r.context, r.device);
      c = batches_.NewRow(kMemcpy);
      c[7] = static_cast<int64_t>(r.bytes);
      c[8] = r.copy_kind;
      c[9] = nsys::MemKind(r.src_kind);
      c[10] = nsys::MemKind(r.dst_kind);
      // Only peer-to-peer copies (CUpti_ActivityMemcpyPtoP) name their source and destination.
      const bool peer = r.kind == kKindMemcpy2;
      c[11] = peer ? r.src_device : kNull;
      c[12] = peer ? r.dst_device : kNull;
      break;
    }
    case RowType::kMemset:
      NoteDevice(r.context, r.device);
      c = batches_.NewRow(kMemset);
      c[7] = r.memset_value;
      c[8] = static_cast<int64_t>(r.bytes);
      break;
    case RowType::kApi: {
      // nsys keeps driver calls in the runtime table (eventClass CUDA driver), except those a
      // runtime call made; those, and later records of a correlation id already held, go to
      // CUPMON_SECONDARY_API, so that the kernel-launch join finds one call per kernel.
      const bool secondary = r.nested || r.duplicate;
      const int64_t tid = ThreadTid(r.pid, r.tid);
      const int64_t name = strings_.ApiNameId(r);
      c = batches_.NewRow(secondary ? kSecondaryApi : kRuntime);
      c[0] = Rel(r.wall_start);
      c[1] = Rel(r.wall_end);
      c[2] = r.kind == kKindDriver ? nsys::kEventClassCudaDriver : nsys::kEventClassCudaRuntime;
      c[3] = tid;
      c[4] = r.correlation;
      c[5] = name;
      c[6] = r.return_value;
      if (secondary) c[7] = r.nested ? nsys::kSecondaryNested : nsys::kSecondaryDuplicate;
      batches_.RowDone(secondary ? kSecondaryApi : kRuntime);
      return;
    }
    case RowType::kRange:
    case RowType::kMemory:
      return;  // WriteRange; memory rows never come (see above)
    case RowType::kSynchronization: {
      // CUPTI's synchronization record names no device: its context's, as the GPU rows tell
      // (the few whose context had no GPU row yet are filled in by Close).
      int64_t device = -1;
      if (r.context == last_context_) {
        device = last_device_;
      } else {
        auto it = context_devices_.find(r.context);
        if (it != context_devices_.end()) device = it->second;
      }
      if (device < 0) ++sync_unknown_device_;
      c = batches_.NewRow(kSync);
      c[2] = device;
      c[7] = r.sync_type;
      c[8] = r.event_id;
      c[9] = static_cast<int64_t>(r.event_sync_id);
      break;
    }
  }
  // The columns the GPU and synchronization tables share.
  c[0] = Rel(r.wall_start);
  c[1] = Rel(r.wall_end);
  if (r.type != RowType::kSynchronization) c[2] = r.device;
  c[3] = r.context;
  c[4] = r.stream;
  c[5] = r.correlation;
  c[6] = global_pid_;
  const Table t = r.type == RowType::kKernel   ? kKernel
                  : r.type == RowType::kMemcpy ? kMemcpy
                  : r.type == RowType::kMemset ? kMemset
                                               : kSync;
  batches_.RowDone(t);
}

// An NVTX range or mark: one NVTX_EVENTS row (end NULL for a mark and for a range never ended).
// Its domain gets a domainId (from 1; 0 is the default domain) and one eventType 75 row naming
// it, written by End.
void SqliteSink::WriteRange(const Row& r) {
  if (!r.valid_time) {
    ++nvtx_untimed_;
    return;
  }
  ++nvtx_rows_;
  const int64_t tid = ThreadTid(r.pid, r.tid);
  int64_t domain = 0;
  if (!r.range_domain.empty()) {
    auto [it, inserted] = nvtx_domains_.try_emplace(std::string(r.range_domain));
    if (inserted) {
      it->second.id = static_cast<int64_t>(nvtx_domains_.size());
      it->second.start = Rel(r.wall_start);
      it->second.global_tid = tid;
    }
    it->second.start = std::min(it->second.start, Rel(r.wall_start));
    domain = it->second.id;
  }
  const bool mark = r.range_kind == RangeKind::kMark;
  const int64_t name = strings_.Id(r.name);
  int64_t* c = batches_.NewRow(kNvtx);
  c[0] = Rel(r.wall_start);
  c[1] = mark || !r.range_ended ? kNull : Rel(r.wall_end);
  c[2] = mark                                      ? nsys::kEventTypeNvtxMark
         : r.range_kind == RangeKind::kStartEnd ? nsys::kEventTypeNvtxStartEndRange
                                                  : nsys::kEventTypeNvtxPushPopRange;
  c[3] = mark ? kNull : r.range_id;
  c[4] = tid;
  c[5] = name;
  c[6] = domain;
  batches_.RowDone(kNvtx);
}

void SqliteSink::Annotate(const Row& r) {
  auto [it, inserted] = annotations_.try_emplace(r.external_id);
  Annotation& a = it->second;
  if (inserted) {
    a.label = std::string(r.annotation);
    a.start = r.wall_start;
    a.end = r.wall_end;
  } else {
    a.start = std::min(a.start, r.wall_start);
    a.end = std::max(a.end, r.wall_end);
  }
  ++a.rows;
  // One row per call: from its API row, or from GPU work whose launch call is not in the export.
  if ((r.type == RowType::kApi && !r.nested && !r.duplicate) ||
      (r.type != RowType::kApi && r.type != RowType::kSynchronization && !r.has_api)) {
    int64_t* c = batches_.NewRow(kCorrelationAnnotations);
    c[0] = global_pid_;
    c[1] = r.correlation;
    c[2] = static_cast<int64_t>(r.external_id);
    batches_.RowDone(kCorrelationAnnotations);
  }
}

// ---- per-rank facts (kept for Close) ----

void SqliteSink::Counter(const std::string& name, int64_t value) {
  Defer(kInsertCounter, {Value{Value::kInt, global_pid_, {}}, Value{Value::kText, 0, name},
                         Value{Value::kInt, value, {}}});
}

void SqliteSink::End(const TraceBuilder& b, const Recording& rec, const ReadIntegrity& integrity) {
  const auto& h = rec.header;
  const auto I = [](int64_t v) { return Value{Value::kInt, v, {}}; };
  const auto T = [](std::string v) { return Value{Value::kText, 0, std::move(v)}; };
  const auto N = [] { return Value{}; };
  const auto IfI = [&](bool has, int64_t v) { return has ? I(v) : N(); };
  const auto wall = [&](uint64_t cupti) { return Rel(b.clock().ToWall(cupti)); };
  if (sync_unknown_device_) sync_fixes_.push_back(SyncFix{global_pid_, context_devices_});

  std::string cmd;
  for (const auto& a : h.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
  Defer(kInsertRank,
        {I(global_pid_), IfI(rank_ != nullptr, rank_ ? rank_->rank : 0),
         IfI(rank_ != nullptr, rank_ && rank_->rank_from_header), rank_ ? T(rank_->label) : N(),
         h.job_id().empty() ? N() : T(h.job_id()), T(h.host()), I(h.pid()), I(node_),
         T(Hex(rec.id)), IfI(h.has_local_rank(), h.local_rank()),
         IfI(h.has_world_size(), h.world_size()), T(cmd),
         IfI(h.process_start_unix_ns() != 0, h.process_start_unix_ns()), I(h.cupti_api_version()),
         I(h.cuda_driver_version()), I(h.cuda_runtime_version()), T(h.cupmon_version()),
         I(h.synthetic()), I(static_cast<int64_t>(rec.files.size())), I(b.clock().calibrated()),
         I(static_cast<int64_t>(b.clock().samples())),
         I(static_cast<int64_t>(b.clock().non_monotonic())),
         I(static_cast<int64_t>(b.clock().domain_changes())),
         IfI(b.first_ts() != 0, b.first_ts() ? wall(b.first_ts()) : 0),
         IfI(b.last_ts() != 0, b.last_ts() ? wall(b.last_ts()) : 0)});
  for (const auto& [id, w] : b.windows()) {
    const bool ended = w.end != 0 && w.end >= w.begin;
    Defer(kInsertWindow, {I(global_pid_), I(id), IfI(w.begin != 0, w.begin ? wall(w.begin) : 0),
                          IfI(ended, ended ? wall(w.end) : 0), T(w.source), T(w.begin_note),
                          T(w.note), IfI(w.first_api_correlation != 0, w.first_api_correlation),
                          I(static_cast<int64_t>(w.launched_before))});
  }
  for (const auto& [id, g] : b.gaps()) {
    const bool ended = g.end != 0 && g.end >= g.begin;
    Defer(kInsertGap, {I(global_pid_), I(id), IfI(g.begin != 0, g.begin ? wall(g.begin) : 0),
                       IfI(ended, ended ? wall(g.end) : 0), T(g.note)});
  }
  for (const auto& [id, g] : b.behind()) {
    const bool ended = g.end != 0 && g.end >= g.begin;
    Defer(kInsertBehind, {I(global_pid_), I(id), IfI(g.begin != 0, g.begin ? wall(g.begin) : 0),
                          IfI(ended, ended ? wall(g.end) : 0), T(g.note)});
  }
  for (const auto& [id, a] : annotations_)
    Defer(kInsertAnnotation,
          {I(global_pid_), I(static_cast<int64_t>(id)), I(strings_.Id(a.label)), I(Rel(a.start)),
           I(Rel(a.end)), I(static_cast<int64_t>(a.rows))});
  // The devices the recording lists, once per (host, id, uuid).
  for (const auto& d : h.devices()) {
    const std::string uuid = nsys::GpuUuidText(d.uuid());
    if (!gpus_.insert({node_, d.id(), uuid}).second) continue;
    Defer(kInsertGpu, {I(nsys::GlobalVid(node_)), I(d.id()), T(d.name()), uuid.empty() ? N() : T(uuid),
                       IfI(d.global_memory_bytes() != 0, static_cast<int64_t>(d.global_memory_bytes())),
                       IfI(d.sm_count() != 0, d.sm_count()), I(d.id()), I(d.cc_major()),
                       I(d.cc_minor())});
  }

  // Counters: the monitor's stats (every scalar of the latest Stats), the reader's integrity
  // report, the decoder's counts and the export's own.
  const auto& c = b.counts();
  const auto* desc = c.stats.GetDescriptor();
  const auto* refl = c.stats.GetReflection();
  for (int i = 0; i < desc->field_count(); ++i) {
    const auto* f = desc->field(i);
    if (f->is_repeated()) continue;
    int64_t v = 0;
    switch (f->cpp_type()) {
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT64:
        v = static_cast<int64_t>(refl->GetUInt64(c.stats, f));
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_INT64: v = refl->GetInt64(c.stats, f); break;
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT32: v = refl->GetUInt32(c.stats, f); break;
      case google::protobuf::FieldDescriptor::CPPTYPE_INT32: v = refl->GetInt32(c.stats, f); break;
      default: continue;
    }
    Counter("stats." + f->name(), v);
  }
  for (const auto& k : c.stats.lost_records_by_kind())
    Counter("stats.lost_records_by_kind." + std::to_string(k.kind()), static_cast<int64_t>(k.count()));
  Counter("stats.present", c.have_stats);
  Counter("stats.final", c.stats_final);
  const std::pair<const char*, uint64_t> counts[] = {
      {"integrity.files", integrity.files},
      {"integrity.chunks", integrity.chunks},
      {"integrity.damaged_ranges", integrity.damaged_ranges},
      {"integrity.damaged_bytes", integrity.damaged_bytes},
      {"integrity.undecodable_chunks", integrity.undecodable_chunks},
      {"integrity.unknown_chunk_types", integrity.unknown_chunk_types},
      {"integrity.sequence_gaps", integrity.sequence_gaps},
      {"integrity.missing_chunks", integrity.missing_chunks},
      {"integrity.missing_files", integrity.missing_files},
      {"integrity.earlier_files_gone", integrity.earlier_files_gone},
      {"integrity.unreadable_files", integrity.unreadable_files},
      {"integrity.files_without_footer", integrity.files_without_footer},
      {"integrity.borrowed_headers", integrity.borrowed_headers},
      {"decoder.raw_buffers", c.raw_buffers},
      {"decoder.records", c.records},
      {"decoder.gpu_rows", c.gpu_rows},
      {"decoder.api_rows", c.api_rows},
      {"decoder.sync_rows", c.sync_rows},
      {"decoder.filtered_out", c.filtered_out},
      {"decoder.unknown_timestamps", c.unknown_timestamps},
      {"decoder.unresolved_names", c.unresolved_names},
      {"decoder.gpu_without_api", c.gpu_without_api},
      {"decoder.api_without_gpu", c.api_without_gpu},
      {"decoder.duplicate_api_correlation", c.duplicate_api_correlation},
      {"decoder.out_of_order", c.out_of_order},
      {"decoder.buffers_stopped", c.buffers_stopped},
      {"decoder.records_not_decoded", c.records_not_decoded},
      {"decoder.overhead_records", c.overhead_records},
      {"decoder.overhead_ns", c.overhead_ns},
      {"decoder.external_correlations", c.external_correlations},
  };
  for (const auto& [name, v] : counts) Counter(name, static_cast<int64_t>(v));
  for (const auto& [kind, n] : c.records_by_kind)
    Counter("decoder.records_by_kind." + std::to_string(kind), static_cast<int64_t>(n));
  for (const auto& [kind, n] : c.stopped_by_kind)
    Counter("decoder.stopped_by_kind." + std::to_string(kind), static_cast<int64_t>(n));
  for (int t = 0; t < 6; ++t) {
    Counter(std::string("export.rows.") + kTypeNames[t], static_cast<int64_t>(rank_rows_[t]));
    Counter(std::string("export.untimed.") + kTypeNames[t], static_cast<int64_t>(rank_untimed_[t]));
  }
  // NVTX counters only where there is NVTX, so that other exports keep their rows.
  if (c.ranges || c.marks || c.range_ends_without_start || c.unended_ranges) {
    const std::pair<const char*, uint64_t> nvtx[] = {
        {"decoder.nvtx_ranges", c.ranges},
        {"decoder.nvtx_marks", c.marks},
        {"decoder.nvtx_range_ends_without_start", c.range_ends_without_start},
        {"decoder.nvtx_unended_ranges", c.unended_ranges},
        {"decoder.nvtx_unresolved_names", c.unresolved_range_names},
        {"export.rows.nvtx", nvtx_rows_},
        {"export.untimed.nvtx", nvtx_untimed_},
    };
    for (const auto& [name, v] : nvtx) Counter(name, static_cast<int64_t>(v));
  }
  for (const auto& [name, d] : nvtx_domains_)
    Defer(kInsertNvtxDomain, {I(d.start), I(nsys::kEventTypeNvtxDomainCreate), T(name),
                              I(d.global_tid), I(d.id)});
}

// ---- closing (caller's thread, writer stopped) ----

void SqliteSink::WriteDeferred(SqliteConnection& conn) {
  // Statements by text: a few kinds of row, prepared once each.
  std::map<const char*, sqlite3_stmt*> prepared;
  const auto insert = [&](const char* sql, const std::vector<Value>& values) {
    if (!conn.error.empty()) return;
    sqlite3_stmt*& s = prepared[sql];
    if (!s && sqlite3_prepare_v2(conn.db, sql, -1, &s, nullptr) != SQLITE_OK) {
      conn.Fail(std::string("preparing ") + std::string(sql).substr(0, 40));
      return;
    }
    for (size_t i = 0; i < values.size(); ++i) {
      const Value& v = values[i];
      const int at = static_cast<int>(i) + 1;
      if (v.kind == Value::kInt) sqlite3_bind_int64(s, at, v.i);
      else if (v.kind == Value::kText)
        sqlite3_bind_text(s, at, v.text.data(), static_cast<int>(v.text.size()), SQLITE_STATIC);
      else sqlite3_bind_null(s, at);
    }
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) conn.Fail(std::string("writing ") + std::string(sql).substr(0, 40));
  };
  for (size_t id = 0; id < strings_.strings().size(); ++id)
    insert(kInsertString, {Value{Value::kInt, static_cast<int64_t>(id + 1), {}},
                           Value{Value::kText, 0, *strings_.strings()[id]}});
  // Synchronization rows written before their context's first GPU row: the device it had.
  for (const SyncFix& f : sync_fixes_) {
    for (const auto& [context, device] : f.context_devices)
      conn.Exec("UPDATE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION SET deviceId = " + std::to_string(device) +
           " WHERE globalPid = " + std::to_string(f.global_pid) +
           " AND contextId = " + std::to_string(context) + " AND deviceId = -1");
  }
  for (const DeferredRow& row : deferred_) insert(row.insert, row.values);
  const std::string session_start = UtcTime(base_);
  insert(kInsertSessionStart, {Value{Value::kInt, base_, {}}, Value{Value::kText, 0, session_start}});
  const std::pair<const char*, std::string> meta[] = {
      {"EXPORT_SCHEMA_VERSION", nsys::kSchemaVersion},
      {"CUPMON_SCHEMA_SOURCE",
       std::string(nsys::kSchemaRelease) + " Analysis Guide, SQLite Schema Reference"},
      {"CUPMON_EXPORTER", std::string("cupmon-decode ") + CUPMON_VERSION_STRING},
      {"CUPMON_TIME_BASE", "ns since TARGET_INFO_SESSION_START_TIME.utcEpochNs (unix ns), on the "
                           "wall clock through each rank's calibration"},
  };
  for (const auto& [name, value] : meta)
    insert(kInsertMeta, {Value{Value::kText, 0, name}, Value{Value::kText, 0, value}});
  for (auto& [sql, s] : prepared) sqlite3_finalize(s);
}

// The second file's tables copied into the database's, which are empty and have the same
// indexes (built by the writer thread): INSERT INTO ... SELECT * between identical tables, which
// SQLite runs as a transfer of records and index entries. The ENUM tables are the database's own
// (Create and CreateNvtxTables filled them in both).
void SqliteSink::BringInRest() {
  SqliteConnection& main = conns_[kMain];
  SqliteConnection& rest = conns_[kRest];
  const bool nvtx = rest.nvtx;
  if (nvtx) main.CreateNvtxTables();
  char* attach = sqlite3_mprintf("ATTACH DATABASE %Q AS cupmon_rest", rest.path.c_str());
  const bool attached = main.Exec(attach);
  sqlite3_free(attach);
  if (!attached) return;
  main.Exec("BEGIN");
  const auto copy = [&](std::span<const nsys::Table> tables) {
    for (const nsys::Table& t : tables) {
      const std::string_view name = t.name;
      if (name == kBatched[kKernel].table || name.find("ENUM_") != std::string_view::npos) continue;
      main.Exec(std::string("INSERT INTO main.") + t.name + " SELECT * FROM cupmon_rest." + t.name);
    }
  };
  copy(nsys::Tables());
  if (nvtx) copy(nsys::NvtxTables());
  main.Exec("COMMIT");
  const std::string error = main.error;
  main.error.clear();
  main.Exec("DETACH DATABASE cupmon_rest");
  if (!error.empty()) main.error = error;
}

Expected<void> SqliteSink::Close() {
  for (int t = 0; t < kTableCount; ++t) batches_.Submit(static_cast<Table>(t));
  batches_.Stop();
  SqliteConnection& main = conns_[kMain];
  SqliteConnection& rest = conns_[kRest];
  // This thread writes what is left into the second connection where there is one (the main
  // writer builds the kernel indexes meanwhile), else into the main one.
  SqliteConnection& mine = split() ? rest : main;
  batches_.Join(split() ? kRest : kMain);
  if (!failed()) {
    // The batched tables' pages into the database first: what follows (the synchronization
    // rows' device fix, the indexes) reads them through SQLite.
    if (mine.pages) mine.MovePagesIn();
    WriteDeferred(mine);  // the connection and its error are this thread's once its writer is joined
    // The sorter may use helper threads for the index builds.
    const unsigned cpus = std::thread::hardware_concurrency();
    mine.Exec("PRAGMA threads = " + std::to_string(std::min(4u, cpus > 1 ? cpus - 1 : 0u)));
    mine.Exec(kCacheIndexes);
    for (const nsys::Index& index : nsys::Indexes())
      if (!mine.indexes_made.count(index.name)) mine.Exec(nsys::CreateIndex(index));
    mine.Exec("COMMIT");
  }
  batches_.Join(kMain);
  if (main.error.empty() && !rest.error.empty()) main.error = rest.error;
  if (main.error.empty() && !failed() && last_write_ && main.Exec("BEGIN")) {
    const std::string error = last_write_(main.db);
    if (error.empty()) main.Exec("COMMIT");
    else main.error = error;
  }
  rest.CloseDb();
  if (main.error.empty() && !failed() && split()) BringInRest();
  main.CloseDb();
  if (split()) unlink(rest.path.c_str());
  if (main.error.empty() && rename(main.path.c_str(), path_.c_str()) != 0)
    main.error = "renaming " + main.path + " onto it: " + std::strerror(errno);
  closed_ = true;
  if (!main.error.empty()) {
    unlink(main.path.c_str());
    return unexpected(Error{"cannot write " + path_ + ": " + main.error});
  }
  return {};
}

}  // namespace cupmon::decoder
