// TEST DOUBLE: synthetic CUPTI-13-layout records and recordings (never GPU data).
#include "recording_builder.h"

#include <array>

#include "cupmon/base/check.h"
#include "cupmon/decoder/record_layout.h"
#include "cupmon/format/chunk.h"
#include "cupmon/format/record_sizes.h"

namespace cupmon::testing {

using decoder::FindLayout;

namespace {

// Per kind: the CUPTI 13 size and each field's (offset, width), computed once so that building
// millions of records costs a few stores each (no layout search per record).
struct KindFields {
  uint32_t size = 0;
  bool has_layout = false;
  std::array<std::pair<uint16_t, uint8_t>, decoder::kFieldCount> at{};  // width 0: absent
};

const KindFields& FieldsOf(uint32_t kind) {
  static const auto* table = [] {
    auto* t = new std::array<KindFields, RecordSizeTable::kMaxKind>();
    const RecordSizeTable sizes = RecordSizeTable::Cupti13();
    for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k) {
      KindFields& kf = (*t)[k];
      kf.size = sizes.Size(k);
      const decoder::RecordLayout* layout = FindLayout(k, 130001);
      if (!layout) continue;
      kf.has_layout = true;
      for (const decoder::FieldOffset& f : layout->fields)
        kf.at[static_cast<size_t>(f.field)] = {f.offset, f.width};
    }
    return t;
  }();
  CUPMON_CHECK(kind < RecordSizeTable::kMaxKind);
  return (*table)[kind];
}

}  // namespace

BufferBuilder& BufferBuilder::Add(uint32_t kind,
                                  std::initializer_list<std::pair<Field, uint64_t>> fields) {
  const KindFields& kf = FieldsOf(kind);
  CUPMON_CHECK(kf.size >= 8);
  const size_t at = bytes_.size();
  bytes_.resize(at + kf.size, 0);
  uint8_t* rec = bytes_.data() + at;
  PutLe32(rec, kind);
  for (const auto& [field, value] : fields) {
    CUPMON_CHECK(kf.has_layout);
    const auto [offset, width] = kf.at[static_cast<size_t>(field)];
    CUPMON_CHECK(width != 0);
    for (unsigned i = 0; i < width; ++i) rec[offset + i] = static_cast<uint8_t>(value >> (8 * i));
  }
  ++records_;
  return *this;
}

BufferBuilder& BufferBuilder::AddRaw(const std::vector<uint8_t>& bytes) {
  bytes_.insert(bytes_.end(), bytes.begin(), bytes.end());
  return *this;
}

BufferBuilder& BufferBuilder::Kernel(uint64_t start, uint64_t end, uint32_t corr,
                                     uint64_t name_ptr, uint32_t stream, uint32_t device) {
  return Add(decoder::kKindConcurrentKernel,
             {{Field::kStart, start}, {Field::kEnd, end}, {Field::kCorrelationId, corr},
              {Field::kNamePointer, name_ptr}, {Field::kStreamId, stream},
              {Field::kDeviceId, device}, {Field::kContextId, 1}, {Field::kGridX, 128},
              {Field::kGridY, 1}, {Field::kGridZ, 1}, {Field::kBlockX, 256}, {Field::kBlockY, 1},
              {Field::kBlockZ, 1}, {Field::kRegisters, 32}, {Field::kStaticSharedMemory, 1024},
              {Field::kDynamicSharedMemory, 0}});
}

BufferBuilder& BufferBuilder::Memcpy(uint64_t start, uint64_t end, uint32_t corr,
                                     uint32_t copy_kind, uint64_t bytes, uint32_t stream) {
  return Add(decoder::kKindMemcpy,
             {{Field::kStart, start}, {Field::kEnd, end}, {Field::kCorrelationId, corr},
              {Field::kCopyKind, copy_kind}, {Field::kBytes, bytes}, {Field::kStreamId, stream},
              {Field::kContextId, 1}});
}

BufferBuilder& BufferBuilder::Memset(uint64_t start, uint64_t end, uint32_t corr, uint64_t bytes,
                                     uint32_t stream) {
  return Add(decoder::kKindMemset,
             {{Field::kStart, start}, {Field::kEnd, end}, {Field::kCorrelationId, corr},
              {Field::kBytes, bytes}, {Field::kStreamId, stream}, {Field::kContextId, 1}});
}

BufferBuilder& BufferBuilder::Runtime(uint64_t start, uint64_t end, uint32_t corr, uint32_t cbid,
                                      uint32_t tid) {
  return Add(decoder::kKindRuntime,
             {{Field::kStart, start}, {Field::kEnd, end}, {Field::kCorrelationId, corr},
              {Field::kCbid, cbid}, {Field::kProcessId, kTestPid}, {Field::kThreadId, tid}});
}

BufferBuilder& BufferBuilder::Driver(uint64_t start, uint64_t end, uint32_t corr, uint32_t cbid,
                                     uint32_t tid) {
  return Add(decoder::kKindDriver,
             {{Field::kStart, start}, {Field::kEnd, end}, {Field::kCorrelationId, corr},
              {Field::kCbid, cbid}, {Field::kProcessId, kTestPid}, {Field::kThreadId, tid}});
}

BufferBuilder& BufferBuilder::External(uint32_t corr, uint64_t external_id) {
  return Add(decoder::kKindExternalCorrelation,
             {{Field::kExternalKind, 2 /* CUSTOM0 */}, {Field::kExternalId, external_id},
              {Field::kCorrelationId, corr}});
}

BufferBuilder& BufferBuilder::Memory(uint32_t op, uint64_t timestamp, uint64_t address,
                                     uint64_t bytes, uint32_t device, uint32_t memory_kind,
                                     uint32_t stream, uint32_t pool_type, uint64_t pool_address) {
  return Add(decoder::kKindMemory2,
             {{Field::kMemoryOperation, op}, {Field::kMemoryKind, memory_kind},
              {Field::kAddress, address}, {Field::kBytes, bytes}, {Field::kTimestamp, timestamp},
              {Field::kProcessId, kTestPid}, {Field::kDeviceId, device}, {Field::kContextId, 1},
              {Field::kStreamId, stream}, {Field::kPoolType, pool_type},
              {Field::kPoolAddress, pool_address}});
}

BufferBuilder& BufferBuilder::MemoryPool(uint32_t op, uint64_t timestamp, uint64_t address,
                                         uint64_t size, uint32_t device, uint32_t pool_type) {
  return Add(decoder::kKindMemoryPool,
             {{Field::kMemoryOperation, op}, {Field::kPoolType, pool_type},
              {Field::kProcessId, kTestPid}, {Field::kDeviceId, device}, {Field::kAddress, address},
              {Field::kBytes, size}, {Field::kTimestamp, timestamp}});
}

BufferBuilder& BufferBuilder::Marker(uint32_t flags, uint64_t timestamp, uint32_t id,
                                     uint64_t name_ptr, uint32_t tid, uint64_t domain_ptr,
                                     uint32_t pid) {
  return Add(decoder::kKindMarker,
             {{Field::kMarkerFlags, flags}, {Field::kTimestamp, timestamp}, {Field::kMarkerId, id},
              {Field::kObjectKind, 2 /* CUPTI_ACTIVITY_OBJECT_THREAD */}, {Field::kObjectId0, pid},
              {Field::kObjectId1, tid}, {Field::kNamePointer, name_ptr},
              {Field::kDomainPointer, domain_ptr}});
}

pb::RecordingHeader SyntheticHeader(uint64_t recording_id, uint32_t pid) {
  pb::RecordingHeader h;
  h.set_recording_id(recording_id);
  h.set_host("synthetic-host");
  h.set_pid(pid);
  h.add_command_line("python");
  h.add_command_line("train.py");
  h.set_process_start_unix_ns(static_cast<int64_t>(kT0) - 1'000'000'000);
  h.set_cupti_api_version(130001);
  h.set_cuda_driver_version(13000);
  h.set_cuda_runtime_version(13000);
  auto* d = h.add_devices();
  d->set_id(0);
  d->set_name("Synthetic GPU (test double)");
  d->set_cc_major(9);
  d->set_cc_minor(0);
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k) {
    if (!sizes.Size(k)) continue;
    auto* rs = h.add_record_sizes();
    rs->set_kind(k);
    rs->set_size(sizes.Size(k));
  }
  for (uint32_t k : {1u, 2u, 10u, 22u}) h.add_enabled_kinds(k);
  h.mutable_config()->set_entry_point("test-double");
  h.set_cupmon_version("test");
  h.set_synthetic(true);
  return h;
}

RecordingWriterOptions WriterOptions(const std::string& dir, const std::string& prefix) {
  RecordingWriterOptions o;
  o.files.directory = dir;
  o.files.prefix = prefix;
  o.files.fsync_interval_ms = 0;
  // The chunk index's time fields for the kinds the monitor fills them for (session_facts.cc),
  // from the decoder's 13.0 layouts, which record_layout_test checks against the CUPTI structs.
  for (uint32_t kind : {1u, 2u, 3u, 4u, 5u, 10u, 12u, 17u, 22u, 38u, 49u, 50u}) {
    const decoder::RecordLayout* l = decoder::FindLayout(kind, 130001);
    if (!l) continue;
    RecordTimeFields f;
    for (const decoder::FieldOffset& fo : l->fields) {
      if (fo.field == decoder::Field::kStart || fo.field == decoder::Field::kTimestamp)
        f.start = fo.offset;
      if (fo.field == decoder::Field::kEnd || fo.field == decoder::Field::kTimestamp)
        f.end = fo.offset;
      if (fo.field == decoder::Field::kCorrelationId) f.correlation = fo.offset;
    }
    if (f.start && f.end) o.time_layout.Set(kind, f);
  }
  return o;
}

size_t WriteSampleRecording(const std::string& dir) {
  RecordingWriter w(WriterOptions(dir, "cupmon-sample-4242"), SyntheticHeader());
  CUPMON_CHECK(w.Open().has_value());
  constexpr uint64_t kVecAdd = 0x7f0000001000, kGemm = 0x7f0000002000, kSoftmax = 0x7f0000003000;
  std::vector<pb::StringEntry> strings(4);
  strings[0].set_id(1), strings[0].set_pointer(kVecAdd), strings[0].set_text("_Z6vecAddPKfS0_Pfi");
  strings[1].set_id(2), strings[1].set_pointer(kGemm), strings[1].set_text("_Z10gemm_tiledILi16EEvPKfS1_Pfi");
  strings[2].set_id(3), strings[2].set_pointer(kSoftmax), strings[2].set_text("_ZN5flash14softmax_kernelIfEEvPT_i");
  strings[3].set_id(4), strings[3].set_pointer(7), strings[3].set_text("train_step");  // annotation
  w.AddStrings(strings);

  pb::Calibration cal;
  auto* s0 = cal.add_samples();
  s0->set_cupti_ns(kT0);
  s0->set_realtime_ns(static_cast<int64_t>(kT0) + 2000);  // CUPTI clock 2 us behind wall clock
  s0->set_monotonic_ns(1000);
  w.WriteCalibration(cal);

  pb::WindowMarker begin;
  begin.set_window_id(1);
  begin.set_edge(pb::WindowMarker::BEGIN);
  begin.set_source(pb::TRIGGER_SOCKET);
  begin.set_cupti_ns(kT0 + 1'000);
  begin.set_requested_ms(20);
  w.WriteWindowMarker(begin);

  const uint64_t t = kT0;
  auto us = [](uint64_t n) { return n * 1000; };
  BufferBuilder api;
  api.Runtime(t + us(10), t + us(60), 1, 31)                // cudaMemcpy HtoD
      .External(2, 7).External(3, 7)
      .Runtime(t + us(70), t + us(75), 2, 211)              // cudaLaunchKernel vecAdd
      .Runtime(t + us(80), t + us(84), 3, 211)              // cudaLaunchKernel gemm
      .Runtime(t + us(90), t + us(93), 4, 51)               // cudaMemsetAsync
      .Runtime(t + us(100), t + us(110), 5, 311)            // cudaGraphLaunch: three kernels
      .Driver(t + us(120), t + us(124), 6, 307, 102)        // cuLaunchKernel softmax, other thread
      .Runtime(t + us(130), t + us(400), 7, 165)            // cudaDeviceSynchronize
      .Runtime(t + us(410), t + us(470), 8, 31);            // cudaMemcpy DtoH
  BufferBuilder gpu;
  gpu.Memcpy(t + us(20), t + us(55), 1, 1, 4 << 20)
      .Kernel(t + us(76), t + us(96), 2, kVecAdd)
      .Kernel(t + us(96), t + us(196), 3, kGemm)
      .Memset(t + us(196), t + us(198), 4, 1 << 20)
      .Kernel(t + us(200), t + us(240), 5, kGemm, 8)
      .Kernel(t + us(240), t + us(250), 5, kSoftmax, 8)
      .Kernel(t + us(250), t + us(290), 5, kGemm, 8)
      .Kernel(t + us(300), t + us(330), 6, kSoftmax)
      .Memcpy(t + us(420), t + us(465), 8, 2, 4 << 20);
  w.WriteRawBuffer(gpu.bytes(), 1, 7);
  w.WriteRawBuffer(api.bytes(), 0, 0);

  pb::WindowMarker end = begin;
  end.set_edge(pb::WindowMarker::END);
  end.set_cupti_ns(kT0 + 20'001'000);
  end.set_note("duration");
  w.WriteWindowMarker(end);
  auto* s1 = cal.mutable_samples(0);
  s1->set_cupti_ns(kT0 + 30'000'000);
  s1->set_realtime_ns(static_cast<int64_t>(kT0) + 30'002'000);
  s1->set_monotonic_ns(30'001'000);
  w.WriteCalibration(cal);
  w.WriteStats(static_cast<int64_t>(kT0) + 30'000'000);
  w.Close(static_cast<int64_t>(kT0) + 30'000'000);
  return api.records() + gpu.records();
}

size_t WriteNvtxRecording(const std::string& dir) {
  RecordingWriter w(WriterOptions(dir, "cupmon-nvtx-4242"), SyntheticHeader());
  CUPMON_CHECK(w.Open().has_value());
  constexpr uint64_t kOuter = 0x100, kInner = 0x101, kMark = 0x102, kNever = 0x103;
  constexpr uint64_t kT2Outer = 0x200, kT2Inner = 0x201, kDomain = 0x300, kKernel = 0x400;
  const std::vector<std::pair<uint64_t, std::string>> texts = {
      {kOuter, "outer"},       {kInner, "inner"},       {kMark, "checkpoint"},
      {kNever, "never ended"}, {kT2Outer, "t2 outer"}, {kT2Inner, "t2 inner"},
      {kDomain, "mylib"},      {kKernel, "_Z4gemmv"}};
  std::vector<pb::StringEntry> strings(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    strings[i].set_id(static_cast<uint32_t>(i + 1));
    strings[i].set_pointer(texts[i].first);
    strings[i].set_text(texts[i].second);
  }
  w.AddStrings(strings);
  auto us = [](uint64_t n) { return kT0 + n * 1000; };
  BufferBuilder markers;
  markers.Marker(kMarkerStart, us(10), 1, kOuter)
      .Marker(kMarkerStart, us(20), 2, kInner, 101, kDomain)
      .Marker(kMarkerInstant, us(25), 3, kMark)
      .Marker(kMarkerStart, us(30), 4, kT2Outer, 102)
      .Marker(kMarkerStart, us(35), 5, kT2Inner, 102)
      .Marker(kMarkerEnd, us(50), 2, 0)
      .Marker(kMarkerEnd, us(60), 5, 0, 102)
      .Marker(kMarkerEnd, us(70), 4, 0, 102)
      .Marker(kMarkerEnd, us(80), 1, 0)
      .Marker(kMarkerEnd, us(90), 99, 0)             // no START: begun before the recording
      .Marker(kMarkerStart, us(100), 6, kNever)      // never ended
      .Marker(kMarkerStart, us(105), 7, 0xbad, 102)  // name pointer with no string entry
      .Marker(kMarkerEnd, us(106), 7, 0, 102);
  BufferBuilder api;
  api.Runtime(us(22), us(24), 1, 211)          // inside "inner" on thread 101
      .Runtime(us(32), us(33), 2, 211, 102)    // inside "t2 outer" on thread 102
      .Runtime(us(55), us(56), 3, 211)         // inside "outer" only ("inner" ended at 50)
      .Runtime(us(85), us(86), 4, 211);        // outside every range
  BufferBuilder gpu;
  gpu.Kernel(us(40), us(45), 1, kKernel)
      .Kernel(us(46), us(48), 2, kKernel)
      .Kernel(us(57), us(58), 3, kKernel)
      .Kernel(us(87), us(89), 4, kKernel);
  w.WriteRawBuffer(markers.bytes(), 0, 0);
  w.WriteRawBuffer(api.bytes(), 0, 0);
  w.WriteRawBuffer(gpu.bytes(), 1, 7);
  w.WriteStats(static_cast<int64_t>(kT0) + 1'000'000);
  w.Close(static_cast<int64_t>(kT0) + 1'000'000);
  return markers.records() + api.records() + gpu.records();
}

size_t WriteMemoryRecording(const std::string& dir) {
  RecordingWriter w(WriterOptions(dir, "cupmon-memory-4242"), SyntheticHeader());
  CUPMON_CHECK(w.Open().has_value());
  constexpr uint64_t kKernel = 0x400;
  std::vector<pb::StringEntry> strings(1);
  strings[0].set_id(1);
  strings[0].set_pointer(kKernel);
  strings[0].set_text("_Z4gemmv");
  w.AddStrings(strings);
  auto us = [](uint64_t n) { return kT0 + n * 1000; };
  constexpr uint64_t kMiB = 1 << 20;
  constexpr uint32_t kAlloc = 1, kRelease = 2, kDevice = 3, kManaged = 5;
  BufferBuilder mem;
  // Out of time order on purpose: replayed in delivery order, the release at 50 would come
  // before its allocation at 40 and count as a release of an unknown address.
  mem.MemoryPool(1, us(1), 0x7000'0000, 32 * kMiB)
      .Memory(kAlloc, us(10), 0x1000'0000, 1 * kMiB)
      .Memory(kAlloc, us(20), 0x2000'0000, 2 * kMiB, 0, kDevice, 7, 1, 0x7000'0000)
      .Memory(kRelease, us(50), 0x3000'0000, 4 * kMiB)
      .Memory(kRelease, us(30), 0x1000'0000, 1 * kMiB)
      .Memory(kAlloc, us(40), 0x3000'0000, 4 * kMiB)
      .Memory(kRelease, us(60), 0xdead'0000, 512)  // allocated before the recording began
      .Memory(kAlloc, us(70), 0x4000'0000, 256 * 1024, 0, kManaged)
      .MemoryPool(3, us(80), 0x7000'0000, 16 * kMiB);
  BufferBuilder dev1;
  dev1.Memory(kAlloc, us(15), 0x9000'0000, 8 * kMiB, 1)
      .Memory(kRelease, us(35), 0x9000'0000, 8 * kMiB, 1);
  BufferBuilder api;
  api.Runtime(us(11), us(12), 1, 211);
  BufferBuilder gpu;
  gpu.Kernel(us(12), us(14), 1, kKernel);
  w.WriteRawBuffer(api.bytes(), 0, 0);
  w.WriteRawBuffer(mem.bytes(), 0, 0);
  w.WriteRawBuffer(dev1.bytes(), 0, 0);
  w.WriteRawBuffer(gpu.bytes(), 1, 7);
  w.WriteStats(static_cast<int64_t>(kT0) + 1'000'000);
  w.Close(static_cast<int64_t>(kT0) + 1'000'000);
  return mem.records() + dev1.records() + api.records() + gpu.records();
}

}  // namespace cupmon::testing
