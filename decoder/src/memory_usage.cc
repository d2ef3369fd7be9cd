// Replays MEMORY2 / MEMORY_POOL rows in time order into per-device bytes in use, peaks and counts.
#include "cupmon/decoder/memory_usage.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <unordered_map>

namespace cupmon::decoder {
namespace {

// CUpti_ActivityMemoryOperationType and CUpti_ActivityMemoryPoolOperationType.
constexpr uint32_t kAllocation = 1, kRelease = 2;
constexpr uint32_t kPoolCreated = 1, kPoolDestroyed = 2, kPoolTrimmed = 3;

}  // namespace

void MemoryUsage::Add(const Row& row) {
  if (row.type != RowType::kMemory) return;
  if (!row.valid_time) {
    ++untimed_;
    return;
  }
  events_.push_back(Event{row.start, row.address, row.bytes, row.kind, row.device, row.memory.op,
                          row.memory.kind, row.wall_start});
}

void MemoryUsage::Finish() {
  // Stable: records with equal timestamps keep their recorded order (an allocation and its
  // release in one nanosecond stay in that order).
  std::stable_sort(events_.begin(), events_.end(),
                   [](const Event& a, const Event& b) { return a.ts < b.ts; });
  struct Live {
    uint32_t device;
    uint64_t bytes;
  };
  std::unordered_map<uint64_t, Live> live;  // by address: unified addressing keeps them apart
  auto change = [&](uint32_t device, const Event& e, int64_t delta) {
    const uint64_t ts = e.ts;
    MemoryDeviceStats& d = devices_[device];
    d.in_use = static_cast<uint64_t>(static_cast<int64_t>(d.in_use) + delta);
    if (d.in_use > d.peak) {
      d.peak = d.in_use;
      d.peak_ts = ts;
      d.peak_wall = e.wall;
    }
    steps_.push_back(MemoryStep{ts, device, d.in_use});
  };
  for (const Event& e : events_) {
    MemoryDeviceStats& d = devices_[e.device];
    if (e.kind == kKindMemoryPool) {
      if (e.op == kPoolCreated) ++d.pools_created;
      else if (e.op == kPoolDestroyed) ++d.pools_destroyed;
      else if (e.op == kPoolTrimmed) ++d.pools_trimmed;
      else ++unknown_ops_;
      d.pool_max_size = std::max(d.pool_max_size, e.bytes);
      continue;
    }
    if (e.op == kAllocation) {
      d.alloc_min = d.allocations ? std::min(d.alloc_min, e.bytes) : e.bytes;
      d.alloc_max = std::max(d.alloc_max, e.bytes);
      ++d.allocations;
      d.alloc_bytes += e.bytes;
      MemoryKindStats& k = d.by_kind[e.memory_kind];
      ++k.allocations;
      k.bytes += e.bytes;
      auto [it, fresh] = live.try_emplace(e.address, Live{e.device, e.bytes});
      if (!fresh) {
        ++devices_[it->second.device].replaced;
        change(it->second.device, e, -static_cast<int64_t>(it->second.bytes));
        it->second = Live{e.device, e.bytes};
      }
      change(e.device, e, static_cast<int64_t>(e.bytes));
    } else if (e.op == kRelease) {
      ++d.releases;
      auto it = live.find(e.address);
      if (it == live.end()) {
        ++d.unknown_releases;
        continue;
      }
      // The allocation's size and device, not the release's: they are what was added.
      const Live l = it->second;
      live.erase(it);
      change(l.device, e, -static_cast<int64_t>(l.bytes));
    } else {
      ++unknown_ops_;
    }
  }
}

std::string MemoryKindName(uint32_t memory_kind) {
  static constexpr const char* kNames[] = {"unknown", "pageable", "pinned", "device",
                                           "array", "managed", "device static", "managed static"};
  if (memory_kind < std::size(kNames)) return kNames[memory_kind];
  return "kind " + std::to_string(memory_kind);
}

std::string FormatByteCount(uint64_t bytes) {
  char buf[64];
  const double b = static_cast<double>(bytes);
  constexpr uint64_t kKiB = 1024, kMiB = kKiB << 10, kGiB = kMiB << 10;
  if (bytes >= kGiB) std::snprintf(buf, sizeof buf, " (%.2f GiB)", b / kGiB);
  else if (bytes >= kMiB) std::snprintf(buf, sizeof buf, " (%.2f MiB)", b / kMiB);
  else if (bytes >= kKiB) std::snprintf(buf, sizeof buf, " (%.2f KiB)", b / kKiB);
  else buf[0] = '\0';
  return std::to_string(bytes) + " B" + buf;
}

}  // namespace cupmon::decoder
