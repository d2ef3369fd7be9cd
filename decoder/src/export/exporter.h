// The one interface of `cupmon-decode export`'s formats: what a decode pass hands an export, in
// the order it hands it. Each format is a folder beside this file with one class implementing
// Exporter; registry.h names them and builds the one a command asks for. Private to the decoder
// (decoder/src); exports include nothing of the reports.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cupmon/decoder/diagnostics.h"
#include "cupmon/decoder/export_format.h"
#include "cupmon/decoder/rank_listing.h"
#include "cupmon/decoder/recording_reader.h"
#include "cupmon/decoder/trace_builder.h"

namespace cupmon::decoder {

// What became of an export's output, as Exporter::Conclude tells it.
enum class ExportOutcome {
  kWritten,     // everything written
  kWarnings,    // written, with warnings (printed by Conclude)
  kIncomplete,  // some of it could not be written (printed by Conclude); the rest stands
  kNotWritten,  // nothing usable was written (printed by Conclude): the command ends there
};

// One export over one or several recordings (the ranks of a job), fed by the decode pass that
// reads them one after the other: per recording Begin, the rows (Write, up to the command's
// --limit), End; then Close and Conclude once. Rows come in start-time order as the reorder
// stage releases them, with the window, NVTX, memory and metadata facts of the recording on the
// builder that Begin and End get. Everything runs on the thread of the decode pass; an exporter
// may run threads of its own behind these calls (sqlite). An exporter writes to the stream it was
// built with or to files of its own; it prints nothing but from Conclude.
class Exporter {
 public:
  virtual ~Exporter() = default;

  // The rows besides GPU activities and API calls that the export writes (RowSink's questions,
  // asked once, before the first Begin).
  virtual bool WantsSynchronization() const { return false; }
  virtual bool WantsRanges() const { return false; }
  virtual bool WantsMemory() const { return false; }
  // True when the export writes nothing at End or Close that needs the rows past --limit (it
  // writes rows only), so that the pass may stop reading once the limit is reached.
  virtual bool LimitEndsOutput() const { return false; }

  // Before a recording's rows. `index`: its position among the recordings; `rank`: the rank it
  // is in a merged export of several, null for a single recording.
  virtual void Begin(const TraceBuilder& builder, const Recording& recording, size_t index,
                     const Rank* rank) = 0;
  // After Begin: a consumer that wants the records of the pass's read of this recording as well
  // (kineto's step detector, which would otherwise read it again), or nullptr. The pass adds it
  // to that recording's builder (TraceBuilder::AddConsumer).
  virtual RecordConsumer* RecordsWanted() { return nullptr; }
  virtual void Write(const Row& row) = 0;
  // After the recording's last row, with its builder finished.
  virtual void End(const TraceBuilder& /*builder*/, const Recording& /*recording*/,
                   const ReadIntegrity& /*integrity*/) {}
  // After the last recording: completes the output (closes the document, commits the files).
  virtual void Close() = 0;
  // After Close: reports what became of the output to `diagnostics` (files written, notes,
  // problems), and says what it was.
  virtual ExportOutcome Conclude(Diagnostics& /*diagnostics*/) { return ExportOutcome::kWritten; }
  // True once the output can no longer be written (a full disk, a file size limit), so that the
  // pass stops reading. Asked after every chunk.
  virtual bool Failed() const = 0;
};

// The earliest process start (unix ns) of `ranks`, 0 when none has one: time 0 of the formats
// that put several ranks on one axis.
inline int64_t EarliestProcessStart(const std::vector<const Rank*>& ranks) {
  int64_t base = 0;
  for (const Rank* r : ranks) {
    const int64_t start = r->recording.header.process_start_unix_ns();
    if (start && (!base || start < base)) base = start;
  }
  return base;
}

}  // namespace cupmon::decoder
