// Reads the dumps of PyTorch's experimental CUPTI monitor (torch.profiler._cupti_monitor): a
// directory holding cupti_monitor_meta.bin (a JSON header) and cupti_monitor_raw_buffers.bin (the
// raw CUPTI buffers, each behind a small chunk header). A dump is listed as one Recording with a
// header made from its metadata, and read through the same ChunkVisitor as cupmon's files, so every
// report decodes it with the record layouts of the CUPTI version the metadata names.
//
// The layouts, read from PyTorch's torch/profiler/_cupti_monitor.py (all little-endian, packed):
//   meta:  struct "<8sII": magic "CUPMMETA", u32 version (2), u32 length; then `length` bytes of
//          JSON (cupti_version, cuda_version, timestamp_mode, session_start_unix_ns,
//          session_start_approx_ns, session_start_calibrated_unix_ns, buffer_size,
//          flush_period_ns, activities, libcupti_path, ...).
//   chunk: struct "<8sIIIIQQQ" (48 bytes): magic "CUPMRBUF", u32 version (2), u32 chunk index
//          (0, 1, ... per monitor session), u32 CUPTI stream id, u32 valid size, u64 CUcontext,
//          u64 approximate-clock time and u64 its unix ns at write time; then `valid size` bytes of
//          the CUPTI buffer exactly as CUPTI filled it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cupmon/decoder/recording_reader.h"

namespace cupmon::decoder {

inline constexpr char kTorchMetaFileName[] = "cupti_monitor_meta.bin";
inline constexpr char kTorchRawFileName[] = "cupti_monitor_raw_buffers.bin";
inline constexpr char kTorchMetaMagic[] = "CUPMMETA";  // 8 bytes, no terminator in the file
inline constexpr char kTorchChunkMagic[] = "CUPMRBUF";
inline constexpr uint32_t kTorchDumpVersion = 2;  // of both the meta header and the chunks
inline constexpr size_t kTorchMetaHeaderSize = 16;
inline constexpr size_t kTorchChunkHeaderSize = 48;

// True for the two file names the monitor writes.
bool IsTorchDumpFileName(const std::filesystem::path& path);

// The metadata file's facts cupmon-decode uses (absent keys read as 0 / empty).
struct TorchDumpMeta {
  uint32_t meta_version = 0;
  uint32_t cupti_version = 0;     // cuptiGetVersion() of the writing libcupti
  std::string cuda_version;       // torch.version.cuda, e.g. "13.0"
  std::string timestamp_mode;     // "approximate_clock": CUPTI's timestamps come from c10's clock
  int64_t session_start_unix_ns = 0;             // time.time_ns() at start
  uint64_t session_start_approx_ns = 0;          // the approximate clock at start
  int64_t session_start_calibrated_unix_ns = 0;  // that value through PyTorch's converter
  uint64_t buffer_size = 0;
  int64_t flush_period_ns = 0;
  std::vector<uint32_t> activities;  // CUpti_ActivityKind values enabled at start
  std::string libcupti_path;
  bool hes_enabled = false;
};

// Parses a metadata file's bytes; the error names `path` and what is wrong (bad magic, another
// version, a length past the end, JSON that does not parse).
Expected<TorchDumpMeta> ParseTorchDumpMeta(std::span<const uint8_t> bytes, const std::string& path);

// The header a dump is decoded with: CUPTI version, runtime version, enabled kinds and process
// start from the metadata; the record sizes of CUPTI 13.0 (the only layouts the decoder has, and
// they apply only when the version is 13.0.x: other versions stop every buffer, with the reason);
// host and pid unknown (the dump does not hold them). `recording_id` names the dump.
pb::RecordingHeader TorchDumpHeader(const TorchDumpMeta& meta, uint64_t recording_id);

// Lists the dump in directory `dir`: nullopt when it holds neither file; an error (refused, with
// the reason) when the metadata file is missing or unreadable, since without it the CUPTI version
// and so the record layouts are unknown (a header is never guessed). A missing raw-buffer file is
// not an error here: the recording has only its metadata and reading it warns.
Expected<std::optional<Recording>> ListTorchDump(const std::string& dir);

// Streams a dump listed by ListTorchDump: OnFile for each file, OnHeader with the recording's
// header, OnCalibration with the metadata's start sample and with each chunk's (approximate
// clock, unix ns) pair, and OnRawBuffer for each chunk. Damage goes to `integrity` as for cupmon
// files (file and offset); reading resynchronises on the next chunk magic.
void ReadTorchDump(const Recording& recording, ChunkVisitor& visitor, ReadIntegrity* integrity,
                   const ReadProgressFn& progress = {});

// Streams the chunks of a raw-buffer file's bytes (ReadTorchDump and the fuzzer call it).
// `consumed`, when set, is called after each chunk with the offset read up to.
void ReadTorchRawBytes(std::span<const uint8_t> bytes, const RecordingFile& file,
                       ChunkVisitor& visitor, ReadIntegrity* integrity,
                       const std::function<void(uint64_t consumed)>& consumed = {});

// Writes a dump the way the monitor does (tests and tools that build dumps from raw CUPTI bytes).
struct TorchDumpChunk {
  uint32_t index = 0;
  uint32_t stream_id = 0;
  uint64_t context = 0;
  uint64_t approx_ns = 0;
  uint64_t unix_ns = 0;
  std::span<const uint8_t> records;
};
std::vector<uint8_t> EncodeTorchMeta(const std::string& json, uint32_t version = kTorchDumpVersion);
void AppendTorchChunk(const TorchDumpChunk& chunk, std::vector<uint8_t>* out);

}  // namespace cupmon::decoder
