// Multi-directory listing and rank numbering for cupmon-decode's merged (multi-rank) reports.
#include "cupmon/decoder/rank_listing.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "hex_text.h"
#include "importers.h"

namespace cupmon::decoder {
namespace {

std::string CommandOf(const pb::RecordingHeader& h) {
  std::string cmd;
  for (const auto& a : h.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
  return cmd;
}

// Recordings without a job id share a job only when their command lines are equal.
std::string JobKey(const pb::RecordingHeader& h) {
  return h.job_id().empty() ? "\x01" + CommandOf(h) : h.job_id();
}

std::string JobName(const pb::RecordingHeader& h) {
  return h.job_id().empty() ? "the recordings without job id running '" + CommandOf(h) + "'"
                            : "job " + h.job_id();
}

std::string DirOf(const Recording& r) {
  const std::string dir = r.files.empty()
                              ? std::string("?")
                              : std::filesystem::path(r.files[0].path).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

std::string Where(const Recording& r) { return "recording " + Hex(r.id) + " in " + DirOf(r); }

// Finds whether a recording holds any activity record or window marker (reads it; called only for
// launcher candidates, which are small).
class ActivityProbe : public ChunkVisitor {
 public:
  void OnRawBuffer(const RawBufferPrefix& /*prefix*/, std::span<const uint8_t> records,
                   const ChunkOrigin& /*at*/) override {
    any |= !records.empty();
  }
  void OnWindowMarker(const pb::WindowMarker& /*marker*/) override { any = true; }
  bool any = false;
};

// A launcher that touched CUDA without running GPU work (torchrun calls into CUDA to count the
// devices, so injection starts a monitor in it too) writes a recording with no activity and no
// rank. When the listing also holds recordings numbered by their launcher (RANK), such recordings
// are left out of the ranks, with a note, instead of making a "rank" and a second job of their own.
// A recording that carries a rank is never left out, even when empty: a rank that recorded
// nothing is a finding.
void LeaveOutLaunchers(std::vector<Recording>& recordings, RankListing& out) {
  const bool numbered = std::any_of(recordings.begin(), recordings.end(),
                                    [](const Recording& r) { return r.header.has_rank(); });
  if (!numbered) return;
  std::erase_if(recordings, [&](const Recording& r) {
    if (r.header.has_rank() || !r.header.job_id().empty()) return false;
    ActivityProbe probe;
    ReadIntegrity integrity;
    ReadRecording(r, probe, &integrity);
    if (probe.any || integrity.HasWarnings()) return false;
    out.left_out.push_back(r.header.host() + ":" + std::to_string(r.header.pid()) + " (" +
                           CommandOf(r.header) + "), " + Where(r) +
                           ": no rank and no activity records (a launcher that initialised CUDA "
                           "without running GPU work)");
    return true;
  });
}

// The directories to list under `dir`: itself, then its subdirectories (one level, or all).
std::vector<std::string> DirectoriesUnder(const std::string& dir, bool recursive) {
  namespace fs = std::filesystem;
  std::vector<std::string> out{dir};
  std::vector<std::string> subdirs;
  std::error_code ec;
  if (recursive) {
    for (auto it = fs::recursive_directory_iterator(
             dir, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec) && !it->is_symlink(ec)) subdirs.push_back(it->path().string());
  } else {
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
         it.increment(ec))
      if (it->is_directory(ec)) subdirs.push_back(it->path().string());
  }
  std::sort(subdirs.begin(), subdirs.end());
  out.insert(out.end(), subdirs.begin(), subdirs.end());
  return out;
}

}  // namespace

Expected<RankListing> ListRanks(const std::vector<std::string>& paths,
                                const RankListingOptions& options) {
  namespace fs = std::filesystem;
  RankListing out;
  std::vector<std::string> errors;
  std::set<std::string> seen_files;
  std::map<uint64_t, Recording> by_id;
  std::vector<uint64_t> id_order;  // first seen
  size_t listed = 0;
  for (const std::string& path : paths) {
    std::error_code ec;
    const bool dir = fs::is_directory(path, ec);
    const std::vector<std::string> dirs =
        dir ? DirectoriesUnder(path, options.recursive) : std::vector<std::string>{path};
    for (size_t d = 0; d < dirs.size(); ++d) {
      auto listing = ListRecordings(dirs[d]);
      if (!listing) {
        errors.push_back(listing.error().message);
        continue;
      }
      if (d == 0) ++listed;
      // Other files in per-rank subdirectories are not the user's concern: only the given
      // directories' are listed as ignored.
      if (d == 0)
        out.ignored.insert(out.ignored.end(), listing->ignored.begin(), listing->ignored.end());
      out.refused.insert(out.refused.end(), listing->refused.begin(), listing->refused.end());
      for (Recording& r : listing->recordings) {
        std::vector<RecordingFile> fresh;
        for (RecordingFile& f : r.files) {
          std::error_code cec;
          const fs::path canonical = fs::weakly_canonical(f.path, cec);
          if (seen_files.insert(cec ? f.path : canonical.string()).second)
            fresh.push_back(std::move(f));
        }
        if (fresh.empty()) continue;
        auto [it, inserted] = by_id.try_emplace(r.id);
        Recording& into = it->second;
        if (inserted) {
          id_order.push_back(r.id);
          into.id = r.id;
          into.header = r.header;
          into.importer = r.importer;
          into.source_note = r.source_note;
        } else if (r.header.file_index() < into.header.file_index()) {
          into.header = r.header;
        }
        into.files.insert(into.files.end(), fresh.begin(), fresh.end());
      }
    }
  }
  if (listed == 0 && by_id.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : "; ") + e;
    return MakeError(all.empty() ? std::string("no path given") : all);
  }
  for (const auto& e : errors) out.warnings.push_back(e);

  std::vector<Recording> recordings;
  for (uint64_t id : id_order) {
    Recording& r = by_id[id];
    std::stable_sort(
        r.files.begin(), r.files.end(),
        [](const RecordingFile& a, const RecordingFile& b) { return a.file_index < b.file_index; });
    recordings.push_back(std::move(r));
  }
  std::stable_sort(recordings.begin(), recordings.end(),
                   [](const Recording& a, const Recording& b) {
                     return a.header.process_start_unix_ns() < b.header.process_start_unix_ns();
                   });
  LeaveOutLaunchers(recordings, out);

  // Group by job, in order of each job's first process start.
  std::vector<std::string> job_order;
  std::map<std::string, std::vector<Recording>> jobs;
  for (Recording& r : recordings) {
    const std::string key = JobKey(r.header);
    if (!jobs.count(key)) job_order.push_back(key);
    jobs[key].push_back(std::move(r));
  }
  out.mixed_jobs = job_order.size() > 1;
  for (const std::string& key : job_order) {
    std::vector<Recording>& members = jobs[key];
    std::set<int32_t> numbers;
    bool all_numbered = true;
    for (const Recording& r : members) {
      all_numbered &= r.header.has_rank();
      if (r.header.has_rank()) numbers.insert(r.header.rank());
    }
    const bool collide = all_numbered && numbers.size() != members.size();
    const bool from_header = all_numbered && !collide;
    if (collide) {
      std::string who;
      for (const Recording& r : members)
        who += (who.empty() ? "" : ", ") + r.header.host() + ":" + std::to_string(r.header.pid()) +
               " says rank " + std::to_string(r.header.rank());
      out.warnings.push_back("rank numbers repeat in " + JobName(members[0].header) + " (" + who +
                             "): ranks numbered by (host, pid) instead");
    }
    std::stable_sort(members.begin(), members.end(), [&](const Recording& a, const Recording& b) {
      if (from_header) return a.header.rank() < b.header.rank();
      // The first file's path orders recordings with no host and pid (PyTorch monitor dumps).
      return std::forward_as_tuple(a.header.host(), a.header.pid(), DirOf(a), a.id) <
             std::forward_as_tuple(b.header.host(), b.header.pid(), DirOf(b), b.id);
    });
    for (size_t i = 0; i < members.size(); ++i) {
      Rank rank;
      rank.rank =
          from_header ? static_cast<uint32_t>(members[i].header.rank()) : static_cast<uint32_t>(i);
      rank.rank_from_header = from_header;
      rank.job = members[i].header.job_id();
      rank.recording = std::move(members[i]);
      out.ranks.push_back(std::move(rank));
    }
  }
  for (Rank& r : out.ranks) {
    const auto& h = r.recording.header;
    const Importer& importer = r.recording.importer ? *r.recording.importer : CupmonFiles();
    // A number the launcher gave names the rank. One made up by (host, pid) order means nothing
    // across jobs, where every job has its own rank 0: such a rank goes by its process alone.
    if (r.rank_from_header || !out.mixed_jobs)
      r.label = "rank " + std::to_string(r.rank) + " (" + importer.ProcessName(r.recording) + ")";
    else
      r.label = importer.ProcessName(r.recording);
    if (out.mixed_jobs)
      r.label += " " + (r.job.empty() ? "(no job id: " + CommandOf(h) + ")" : "job " + r.job);
  }
  if (out.mixed_jobs) {
    std::string text = "recordings of " + std::to_string(job_order.size()) +
                       " different jobs are mixed together; they are merged anyway, ranks numbered "
                       "per job:";
    for (const Rank& r : out.ranks) text += "\n    " + r.label + ", " + Where(r.recording);
    out.warnings.push_back(std::move(text));
  }
  return out;
}

}  // namespace cupmon::decoder
