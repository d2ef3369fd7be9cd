// The Perfetto export's tracks: the processes, the track of each stream, CPU thread and NVTX
// range thread, and the lanes that keep a track's slices from overlapping. Private to the export.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/trace_builder.h"
#include "export/perfetto/packet_stream.h"

namespace cupmon::decoder::perfetto {

// One track (uuid) of a TrackGroup. It remembers its latest end and its last kRecent slices: a
// row that arrives after later rows (past the builder's reorder bound) can still go into a gap it
// leaves, so that second lanes hold overlaps only, as far as the recent slices tell.
struct Lane {
  static constexpr size_t kRecent = 32;
  uint64_t uuid = 0;
  int64_t last_end = INT64_MIN;
  // Every slice no longer in `recent` ends at or before `forgotten_end`.
  int64_t forgotten_end = INT64_MIN;
  std::array<std::pair<int64_t, int64_t>, kRecent> recent{};
  size_t recent_head = 0, recent_size = 0;

  bool FitsGap(int64_t start, int64_t end) const {
    if (start < forgotten_end) return false;  // may overlap a slice no longer remembered
    for (size_t i = 0; i < recent_size; ++i) {
      const auto& [s, e] = recent[i];
      // Entirely before, or strictly after: a slice beginning exactly where this one ends was
      // written first, and a reader ordering equal times by file order would pair them wrongly.
      if (!(e <= start || s > end)) return false;
    }
    return true;
  }
  void Remember(int64_t start, int64_t end) {
    if (recent_size == kRecent) {
      forgotten_end = std::max(forgotten_end, recent[recent_head].second);
    } else {
      ++recent_size;
    }
    recent[recent_head] = {start, end};
    recent_head = (recent_head + 1) % kRecent;
  }
};

// One logical track (a stream, a CPU thread, windows, annotations) and its lanes.
struct TrackGroup {
  std::vector<Lane> lanes;
  uint64_t parent_uuid = 0;  // of lanes past the first (and of the first, unless a thread)
  std::string name;          // of the first lane
  std::string description;   // of every lane (GPU streams: their context)
  bool thread = false;       // the first lane is the thread track of (pid, tid)
  uint32_t pid = 0, tid = 0;
};

// The tracks of the recording being written, made when first needed, each written as its
// TrackDescriptor packet then. Track uuids are trace-wide. Single-threaded.
class TrackTable {
 public:
  explicit TrackTable(PacketStream& packets) : packets_(packets) {}
  TrackTable(const TrackTable&) = delete;
  TrackTable& operator=(const TrackTable&) = delete;

  // A new recording (`rank` null for a single one, `index` its position in the output): forgets
  // the previous one's tracks and writes the rank's process, named as in the chrome-json export.
  void BeginRecording(const Recording& recording, size_t index, const Rank* rank);
  uint64_t NewUuid() { return next_uuid_++; }
  // The rank's process track.
  uint64_t process_uuid() const { return process_uuid_; }
  // The pid a record's pid is shown as: the rank's, when the recording is a rank.
  uint32_t PidOf(uint32_t record_pid) const { return rank_ ? rank_pid_ : record_pid; }

  // The groups of a GPU stream (under its device's process), of a CPU thread (its first lane the
  // thread's track) and of a thread's start/end NVTX ranges.
  TrackGroup& Gpu(uint32_t device, uint32_t context, uint32_t stream) {
    const GpuKey key{device, context, stream};
    if (last_gpu_ && key == last_gpu_key_) return *last_gpu_;
    return FindGpu(key);
  }
  TrackGroup& Cpu(uint32_t pid, uint32_t tid) {
    const std::pair<uint32_t, uint32_t> key{pid, tid};
    if (last_cpu_ && key == last_cpu_key_) return *last_cpu_;
    return FindCpu(key);
  }
  TrackGroup& Ranges(uint32_t pid, uint32_t tid);
  // The device's process track, written when first needed.
  uint64_t DeviceUuid(uint32_t device);

  // The uuid of the lane of `group` where [start, end) overlaps nothing, made when needed.
  uint64_t LaneFor(TrackGroup& group, int64_t start, int64_t end) {
    // A lane's last end is its latest end, so a slice starting at or after it overlaps nothing
    // there. An earlier slice (a late row) can only take a remembered gap: every slice that ends
    // at or before its start has had its end written already (ends are written once a later
    // slice begins), so the lane's begin/end pairs stay in order.
    for (Lane& lane : group.lanes) {
      if (lane.last_end <= start || lane.FitsGap(start, end)) {
        lane.last_end = std::max(lane.last_end, end);
        lane.Remember(start, end);
        return lane.uuid;
      }
    }
    return NewLane(group, start, end);
  }
  // The first lane of `group`, made when needed.
  uint64_t FirstLane(TrackGroup& group);

 private:
  struct GpuKey {
    uint32_t device, context, stream;
    bool operator==(const GpuKey& o) const {
      return device == o.device && context == o.context && stream == o.stream;
    }
    bool operator<(const GpuKey& o) const {
      return std::tie(device, context, stream) < std::tie(o.device, o.context, o.stream);
    }
  };

  TrackGroup& FindGpu(const GpuKey& key);
  TrackGroup& FindCpu(std::pair<uint32_t, uint32_t> key);
  uint64_t NewLane(TrackGroup& group, int64_t start, int64_t end);

  PacketStream& packets_;
  uint64_t next_uuid_ = 1;
  // Across recordings: pids already given to a rank's process (two hosts may share one).
  std::vector<uint32_t> rank_pids_;

  // Per recording (reset by BeginRecording).
  const Recording* recording_ = nullptr;
  const Rank* rank_ = nullptr;
  size_t index_ = 0;
  uint32_t rank_pid_ = 0;
  uint64_t process_uuid_ = 0;
  std::map<GpuKey, TrackGroup> gpu_tracks_;
  std::map<uint32_t, uint64_t> device_uuids_;
  std::map<std::pair<uint32_t, uint32_t>, TrackGroup> cpu_tracks_;
  std::map<std::pair<uint32_t, uint32_t>, TrackGroup> range_tracks_;  // start/end ranges
  GpuKey last_gpu_key_{};
  TrackGroup* last_gpu_ = nullptr;
  std::pair<uint32_t, uint32_t> last_cpu_key_{UINT32_MAX, UINT32_MAX};
  TrackGroup* last_cpu_ = nullptr;
};

}  // namespace cupmon::decoder::perfetto
