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

#include "cupmon/decoder/record_layout.h"
#include "export/sqlite/nsys_schema.h"
#include "export/sqlite/sqlite_tables.h"

namespace cupmon::decoder {
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

// ---- thread ids (caller's thread) ----

int64_t SqliteSink::ThreadTid(uint32_t cupti_pid, uint32_t cupti_tid) {
  const uint64_t key = static_cast<uint64_t>(cupti_pid) << 32 | cupti_tid;
  if (key == rank_.last_thread_key) return rank_.last_thread_tid;
  auto [it, inserted] = rank_.threads.try_emplace(key, 0);
  if (inserted) {
    const auto number =
        static_cast<uint32_t>(std::min<size_t>(rank_.threads.size(), nsys::kIdMask24));
    it->second = nsys::GlobalTid(rank_.global_pid, number);
    int64_t* c = batches_.NewRow(kThreads);
    c[0] = it->second;
    c[1] = cupti_tid;
    c[2] = cupti_pid;
    batches_.RowDone(kThreads);
  }
  rank_.last_thread_key = key;
  rank_.last_thread_tid = it->second;
  return it->second;
}

// ---- rows (caller's thread) ----

void SqliteSink::Begin(const TraceBuilder& /*builder*/, const Recording& recording,
                       const Rank* rank) {
  const auto& h = recording.header;
  const uint32_t node = facts_.NodeFor(h.host(), h.pid());
  rank_.Begin(rank, node, nsys::GlobalPid(node, h.pid()));
  strings_.BeginRank();
}

void SqliteSink::Write(const Row& r) {
  if (failed()) return;
  int type = kRowKernel;
  switch (r.type) {
    case RowType::kKernel: type = kRowKernel; break;
    case RowType::kMemcpy: type = kRowMemcpy; break;
    case RowType::kMemset: type = kRowMemset; break;
    case RowType::kApi: type = r.nested || r.duplicate ? kRowSecondary : kRowRuntime; break;
    case RowType::kSynchronization: type = kRowSync; break;
    case RowType::kRange:
      WriteRange(r);
      return;
    case RowType::kMemory:
      return;  // never asked for (the sink does not answer WantsMemory)
  }
  if (!r.valid_time) {
    ++rank_.untimed[type];
    return;
  }
  ++rank_.rows[type];
  ++activity_rows_;
  if (r.external_id) Annotate(r);
  int64_t* c = nullptr;
  switch (r.type) {
    case RowType::kKernel: {
      rank_.NoteDevice(r.context, r.device);
      const SqliteStrings::KernelNames& n = strings_.KernelNamesOf(r);
      c = batches_.NewRow(kKernel);
      c[7] = n.demangled;
      c[8] = n.short_name;
      c[9] = n.mangled ? n.mangled : kNull;
      c[10] = r.launch.registers;
      c[11] = r.launch.grid[0];
      c[12] = r.launch.grid[1];
      c[13] = r.launch.grid[2];
      c[14] = r.launch.block[0];
      c[15] = r.launch.block[1];
      c[16] = r.launch.block[2];
      c[17] = r.launch.static_smem;
      c[18] = r.launch.dynamic_smem;
      // CUPTI: 0 when not launched by a graph
      c[19] = r.launch.graph_id ? r.launch.graph_id : kNull;
      break;
    }
    case RowType::kMemcpy: {
      rank_.NoteDevice(r.context, r.device);
      c = batches_.NewRow(kMemcpy);
      c[7] = static_cast<int64_t>(r.bytes);
      c[8] = r.copy.kind;
      c[9] = nsys::MemKind(r.copy.src_kind);
      c[10] = nsys::MemKind(r.copy.dst_kind);
      // Only peer-to-peer copies (CUpti_ActivityMemcpyPtoP) name their source and destination.
      const bool peer = r.kind == kKindMemcpy2;
      c[11] = peer ? r.copy.src_device : kNull;
      c[12] = peer ? r.copy.dst_device : kNull;
      break;
    }
    case RowType::kMemset:
      rank_.NoteDevice(r.context, r.device);
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
      if (r.context == rank_.last_context) {
        device = rank_.last_device;
      } else {
        auto it = rank_.context_devices.find(r.context);
        if (it != rank_.context_devices.end()) device = it->second;
      }
      if (device < 0) ++rank_.sync_unknown_device;
      c = batches_.NewRow(kSync);
      c[2] = device;
      c[7] = r.sync.type;
      c[8] = r.sync.event_id;
      c[9] = static_cast<int64_t>(r.sync.event_sync_id);
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
  c[6] = rank_.global_pid;
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
    ++rank_.nvtx_untimed;
    return;
  }
  ++rank_.nvtx_rows;
  const int64_t tid = ThreadTid(r.pid, r.tid);
  int64_t domain = 0;
  if (!r.range_domain.empty()) {
    auto [it, inserted] = rank_.nvtx_domains.try_emplace(std::string(r.range_domain));
    if (inserted) {
      it->second.id = static_cast<int64_t>(rank_.nvtx_domains.size());
      it->second.start = Rel(r.wall_start);
      it->second.global_tid = tid;
    }
    it->second.start = std::min(it->second.start, Rel(r.wall_start));
    domain = it->second.id;
  }
  const bool mark = r.nvtx.kind == RangeKind::kMark;
  const int64_t name = strings_.Id(r.name);
  int64_t* c = batches_.NewRow(kNvtx);
  c[0] = Rel(r.wall_start);
  c[1] = mark || !r.nvtx.ended ? kNull : Rel(r.wall_end);
  c[2] = mark                                  ? nsys::kEventTypeNvtxMark
         : r.nvtx.kind == RangeKind::kStartEnd ? nsys::kEventTypeNvtxStartEndRange
                                               : nsys::kEventTypeNvtxPushPopRange;
  c[3] = mark ? kNull : r.nvtx.id;
  c[4] = tid;
  c[5] = name;
  c[6] = domain;
  batches_.RowDone(kNvtx);
}

void SqliteSink::Annotate(const Row& r) {
  auto [it, inserted] = rank_.annotations.try_emplace(r.external_id);
  SqliteRankState::Annotation& a = it->second;
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
      (r.type != RowType::kApi && r.type != RowType::kSynchronization && !r.api.found)) {
    int64_t* c = batches_.NewRow(kCorrelationAnnotations);
    c[0] = rank_.global_pid;
    c[1] = r.correlation;
    c[2] = static_cast<int64_t>(r.external_id);
    batches_.RowDone(kCorrelationAnnotations);
  }
}

// ---- per-rank facts (kept for Close) ----

void SqliteSink::End(const TraceBuilder& b, const Recording& rec, const ReadIntegrity& integrity) {
  facts_.AddRank(b, rec, integrity, rank_, strings_, base_);
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
    facts_.Write(mine, strings_, base_);  // the connection and its error are this thread's once its writer is joined
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
