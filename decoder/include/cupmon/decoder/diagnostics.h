// How the decoder's commands tell their caller what happened: each message and the progress line
// go to a Diagnostics the caller provides, and each command returns an Outcome. The library
// names no program and picks no exit code; cupmon-decode writes the messages to stderr and maps
// the outcome to its exit code.
#pragma once

#include <string_view>

namespace cupmon::decoder {

// How a command ended, from best to worst: Worse() keeps the later one.
enum class Outcome {
  kClean,       // everything read, nothing to report
  kWarnings,    // output written, but the input had problems (damage, drops, skipped files...)
  kRegression,  // diff --fail-above: B is slower than the threshold allows
  kUsageError,  // the options were refused; nothing was read or written
  kFailed,      // nothing usable to read, or the output could not be written whole
};

inline Outcome Worse(Outcome a, Outcome b) { return a < b ? b : a; }
// The output is not to be used: a usage error or a failure.
inline bool Unusable(Outcome o) { return o == Outcome::kUsageError || o == Outcome::kFailed; }

enum class Severity {
  kError,    // why the command stopped or its output is not usable
  kWarning,  // a problem of the input that the output works around (counted in kWarnings)
  kNote,     // something the reader of the output should know
  kStatus,   // what the command did or left alone (files ignored, written, a verdict)
};

// Where a command's messages go. Called on the thread that runs the command only (RankPass
// hands the progress of reads on other threads to that thread). Texts carry no program name,
// no severity tag and no newline; several ranks' messages start with the rank's label.
class Diagnostics {
 public:
  virtual ~Diagnostics() = default;

  virtual void Report(Severity severity, std::string_view text) = 0;
  void Error(std::string_view text) { Report(Severity::kError, text); }
  void Warning(std::string_view text) { Report(Severity::kWarning, text); }
  void Note(std::string_view text) { Report(Severity::kNote, text); }
  void Status(std::string_view text) { Report(Severity::kStatus, text); }

  // Whether the caller wants a progress line while large inputs are read (a terminal that the
  // output does not stream to). When false, Progress is never called.
  virtual bool WantsProgress() const { return false; }
  // Shows `text` ("read 1.25 GiB of 4.00 GiB (31%)") in place of the previous progress text.
  virtual void Progress(std::string_view /*text*/) {}
  // Removes the progress text; called before any other message or output follows it.
  virtual void ClearProgress() {}
};

}  // namespace cupmon::decoder
