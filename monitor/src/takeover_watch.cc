// TakeoverWatch: the takeover gap's markers and the reclaim (takeover_watch.h).
#include "takeover_watch.h"

#include <atomic>
#include <cstdio>

#include "activity_intake.h"
#include "cupmon/format/recording_writer.h"
#include "cupti_mux.h"

namespace cupmon {

pb::WindowMarker TakeoverWatch::GapMarker(bool begin, uint32_t gap, uint64_t cupti_ns,
                                          std::string note) {
  pb::WindowMarker m;
  m.set_window_id(gap);
  m.set_edge(begin ? pb::WindowMarker::GAP_BEGIN : pb::WindowMarker::GAP_END);
  m.set_cupti_ns(cupti_ns);
  m.set_realtime_ns(RealClock().RealtimeNs());
  m.set_note(std::move(note));
  return m;
}

void TakeoverWatch::WriteGapMarker(bool begin, uint32_t gap, uint64_t cupti_ns,
                                   const std::string& note) {
  PostToWriter(queue_, [m = GapMarker(begin, gap, cupti_ns, note)](RecordingWriter& w) {
    w.WriteWindowMarker(m);
  });
}

void TakeoverWatch::EndOpenGap() {
  if (!watch_.in_gap()) return;
  uint64_t now_cupti = 0;
  cupti_.GetTimestamp(&now_cupti);
  WriteGapMarker(false, watch_.gaps(), now_cupti, "recording stopped during the gap");
}

uint64_t TakeoverWatch::BuffersInsideCupti() const {
  const uint64_t in_use = pool_.in_use();
  const uint64_t at_writer = counters_.buffers_at_writer.load(std::memory_order_relaxed);
  return in_use > at_writer ? in_use - at_writer : 0;
}

bool TakeoverWatch::BuffersGrew() {
  // About 12 KiB read per buffer.
  bool grew = false;
  fill_.resize(pool_.count(), 0);
  for (size_t slot = 0; slot < pool_.count(); ++slot) {
    const uint8_t* b = pool_.BufferIfInUse(slot);
    const size_t filled = b ? FilledPrefixBytes(b, pool_.buffer_bytes()) : 0;
    grew = grew || filled > fill_[slot];
    fill_[slot] = filled;
  }
  return grew;
}

void TakeoverWatch::Check() {
  CUPMON_DCHECK_THREAD(thread_);
  uint64_t now_cupti = 0;
  cupti_.GetTimestamp(&now_cupti);
  const uint64_t calls = counters_.callback_calls.load(std::memory_order_relaxed);
  const uint64_t in_flight = BuffersInsideCupti();
  const bool grew = BuffersGrew();
  const int64_t now_ms = clock_.SteadyNs() / 1'000'000;
  const uint64_t since = last_active_cupti_ns_ ? last_active_cupti_ns_ : now_cupti;
  const CallbackWatch::Action action = watch_.Tick(calls, in_flight, grew, now_ms);
  if (!watch_.in_gap()) last_active_cupti_ns_ = now_cupti;
  const uint32_t gap = watch_.gaps();
  switch (action) {
    case CallbackWatch::Action::kNone:
      return;
    case CallbackWatch::Action::kGapBegins:
      counters_.cupti_gaps.store(gap, std::memory_order_relaxed);
      // The gap began after the last tick that saw cupmon's callbacks run.
      WriteGapMarker(true, gap, since,
                     "for " + std::to_string(facts_.config.flush_ms) +
                         " ms no cupmon buffer came back or grew while " +
                         std::to_string(in_flight) + " were inside CUPTI: " +
                         (Shared() ? "a kernel ran that long with no other CUDA work in the "
                                     "process, or a CUPTI client that bypassed cupmon's sharing "
                                     "(dlsym, a static libcupti) registered its own activity "
                                     "callbacks"
                                   : "another CUPTI client probably registered its own activity "
                                     "callbacks"));
      WarnGapOnce();
      return;
    case CallbackWatch::Action::kGapEnds:
      WriteGapMarker(false, gap, now_cupti, "cupmon's buffer callbacks ran again");
      return;
    case CallbackWatch::Action::kReclaim:
      WriteGapMarker(false, gap, now_cupti, Reclaim(now_ms));
      return;
  }
}

bool TakeoverWatch::Shared() const { return dynamic_cast<CuptiMux*>(&cupti_) != nullptr; }

void TakeoverWatch::WarnGapOnce() {
  if (gap_warned_) return;
  gap_warned_ = true;
  const uint32_t reclaim = facts_.config.reclaim_ms;
  std::string line;
  if (Shared()) {
    // Sharing CUPTI (the preload, or imports rebound): no client registered past cupmon, so a
    // long kernel (a rank waiting in a collective) is the likelier cause than a takeover.
    line = "for " + std::to_string(facts_.config.flush_ms) +
           " ms no buffer of cupmon's came back from CUPTI or grew: a kernel is running longer "
           "than that with no other CUDA work (nothing is lost: the marked interval ends when it "
           "completes), or a CUPTI client that bypassed cupmon's sharing (dlsym, a static "
           "libcupti) took CUPTI's activity callbacks (" +
           (reclaim ? "cupmon takes them back in " + std::to_string(reclaim) + " ms"
                    : std::string("cupmon does not take them back")) +
           "); the interval is marked in the recording (docs/COEXISTENCE.md)";
  } else {
    line = "another CUPTI client (torch.profiler, ...) seems to have taken CUPTI's activity "
           "callbacks: cupmon records nothing until " +
           (reclaim ? "it takes them back in " + std::to_string(reclaim) + " ms"
                    : std::string("stop (CUPMON_RECLAIM_MS=0)")) +
           "; the gap is marked in the recording. To share CUPTI instead, start the job with "
           "cupmon-run (it preloads libcupmon-preload.so unless --no-preload; "
           "docs/COEXISTENCE.md)";
  }
  std::fprintf(stderr, "cupmon: %s\n", line.c_str());
}

std::string TakeoverWatch::Reclaim(int64_t now_ms) {
  const int64_t held_ms = now_ms - watch_.gap_start_ms();
  // Counted before cupmon's callbacks are back: from then on, the application's next record may
  // ask cupmon for a new buffer, which is not stranded.
  const uint64_t held_by_other = BuffersInsideCupti();
  CUptiResult r;
  if (auto* mux = dynamic_cast<CuptiMux*>(&cupti_)) {
    r = mux->Reassert();
  } else {
    r = cupti_.ActivityRegisterCallbacks(ActivityIntake::RequestCallback(),
                                         ActivityIntake::CompleteCallback());
    // Clients switch their kinds off when their session ends; cupmon's go on again.
    for (uint32_t kind : facts_.enabled_kinds)
      cupti_.ActivityEnable(static_cast<CUpti_ActivityKind>(kind));
  }
  watch_.Reclaimed(held_by_other);
  counters_.stranded_buffers.store(watch_.stranded(), std::memory_order_relaxed);
  return r == CUPTI_SUCCESS
             ? "cupmon registered its callbacks and kinds again " + std::to_string(held_ms) +
                   " ms after the gap was noticed; " + std::to_string(watch_.stranded()) +
                   " cupmon buffers stayed with the other client"
             : std::string("taking CUPTI back failed: ") + cupti_.ResultString(r);
}

}  // namespace cupmon
