// Finds the recordings of a multi-process job in several directories (and their per-rank
// subdirectories) and numbers them as ranks, so cupmon-decode can merge them into one view.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cupmon/decoder/recording_reader.h"

namespace cupmon::decoder {

// One monitored process of a job.
struct Rank {
  Recording recording;
  uint32_t rank = 0;              // within its job (see ListRanks)
  bool rank_from_header = false;  // false: numbered by (host, pid) order
  std::string job;                // RecordingHeader.job_id, "" when absent
  // "rank N (host:pid)", plus " job J" when recordings of several jobs are merged; there a rank
  // without a launcher number is "host:pid" alone (every job would have its own "rank 0").
  std::string label;
};

struct RankListing {
  std::vector<Rank> ranks;           // by job (first seen), then rank
  std::vector<std::string> ignored;  // files not named *.cupmon in the given directories
  std::vector<std::string> refused;  // "path: why" for *.cupmon files that cannot be read at all
  // Problems a user should be warned about (the outcome kWarnings, exit code 1): paths that cannot be listed next to
  // usable ones, recordings of different jobs mixed together, rank numbers that collide.
  std::vector<std::string> warnings;
  // Recordings left out of the ranks, "host:pid (command), recording ID in DIR: why": when some
  // recordings carry a launcher rank, those with neither rank, job id nor any activity record or
  // window (a launcher such as torchrun that initialised CUDA without GPU work). Not a warning.
  std::vector<std::string> left_out;
  bool mixed_jobs = false;
};

struct RankListingOptions {
  // Subdirectories of each given directory are searched one level down (rank0/, rank1/, ...);
  // recursive: at any depth.
  bool recursive = false;
};

// Lists every recording in `paths` (directories or single .cupmon files). A recording whose
// files are spread over several of the directories is joined by recording id; a path given twice
// is read once. Ranks are numbered per job: by RecordingHeader.rank when every recording of the
// job has one and no two share it, else by (host, pid) order. The job of a recording is its
// job_id; recordings without one belong to the same job only when their command lines are equal.
// Recordings of launchers are left out (RankListing::left_out). Fails (kFailed, exit code 2) only when no
// path can be listed at all.
Expected<RankListing> ListRanks(const std::vector<std::string>& paths,
                                const RankListingOptions& options = {});

}  // namespace cupmon::decoder
