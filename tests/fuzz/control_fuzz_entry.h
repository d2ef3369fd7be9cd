// The entry the control-protocol fuzzer drives: any byte string becomes a flags byte and a sequence
// of length-prefixed request frames, handled by a real ControlPlane (no socket, not started) in
// front of a fake ControlTarget, exactly as a connection handles them. The libFuzzer target
// (control_fuzz.cc) and the gcc-built regression test
// (tests/monitor/control/control_fuzz_regression_test.cc) call it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <google/protobuf/stubs/logging.h>

#include "cupmon.pb.h"
#include "cupmon/base/check.h"
#include "cupmon/control/control_plane.h"
#include "cupmon/control/protocol.h"

namespace cupmon::fuzz {

// Input layout: byte 0 = flags, then frames (u32 little-endian length, then that many bytes) until
// the input ends, a frame is cut short (a connection would wait for the rest, then time out), or a
// reply ends the connection.
enum ControlFuzzFlags : uint8_t {
  kTargetRefuses = 1,      // OpenWindow, CloseWindow, Flush, Rotate return errors
  kTargetThrows = 2,       // every target method throws
  kSmallRequestLimit = 4,  // max_request_bytes = 64 instead of 64 KiB
  kStoppedPlane = 8,       // the plane is stopped before the first frame
  kOddStatus = 16,         // Status() fills pid, version and a long output_dir itself
};

// Checks what the control plane promises to a target: only validated requests arrive.
class FuzzTarget final : public control::ControlTarget {
 public:
  explicit FuzzTarget(uint8_t flags) : flags_(flags) {}

  pb::StatusReply Status() override {
    MaybeThrow();
    pb::StatusReply status;
    if (flags_ & kOddStatus) {
      status.set_pid(7);
      status.set_version("fuzz");
      status.set_output_dir(std::string(300, 'd'));
    }
    return status;
  }
  Expected<uint32_t> OpenWindow(const control::WindowRequest& request) override {
    MaybeThrow();
    CUPMON_CHECK(request.duration_ms >= 1 && request.duration_ms <= control::kMaxWindowMs);
    CUPMON_CHECK(request.source == pb::TRIGGER_SOCKET);
    for (size_t i = 0; i < request.kinds.size(); ++i) {
      bool known = false;
      for (std::string_view name : control::kWindowKindNames) known |= request.kinds[i] == name;
      CUPMON_CHECK(known);
      for (size_t j = 0; j < i; ++j) CUPMON_CHECK(request.kinds[j] != request.kinds[i]);
    }
    ++opened;
    if (flags_ & kTargetRefuses) return MakeError("a trace window is already open");
    return opened;
  }
  Expected<void> CloseWindow() override { return Simple("no trace window is open"); }
  Expected<void> Flush() override { return Simple("flush failed"); }
  Expected<void> Rotate() override { return Simple("rotate failed"); }

  uint32_t opened = 0;

 private:
  void MaybeThrow() const {
    if (flags_ & kTargetThrows) throw std::runtime_error("fuzz target throws");
  }
  Expected<void> Simple(const char* error) const {
    MaybeThrow();
    if (flags_ & kTargetRefuses) return MakeError(error);
    return {};
  }
  uint8_t flags_;
};

// libprotobuf writes its log to stderr, which in the monitor is the application's: no request may
// make it log (it did for invalid UTF-8 in a window kind). The fuzzer aborts on any message; the
// regression test counts them.
inline std::atomic<uint64_t>& ProtobufLogMessages() {
  static std::atomic<uint64_t> count{0};
  return count;
}
inline void CountProtobufLogs(google::protobuf::LogLevel, const char* file, int line,
                              const std::string& message) {
  std::fprintf(stderr, "protobuf logged (%s:%d): %s\n", file, line, message.c_str());
  ProtobufLogMessages().fetch_add(1);
}
inline void AbortOnProtobufLog(google::protobuf::LogLevel level, const char* file, int line,
                               const std::string& message) {
  CountProtobufLogs(level, file, line, message);
  std::abort();
}

struct ControlFuzzResult {
  uint64_t frames = 0;        // complete frames handed to the plane (oversized ones included)
  uint64_t ok_replies = 0;
  uint64_t error_replies = 0;
  bool closed = false;        // a reply ended the connection
  uint32_t windows_opened = 0;
};

// Never crashes on any input; every reply is checked for consistency (CUPMON_CHECK aborts).
inline ControlFuzzResult RunControlFuzzInput(const uint8_t* data, size_t size) {
  ControlFuzzResult result;
  if (size == 0) return result;
  const uint8_t flags = data[0];
  // One io_context for all inputs: the plane registers its acceptor, signal set and scheduled
  // timers with it; nothing is run except the cancelled timers' handlers after each input.
  static boost::asio::io_context io;
  FuzzTarget target(flags);
  control::ControlOptions options;
  options.control_dir = "/nonexistent/cupmon-fuzz";  // never created: the plane is not started
  options.signal_number = 0;
  if (flags & kSmallRequestLimit) options.max_request_bytes = 64;
  {
    control::ControlPlane plane(io, options, target);
    if (flags & kStoppedPlane) plane.Stop();
    size_t pos = 1;
    while (size - pos >= control::kLengthPrefixBytes) {
      unsigned char prefix[control::kLengthPrefixBytes];
      for (size_t i = 0; i < control::kLengthPrefixBytes; ++i) prefix[i] = data[pos + i];
      pos += control::kLengthPrefixBytes;
      const uint32_t length = control::DecodeLengthPrefix(prefix);
      pb::ControlReply reply;
      bool close_after = false;
      if (auto refused = plane.CheckRequestLength(length)) {
        reply = *refused;
        close_after = true;
      } else {
        if (size - pos < length) break;  // cut short: the connection would time out
        const control::RequestOutcome outcome = plane.HandleRequestBody(
            std::string_view(reinterpret_cast<const char*>(data + pos), length));
        pos += length;
        reply = outcome.reply;
        close_after = outcome.close_after;
      }
      ++result.frames;
      // An error reply always says why; a success never carries an error.
      CUPMON_CHECK(reply.ok() != !reply.error().empty());
      if (reply.has_status()) CUPMON_CHECK(reply.ok() && reply.status().pid() != 0);
      if (reply.window_id() != 0) CUPMON_CHECK(reply.ok());
      // The reply goes back framed; its length prefix must describe it.
      const std::string frame = control::EncodeFrame(reply);
      unsigned char out_prefix[control::kLengthPrefixBytes];
      for (size_t i = 0; i < control::kLengthPrefixBytes; ++i) {
        out_prefix[i] = static_cast<unsigned char>(frame[i]);
      }
      CUPMON_CHECK(control::DecodeLengthPrefix(out_prefix) + control::kLengthPrefixBytes ==
                   frame.size());
      (reply.ok() ? result.ok_replies : result.error_replies)++;
      if (close_after) {
        result.closed = true;
        break;
      }
    }
    const control::ControlCounters c = plane.counters();
    CUPMON_CHECK(c.requests + c.malformed + c.oversized + c.handler_exceptions >= result.frames);
    CUPMON_CHECK(c.windows_scheduled <= options.max_scheduled_windows);
  }  // ~ControlPlane stops the plane, which cancels every scheduled window
  io.restart();
  io.poll();
  CUPMON_CHECK(io.stopped());  // nothing left behind: no timer of a scheduled window survives
  result.windows_opened = target.opened;
  return result;
}

}  // namespace cupmon::fuzz
