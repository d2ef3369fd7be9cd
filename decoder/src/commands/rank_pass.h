// RankPass: the one driver of the commands that read recordings rank by rank (summary, info, the
// traces and exports, steps, timeline, diff, report). It reads the chosen ranks, several at once
// where the command allows (RankJobs), keeps one progress line over all of them, and hands each
// rank's read to the command in rank order; RankMessageLog reports a rank's warnings and notes.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "cupmon/decoder/diagnostics.h"
#include "cupmon/decoder/progress_line.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"
#include "ordered_parallel.h"
#include "report_documents.h"

namespace cupmon::decoder {

// Where a read of one rank is: its `pass` (0, 1, ...: the command's reads of that rank, in turn)
// and the bytes of that pass read so far.
using PassProgress = std::function<void(int pass, uint64_t done)>;

// Single-threaded: one command's driver calls it; only the reads it starts with jobs > 1 run on
// other threads (OrderedParallel), and they touch nothing of it but their rank's progress.
class RankPass {
 public:
  // `ranks`: the recordings to read, in output order (one may come twice: diff's two sides).
  // `passes`: how many times the command reads each rank; the progress line's total counts each
  // rank's bytes that often. The progress line goes to `diagnostics` where it wants one, and
  // only for large inputs (ProgressLine::ShouldShow).
  RankPass(std::vector<const Rank*> ranks, int passes, Diagnostics& diagnostics);

  // Reads rank i with read(i, progress) -> std::unique_ptr<T> and hands the result to
  // use(i, std::unique_ptr<T>) -> bool, for i = 0, 1, ... in turn, until use returns false. With
  // jobs > 1 the reads run on up to `jobs` threads ahead of the rank in use (OrderedParallel; an
  // exception of a read is rethrown here); else read(i) runs on this thread just before use(i).
  // The progress line is cleared before each use, so that use may report and write its output.
  template <class Read, class Use>
  void Run(size_t jobs, Read&& read, Use&& use);

  const std::vector<const Rank*>& ranks() const { return ranks_; }
  bool merged() const { return ranks_.size() > 1; }
  // "label: " before the messages of rank i when several ranks are read, else "".
  std::string Who(size_t i) const { return merged() ? ranks_[i]->label + ": " : std::string(); }
  uint64_t total_bytes() const { return total_bytes_; }
  // Bytes of the ranks handed to use so far: of a rank read in one pass, the bytes that read got
  // to (less than its files when it stopped early); of a rank read in several, its bytes once per
  // pass (a pass may skip what an earlier one read, as diff's cached steps).
  uint64_t bytes_done() const { return bytes_done_; }

  // The sum of a recording's files' bytes.
  static uint64_t BytesOf(const Recording& recording);

 private:
  void Show(uint64_t done) { progress_.Update(done, std::max(total_bytes_, done)); }
  // rank i is read: counts its bytes (bytes_done) and clears the progress line.
  void Done(size_t i);

  const std::vector<const Rank*> ranks_;
  const int passes_;
  uint64_t total_bytes_ = 0;
  uint64_t bytes_done_ = 0;
  // Per rank: how far its read got (pass * its bytes + the pass's bytes), stored by the thread
  // that reads it and loaded once that read is handed over. Relaxed: OrderedParallel's hand-over
  // (its mutex) orders the last store before the load.
  std::unique_ptr<std::atomic<uint64_t>[]> reached_;
  ProgressLine progress_;
};

// A rank's warnings and notes: each reported at once as "<who><message>" (who: the rank's label
// and ": " when several ranks are read), and kept without `who` for a document's per-rank
// "warnings" and "notes" (said()).
class RankMessageLog {
 public:
  RankMessageLog(Diagnostics& diagnostics, std::string who)
      : diagnostics_(diagnostics), who_(std::move(who)) {}
  void Warning(std::string message);
  void Note(std::string message);
  // The problems every command reports first: the read's damage (integrity.messages), then, with
  // `counts`, what the builder found wrong in the records (counts->messages).
  void ReadProblems(const ReadIntegrity& integrity, const TraceCounts* counts);
  const RankMessages& said() const { return said_; }

 private:
  Diagnostics& diagnostics_;
  const std::string who_;
  RankMessages said_;
};

template <class Read, class Use>
void RankPass::Run(size_t jobs, Read&& read, Use&& use) {
  using Result = std::invoke_result_t<Read&, size_t, const PassProgress&>;
  using T = typename Result::element_type;
  const size_t n = ranks_.size();
  std::unique_ptr<OrderedParallel<T>> parallel;
  if (jobs > 1) {
    parallel = std::make_unique<OrderedParallel<T>>(
        n, jobs, [this, &read](size_t i, std::atomic<uint64_t>& done) {
          const uint64_t bytes = BytesOf(ranks_[i]->recording);
          const PassProgress progress = [this, i, bytes, &done](int pass, uint64_t d) {
            const uint64_t at = static_cast<uint64_t>(pass) * bytes + d;
            done.store(at, std::memory_order_relaxed);
            reached_[i].store(at, std::memory_order_relaxed);
          };
          return read(i, progress);
        });
  }
  for (size_t i = 0; i < n; ++i) {
    Result result;
    if (parallel) {
      result = parallel->Take(i, std::chrono::milliseconds(100), [this](uint64_t d) { Show(d); });
    } else {
      const uint64_t bytes = BytesOf(ranks_[i]->recording);
      const PassProgress progress = [this, i, bytes](int pass, uint64_t d) {
        const uint64_t at = static_cast<uint64_t>(pass) * bytes + d;
        reached_[i].store(at, std::memory_order_relaxed);
        Show(bytes_done_ + at);
      };
      result = read(i, progress);
    }
    Done(i);
    if (!use(i, std::move(result))) return;
  }
}

}  // namespace cupmon::decoder
