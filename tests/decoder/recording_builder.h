// TEST DOUBLE: builds synthetic CUPTI-13-layout activity records by hand and writes them through
// cupmon::RecordingWriter with RecordingHeader.synthetic = true. Nothing here comes from a GPU.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "cupmon.pb.h"
#include "cupmon/decoder/record_layout.h"
#include "cupmon/format/recording_writer.h"

namespace cupmon::testing {

using decoder::Field;

inline constexpr uint32_t kTestPid = 4242;
// CUPTI_ACTIVITY_FLAG_MARKER_* values for Marker().
inline constexpr uint32_t kMarkerInstant = 1, kMarkerStart = 2, kMarkerEnd = 4;

// Packs records into one raw CUPTI buffer, using the decoder's CUPTI 13.0 field tables (the
// layout test checks those against the real structs, and builder_test checks the bytes).
class BufferBuilder {
 public:
  // Appends one record of `kind` (size from RecordSizeTable::Cupti13()) with the given fields set
  // and every other byte zero. Kinds without a decoder layout get only their kind field.
  BufferBuilder& Add(uint32_t kind, std::initializer_list<std::pair<Field, uint64_t>> fields);
  // Appends raw bytes (for records of unknown kinds or deliberately bad data).
  BufferBuilder& AddRaw(const std::vector<uint8_t>& bytes);

  BufferBuilder& Kernel(uint64_t start, uint64_t end, uint32_t corr, uint64_t name_ptr,
                        uint32_t stream = 7, uint32_t device = 0);
  BufferBuilder& Memcpy(uint64_t start, uint64_t end, uint32_t corr, uint32_t copy_kind,
                        uint64_t bytes, uint32_t stream = 7);
  BufferBuilder& Memset(uint64_t start, uint64_t end, uint32_t corr, uint64_t bytes,
                        uint32_t stream = 7);
  BufferBuilder& Runtime(uint64_t start, uint64_t end, uint32_t corr, uint32_t cbid,
                         uint32_t tid = 101);
  BufferBuilder& Driver(uint64_t start, uint64_t end, uint32_t corr, uint32_t cbid,
                        uint32_t tid = 101);
  BufferBuilder& External(uint32_t corr, uint64_t external_id);
  // A CUpti_ActivityMarker2 on thread (pid, tid) (objectKind THREAD): `flags` kMarkerStart with
  // the name and domain pointers, kMarkerEnd with the START's id (CUPTI leaves name NULL there),
  // or kMarkerInstant for a mark.
  BufferBuilder& Marker(uint32_t flags, uint64_t timestamp, uint32_t id, uint64_t name_ptr,
                        uint32_t tid = 101, uint64_t domain_ptr = 0, uint32_t pid = kTestPid);

  // A CUpti_ActivityMemory4 (MEMORY2): `op` 1 allocation, 2 release; `memory_kind` a
  // CUpti_ActivityMemoryKind (3 device); pool_type 0 when not from a pool.
  BufferBuilder& Memory(uint32_t op, uint64_t timestamp, uint64_t address, uint64_t bytes,
                        uint32_t device = 0, uint32_t memory_kind = 3, uint32_t stream = 7,
                        uint32_t pool_type = 0, uint64_t pool_address = 0);
  // A CUpti_ActivityMemoryPool3 (MEMORY_POOL): `op` 1 created, 2 destroyed, 3 trimmed.
  BufferBuilder& MemoryPool(uint32_t op, uint64_t timestamp, uint64_t address, uint64_t size,
                            uint32_t device = 0, uint32_t pool_type = 1);

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  // Empties the buffer, keeping its capacity.
  void Clear() {
    bytes_.clear();
    records_ = 0;
  }
  size_t records() const { return records_; }

 private:
  std::vector<uint8_t> bytes_;
  size_t records_ = 0;
};

inline constexpr uint64_t kTestRecordingId = 0x5eed0000c0ffee01ull;
// A fixed CUPTI time origin (2026-01-01T00:00:00Z in ns) so outputs are deterministic.
inline constexpr uint64_t kT0 = 1767225600000000000ull;

// A header for a synthetic recording: CUPTI API 130001, the 13.0 size table, one device,
// synthetic = true (the CUPTI test double wrote it).
pb::RecordingHeader SyntheticHeader(uint64_t recording_id = kTestRecordingId,
                                    uint32_t pid = kTestPid);

RecordingWriterOptions WriterOptions(const std::string& dir, const std::string& prefix = "cupmon-test");

// Writes the small, clean sample recording used by golden tests and tests/data/sample/ into `dir`:
// a window with memcpys, kernels, a memset, a CUDA graph launch (one API call, three kernels), an
// annotation and calibration. Returns the number of raw CUPTI records written.
size_t WriteSampleRecording(const std::string& dir);

// Writes a recording with NVTX ranges into `dir` (tests/decoder/trace_builder_nvtx_test.cc
// describes it): ranges nested two deep on threads 101 and 102, a mark, a range never ended, an
// END with no START, a range whose name pointer has no string entry, and kernels launched inside
// and outside the ranges. Returns the number of raw CUPTI records written.
size_t WriteNvtxRecording(const std::string& dir);

// Writes a recording with device memory records into `dir` (tests/decoder/memory_test.cc checks
// every figure): on device 0 allocations of 1 MiB, 2 MiB, 4 MiB (device memory) and 256 KiB
// (managed), two of them released, one release of an address never allocated, written out of
// time order; on device 1 one 8 MiB allocation and its release; a pool created and trimmed on
// device 0; one kernel and its launch. Returns the number of raw CUPTI records written.
size_t WriteMemoryRecording(const std::string& dir);

}  // namespace cupmon::testing
