// Frames, encodes and writes one recording's chunk stream into rolling files.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/format/chunk.h"
#include "cupmon/format/raw_codec.h"
#include "cupmon/format/record_sizes.h"
#include "cupmon/format/rolling_file_sink.h"

namespace cupmon {

struct RecordingWriterOptions {
  RollingFileOptions files;
  Encoding encoding = Encoding::kColumnsDeltaZstd;
  int zstd_level = 1;
  // Timestamp and correlation fields by kind, for the footer's chunk index; a raw buffer with a
  // record of a kind not in it is indexed as not timed.
  RecordTimeLayout time_layout;
  // Files with more chunks than this keep no index (Footer.indexed false): it bounds the writer's
  // memory and the footer's size.
  uint32_t max_indexed_chunks = 1u << 16;
};

// The writer side of the format: every chunk goes through here. Single-threaded (the monitor's
// writer thread). Never throws; environment failures (disk full, unwritable directory) are counted
// in stats() and described by last_error(), and the stream carries on with the next chunk.
class RecordingWriter {
 public:
  // `header` is written at the start of every file, with file_index and file_created filled in.
  RecordingWriter(RecordingWriterOptions options, pb::RecordingHeader header,
                  FileSystem& fs = PosixFileSystem(), RollingFileSink::Clock clock = nullptr);
  ~RecordingWriter();

  // Creates the directory and the first file. On error the writer stays usable: later writes try
  // to open a file again, and count a loss while they cannot.
  Expected<void> Open();

  // Writes one CUPTI buffer's valid bytes. Counts records per kind and zero-timestamp records.
  void WriteRawBuffer(std::span<const uint8_t> valid, uint32_t context_id, uint32_t stream_id,
                      uint32_t flags = 0);
  // Adds strings to the table (written now, and restated at the start of each later file).
  void AddStrings(std::span<const pb::StringEntry> entries);
  void WriteWindowMarker(const pb::WindowMarker& marker);
  void WriteCalibration(const pb::Calibration& calibration);
  // Writes a stats chunk with the current counters (callers may fill monitor counters first).
  void WriteStats(int64_t realtime_ns);
  // Closes the current file with a footer and starts the next.
  void Rotate();
  // Writes the footer (recording_ended=true) and closes. Further writes are ignored.
  void Close(int64_t realtime_ns);

  pb::Stats& stats() { return stats_; }
  const pb::RecordingHeader& header() const { return header_; }
  const std::string& last_error() const { return last_error_; }
  std::string current_file() const { return sink_.current_path(); }
  const RecordSizeTable& sizes() const { return sizes_; }
  // The latest end time (CUPTI ns) among the GPU activity records of the last WriteRawBuffer; 0
  // when it held none with a timestamp.
  uint64_t last_buffer_newest_gpu_end_ns() const { return newest_gpu_end_ns_; }
  // The last two calibration samples written (fewer before two were).
  const pb::Calibration& recent_calibration() const { return recent_calibration_; }

 private:
  void Frame(ChunkType type, Encoding encoding, std::span<const uint8_t> payload,
             uint32_t uncompressed_length, std::vector<uint8_t>* out);
  void FrameMessage(ChunkType type, const google::protobuf::MessageLite& msg,
                    std::vector<uint8_t>* out);
  // Records of one raw buffer by kind, in the order the kinds first appear (few entries).
  using RecordsByKind = std::vector<std::pair<uint32_t, uint64_t>>;
  // Writes one framed chunk, rotating first if needed; assigns its sequence number. `by_kind`
  // (raw buffers only) is what the chunk holds, counted as lost when the write fails.
  void Emit(std::span<uint8_t> chunk, uint64_t records, uint64_t kernel_records,
            const RecordsByKind* by_kind = nullptr, const pb::ChunkSpan* span = nullptr);
  // Adds the chunks of `bytes` (whole framed chunks) at `offset` of the current file to the
  // index; `span` describes a single raw-buffer chunk.
  void Index(std::span<const uint8_t> bytes, uint64_t offset, const pb::ChunkSpan* span);
  // Counts one chunk that will never be on disk, and the records it held (Stats.lost_*).
  void CountLost(const RecordsByKind* records);
  void Stamp(uint8_t* header);
  void StampAll(std::vector<uint8_t>* chunks);
  std::vector<uint8_t> Preamble(uint32_t file_index);
  std::vector<uint8_t> Footer(bool ended);
  void AccountRetired();
  void Fail(const Error& e);

  RecordingWriterOptions options_;
  pb::RecordingHeader header_;
  RecordSizeTable sizes_;
  RollingFileSink sink_;
  RawBufferEncoder encoder_;
  pb::Stats stats_;
  pb::StringTable strings_;  // every string so far, restated in each file's preamble
  pb::Calibration recent_calibration_;  // the last two samples written, restated likewise
  uint64_t sequence_ = 0;
  uint64_t chunks_in_file_ = 0;
  bool closed_ = false;
  std::string last_error_;
  uint64_t newest_gpu_end_ns_ = 0;  // last_buffer_newest_gpu_end_ns()
  RecordsByKind by_kind_;  // the current raw buffer's, reused
  // The current file's chunk index; cleared (and indexed_ false) past max_indexed_chunks.
  std::vector<pb::ChunkSpan> index_;
  bool indexed_ = true;
  std::vector<uint8_t> encoded_;
  std::vector<uint8_t> framed_;
  std::string serialized_;
};

}  // namespace cupmon
