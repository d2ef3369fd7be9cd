// A minimal protocol-buffers wire-format writer (varints, fixed64, length-delimited fields and
// nested messages) for the Perfetto export. Hand-written rather than generated so that the
// decoder needs no Perfetto schema and no extra protoc step at build time: the export writes a
// handful of fields of a few messages, and their numbers are cited where perfetto_exporter.cc uses
// them. Private to decoder/src/export.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace cupmon::decoder::proto_wire {

// Appends to one growing byte buffer. Nested messages are written in place: BeginNested leaves
// one byte for the length and EndNested widens it when the body turned out to need more (rare:
// most of the export's messages are shorter than 128 bytes), so no message is built twice.
// Each field reserves room for its largest encoding once and writes through a pointer: the
// export writes a few fields per row, and a capacity check per byte showed in its profile.
// Single-threaded; the caller owns the buffer's contents (data()/size()/Clear()).
class Writer {
 public:
  Writer() : buf_(new uint8_t[kInitial]), cap_(kInitial) {}

  void Varint(uint32_t field, uint64_t v) {
    uint8_t* p = Room(2 * kMaxVarint);
    p = PutVarint(p, Key(field, kVarint));
    End(PutVarint(p, v));
  }
  // int64 fields are varints of the two's-complement value (10 bytes when negative).
  void Int64(uint32_t field, int64_t v) { Varint(field, static_cast<uint64_t>(v)); }
  void Fixed64(uint32_t field, uint64_t v) {
    uint8_t* p = PutVarint(Room(kMaxVarint + 8), Key(field, kFixed64));
    for (int i = 0; i < 8; ++i) *p++ = static_cast<uint8_t>(v >> (8 * i));  // little endian
    End(p);
  }
  void Bytes(uint32_t field, std::string_view s) {
    uint8_t* p = Room(2 * kMaxVarint + s.size());
    p = PutVarint(PutVarint(p, Key(field, kLengthDelimited)), s.size());
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    End(p + s.size());
  }
  // Returns the position of the length byte, for EndNested.
  size_t BeginNested(uint32_t field) {
    uint8_t* p = PutVarint(Room(kMaxVarint + 1), Key(field, kLengthDelimited));
    *p = 0;
    End(p + 1);
    return size_ - 1;
  }
  void EndNested(size_t at) {
    const size_t len = size_ - at - 1;
    if (len < 0x80) {
      buf_[at] = static_cast<uint8_t>(len);
      return;
    }
    uint8_t v[kMaxVarint];
    const auto n = static_cast<size_t>(PutVarint(v, len) - v);
    Room(n - 1);
    std::memmove(buf_.get() + at + n, buf_.get() + at + 1, len);
    std::memcpy(buf_.get() + at, v, n);
    size_ += n - 1;
  }

  const uint8_t* data() const { return buf_.get(); }
  size_t size() const { return size_; }
  void Clear() { size_ = 0; }

 private:
  static constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2;
  static constexpr size_t kInitial = 1 << 20, kMaxVarint = 10;

  static uint64_t Key(uint32_t field, uint32_t wire_type) {
    return (static_cast<uint64_t>(field) << 3) | wire_type;
  }
  static uint8_t* PutVarint(uint8_t* p, uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
    return p;
  }
  // Where the next n bytes go, with room for them.
  uint8_t* Room(size_t n) {
    if (cap_ - size_ < n) Grow(n);
    return buf_.get() + size_;
  }
  void End(const uint8_t* p) { size_ = static_cast<size_t>(p - buf_.get()); }
  void Grow(size_t n) {
    const size_t cap = std::max(2 * cap_, size_ + n);
    std::unique_ptr<uint8_t[]> b(new uint8_t[cap]);
    std::memcpy(b.get(), buf_.get(), size_);
    buf_ = std::move(b);
    cap_ = cap;
  }

  std::unique_ptr<uint8_t[]> buf_;
  size_t cap_ = 0, size_ = 0;
};

}  // namespace cupmon::decoder::proto_wire
