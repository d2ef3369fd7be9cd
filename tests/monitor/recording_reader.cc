// Test helper: decodes a recording with the format library only (no decoder dependency).
#include "recording_reader.h"

#include <cupti.h>

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unordered_map>

#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"
#include "cupmon/format/record_sizes.h"

namespace cupmon::testing {

ReadBack ReadRecording(const std::string& dir) {
  ReadBack out;
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".cupmon") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  std::unordered_map<uint64_t, std::string> strings;
  RawBufferDecoder decoder;
  std::vector<uint8_t> raw;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ++out.files;
    ChunkScanner scanner(bytes);
    std::vector<Damage> damage;
    RecordSizeTable sizes;
    while (auto chunk = scanner.Next(&damage)) {
      const auto type = static_cast<ChunkType>(chunk->header.type);
      std::span<const uint8_t> payload = chunk->payload;
      auto message = [&](google::protobuf::MessageLite* m) {
        if (chunk->header.encoding == static_cast<uint8_t>(Encoding::kStored)) {
          return m->ParseFromArray(payload.data(), static_cast<int>(payload.size()));
        }
        if (!decoder.Decode(chunk->header.encoding, payload, chunk->header.uncompressed_length, &raw))
          return false;
        return m->ParseFromArray(raw.data(), static_cast<int>(raw.size()));
      };
      if (type == ChunkType::kMetadata) {
        pb::RecordingHeader h;
        if (!message(&h)) { ++out.decode_errors; continue; }
        if (out.files == 1) out.header = h;
        for (const auto& rs : h.record_sizes()) sizes.Set(rs.kind(), rs.size());
      } else if (type == ChunkType::kStringTable) {
        pb::StringTable t;
        if (!message(&t)) { ++out.decode_errors; continue; }
        for (const auto& e : t.entries()) strings[e.pointer()] = e.text();
      } else if (type == ChunkType::kStats) {
        if (!message(&out.last_stats)) ++out.decode_errors;
      } else if (type == ChunkType::kCalibration) {
        ++out.calibration_chunks;
      } else if (type == ChunkType::kFooter) {
        pb::Footer f;
        if (!message(&f)) { ++out.decode_errors; continue; }
        out.last_stats = f.stats();
        out.have_footer_ended |= f.recording_ended();
      } else if (type == ChunkType::kRawBuffer) {
        if (payload.size() < kRawBufferPrefixSize) { ++out.decode_errors; continue; }
        const RawBufferPrefix prefix = DecodeRawBufferPrefix(payload.data());
        if (!decoder.Decode(chunk->header.encoding, payload.subspan(kRawBufferPrefixSize),
                            chunk->header.uncompressed_length, &raw)) {
          ++out.decode_errors;
          continue;
        }
        const WalkResult walk = WalkRecords(raw, sizes, [&](uint32_t kind, std::span<const uint8_t> r) {
          ++out.records;
          ++out.records_by_kind[kind];
          if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const uint64_t p = GetLe64(r.data() + offsetof(CUpti_ActivityKernel10, name));
            auto it = strings.find(p);
            if (it == strings.end()) ++out.kernels_without_name;
            else ++out.kernels_by_name[it->second];
          } else if (kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            ++out.memcpy_by_copy_kind[r[offsetof(CUpti_ActivityMemcpy6, copyKind)]];
            out.memcpy_bytes += GetLe64(r.data() + offsetof(CUpti_ActivityMemcpy6, bytes));
          } else if (kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            out.memset_bytes += GetLe64(r.data() + offsetof(CUpti_ActivityMemset4, bytes));
          }
        });
        if (!walk.complete || (prefix.record_count != RawBufferPrefix::kUnknownCount &&
                               prefix.record_count != walk.records))
          ++out.decode_errors;
      }
    }
    for (const auto& d : damage) {
      if (d.kind == Damage::Kind::kTruncatedTail) ++out.truncated_tails;
      else ++out.damage;
    }
  }
  return out;
}

}  // namespace cupmon::testing
