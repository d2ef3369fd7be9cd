// The JSON Lines export (see jsonl_sink.h).
#include "export/jsonl_sink.h"

#include <iterator>

#include "cupmon/decoder/memory_usage.h"

namespace cupmon::decoder {

void JsonlSink::Begin(const Recording& recording, const Rank* rank) {
  rank_ = rank;
  short_names_.Clear();
  plain_names_.Clear();
  recording_ = RecordingIdText(recording.id);
}

void JsonlSink::Write(const Row& r) {
  out_ << "{\"recording\":\"" << recording_ << '"';
  if (rank_) out_ << ",\"rank\":" << rank_->rank;
  out_ << ",\"type\":\"" << RowTypeName(r.type) << "\",\"kind\":" << r.kind;
  if (r.type == RowType::kRange) WriteRange(r);
  else if (r.type == RowType::kMemory) WriteMemory(r);
  else WriteActivity(r);
  out_.EndRow();
}

void JsonlSink::Name(const Row& r) {
  if (r.type != RowType::kKernel) {
    out_.Json(r.name);
    return;
  }
  if (plain_names_.Plain(r.name_id, r.name)) out_ << r.name;
  else out_.Json(r.name);
}

void JsonlSink::WriteActivity(const Row& r) {
  if (r.valid_time) {
    out_ << ",\"start_ns\":" << r.wall_start << ",\"end_ns\":" << r.wall_end
         << ",\"duration_ns\":" << r.duration;
  } else {
    out_ << ",\"start_ns\":null,\"end_ns\":null,\"duration_ns\":null";
  }
  out_ << ",\"correlation_id\":" << r.correlation << ",\"name\":\"";
  Name(r);
  out_ << '"';
  if (r.type == RowType::kKernel) {
    out_ << ",\"short_name\":\"";
    out_.Json(short_names_.Of(r)) << '"';
  }
  if (r.type == RowType::kApi) {
    out_ << ",\"pid\":" << r.pid << ",\"tid\":" << r.tid << ",\"return_value\":" << r.return_value
         << ",\"launched\":" << r.launched;
  } else {
    out_ << ",\"device\":" << r.device << ",\"context\":" << r.context << ",\"stream\":"
         << r.stream;
    if (r.type == RowType::kKernel)
      out_ << ",\"grid\":[" << r.grid[0] << ',' << r.grid[1] << ',' << r.grid[2] << "],\"block\":["
           << r.block[0] << ',' << r.block[1] << ',' << r.block[2] << "],\"registers\":"
           << r.registers << ",\"static_shared_memory\":" << r.static_smem
           << ",\"dynamic_shared_memory\":" << r.dynamic_smem;
    else
      out_ << ",\"bytes\":" << r.bytes;
    if (r.has_api) {
      out_ << ",\"api\":{\"name\":\"";
      out_.Json(r.api_name) << "\",\"tid\":" << r.api_tid;
      if (r.api_valid_time)
        out_ << ",\"start_ns\":" << r.api_wall_start << ",\"end_ns\":" << r.api_wall_end;
      out_ << '}';
    }
    if (r.launched_before_window) out_ << ",\"launched_before_window\":true";
    if (!r.range.empty()) {
      out_ << ",\"range\":\"";
      out_.Json(r.range) << '"';
    }
  }
  if (!r.annotation.empty()) {
    out_ << ",\"annotation\":\"";
    out_.Json(r.annotation) << '"';
  }
  out_ << "}\n";
}

// An NVTX range or mark: end_ns and duration_ns are null for a range never ended.
void JsonlSink::WriteRange(const Row& r) {
  out_ << ",\"nvtx\":\"" << RangeKindName(r.range_kind) << "\",\"name\":\"";
  out_.Json(r.name) << "\",\"domain\":\"";
  out_.Json(r.range_domain) << "\",\"pid\":" << r.pid << ",\"tid\":" << r.tid;
  if (r.valid_time) out_ << ",\"start_ns\":" << r.wall_start;
  else out_ << ",\"start_ns\":null";
  if (r.valid_time && r.range_ended)
    out_ << ",\"end_ns\":" << r.wall_end << ",\"duration_ns\":" << r.duration;
  else
    out_ << ",\"end_ns\":null,\"duration_ns\":null";
  out_ << ",\"depth\":" << r.range_depth << "}\n";
}

// A MEMORY2 allocation or release, or a MEMORY_POOL event, as recorded (in delivery order: the
// summary's sums replay them in time order; bytes in use are not in the row).
void JsonlSink::WriteMemory(const Row& r) {
  const bool pool = r.kind == kKindMemoryPool;
  static constexpr const char* kOps[] = {"invalid", "allocation", "release"};
  static constexpr const char* kPoolOps[] = {"invalid", "created", "destroyed", "trimmed"};
  out_ << ",\"operation\":";
  if (!pool && r.memory_op < std::size(kOps)) out_ << '"' << kOps[r.memory_op] << '"';
  else if (pool && r.memory_op < std::size(kPoolOps)) out_ << '"' << kPoolOps[r.memory_op] << '"';
  else out_ << uint32_t{r.memory_op};  // not a CUPTI operation type: the number (255: >= 255)
  if (r.valid_time) out_ << ",\"ts_ns\":" << r.wall_start;
  else out_ << ",\"ts_ns\":null";
  out_ << ",\"device\":" << r.device << ",\"pid\":" << r.pid << ",\"correlation_id\":"
       << r.correlation << ",\"address\":" << r.address << ",\"bytes\":" << r.bytes
       << ",\"pool_type\":" << uint32_t{r.pool_type};
  if (!pool)
    out_ << ",\"memory_kind\":\"" << MemoryKindName(r.memory_kind) << "\",\"context\":"
         << r.context << ",\"stream\":" << r.stream << ",\"pool_address\":" << r.pool_address;
  out_ << "}\n";
}

}  // namespace cupmon::decoder
