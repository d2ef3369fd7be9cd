// The Chrome Trace Event Format export (see chrome_json_exporter.h).
#include "export/chrome/chrome_json_exporter.h"

#include <algorithm>
#include <set>
#include <string>

#include "text/json.h"
#include "text/row_text.h"

namespace cupmon::decoder {

Expected<std::unique_ptr<Exporter>> ChromeJsonExporter::Make(std::ostream& out,
                                                             const std::vector<const Rank*>& ranks,
                                                             const ExportSettings&) {
  auto exporter = std::make_unique<ChromeJsonExporter>(out);
  if (ranks.size() > 1) exporter->SetCommonBase(EarliestProcessStart(ranks));
  return exporter;
}

ChromeJsonExporter::ChromeJsonExporter(std::ostream& out) : out_(out), ev_(out_) {
  out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
}

void ChromeJsonExporter::SetCommonBase(int64_t base) {
  common_base_ = true;
  ev_.set_base(base);
}

void ChromeJsonExporter::Begin(const TraceBuilder& b, const Recording& r, size_t index,
                           const Rank* rank) {
  rank_ = rank;
  builder_ = &b;
  plain_name_.Clear();  // name ids are the builder's, and each recording has its own builder
  index_ = index;
  if (!common_base_) ev_.set_base(r.header.process_start_unix_ns());
  if (rank_) {
    // One Perfetto process per rank under its OS pid; a pid seen on another host gets a
    // made-up one so the two ranks' tracks stay apart.
    rank_pid_ = r.header.pid();
    if (!rank_pids_.insert(rank_pid_).second) {
      rank_pid_ = 900'000'000u + static_cast<uint32_t>(index);
      rank_pids_.insert(rank_pid_);
    }
  }
  gpu_tracks_.clear();
  cpu_threads_.clear();
  memory_ = MemoryUsage{};
  annotations_.Clear();
}

void ChromeJsonExporter::End(const TraceBuilder& b, const Recording& r, const ReadIntegrity&) {
  if (!ev_.base()) ev_.set_base(b.origin_wall());
  const uint32_t pid = rank_ ? rank_pid_ : r.header.pid();
  std::string cmd;
  for (const auto& a : r.header.command_line()) cmd += (cmd.empty() ? "" : " ") + a;
  if (rank_) {
    ev_.Meta("process_name", pid, 0, rank_->label + (r.header.synthetic() ? " (SYNTHETIC)" : ""));
    ev_.SortIndex(pid, 2 * index_);
  } else {
    ev_.Meta("process_name", pid, 0,
             "CPU pid " + std::to_string(pid) + (cmd.empty() ? "" : " " + cmd) +
                 (r.header.synthetic() ? " (SYNTHETIC)" : ""));
  }
  ev_.Meta("thread_name", pid, 0, "cupmon windows");
  ev_.Meta("thread_name", pid, 1, "annotations");
  for (uint32_t tid : cpu_threads_) ev_.Meta("thread_name", pid, tid, "thread " + std::to_string(tid));
  std::set<uint32_t> devices;
  for (const auto& [dev, stream] : gpu_tracks_) {
    devices.insert(dev);
    ev_.Meta("thread_name", GpuPid(dev), stream, "stream " + std::to_string(stream));
  }
  // Bytes in use per device: a counter track ("ph":"C") in the device's process, one event per
  // change, replayed in time order (decoder/src/memory_usage.cc).
  memory_.Finish();
  for (const auto& [dev, d] : memory_.devices()) devices.insert(dev);
  for (const MemoryStep& st : memory_.steps()) {
    ev_.Comma();
    out_ << "{\"name\":\"memory in use (since the recording began)\",\"ph\":\"C\",\"pid\":"
         << GpuPid(st.device) << ",\"tid\":0,\"ts\":";
    ev_.Us(b.clock().ToWall(st.ts));
    out_ << ",\"args\":{\"bytes\":" << st.in_use << "}}";
  }
  for (uint32_t dev : devices) {
    std::string name = "GPU " + std::to_string(dev);
    for (const auto& d : r.header.devices())
      if (d.id() == dev && !d.name().empty()) name += " " + d.name();
    if (rank_) {
      ev_.Meta("process_name", GpuPid(dev), 0, name + " (" + rank_->label + ")");
      ev_.SortIndex(GpuPid(dev), 2 * index_ + 1);
    } else {
      ev_.Meta("process_name", GpuPid(dev), 0, name + " (pid " + std::to_string(pid) + ")");
    }
  }
  for (const auto& [id, w] : b.windows()) {
    if (!w.begin) continue;
    const uint64_t end = w.end >= w.begin && w.end ? w.end : std::max(b.last_ts(), w.begin);
    ev_.Slice("window " + std::to_string(id), "window", pid, 0, b.clock().ToWall(w.begin),
              b.clock().ToWall(end) - b.clock().ToWall(w.begin),
              "\"source\":\"" + JsonEscape(w.source) + "\",\"note\":\"" + JsonEscape(w.note) + "\"");
    out_.EndRow();
  }
  for (const auto& [key, span] : annotations_.spans())
    ev_.Slice(key.first, "annotation", pid, 1, span.start, span.end - span.start, "");
}

void ChromeJsonExporter::Close() {
  out_ << "\n]}\n";
  out_.Flush();
}

void ChromeJsonExporter::Write(const Row& r) {
  WriteEvents(r);
  out_.EndRow();
}

void ChromeJsonExporter::WriteEvents(const Row& r) {
  if (r.type == RowType::kMemory) {
    memory_.Add(r);  // drawn as counters by End, in time order
    return;
  }
  if (!r.valid_time) return;  // cannot be placed on a timeline; counted in the summary
  if (!ev_.base()) ev_.set_base(builder_->origin_wall());
  if (r.type == RowType::kRange) {
    WriteRange(r);
    return;
  }
  if (r.type == RowType::kApi) {
    if (r.tid != last_tid_ || cpu_threads_.empty()) {
      cpu_threads_.insert(r.tid);
      last_tid_ = r.tid;
    }
    ev_.SliceHead(r.name, r.kind == 4 ? "cuda_driver" : "cuda_runtime", CpuPid(r.pid), r.tid,
                  r.wall_start, static_cast<int64_t>(r.duration),
                  plain_name_.Plain(r.name_id, r.name));
    out_ << "\"correlation\":" << r.correlation << ",\"return\":" << r.return_value << "}}";
    annotations_.Add(r);
    return;
  }
  const uint32_t gpid = GpuPid(r.device);
  if (r.device != last_track_.first || r.stream != last_track_.second || gpu_tracks_.empty()) {
    gpu_tracks_.emplace(r.device, r.stream);
    last_track_ = {r.device, r.stream};
  }
  // Whether a kernel name needs JSON escaping is found once per name, not per row (names run
  // to kilobytes); the memcpy and memset names are ours.
  const bool plain = r.type != RowType::kKernel || plain_name_.Plain(r.name_id, r.name);
  ev_.SliceHead(r.name, RowTypeName(r.type), gpid, r.stream, r.wall_start,
                static_cast<int64_t>(r.duration), plain);
  // At most ~200 bytes, in the room SliceHead left (TraceEventWriter::kArgsRoom).
  out_.Put("\"correlation\":");
  out_.PutUint(r.correlation);
  out_.Put(",\"context\":");
  out_.PutUint(r.context);
  if (r.type == RowType::kKernel) {
    out_.Put(",\"grid\":\"");
    out_.PutUint3(r.launch.grid);
    out_.Put("\",\"block\":\"");
    out_.PutUint3(r.launch.block);
    out_.Put("\",\"registers\":");
    out_.PutUint(r.launch.registers);
  } else {
    out_.Put(",\"bytes\":");
    out_.PutUint(r.bytes);
  }
  if (!r.annotation.empty()) {
    out_ << ",\"annotation\":\"";
    out_.Json(r.annotation) << '"';
  }
  if (r.api.before_window) out_ << ",\"launched_before_window\":true";
  if (!r.range.empty()) {
    out_ << ",\"nvtx_range\":\"";
    out_.Json(r.range) << '"';
    // Absent: the launching thread's own range (row.h, NvtxScope).
    if (r.range_scope == NvtxScope::kProcess) out_ << ",\"nvtx_scope\":\"process\"";
  }
  out_ << "}}";
  // A flow arrow from the launch call to this activity (one per activity: graphs fan out).
  if (r.api.found && r.api.valid_time)
    ev_.LaunchFlow("launch", "flow", ++flow_id_, r, CpuPid(r.api.pid), gpid);
}

// An NVTX range: a slice of category "nvtx" on its thread (it nests with the thread's API
// calls); an unended one lasts to the recording's last record; a mark is an instant event.
void ChromeJsonExporter::WriteRange(const Row& r) {
  cpu_threads_.insert(r.tid);
  last_tid_ = r.tid;
  const uint32_t pid = CpuPid(r.pid);
  if (r.nvtx.kind == RangeKind::kMark) {
    ev_.Comma();
    out_ << "{\"name\":\"";
    out_.Json(r.name) << "\",\"cat\":\"nvtx\",\"ph\":\"i\",\"s\":\"t\",\"pid\":" << pid
                      << ",\"tid\":" << r.tid << ",\"ts\":";
    ev_.Us(r.wall_start);
    out_ << ",\"args\":{";
  } else {
    int64_t dur = static_cast<int64_t>(r.duration);
    if (!r.nvtx.ended && builder_->last_ts())
      dur = std::max<int64_t>(0, builder_->clock().ToWall(builder_->last_ts()) - r.wall_start);
    ev_.SliceHead(r.name, "nvtx", pid, r.tid, r.wall_start, dur);
  }
  out_ << "\"depth\":" << r.nvtx.depth << ",\"nvtx\":\"" << RangeKindName(r.nvtx.kind) << '"';
  if (!r.range_domain.empty()) {
    out_ << ",\"domain\":\"";
    out_.Json(r.range_domain) << '"';
  }
  if (!r.nvtx.ended) out_ << ",\"unended\":true";
  out_ << "}}";
}

}  // namespace cupmon::decoder
