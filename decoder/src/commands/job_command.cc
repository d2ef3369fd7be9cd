// `cupmon-decode job`: reads each rank's GPU activity and steps in one pass, runs the job analysis
// and prints its answers first: the slow steps with their verdicts and a command to drill in, the
// ranks over the range, how the collectives were matched, how the job ended; --format json holds
// every step and rank besides.
#include "commands/job_command.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>
#include <unordered_map>

#include "commands/rank_pass.h"
#include "cupmon/decoder/kernel_names.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/trace_builder.h"
#include "job/job_analysis.h"
#include "json_writer.h"
#include "report_text.h"

namespace cupmon::decoder {
namespace {

// The GPU rows of one rank as the analysis takes them: spans with an end, and kernels recorded
// without one.
class SpanCollector : public RowSink {
 public:
  void OnRow(const Row& row) override {
    if (row.type != RowType::kKernel && row.type != RowType::kMemcpy &&
        row.type != RowType::kMemset)
      return;
    const uint32_t name = Intern(row.name_id, row.name);
    if (!row.valid_time) {
      if (row.type == RowType::kKernel)
        input.unfinished.push_back({name, row.stream, collective_[name]});
      return;
    }
    input.spans.push_back({row.start, row.end, row.wall_end, name, row.stream, collective_[name]});
  }
  job::RankInput input;

 private:
  uint32_t Intern(uint32_t id, std::string_view name) {
    auto [it, fresh] = ids_.try_emplace(id, static_cast<uint32_t>(input.names.size()));
    if (fresh) {
      input.names.emplace_back(name);
      collective_.push_back(job::IsCollectiveName(name));
    }
    return it->second;
  }
  std::unordered_map<uint32_t, uint32_t> ids_;
  std::vector<bool> collective_;
};

struct RankRead {
  job::RankInput input;
  StepList steps;  // its steps' source and the read's integrity (the steps go to input)
};

std::unique_ptr<RankRead> ReadRank(const Rank& rank, const JobCommandOptions& options,
                                   const PassProgress& progress) {
  TraceFilter filter;
  filter.cupti_clock = options.read.filter.cupti_clock;
  SpanCollector sink;
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
  out->input = std::move(sink.input);
  out->input.label = rank.label;
  for (const Step& s : out->steps.steps)
    out->input.steps.push_back({s.number, s.since, s.end,
                                s.wall_start - static_cast<int64_t>(s.start - s.since),
                                s.wall_end});
  return out;
}

std::string Duration(uint64_t ns) { return FormatDuration(static_cast<double>(ns)); }

std::string Pad(const std::string& text, size_t width, bool left = false) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return left ? text + fill : fill + text;
}

std::string DrillCommand(const std::vector<std::string>& paths, const Rank* rank,
                         const job::RankStep& s) {
  std::string cmd = "cupmon-decode gpu-trace";
  for (const auto& p : paths) cmd += " " + p;
  if (rank) cmd += " --pid " + std::to_string(rank->recording.header.pid());
  return cmd + " --from " + UtcTime(s.wall_start, 9) + " --to " + UtcTime(s.wall_end, 9);
}

std::string KernelText(const std::string& name, bool full) {
  return full ? name : ShortKernelName(name);
}

// The verdict of slow step `s` in one line, and the command to drill in.
void PrintVerdict(std::ostream& out, const job::JobAnalysis& a, const job::JobStep& s,
                  const std::vector<const Rank*>& ranks, const std::vector<std::string>& paths,
                  bool full_names) {
  const job::Verdict& v = s.verdict;
  out << "  step " << s.number << ": " << job::VerdictName(v.what) << ": ";
  const size_t ref = a.reference;
  switch (v.what) {
    case job::VerdictClass::kHostGap: {
      const job::RankStep& f = s.ranks[*v.culprit];
      out << ranks[*v.culprit]->label << " launched late: its GPU sat idle "
          << Duration(f.host_gap_ns) << " before its first collective, " << Duration(v.culprit_ns)
          << " more than the other ranks";
      break;
    }
    case job::VerdictClass::kGpuWork:
      out << ranks[*v.culprit]->label << "'s GPU work took " << Duration(v.culprit_ns)
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
  out << "    " << DrillCommand(paths, v.culprit ? ranks[who] : nullptr, s.ranks[who]) << "\n";
}

void PrintText(std::ostream& out, const job::JobAnalysis& a, const std::vector<const Rank*>& ranks,
               const std::vector<std::string>& paths, const JobCommandOptions& options) {
  const size_t n = ranks.size();
  out << "job: " << n << " rank(s), " << a.steps.size() << " step(s) matched across them";
  if (!a.steps.empty())
    out << " (numbered by " << ranks[a.reference]->label << "'s steps), "
        << UtcTime(a.steps.front().ranks[a.reference].wall_start, 3) << " to "
        << UtcTime(a.steps.back().ranks[a.reference].wall_end, 3);
  out << "\n";
  out << "slow steps: " << a.slow.size() << " (the job's step time, its longest rank's, at least "
      << Fixed(options.steps.slow_factor, 2) << "x the median of the " << options.steps.rolling
      << " steps before, and 50us more)\n";
  for (size_t i = 0; i < a.slow.size() && i < 50; ++i)
    PrintVerdict(out, a, a.steps[a.slow[i]], ranks, paths,
                 options.read.full_names || options.read.filter.mangled);
  if (a.slow.size() > 50) out << "  ... " << a.slow.size() - 50 << " more (--format json)\n";

  if (a.hang.hung) {
    out << "hang: ";
    if (a.hang.behind.empty()) {
      out << "every rank ended inside collective #" << a.hang.waiting_at
          << " of the main stream: none is behind\n";
    } else {
      std::string who;
      for (uint32_t r : a.hang.behind) who += (who.empty() ? "" : ", ") + ranks[r]->label;
      out << who << " never launched collective #" << a.hang.waiting_at
          << " of the main stream, which the other ranks ended inside\n";
    }
  }

  out << "\nranks over " << a.steps.size() << " step(s), medians per step:\n";
  out << "  " << Pad("rank", 34, true) << Pad("steps", 7) << Pad("step", 11) << Pad("work", 11)
      << Pad("collective", 11) << Pad("wait", 11) << Pad("host gap", 11) << Pad("culprit", 9)
      << "\n";
  for (size_t r = 0; r < n; ++r) {
    const job::RankSummary& s = a.ranks[r];
    out << "  " << Pad(ranks[r]->label, 34, true) << Pad(std::to_string(s.steps), 7)
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
        << m.instances[m.reference] << " instance(s) on " << ranks[m.reference]->label
        << " (the reference)\n";
    for (size_t r = 0; r < n; ++r) {
      if (r == m.reference) continue;
      out << "    " << ranks[r]->label << ": ";
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
    out << "  " << ranks[r]->label << ": " << s.completed_collectives << " collective(s) completed";
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

void WriteJson(std::ostream& out, const job::JobAnalysis& a, const std::vector<const Rank*>& ranks,
               const JobCommandOptions& options) {
  JsonWriter w(out);
  w.BeginObject();
  w.Key("schema").String("cupmon.job/1");
  w.Key("slow_factor").Double(options.steps.slow_factor);
  w.Key("reference_rank").Uint(a.reference);
  w.Key("ranks").BeginArray();
  for (size_t r = 0; r < ranks.size(); ++r) {
    const job::RankSummary& s = a.ranks[r];
    w.BeginObject();
    w.Key("label").String(ranks[r]->label);
    w.Key("rank").Uint(ranks[r]->rank);
    w.Key("pid").Uint(ranks[r]->recording.header.pid());
    w.Key("host").String(ranks[r]->recording.header.host());
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
    for (size_t r = 0; r < ranks.size(); ++r) {
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
  w.Key("steps").BeginArray();
  for (const job::JobStep& s : a.steps) {
    w.BeginObject();
    w.Key("step").Uint(s.number);
    w.Key("step_ns").Uint(s.step_ns);
    w.Key("rolling_median_ns").Uint(s.rolling_median_ns);
    w.Key("shortest_collective_ns").Uint(s.shortest_collective_ns);
    w.Key("slow").Bool(s.slow);
    w.Key("ranks").BeginArray();
    for (const job::RankStep& f : s.ranks) WriteRankStep(w, f);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("problems").BeginArray();
  for (const std::string& p : a.problems) w.String(p);
  w.EndArray();
  w.EndObject();
  out << "\n";
}

}  // namespace

Outcome RunJobReport(const std::vector<const Rank*>& chosen,
                     const std::vector<std::string>& paths, const JobCommandOptions& options,
                     std::ostream& out, Diagnostics& diagnostics, bool warnings) {
  const TraceFilter& f = options.read.filter;
  if (f.window || f.device || f.stream || f.kernel || options.limit) {
    diagnostics.Error(
        "job reads whole ranks: --window, --device, --stream, --kernel and --limit do not apply "
        "(--from/--to choose the steps; use the drill-down commands for the rest)");
    return Outcome::kUsageError;
  }
  if (options.format == ReportFormat::kCsv) {
    diagnostics.Error("job has no csv form: use --format json");
    return Outcome::kUsageError;
  }
  {
    // The listing has warned that jobs are mixed; the analysis would pair their collectives
    // anyway, so say what that means here.
    std::set<std::string> jobs;
    for (const Rank* r : chosen) {
      std::string cmd;
      for (const auto& arg : r->recording.header.command_line()) cmd += arg + " ";
      jobs.insert(r->job.empty() ? "\x01" + cmd : r->job);
    }
    if (jobs.size() > 1) {
      diagnostics.Warning("job: the ranks belong to " + std::to_string(jobs.size()) +
                          " jobs; their collectives are matched as if they were one job's (choose "
                          "one job's directories)");
      warnings = true;
    }
  }
  RankPass pass(chosen, 1, diagnostics);
  std::vector<job::RankInput> inputs;
  pass.Run(
      RankJobs(chosen.size(), options.read.jobs, DecodeThreads()),
      [&](size_t i, const PassProgress& progress) {
        return ReadRank(*chosen[i], options, progress);
      },
      [&](size_t i, std::unique_ptr<RankRead> read) {
        RankMessageLog log(diagnostics, pass.Who(i));
        log.ReadProblems(read->steps.integrity, nullptr);
        warnings |= read->steps.integrity.HasWarnings();
        if (read->steps.steps.empty()) {
          log.Warning("no training steps found");
          warnings = true;
        }
        inputs.push_back(std::move(read->input));
        return true;
      });
  job::JobOptions o;
  o.slow_factor = options.steps.slow_factor;
  o.rolling = options.steps.rolling;
  o.from_wall = f.from_wall;
  o.to_wall = f.to_wall;
  if (f.from_rel || f.to_rel) {
    // Relative to the earliest step start of any rank.
    int64_t origin = INT64_MAX;
    for (const job::RankInput& in : inputs)
      if (!in.steps.empty()) origin = std::min(origin, in.steps.front().wall_start);
    if (origin != INT64_MAX) {
      if (f.from_rel) o.from_wall = origin + *f.from_rel;
      if (f.to_rel) o.to_wall = origin + *f.to_rel;
    }
  }
  const job::JobAnalysis a = job::AnalyzeJob(inputs, o);
  if (a.streams.empty()) {
    diagnostics.Warning(
        "no collective (NCCL) kernel on any rank: the ranks' steps cannot be matched");
    warnings = true;
  }
  if (options.format == ReportFormat::kJson)
    WriteJson(out, a, chosen, options);
  else
    PrintText(out, a, chosen, paths, options);
  out.flush();
  return warnings ? Outcome::kWarnings : Outcome::kClean;
}

}  // namespace cupmon::decoder
