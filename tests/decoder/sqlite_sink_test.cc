// `export --format sqlite` (decoder/src/export/sqlite/) on synthetic recordings whose every
// record is known: nsys's tables, ids and joins, cupmon's own tables, and the file policy.
// Built only where SQLite is found; the real recordings are checked by sqlite_export_test.py.
#include <sqlite3.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cupmon/decoder/record_layout.h"
#include "cupmon/decoder/reports.h"
#include "report_run.h"
#include "export/sqlite/sqlite_sink.h"
#include "recording_builder.h"
#include "sqlite_test_db.h"
#include "test_util.h"

namespace cupmon::decoder {
namespace {
// The text and exit codes cupmon-decode would show (report_run.h).
using ::cupmon::testing::ReportOptions;
using ::cupmon::testing::RunReport;
using ::cupmon::testing::kExitClean, ::cupmon::testing::kExitRegression,
    ::cupmon::testing::kExitUnusable, ::cupmon::testing::kExitWarnings;

using testing::BufferBuilder;
using testing::kT0;
using testing::TempDir;

constexpr int64_t kBase = static_cast<int64_t>(kT0) - 1'000'000'000;  // the header's process start
constexpr int64_t kGlobalPid = int64_t{testing::kTestPid} << 24;

using Db = testing::SqliteDb;

void WriteRecording(const std::string& dir, const std::vector<std::vector<uint8_t>>& buffers,
                    const std::vector<std::pair<uint64_t, std::string>>& strings) {
  RecordingWriter w(testing::WriterOptions(dir), testing::SyntheticHeader());
  ASSERT_TRUE(w.Open().has_value());
  std::vector<pb::StringEntry> entries;
  for (const auto& [ptr, text] : strings) {
    entries.emplace_back();
    entries.back().set_pointer(ptr);
    entries.back().set_text(text);
  }
  w.AddStrings(entries);
  for (const auto& b : buffers) w.WriteRawBuffer(b, 0, 0);
  w.Close(0);
}

int Export(const std::string& in, const std::string& out_path, std::string* err_text = nullptr,
           ReportOptions opt = {}) {
  opt.format = ExportFormat::kSqlite;
  opt.output_path = out_path;
  std::ostringstream out, err;
  const int rc = RunReport(ReportKind::kExport, in, opt, out, err);
  if (err_text) *err_text = err.str();
  EXPECT_EQ(out.str(), "") << "the SQLite export writes nothing to the stream";
  return rc;
}

// Everything the export knows how to write, once.
void WriteEverything(const std::string& dir) {
  BufferBuilder sync, api, gpu;
  // A stream synchronization before any GPU row of its context told its device.
  sync.Add(kKindSynchronization, {{Field::kSyncType, 3}, {Field::kStart, kT0 + 400},
                                  {Field::kEnd, kT0 + 900}, {Field::kCorrelationId, 7},
                                  {Field::kContextId, 1}, {Field::kStreamId, 7},
                                  {Field::kEventId, 0xFFFFFFFF}});
  api.Runtime(kT0 + 100, kT0 + 200, 5, 211)       // cudaLaunchKernel
      .Driver(kT0 + 120, kT0 + 180, 5, 307)       // cuLaunchKernel made by it: nested
      .Runtime(kT0 + 210, kT0 + 215, 5, 10)       // cudaGetLastError with the launch's id (nsys
                                                  // seed 003): a second record of that id
      .Driver(kT0 + 300, kT0 + 310, 6, 307, 102)  // cuLaunchKernel called directly, other thread
      .Runtime(kT0 + 400, kT0 + 900, 7, 165)      // cudaDeviceSynchronize
      .External(5, 42);
  gpu.Kernel(kT0 + 250, kT0 + 400, 5, 0x10)
      .Kernel(kT0 + 320, kT0 + 330, 6, 0x99)  // no string entry: unresolved
      .Kernel(0, 0, 9, 0x10)                  // zero timestamps: cannot be placed
      .Add(kKindMemset, {{Field::kMemsetValue, 0xAB}, {Field::kBytes, 4096}, {Field::kStart, kT0 + 500},
                         {Field::kEnd, kT0 + 510}, {Field::kDeviceId, 0}, {Field::kContextId, 1},
                         {Field::kStreamId, 7}, {Field::kCorrelationId, 8}})
      .Add(kKindMemcpy2, {{Field::kCopyKind, 10}, {Field::kSrcKind, 3}, {Field::kDstKind, 3},
                          {Field::kBytes, 1 << 20}, {Field::kStart, kT0 + 600}, {Field::kEnd, kT0 + 700},
                          {Field::kDeviceId, 0}, {Field::kContextId, 1}, {Field::kStreamId, 7},
                          {Field::kSrcDeviceId, 0}, {Field::kDstDeviceId, 1},
                          {Field::kCorrelationId, 10}});
  WriteRecording(dir, {sync.bytes(), api.bytes(), gpu.bytes()},
                 {{0x10, "_ZN2at6native6kernelIfEEvPT_i"}, {42, "step 1"}});
}

TEST(SqliteSinkTest, FillsTheNsysTablesWithNsysIds) {
  TempDir dir, out;
  WriteEverything(dir.path());
  const std::string db_path = out.path() + "/x.sqlite";
  std::string err;
  EXPECT_EQ(Export(dir.path(), db_path, &err), kExitWarnings) << err;  // the unresolved name
  Db db(db_path);
  EXPECT_EQ(db.Text("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'"), "3.28.1");
  EXPECT_EQ(db.Int("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME"), kBase);

  // Kernels: times since the session start, the rank's globalPid, nsys's three names.
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 2);
  EXPECT_EQ(db.Text("SELECT start || ' ' || end || ' ' || globalPid || ' ' || gridX || ' ' || "
                    "deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId = 5"),
            std::to_string(1'000'000'250) + " " + std::to_string(1'000'000'400) + " " +
                std::to_string(kGlobalPid) + " 128 0");
  EXPECT_EQ(db.Text("SELECT d.value || '|' || s.value || '|' || m.value FROM "
                    "CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d ON d.id = k.demangledName JOIN "
                    "StringIds s ON s.id = k.shortName JOIN StringIds m ON m.id = k.mangledName "
                    "WHERE k.correlationId = 5"),
            "void at::native::kernel<float>(float*, int)|kernel|_ZN2at6native6kernelIfEEvPT_i");
  EXPECT_EQ(db.Text("SELECT mangledName FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId = 6"),
            "NULL");
  EXPECT_EQ(db.Text("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = "
                    "k.shortName WHERE k.correlationId = 6"),
            "<unresolved kernel name 0x99>");

  // API calls: runtime and direct driver calls in the runtime table; the driver call the runtime
  // made and the second record of the launch's id are left out of it, so the launch join finds
  // one call per kernel.
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"), 3);
  EXPECT_EQ(db.Text("SELECT group_concat(n.value || ':' || e.label, ',') FROM CUPMON_SECONDARY_API s "
                    "JOIN StringIds n ON n.id = s.nameId JOIN CUPMON_ENUM_SECONDARY_API_REASON e ON "
                    "e.id = s.reason WHERE s.correlationId = 5"),
            "cuLaunchKernel:Driver call made by the runtime call of its correlation id,"
            "cudaGetLastError_v3020:Later record of a correlation id another call of its kind holds");
  EXPECT_EQ(db.Text("SELECT group_concat(k.correlationId || ':' || n.value || ':' || e.label, ',') "
                    "FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r "
                    "ON k.correlationId = r.correlationId AND k.globalPid = (r.globalTid & "
                    "0xFFFFFFFFFF000000) LEFT JOIN ENUM_NSYS_EVENT_CLASS AS e ON r.eventClass = "
                    "e.id LEFT JOIN StringIds AS n ON r.nameId = n.id WHERE r.callchainId IS NULL "
                    "ORDER BY k.correlationId"),
            "5:cudaLaunchKernel_v7000:CUDA runtime,6:cuLaunchKernel:CUDA driver");
  // Threads get numbers from 1 in the order they first call; CUPMON_THREADS keeps CUPTI's ids.
  EXPECT_EQ(db.Int("SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 5"),
            kGlobalPid | 1);
  EXPECT_EQ(db.Int("SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE correlationId = 6"),
            kGlobalPid | 2);
  EXPECT_EQ(db.Int("SELECT cuptiThreadId FROM CUPMON_THREADS WHERE globalTid = " +
                   std::to_string(kGlobalPid | 2)),
            102);

  // Synchronization: the device of its context (found after the row was written), nsys's enum.
  EXPECT_EQ(db.Text("SELECT y.deviceId || ' ' || t.label || ' ' || y.correlationId || ' ' || "
                    "y.globalPid FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y JOIN "
                    "ENUM_CUPTI_SYNC_TYPE t ON t.id = y.syncType"),
            "0 Stream sync 7 " + std::to_string(kGlobalPid));
  // Memset value and a peer-to-peer copy's devices and memory kinds (nsys's numbering).
  EXPECT_EQ(db.Text("SELECT value || ' ' || bytes FROM CUPTI_ACTIVITY_KIND_MEMSET"), "171 4096");
  EXPECT_EQ(db.Text("SELECT e.label || ' ' || m.srcDeviceId || ' ' || m.dstDeviceId || ' ' || "
                    "s.label FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN ENUM_CUDA_MEMCPY_OPER e ON "
                    "e.id = m.copyKind JOIN ENUM_CUDA_MEM_KIND s ON s.id = m.srcKind"),
            "Peer-to-Peer 0 1 Device");

  // cupmon's facts: the rank, the untimed kernel, the annotation and what it covers.
  EXPECT_EQ(db.Text("SELECT host || ' ' || pid || ' ' || node || ' ' || synthetic FROM CUPMON_RANKS"),
            "synthetic-host 4242 0 1");
  EXPECT_EQ(db.Int("SELECT value FROM CUPMON_COUNTERS WHERE name = 'export.untimed.kernel'"), 1);
  EXPECT_EQ(db.Int("SELECT value FROM CUPMON_COUNTERS WHERE name = 'decoder.unresolved_names'"), 1);
  EXPECT_EQ(db.Text("SELECT s.value || ' ' || a.rows FROM CUPMON_ANNOTATIONS a JOIN StringIds s "
                    "ON s.id = a.labelId"),
            "step 1 4");  // the launch, the driver call it made, the second record, the kernel
  EXPECT_EQ(db.Text("SELECT group_concat(correlationId) FROM CUPMON_CORRELATION_ANNOTATIONS"), "5");
  EXPECT_EQ(db.Text("SELECT id || ' ' || name || ' ' || computeMajor || ' ' || (uuid IS NULL) FROM "
                    "TARGET_INFO_GPU"),
            "0 Synthetic GPU (test double) 9 1");
  // Every column nsys declares, in nsys's order (a few checked; the list is nsys_schema.cc's).
  EXPECT_EQ(db.Text("SELECT group_concat(name) FROM pragma_table_info('CUPTI_ACTIVITY_KIND_RUNTIME')"),
            "start,end,eventClass,globalTid,correlationId,nameId,returnValue,callchainId");
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM pragma_table_info('CUPTI_ACTIVITY_KIND_KERNEL')"), 40);
}

// Every row of the batched tables and StringIds, every column, in rowid order, as text.
std::string Dump(const std::string& path) {
  Db db(path);
  std::string all;
  for (const char* t : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                        "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME",
                        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPMON_SECONDARY_API",
                        "CUPMON_THREADS", "CUPMON_CORRELATION_ANNOTATIONS", "StringIds",
                        "NVTX_EVENTS"}) {
    if (db.Int(std::string("SELECT COUNT(*) FROM sqlite_master WHERE name = '") + t + "'") == 0)
      continue;  // NVTX_EVENTS: only with NVTX rows
    const std::string row = db.Text(std::string("SELECT 'quote(rowid)' || group_concat(' || '','' "
                                                "|| quote(' || name || ')', '') FROM "
                                                "pragma_table_info('") + t + "')");
    all += std::string(t) + ": " +
           db.Text("SELECT group_concat(" + row + ", ';') FROM (SELECT rowid, * FROM " + t +
                   " ORDER BY rowid)") +
           "\n";
  }
  return all;
}

// The rows of the first recording in `in` through a sink made with `options`; `before_close`
// runs after the last row, before Close; `paged` and `paged_indexes` get the tables and the
// indexes written as cupmon's pages.
Expected<void> WriteWith(const std::string& in, const std::string& path, SqliteSink::Options options,
                         uint64_t* activity_rows = nullptr,
                         const std::function<void()>& before_close = {},
                         std::vector<std::string>* paged = nullptr,
                         std::vector<std::string>* paged_indexes = nullptr) {
  auto listing = ListRecordings(in);
  if (!listing) return unexpected(listing.error());
  auto sink = SqliteSink::Create(path, options);
  if (!sink) return unexpected(sink.error());
  struct Forward : RowSink {
    SqliteSink* s;
    void OnRow(const Row& r) override { s->Write(r); }
    bool WantsSynchronization() const override { return true; }
    bool WantsRanges() const override { return true; }
  } forward;
  forward.s = sink->get();
  const Recording& rec = listing->recordings.at(0);
  TraceBuilder b(TraceFilter{}, &forward);
  (*sink)->Begin(b, rec, nullptr);
  ReadIntegrity integrity;
  ReadRecording(rec, b, &integrity);
  b.Finish();
  (*sink)->End(b, rec, integrity);
  if (before_close) before_close();
  auto closed = (*sink)->Close();
  if (paged) *paged = (*sink)->PagedTables();  // NVTX_EVENTS may come with Close's last batches
  if (paged_indexes) *paged_indexes = (*sink)->PagedIndexes();
  if (activity_rows) *activity_rows = (*sink)->activity_rows();
  return closed;
}

std::vector<std::string> Listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(SqliteSinkTest, TheWriterThreadsWriteWhatTheCallerWouldWrite) {
  // The same rows through a sink with two connections and writer threads (the kernel rows in
  // the database's, the rest copied in from a second file), one connection with its writer
  // thread, and one without a thread.
  TempDir dir, out;
  WriteEverything(dir.path());
  std::vector<std::string> dumps, schemas;
  // The batched tables' pages written by cupmon (the default) and by SQLite's INSERTs.
  const SqliteSink::Options configs[] = {
      {true, true, {}}, {true, false, {}}, {false, false, {}}, {true, false, {}, false}};
  int n = 0;
  for (const SqliteSink::Options& options : configs) {
    const std::string path = out.path() + "/" + std::to_string(n++) + ".sqlite";
    uint64_t rows = 0;
    auto written = WriteWith(dir.path(), path, options, &rows);
    ASSERT_TRUE(written.has_value()) << written.error().message;
    // 2 kernels, 3 calls and 2 secondary ones, a memset, a memcpy, a synchronization.
    EXPECT_EQ(rows, 10u);
    dumps.push_back(Dump(path));
    Db db(path);
    // Tables, columns and indexes, in the order they were created.
    schemas.push_back(db.Text("SELECT group_concat(type || ' ' || name || ' ' || sql, ';') FROM "
                              "(SELECT * FROM sqlite_master ORDER BY rowid)"));
    EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok");
    // The kernel-launch join through the indexes, and the ENUM rows once.
    EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                     "CUPTI_ACTIVITY_KIND_RUNTIME r INDEXED BY CUPMON_RUNTIME_CORRELATION ON "
                     "k.correlationId = r.correlationId AND k.globalPid = (r.globalTid & "
                     "0xFFFFFFFFFF000000)"),
              2);
    EXPECT_EQ(db.Int("SELECT COUNT(*) FROM ENUM_CUDA_MEM_KIND"), 8);
  }
  EXPECT_EQ(Listing(out.path()),
            (std::vector<std::string>{"0.sqlite", "1.sqlite", "2.sqlite", "3.sqlite"}));
  for (size_t i = 1; i < dumps.size(); ++i) {
    EXPECT_EQ(dumps[0], dumps[i]) << i;
    EXPECT_EQ(schemas[0], schemas[i]) << i;
  }
  EXPECT_NE(dumps[0].find("cudaLaunchKernel"), std::string::npos);
  EXPECT_NE(schemas[0].find("index CUPMON_KERNEL_START"), std::string::npos);
}

TEST(SqliteSinkTest, TheSecondFileIsRemovedAfterwardsAndOnFailure) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: one connection, no second file";
  TempDir dir, out, scratch;
  WriteEverything(dir.path());
  const std::string path = out.path() + "/x.sqlite";
  // Written: the second file (in `scratch`) existed while rows streamed and is gone.
  bool seen = false;
  auto written = WriteWith(dir.path(), path, {true, true, scratch.path()}, nullptr,
                           [&] { seen = Listing(scratch.path()).size() == 1; });
  ASSERT_TRUE(written.has_value()) << written.error().message;
  EXPECT_TRUE(seen);
  EXPECT_TRUE(std::filesystem::is_empty(scratch.path()));
  EXPECT_EQ(Listing(out.path()), std::vector<std::string>{"x.sqlite"});
  EXPECT_EQ(Db(path).Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 2);
  // The second file lost before Close copies it (removed: ATTACH cannot open it): Close fails,
  // naming the file, and leaves the old database alone.
  const auto size = testing::ReadAll(path).size();
  auto lost = WriteWith(dir.path(), path, {true, true, scratch.path()}, nullptr, [&] {
    for (const auto& name : Listing(scratch.path())) std::filesystem::remove(scratch.path() + "/" + name);
  });
  ASSERT_FALSE(lost.has_value());
  EXPECT_NE(lost.error().message.find("cannot write " + path), std::string::npos) << lost.error().message;
  EXPECT_NE(lost.error().message.find("unable to open database: " + scratch.path() + "/x.sqlite.rest."),
            std::string::npos)
      << lost.error().message;
  EXPECT_TRUE(std::filesystem::is_empty(scratch.path()));
  EXPECT_EQ(Listing(out.path()), std::vector<std::string>{"x.sqlite"});
  EXPECT_EQ(testing::ReadAll(path).size(), size);
  // A sink dropped without Close (the export stopped on an error) removes both files.
  {
    auto sink = SqliteSink::Create(out.path() + "/dropped.sqlite", {true, true, scratch.path()});
    ASSERT_TRUE(sink.has_value()) << sink.error().message;
    EXPECT_EQ(Listing(scratch.path()).size(), 1u);
  }
  EXPECT_TRUE(std::filesystem::is_empty(scratch.path()));
  EXPECT_EQ(Listing(out.path()), std::vector<std::string>{"x.sqlite"});
}

TEST(SqliteSinkTest, ASecondFileThatCannotBeCreatedFailsAtOnceAndLeavesNothing) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: one connection, no second file";
  TempDir out;
  const std::string missing = out.path() + "/no/such/dir";
  auto sink = SqliteSink::Create(out.path() + "/x.sqlite", {true, true, missing});
  ASSERT_FALSE(sink.has_value());
  EXPECT_NE(sink.error().message.find("cannot write " + out.path() + "/x.sqlite: cannot create a "
                                      "temporary file in " + missing + ": "),
            std::string::npos)
      << sink.error().message;
  EXPECT_TRUE(std::filesystem::is_empty(out.path()));  // the database's temporary removed too
  // Without the second connection the same directory is not needed.
  auto one = SqliteSink::Create(out.path() + "/x.sqlite", {true, false, missing});
  ASSERT_TRUE(one.has_value()) << one.error().message;
  ASSERT_TRUE((*one)->Close().has_value());
  EXPECT_EQ(Listing(out.path()), std::vector<std::string>{"x.sqlite"});
}

TEST(SqliteSinkTest, ManyRowsCrossManyBatches) {
  // Batches of 4096 rows (a statement each) and a tail.
  TempDir dir, out;
  BufferBuilder api, gpu;
  constexpr uint32_t kN = 20'000;
  for (uint32_t i = 0; i < kN; ++i) {
    api.Runtime(kT0 + 1000 * i, kT0 + 1000 * i + 100, 100 + i, 211, 101 + i % 3);
    gpu.Kernel(kT0 + 1000 * i + 200, kT0 + 1000 * i + 300, 100 + i, 0x10, 7 + i % 2);
  }
  api.Runtime(kT0 + 1000 * kN, kT0 + 1000 * kN + 1, 99, 10);  // one more: a tail of 1
  WriteRecording(dir.path(), {api.bytes(), gpu.bytes()}, {{0x10, "_Z1kv"}});
  const std::string db_path = out.path() + "/x.sqlite";
  ASSERT_EQ(Export(dir.path(), db_path), kExitClean);
  Db db(db_path);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), kN);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"), kN + 1);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPMON_THREADS"), 3);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                   "CUPTI_ACTIVITY_KIND_RUNTIME r ON k.correlationId = r.correlationId AND "
                   "k.globalPid = (r.globalTid & 0xFFFFFFFFFF000000)"),
            kN);
  EXPECT_EQ(db.Int("SELECT SUM(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"), int64_t{100} * kN);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index'"), 8);
  // --limit counts rows of every table.
  ReportOptions limited;
  limited.limit = 1000;
  ASSERT_EQ(Export(dir.path(), db_path, nullptr, limited), kExitClean);
  Db small(db_path);
  EXPECT_EQ(small.Int("SELECT (SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL) + (SELECT "
                      "COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME)"),
            1000);
}

TEST(SqliteSinkTest, OwnPagesHoldWhatSqlitesInsertsHold) {
  // Enough rows for trees of many leaves (kernel, runtime and synchronization tables), written
  // once as cupmon's pages and once through SQLite: the same rows, rowids, indexes and answers.
  TempDir dir, out;
  BufferBuilder api, gpu;
  constexpr uint32_t kN = 30'000;
  for (uint32_t i = 0; i < kN; ++i) {
    api.Runtime(kT0 + 1000 * i, kT0 + 1000 * i + 100, 100 + i, 211, 101 + i % 3);
    gpu.Kernel(kT0 + 1000 * i + 200, kT0 + 1000 * i + 300 + i % 7, 100 + i, 0x10 + i % 2 * 0x10,
               7 + i % 3);
    if (i % 10 == 0)
      gpu.Memset(kT0 + 1000 * i + 400, kT0 + 1000 * i + 450, 1'000'000 + i,
                 uint64_t{1} << (i % 40));
  }
  WriteRecording(dir.path(), {api.bytes(), gpu.bytes()}, {{0x10, "_Z1kv"}, {0x20, "_Z1mv"}});
  std::string dumps[2];
  for (int own = 0; own < 2; ++own) {
    const std::string path = out.path() + "/" + std::to_string(own) + ".sqlite";
    SqliteSink::Options options;
    options.own_pages = own == 1;
    std::vector<std::string> paged, paged_indexes;
    auto written = WriteWith(dir.path(), path, options, nullptr, {}, &paged, &paged_indexes);
    ASSERT_TRUE(written.has_value()) << written.error().message;
    // Every batched table but CUPMON_THREADS (its INTEGER PRIMARY KEY is the rowid) as pages;
    // NVTX_EVENTS is created with the first NVTX rows, and there are none here.
    const std::vector<std::string> all = {"CUPTI_ACTIVITY_KIND_KERNEL",
                                          "CUPTI_ACTIVITY_KIND_MEMCPY",
                                          "CUPTI_ACTIVITY_KIND_MEMSET",
                                          "CUPTI_ACTIVITY_KIND_RUNTIME",
                                          "CUPMON_SECONDARY_API",
                                          "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                                          "CUPMON_CORRELATION_ANNOTATIONS"};
    EXPECT_EQ(paged, own ? all : std::vector<std::string>{});
    // And every index: all eight are on those tables.
    const std::vector<std::string> indexes = {"CUPMON_CORRELATION_ANNOTATIONS_CORRELATION",
                                              "CUPMON_KERNEL_CORRELATION",
                                              "CUPMON_KERNEL_START",
                                              "CUPMON_MEMCPY_CORRELATION",
                                              "CUPMON_MEMSET_CORRELATION",
                                              "CUPMON_RUNTIME_CORRELATION",
                                              "CUPMON_RUNTIME_START",
                                              "CUPMON_SYNCHRONIZATION_CORRELATION"};
    EXPECT_EQ(paged_indexes, own ? indexes : std::vector<std::string>{});
    Db db(path);
    std::string names;
    for (const std::string& name : indexes) names += (names.empty() ? "" : ",") + name;
    EXPECT_EQ(db.Text("SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_master WHERE "
                      "type = 'index' ORDER BY name)"),
              names);
    EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok") << own;
    EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), kN);
    EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMSET"), kN / 10);
    EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN "
                     "CUPTI_ACTIVITY_KIND_RUNTIME r INDEXED BY CUPMON_RUNTIME_CORRELATION ON "
                     "k.correlationId = r.correlationId"),
              kN);
    EXPECT_EQ(db.Int("SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL INDEXED BY "
                     "CUPMON_KERNEL_START ORDER BY start DESC LIMIT 1"),
              100 + kN - 1);
    dumps[own] = Dump(path);
  }
  EXPECT_EQ(dumps[0], dumps[1]);
  EXPECT_GT(dumps[0].size(), 1'000'000u);
  // No temporary left beside the outputs (the pages' file is unlinked as it is made).
  EXPECT_EQ(Listing(out.path()), (std::vector<std::string>{"0.sqlite", "1.sqlite"}));
}

TEST(SqliteSinkTest, OwnPagesHoldNvtxRangesAsSqlitesInsertsDo) {
  // NVTX_EVENTS (REAL columns among its columns, left NULL): its batched rows go to the pages,
  // the domains' rows through SQLite after them.
  TempDir dir, out;
  testing::WriteNvtxRecording(dir.path());
  std::string dumps[2];
  for (int own = 0; own < 2; ++own) {
    const std::string path = out.path() + "/" + std::to_string(own) + ".sqlite";
    SqliteSink::Options options;
    options.own_pages = own == 1;
    std::vector<std::string> paged;
    auto written = WriteWith(dir.path(), path, options, nullptr, {}, &paged);
    ASSERT_TRUE(written.has_value()) << written.error().message;
    EXPECT_EQ(std::count(paged.begin(), paged.end(), "NVTX_EVENTS"), own);
    Db db(path);
    EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok") << own;
    EXPECT_EQ(db.Int("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)"), 7);
    dumps[own] = Dump(path);
  }
  EXPECT_EQ(dumps[0], dumps[1]);
  EXPECT_NE(dumps[0].find("NVTX_EVENTS: "), std::string::npos);
}

TEST(SqliteSinkTest, CellsSharedByABatchAndCellsThatDifferReadBackAsWritten) {
  // A batch's cells that every row shares are bound once as parameters (a statement per set of
  // shared cells); the others are read per row. Batch 0 (rows 0-4095): every kernel on stream 7
  // but row 4095 (stream 9), kernels named 0x10 but every 100th (0x20); batch 1: stream 7 and
  // name 0x10 throughout; then a tail of 5 rows. Each row must come back with its own values.
  TempDir dir, out;
  BufferBuilder api, gpu;
  constexpr uint32_t kN = 2 * 4096 + 5;
  for (uint32_t i = 0; i < kN; ++i) {
    api.Runtime(kT0 + 1000 * i, kT0 + 1000 * i + 100, 100 + i, 211);
    const uint64_t name = i < 4096 && i % 100 == 0 ? 0x20 : 0x10;
    gpu.Kernel(kT0 + 1000 * i + 200, kT0 + 1000 * i + 300, 100 + i, name, i == 4095 ? 9 : 7);
  }
  WriteRecording(dir.path(), {api.bytes(), gpu.bytes()}, {{0x10, "_Z1kv"}, {0x20, "_Z1mv"}});
  const std::string db_path = out.path() + "/x.sqlite";
  ASSERT_EQ(Export(dir.path(), db_path), kExitClean);
  Db db(db_path);
  const std::string k = "CUPTI_ACTIVITY_KIND_KERNEL";
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM " + k), kN);
  EXPECT_EQ(db.Text("SELECT group_concat(correlationId) FROM " + k + " WHERE streamId = 9"),
            std::to_string(100 + 4095));
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM " + k + " WHERE streamId = 7"), kN - 1);
  // Rows in correlation order, rowid i + 1 for row i: the name of every 100th of batch 0.
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM " + k + " k JOIN StringIds s ON s.id = k.mangledName "
                   "WHERE s.value = '_Z1mv'"),
            41);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM " + k + " k JOIN StringIds s ON s.id = k.mangledName "
                   "WHERE s.value = '_Z1mv' AND ((correlationId - 100) % 100 != 0 OR "
                   "correlationId - 100 >= 4096 OR k.rowid != correlationId - 99)"),
            0);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM " + k + " WHERE rowid != correlationId - 99 OR "
                   "end - start != 100 OR globalPid != " + std::to_string(kGlobalPid) +
                   " OR deviceId != 0 OR graphId IS NOT NULL OR mangledName IS NULL"),
            0);
  EXPECT_EQ(db.Text("PRAGMA integrity_check"), "ok");
}

TEST(SqliteSinkTest, ReplacesAFileAtomicallyAndLeavesNoTemporary) {
  TempDir dir, out;
  WriteEverything(dir.path());
  const std::string db_path = out.path() + "/x.sqlite";
  testing::WriteAll(db_path, {'n', 'o', 't', ' ', 'a', ' ', 'd', 'b'});
  // An input that cannot be read fails before anything is written: the file stays as it was.
  std::string err;
  EXPECT_EQ(Export(out.path() + "/missing", db_path, &err), kExitUnusable);
  EXPECT_EQ(testing::ReadAll(db_path).size(), 8u);
  EXPECT_EQ(Export(dir.path(), db_path, &err), kExitWarnings) << err;
  Db db(db_path);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 2);
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(out.path())) left.push_back(e.path().filename());
  EXPECT_EQ(left, std::vector<std::string>{"x.sqlite"});
  // Permissions as the other exports create files (the umask's), not mkstemp's 0600.
  struct stat st{};
  ASSERT_EQ(stat(db_path.c_str(), &st), 0);
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST(SqliteSinkTest, UnwritableOrMissingOutputFailsBeforeReading) {
  TempDir dir, out;
  WriteEverything(dir.path());
  std::string err;
  EXPECT_EQ(Export(dir.path(), out.path() + "/no/such/dir/x.sqlite", &err), kExitUnusable);
  EXPECT_NE(err.find("cannot write " + out.path() + "/no/such/dir/x.sqlite"), std::string::npos) << err;
  EXPECT_EQ(Export(dir.path(), out.path(), &err), kExitUnusable);
  EXPECT_NE(err.find("is a directory"), std::string::npos) << err;
  EXPECT_EQ(Export(dir.path(), "", &err), kExitUnusable);
  EXPECT_NE(err.find("give -o FILE"), std::string::npos) << err;
  EXPECT_TRUE(std::filesystem::is_empty(out.path()));
}

TEST(SqliteSinkTest, AnEmptyRegionGivesTheTablesWithNoRows) {
  TempDir dir, out;
  WriteEverything(dir.path());
  const std::string db_path = out.path() + "/x.sqlite";
  ReportOptions opt;
  opt.filter.from_rel = int64_t{3600} * 1'000'000'000;  // an hour after the first record
  std::string err;
  EXPECT_EQ(Export(dir.path(), db_path, &err, opt), kExitWarnings) << err;
  EXPECT_NE(err.find("holds no activity rows"), std::string::npos) << err;
  Db db(db_path);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"), 0);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"), 0);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPMON_RANKS"), 1);
  EXPECT_EQ(db.Text("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'"), "3.28.1");
}

TEST(SqliteSinkTest, CuptiBehindIntervalsAndTakeoverGapsFillTheirTables) {
  TempDir dir, out;
  {
    RecordingWriter w(testing::WriterOptions(dir.path()), testing::SyntheticHeader());
    ASSERT_TRUE(w.Open().has_value());
    BufferBuilder gpu;
    gpu.Kernel(kT0 + 250, kT0 + 400, 5, 0x10);
    w.WriteRawBuffer(gpu.bytes(), 0, 0);
    auto marker = [&](pb::WindowMarker::Edge edge, uint32_t id, uint64_t at, const char* note) {
      pb::WindowMarker m;
      m.set_window_id(id);
      m.set_edge(edge);
      m.set_cupti_ns(at);
      m.set_note(note);
      w.WriteWindowMarker(m);
    };
    marker(pb::WindowMarker::BEHIND_BEGIN, 1, kT0 + 100, "a flush took 1500 ms");
    marker(pb::WindowMarker::BEHIND_END, 1, kT0 + 500, "caught up");
    marker(pb::WindowMarker::BEHIND_BEGIN, 2, kT0 + 700, "still behind at stop");
    marker(pb::WindowMarker::GAP_BEGIN, 1, kT0 + 800, "another client");
    marker(pb::WindowMarker::GAP_END, 1, kT0 + 900, "taken back");
    w.Close(0);
  }
  const std::string db_path = out.path() + "/x.sqlite";
  std::string err;
  EXPECT_EQ(Export(dir.path(), db_path, &err), kExitWarnings) << err;  // CUPTI behind: warned
  Db db(db_path);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPMON_BEHIND"), 2);
  const int64_t first = db.Int("SELECT firstStart FROM CUPMON_RANKS");
  EXPECT_EQ(db.Int("SELECT start FROM CUPMON_BEHIND WHERE behindId = 1") - first, -150);
  EXPECT_EQ(db.Int("SELECT end - start FROM CUPMON_BEHIND WHERE behindId = 1"), 400);
  EXPECT_EQ(db.Text("SELECT note FROM CUPMON_BEHIND WHERE behindId = 1"),
            "a flush took 1500 ms / caught up");  // begin / end
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPMON_BEHIND WHERE behindId = 2 AND end IS NULL"), 1);
  EXPECT_EQ(db.Int("SELECT start FROM CUPMON_BEHIND WHERE behindId = 2") - first, 450);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM CUPMON_GAPS"), 1);
  EXPECT_EQ(db.Int("SELECT end - start FROM CUPMON_GAPS WHERE gapId = 1"), 100);
  EXPECT_EQ(db.Text("SELECT note FROM CUPMON_GAPS WHERE gapId = 1"), "another client / taken back");
}

TEST(SqliteSinkTest, NvtxRangesFillNvtxEventsInNsysShape) {
  TempDir dir, out;
  testing::WriteNvtxRecording(dir.path());
  const std::string db_path = out.path() + "/nvtx.sqlite";
  std::string err;
  EXPECT_EQ(Export(dir.path(), db_path, &err), kExitWarnings) << err;  // the unresolved name
  Db db(db_path);
  const auto us = [](int64_t n) {
    return std::to_string(static_cast<int64_t>(kT0) + n * 1000 - kBase);
  };
  const std::string nvtx =
      "SELECT COUNT(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId ";
  // The push/pop ranges (59), the mark (34), the unended range (end NULL).
  EXPECT_EQ(db.Int(nvtx + "WHERE s.value = 'inner' AND e.eventType = 59 AND e.start = " + us(20) +
                   " AND e.end = " + us(50) + " AND e.rangeId = 2 AND e.text IS NULL"),
            1);
  EXPECT_EQ(db.Int(nvtx + "WHERE s.value = 'checkpoint' AND e.eventType = 34 AND e.end IS NULL "
                          "AND e.rangeId IS NULL"),
            1);
  EXPECT_EQ(db.Int(nvtx + "WHERE s.value = 'never ended' AND e.eventType = 59 AND e.end IS NULL"),
            1);
  EXPECT_EQ(db.Int("SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)"), 7);
  // The thread: the same globalTid as the thread's API calls.
  EXPECT_EQ(db.Int(nvtx + "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.globalTid = e.globalTid "
                          "WHERE s.value = 't2 outer' AND r.correlationId = 2"),
            1);
  // The domain: a domainId and its eventType 75 row naming it; the default domain is 0.
  EXPECT_EQ(db.Text("SELECT d.text FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId "
                    "JOIN NVTX_EVENTS d ON d.eventType = 75 AND d.domainId = e.domainId "
                    "WHERE s.value = 'inner'"),
            "mylib");
  EXPECT_EQ(db.Int(nvtx + "WHERE s.value = 'outer' AND e.domainId = 0"), 1);
  // nsys's kernel-to-range join: the innermost range on the launch thread around the launch.
  EXPECT_EQ(db.Text("SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                    "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
                    "JOIN NVTX_EVENTS e ON e.globalTid = r.globalTid AND e.eventType = 59 "
                    "AND e.start <= r.start AND e.end >= r.end JOIN StringIds s ON s.id = e.textId "
                    "WHERE k.correlationId = 1 ORDER BY e.start DESC LIMIT 1"),
            "inner");
  EXPECT_EQ(db.Text("SELECT label FROM ENUM_NSYS_EVENT_TYPE WHERE id = 59"), "NVTX push/pop range");
  EXPECT_EQ(db.Int("SELECT value FROM CUPMON_COUNTERS WHERE name = 'decoder.nvtx_unended_ranges'"),
            1);
  EXPECT_EQ(db.Int("SELECT value FROM CUPMON_COUNTERS WHERE name = 'export.rows.nvtx'"), 7);

  // Without NVTX, no NVTX table at all (nsys creates its tables lazily too).
  TempDir plain;
  WriteEverything(plain.path());
  const std::string plain_path = out.path() + "/plain.sqlite";
  Export(plain.path(), plain_path);
  Db db2(plain_path);
  EXPECT_EQ(db2.Int("SELECT COUNT(*) FROM sqlite_master WHERE name IN ('NVTX_EVENTS', "
                    "'ENUM_NSYS_EVENT_TYPE')"),
            0);
  EXPECT_EQ(db2.Int("SELECT COUNT(*) FROM CUPMON_COUNTERS WHERE name LIKE '%nvtx%'"), 0);
}

}  // namespace
}  // namespace cupmon::decoder
