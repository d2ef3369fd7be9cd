// The text output buffer and its number formatting: what the CSV, JSONL, Chrome-trace and Kineto
// exports and the timeline format goes through here to their stream. Private to the decoder
// (decoder/src).
#pragma once

#include <charconv>
#include <cstddef>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "text/csv.h"
#include "text/json.h"

namespace cupmon::decoder {

// Decimal digits of `v` from `p` on (at most 20, no terminator); returns the end. The same text as
// std::to_chars, in fewer instructions: two digits per table look-up from quotients that do not
// wait on each other (libstdc++'s to_chars counts the digits in a loop, then divides the whole
// 64-bit value by 100 per pair), inlined into each call site.
namespace out_buf_internal {
inline constexpr char kDigitPairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";
[[gnu::always_inline]] inline void Pair(char* p, uint32_t v) {
  std::memcpy(p, kDigitPairs + 2 * v, 2);
}
// v < 10000, exactly four digits.
[[gnu::always_inline]] inline void Four(char* p, uint32_t v) {
  Pair(p, v / 100);
  Pair(p + 2, v % 100);
}
// v < 100000000, exactly eight digits.
[[gnu::always_inline]] inline void Eight(char* p, uint32_t v) {
  Four(p, v / 10000);
  Four(p + 4, v % 10000);
}
// v < 10000, without leading zeros.
[[gnu::always_inline]] inline char* UpToFour(char* p, uint32_t v) {
  if (v < 10) {
    *p = static_cast<char>('0' + v);
    return p + 1;
  }
  if (v < 100) {
    Pair(p, v);
    return p + 2;
  }
  if (v < 1000) {
    *p = static_cast<char>('0' + v / 100);
    Pair(p + 1, v % 100);
    return p + 3;
  }
  Four(p, v);
  return p + 4;
}
// v < 100000000, without leading zeros.
[[gnu::always_inline]] inline char* UpToEight(char* p, uint32_t v) {
  if (v < 10000) return UpToFour(p, v);
  p = UpToFour(p, v / 10000);
  Four(p, v % 10000);
  return p + 4;
}
}  // namespace out_buf_internal

[[gnu::always_inline]] inline char* FormatUint(char* p, uint64_t v) {
  using namespace out_buf_internal;
  if (v < 100000000) return UpToEight(p, static_cast<uint32_t>(v));
  if (v < 10000000000000000) {  // 9-16 digits
    p = UpToEight(p, static_cast<uint32_t>(v / 100000000));
    Eight(p, static_cast<uint32_t>(v % 100000000));
    return p + 8;
  }
  // 17-20 digits (wall-clock ns are 19).
  const uint64_t high = v / 10000000000000000;  // at most 1844
  const uint64_t low = v % 10000000000000000;
  p = UpToFour(p, static_cast<uint32_t>(high));
  Eight(p, static_cast<uint32_t>(low / 100000000));
  Eight(p + 8, static_cast<uint32_t>(low % 100000000));
  return p + 16;
}

// Unchecked writes at a cursor (OutBuf::Cursor), each returning the end of what it wrote: for a
// row's fixed-size parts, after OutBuf::Reserve.
[[gnu::always_inline]] inline char* PutAt(char* p, std::string_view s) {
  if (!s.empty()) std::memcpy(p, s.data(), s.size());  // an empty view's data() may be null
  return p + s.size();
}
// At most 21 bytes.
[[gnu::always_inline]] inline char* PutIntAt(char* p, int64_t v) {
  if (v >= 0) return FormatUint(p, static_cast<uint64_t>(v));
  *p = '-';
  return FormatUint(p + 1, 0 - static_cast<uint64_t>(v));
}

// Wall-clock nanoseconds (19 digits) written one after another share their leading digits, as
// the rows' times are close: the digits above the last eight are kept with the value they stand
// for, and a time with the same leading part is written as one 16-byte copy of them and eight
// digits. The same text as PutIntAt for every value; at most 21 bytes written at `p` (the
// 16-byte copy included).
class LeadingDigits {
 public:
  [[gnu::always_inline]] char* Put(char* p, int64_t v) {
    if (v < kLow) return PutIntAt(p, v);  // negative, or eight digits at most
    const auto u = static_cast<uint64_t>(v);
    const uint64_t high = u / kLow;
    if (high != high_) Keep(high);
    std::memcpy(p, text_, sizeof text_);
    out_buf_internal::Eight(p + size_, static_cast<uint32_t>(u - high * kLow));
    return p + size_ + 8;
  }

 private:
  static constexpr int64_t kLow = 100000000;  // the eight digits written each time
  [[gnu::noinline]] void Keep(uint64_t high) {
    high_ = high;
    size_ = static_cast<size_t>(FormatUint(text_, high) - text_);  // at most 11 digits
  }
  uint64_t high_ = 0;  // 0: none kept (a kept one is at least 1)
  char text_[16] = {};
  size_t size_ = 0;
};

// `key` (a literal with its punctuation, such as `,"pid":`), then the number: at most
// key.size() + 20 bytes.
[[gnu::always_inline]] inline char* PutKeyUint(char* p, std::string_view key, uint64_t v) {
  return FormatUint(PutAt(p, key), v);
}
// `ns` as microseconds with three decimals ("-0.001", "1.250"): at most 25 bytes.
[[gnu::always_inline]] inline char* PutMicrosAt(char* p, int64_t ns) {
  const uint64_t a = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  if (ns < 0) *p++ = '-';
  p = FormatUint(p, a / 1000);
  const auto frac = static_cast<uint32_t>(a % 1000);
  p[0] = '.';
  p[1] = static_cast<char>('0' + frac / 100);
  p[2] = static_cast<char>('0' + frac / 10 % 10);
  p[3] = static_cast<char>('0' + frac % 10);
  return p + 4;
}
// "a,b,c": three counts (a grid or block size), at most 62 bytes.
[[gnu::always_inline]] inline char* PutUint3At(char* p, const uint32_t v[3]) {
  p = FormatUint(p, v[0]);
  *p++ = ',';
  p = FormatUint(p, v[1]);
  *p++ = ',';
  return FormatUint(p, v[2]);
}

// The streaming sinks' output: rows are formatted into one large buffer (integers with
// FormatUint, no per-row stream calls or temporary strings) that goes to the stream in ~1 MiB
// writes. Everything a sink writes passes through here, so its order is kept.
class OutBuf {
 public:
  explicit OutBuf(std::ostream& out)
      : out_(out), buf_(new char[kFlushAt + kSlack]), cap_(kFlushAt + kSlack) {}
  ~OutBuf() { Flush(); }
  OutBuf(const OutBuf&) = delete;
  OutBuf& operator=(const OutBuf&) = delete;

  // Inlined so that literals become fixed-size copies (no strlen, no call per fragment).
  [[gnu::always_inline]] OutBuf& operator<<(std::string_view s) {
    Append(s.data(), s.size());
    return *this;
  }
  [[gnu::always_inline]] OutBuf& operator<<(const char* s) { return *this << std::string_view(s); }
  OutBuf& operator<<(const std::string& s) { return *this << std::string_view(s); }
  [[gnu::always_inline]] OutBuf& operator<<(char c) {
    if (size_ == cap_) [[unlikely]]
      MakeRoom(1);
    buf_[size_++] = c;
    return *this;
  }
  template <typename T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, char> && !std::is_same_v<T, bool>)
  [[gnu::always_inline]] OutBuf& operator<<(T v) {
    if (cap_ - size_ < 24) [[unlikely]]
      MakeRoom(24);
    if constexpr (std::is_signed_v<T>) PutInt(static_cast<int64_t>(v));
    else PutUint(static_cast<uint64_t>(v));
    return *this;
  }
  // Unchecked appends, for a row's fixed-size parts: Reserve(n) first, then at most n bytes of
  // Put* calls. One capacity check per event instead of one per fragment.
  [[gnu::always_inline]] void Reserve(size_t n) {
    if (cap_ - size_ < n) [[unlikely]]
      MakeRoom(n);
  }
  [[gnu::always_inline]] void Put(std::string_view s) {
    if (s.empty()) return;  // its data() may be null, which memcpy must not be given
    std::memcpy(buf_.get() + size_, s.data(), s.size());
    size_ += s.size();
  }
  [[gnu::always_inline]] void Put(char c) { buf_[size_++] = c; }
  // The next free byte: after Reserve(n), write at most n bytes from here on with PutAt,
  // PutIntAt and FormatUint, then Commit(end). A local cursor stays in a register, where the
  // Put* calls reload size_ and buf_ after each byte they store (a char store may alias them):
  // the CSV writer took 10% fewer instructions that way.
  [[gnu::always_inline]] char* Cursor() { return buf_.get() + size_; }
  [[gnu::always_inline]] void Commit(char* end) { size_ = static_cast<size_t>(end - buf_.get()); }
  // At most 20 bytes; the same digits as std::to_chars (FormatUint).
  [[gnu::always_inline]] void PutUint(uint64_t v) {
    size_ = static_cast<size_t>(FormatUint(buf_.get() + size_, v) - buf_.get());
  }
  // At most 21 bytes.
  [[gnu::always_inline]] void PutInt(int64_t v) { Commit(PutIntAt(Cursor(), v)); }
  // `ns` as microseconds with three decimals ("-0.001", "1.250"): at most 25 bytes.
  [[gnu::always_inline]] void PutMicros(int64_t ns) { Commit(PutMicrosAt(Cursor(), ns)); }
  // "a,b,c": three counts (a grid or block size) at most 62 bytes.
  [[gnu::always_inline]] void PutUint3(const uint32_t v[3]) { Commit(PutUint3At(Cursor(), v)); }
  // Appends `s` escaped for a JSON string body (JsonEscape, text/json.h).
  OutBuf& Json(std::string_view s) {
    if (IsPlainJson(s)) return *this << s;
    return *this << JsonEscape(s);
  }
  // Csv(s) for an `s` known to hold no double quote (a name whose answer was kept), and `after`,
  // one capacity check.
  [[gnu::always_inline]] void CsvPlain(std::string_view s, char after) {
    Reserve(s.size() + 3);
    char* p = Cursor();
    *p++ = '"';
    p = PutAt(p, s);
    p[0] = '"';
    p[1] = after;
    Commit(p + 2);
  }
  static bool HasQuote(std::string_view s) { return s.find('"') != std::string_view::npos; }
  // Appends `s` as a CSV field (text/csv.h: in double quotes, quotes doubled).
  OutBuf& Csv(std::string_view s) {
    // find, not memchr: an empty view's data() may be null, which memchr must not be given.
    if (s.find('"') == std::string_view::npos) {  // most names: one copy
      Reserve(s.size() + 2);
      char* p = Cursor();
      *p++ = '"';
      p = PutAt(p, s);
      *p++ = '"';
      Commit(p);
      return *this;
    }
    return *this << CsvQuote(s);
  }
  // Call after each row: writes the buffer out once it is large.
  void EndRow() {
    if (size_ >= kFlushAt) Flush();
  }
  // The stream has failed (a write that did not go through): what follows is lost.
  bool failed() const { return out_.fail(); }
  void Flush() {
    if (size_ == 0) return;
    out_.write(buf_.get(), static_cast<std::streamsize>(size_));
    size_ = 0;
  }

 private:
  [[gnu::always_inline]] void Append(const char* p, size_t n) {
    if (n == 0) return;  // `p` may be null then, which memcpy must not be given
    if (cap_ - size_ < n) [[unlikely]]
      MakeRoom(n);
    std::memcpy(buf_.get() + size_, p, n);
    size_ += n;
  }
  // Writes out what is buffered (order is kept) and grows the buffer if `n` still does not fit.
  [[gnu::noinline]] void MakeRoom(size_t n) {
    Flush();
    if (n > cap_) {
      cap_ = n;
      buf_.reset(new char[cap_]);
    }
  }

  static constexpr size_t kFlushAt = 1 << 20;
  static constexpr size_t kSlack = 64 * 1024;  // a row rarely needs more; MakeRoom if it does
  std::ostream& out_;
  std::unique_ptr<char[]> buf_;
  size_t size_ = 0, cap_;
};

// Whether each kernel name (by the builder's name id) is a JSON string body as it is, found once
// per name rather than per row: demangled names run to kilobytes. Clear() for each recording (name
// ids are its builder's).
class PlainJsonNames {
 public:
  bool Plain(uint32_t name_id, std::string_view name) {
    if (name_id >= known_.size()) known_.resize(name_id + 1, -1);
    int8_t& known = known_[name_id];
    if (known < 0) known = IsPlainJson(name) ? 1 : 0;
    return known == 1;
  }
  void Clear() { known_.clear(); }

 private:
  std::vector<int8_t> known_;
};

}  // namespace cupmon::decoder
