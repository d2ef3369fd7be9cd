// The Perfetto export's packets (see packet_stream.h).
#include "export/perfetto/packet_stream.h"

namespace cupmon::decoder::perfetto {

void PacketStream::WriteClockSnapshot(int64_t t) {
  // The sequence's incremental clock starts at the first slice's wall-clock time; REALTIME is
  // the trace's clock, so trace time is wall-clock time on every rank.
  clock_ready_ = true;
  clock_now_ = t;
  Start();
  w_.Int64(kPacketTimestamp, t);
  w_.Varint(kPacketTimestampClockId, kClockRealtime);
  const size_t at = w_.BeginNested(kPacketClockSnapshot);
  size_t c = w_.BeginNested(kSnapshotClocks);
  w_.Varint(kClockId, kClockRealtime);
  w_.Int64(kClockTimestamp, t);
  w_.EndNested(c);
  c = w_.BeginNested(kSnapshotClocks);
  w_.Varint(kClockId, kClockSequence);
  w_.Int64(kClockTimestamp, t);
  w_.Varint(kClockIsIncremental, 1);
  w_.EndNested(c);
  w_.Varint(kSnapshotPrimaryTraceClock, kClockRealtime);
  w_.EndNested(at);
  Finish();
}

void PacketStream::WriteProcessTrack(uint64_t uuid, uint32_t pid, const std::string& name) {
  Start();
  const size_t at = w_.BeginNested(kPacketTrackDescriptor);
  w_.Varint(kTrackUuid, uuid);
  const size_t p = w_.BeginNested(kTrackProcess);
  w_.Varint(kProcessPid, pid);
  w_.Bytes(kProcessName, name);
  w_.EndNested(p);
  w_.EndNested(at);
  Finish();
}

void PacketStream::WriteThreadTrack(uint64_t uuid, uint32_t pid, uint32_t tid,
                                    const std::string& name) {
  Start();
  const size_t at = w_.BeginNested(kPacketTrackDescriptor);
  w_.Varint(kTrackUuid, uuid);
  const size_t t = w_.BeginNested(kTrackThread);
  w_.Varint(kThreadPid, pid);
  w_.Varint(kThreadTid, tid);
  w_.Bytes(kThreadName, name);
  w_.EndNested(t);
  w_.EndNested(at);
  Finish();
}

void PacketStream::WriteTrack(uint64_t uuid, uint64_t parent, const std::string& name,
                              const std::string& description) {
  Start();
  const size_t at = w_.BeginNested(kPacketTrackDescriptor);
  w_.Varint(kTrackUuid, uuid);
  w_.Varint(kTrackParentUuid, parent);
  w_.Bytes(kTrackName, name);
  if (!description.empty()) w_.Bytes(kTrackDescription, description);
  w_.EndNested(at);
  Finish();
}

void PacketStream::WriteBytesCounterTrack(uint64_t uuid, uint64_t parent, const std::string& name) {
  Start();
  const size_t at = w_.BeginNested(kPacketTrackDescriptor);
  w_.Varint(kTrackUuid, uuid);
  w_.Varint(kTrackParentUuid, parent);
  w_.Bytes(kTrackName, name);
  const size_t c = w_.BeginNested(kTrackCounter);
  w_.Varint(kCounterUnit, kUnitSizeBytes);
  w_.EndNested(c);
  w_.EndNested(at);
  Finish();
}

void PacketStream::Flush() {
  out_.write(reinterpret_cast<const char*>(w_.data()), static_cast<std::streamsize>(w_.size()));
  w_.Clear();
}

void PacketStream::Close() {
  if (w_.size()) Flush();
  w_.Clear();
  out_.flush();
}

}  // namespace cupmon::decoder::perfetto
