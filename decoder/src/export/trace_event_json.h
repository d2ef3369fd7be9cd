// Events of the Trace Event Format's JSON (the format of chrome://tracing, which Kineto writes too):
// the shapes that the chrome-json export (chrome/) and the kineto export (kineto/) share.
// Private to the decoder (decoder/src).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "cupmon/decoder/trace_builder.h"
#include "text/out_buf.h"

namespace cupmon::decoder {

// Writes events into a "traceEvents" array, one per line, compact ("name":"x", no spaces).
// Times are microseconds since a base (wall-clock ns) with three decimals, so they stay exact
// to the ns and well inside a double's precision. The writer does not own `out`; the caller
// writes what comes before and after the array. Single-threaded.
class TraceEventWriter {
 public:
  explicit TraceEventWriter(OutBuf& out) : out_(out) {}

  void set_base(int64_t base) { base_ = base; }
  int64_t base() const { return base_; }
  // Events written so far (each Comma() starts one).
  uint64_t events() const { return events_; }

  // Starts an event: the separator from the previous one.
  void Comma() {
    if (events_++) out_ << ",\n";
  }
  // `wall` as microseconds since the base ("12.345").
  void Us(int64_t wall) { Micros(wall - base_); }
  // `ns` as microseconds ("-0.001", "1.250").
  void Micros(int64_t ns) {
    out_.Reserve(25);
    out_.PutMicros(ns);
  }
  // A complete ("X") event up to and including `"args":{`; the caller writes the args and "}}".
  // `name_is_plain`: the caller knows that `name` needs no JSON escaping (saves scanning it).
  // The part after the name is formatted with one capacity check (kSliceTail bytes at most,
  // `cat` included), as are the callers' args (kArgsRoom).
  void SliceHead(std::string_view name, std::string_view cat, uint32_t pid, uint32_t tid,
                 int64_t wall, int64_t dur, bool name_is_plain = false) {
    if (name_is_plain) {
      // The whole event head in one capacity check.
      out_.Reserve(2 + kNameHead + name.size() + kSliceTail + cat.size() + kArgsRoom);
      if (events_++) out_.Put(",\n");
      out_.Put("{\"name\":\"");
      out_.Put(name);
    } else {
      Comma();
      out_ << "{\"name\":\"";
      out_.Json(name);
      out_.Reserve(kSliceTail + cat.size() + kArgsRoom);
    }
    char* p = out_.Cursor();
    p = PutAt(p, "\",\"cat\":\"");
    p = PutAt(p, cat);
    p = PutKeyUint(p, "\",\"ph\":\"X\",\"pid\":", pid);
    p = PutKeyUint(p, ",\"tid\":", tid);
    p = PutAt(p, ",\"ts\":");
    p = PutMicrosAt(p, wall - base_);
    p = PutAt(p, ",\"dur\":");
    p = PutMicrosAt(p, dur);
    p = PutAt(p, ",\"args\":{");
    out_.Commit(p);
  }
  // Room SliceHead leaves after `"args":{` for unchecked Put* calls of the caller.
  static constexpr size_t kArgsRoom = 512;
  // A whole complete event; `args` is the body of its args object (already JSON).
  void Slice(std::string_view name, std::string_view cat, uint32_t pid, uint32_t tid, int64_t wall,
             int64_t dur, std::string_view args) {
    SliceHead(name, cat, pid, tid, wall, dur);
    out_ << args << "}}";
  }
  // A metadata ("M") event naming a process or thread: `what` is "process_name", "thread_name"
  // (args.name) or "process_labels" (key "labels").
  void Meta(std::string_view what, uint32_t pid, uint32_t tid, std::string_view name,
            std::string_view key = "name") {
    Comma();
    out_ << "{\"name\":\"" << what << "\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":" << tid
         << ",\"ts\":0,\"args\":{\"" << key << "\":\"";
    out_.Json(name) << "\"}}";
  }
  // A metadata event ordering processes (`what` "process_sort_index") or threads.
  void SortIndex(uint32_t pid, uint64_t index, std::string_view what = "process_sort_index",
                 uint32_t tid = 0) {
    Comma();
    out_ << "{\"name\":\"" << what << "\",\"ph\":\"M\",\"pid\":" << pid << ",\"tid\":" << tid
         << ",\"ts\":0,\"args\":{\"sort_index\":" << index << "}}";
  }
  // The two ends of a flow arrow from a launch call to the activity it launched: a start ("s")
  // bound to the enclosing slice at the call and an end ("f", "bp":"e") at the activity's start.
  void LaunchFlow(std::string_view name, std::string_view cat, uint64_t id, const Row& r,
                  uint32_t api_pid, uint32_t gpu_pid) {
    out_.Reserve(2 * (kFlowRoom + name.size() + cat.size()));
    char* p = out_.Cursor();
    p = FlowEnd(p, name, cat, "\",\"ph\":\"s\",\"id\":", id, api_pid, r.api.tid,
                r.api.wall_start);
    p = FlowEnd(p, name, cat, "\",\"ph\":\"f\",\"bp\":\"e\",\"id\":", id, gpu_pid, r.stream,
                r.wall_start);
    out_.Commit(p);
  }

 private:
  // One end of a launch flow at `p`, with the comma before it: `phase` is the text from the cat's
  // closing quote to the id's colon. At most kFlowRoom + name and cat.
  char* FlowEnd(char* p, std::string_view name, std::string_view cat, std::string_view phase,
                uint64_t id, uint32_t pid, uint32_t tid, int64_t wall) {
    if (events_++) p = PutAt(p, ",\n");
    p = PutAt(p, "{\"name\":\"");
    p = PutAt(p, name);
    p = PutAt(p, "\",\"cat\":\"");
    p = PutAt(p, cat);
    p = PutKeyUint(p, phase, id);
    p = PutKeyUint(p, ",\"pid\":", pid);
    p = PutKeyUint(p, ",\"tid\":", tid);
    p = PutAt(p, ",\"ts\":");
    p = PutMicrosAt(p, wall - base_);
    *p++ = '}';
    return p;
  }
  // `{"name":"`.
  static constexpr size_t kNameHead = 9;
  // SliceHead's fixed bytes after the name (cat not included): 65 of text, two 10-digit ids and
  // two times of at most 25 bytes each.
  static constexpr size_t kSliceTail = 65 + 2 * 10 + 2 * 25 + 16;
  // One flow end without its name and cat: 70 of text, a 20-digit id, two 10-digit ids, a time.
  static constexpr size_t kFlowRoom = 70 + 20 + 2 * 10 + 25 + 16;

  OutBuf& out_;
  int64_t base_ = 0;
  uint64_t events_ = 0;
};

// Annotation labels and the wall-clock span [first start, last end] of the API calls that
// carry each, as the exports draw them (CPU time: the calls made under the label). A label can
// have several instances (the kineto export counts one per training step); memory grows with
// the distinct labels and instances, not with the rows.
class AnnotationSpans {
 public:
  struct Span {
    int64_t start = 0, end = 0;
    uint32_t pid = 0, tid = 0;  // of the first call seen with the label
  };
  void Add(const Row& api_row, uint64_t instance = 0) {
    if (api_row.annotation.empty()) return;
    auto [it, inserted] = spans_.try_emplace({std::string(api_row.annotation), instance},
                                             Span{api_row.wall_start, api_row.wall_end,
                                                  api_row.pid, api_row.tid});
    if (!inserted) {
      it->second.start = std::min(it->second.start, api_row.wall_start);
      it->second.end = std::max(it->second.end, api_row.wall_end);
    }
  }
  // By (label, instance).
  const std::map<std::pair<std::string, uint64_t>, Span>& spans() const { return spans_; }
  void Clear() { spans_.clear(); }

 private:
  std::map<std::pair<std::string, uint64_t>, Span> spans_;
};

}  // namespace cupmon::decoder
