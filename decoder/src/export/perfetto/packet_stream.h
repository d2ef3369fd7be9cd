// The Perfetto export's packets: Trace.packet framing on one packet sequence at a time, the
// sequence's clock, and the packets that describe tracks. Private to the export.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>

#include "export/perfetto/perfetto_protos.h"
#include "export/perfetto/proto_wire.h"

namespace cupmon::decoder::perfetto {

// Writes TracePackets into one buffer and the buffer to `out` once it is large (and at Close).
// A packet is Start, its fields through writer(), Finish; timestamps go through Stamp, on the
// sequence's incremental clock (id 64) that a ClockSnapshot ties to CLOCK_REALTIME, or absolutely
// in CLOCK_REALTIME for a time earlier than the clock's (a row past the builder's reorder bound,
// slices written at End). Single-threaded.
class PacketStream {
 public:
  explicit PacketStream(std::ostream& out) : out_(out) {}
  PacketStream(const PacketStream&) = delete;
  PacketStream& operator=(const PacketStream&) = delete;

  // The packets from here on are of sequence `seq_id`, whose clock is defined by EnsureClock.
  void BeginSequence(uint32_t seq_id) {
    seq_id_ = seq_id;
    clock_ready_ = false;
    clock_now_ = 0;
  }
  uint32_t sequence() const { return seq_id_; }

  // Opens Trace.packet and writes the sequence id.
  void Start() {
    packet_at_ = w_.BeginNested(kTracePacket);
    w_.Varint(kPacketSequenceId, seq_id_);
  }
  proto_wire::Writer& writer() { return w_; }
  // Closes the packet; writes the buffer out once it is large.
  void Finish() {
    w_.EndNested(packet_at_);
    ++packets_;
    if (w_.size() >= kFlushAt) Flush();
  }
  // Before the sequence's first timed packet: the ClockSnapshot that starts its clock at `t`.
  void EnsureClock(int64_t t) {
    if (!clock_ready_) WriteClockSnapshot(t);
  }
  // TracePacket.timestamp for time `t`, in the open packet.
  void Stamp(int64_t t) {
    if (t >= clock_now_) {
      w_.Varint(kPacketTimestamp, static_cast<uint64_t>(t - clock_now_));
      clock_now_ = t;
    } else {
      // Earlier than a packet already written: the incremental clock cannot go back.
      w_.Int64(kPacketTimestamp, t);
      w_.Varint(kPacketTimestampClockId, kClockRealtime);
    }
  }
  // A slice's TYPE_SLICE_END on `track` at `t`.
  void WriteSliceEnd(int64_t t, uint64_t track) {
    Start();
    // No SEQ_NEEDS_INCREMENTAL_STATE here (2 bytes of every end): an end names no interned
    // data, and its sequence's state is never lost in a file (the flag only lets a reader drop
    // packets after a loss).
    Stamp(t);
    const size_t at = w_.BeginNested(kPacketTrackEvent);
    w_.Varint(kEventType, kSliceEnd);
    w_.Varint(kEventTrackUuid, track);
    w_.EndNested(at);
    Finish();
  }

  // TrackDescriptor packets: a process, a thread, a track under `parent`, a counter track in
  // bytes under `parent`.
  void WriteProcessTrack(uint64_t uuid, uint32_t pid, const std::string& name);
  void WriteThreadTrack(uint64_t uuid, uint32_t pid, uint32_t tid, const std::string& name);
  void WriteTrack(uint64_t uuid, uint64_t parent, const std::string& name,
                  const std::string& description = {});
  void WriteBytesCounterTrack(uint64_t uuid, uint64_t parent, const std::string& name);

  // Writes what is buffered and flushes `out`.
  void Close();
  bool Failed() const { return out_.fail(); }
  uint64_t packets() const { return packets_; }

 private:
  static constexpr size_t kFlushAt = 1 << 20;

  void WriteClockSnapshot(int64_t t);
  void Flush();

  std::ostream& out_;
  proto_wire::Writer w_;
  size_t packet_at_ = 0;
  uint64_t packets_ = 0;
  uint32_t seq_id_ = 0;
  bool clock_ready_ = false;
  int64_t clock_now_ = 0;  // the incremental clock's value after the last packet stamped with it
};

}  // namespace cupmon::decoder::perfetto
