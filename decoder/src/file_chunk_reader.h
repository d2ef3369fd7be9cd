// FileChunkReader: hands one file's chunks to a visitor, from a whole-file scan or from pieces a
// chunk index chose (the ranged read, ranged_read.h); ReadFileBytes and both of cupmon's reads use it.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "chunk_decode_thread.h"
#include "cupmon/decoder/recording_reader.h"

namespace cupmon::decoder {

// Decompresses a message chunk's payload into `scratch` and parses it into `msg`; false with the
// reason in `why` when it cannot.
bool ParseChunkPayload(RawBufferDecoder& codec, const ScannedChunk& c, std::vector<uint8_t>* scratch,
                       google::protobuf::MessageLite* msg, std::string* why);

// Single-threaded: the reading thread. Every count, note and visitor call happens here, in file
// order; a piece's scan and decompression may run ahead on a second thread (ChunkDecodeThread).
class FileChunkReader {
 public:
  // `sequences`: null when chunk sequence numbers are not checked (a ranged read skips chunks).
  // `consumed`, when set, is called after each chunk with the offset the scan got to.
  FileChunkReader(std::span<const uint8_t> bytes, const RecordingFile& file, ChunkVisitor& visitor,
                  ReadIntegrity* integrity, SequenceTracker* sequences,
                  const std::function<void(uint64_t consumed)>& consumed);

  // The chunks found scanning from `start` (a chunk boundary) to `end`, the damage on the way
  // reported as for a whole file. `background`: scan and decompress on a second thread. False
  // when nothing more of the file may be read: the visitor asked to stop (integrity->stopped),
  // or a chunk of a future major version was found (counted and noted).
  bool ReadPiece(uint64_t start, uint64_t end, bool background);
  // One chunk that is not a raw buffer, at `start` (an index entry), ending by `end`. False when
  // the visitor asked to stop.
  bool ReadOne(uint64_t start, uint64_t end);
  // A footer chunk was read.
  bool footer() const { return footer_; }

 private:
  bool Handle(const DecodedChunk& d);
  void ReportDamage(const std::vector<Damage>& damage);

  const std::span<const uint8_t> bytes_;
  const RecordingFile& file_;
  ChunkVisitor& visitor_;
  ReadIntegrity* const integrity_;
  SequenceTracker* const sequences_;
  const std::function<void(uint64_t)>& consumed_;
  ColumnSelection keep_;
  ChunkDecodeThread* current_ = nullptr;  // the piece being read, for a new column selection
  bool footer_ = false;
  bool ended_ = false;
  RawBufferDecoder codec_;  // the other chunk types' protobuf payloads, parsed here
  std::vector<uint8_t> scratch_;
  DecodedChunk one_;
  pb::RecordingHeader header_;
  pb::StringTable strings_;
  pb::WindowMarker marker_;
  pb::Calibration calibration_;
  pb::Stats stats_;
  pb::Footer foot_;
};

}  // namespace cupmon::decoder
