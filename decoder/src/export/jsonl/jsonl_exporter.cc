// The JSON Lines export (see jsonl_exporter.h).
#include "export/jsonl/jsonl_exporter.h"

#include <iterator>

#include "cupmon/decoder/memory_usage.h"

namespace cupmon::decoder {

Expected<std::unique_ptr<Exporter>> JsonlExporter::Make(std::ostream& out,
                                                        const std::vector<const Rank*>&,
                                                        const ExportSettings&) {
  return std::make_unique<JsonlExporter>(out);
}

void JsonlExporter::Begin(const TraceBuilder&, const Recording& recording, size_t,
                          const Rank* rank) {
  rank_ = rank;
  short_names_.Clear();
  plain_.clear();
  recording_ = RecordingIdText(recording.id);
}

namespace {

// An activity row's bytes besides its text fields, at most: about 330 of keys and punctuation,
// the recording id (18), the type (15), six 64-bit and seventeen 32-bit numbers (21 and 10
// bytes); rounded up. Each part of WriteActivity is formatted after one Reserve of this.
constexpr size_t kFixedRoom = 1024;

}  // namespace

void JsonlExporter::Write(const Row& r) {
  out_.Reserve(kFixedRoom);
  char* p = out_.Cursor();
  p = PutAt(p, "{\"recording\":\"");
  p = PutAt(p, recording_);
  *p++ = '"';
  if (rank_) {
    p = PutKeyUint(p, ",\"rank\":", rank_->rank);
  }
  p = PutAt(p, ",\"type\":\"");
  p = PutAt(p, RowTypeName(r.type));
  p = PutKeyUint(p, "\",\"kind\":", r.kind);
  out_.Commit(p);
  if (r.type == RowType::kRange) WriteRange(r);
  else if (r.type == RowType::kMemory) WriteMemory(r);
  else WriteActivity(r);
  out_.EndRow();
}

uint8_t JsonlExporter::Plain(uint32_t id, std::string_view name, const Row* kernel) {
  if (id >= plain_.size()) plain_.resize(id + 1, kUnknown);
  uint8_t& known = plain_[id];
  if (known == kUnknown) {
    known = IsPlainJson(name) ? kNamePlain : 0;
    if (kernel && IsPlainJson(short_names_.Of(*kernel))) known |= kShortPlain;
  }
  return known;
}

// Called from Write, in the room it reserved.
void JsonlExporter::WriteActivity(const Row& r) {
  char* p = out_.Cursor();
  if (r.valid_time) {
    p = PutAt(p, ",\"start_ns\":");
    p = times_.Put(p, r.wall_start);
    p = PutAt(p, ",\"end_ns\":");
    p = times_.Put(p, r.wall_end);
    p = PutKeyUint(p, ",\"duration_ns\":", r.duration);
  } else {
    p = PutAt(p, ",\"start_ns\":null,\"end_ns\":null,\"duration_ns\":null");
  }
  p = PutKeyUint(p, ",\"correlation_id\":", r.correlation);
  p = PutAt(p, ",\"name\":\"");
  out_.Commit(p);
  const uint8_t plain = Plain(r.name_id, r.name, r.type == RowType::kKernel ? &r : nullptr);
  if (plain & kNamePlain) out_ << r.name;
  else out_.Json(r.name);
  if (r.type == RowType::kKernel) {
    out_ << "\",\"short_name\":\"";
    if (plain & kShortPlain) out_ << short_names_.Of(r);
    else out_.Json(short_names_.Of(r));
  }
  out_.Reserve(kFixedRoom);
  p = out_.Cursor();
  *p++ = '"';
  if (r.type == RowType::kApi) {
    p = PutKeyUint(p, ",\"pid\":", r.pid);
    p = PutKeyUint(p, ",\"tid\":", r.tid);
    p = PutKeyUint(p, ",\"return_value\":", r.return_value);
    p = PutKeyUint(p, ",\"launched\":", r.launched);
    out_.Commit(p);
  } else {
    p = PutKeyUint(p, ",\"device\":", r.device);
    p = PutKeyUint(p, ",\"context\":", r.context);
    p = PutKeyUint(p, ",\"stream\":", r.stream);
    if (r.type == RowType::kKernel) {
      p = PutAt(p, ",\"grid\":[");
      p = PutUint3At(p, r.launch.grid);
      p = PutAt(p, "],\"block\":[");
      p = PutUint3At(p, r.launch.block);
      p = PutKeyUint(p, "],\"registers\":", r.launch.registers);
      p = PutKeyUint(p, ",\"static_shared_memory\":", r.launch.static_smem);
      p = PutKeyUint(p, ",\"dynamic_shared_memory\":", r.launch.dynamic_smem);
    } else {
      p = PutKeyUint(p, ",\"bytes\":", r.bytes);
    }
    if (r.api.found) {
      p = PutAt(p, ",\"api\":{\"name\":\"");
      out_.Commit(p);
      if (Plain(r.api_name_id, r.api.name, nullptr) & kNamePlain) out_ << r.api.name;
      else out_.Json(r.api.name);
      out_.Reserve(kFixedRoom);
      p = out_.Cursor();
      p = PutKeyUint(p, "\",\"tid\":", r.api.tid);
      if (r.api.valid_time) {
        p = PutAt(p, ",\"start_ns\":");
        p = times_.Put(p, r.api.wall_start);
        p = PutAt(p, ",\"end_ns\":");
        p = times_.Put(p, r.api.wall_end);
      }
      *p++ = '}';
    }
    if (r.api.before_window) p = PutAt(p, ",\"launched_before_window\":true");
    out_.Commit(p);
    if (!r.range.empty()) {
      out_ << ",\"range\":\"";
      out_.Json(r.range) << '"';
      // Absent: the launching thread's own range (row.h, NvtxScope).
      if (r.range_scope == NvtxScope::kProcess) out_ << ",\"range_scope\":\"process\"";
    }
  }
  if (!r.annotation.empty()) {
    out_ << ",\"annotation\":\"";
    out_.Json(r.annotation) << '"';
  }
  out_ << "}\n";
}

// An NVTX range or mark: end_ns and duration_ns are null for a range never ended.
void JsonlExporter::WriteRange(const Row& r) {
  out_ << ",\"nvtx\":\"" << RangeKindName(r.nvtx.kind) << "\",\"name\":\"";
  out_.Json(r.name) << "\",\"domain\":\"";
  out_.Json(r.range_domain) << "\",\"pid\":" << r.pid << ",\"tid\":" << r.tid;
  if (r.valid_time) out_ << ",\"start_ns\":" << r.wall_start;
  else out_ << ",\"start_ns\":null";
  if (r.valid_time && r.nvtx.ended)
    out_ << ",\"end_ns\":" << r.wall_end << ",\"duration_ns\":" << r.duration;
  else
    out_ << ",\"end_ns\":null,\"duration_ns\":null";
  out_ << ",\"depth\":" << r.nvtx.depth << "}\n";
}

// A MEMORY2 allocation or release, or a MEMORY_POOL event, as recorded (in delivery order: the
// summary's sums replay them in time order; bytes in use are not in the row).
void JsonlExporter::WriteMemory(const Row& r) {
  const bool pool = r.kind == kKindMemoryPool;
  static constexpr const char* kOps[] = {"invalid", "allocation", "release"};
  static constexpr const char* kPoolOps[] = {"invalid", "created", "destroyed", "trimmed"};
  out_ << ",\"operation\":";
  if (!pool && r.memory.op < std::size(kOps)) out_ << '"' << kOps[r.memory.op] << '"';
  else if (pool && r.memory.op < std::size(kPoolOps)) out_ << '"' << kPoolOps[r.memory.op] << '"';
  else out_ << uint32_t{r.memory.op};  // not a CUPTI operation type: the number (255: >= 255)
  if (r.valid_time) out_ << ",\"ts_ns\":" << r.wall_start;
  else out_ << ",\"ts_ns\":null";
  out_ << ",\"device\":" << r.device << ",\"pid\":" << r.pid << ",\"correlation_id\":"
       << r.correlation << ",\"address\":" << r.address << ",\"bytes\":" << r.bytes
       << ",\"pool_type\":" << uint32_t{r.memory.pool_type};
  if (!pool)
    out_ << ",\"memory_kind\":\"" << MemoryKindName(r.memory.kind) << "\",\"context\":"
         << r.context << ",\"stream\":" << r.stream << ",\"pool_address\":" << r.pool_address;
  out_ << "}\n";
}

}  // namespace cupmon::decoder
