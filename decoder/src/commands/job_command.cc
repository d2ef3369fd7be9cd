// `cupmon-decode job`: reads each rank's GPU activity and steps in one pass into its step table
// (or takes the tables `--tables-out` wrote where the data lives), merges them and prints the
// answers first: the slow steps with their verdicts and a command to drill in, the ranks over the
// range, how the collectives were matched, how the job ended; --format json holds every step and
// rank besides.
#include "commands/job_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "commands/rank_pass.h"
#include "cupmon/decoder/kernel_names.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/trace_builder.h"
#include "job/job_analysis.h"
#include "job/job_merge.h"
#include "job/rank_reading.h"
#include "job/rank_table.h"
#include "json_writer.h"
#include "memory_room.h"
#include "report_text.h"

namespace cupmon::decoder {
namespace {

struct RankRead {
  job::RankTable table;
  StepList steps;  // its steps' source and the read's integrity (the steps went into the table)
};

std::unique_ptr<RankRead> ReadRank(const Rank& rank, const std::vector<std::string>& paths,
                                   const JobCommandOptions& options, const PassProgress& progress) {
  TraceFilter filter;
  filter.cupti_clock = options.read.filter.cupti_clock;
  job::SpanCollector sink;
  TraceBuilder builder(filter, &sink, options.read.horizon);
  StepFinder finder(options.steps);
  builder.AddConsumer(&finder.consumer());
  ReadIntegrity integrity;
  ReadRecording(rank.recording, builder, &integrity,
                [&](uint64_t done, uint64_t) { progress(0, done); });
  builder.Finish();
  auto out = std::make_unique<RankRead>();
  out->steps = finder.Finish();
  out->steps.integrity = std::move(integrity);
  job::AddRank(rank, paths, out->steps, &sink.input);
  // The activity is dropped here, on the reading thread.
  out->table = job::BuildRankTable(sink.input);
  return out;
}

std::string Duration(uint64_t ns) { return FormatDuration(static_cast<double>(ns)); }

std::string Pad(const std::string& text, size_t width, bool left = false) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return left ? text + fill : fill + text;
}

// The paths are those the rank was read from (on its node, for tables written there).
std::string DrillCommand(const job::RankIdentity& who, bool with_pid, const job::RankStep& s) {
  std::string cmd = "cupmon-decode gpu-trace";
  for (const auto& p : who.paths) cmd += " " + p;
  if (with_pid) cmd += " --pid " + std::to_string(who.pid);
  return cmd + " --from " + UtcTime(s.wall_start, 9) + " --to " + UtcTime(s.wall_end, 9);
}

std::string KernelText(const std::string& name, bool full) {
  return full ? name : ShortKernelName(name);
}

// The verdict of slow step `s` in one line, and the command to drill in.
void PrintVerdict(std::ostream& out, const job::JobAnalysis& a, const job::JobStep& s,
                  bool full_names) {
  const job::Verdict& v = s.verdict;
  out << "  step " << s.number << ": " << job::VerdictName(v.what) << ": ";
  const size_t ref = a.reference;
  switch (v.what) {
    case job::VerdictClass::kHostGap: {
      const job::RankStep& f = s.ranks[*v.culprit];
      out << a.who[*v.culprit].label << " launched late: its GPU sat idle "
          << Duration(f.host_gap_ns) << " before its first collective, " << Duration(v.culprit_ns)
          << " more than the other ranks";
      break;
    }
    case job::VerdictClass::kGpuWork:
      out << a.who[*v.culprit].label << "'s GPU work took " << Duration(v.culprit_ns)
          << " more than the other ranks'";
      if (!v.kernel.empty())
        out << " (" << KernelText(v.kernel, full_names) << ": +" << Duration(v.kernel_ns) << ")";
      break;
    case job::VerdictClass::kCollectives:
      out << "every rank's collectives took " << Duration(v.collective_ns)
          << " longer, no rank late";
      break;
    case job::VerdictClass::kUnexplained:
      out << "no rank's work or host gap, nor the collectives, explain half of it (largest rank "
             "excess "
          << Duration(v.culprit_ns) << ", collectives " << Duration(v.collective_ns) << ")";
      break;
  }
  out << "; step " << Duration(s.step_ns) << ", " << Duration(v.excess_ns)
      << " over its rolling median " << Duration(s.rolling_median_ns) << "\n";
  const size_t who = v.culprit ? *v.culprit : ref;
  out << "    " << DrillCommand(a.who[who], v.culprit.has_value(), s.ranks[who]) << "\n";
}

void PrintText(std::ostream& out, const job::JobAnalysis& a, const JobCommandOptions& options) {
  const size_t n = a.who.size();
  out << "job: " << n << " rank(s), " << a.step_count << " step(s) matched across them";
  if (a.step_count)
    out << " (numbered by " << a.who[a.reference].label << "'s steps), "
        << UtcTime(a.first_wall_start, 3) << " to " << UtcTime(a.last_wall_end, 3);
  out << "\n";
  out << "slow steps: " << a.slow.size() << " (the job's step time, its longest rank's, at least "
      << Fixed(options.steps.slow_factor, 2) << "x the median of the " << options.steps.rolling
      << " steps before, and 50us more)\n";
  for (size_t i = 0; i < a.slow.size() && i < 50; ++i)
    PrintVerdict(out, a, a.steps[a.slow[i]],
                 options.read.full_names || options.read.filter.mangled);
  if (a.slow.size() > 50) out << "  ... " << a.slow.size() - 50 << " more (--format json)\n";

  if (a.hang.hung) {
    out << "hang: ";
    if (a.hang.behind.empty()) {
      out << "every rank ended inside collective #" << a.hang.waiting_at
          << " of the main stream: none is behind\n";
    } else {
      std::string who;
      for (uint32_t r : a.hang.behind) who += (who.empty() ? "" : ", ") + a.who[r].label;
      out << who << " never launched collective #" << a.hang.waiting_at
          << " of the main stream, which the other ranks ended inside\n";
    }
  }

  out << "\nranks over " << a.step_count << " step(s), medians per step:\n";
  out << "  " << Pad("rank", 34, true) << Pad("steps", 7) << Pad("step", 11) << Pad("work", 11)
      << Pad("collective", 11) << Pad("wait", 11) << Pad("host gap", 11) << Pad("culprit", 9)
      << "\n";
  for (size_t r = 0; r < n; ++r) {
    const job::RankSummary& s = a.ranks[r];
    out << "  " << Pad(a.who[r].label, 34, true) << Pad(std::to_string(s.steps), 7)
        << Pad(Duration(s.median_step_ns), 11) << Pad(Duration(s.median_work_ns), 11)
        << Pad(Duration(s.median_collective_ns), 11) << Pad(Duration(s.median_wait_ns), 11)
        << Pad(Duration(s.median_host_gap_ns), 11) << Pad(std::to_string(s.culprit_of), 9) << "\n";
  }

  out << "\ncollectives:";
  if (a.streams.empty()) out << " none (no NCCL kernel on any rank): steps cannot be matched";
  out << "\n";
  for (size_t g = 0; g < a.streams.size(); ++g) {
    const job::StreamMatch& m = a.streams[g];
    out << "  " << (g == 0 ? "main stream" : "stream") << " of "
        << KernelText(m.op, options.read.full_names || options.read.filter.mangled) << ": "
        << m.instances[m.reference] << " instance(s) on " << a.who[m.reference].label
        << " (the reference)\n";
    for (size_t r = 0; r < n; ++r) {
      if (r == m.reference) continue;
      out << "    " << a.who[r].label << ": ";
      if (!m.stream[r]) {
        out << "no such stream\n";
        continue;
      }
      out << m.matched[r] << " of " << m.instances[r] << " matched, its first is #" << m.offset[r]
          << "; its wall clock " << (m.clock_offset_ns[r] < 0 ? "-" : "+")
          << Duration(static_cast<uint64_t>(std::llabs(m.clock_offset_ns[r])))
          << " from the reference's";
      if (m.wall_offset[r] != m.offset[r])
        out << " (the wall clocks alone would have made it #" << m.wall_offset[r] << ")";
      out << "\n";
    }
  }

  out << "\nend of the recordings:\n";
  for (size_t r = 0; r < n; ++r) {
    const job::RankSummary& s = a.ranks[r];
    out << "  " << a.who[r].label << ": " << s.completed_collectives << " collective(s) completed";
    if (s.last_collective >= 0) out << " (main stream through #" << s.last_collective << ")";
    if (!s.last_kernel.empty())
      out << ", last completed " << KernelText(s.last_kernel, options.read.full_names) << " at "
          << UtcTime(s.last_kernel_wall_end, 6);
    if (!s.unfinished.empty()) {
      out << "; running at the end:";
      for (size_t i = 0; i < s.unfinished.size() && i < 5; ++i)
        out << (i ? ", " : " ") << KernelText(s.unfinished[i], options.read.full_names);
    }
    out << "\n";
  }
  if (!a.problems.empty()) {
    out << "\nnot matched:\n";
    for (const std::string& p : a.problems) out << "  " << p << "\n";
  }
  out << "\nper step and rank: --format json (step time = work alone + collective alone + both + "
         "idle)\n";
}

void WriteRankStep(JsonWriter& w, const job::RankStep& f) {
  w.BeginObject();
  w.Key("present").Bool(f.present);
  if (f.present) {
    w.Key("rank_step").Uint(f.number);
    w.Key("start_ns").Int(f.wall_start);
    w.Key("end_ns").Int(f.wall_end);
    w.Key("step_ns").Uint(f.step_ns);
    w.Key("work_alone_ns").Uint(f.work_alone_ns);
    w.Key("collective_alone_ns").Uint(f.collective_alone_ns);
    w.Key("both_ns").Uint(f.both_ns);
    w.Key("idle_ns").Uint(f.idle_ns);
    w.Key("work_ns").Uint(f.work_ns());
    w.Key("collective_ns").Uint(f.collective_ns());
    w.Key("wait_ns").Uint(f.wait_ns);
    w.Key("host_gap_ns").Uint(f.host_gap_ns);
    w.Key("collectives").Uint(f.collectives);
  }
  w.EndObject();
}

// Every step, as the merge completes it, into the document's "steps" array, written apart (a
// file that is gone once closed) because the document's other parts come before it.
class StepsJson : public job::JobStepSink {
 public:
  StepsJson() {
    std::string dir = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
    std::string path = dir + "/cupmon-job-steps.XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd >= 0) {
      file_.open(path, std::ios::in | std::ios::out | std::ios::trunc | std::ios::binary);
      unlink(path.c_str());
      close(fd);
    }
    if (!file_.is_open()) file_.open("/dev/null");  // ok() says so
    ok_ = file_.is_open() && fd >= 0;
    w_.BeginArray();
  }
  bool ok() const { return ok_ && file_.good(); }
  void OnStep(const job::JobStep& s) override {
    w_.BeginObject();
    w_.Key("step").Uint(s.number);
    w_.Key("step_ns").Uint(s.step_ns);
    w_.Key("rolling_median_ns").Uint(s.rolling_median_ns);
    w_.Key("shortest_collective_ns").Uint(s.shortest_collective_ns);
    w_.Key("slow").Bool(s.slow);
    w_.Key("ranks").BeginArray();
    for (const job::RankStep& f : s.ranks) WriteRankStep(w_, f);
    w_.EndArray();
    w_.EndObject();
  }
  // The array, to be copied into the document.
  std::istream& Finish() {
    w_.EndArray();
    file_.flush();
    file_.seekg(0);
    return file_;
  }

 private:
  std::fstream file_;
  bool ok_ = false;
  JsonWriter w_{file_, 1};
};

void WriteJson(std::ostream& out, const job::JobAnalysis& a, std::istream& steps,
               const JobCommandOptions& options) {
  JsonWriter w(out);
  w.BeginObject();
  w.Key("schema").String("cupmon.job/1");
  w.Key("slow_factor").Double(options.steps.slow_factor);
  w.Key("reference_rank").Uint(a.reference);
  w.Key("ranks").BeginArray();
  for (size_t r = 0; r < a.who.size(); ++r) {
    const job::RankSummary& s = a.ranks[r];
    w.BeginObject();
    w.Key("label").String(a.who[r].label);
    w.Key("rank").Uint(a.who[r].rank);
    w.Key("pid").Uint(a.who[r].pid);
    w.Key("host").String(a.who[r].host);
    w.Key("steps").Uint(s.steps);
    w.Key("median_step_ns").Uint(s.median_step_ns);
    w.Key("median_work_ns").Uint(s.median_work_ns);
    w.Key("median_collective_ns").Uint(s.median_collective_ns);
    w.Key("median_wait_ns").Uint(s.median_wait_ns);
    w.Key("median_host_gap_ns").Uint(s.median_host_gap_ns);
    w.Key("culprit_of").Uint(s.culprit_of);
    w.Key("unplaced_steps").Uint(a.unplaced_steps[r]);
    w.Key("completed_collectives").Uint(s.completed_collectives);
    w.Key("last_collective").Int(s.last_collective);
    w.Key("last_kernel").String(s.last_kernel);
    w.Key("last_kernel_end_ns").Int(s.last_kernel_wall_end);
    w.Key("unfinished").BeginArray();
    for (const std::string& u : s.unfinished) w.String(u);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("streams").BeginArray();
  for (const job::StreamMatch& m : a.streams) {
    w.BeginObject();
    w.Key("op").String(m.op);
    w.Key("reference_rank").Uint(m.reference);
    w.Key("ranks").BeginArray();
    for (size_t r = 0; r < a.who.size(); ++r) {
      w.BeginObject();
      w.Key("stream").UintOrNull(m.stream[r]);
      w.Key("first_instance").Int(m.offset[r]);
      w.Key("instances").Uint(m.instances[r]);
      w.Key("matched").Uint(m.matched[r]);
      w.Key("clock_offset_ns").Int(m.clock_offset_ns[r]);
      w.Key("wall_clock_first_instance").Int(m.wall_offset[r]);
      w.Key("name_mismatches").Uint(m.name_mismatches[r]);
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("hang").BeginObject();
  w.Key("hung").Bool(a.hang.hung);
  w.Key("behind").BeginArray();
  for (uint32_t r : a.hang.behind) w.Uint(r);
  w.EndArray();
  w.Key("waiting_at").Int(a.hang.waiting_at);
  w.EndObject();
  w.Key("slow_steps").BeginArray();
  for (size_t j : a.slow) {
    const job::JobStep& s = a.steps[j];
    const job::Verdict& v = s.verdict;
    w.BeginObject();
    w.Key("step").Uint(s.number);
    w.Key("verdict").String(job::VerdictName(v.what));
    w.Key("culprit").UintOrNull(v.culprit);
    w.Key("excess_ns").Uint(v.excess_ns);
    w.Key("culprit_ns").Uint(v.culprit_ns);
    w.Key("collective_ns").Uint(v.collective_ns);
    w.Key("kernel").String(v.kernel);
    w.Key("kernel_ns").Uint(v.kernel_ns);
    w.EndObject();
  }
  w.EndArray();
  w.Key("steps").Raw(steps);
  w.Key("problems").BeginArray();
  for (const std::string& p : a.problems) w.String(p);
  w.EndArray();
  w.EndObject();
  out << "\n";
}

// The refusals every form of the command shares (after the error); false when none applies.
bool Refused(const JobCommandOptions& options, Diagnostics& diagnostics) {
  const TraceFilter& f = options.read.filter;
  if (f.window || f.device || f.stream || f.kernel || options.limit) {
    diagnostics.Error(
        "job reads whole ranks: --window, --device, --stream, --kernel and --limit do not apply "
        "(--from/--to choose the steps; use the drill-down commands for the rest)");
    return true;
  }
  if (options.format == ReportFormat::kCsv) {
    diagnostics.Error("job has no csv form: use --format json");
    return true;
  }
  return false;
}

void WarnMixedJobs(size_t jobs, Diagnostics& diagnostics, bool* warnings) {
  // The listing has warned that jobs are mixed; the analysis would pair their collectives
  // anyway, so say what that means here.
  if (jobs <= 1) return;
  diagnostics.Warning("job: the ranks belong to " + std::to_string(jobs) +
                      " jobs; their collectives are matched as if they were one job's (choose "
                      "one job's directories)");
  *warnings = true;
}

// Merges the tables and prints the answers.
Outcome Report(const job::TableSource& tables, const JobCommandOptions& options, std::ostream& out,
               Diagnostics& diagnostics, bool warnings) {
  const TraceFilter& f = options.read.filter;
  job::JobOptions o = job::OptionsFor(options.steps);
  o.from_wall = f.from_wall;
  o.to_wall = f.to_wall;
  if (f.from_rel || f.to_rel) {
    // Relative to the earliest step start of any rank.
    int64_t origin = INT64_MAX;
    for (size_t r = 0; r < tables.size(); ++r) {
      uint64_t pos = 0;
      auto ok = tables.Rows(r, &pos, [&](const job::TableRow& row) {
        origin = std::min(origin, row.wall_start);
        return false;
      });
      if (!ok) {
        diagnostics.Error(ok.error().message);
        return Outcome::kFailed;
      }
    }
    if (origin != INT64_MAX) {
      if (f.from_rel) o.from_wall = origin + *f.from_rel;
      if (f.to_rel) o.to_wall = origin + *f.to_rel;
    }
  }
  std::unique_ptr<StepsJson> json;
  job::DiscardSteps discard;
  if (options.format == ReportFormat::kJson) {
    json = std::make_unique<StepsJson>();
    if (!json->ok()) {
      diagnostics.Error(std::string("job --format json: cannot create a temporary file in ") +
                        (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + " (set TMPDIR)");
      return Outcome::kFailed;
    }
  }
  auto a = job::MergeJob(tables, o, json ? static_cast<job::JobStepSink*>(json.get()) : &discard);
  if (!a) {
    diagnostics.Error(a.error().message);
    return Outcome::kFailed;
  }
  if (a->streams.empty()) {
    diagnostics.Warning(
        "no collective (NCCL) kernel on any rank: the ranks' steps cannot be matched");
    warnings = true;
  }
  if (json) {
    std::istream& steps = json->Finish();
    if (!json->ok()) {
      diagnostics.Error("job --format json: cannot write its temporary file (disk full?)");
      return Outcome::kFailed;
    }
    WriteJson(out, *a, steps, options);
  } else {
    PrintText(out, *a, options);
  }
  out.flush();
  return warnings ? Outcome::kWarnings : Outcome::kClean;
}

// A file name for a rank's table: its rank (the launcher's, or the listing's), host and pid.
std::string TableName(const job::RankIdentity& who) {
  std::string host = who.host.empty() ? "host" : who.host;
  for (char& c : host)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.') c = '_';
  char rank[16];
  std::snprintf(rank, sizeof rank, "%05u", who.rank);
  return std::string("rank") + rank + "-" + host + "-" + std::to_string(who.pid) +
         job::kTableSuffix;
}

// Writes the tables into `dir` and lists them, a line each, on `out`.
Outcome WriteTables(const std::vector<job::RankTable>& tables, const std::string& dir,
                    std::ostream& out, Diagnostics& diagnostics, bool warnings) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    diagnostics.Error("--tables-out " + dir + ": " + ec.message());
    return Outcome::kFailed;
  }
  for (const job::RankTable& t : tables) {
    const std::string path = (std::filesystem::path(dir) / TableName(t.header.who)).string();
    if (auto ok = job::WriteRankTable(path, t); !ok) {
      diagnostics.Error(ok.error().message);
      return Outcome::kFailed;
    }
    out << path << ": " << t.header.who.label << ", " << t.rows.size() << " step(s)\n";
  }
  out.flush();
  return warnings ? Outcome::kWarnings : Outcome::kClean;
}

}  // namespace

Outcome RunJobReport(const std::vector<const Rank*>& chosen, const std::vector<std::string>& paths,
                     const JobCommandOptions& options, std::ostream& out, Diagnostics& diagnostics,
                     bool warnings) {
  if (Refused(options, diagnostics)) return Outcome::kUsageError;
  {
    std::set<std::string> jobs;
    for (const Rank* r : chosen) {
      std::string cmd;
      for (const auto& arg : r->recording.header.command_line()) cmd += arg + " ";
      jobs.insert(r->job.empty() ? "\x01" + cmd : r->job);
    }
    WarnMixedJobs(jobs.size(), diagnostics, &warnings);
  }
  RankPass pass(chosen, 1, diagnostics);
  std::vector<job::RankTable> tables;
  pass.Run(
      RankJobs(chosen.size(), options.read.jobs, DecodeThreads()),
      [&](size_t i, const PassProgress& progress) {
        return ReadRank(*chosen[i], paths, options, progress);
      },
      [&](size_t i, std::unique_ptr<RankRead> read) {
        RankMessageLog log(diagnostics, pass.Who(i));
        log.ReadProblems(read->steps.integrity, nullptr);
        warnings |= read->steps.integrity.HasWarnings();
        if (read->steps.steps.empty()) {
          log.Warning("no training steps found");
          warnings = true;
        }
        tables.push_back(std::move(read->table));
        return true;
      });
  if (!options.tables_out.empty())
    return WriteTables(tables, options.tables_out, out, diagnostics, warnings);
  return Report(job::MemoryTables(std::move(tables)), options, out, diagnostics, warnings);
}

Outcome RunJobTables(const std::vector<std::string>& files, const JobCommandOptions& options,
                     std::ostream& out, Diagnostics& diagnostics) {
  if (Refused(options, diagnostics)) return Outcome::kUsageError;
  if (!options.tables_out.empty()) {
    diagnostics.Error("job --tables-out reads recordings, and these are job tables already");
    return Outcome::kUsageError;
  }
  bool warnings = false;
  std::vector<job::RankTableFile> tables;
  for (const std::string& path : files) {
    auto t = job::RankTableFile::Open(path);
    if (!t) {
      diagnostics.Status("refused: " + t.error().message);
      warnings = true;
      continue;
    }
    tables.push_back(std::move(*t));
  }
  if (tables.empty()) {
    diagnostics.Error("no usable job table among " + std::to_string(files.size()) + " file(s)");
    return Outcome::kFailed;
  }
  // Rank order: by job, the launcher's ranks first by number, then by host and pid; the ranks
  // without a launcher rank are numbered in that order within their job, as the listing does.
  std::stable_sort(tables.begin(), tables.end(), [](const auto& x, const auto& y) {
    const job::RankIdentity &a = x.header().who, &b = y.header().who;
    return std::tuple(a.job, !a.rank_from_header, a.rank_from_header ? a.rank : 0u, a.host, a.pid) <
           std::tuple(b.job, !b.rank_from_header, b.rank_from_header ? b.rank : 0u, b.host, b.pid);
  });
  std::map<std::string, uint32_t> numbered;  // per job: ranks numbered so far
  std::map<std::pair<std::string, uint32_t>, std::string> seen;
  for (job::RankTableFile& t : tables) {
    job::RankIdentity& who = t.mutable_header().who;
    const std::string where = who.host + ":" + std::to_string(who.pid);
    if (!who.rank_from_header) {
      who.rank = numbered[who.job]++;
      who.label = "rank " + std::to_string(who.rank) + " (" + where + ")";
    } else {
      numbered[who.job] = std::max(numbered[who.job], who.rank + 1);
    }
    auto [it, fresh] = seen.try_emplace({who.job, who.rank}, t.path());
    if (!fresh) {
      diagnostics.Warning(who.label + " is in two tables: " + it->second + " and " + t.path());
      warnings = true;
    }
  }
  WarnMixedJobs(numbered.size(), diagnostics, &warnings);
  return Report(job::FileTables(std::move(tables)), options, out, diagnostics, warnings);
}

}  // namespace cupmon::decoder
