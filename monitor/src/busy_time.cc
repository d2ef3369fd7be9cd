// BusyTime: union of activity intervals per device and stream.
#include "busy_time.h"

#include <cupti.h>

#include <algorithm>

#include "unaligned_load.h"

namespace cupmon {

void BusyTime::Add(const uint8_t* buffer, size_t valid) {
  auto add = [](Span& span, uint64_t start, uint64_t end) {
    if (end <= span.covered_until) return;
    span.busy_ns += end - std::max(start, span.covered_until);
    span.covered_until = end;
  };
  WalkRecords({buffer, valid}, facts_.sizes, [&](uint32_t kind, std::span<const uint8_t> rec) {
    const BusyOffsets* o = nullptr;
    if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL)
      o = &facts_.kernel;
    else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY)
      o = &facts_.memcpy;
    else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY2)  // peer copies: busy on the device that runs them
      o = &facts_.memcpy2;
    else if (kind == CUPTI_ACTIVITY_KIND_MEMSET)
      o = &facts_.memset;
    if (!o || o->end == 0) return;
    const auto start = LoadUnaligned<uint64_t>(rec.data() + o->start);
    const auto end = LoadUnaligned<uint64_t>(rec.data() + o->end);
    if (start == 0 || end <= start) return;  // unknown times are never shown as durations
    const auto device = LoadUnaligned<uint32_t>(rec.data() + o->device);
    const auto stream = LoadUnaligned<uint32_t>(rec.data() + o->stream);
    add(devices_[device], start, end);
    add(streams_[{device, stream}], start, end);
  });
}

std::vector<metrics::DeviceBusy> BusyTime::Devices() const {
  std::vector<metrics::DeviceBusy> out;
  for (const auto& [device, span] : devices_) out.push_back({device, span.busy_ns});
  return out;
}

std::vector<metrics::StreamBusy> BusyTime::Streams() const {
  std::vector<metrics::StreamBusy> out;
  for (const auto& [key, span] : streams_) out.push_back({key.first, key.second, span.busy_ns});
  return out;
}

}  // namespace cupmon
