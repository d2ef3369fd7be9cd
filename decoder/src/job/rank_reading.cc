// A rank's GPU rows, identity and steps as the job analysis takes them (rank_reading.h).
#include "job/rank_reading.h"

#include "cupmon/base/check.h"

namespace cupmon::decoder::job {

void SpanCollector::OnRow(const Row& row) {
  if (row.type != RowType::kKernel && row.type != RowType::kMemcpy && row.type != RowType::kMemset)
    return;
  const uint32_t name = Intern(row.name_id, row.name);
  if (!row.valid_time) {
    if (row.type == RowType::kKernel)
      input.unfinished.push_back({name, row.stream, collective_[name]});
    return;
  }
  input.spans.push_back({row.start, row.end, row.wall_end, name, row.stream, collective_[name]});
}

uint32_t SpanCollector::Intern(uint32_t id, std::string_view name) {
  auto [it, fresh] = ids_.try_emplace(id, static_cast<uint32_t>(input.names.size()));
  if (fresh) {
    input.names.emplace_back(name);
    collective_.push_back(IsCollectiveName(name));
  }
  return it->second;
}

void AddRank(const Rank& rank, const std::vector<std::string>& paths, const StepList& steps,
             RankInput* in) {
  in->label = rank.label;
  in->who = {.label = rank.label,
             .rank = rank.rank,
             .rank_from_header = rank.rank_from_header,
             .pid = rank.recording.header.pid(),
             .host = rank.recording.header.host(),
             .job = rank.job,
             .paths = paths};
  for (const Step& s : steps.steps)
    in->steps.push_back({s.number, s.since, s.end,
                         s.wall_start - static_cast<int64_t>(s.start - s.since), s.wall_end});
}

JobOptions OptionsFor(const StepOptions& steps) {
  JobOptions o;
  o.slow_factor = steps.slow_factor;
  o.rolling = steps.rolling;
  return o;
}

RecordConsumer* ExportRankTables::Begin(const Rank& rank) {
  rank_ = &rank;
  spans_ = SpanCollector();
  finder_ = std::make_unique<StepFinder>(StepOptions{});
  return &finder_->consumer();
}

void ExportRankTables::End() {
  CUPMON_CHECK(rank_ && finder_);
  const StepList steps = finder_->Finish();
  finder_.reset();
  AddRank(*rank_, {}, steps, &spans_.input);
  tables_.push_back(BuildRankTable(spans_.input));
  spans_ = SpanCollector();  // the activity is dropped here
}

}  // namespace cupmon::decoder::job
