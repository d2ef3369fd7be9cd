// JsonWriter: one JSON document, indented two spaces a level, for the reports' --format json
// (summary_json.cc, info_json.cc). Private to the decoder.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <istream>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cupmon/base/check.h"
#include "cupmon/decoder/reports.h"
#include "text/json.h"

namespace cupmon::decoder {

// Writes values in document order: inside an object each value follows its Key(). Strings are
// escaped by JsonEscape (the exports' escaping: quotes, backslashes and control characters;
// other bytes as they are, so names stay as the recording holds them). Numbers are numbers:
// integers exactly, doubles in their shortest round-trip form, and a NaN or infinity (which
// JSON cannot hold) as null. The writer does not own `out`. Single-threaded.
class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}
  // Writes one value nested `depth` levels deep in another document (indented as there), to be
  // copied into it by that document's Raw().
  JsonWriter(std::ostream& out, size_t depth) : out_(out), first_(depth, false), base_(depth) {}

  JsonWriter& BeginObject() { return Open('{'); }
  JsonWriter& EndObject() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }

  JsonWriter& Key(std::string_view key) {
    Separate();
    out_ << '"' << JsonEscape(key) << "\": ";
    after_key_ = true;
    return *this;
  }
  JsonWriter& String(std::string_view s) {
    Separate();
    out_ << '"' << JsonEscape(s) << '"';
    return *this;
  }
  JsonWriter& Uint(uint64_t v) {
    Separate();
    out_ << v;
    return *this;
  }
  JsonWriter& Int(int64_t v) {
    Separate();
    out_ << v;
    return *this;
  }
  JsonWriter& Double(double v) {
    if (!std::isfinite(v)) return Null();
    Separate();
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.write(buf, r.ptr - buf);
    return *this;
  }
  JsonWriter& Bool(bool v) {
    Separate();
    out_ << (v ? "true" : "false");
    return *this;
  }
  JsonWriter& Null() {
    Separate();
    out_ << "null";
    return *this;
  }
  template <typename T>
  JsonWriter& UintOrNull(const std::optional<T>& v) {
    return v ? Uint(static_cast<uint64_t>(*v)) : Null();
  }
  template <typename T>
  JsonWriter& IntOrNull(const std::optional<T>& v) {
    return v ? Int(static_cast<int64_t>(*v)) : Null();
  }
  // A value another JsonWriter wrote at this depth, copied as it is.
  JsonWriter& Raw(std::istream& value) {
    Separate();
    out_ << value.rdbuf();
    return *this;
  }
  // After the outermost value: the document's closing newline.
  void End() {
    CUPMON_CHECK(first_.size() == base_);
    out_ << "\n";
  }

 private:
  JsonWriter& Open(char bracket) {
    Separate();
    out_ << bracket;
    first_.push_back(true);
    return *this;
  }
  JsonWriter& Close(char bracket) {
    CUPMON_CHECK(first_.size() > base_ && !after_key_);
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) Indent();
    out_ << bracket;
    return *this;
  }
  // Before a key, or a value not after a key: the comma and the new line.
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.size() == base_) return;
    if (!first_.back()) out_ << ',';
    first_.back() = false;
    Indent();
  }
  void Indent() { out_ << '\n' << std::string(2 * first_.size(), ' '); }

  std::ostream& out_;
  std::vector<bool> first_;  // per open object or array: nothing written in it yet
  size_t base_ = 0;          // entries of first_ that belong to the enclosing document
  bool after_key_ = false;
};

}  // namespace cupmon::decoder
