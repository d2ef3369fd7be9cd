// The machine-readable forms of summary and info (--format json|csv; docs/DECODER.md,
// "Machine-readable summary and info"): what the driver (commands/rows_report.cc) keeps of each rank for the
// merged part, and the writers of the parts that are not one recording's. One recording's
// summary object and csv rows are SummarySink's (summary_json.cc, summary_csv.cc); info's
// objects are in info_json.cc. Private to the decoder.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"
#include "duration_stat.h"
#include "json_writer.h"

namespace cupmon::decoder {

// The documents' schema names. The number after the slash changes only when a field changes its
// meaning, type or unit, or goes away; fields are added without changing it.
inline constexpr std::string_view kSummarySchema = "cupmon.summary/1";
inline constexpr std::string_view kInfoSchema = "cupmon.info/1";

// What a merged report keeps of each rank once its builder is gone.
struct RankResult {
  const Rank* rank = nullptr;
  struct Window {
    uint32_t id = 0;
    std::optional<int64_t> begin_wall;  // absent when the BEGIN marker is missing
    std::optional<uint64_t> duration;
  };
  std::vector<Window> windows;
  uint64_t records = 0, gpu_rows = 0, api_rows = 0, gpu_time = 0;
  int64_t first_wall = 0;  // 0: no timed record
  bool calibrated = false;
  uint64_t samples = 0;
  bool damaged = false;
};

// The lines one rank's read wrote to stderr as "warning:" and "note:", without the
// "cupmon-decode: " and rank prefixes, in the order written: a document carries them too.
struct RankMessages {
  std::vector<std::string> warnings, notes;
};

// Writes `lines` as an array of strings.
inline void WriteStrings(JsonWriter& w, const std::vector<std::string>& lines) {
  w.BeginArray();
  for (const std::string& l : lines) w.String(l);
  w.EndArray();
}
// The job of the chosen ranks, as the text's "job ..." says it: {"id": the job id, null when the
// recordings carry none or belong to several jobs; "mixed": recordings of several jobs}.
inline void WriteJob(JsonWriter& w, const RankListing& listing,
                     const std::vector<const Rank*>& chosen) {
  const std::string& id = chosen.front()->job;
  w.BeginObject().Key("id");
  if (listing.mixed_jobs || id.empty()) w.Null();
  else w.String(id);
  w.Key("mixed").Bool(listing.mixed_jobs).EndObject();
}
// A rank's number, label and pid, the first fields of its objects.
inline void WriteRankFields(JsonWriter& w, const Rank& rank) {
  w.Key("rank").Uint(rank.rank);
  w.Key("label").String(rank.label);
  w.Key("pid").Uint(rank.recording.header.pid());
}

// The "merged" object of a summary of several ranks: each rank's line and the totals by name.
// `short_names` as for the text tables (shown_name).
void WriteMergedSummaryJson(JsonWriter& w, const RankListing& listing,
                            const std::vector<const Rank*>& chosen,
                            const std::vector<RankResult>& results,
                            const std::map<std::string, DurationStat>& gpu,
                            const std::map<std::string, DurationStat>& api, bool short_names);

// One recording's object of the cupmon.info document.
void WriteInfoJson(JsonWriter& w, const TraceBuilder& b, const Rank& rank,
                   const ReadIntegrity& integrity, const RankMessages& messages);
// The "merged" object of an info of several ranks: each rank's line and the windows by id with
// each rank's begin and the spread of the begins.
void WriteMergedInfoJson(JsonWriter& w, const RankListing& listing,
                         const std::vector<const Rank*>& chosen,
                         const std::vector<RankResult>& results);

// The header line of summary --format csv (SummarySink::WriteCsv writes the rows).
void WriteSummaryCsvHeader(std::ostream& out);

}  // namespace cupmon::decoder
