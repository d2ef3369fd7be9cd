// `cupmon-decode export --format csv`: one line per GPU activity and API call, with a header line.
// Private to the decoder; built by the export registry (export/registry.cc).
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

// Writes the rows of one or several recordings (ranks) as CSV, streaming: the header line once,
// before the first recording's rows, then one line per row (its columns are in the header; a
// merged export adds "rank"). Text fields are in double quotes; times are wall-clock ns. Writes
// rows only: --limit ends its output. Single-threaded.
class CsvExporter final : public Exporter {
 public:
  static Expected<std::unique_ptr<Exporter>> Make(std::ostream& out,
                                                  const std::vector<const Rank*>& ranks,
                                                  const ExportSettings& settings);
  explicit CsvExporter(std::ostream& out) : out_(out) {}

  bool LimitEndsOutput() const override { return true; }
  // `rank` is null for a single recording; it must be null for every recording or for none.
  void Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
             const Rank* rank) override;
  void Write(const Row& row) override;
  void Close() override { out_.Flush(); }
  bool Failed() const override { return out_.failed(); }

 private:
  // Whether a name (kNameQuoteFree) and, for a kernel's, its short name (kShortQuoteFree) hold
  // no double quote, found once per name id: kernel names run to kilobytes. `kernel`: the row
  // whose short name to check, null for a name that has none (an API name).
  static constexpr uint8_t kNameQuoteFree = 1, kShortQuoteFree = 2, kUnknown = 0x80;
  uint8_t QuoteFree(uint32_t id, std::string_view name, const Row* kernel);

  OutBuf out_;
  const Rank* rank_ = nullptr;
  std::string recording_;  // the recording id column
  bool header_done_ = false;
  ShortKernelNames short_names_;
  LeadingDigits times_;  // the wall-clock times
  std::vector<uint8_t> quote_free_;  // by name id; kUnknown: not seen yet
};

}  // namespace cupmon::decoder
