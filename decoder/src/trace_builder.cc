// TraceBuilder: decoding, name resolution, correlation joins and filtering for one recording.
#include "cupmon/decoder/trace_builder.h"

#include <cxxabi.h>

#include <cstdlib>

#include "cupmon/decoder/api_names.h"

namespace cupmon::decoder {
namespace {

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

struct TraceBuilder::Pending {
  DecodedRecord rec;
  int64_t string_index = -1;  // kernels: the name's entry at arrival time, -1 if unresolved
};

struct TraceBuilder::ApiEntry {
  uint32_t kind = 0, cbid = 0, pid = 0, tid = 0, ret = 0;
  uint64_t start = 0, end = 0;
};

const char* MemcpyKindName(uint32_t copy_kind) {
  static constexpr const char* kNames[] = {
      "[CUDA memcpy Unknown]", "[CUDA memcpy HtoD]", "[CUDA memcpy DtoH]", "[CUDA memcpy HtoA]",
      "[CUDA memcpy AtoH]",    "[CUDA memcpy AtoA]", "[CUDA memcpy AtoD]", "[CUDA memcpy DtoA]",
      "[CUDA memcpy DtoD]",    "[CUDA memcpy HtoH]", "[CUDA memcpy PtoP]"};
  return copy_kind < std::size(kNames) ? kNames[copy_kind] : kNames[0];
}

std::string Demangle(const std::string& name) {
  if (name.size() < 2 || name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string result(out);
  std::free(out);
  return result;
}

TraceBuilder::TraceBuilder(TraceFilter filter, RowSink* sink, size_t horizon)
    : filter_(std::move(filter)), sink_(sink), horizon_(horizon ? horizon : 1) {}

TraceBuilder::~TraceBuilder() = default;

void TraceBuilder::OnHeader(const pb::RecordingHeader& header, const ChunkOrigin& /*at*/) {
  // Every file restates the header; the first one read defines the layouts.
  if (have_header_) return;
  have_header_ = true;
  header_ = header;
  RecordSizeTable sizes;
  for (const auto& rs : header.record_sizes()) sizes.Set(rs.kind(), rs.size());
  decoder_ = std::make_unique<RecordDecoder>(sizes, header.cupti_api_version());
}

void TraceBuilder::OnStrings(const pb::StringTable& table) {
  for (const auto& e : table.entries()) {
    auto it = string_by_pointer_.find(e.pointer());
    // Files restate every earlier string; an identical restatement needs no new entry.
    if (it != string_by_pointer_.end() && strings_[it->second] == e.text()) continue;
    strings_.push_back(e.text());
    string_by_pointer_[e.pointer()] = static_cast<uint32_t>(strings_.size() - 1);
  }
}

void TraceBuilder::OnWindowMarker(const pb::WindowMarker& m) {
  WindowSpan& w = windows_[m.window_id()];
  w.id = m.window_id();
  if (m.edge() == pb::WindowMarker::BEGIN) {
    w.begin = m.cupti_ns();
    w.source = pb::TriggerSource_Name(m.source());
  } else if (m.edge() == pb::WindowMarker::END) {
    w.end = m.cupti_ns();
    w.note = m.note();
  }
}

void TraceBuilder::OnCalibration(const pb::Calibration& c) {
  clock_.Add(c);
  counts_.calibration_samples = clock_.samples();
  if (clock_.non_monotonic() != counts_.calibration_non_monotonic) {
    counts_.calibration_non_monotonic = clock_.non_monotonic();
    counts_.Note("calibration: " + std::to_string(clock_.non_monotonic()) +
                 " sample(s) with non-increasing CUPTI time dropped");
  }
}

void TraceBuilder::OnStats(const pb::Stats& stats) {
  counts_.have_stats = true;
  counts_.stats = stats;
}

void TraceBuilder::OnFooter(const pb::Footer& footer) {
  if (footer.has_stats()) OnStats(footer.stats());
}

void TraceBuilder::OnRawBuffer(const RawBufferPrefix& /*prefix*/, std::span<const uint8_t> records,
                               const ChunkOrigin& at) {
  ++counts_.raw_buffers;
  if (!decoder_) {
    ++counts_.buffers_stopped;
    counts_.Note(*at.path + " at offset " + std::to_string(at.offset) +
                 ": raw buffer before any recording header; not decoded");
    return;
  }
  const auto r = decoder_->Decode(records, [this](const DecodedRecord& rec) { AddRecord(rec); });
  counts_.records_not_decoded += r.skipped;
  if (!r.complete) {
    ++counts_.buffers_stopped;
    ++counts_.stopped_by_kind[r.stop.kind];
    counts_.Note(*at.path + " at offset " + std::to_string(at.offset) + ": buffer stopped at byte " +
                 std::to_string(r.stop.offset) + " of " + std::to_string(records.size()) + ": " +
                 r.stop.why);
  }
  while (pending_.size() > horizon_) {
    Emit(pending_.front());
    pending_.pop_front();
  }
  Retire();
}

void TraceBuilder::AddRecord(const DecodedRecord& rec) {
  ++counts_.records;
  ++counts_.records_by_kind[rec.kind];
  const uint32_t corr = rec.Get32(Field::kCorrelationId);
  switch (rec.record_class) {
    case RecordClass::kKernel:
    case RecordClass::kMemcpy:
    case RecordClass::kMemset:
    case RecordClass::kApi: {
      const uint64_t start = rec.Get(Field::kStart), end = rec.Get(Field::kEnd);
      if (ValidSpan(start, end)) {
        if (!origin_ts_) origin_ts_ = start;
        if (!first_ts_ || start < first_ts_) first_ts_ = start;
        if (end > last_ts_) last_ts_ = end;
      } else {
        ++counts_.unknown_timestamps;
      }
      Pending p{rec, -1};
      if (rec.record_class == RecordClass::kKernel) {
        auto it = string_by_pointer_.find(rec.Get(Field::kNamePointer));
        if (it != string_by_pointer_.end()) p.string_index = it->second;
      }
      if (rec.record_class == RecordClass::kApi) {
        ApiEntry e{rec.kind, rec.Get32(Field::kCbid), rec.Get32(Field::kProcessId),
                   rec.Get32(Field::kThreadId), rec.Get32(Field::kReturnValue), start, end};
        auto [it, inserted] = api_by_corr_.try_emplace(corr, e);
        if (inserted) {
          corr_order_.push_back(corr);
        } else if (it->second.kind == kKindDriver && rec.kind == kKindRuntime) {
          it->second = e;  // the runtime call is the launch the user wrote
        } else if (it->second.kind == rec.kind) {
          ++counts_.duplicate_api_correlation;
          counts_.Note("correlation id " + std::to_string(corr) +
                       " is shared by two API records; only the first is joined");
        }
      } else {
        // First activity's name: a string index, or a negative code for memcpy/memset/unknown.
        const int64_t first = rec.record_class == RecordClass::kKernel ? p.string_index
                              : rec.record_class == RecordClass::kMemset
                                  ? -2
                                  : -10 - static_cast<int64_t>(rec.Get32(Field::kCopyKind));
        auto [it, inserted] = gpu_by_corr_.try_emplace(corr, 0, first);
        if (inserted) corr_order_.push_back(corr);
        ++it->second.first;
      }
      pending_.push_back(std::move(p));
      break;
    }
    case RecordClass::kExternalCorrelation:
      ++counts_.external_correlations;
      if (external_by_corr_.emplace(corr, rec.Get(Field::kExternalId)).second)
        corr_order_.push_back(corr);
      break;
    case RecordClass::kOverhead:
      ++counts_.overhead_records;
      if (ValidSpan(rec.Get(Field::kStart), rec.Get(Field::kEnd)))
        counts_.overhead_ns += rec.Get(Field::kEnd) - rec.Get(Field::kStart);
      break;
    default:
      break;  // synchronization, CUDA events, markers, names: counted only
  }
}

void TraceBuilder::Retire() {
  // Correlation entries live for a few horizons after they arrive, so memory stays bounded.
  while (corr_order_.size() > 4 * horizon_) {
    const uint32_t corr = corr_order_.front();
    corr_order_.pop_front();
    api_by_corr_.erase(corr);
    gpu_by_corr_.erase(corr);
    external_by_corr_.erase(corr);
  }
}

std::string_view TraceBuilder::KernelName(int64_t index, uint64_t pointer) {
  if (index < 0) {
    auto [it, inserted] = unresolved_.try_emplace(pointer);
    if (inserted) it->second = "<unresolved kernel name " + Hex(pointer) + ">";
    return it->second;
  }
  auto [it, inserted] = kernel_names_.try_emplace(index);
  if (inserted) {
    const std::string& raw = strings_[static_cast<size_t>(index)];
    it->second = filter_.mangled ? raw : Demangle(raw);
  }
  return it->second;
}

std::string_view TraceBuilder::ApiName(uint32_t kind, uint32_t cbid) {
  const bool driver = kind == kKindDriver;
  auto [it, inserted] = api_names_.try_emplace((driver ? 1u << 31 : 0u) | cbid);
  if (inserted) it->second = ApiDisplayName(driver, cbid);
  return it->second;
}

std::string_view TraceBuilder::Annotation(uint32_t corr, uint64_t* external_id) {
  auto it = external_by_corr_.find(corr);
  if (it == external_by_corr_.end()) return {};
  *external_id = it->second;
  auto [a, inserted] = annotations_.try_emplace(it->second);
  if (inserted) {
    // Labels are string entries whose `pointer` is the external id (written by the monitor's
    // annotation API); without one the id itself is the label.
    auto s = string_by_pointer_.find(it->second);
    a->second = s != string_by_pointer_.end() ? strings_[s->second]
                                              : "external#" + std::to_string(it->second);
  }
  return a->second;
}

bool TraceBuilder::Passes(const Row& row) const {
  const bool gpu = row.type != RowType::kApi;
  if (gpu) {
    if (filter_.device && row.device != *filter_.device) return false;
    if (filter_.stream && row.stream != *filter_.stream) return false;
    if (filter_.kernel && !std::regex_search(row.name.begin(), row.name.end(), *filter_.kernel))
      return false;
  }
  const bool timed = filter_.window || filter_.from_wall || filter_.to_wall || filter_.from_rel ||
                     filter_.to_rel;
  if (!timed) return true;
  if (!row.valid_time) return false;  // unknown time cannot be placed inside a range
  if (filter_.window) {
    auto w = windows_.find(*filter_.window);
    if (w == windows_.end() || row.start < w->second.begin) return false;
    if (w->second.end && row.start > w->second.end) return false;
  }
  if (filter_.from_wall && row.wall_start < *filter_.from_wall) return false;
  if (filter_.to_wall && row.wall_start > *filter_.to_wall) return false;
  const int64_t rel = row.wall_start - origin_wall();
  if (filter_.from_rel && rel < *filter_.from_rel) return false;
  if (filter_.to_rel && rel > *filter_.to_rel) return false;
  return true;
}

void TraceBuilder::Emit(const Pending& p) {
  const DecodedRecord& rec = p.rec;
  Row row;
  row.kind = rec.kind;
  row.start = rec.Get(Field::kStart);
  row.end = rec.Get(Field::kEnd);
  row.valid_time = ValidSpan(row.start, row.end);
  if (row.valid_time) {
    row.wall_start = clock_.ToWall(row.start);
    row.wall_end = clock_.ToWall(row.end);
    row.duration = row.end - row.start;
  } else {
    row.start = row.end = 0;
  }
  row.correlation = rec.Get32(Field::kCorrelationId);
  row.annotation = Annotation(row.correlation, &row.external_id);
  if (rec.record_class == RecordClass::kApi) {
    row.type = RowType::kApi;
    row.name = ApiName(rec.kind, rec.Get32(Field::kCbid));
    row.pid = rec.Get32(Field::kProcessId);
    row.tid = rec.Get32(Field::kThreadId);
    row.return_value = rec.Get32(Field::kReturnValue);
    auto g = gpu_by_corr_.find(row.correlation);
    // Only the joined API record claims the launched activities, so counts are never doubled.
    auto a = api_by_corr_.find(row.correlation);
    const bool owner = a != api_by_corr_.end() && a->second.kind == rec.kind &&
                       a->second.tid == row.tid && a->second.start == rec.Get(Field::kStart);
    if (g != gpu_by_corr_.end() && owner) {
      row.launched = g->second.first;
      const int64_t first = g->second.second;
      if (first >= 0) row.launched_name = KernelName(first, 0);
      else if (first == -2) row.launched_name = "[CUDA memset]";
      else if (first <= -10) row.launched_name = MemcpyKindName(static_cast<uint32_t>(-10 - first));
    } else {
      ++counts_.api_without_gpu;
    }
  } else {
    row.type = rec.record_class == RecordClass::kKernel   ? RowType::kKernel
               : rec.record_class == RecordClass::kMemcpy ? RowType::kMemcpy
                                                          : RowType::kMemset;
    row.device = rec.Get32(Field::kDeviceId);
    row.context = rec.Get32(Field::kContextId);
    row.stream = rec.Get32(Field::kStreamId);
    row.graph_id = rec.Get32(Field::kGraphId);
    if (row.type == RowType::kKernel) {
      row.grid[0] = rec.Get32(Field::kGridX);
      row.grid[1] = rec.Get32(Field::kGridY);
      row.grid[2] = rec.Get32(Field::kGridZ);
      row.block[0] = rec.Get32(Field::kBlockX);
      row.block[1] = rec.Get32(Field::kBlockY);
      row.block[2] = rec.Get32(Field::kBlockZ);
      row.registers = rec.Get32(Field::kRegisters);
      row.static_smem = rec.Get32(Field::kStaticSharedMemory);
      row.dynamic_smem = rec.Get32(Field::kDynamicSharedMemory);
      if (p.string_index < 0) ++counts_.unresolved_names;
      row.name = KernelName(p.string_index, rec.Get(Field::kNamePointer));
    } else if (row.type == RowType::kMemcpy) {
      row.bytes = rec.Get(Field::kBytes);
      row.copy_kind = rec.Get32(Field::kCopyKind);
      row.src_device = rec.Get32(Field::kSrcDeviceId);
      row.dst_device = rec.Get32(Field::kDstDeviceId);
      row.name = MemcpyKindName(row.copy_kind);
    } else {
      row.bytes = rec.Get(Field::kBytes);
      row.name = "[CUDA memset]";
    }
    auto a = api_by_corr_.find(row.correlation);
    if (a != api_by_corr_.end()) {
      const ApiEntry& e = a->second;
      row.has_api = true;
      row.api_kind = e.kind;
      row.api_cbid = e.cbid;
      row.api_pid = e.pid;
      row.api_tid = e.tid;
      row.api_return = e.ret;
      row.api_valid_time = ValidSpan(e.start, e.end);
      if (row.api_valid_time) {
        row.api_start = e.start;
        row.api_end = e.end;
        row.api_wall_start = clock_.ToWall(e.start);
        row.api_wall_end = clock_.ToWall(e.end);
      }
      row.api_name = ApiName(e.kind, e.cbid);
    } else {
      ++counts_.gpu_without_api;
    }
  }
  if (!Passes(row)) {
    ++counts_.filtered_out;
    return;
  }
  if (row.type == RowType::kApi) {
    ++counts_.api_rows;
  } else {
    ++counts_.gpu_rows;
  }
  sink_->OnRow(row);
}

void TraceBuilder::Finish() {
  for (const Pending& p : pending_) Emit(p);
  pending_.clear();
}

}  // namespace cupmon::decoder
