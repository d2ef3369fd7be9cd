// How cupmon-decode shows what the decoder library reports: each message as a line
// "cupmon-decode: [warning: |note: ]<text>", the progress line redrawn in place, and the exit
// code each Outcome makes. The tool's only place for both; the decoder tests render through it too.
#pragma once

#include <ostream>
#include <string_view>

#include "cupmon/decoder/diagnostics.h"

namespace cupmon::decode_cli {

// Exit codes of cupmon-decode (docs/DECODER.md).
inline constexpr int kExitClean = 0;
inline constexpr int kExitWarnings = 1;    // damage, drops, skips, unknown timestamps...
inline constexpr int kExitUnusable = 2;    // nothing decodable, unwritable output, a usage error
inline constexpr int kExitRegression = 3;  // diff --fail-above: B is slower than allowed

inline int ExitCode(decoder::Outcome outcome) {
  switch (outcome) {
    case decoder::Outcome::kClean: return kExitClean;
    case decoder::Outcome::kWarnings: return kExitWarnings;
    case decoder::Outcome::kRegression: return kExitRegression;
    case decoder::Outcome::kUsageError:
    case decoder::Outcome::kFailed: return kExitUnusable;
  }
  return kExitUnusable;
}

// Writes messages to `err` (cupmon-decode: std::cerr). The progress line is drawn only when
// `wants_progress` (stderr is a terminal that the output does not stream to).
class StderrText final : public decoder::Diagnostics {
 public:
  explicit StderrText(std::ostream& err, bool wants_progress = false)
      : err_(err), wants_progress_(wants_progress) {}

  // One line (a line to `err` needs no flush: std::cerr is unit-buffered).
  static void Line(std::ostream& err, decoder::Severity severity, std::string_view text) {
    err << "cupmon-decode: ";
    if (severity == decoder::Severity::kWarning) err << "warning: ";
    if (severity == decoder::Severity::kNote) err << "note: ";
    err << text << "\n";
  }
  void Report(decoder::Severity severity, std::string_view text) override {
    Line(err_, severity, text);
  }
  bool WantsProgress() const override { return wants_progress_; }
  // \r back to the line start; \033[K erases what a longer earlier text left.
  void Progress(std::string_view text) override {
    err_ << "\rcupmon-decode: " << text << "\033[K" << std::flush;
  }
  void ClearProgress() override { err_ << "\r\033[K" << std::flush; }

 private:
  std::ostream& err_;
  const bool wants_progress_;
};

}  // namespace cupmon::decode_cli
