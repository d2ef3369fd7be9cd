// NvtxRanges: NVTX STARTs paired with their ENDs, and the ranges that label GPU rows
// (nvtx_ranges.h).
#include "nvtx_ranges.h"

#include <algorithm>

namespace cupmon::decoder {
namespace {

// An open range handed out without an end: it is reported as an unended push/pop range.
NvtxRange Unended(NvtxRange r) {
  r.end = 0;
  r.kind = RangeKind::kPushPop;
  r.ended = false;
  return r;
}

}  // namespace

std::optional<NvtxRange> NvtxRanges::Start(const NvtxRange& range, uint64_t records_read,
                                           bool placed) {
  std::optional<NvtxRange> given_up;
  if (open_.size() >= kMaxOpen) {
    // Bounded memory: the oldest open range is given up as unended.
    auto oldest = open_.begin();
    given_up = Unended(oldest->second);
    if (auto t = by_thread_.find(ThreadKey(given_up->pid, given_up->tid)); t != by_thread_.end())
      for (ThreadRange& r : t->second)
        if (r.id == oldest->first && r.end == 0) r.end = r.start, r.ended_at = records_read;
    open_.erase(oldest);
  }
  auto [slot, fresh] = open_.try_emplace(range.id, range);
  if (!fresh || !placed) return given_up;
  std::deque<ThreadRange>& list = by_thread_[ThreadKey(range.pid, range.tid)];
  // Forget ranges that ended long before any row still waiting in the join stage was launched.
  while (!list.empty() && list.front().end != 0 &&
         (records_read - list.front().ended_at > forget_after_ || list.size() >= kMaxPerThread))
    list.pop_front();
  if (list.size() >= kMaxPerThread) {
    // Only open ranges at the front: drop the oldest ended one anywhere.
    auto ended = std::find_if(list.begin(), list.end(), [](const ThreadRange& r) { return r.end; });
    if (ended != list.end()) list.erase(ended);
    else list.pop_front();
  }
  list.push_back(ThreadRange{range.start, 0, 0, range.id, range.name_id});
  return given_up;
}

std::optional<NvtxRange> NvtxRanges::End(uint32_t id, uint64_t ts, uint32_t pid, uint32_t tid,
                                         uint64_t records_read) {
  auto it = open_.find(id);
  if (it == open_.end()) return std::nullopt;
  NvtxRange r = it->second;
  open_.erase(it);
  if (auto t = by_thread_.find(ThreadKey(r.pid, r.tid)); t != by_thread_.end()) {
    for (auto l = t->second.rbegin(); l != t->second.rend(); ++l) {
      if (l->id != id || l->end != 0) continue;
      l->end = ts ? ts : l->start;
      l->ended_at = records_read;
      break;
    }
  }
  r.end = ts;
  r.kind = r.pid != pid || r.tid != tid ? RangeKind::kStartEnd : RangeKind::kPushPop;
  r.ended = true;
  return r;
}

uint32_t NvtxRanges::Depth(uint32_t pid, uint32_t tid, uint64_t t) const {
  auto it = by_thread_.find(ThreadKey(pid, tid));
  if (it == by_thread_.end()) return 0;
  uint32_t depth = 0;
  for (const ThreadRange& r : it->second) depth += r.start <= t && (r.end == 0 || r.end > t);
  return depth;
}

const NvtxRanges::ThreadRange* NvtxRanges::Latest(const std::deque<ThreadRange>& list, uint64_t t,
                                                  const ThreadRange* best) {
  for (const ThreadRange& r : list) {
    if (r.start > t || (r.end != 0 && r.end < t)) continue;
    if (!best || r.start > best->start || (r.start == best->start && r.id >= best->id)) best = &r;
  }
  return best;
}

std::optional<uint32_t> NvtxRanges::Innermost(uint32_t pid, uint32_t tid, uint64_t t) const {
  auto it = by_thread_.find(ThreadKey(pid, tid));
  if (it == by_thread_.end()) return std::nullopt;
  // The innermost range holding t is the one holding it that started last.
  const ThreadRange* best = Latest(it->second, t, nullptr);
  if (!best) return std::nullopt;
  return best->name_id;
}

std::optional<NvtxRanges::Label> NvtxRanges::LabelOf(uint32_t pid, uint32_t tid, uint64_t t,
                                                     NvtxScope scope) const {
  if (std::optional<uint32_t> own = Innermost(pid, tid, t)) return Label{*own, NvtxScope::kThread};
  if (scope != NvtxScope::kProcess) return std::nullopt;
  // The launching thread holds none at t, so its own list cannot win: every thread of the
  // process is searched alike. Threads with ranges are few (by_thread_ keeps only those).
  const ThreadRange* best = nullptr;
  for (const auto& [key, list] : by_thread_)
    if (key >> 32 == pid) best = Latest(list, t, best);
  if (!best) return std::nullopt;
  return Label{best->name_id, NvtxScope::kProcess};
}

std::vector<NvtxRange> NvtxRanges::TakeUnended() {
  std::vector<NvtxRange> unended;
  unended.reserve(open_.size());
  for (const auto& [id, r] : open_) unended.push_back(Unended(r));
  open_.clear();
  return unended;
}

}  // namespace cupmon::decoder
