// The importer of PyTorch CUPTI monitor dumps: listing and streaming (see torch_monitor_dump.h for
// the layout).
#include "cupmon/decoder/torch_monitor_dump.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "cupmon/format/chunk.h"
#include "cupmon/format/record_sizes.h"
#include "importers.h"

namespace cupmon::decoder {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMetaMagic(kTorchMetaMagic, 8);
constexpr std::string_view kChunkMagic(kTorchChunkMagic, 8);
constexpr uint32_t kMaxMetaLength = 16u << 20;  // the monitor writes a few hundred bytes

// The metadata is one flat JSON object written by Python's json.dumps (ASCII, sorted keys). This
// reads objects, arrays, strings, numbers, booleans and null, keeps the top-level members the
// decoder uses and skips the rest; nesting is bounded so damaged input cannot exhaust the stack.
class MetaJson {
 public:
  explicit MetaJson(std::string_view text) : s_(text) {}

  bool Parse(TorchDumpMeta* meta, std::string* why) {
    Space();
    if (!Eat('{')) return Fail("the payload is not a JSON object", why);
    Space();
    if (Eat('}')) return End(why);
    for (;;) {
      std::string key;
      Space();
      if (!String(&key)) return Fail("expected a member name", why);
      Space();
      if (!Eat(':')) return Fail("expected ':' after \"" + key + "\"", why);
      Space();
      if (!Member(key, meta)) return Fail("bad value for \"" + key + "\"", why);
      Space();
      if (Eat(',')) continue;
      if (Eat('}')) return End(why);
      return Fail("expected ',' or '}'", why);
    }
  }

 private:
  static constexpr int kMaxDepth = 32;

  bool End(std::string* why) {
    Space();
    return pos_ == s_.size() || Fail("bytes after the JSON object", why);
  }
  bool Fail(const std::string& what, std::string* why) {
    *why = what + " at byte " + std::to_string(pos_) + " of the JSON payload";
    return false;
  }
  void Space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\r' ||
                                s_[pos_] == '\t'))
      ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Word(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }

  bool Member(const std::string& key, TorchDumpMeta* m) {
    uint64_t u = 0;
    int64_t i = 0;
    if (key == "meta_version") return UInt32(&m->meta_version);
    if (key == "cupti_version") return UInt32(&m->cupti_version);
    if (key == "cuda_version") return StringOrNull(&m->cuda_version);
    if (key == "timestamp_mode") return StringOrNull(&m->timestamp_mode);
    if (key == "libcupti_path") return StringOrNull(&m->libcupti_path);
    if (key == "session_start_unix_ns") return Int(&m->session_start_unix_ns);
    if (key == "session_start_calibrated_unix_ns") return Int(&m->session_start_calibrated_unix_ns);
    if (key == "session_start_approx_ns") {
      // c10's approximate clock: TSC ticks on x86-64 (uint64), else nanoseconds (int64).
      if (!Number(&u, &i)) return false;
      m->session_start_approx_ns = u;
      return true;
    }
    if (key == "buffer_size") return Number(&m->buffer_size, &i);
    if (key == "flush_period_ns") return Int(&m->flush_period_ns);
    if (key == "hes_enabled") return Bool(&m->hes_enabled);
    if (key == "activities") {
      if (!Eat('[')) return Skip(0);  // not a list: kept as none
      Space();
      if (Eat(']')) return true;
      for (;;) {
        Space();
        uint32_t kind = 0;
        if (!UInt32(&kind)) return false;
        m->activities.push_back(kind);
        Space();
        if (Eat(',')) continue;
        return Eat(']');
      }
    }
    return Skip(0);
  }

  // A JSON integer; *u holds it when it is >= 0, *i when it fits int64. Fractions are refused
  // (every number the monitor writes is an integer).
  bool Number(uint64_t* u, int64_t* i) {
    const bool negative = Eat('-');
    const size_t start = pos_;
    uint64_t mag = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      const auto d = static_cast<uint64_t>(s_[pos_] - '0');
      if (mag > (UINT64_MAX - d) / 10) return false;
      mag = mag * 10 + d;
      ++pos_;
    }
    if (pos_ == start) return false;
    if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E')) return false;
    if (negative) {
      if (mag > static_cast<uint64_t>(INT64_MAX) + 1) return false;
      *u = 0;
      *i = mag == static_cast<uint64_t>(INT64_MAX) + 1 ? INT64_MIN : -static_cast<int64_t>(mag);
    } else {
      *u = mag;
      *i = mag > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(mag);
    }
    return true;
  }
  bool Int(int64_t* out) {
    uint64_t u = 0;
    return Number(&u, out);
  }
  bool UInt32(uint32_t* out) {
    uint64_t u = 0;
    int64_t i = 0;
    if (!Number(&u, &i) || i < 0 || u > UINT32_MAX) return false;
    *out = static_cast<uint32_t>(u);
    return true;
  }
  bool Bool(bool* out) {
    if (Word("true")) {
      *out = true;
      return true;
    }
    if (Word("false")) {
      *out = false;
      return true;
    }
    return Word("null");
  }
  bool StringOrNull(std::string* out) { return Word("null") || String(out); }

  static void PutUtf8(uint32_t c, std::string* out) {
    if (c < 0x80) {
      out->push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out->push_back(static_cast<char>(0xC0 | c >> 6));
      out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | c >> 12));
      out->push_back(static_cast<char>(0x80 | (c >> 6 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | c >> 18));
      out->push_back(static_cast<char>(0x80 | (c >> 12 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (c >> 6 & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  bool Hex4(uint32_t* out) {
    if (s_.size() - pos_ < 4) return false;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
      else return false;
    }
    *out = v;
    return true;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    out->clear();
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return false;
      const char e = s_[pos_++];
      switch (e) {
        case '"': case '\\': case '/': out->push_back(e); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t c1 = 0;
          if (!Hex4(&c1)) return false;
          if (c1 >= 0xD800 && c1 < 0xDC00 && s_.substr(pos_, 2) == "\\u") {
            pos_ += 2;
            uint32_t c2 = 0;
            if (!Hex4(&c2) || c2 < 0xDC00 || c2 >= 0xE000) return false;
            c1 = 0x10000 + ((c1 - 0xD800) << 10) + (c2 - 0xDC00);
          }
          PutUtf8(c1, out);
          break;
        }
        default: return false;
      }
    }
    return false;
  }
  // Any JSON value, read and dropped.
  bool Skip(int depth) {
    if (depth > kMaxDepth) return false;
    Space();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    std::string ignored;
    if (c == '"') return String(&ignored);
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++pos_;
      Space();
      if (Eat(close)) return true;
      for (;;) {
        Space();
        if (close == '}') {
          if (!String(&ignored)) return false;
          Space();
          if (!Eat(':')) return false;
        }
        if (!Skip(depth + 1)) return false;
        Space();
        if (Eat(',')) continue;
        return Eat(close);
      }
    }
    if (Word("true") || Word("false") || Word("null")) return true;
    // A number, fractions and exponents included.
    const size_t start = pos_;
    while (pos_ < s_.size() && std::strchr("+-.eE0123456789", s_[pos_]) && s_[pos_] != '\0')
      ++pos_;
    return pos_ > start;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::string_view AsText(std::span<const uint8_t> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// "13.0" -> 13000, as CUDA numbers versions (cudaRuntimeGetVersion); 0 when unparsable.
int32_t CudaVersionNumber(const std::string& text) {
  int major = 0, minor = 0;
  if (std::sscanf(text.c_str(), "%d.%d", &major, &minor) < 1 || major <= 0 || major > 1000 ||
      minor < 0 || minor > 99)
    return 0;
  return major * 1000 + minor * 10;
}

// FNV-1a of the dump directory: a stable id, so the same dump given twice is read once.
uint64_t DumpId(const std::string& dir) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : dir) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

size_t FindChunkMagic(std::string_view text, size_t from) {
  const size_t at = from >= text.size() ? std::string_view::npos : text.find(kChunkMagic, from);
  return at == std::string_view::npos ? text.size() : at;
}

std::string SourceNote(const TorchDumpMeta& m, const std::string& dir) {
  std::string s = "PyTorch CUPTI monitor dump in " + dir + " (meta version " +
                  std::to_string(m.meta_version) + ", CUPTI API " + std::to_string(m.cupti_version) +
                  ", CUDA " + (m.cuda_version.empty() ? "?" : m.cuda_version) + ", timestamps " +
                  (m.timestamp_mode.empty() ? "?" : m.timestamp_mode) + ", buffer " +
                  std::to_string(m.buffer_size) + " B, flush every " +
                  std::to_string(m.flush_period_ns / 1000000) + " ms";
  if (!m.libcupti_path.empty()) s += ", " + m.libcupti_path;
  return s + "); such dumps hold no kernel names (pointers only), no host, pid or dropped-record "
             "counts";
}

}  // namespace

bool IsTorchDumpFileName(const fs::path& path) {
  const std::string name = path.filename().string();
  return name == kTorchMetaFileName || name == kTorchRawFileName;
}

Expected<TorchDumpMeta> ParseTorchDumpMeta(std::span<const uint8_t> bytes, const std::string& path) {
  if (bytes.size() < kTorchMetaHeaderSize)
    return MakeError(path + ": " + std::to_string(bytes.size()) +
                     " bytes, shorter than the 16-byte CUPMMETA header (truncated)");
  if (AsText(bytes.first(8)) != kMetaMagic)
    return MakeError(path + ": not a PyTorch CUPTI monitor metadata file (no CUPMMETA magic at "
                     "offset 0)");
  const uint32_t version = GetLe32(bytes.data() + 8);
  const uint32_t length = GetLe32(bytes.data() + 12);
  if (version != kTorchDumpVersion)
    return MakeError(path + ": metadata version " + std::to_string(version) +
                     "; cupmon-decode reads version " + std::to_string(kTorchDumpVersion) +
                     " (the raw-buffer dumps of torch.profiler._cupti_monitor)");
  if (length > kMaxMetaLength || length > bytes.size() - kTorchMetaHeaderSize)
    return MakeError(path + ": the JSON payload's length " + std::to_string(length) +
                     " at offset 12 runs past the end of the file (" +
                     std::to_string(bytes.size()) + " bytes)");
  TorchDumpMeta meta;
  std::string why;
  if (!MetaJson(AsText(bytes.subspan(kTorchMetaHeaderSize, length))).Parse(&meta, &why))
    return MakeError(path + ": metadata JSON does not parse: " + why);
  if (meta.meta_version == 0) meta.meta_version = version;
  if (meta.cupti_version == 0)
    return MakeError(path + ": metadata names no cupti_version, so the record layouts are unknown");
  return meta;
}

pb::RecordingHeader TorchDumpHeader(const TorchDumpMeta& meta, uint64_t recording_id) {
  pb::RecordingHeader h;
  h.set_recording_id(recording_id);
  h.set_cupti_api_version(meta.cupti_version);
  h.set_cuda_runtime_version(CudaVersionNumber(meta.cuda_version));
  h.set_process_start_unix_ns(meta.session_start_unix_ns);
  h.set_file_created_unix_ns(meta.session_start_unix_ns);
  for (uint32_t kind : meta.activities) h.add_enabled_kinds(kind);
  // The dump carries no size table. The decoder's layouts are CUPTI 13.0's, trusted for 13.0.x
  // only (record_layout.cc): with 13.0's sizes a 13.0.x dump walks, and at any other version each
  // buffer stops at its first record of a decodable kind, naming the version. Nothing is guessed.
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k) {
    if (!sizes.Size(k)) continue;
    auto* rs = h.add_record_sizes();
    rs->set_kind(k);
    rs->set_size(sizes.Size(k));
  }
  return h;
}

Expected<std::optional<Recording>> ListTorchDump(const std::string& dir) {
  std::error_code ec;
  const fs::path meta_path = fs::path(dir) / kTorchMetaFileName;
  const fs::path raw_path = fs::path(dir) / kTorchRawFileName;
  const bool have_meta = fs::is_regular_file(meta_path, ec);
  const bool have_raw = fs::is_regular_file(raw_path, ec);
  if (!have_meta && !have_raw) return std::optional<Recording>();
  if (!have_meta)
    return MakeError(raw_path.string() + ": no " + kTorchMetaFileName +
                     " next to it: the CUPTI version, and so the record layouts, are unknown");
  auto mapped = MappedFile::Open(meta_path.string());
  if (!mapped) return cupmon::unexpected(mapped.error());
  auto meta = ParseTorchDumpMeta(mapped->bytes(), meta_path.string());
  if (!meta) return cupmon::unexpected(meta.error());
  const fs::path canonical = fs::weakly_canonical(fs::path(dir), ec);
  const std::string where = ec ? dir : canonical.string();
  Recording r;
  r.id = DumpId(where);
  r.header = TorchDumpHeader(*meta, r.id);
  r.importer = &TorchMonitorDumps();
  r.source_note = SourceNote(*meta, dir);
  auto size_of = [](const fs::path& p) {
    std::error_code size_ec;
    const uint64_t bytes = fs::file_size(p, size_ec);
    return size_ec ? uint64_t{0} : bytes;
  };
  r.files.push_back(RecordingFile{meta_path.string(), size_of(meta_path), 0, {}});
  if (have_raw) r.files.push_back(RecordingFile{raw_path.string(), size_of(raw_path), 1, {}});
  return std::optional<Recording>(std::move(r));
}

void ReadTorchRawBytes(std::span<const uint8_t> bytes, const RecordingFile& file,
                       ChunkVisitor& visitor, ReadIntegrity* integrity,
                       const std::function<void(uint64_t consumed)>& consumed) {
  const std::string_view text = AsText(bytes);
  const size_t n = bytes.size();
  auto damage = [&](size_t at, size_t skipped, const std::string& what) {
    ++integrity->damaged_ranges;
    integrity->damaged_bytes += skipped;
    integrity->Note(file.path + " at offset " + std::to_string(at) + ": " + what + " (" +
                    std::to_string(skipped) + " bytes skipped)");
  };
  bool have_prev = false;
  uint32_t expected = 0;
  size_t off = 0;
  while (off < n) {
    if (n - off < kTorchChunkHeaderSize) {
      damage(off, n - off, "chunk header cut short at the end of the file (truncated tail)");
      break;
    }
    const uint8_t* p = bytes.data() + off;
    if (text.substr(off, 8) != kChunkMagic) {
      const size_t next = FindChunkMagic(text, off + 1);
      damage(off, next - off, "no CUPMRBUF chunk magic");
      off = next;
      continue;
    }
    const uint32_t version = GetLe32(p + 8);
    if (version != kTorchDumpVersion) {
      const size_t next = FindChunkMagic(text, off + 8);
      damage(off, next - off, "chunk version " + std::to_string(version) +
                                  " (cupmon-decode reads version " +
                                  std::to_string(kTorchDumpVersion) + ")");
      off = next;
      continue;
    }
    const uint32_t index = GetLe32(p + 12);
    const uint32_t stream_id = GetLe32(p + 16);
    const uint32_t valid = GetLe32(p + 20);
    const uint64_t approx_ns = GetLe64(p + 32);
    const int64_t unix_ns = static_cast<int64_t>(GetLe64(p + 40));
    const uint64_t end = uint64_t{off} + kTorchChunkHeaderSize + valid;
    // The format has no checksums: a chunk's length is trusted when it ends at the end of the file
    // or at the next chunk's magic. Otherwise a magic inside the claimed range means the length is
    // damaged (the chunk is skipped); bytes at `end` that are no magic, with none before, are
    // damage of what follows (reported when the loop gets there).
    const bool ends_well = end == n || (end < n && text.substr(end, 8) == kChunkMagic);
    const size_t next_magic = ends_well ? n : FindChunkMagic(text, off + kTorchChunkHeaderSize);
    if (next_magic < n && next_magic < end) {
      damage(off, next_magic - off,
             "chunk " + std::to_string(index) + "'s length " + std::to_string(valid) +
                 " runs into the next chunk at offset " + std::to_string(next_magic));
      off = next_magic;
      continue;
    }
    if (end > n) {
      damage(off, n - off,
             "chunk " + std::to_string(index) + " of " + std::to_string(valid) +
                 " bytes cut short at the end of the file (truncated tail: the writer stopped "
                 "while writing it)");
      break;
    }
    ++integrity->chunks;
    if (have_prev && index == 0) {
      integrity->Note(file.path + " at offset " + std::to_string(off) +
                      ": chunk index starts again at 0: a later monitor session appended to this "
                      "file (" + kTorchMetaFileName + " describes the last session only)");
    } else if (index > expected) {
      ++integrity->sequence_gaps;
      integrity->missing_chunks += index - expected;
      integrity->Note(file.path + " at offset " + std::to_string(off) + ": chunk index " +
                      std::to_string(index) + " follows " +
                      (have_prev ? std::to_string(expected - 1) : std::string("the file start")) +
                      ": " + std::to_string(index - expected) + " chunk(s) missing");
    } else if (index < expected) {
      integrity->Note(file.path + " at offset " + std::to_string(off) + ": chunk index " +
                      std::to_string(index) + " after " + std::to_string(expected - 1) +
                      " (out of order)");
    }
    have_prev = true;
    expected = index + 1;
    if (approx_ns && unix_ns) {
      pb::Calibration cal;
      auto* s = cal.add_samples();
      s->set_cupti_ns(approx_ns);
      s->set_realtime_ns(unix_ns);
      visitor.OnCalibration(cal);
    }
    // The CUcontext is a pointer and CUPTI's stream id the only per-buffer id; no record count.
    RawBufferPrefix prefix;
    prefix.stream_id = stream_id;
    prefix.record_count = RawBufferPrefix::kUnknownCount;
    const ChunkOrigin at{&file.path, off, index};
    visitor.OnRawBuffer(prefix, bytes.subspan(off + kTorchChunkHeaderSize, valid), at);
    off = static_cast<size_t>(end);
    if (consumed) consumed(off);
    if (visitor.StopReading()) {
      integrity->stopped = true;
      return;
    }
  }
}

void ReadTorchDump(const Recording& recording, ChunkVisitor& visitor, ReadIntegrity* integrity,
                   const ReadProgressFn& progress) {
  uint64_t total = 0, done_before = 0;
  for (const RecordingFile& f : recording.files) total += f.bytes;
  bool header_sent = false, raw_seen = false;
  for (const RecordingFile& file : recording.files) {
    auto mapped = OpenRecordingFile(file, visitor, integrity);
    if (!mapped) continue;
    const bool is_meta = fs::path(file.path).filename() == kTorchMetaFileName;
    if (is_meta) {
      // Read again: the start sample is not in the header, and the file may have changed since.
      auto meta = ParseTorchDumpMeta(mapped->bytes(), file.path);
      if (!meta) {
        ++integrity->unreadable_files;
        integrity->Note(meta.error().message);
      } else if (meta->session_start_approx_ns && meta->session_start_calibrated_unix_ns) {
        pb::Calibration cal;
        auto* s = cal.add_samples();
        s->set_cupti_ns(meta->session_start_approx_ns);
        s->set_realtime_ns(meta->session_start_calibrated_unix_ns);
        visitor.OnCalibration(cal);
      }
      visitor.OnHeader(recording.header, ChunkOrigin{&file.path, 0, 0});
      header_sent = true;
    } else {
      if (!header_sent) visitor.OnHeader(recording.header, ChunkOrigin{&file.path, 0, 0});
      header_sent = raw_seen = true;
      // Pages already read are given back every few MiB, as for cupmon's files.
      constexpr uint64_t kReleaseEvery = 8 << 20;
      uint64_t released = 0;
      ReadTorchRawBytes(mapped->bytes(), file, visitor, integrity, [&](uint64_t consumed) {
        if (consumed >= released + kReleaseEvery) {
          mapped->ReleaseBefore(consumed);
          released = consumed;
        }
        if (progress) progress(done_before + consumed, std::max(total, done_before + consumed));
      });
    }
    // A stopped read (ChunkVisitor::StopReading) reported how far it got: the rest of the file
    // was not read, and is not reported as done.
    if (integrity->stopped) return;
    done_before += mapped->bytes().size();
    if (progress) progress(done_before, std::max(total, done_before));
  }
  if (!raw_seen) {
    ++integrity->missing_files;
    const std::string dir = recording.files.empty()
                                ? std::string(".")
                                : fs::path(recording.files[0].path).parent_path().string();
    integrity->Note((dir.empty() ? std::string(".") : dir) + ": no " + kTorchRawFileName +
                    " (the monitor creates it at start; without it the dump has no records)");
  }
}

namespace {

// The dump's two files, listed together from their directory.
class TorchDumpImporter final : public Importer {
 public:
  bool Claims(const fs::path& file) const override { return IsTorchDumpFileName(file); }
  void List(const std::string& dir, const std::vector<std::string>& /*files*/,
            DirectoryListing* out) const override {
    auto dump = ListTorchDump(dir);
    if (!dump) out->refused.push_back(dump.error().message);
    else if (dump->has_value()) out->recordings.push_back(std::move(**dump));
  }
  void Read(const Recording& recording, ChunkVisitor& visitor, ReadIntegrity* integrity,
            const ReadProgressFn& progress) const override {
    ReadTorchDump(recording, visitor, integrity, progress);
  }
  // The dump holds no host and no pid: its directory names it.
  std::string ProcessName(const Recording& recording) const override {
    const std::string dir = recording.files.empty()
                                ? std::string("?")
                                : fs::path(recording.files[0].path).parent_path().string();
    return "PyTorch dump " + (dir.empty() ? std::string(".") : dir);
  }
};

}  // namespace

const Importer& TorchMonitorDumps() {
  static const TorchDumpImporter importer;
  return importer;
}

std::vector<uint8_t> EncodeTorchMeta(const std::string& json, uint32_t version) {
  uint8_t h[kTorchMetaHeaderSize];
  std::memcpy(h, kTorchMetaMagic, 8);
  PutLe32(h + 8, version);
  PutLe32(h + 12, static_cast<uint32_t>(json.size()));
  std::vector<uint8_t> out(sizeof h + json.size());
  std::memcpy(out.data(), h, sizeof h);
  std::memcpy(out.data() + sizeof h, json.data(), json.size());
  return out;
}

void AppendTorchChunk(const TorchDumpChunk& c, std::vector<uint8_t>* out) {
  uint8_t h[kTorchChunkHeaderSize];
  std::memcpy(h, kTorchChunkMagic, 8);
  PutLe32(h + 8, kTorchDumpVersion);
  PutLe32(h + 12, c.index);
  PutLe32(h + 16, c.stream_id);
  PutLe32(h + 20, static_cast<uint32_t>(c.records.size()));
  PutLe64(h + 24, c.context);
  PutLe64(h + 32, c.approx_ns);
  PutLe64(h + 40, c.unix_ns);
  out->insert(out->end(), h, h + sizeof h);
  out->insert(out->end(), c.records.begin(), c.records.end());
}

}  // namespace cupmon::decoder
