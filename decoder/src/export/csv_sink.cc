// The CSV export (see csv_sink.h).
#include "export/csv_sink.h"

namespace cupmon::decoder {

void CsvSink::Begin(const Recording& recording, const Rank* rank) {
  rank_ = rank;
  short_names_.Clear();
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

void CsvSink::Write(const Row& r) {
  const bool api = r.type == RowType::kApi;
  const bool kernel = r.type == RowType::kKernel;
  const bool api_time = r.has_api && r.api_valid_time;
  out_ << recording_ << ',' << RowTypeName(r.type) << ',' << r.kind << ',';
  if (r.valid_time) out_ << r.wall_start << ',' << r.wall_end << ',' << r.duration;
  else out_ << ",,";
  out_ << ',';
  if (!api) out_ << r.device << ',' << r.context << ',' << r.stream;
  else out_ << ",,";
  out_ << ',' << r.correlation << ',';
  out_.Csv(r.name) << ',';
  out_.Csv(r.api_name) << ',';
  if (api_time) out_ << r.api_wall_start << ',' << r.api_wall_end;
  else out_ << ',';
  out_ << ',' << (api ? r.pid : r.api_pid) << ',' << (api ? r.tid : r.api_tid) << ','
       << (api ? r.return_value : r.api_return) << ',' << r.bytes << ',';
  if (kernel) {
    out_ << r.grid[0] << 'x' << r.grid[1] << 'x' << r.grid[2] << ',' << r.block[0] << 'x'
         << r.block[1] << 'x' << r.block[2] << ',' << r.registers;
  } else {
    out_ << ",,";
  }
  out_ << ',';
  out_.Csv(r.annotation) << ',';
  if (!api) out_ << (r.launched_before_window ? '1' : '0');
  out_ << ',';
  if (kernel) out_.Csv(short_names_.Of(r));
  if (rank_) out_ << ',' << rank_->rank;
  out_ << '\n';
  out_.EndRow();
}

}  // namespace cupmon::decoder
