// RankPass's bookkeeping and RankMessageLog (rank_pass.h).
#include "commands/rank_pass.h"

namespace cupmon::decoder {

RankPass::RankPass(std::vector<const Rank*> ranks, int passes, Diagnostics& diagnostics)
    : ranks_(std::move(ranks)),
      passes_(passes),
      total_bytes_([&] {
        uint64_t total = 0;
        for (const Rank* r : ranks_) total += static_cast<uint64_t>(passes) * BytesOf(r->recording);
        return total;
      }()),
      reached_(new std::atomic<uint64_t>[ranks_.size()]),
      progress_(diagnostics, ProgressLine::ShouldShow(diagnostics.WantsProgress(), total_bytes_)) {
  for (size_t i = 0; i < ranks_.size(); ++i) reached_[i].store(0, std::memory_order_relaxed);
}

uint64_t RankPass::BytesOf(const Recording& recording) {
  uint64_t bytes = 0;
  for (const auto& f : recording.files) bytes += f.bytes;
  return bytes;
}

void RankPass::Done(size_t i) {
  bytes_done_ += passes_ == 1 ? reached_[i].load(std::memory_order_relaxed)
                              : static_cast<uint64_t>(passes_) * BytesOf(ranks_[i]->recording);
  progress_.Finish();
}

void RankMessageLog::Warning(std::string message) {
  diagnostics_.Warning(who_ + message);
  said_.warnings.push_back(std::move(message));
}

void RankMessageLog::Note(std::string message) {
  diagnostics_.Note(who_ + message);
  said_.notes.push_back(std::move(message));
}

void RankMessageLog::ReadProblems(const ReadIntegrity& integrity, const TraceCounts* counts) {
  for (const auto& m : integrity.messages) Warning(m);
  if (integrity.chunks_not_read)
    Note("read by the files' chunk indexes: " + std::to_string(integrity.chunks_not_read) +
         " raw buffer chunk(s) (" + std::to_string(integrity.bytes_not_read) +
         " bytes) that cannot hold the time range were not read or checked");
  if (counts)
    for (const auto& m : counts->messages) Warning(m);
}

}  // namespace cupmon::decoder
