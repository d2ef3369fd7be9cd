// The Perfetto export's tracks (see track_table.h).
#include "export/perfetto/track_table.h"

namespace cupmon::decoder::perfetto {

void TrackTable::BeginRecording(const Recording& recording, size_t index, const Rank* rank) {
  recording_ = &recording;
  rank_ = rank;
  index_ = index;
  gpu_tracks_.clear();
  device_uuids_.clear();
  cpu_tracks_.clear();
  range_tracks_.clear();
  last_gpu_ = last_cpu_ = nullptr;
  last_cpu_key_ = {UINT32_MAX, UINT32_MAX};

  // A pid another rank already has (two hosts) gets a made-up one so that the two processes stay
  // apart.
  const auto& h = recording.header;
  std::string name;
  if (rank) {
    rank_pid_ = h.pid();
    if (std::find(rank_pids_.begin(), rank_pids_.end(), rank_pid_) != rank_pids_.end())
      rank_pid_ = 900'000'000u + static_cast<uint32_t>(index);
    rank_pids_.push_back(rank_pid_);
    name = rank->label;
  } else {
    rank_pid_ = h.pid();
    std::string cmd;
    for (const auto& a : h.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
    name = "CPU pid " + std::to_string(rank_pid_) + (cmd.empty() ? "" : " " + cmd);
  }
  if (h.synthetic()) name += " (SYNTHETIC)";
  process_uuid_ = NewUuid();
  packets_.WriteProcessTrack(process_uuid_, rank_pid_, name);
}

uint64_t TrackTable::DeviceUuid(uint32_t device) {
  auto it = device_uuids_.find(device);
  if (it != device_uuids_.end()) return it->second;
  const uint64_t uuid = NewUuid();
  device_uuids_.emplace(device, uuid);
  std::string name = "GPU " + std::to_string(device);
  for (const auto& d : recording_->header.devices())
    if (d.id() == device && !d.name().empty()) name += " " + d.name();
  name += rank_ ? " (" + rank_->label + ")" : " (pid " + std::to_string(rank_pid_) + ")";
  // Same made-up pid as the chrome-json export: one per (recording, device).
  packets_.WriteProcessTrack(uuid, 1'000'000u + static_cast<uint32_t>(index_) * 1000u + device,
                             name);
  return uuid;
}

TrackGroup& TrackTable::FindGpu(const GpuKey& key) {
  auto [it, inserted] = gpu_tracks_.try_emplace(key);
  if (inserted) {
    // A stream belongs to one context, so the context is said once, by the track, instead of by
    // every slice on it (as chrome-json's "context" argument does).
    it->second.parent_uuid = DeviceUuid(key.device);
    it->second.name = "stream " + std::to_string(key.stream);
    it->second.description = "context " + std::to_string(key.context);
  }
  last_gpu_key_ = key;
  last_gpu_ = &it->second;
  return it->second;
}

TrackGroup& TrackTable::FindCpu(std::pair<uint32_t, uint32_t> key) {
  auto [it, inserted] = cpu_tracks_.try_emplace(key);
  if (inserted) {
    it->second.parent_uuid = process_uuid_;
    it->second.name = "thread " + std::to_string(key.second);
    it->second.thread = true;
    it->second.pid = key.first;
    it->second.tid = key.second;
  }
  last_cpu_key_ = key;
  last_cpu_ = &it->second;
  return it->second;
}

TrackGroup& TrackTable::Ranges(uint32_t pid, uint32_t tid) {
  // Ended on another thread: a range need not nest with the thread's calls, so they get a track
  // of their own (with lanes for overlaps).
  auto [it, inserted] = range_tracks_.try_emplace({pid, tid});
  if (inserted) {
    it->second.parent_uuid = process_uuid_;
    it->second.name = "thread " + std::to_string(tid) + " ranges";
  }
  return it->second;
}

uint64_t TrackTable::NewLane(TrackGroup& group, int64_t start, int64_t end) {
  Lane lane;
  lane.uuid = NewUuid();
  lane.last_end = end;
  lane.Remember(start, end);
  if (group.lanes.empty() && group.thread) {
    packets_.WriteThreadTrack(lane.uuid, group.pid, group.tid, group.name);
  } else {
    const std::string name = group.lanes.empty()
                                 ? group.name
                                 : group.name + " lane " + std::to_string(group.lanes.size() + 1);
    packets_.WriteTrack(lane.uuid, group.parent_uuid, name, group.description);
  }
  group.lanes.push_back(lane);
  return lane.uuid;
}

uint64_t TrackTable::FirstLane(TrackGroup& group) {
  if (group.lanes.empty()) {
    Lane lane;
    lane.uuid = NewUuid();
    if (group.thread)
      packets_.WriteThreadTrack(lane.uuid, group.pid, group.tid, group.name);
    else
      packets_.WriteTrack(lane.uuid, group.parent_uuid, group.name, group.description);
    group.lanes.push_back(lane);
  }
  return group.lanes.front().uuid;
}

}  // namespace cupmon::decoder::perfetto
