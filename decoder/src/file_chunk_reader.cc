// FileChunkReader and the reads of one file's bytes that use it (file_chunk_reader.h).
#include "file_chunk_reader.h"

#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"

namespace cupmon::decoder {

bool ParseChunkPayload(RawBufferDecoder& codec, const ScannedChunk& c, std::vector<uint8_t>* scratch,
                       google::protobuf::MessageLite* msg, std::string* why) {
  auto r = codec.Decode(c.header.encoding, c.payload, c.header.uncompressed_length, scratch);
  if (!r) {
    *why = r.error().message;
    return false;
  }
  if (!msg->ParseFromArray(scratch->data(), static_cast<int>(scratch->size()))) {
    *why = "protobuf payload does not parse";
    return false;
  }
  return true;
}

FileChunkReader::FileChunkReader(std::span<const uint8_t> bytes, const RecordingFile& file,
                                 ChunkVisitor& visitor, ReadIntegrity* integrity,
                                 SequenceTracker* sequences,
                                 const std::function<void(uint64_t consumed)>& consumed)
    : bytes_(bytes),
      file_(file),
      visitor_(visitor),
      integrity_(integrity),
      sequences_(sequences),
      consumed_(consumed) {}

void FileChunkReader::ReportDamage(const std::vector<Damage>& damage) {
  for (const Damage& d : damage) {
    ++integrity_->damaged_ranges;
    integrity_->damaged_bytes += d.skipped_bytes;
    integrity_->Note(file_.path + " at offset " + std::to_string(d.offset) + ": " + d.what +
                     " (" + std::to_string(d.skipped_bytes) + " bytes skipped" +
                     (d.kind == Damage::Kind::kTruncatedTail ? ", truncated tail)" : ")"));
  }
}

bool FileChunkReader::ReadPiece(uint64_t start, uint64_t end, bool background) {
  // Scan, checksums and decompression run ahead on a second thread when there is one; everything
  // that counts, notes or calls the visitor stays here, in file order, so the messages and counts
  // are those of the single-threaded read.
  // A visitor that reads only some words of each record gets a partial columnar inverse.
  const bool partial = visitor_.RecordWordsRead(&keep_);
  ChunkDecodeThread chunks(bytes_.subspan(0, end), background, partial ? &keep_ : nullptr, start);
  current_ = &chunks;
  for (;;) {
    const DecodedChunk& d = chunks.Next();
    ReportDamage(d.damage);
    if (d.end) {
      if (d.future_major) {
        ++integrity_->unreadable_files;
        integrity_->Note(file_.path + " at offset " + std::to_string(d.position) +
                         ": format major version " + std::to_string(d.future_major) +
                         " is newer than this decoder; rest of file not read");
        ended_ = true;
      }
      break;
    }
    if (!Handle(d)) {
      current_ = nullptr;
      return false;
    }
  }
  current_ = nullptr;
  return !ended_;
}

bool FileChunkReader::ReadOne(uint64_t start, std::span<const uint8_t> piece) {
  // Scanned as a file of its own; its offsets are moved to the file's.
  ChunkScanner scanner(piece);
  one_.damage.clear();
  auto c = scanner.Next(&one_.damage);
  for (Damage& d : one_.damage) d.offset += start;
  ReportDamage(one_.damage);
  one_.damage.clear();
  if (!c) return true;  // damage where the index said a chunk starts: reported above
  one_.chunk = *c;
  one_.chunk.offset += start;
  one_.position = start + scanner.position();
  return Handle(one_);
}

bool FileChunkReader::Handle(const DecodedChunk& d) {
  const ScannedChunk* c = &d.chunk;
  ++integrity_->chunks;
  const ChunkOrigin at{&file_.path, c->offset, c->header.sequence};
  if (sequences_ && !sequences_->Add(c->header.sequence)) {
    integrity_->Note(file_.path + " at offset " + std::to_string(c->offset) + ": chunk sequence " +
                     std::to_string(c->header.sequence) + " seen twice");
  }
  std::string why;
  auto undecodable = [&] {
    ++integrity_->undecodable_chunks;
    integrity_->Note(file_.path + " at offset " + std::to_string(c->offset) + ": " +
                     ChunkTypeName(c->header.type) + " chunk cannot be decoded: " + why);
  };
  switch (static_cast<ChunkType>(c->header.type)) {
    case ChunkType::kMetadata:
      if (ParseChunkPayload(codec_, *c, &scratch_, &header_, &why)) {
        visitor_.OnHeader(header_, at);
        if (visitor_.RecordWordsRead(&keep_) && current_) current_->SetColumnSelection(keep_);
      } else {
        undecodable();
      }
      break;
    case ChunkType::kRawBuffer:
      if (d.short_prefix) {
        why = "payload shorter than the raw-buffer prefix";
        undecodable();
      } else if (!d.decode_error.empty()) {
        why = d.decode_error;
        undecodable();
      } else {
        if (d.packed) visitor_.OnPackedRawBuffer(d.prefix, d.records, d.packed_with, at);
        else visitor_.OnRawBuffer(d.prefix, d.records, at);
      }
      break;
    case ChunkType::kStringTable:
      if (ParseChunkPayload(codec_, *c, &scratch_, &strings_, &why)) visitor_.OnStrings(strings_);
      else undecodable();
      break;
    case ChunkType::kWindowMarker:
      if (ParseChunkPayload(codec_, *c, &scratch_, &marker_, &why)) visitor_.OnWindowMarker(marker_);
      else undecodable();
      break;
    case ChunkType::kStats:
      if (ParseChunkPayload(codec_, *c, &scratch_, &stats_, &why)) visitor_.OnStats(stats_);
      else undecodable();
      break;
    case ChunkType::kCalibration:
      if (ParseChunkPayload(codec_, *c, &scratch_, &calibration_, &why))
        visitor_.OnCalibration(calibration_);
      else
        undecodable();
      break;
    case ChunkType::kFooter:
      if (ParseChunkPayload(codec_, *c, &scratch_, &foot_, &why)) {
        footer_ = true;
        visitor_.OnFooter(foot_);
      } else {
        undecodable();
      }
      break;
    default:
      // FORMAT.md: a reader skips chunk types it does not know, and counts them.
      ++integrity_->unknown_chunk_types;
      integrity_->Note(file_.path + " at offset " + std::to_string(c->offset) +
                       ": unknown chunk type " + std::to_string(c->header.type) + " skipped");
      break;
  }
  if (consumed_) consumed_(d.position);
  if (visitor_.StopReading()) {
    integrity_->stopped = true;
    return false;  // the rest of the file is not read, so its footer is not missing
  }
  return true;
}

void ReadFileBytes(std::span<const uint8_t> bytes, const RecordingFile& file, ChunkVisitor& visitor,
                   ReadIntegrity* integrity, SequenceTracker* sequences,
                   const std::function<void(uint64_t consumed)>& consumed) {
  FileChunkReader reader(bytes, file, visitor, integrity, sequences, consumed);
  if (!reader.ReadPiece(0, bytes.size(), DecodeThreads() >= 2) && integrity->stopped) return;
  if (!reader.footer()) ++integrity->files_without_footer;
}

}  // namespace cupmon::decoder
