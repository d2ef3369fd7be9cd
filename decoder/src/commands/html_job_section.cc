// The HTML report's Job section (html_job_section.h).
#include "commands/html_job_section.h"

#include <string>

#include "commands/html_text.h"
#include "cupmon/decoder/kernel_names.h"

namespace cupmon::decoder {
namespace {

// The slow steps get a column per rank up to this many ranks.
constexpr size_t kJobRankColumns = 16;

// What made slow step `s` slow, in a few words (`job` prints it in full).
std::string VerdictWhy(const job::JobAnalysis& a, const job::JobStep& s, bool short_names) {
  const job::Verdict& v = s.verdict;
  switch (v.what) {
    case job::VerdictClass::kHostGap:
      return a.who[*v.culprit].label + " launched late: its GPU sat idle " +
             Dur(s.ranks[*v.culprit].host_gap_ns) + " before its first collective, " +
             Dur(v.culprit_ns) + " more than the other ranks";
    case job::VerdictClass::kGpuWork: {
      std::string why = a.who[*v.culprit].label + "'s GPU work took " + Dur(v.culprit_ns) +
                        " more than the other ranks'";
      if (!v.kernel.empty())
        why += " (" + (short_names ? ShortKernelName(v.kernel) : v.kernel) + ": +" +
               Dur(v.kernel_ns) + ")";
      return why;
    }
    case job::VerdictClass::kCollectives:
      return "every rank's collectives took " + Dur(v.collective_ns) + " longer, no rank late";
    case job::VerdictClass::kUnexplained:
      break;
  }
  return "no rank's work or host gap, nor the collectives, explain half of it (largest rank "
         "excess " + Dur(v.culprit_ns) + ", collectives " + Dur(v.collective_ns) + ")";
}

// The job's slow steps, largest excess first: the verdict, and (up to kJobRankColumns ranks) each
// rank's step time, the culprit's marked.
void JobSlowTable(std::ostream& o, const job::JobAnalysis& a, bool short_names,
                  size_t slow_listed) {
  const size_t n = a.who.size();
  const bool columns = n <= kJobRankColumns;
  o << "<h3>Slow steps of the job</h3><table class=\"job-slow\" id=\"job-slow\"><tr><th>step</th>"
    << "<th>verdict</th><th>culprit</th><th>step time</th><th>over median</th>";
  if (columns)
    for (size_t r = 0; r < n; ++r) o << "<th>" << Esc(a.who[r].label) << "</th>";
  o << "<th>why</th></tr>";
  for (size_t k = 0; k < a.slow.size() && k < slow_listed; ++k) {
    const job::JobStep& s = a.steps[a.slow[k]];
    const job::Verdict& v = s.verdict;
    o << "<tr data-step=\"" << s.number << "\" data-verdict=\"" << job::VerdictName(v.what)
      << "\" data-culprit=\"" << (v.culprit ? std::to_string(*v.culprit) : "")
      << "\" data-step-ns=\"" << s.step_ns << "\" data-excess-ns=\"" << v.excess_ns
      << "\" data-culprit-ns=\"" << v.culprit_ns << "\"><td class=\"n\">" << s.number
      << "</td><td>" << job::VerdictName(v.what) << "</td><td"
      << (v.culprit ? " class=\"warn\">" + Esc(a.who[*v.culprit].label) : std::string(">-"))
      << "</td><td class=\"n\">" << Dur(s.step_ns) << "</td><td class=\"n\">"
      << Dur(v.excess_ns) << "</td>";
    for (size_t r = 0; columns && r < n; ++r) {
      const job::RankStep& f = s.ranks[r];
      const bool culprit = v.culprit && *v.culprit == r;
      o << "<td class=\"n" << (culprit ? " warn culprit" : "") << "\" data-rank=\"" << r << "\"";
      if (f.present)
        o << " data-step-ns=\"" << f.step_ns << "\" title=\"work " << Dur(f.work_ns()) << ", wait "
          << Dur(f.wait_ns) << ", host gap " << Dur(f.host_gap_ns) << "\">" << Dur(f.step_ns);
      else
        o << ">-";
      o << "</td>";
    }
    o << "<td>" << Esc(VerdictWhy(a, s, short_names)) << "</td></tr>";
  }
  o << "</table>";
  if (a.slow.size() > slow_listed)
    o << "<p>" << a.slow.size() - slow_listed << " more slow steps (cupmon-decode job --format "
      << "json lists them all).</p>";
  if (!columns)
    o << "<p class=\"note\">" << n << " ranks: the step time per rank is left out of this table "
      << "(cupmon-decode job --format json holds it).</p>";
  o << "\n";
}

// Per rank over the job's steps: the medians and how often it was the culprit (a chronic
// straggler shows here).
void JobRanksTable(std::ostream& o, const job::JobAnalysis& a) {
  o << "<h3>Ranks over the job's steps</h3><table class=\"job-ranks\" id=\"job-ranks\"><tr>"
    << "<th>rank</th><th>steps</th><th>median step</th><th>work</th><th>collective</th>"
    << "<th>wait</th><th>host gap</th><th>culprit of</th></tr>";
  for (size_t r = 0; r < a.who.size(); ++r) {
    const job::RankSummary& s = a.ranks[r];
    o << "<tr data-rank=\"" << r << "\" data-steps=\"" << s.steps << "\" data-median-step-ns=\""
      << s.median_step_ns << "\" data-median-work-ns=\"" << s.median_work_ns
      << "\" data-median-collective-ns=\"" << s.median_collective_ns
      << "\" data-median-wait-ns=\"" << s.median_wait_ns << "\" data-median-host-gap-ns=\""
      << s.median_host_gap_ns << "\" data-culprit-of=\"" << s.culprit_of << "\"><td>"
      << Esc(a.who[r].label) << "</td><td class=\"n\">" << s.steps << "</td><td class=\"n\">"
      << Dur(s.median_step_ns) << "</td><td class=\"n\">" << Dur(s.median_work_ns)
      << "</td><td class=\"n\">" << Dur(s.median_collective_ns) << "</td><td class=\"n\">"
      << Dur(s.median_wait_ns) << "</td><td class=\"n\">" << Dur(s.median_host_gap_ns)
      << "</td><td class=\"n" << (s.culprit_of ? " warn" : "") << "\">" << s.culprit_of
      << "</td></tr>";
  }
  o << "</table>\n";
}

}  // namespace

// The ranks as one job (`cupmon-decode job`'s analysis): its slow steps with their verdicts, and
// the ranks over its steps.
void WriteJobSection(std::ostream& o, const job::JobAnalysis& a, const HtmlReportOptions& options,
                     size_t slow_listed) {
  o << "<section id=\"job\" data-steps=\"" << a.step_count << "\" data-slow=\"" << a.slow.size()
    << "\" data-reference=\"" << a.reference << "\"><h2>Job</h2>\n<p>" << a.step_count
    << " step(s) matched across " << a.who.size() << " ranks by their collectives (numbered by "
    << Esc(a.who[a.reference].label) << "'s steps), " << a.slow.size()
    << " slow: the job's step time, its longest rank's, at least "
    << Fixed(options.steps.slow_factor, 2) << "x the median of the " << options.steps.rolling
    << " steps before, and 50us more. As <code>cupmon-decode job</code> finds them; it "
    << "also tells how the collectives were matched.</p>\n";
  if (a.hang.hung) {
    o << "<p class=\"warn\" id=\"job-hang\">Hang: ";
    if (a.hang.behind.empty()) {
      o << "every rank ended inside collective #" << a.hang.waiting_at
        << " of the main stream: none is behind.";
    } else {
      std::string who;
      for (uint32_t r : a.hang.behind) who += (who.empty() ? "" : ", ") + a.who[r].label;
      o << Esc(who) << " never launched collective #" << a.hang.waiting_at
        << " of the main stream, which the other ranks ended inside.";
    }
    o << "</p>\n";
  }
  if (!a.slow.empty())
    JobSlowTable(o, a, !options.read.full_names && !options.read.filter.mangled, slow_listed);
  JobRanksTable(o, a);
  o << "</section>\n";
}

}  // namespace cupmon::decoder
