// The CSV export (see csv_exporter.h).
#include "export/csv/csv_exporter.h"

namespace cupmon::decoder {
namespace {

// A row's bytes besides its four text fields, at most: 24 commas, the recording id (18), the
// type (15), five 64-bit and sixteen 32-bit numbers (21 and 10 bytes), four 'x', '0'/'1', the
// rank and the newline; rounded up. Each part of Write is formatted after one Reserve of this.
constexpr size_t kFixedRoom = 512;

}  // namespace

Expected<std::unique_ptr<Exporter>> CsvExporter::Make(std::ostream& out,
                                                      const std::vector<const Rank*>&,
                                                      const ExportSettings&) {
  return std::make_unique<CsvExporter>(out);
}

void CsvExporter::Begin(const TraceBuilder&, const Recording& recording, size_t,
                        const Rank* rank) {
  rank_ = rank;
  short_names_.Clear();
  quote_free_.clear();
  recording_ = RecordingIdText(recording.id);
  if (!header_done_) {
    // launched_before_window, short_name: added last so that positional readers still work.
    out_ << "recording,type,kind,start_ns,end_ns,duration_ns,device,context,stream,"
            "correlation_id,name,api_name,api_start_ns,api_end_ns,pid,tid,return_value,bytes,"
            "grid,block,registers,annotation,launched_before_window,short_name"
         << (rank_ ? ",rank\n" : "\n");
    header_done_ = true;
  }
}

uint8_t CsvExporter::QuoteFree(uint32_t id, std::string_view name, const Row* kernel) {
  if (id >= quote_free_.size()) quote_free_.resize(id + 1, kUnknown);
  uint8_t& known = quote_free_[id];
  if (known == kUnknown) {
    known = OutBuf::HasQuote(name) ? 0 : kNameQuoteFree;
    if (kernel && !OutBuf::HasQuote(short_names_.Of(*kernel))) known |= kShortQuoteFree;
  }
  return known;
}

void CsvExporter::Write(const Row& r) {
  const bool api = r.type == RowType::kApi;
  const bool kernel = r.type == RowType::kKernel;
  const bool api_time = r.api.found && r.api.valid_time;
  // recording,type,kind,start_ns,end_ns,duration_ns,device,context,stream,correlation_id,
  out_.Reserve(kFixedRoom);
  char* p = out_.Cursor();
  p = PutAt(p, recording_);
  *p++ = ',';
  p = PutAt(p, RowTypeName(r.type));
  *p++ = ',';
  p = FormatUint(p, r.kind);
  *p++ = ',';
  if (r.valid_time) {
    p = times_.Put(p, r.wall_start);
    *p++ = ',';
    p = times_.Put(p, r.wall_end);
    *p++ = ',';
    p = FormatUint(p, r.duration);
  } else {
    p = PutAt(p, ",,");
  }
  *p++ = ',';
  if (!api) {
    p = FormatUint(p, r.device);
    *p++ = ',';
    p = FormatUint(p, r.context);
    *p++ = ',';
    p = FormatUint(p, r.stream);
  } else {
    p = PutAt(p, ",,");
  }
  *p++ = ',';
  p = FormatUint(p, r.correlation);
  *p++ = ',';
  out_.Commit(p);
  // name,api_name,
  const uint8_t quote_free = QuoteFree(r.name_id, r.name, kernel ? &r : nullptr);
  if (quote_free & kNameQuoteFree) out_.CsvPlain(r.name, ',');
  else out_.Csv(r.name) << ',';
  if (r.api.name.empty() || QuoteFree(r.api_name_id, r.api.name, nullptr) & kNameQuoteFree)
    out_.CsvPlain(r.api.name, ',');
  else
    out_.Csv(r.api.name) << ',';
  // api_start_ns,api_end_ns,pid,tid,return_value,bytes,grid,block,registers,
  out_.Reserve(kFixedRoom);
  p = out_.Cursor();
  if (api_time) {
    p = times_.Put(p, r.api.wall_start);
    *p++ = ',';
    p = times_.Put(p, r.api.wall_end);
  } else {
    *p++ = ',';
  }
  *p++ = ',';
  p = FormatUint(p, api ? r.pid : r.api.pid);
  *p++ = ',';
  p = FormatUint(p, api ? r.tid : r.api.tid);
  *p++ = ',';
  p = FormatUint(p, api ? r.return_value : r.api.return_value);
  *p++ = ',';
  p = FormatUint(p, r.bytes);
  *p++ = ',';
  if (kernel) {
    for (int i = 0; i < 3; ++i) {
      p = FormatUint(p, r.launch.grid[i]);
      *p++ = i < 2 ? 'x' : ',';
    }
    for (int i = 0; i < 3; ++i) {
      p = FormatUint(p, r.launch.block[i]);
      *p++ = i < 2 ? 'x' : ',';
    }
    p = FormatUint(p, r.launch.registers);
  } else {
    p = PutAt(p, ",,");
  }
  *p++ = ',';
  // annotation,launched_before_window,short_name[,rank]
  if (r.annotation.empty()) {
    p = PutAt(p, "\"\",");  // Csv("") and its comma, in the room above
    out_.Commit(p);
  } else {
    out_.Commit(p);
    out_.Csv(r.annotation) << ',';
  }
  out_.Reserve(kFixedRoom);
  p = out_.Cursor();
  if (!api) *p++ = r.api.before_window ? '1' : '0';
  *p++ = ',';
  const char after = rank_ ? ',' : '\n';
  if (!kernel) *p++ = after;
  out_.Commit(p);
  if (kernel) {
    if (quote_free & kShortQuoteFree) out_.CsvPlain(short_names_.Of(r), after);
    else out_.Csv(short_names_.Of(r)) << after;
  }
  if (rank_) out_ << rank_->rank << '\n';
  out_.EndRow();
}

}  // namespace cupmon::decoder
