// The ends of the Perfetto export's slices, held until their time comes. Private to the export.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

#include "export/perfetto/packet_stream.h"

namespace cupmon::decoder::perfetto {

// Packets go out in time order: a slice's end waits here until no later slice can begin before
// it (WriteUpTo the next slice's start). Ends at one time leave in the order their slices began.
// Single-threaded.
class SliceEnds {
 public:
  explicit SliceEnds(PacketStream& packets) : packets_(packets) {}

  // Drops the ends held (a new sequence; End has written them all).
  void Clear() { heap_ = {}; }
  void Add(int64_t time, uint64_t track) { heap_.push(End{time, order_++, track}); }
  // Writes the ends at or before `t`.
  void WriteUpTo(int64_t t) {
    while (!heap_.empty() && heap_.top().time <= t) {
      const End e = heap_.top();
      heap_.pop();
      packets_.WriteSliceEnd(e.time, e.track_uuid);
    }
  }

 private:
  struct End {
    int64_t time;
    uint64_t order;
    uint64_t track_uuid;
    bool operator>(const End& o) const { return time != o.time ? time > o.time : order > o.order; }
  };

  PacketStream& packets_;
  uint64_t order_ = 0;
  std::priority_queue<End, std::vector<End>, std::greater<End>> heap_;
};

}  // namespace cupmon::decoder::perfetto
