// CUPMON_JOB_STEP_RANK (sqlite_job_table.h).
#include "export/sqlite/sqlite_job_table.h"

#include <sqlite3.h>

#include "cupmon/base/check.h"
#include "job/job_merge.h"

namespace cupmon::decoder {
namespace {

constexpr const char* kCreate =
    "CREATE TABLE CUPMON_JOB_STEP_RANK (\n"
    "    step INTEGER NOT NULL,        -- the job step (1-based: the reference rank's steps)\n"
    "    rank INTEGER NOT NULL,        -- CUPMON_RANKS.rank\n"
    "    rankStep INTEGER,             -- the rank's own step number; NULL: not in this step\n"
    "    stepNs INTEGER,               -- the rank's step time (NULL with rankStep, as below)\n"
    "    workNs INTEGER,               -- GPU work outside collectives\n"
    "    collectiveNs INTEGER,         -- a collective in flight\n"
    "    waitNs INTEGER,               -- collectives beyond their shortest over the ranks\n"
    "    hostGapNs INTEGER,            -- GPU idle from the step's start to its first collective\n"
    "    culprit INTEGER NOT NULL,     -- 1: the slow step's verdict names this rank\n"
    "    verdict TEXT                  -- the slow step's class (gpu-work, host-gap, ...)\n"
    ")";
constexpr const char* kInsert =
    "INSERT INTO CUPMON_JOB_STEP_RANK (step, rank, rankStep, stepNs, workNs, collectiveNs, "
    "waitNs, hostGapNs, culprit, verdict) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";

int64_t I(uint64_t v) { return static_cast<int64_t>(v); }

// Every job step, as the merge completes it, a row per rank.
class StepRows : public job::JobStepSink {
 public:
  StepRows(sqlite3_stmt* insert, std::vector<uint32_t> ranks)
      : insert_(insert), ranks_(std::move(ranks)) {}
  void OnStep(const job::JobStep& s) override {
    for (size_t r = 0; r < s.ranks.size() && error_ == SQLITE_OK; ++r) {
      const job::RankStep& f = s.ranks[r];
      sqlite3_bind_int64(insert_, 1, I(s.number));
      sqlite3_bind_int64(insert_, 2, ranks_[r]);
      const int64_t cells[] = {I(f.number),          I(f.step_ns), I(f.work_ns()),
                               I(f.collective_ns()), I(f.wait_ns), I(f.host_gap_ns)};
      for (int c = 0; c < 6; ++c) {
        if (f.present) sqlite3_bind_int64(insert_, 3 + c, cells[c]);
        else sqlite3_bind_null(insert_, 3 + c);
      }
      sqlite3_bind_int(insert_, 9, s.slow && s.verdict.culprit == r ? 1 : 0);
      if (s.slow) {
        const std::string_view v = job::VerdictName(s.verdict.what);
        sqlite3_bind_text(insert_, 10, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
      } else {
        sqlite3_bind_null(insert_, 10);
      }
      const int rc = sqlite3_step(insert_);
      sqlite3_reset(insert_);
      if (rc != SQLITE_DONE) error_ = rc;
    }
  }
  int error() const { return error_; }

 private:
  sqlite3_stmt* insert_;
  std::vector<uint32_t> ranks_;  // CUPMON_RANKS.rank by the analysis's rank index
  int error_ = SQLITE_OK;
};

}  // namespace

std::string SqliteJobTable::Write(sqlite3* db) {
  std::vector<job::RankTable> made = tables_.Release();
  std::vector<uint32_t> ranks;
  for (const job::RankTable& t : made) ranks.push_back(t.header.who.rank);
  const job::MemoryTables tables(std::move(made));
  // No collective stream on any rank: nothing to match the steps by, no table.
  if (tables.size() < 2) return "";
  bool collectives = false;
  for (size_t r = 0; r < tables.size(); ++r) collectives |= !tables.header(r).streams.empty();
  if (!collectives) return "";
  if (sqlite3_exec(db, kCreate, nullptr, nullptr, nullptr) != SQLITE_OK)
    return std::string("creating CUPMON_JOB_STEP_RANK: ") + sqlite3_errmsg(db);
  sqlite3_stmt* insert = nullptr;
  if (sqlite3_prepare_v2(db, kInsert, -1, &insert, nullptr) != SQLITE_OK)
    return std::string("preparing CUPMON_JOB_STEP_RANK's insert: ") + sqlite3_errmsg(db);
  StepRows rows(insert, std::move(ranks));
  auto a = job::MergeJob(tables, job::OptionsFor(StepOptions{}), &rows);
  sqlite3_finalize(insert);
  CUPMON_CHECK(a.has_value());  // tables in memory cannot fail to read
  if (rows.error() != SQLITE_OK)
    return std::string("writing CUPMON_JOB_STEP_RANK: ") + sqlite3_errstr(rows.error());
  if (a->streams.empty() &&
      sqlite3_exec(db, "DROP TABLE CUPMON_JOB_STEP_RANK", nullptr, nullptr, nullptr) != SQLITE_OK)
    return std::string("dropping CUPMON_JOB_STEP_RANK: ") + sqlite3_errmsg(db);
  return "";
}

}  // namespace cupmon::decoder
