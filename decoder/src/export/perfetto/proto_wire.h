// A minimal protocol-buffers wire-format writer (varints, fixed64, length-delimited fields and
// nested messages) for the Perfetto export. Hand-written rather than generated so that the
// decoder needs no Perfetto schema and no extra protoc step at build time: the export writes a
// handful of fields of a few messages, and their numbers are cited where perfetto_exporter.cc uses
// them. Private to decoder/src/export.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace cupmon::decoder::proto_wire {

// Appends to one growing byte buffer. Nested messages are written in place: BeginNested leaves
// one byte for the length and EndNested widens it when the body turned out to need more (rare:
// most of the export's messages are shorter than 128 bytes), so no message is built twice.
// Single-threaded; the caller owns the buffer's contents (data()/size()/Clear()).
class Writer {
 public:
  Writer() { buf_.reserve(kInitial); }

  void Varint(uint32_t field, uint64_t v) {
    Tag(field, kVarint);
    RawVarint(v);
  }
  // int64 fields are varints of the two's-complement value (10 bytes when negative).
  void Int64(uint32_t field, int64_t v) { Varint(field, static_cast<uint64_t>(v)); }
  void Fixed64(uint32_t field, uint64_t v) {
    Tag(field, kFixed64);
    uint8_t b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));  // little endian
    Append(b, 8);
  }
  void Bytes(uint32_t field, std::string_view s) {
    Tag(field, kLengthDelimited);
    RawVarint(s.size());
    Append(s.data(), s.size());
  }
  // Returns the position of the length byte, for EndNested.
  size_t BeginNested(uint32_t field) {
    Tag(field, kLengthDelimited);
    buf_.push_back(0);
    return buf_.size() - 1;
  }
  void EndNested(size_t at) {
    const size_t len = buf_.size() - at - 1;
    if (len < 0x80) {
      buf_[at] = static_cast<uint8_t>(len);
      return;
    }
    uint8_t v[10];
    const size_t n = EncodeVarint(len, v);
    buf_.insert(buf_.begin() + static_cast<std::ptrdiff_t>(at) + 1, n - 1, 0);
    std::memcpy(buf_.data() + at, v, n);
  }

  const uint8_t* data() const { return buf_.data(); }
  size_t size() const { return buf_.size(); }
  void Clear() { buf_.clear(); }

 private:
  static constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2;
  static constexpr size_t kInitial = 1 << 20;

  static size_t EncodeVarint(uint64_t v, uint8_t* out) {
    size_t n = 0;
    while (v >= 0x80) {
      out[n++] = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    out[n++] = static_cast<uint8_t>(v);
    return n;
  }
  void Tag(uint32_t field, uint32_t wire_type) {
    RawVarint((static_cast<uint64_t>(field) << 3) | wire_type);
  }
  void RawVarint(uint64_t v) {
    if (v < 0x80) {
      buf_.push_back(static_cast<uint8_t>(v));
      return;
    }
    uint8_t b[10];
    Append(b, EncodeVarint(v, b));
  }
  void Append(const void* p, size_t n) {
    const size_t at = buf_.size();
    buf_.resize(at + n);
    std::memcpy(buf_.data() + at, p, n);
  }

  std::vector<uint8_t> buf_;
};

}  // namespace cupmon::decoder::proto_wire
