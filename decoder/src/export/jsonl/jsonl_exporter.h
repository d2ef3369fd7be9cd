// `cupmon-decode export --format jsonl`: one JSON object per line for every GPU activity, API
// call, NVTX range or mark and device memory record. Private to the decoder; built by the export
// registry (export/registry.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cupmon/base/error.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/trace_builder.h"
#include "export/exporter.h"
#include "text/out_buf.h"
#include "text/row_text.h"

namespace cupmon::decoder {

// Writes the rows of one or several recordings (ranks) as JSON Lines, streaming: each object
// names its recording (and its rank in a merged export), its "type" (RowTypeName) and kind, then
// the fields of that type; times are wall-clock ns, null when unknown. Writes rows only: --limit
// ends its output. Single-threaded.
class JsonlExporter final : public Exporter {
 public:
  static Expected<std::unique_ptr<Exporter>> Make(std::ostream& out,
                                                  const std::vector<const Rank*>& ranks,
                                                  const ExportSettings& settings);
  explicit JsonlExporter(std::ostream& out) : out_(out) {}

  bool WantsRanges() const override { return true; }
  bool WantsMemory() const override { return true; }
  bool LimitEndsOutput() const override { return true; }
  // `rank` is null for a single recording.
  void Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
             const Rank* rank) override;
  void Write(const Row& row) override;
  void Close() override { out_.Flush(); }
  bool Failed() const override { return out_.failed(); }

 private:
  // Whether a name (kNamePlain) and, for a kernel's, its short name (kShortPlain) are JSON string
  // bodies as they are, found once per name id (kernel names run to kilobytes), not per row.
  // `kernel`: the row whose short name to check, null for a name that has none (an API name).
  static constexpr uint8_t kNamePlain = 1, kShortPlain = 2, kUnknown = 0x80;
  uint8_t Plain(uint32_t id, std::string_view name, const Row* kernel);
  void WriteActivity(const Row& r);  // a GPU activity or API call
  void WriteRange(const Row& r);
  void WriteMemory(const Row& r);

  OutBuf out_;
  const Rank* rank_ = nullptr;
  std::string recording_;  // the "recording" field's value
  ShortKernelNames short_names_;
  LeadingDigits times_;  // the wall-clock times
  std::vector<uint8_t> plain_;  // by name id; kUnknown: not seen yet
};

}  // namespace cupmon::decoder
