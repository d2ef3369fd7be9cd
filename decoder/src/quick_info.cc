// info --quick: footers only.
#include "cupmon/decoder/quick_info.h"

#include <algorithm>

#include "cupmon/decoder/clock_map.h"
#include "cupmon/format/chunk_scanner.h"
#include "cupmon/format/raw_codec.h"
#include "text/utc_time.h"

namespace cupmon::decoder {

QuickRecording ReadQuick(const Recording& recording) {
  QuickRecording q;
  q.recording = &recording;
  ClockMap clock;
  uint64_t lo = UINT64_MAX, hi = 0;
  RawBufferDecoder codec;
  std::vector<uint8_t> scratch;
  for (const RecordingFile& rf : recording.files) {
    QuickFile f;
    f.path = rf.path;
    f.bytes = rf.bytes;
    auto mapped = MappedFile::Open(rf.path);
    if (!mapped) {
      f.no_footer = mapped.error().message;
      q.files.push_back(std::move(f));
      continue;
    }
    const auto chunk = ChunkScanner::FindFooter(mapped->bytes());
    pb::Footer footer;
    if (!chunk) {
      f.no_footer = "no footer (cut by a crash or a full disk, still being written, or damaged)";
    } else if (auto r = codec.Decode(chunk->header.encoding, chunk->payload,
                                     chunk->header.uncompressed_length, &scratch);
               !r || !footer.ParseFromArray(scratch.data(), static_cast<int>(scratch.size()))) {
      f.no_footer = "footer does not decode";
    } else {
      f.footer = true;
      f.ended = footer.recording_ended();
      f.indexed = footer.indexed();
      f.chunks = footer.chunks();
      f.records = footer.records();
      uint64_t flo = UINT64_MAX, fhi = 0;
      for (const pb::ChunkSpan& e : footer.index()) {
        if (e.type() != static_cast<uint32_t>(ChunkType::kRawBuffer)) continue;
        ++f.raw_chunks;
        if (!e.timed()) {
          ++f.untimed_raw_chunks;
          continue;
        }
        flo = std::min<uint64_t>(flo, e.min_ns());
        fhi = std::max<uint64_t>(fhi, e.max_ns());
      }
      if (fhi) {
        f.min_ns = flo;
        f.max_ns = fhi;
        lo = std::min(lo, flo);
        hi = std::max(hi, fhi);
      }
      clock.Add(footer.calibration());
      q.stats = footer.stats();
      q.have_stats = true;
    }
    q.files.push_back(std::move(f));
  }
  if (hi && clock.calibrated()) {
    q.first_wall_ns = clock.ToWall(lo);
    q.last_wall_ns = clock.ToWall(hi);
  }
  return q;
}

void PrintQuickInfo(const std::vector<QuickRecording>& recordings, std::ostream& out) {
  for (const QuickRecording& q : recordings) {
    const pb::RecordingHeader& h = q.recording->header;
    out << "recording " << h.host() << " pid " << h.pid();
    if (h.has_rank()) out << " rank " << h.rank();
    out << "\n";
    uint64_t bytes = 0, records = 0, with_footer = 0, indexed = 0, raw = 0, untimed = 0;
    for (const QuickFile& f : q.files) {
      bytes += f.bytes;
      records += f.records;
      with_footer += f.footer;
      indexed += f.indexed;
      raw += f.raw_chunks;
      untimed += f.untimed_raw_chunks;
    }
    out << "  files: " << q.files.size() << " (" << bytes << " bytes); with a footer: "
        << with_footer << ", indexed: " << indexed << "\n";
    out << "  records in files with a footer: " << records << "\n";
    out << "  raw-buffer chunks indexed: " << raw << " (" << untimed << " not placed in time)\n";
    if (q.first_wall_ns)
      out << "  indexed records from " << UtcTime(q.first_wall_ns, 6) << " to "
          << UtcTime(q.last_wall_ns, 6) << "\n";
    else if (with_footer > 0 && indexed == 0)
      out << "  time span: not in the footers (no chunk index: files written before it)\n";
    if (q.have_stats) {
      const pb::Stats& s = q.stats;
      out << "  last footer's stats: " << s.records() << " records, " << s.kernel_records()
          << " kernels, " << s.dropped_records() << " dropped by CUPTI, " << s.lost_records()
          << " lost by the writer, " << s.records_deleted() << " deleted by retention ("
          << s.files_deleted() << " files), " << s.cupti_gaps() << " takeover gaps, "
          << s.cupti_behind() << " CUPTI-behind intervals\n";
    }
    for (const QuickFile& f : q.files)
      if (!f.footer) out << "  " << f.path << ": " << f.no_footer << "\n";
  }
  out << "quick: footers only. Not read: the chunks themselves, so no integrity check (damage, "
         "chunk sequence), no records of files without a footer, no per-kind counts, windows, "
         "gaps, calibration or accounting balance; plain `cupmon-decode info` reads them all\n";
}

}  // namespace cupmon::decoder
