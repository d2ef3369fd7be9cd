// `cupmon-decode steps`: a table (or csv/jsonl rows) of the training steps of each rank, their
// time distribution, the slow steps with a command to drill into each, and on merged recordings
// the steps where ranks diverge, with the straggler.
#include "commands/steps_report.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <memory>
#include <set>

#include "cupmon/decoder/kernel_names.h"
#include "cupmon/decoder/reports.h"
#include "cupmon/decoder/steps.h"
#include "cupmon/decoder/trace_builder.h"
#include "commands/rank_pass.h"
#include "memory_room.h"
#include "report_text.h"
#include "text/csv.h"
#include "text/json.h"

namespace cupmon::decoder {
namespace {

// `text` padded with spaces to `width` (right-aligned unless `left`).
std::string Pad(const std::string& text, size_t width, bool left = false) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return left ? text + fill : fill + text;
}

std::string Duration(uint64_t ns) { return FormatDuration(static_cast<double>(ns)); }

std::string Clip(const std::string& name, size_t max = 90) {
  return name.size() <= max ? name : name.substr(0, max - 3) + "...";
}

uint64_t Percentile(const std::vector<uint64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const auto i = static_cast<size_t>(q * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// Busy time of a step without its communication kernels: the rank's own work.
uint64_t OwnWork(const Step& s) {
  uint64_t busy = 0;
  for (const StepDeviceTime& d : s.devices) busy += d.busy_ns;
  return busy > s.comm_ns ? busy - s.comm_ns : 0;
}

struct RankSteps {
  const Rank* rank = nullptr;
  StepList list;
  std::vector<uint64_t> medians;
  std::vector<size_t> slow;
  std::set<size_t> slow_set;
};

std::string DrillCommand(const std::vector<std::string>& paths, const RankSteps& r, bool merged,
                         const Step& s) {
  std::string cmd = "cupmon-decode gpu-trace";
  for (const auto& p : paths) cmd += " " + p;
  if (merged) cmd += " --pid " + std::to_string(r.rank->recording.header.pid());
  return cmd + " --from " + UtcTime(s.drill_from, 9) + " --to " + UtcTime(s.drill_to, 9);
}

std::vector<uint32_t> DevicesOf(const std::vector<RankSteps>& ranks) {
  std::set<uint32_t> devices;
  for (const RankSteps& r : ranks)
    for (const Step& s : r.list.steps)
      for (const StepDeviceTime& d : s.devices) devices.insert(d.device);
  return {devices.begin(), devices.end()};
}

const StepDeviceTime* DeviceIn(const Step& s, uint32_t device) {
  for (const StepDeviceTime& d : s.devices)
    if (d.device == device) return &d;
  return nullptr;
}

// `full_names`: the signature's kernels as demangled, else in their short form (ShortKernelName).
void PrintHeader(std::ostream& out, const RankSteps& r, const std::string& who, bool full_names) {
  const StepList& l = r.list;
  const auto name = [&](const std::string& n) { return Clip(full_names ? n : ShortKernelName(n)); };
  const auto& h = r.rank->recording.header;
  out << "==cupmon== " << who << "Recording 0x" << std::hex << r.rank->recording.id << std::dec
      << " pid " << h.pid() << "\n";
  if (l.source == StepSource::kAnnotation) {
    out << "steps: " << l.steps.size() << " from step annotations";
    if (l.pattern) out << " (the kernel pattern finds " << l.pattern_steps << "; --by pattern)";
    out << "\n";
  } else if (l.pattern) {
    const StepPattern& p = *l.pattern;
    out << "steps: " << l.steps.size() << " from the kernel pattern of device "
        << (p.stream_key >> 32) << " stream " << (p.stream_key & 0xffffffff) << ": " << p.period
        << " kernels per step there, its repetitions cover "
        << Fixed(100 * p.coverage, 1) << "% of the learning buffer"
        << (l.annotated_steps ? "; " + std::to_string(l.annotated_steps) +
                                    " annotated steps (--by annotation)"
                              : "")
        << "\n";
    out << "  a step opens with: " << name(l.signature_names.back()) << "\n";
    out << "  right after:       " << name(l.signature_names[l.signature_names.size() - 2])
        << (l.signature_names.size() > 2
                ? " (and " + std::to_string(l.signature_names.size() - 2) + " kernel(s) before it)"
                : "")
        << "\n";
    out << "  phase: " << (p.aligned_to_start ? "where the stream's first repetition begins"
                                              : "at the repeating pair (the stream's start was not seen)")
        << "\n";
  } else {
    out << "steps: none found (no repeating kernel pattern, no step annotations)\n";
  }
  if (!l.steps.empty())
    out << "  before the first step: " << l.kernels_before << " kernel(s)\n";
}

void PrintTable(std::ostream& out, const RankSteps& r, const std::vector<uint32_t>& devices) {
  out << Pad("step", 8) << "  " << Pad("start (UTC)", 27, true) << " " << Pad("duration", 11)
      << " " << Pad("kernels", 8) << " " << Pad("memcpy", 7) << " " << Pad("bytes", 10);
  for (uint32_t d : devices) {
    const std::string dev = "dev" + std::to_string(d);
    out << " " << Pad("busy " + dev, 11) << " " << Pad("idle " + dev, 11) << " "
        << Pad("maxgap " + dev, 11);
  }
  out << "  label\n";
  for (size_t i = 0; i < r.list.steps.size(); ++i) {
    const Step& s = r.list.steps[i];
    out << Pad(std::to_string(s.number), 8) << "  " << Pad(UtcTime(s.wall_start, 6), 27, true)
        << " " << Pad(Duration(s.duration()), 11) << " " << Pad(std::to_string(s.kernels), 8)
        << " " << Pad(std::to_string(s.memcpys), 7) << " "
        << Pad(std::to_string(s.memcpy_bytes), 10);
    for (uint32_t dev : devices) {
      const StepDeviceTime* d = DeviceIn(s, dev);
      const uint64_t busy = d ? d->busy_ns : 0;
      out << " " << Pad(Duration(busy), 11) << " "
          << Pad(Duration(s.duration() > busy ? s.duration() - busy : 0), 11) << " "
          << Pad(d ? Duration(d->max_gap_ns) : "-", 11);
    }
    out << "  " << (r.slow_set.count(i) ? "SLOW " : "") << s.label << "\n";
  }
}

void PrintDistribution(std::ostream& out, const RankSteps& r, const StepOptions& o,
                       const std::vector<std::string>& paths, bool merged) {
  const auto& steps = r.list.steps;
  if (steps.empty()) return;
  std::vector<uint64_t> d;
  size_t longest = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    d.push_back(steps[i].duration());
    if (steps[i].duration() > steps[longest].duration()) longest = i;
  }
  std::sort(d.begin(), d.end());
  out << "step time: median " << Duration(Percentile(d, 0.5)) << ", p90 "
      << Duration(Percentile(d, 0.9)) << ", p99 " << Duration(Percentile(d, 0.99)) << ", max "
      << Duration(d.back()) << " (step " << steps[longest].number << ")\n";
  out << "slow steps (at least " << Fixed(o.slow_factor, 2) << "x the median of the "
      << o.rolling << " steps before, and 50us more): " << r.slow.size() << "\n";
  for (size_t i : r.slow) {
    const Step& s = steps[i];
    out << "  step " << s.number << " at " << UtcTime(s.wall_start, 6) << ": "
        << Duration(s.duration()) << ", " << Duration(s.duration() - r.medians[i])
        << " over the rolling median " << Duration(r.medians[i]) << " ("
        << Fixed(static_cast<double>(s.duration()) / static_cast<double>(r.medians[i]), 1)
        << "x)\n";
    out << "    " << DrillCommand(paths, r, merged, s) << "\n";
  }
}

// The recording's trace windows, the step each began in, and why the monitor's step trigger
// opened those of source TRIGGER_AUTO (the BEGIN marker's step, duration, median, threshold).
void PrintWindows(std::ostream& out, const RankSteps& r) {
  const StepList& l = r.list;
  if (l.windows.empty()) return;
  out << "windows: " << l.windows.size() << "\n";
  for (const StepWindow& w : l.windows) {
    // The step whose span [previous step's end, its end] holds the window's begin.
    const Step* in = nullptr;
    for (const Step& s : l.steps)
      if (s.wall_end >= w.wall_begin) {
        in = &s;
        break;
      }
    out << "  #" << w.id << " " << w.source << " at " << UtcTime(w.wall_begin, 6)
        << (in ? ", in step " + std::to_string(in->number) : std::string(", after the last step"))
        << "\n";
    WindowSpan span;
    span.trigger_step = w.trigger_step;
    span.trigger_step_ns = w.trigger_step_ns;
    span.trigger_median_ns = w.trigger_median_ns;
    span.trigger_factor = w.trigger_factor;
    span.trigger_by = w.trigger_by;
    const std::string why = AutoTriggerText(span);
    if (why.empty()) continue;
    out << "    why: " << why << "\n"
        << "    (the monitor cuts a step at its first kernel: a wait before step N+1's launches "
           "is in its step N)\n";
  }
}

// Steps where the ranks' own work ends far apart: each rank's step start plus its busy time
// without communication kernels (NCCL waits for the slowest rank, so durations alone agree).
void PrintDivergence(std::ostream& out, const std::vector<RankSteps>& ranks) {
  size_t n = SIZE_MAX;
  for (const RankSteps& r : ranks) n = std::min(n, r.list.steps.size());
  out << "\nranks: ";
  for (const RankSteps& r : ranks) out << r.rank->label << " " << r.list.steps.size() << " steps; ";
  out << "compared by step number over " << n << " steps\n";
  if (n == 0 || n == SIZE_MAX) return;
  std::vector<uint64_t> durations, spreads;
  for (size_t k = 0; k < n; ++k) durations.push_back(ranks[0].list.steps[k].duration());
  std::sort(durations.begin(), durations.end());
  struct Divergent {
    size_t step;
    int64_t spread;
    size_t straggler;
  };
  std::vector<Divergent> all;
  for (size_t k = 0; k < n; ++k) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    size_t last = 0;
    for (size_t r = 0; r < ranks.size(); ++r) {
      const Step& s = ranks[r].list.steps[k];
      const int64_t ready = s.wall_start + static_cast<int64_t>(OwnWork(s));
      lo = std::min(lo, ready);
      if (ready > hi) hi = ready, last = r;
    }
    all.push_back({k, hi - lo, last});
    spreads.push_back(static_cast<uint64_t>(hi - lo));
  }
  std::sort(spreads.begin(), spreads.end());
  // Ranks of a launch-bound job drift apart by a typical amount every step: divergent is well
  // above that, and above a tenth of a step.
  const uint64_t typical = Percentile(spreads, 0.5);
  const uint64_t threshold =
      std::max<uint64_t>({50'000, Percentile(durations, 0.5) / 10, 2 * typical});
  std::vector<Divergent> found;
  for (const Divergent& d : all)
    if (static_cast<uint64_t>(d.spread) > threshold) found.push_back(d);
  std::stable_sort(found.begin(), found.end(),
                   [](const Divergent& a, const Divergent& b) { return a.spread > b.spread; });
  out << "ranks' own work (step start + busy time without communication kernels) ends "
      << Duration(typical) << " apart in the median step\n";
  out << "steps where ranks diverge (more than " << Duration(threshold)
      << " apart): " << found.size() << "\n";
  for (size_t i = 0; i < found.size() && i < 20; ++i) {
    const Divergent& f = found[i];
    out << "  step " << f.step + 1 << ": straggler " << ranks[f.straggler].rank->label << ", "
        << Duration(static_cast<uint64_t>(f.spread)) << " behind\n";
    int64_t first_start = INT64_MAX;
    for (const RankSteps& r : ranks) first_start = std::min(first_start, r.list.steps[f.step].wall_start);
    for (const RankSteps& r : ranks) {
      const Step& s = r.list.steps[f.step];
      out << "    " << Pad(r.rank->label, 32, true) << " start +"
          << Pad(Duration(static_cast<uint64_t>(s.wall_start - first_start)), 10, true)
          << " duration " << Pad(Duration(s.duration()), 10, true) << " own work "
          << Pad(Duration(OwnWork(s)), 10, true) << " communication " << Duration(s.comm_ns)
          << "\n";
    }
  }
}

void PrintRows(std::ostream& out, const std::vector<RankSteps>& ranks, StepFormat format) {
  const std::vector<uint32_t> devices = DevicesOf(ranks);
  if (format == StepFormat::kCsv) {
    out << "rank,pid,step,start_ns,end_ns,duration_ns,kernels,memcpys,memsets,memcpy_bytes,comm_ns,"
           "rolling_median_ns,slow,label";
    for (uint32_t d : devices) out << ",busy_ns_dev" << d << ",max_gap_ns_dev" << d;
    out << "\n";
  }
  for (const RankSteps& r : ranks) {
    for (size_t i = 0; i < r.list.steps.size(); ++i) {
      const Step& s = r.list.steps[i];
      const bool slow = r.slow_set.count(i) != 0;
      if (format == StepFormat::kCsv) {
        out << r.rank->rank << "," << r.rank->recording.header.pid() << "," << s.number << ","
            << s.wall_start << "," << s.wall_end << "," << s.duration() << "," << s.kernels << ","
            << s.memcpys << "," << s.memsets << "," << s.memcpy_bytes << "," << s.comm_ns << ","
            << r.medians[i] << "," << (slow ? 1 : 0) << "," << CsvQuote(s.label);
        for (uint32_t dev : devices) {
          const StepDeviceTime* d = DeviceIn(s, dev);
          if (d) out << "," << d->busy_ns << "," << d->max_gap_ns;
          else out << ",,";
        }
        out << "\n";
        continue;
      }
      out << "{\"rank\":" << r.rank->rank << ",\"pid\":" << r.rank->recording.header.pid()
          << ",\"step\":" << s.number << ",\"start_ns\":" << s.wall_start << ",\"end_ns\":"
          << s.wall_end << ",\"duration_ns\":" << s.duration() << ",\"kernels\":" << s.kernels
          << ",\"memcpys\":" << s.memcpys << ",\"memsets\":" << s.memsets << ",\"memcpy_bytes\":"
          << s.memcpy_bytes << ",\"comm_ns\":" << s.comm_ns << ",\"rolling_median_ns\":"
          << r.medians[i] << ",\"slow\":" << (slow ? "true" : "false") << ",\"label\":\""
          << JsonEscape(s.label) << "\",\"devices\":[";
      for (size_t k = 0; k < s.devices.size(); ++k)
        out << (k ? "," : "") << "{\"device\":" << s.devices[k].device << ",\"busy_ns\":"
            << s.devices[k].busy_ns << ",\"max_gap_ns\":" << s.devices[k].max_gap_ns << "}";
      out << "]}\n";
    }
  }
}

}  // namespace

Outcome RunStepsReport(const std::vector<const Rank*>& chosen,
                       const std::vector<std::string>& paths, const StepsReportOptions& options,
                       std::ostream& out, Diagnostics& diagnostics, bool warnings) {
  const TraceFilter& f = options.read.filter;
  if (f.timed() || f.device || f.stream || f.kernel || options.limit) {
    diagnostics.Error(
        "steps reads whole recordings: --window, --from, --to, --device, --stream, --kernel and "
        "--limit do not apply (use them on the drill-down commands)");
    return Outcome::kUsageError;
  }
  RankPass pass(chosen, 1, diagnostics);
  const bool merged = pass.merged();
  std::vector<RankSteps> ranks;
  // Several ranks are read at once (RankJobs), their steps kept and reported in rank order.
  pass.Run(
      RankJobs(chosen.size(), options.read.jobs, DecodeThreads()),
      [&](size_t i, const PassProgress& progress) {
        return std::make_unique<StepList>(
            FindSteps(chosen[i]->recording, options.steps,
                      [&](uint64_t done, uint64_t) { progress(0, done); }));
      },
      [&](size_t i, std::unique_ptr<StepList> list) {
        RankSteps r;
        r.rank = chosen[i];
        r.list = std::move(*list);
        RankMessageLog log(diagnostics, pass.Who(i));
        log.ReadProblems(r.list.integrity, nullptr);
        if (r.list.unresolved_names)
          log.Warning(std::to_string(r.list.unresolved_names) +
                      " kernel record(s) whose name pointer has no string entry");
        if (r.list.late_activities)
          log.Note(std::to_string(r.list.late_activities) +
                   " activit(ies) further out of start order than the step scanner holds: " +
                   FormatDuration(static_cast<double>(r.list.late_busy_ns)) +
                   " of their time is left out of busy, so that no overlap counts twice");
        warnings |= r.list.integrity.HasWarnings() || r.list.unresolved_names;
        r.medians = RollingMedians(r.list.steps, options.steps.rolling);
        r.slow = SlowSteps(r.list.steps, r.medians, options.steps);
        r.slow_set.insert(r.slow.begin(), r.slow.end());
        ranks.push_back(std::move(r));
        return true;
      });
  if (options.steps.format != StepFormat::kTable) {
    PrintRows(out, ranks, options.steps.format);
  } else {
    const std::vector<uint32_t> devices = DevicesOf(ranks);
    for (size_t i = 0; i < ranks.size(); ++i) {
      const std::string who = merged ? ranks[i].rank->label + ": " : std::string();
      if (i) out << "\n";
      PrintHeader(out, ranks[i], who, options.read.full_names || options.read.filter.mangled);
      if (ranks[i].list.steps.empty()) continue;
      PrintTable(out, ranks[i], devices);
      PrintDistribution(out, ranks[i], options.steps, paths, merged);
      PrintWindows(out, ranks[i]);
    }
    if (merged) PrintDivergence(out, ranks);
  }
  bool any = false;
  for (const RankSteps& r : ranks) any |= !r.list.steps.empty();
  if (!any) diagnostics.Status("no training steps found");
  out.flush();
  return warnings ? Outcome::kWarnings : Outcome::kClean;
}

}  // namespace cupmon::decoder
