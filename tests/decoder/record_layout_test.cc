// Checks the decoder's CUPTI field tables: against offsetof/sizeof of the toolkit's structs when
// its headers are present, and the stop/skip rules of RecordDecoder everywhere.
#include "cupmon/decoder/record_layout.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <map>

#include "recording_builder.h"

#ifdef CUPMON_HAVE_CUDA_HEADERS
#include <cupti_activity.h>
#include <cupti_version.h>
#endif

namespace cupmon::decoder {
namespace {

using testing::BufferBuilder;

#ifdef CUPMON_HAVE_CUDA_HEADERS
struct Expect {
  size_t offset, width;
};
#define CUPMON_FIELD(S, f) Expect{offsetof(S, f), sizeof(S::f)}

std::map<Field, Expect> RealFields(const std::string& s) {
  using K = CUpti_ActivityKernel10;
  using M = CUpti_ActivityMemcpy6;
  using P = CUpti_ActivityMemcpyPtoP4;
  using S = CUpti_ActivityMemset4;
  using A = CUpti_ActivityAPI;
  using O = CUpti_ActivityOverhead3;
  using Y = CUpti_ActivitySynchronization2;
  using E = CUpti_ActivityCudaEvent2;
  using X = CUpti_ActivityExternalCorrelation;
  using R = CUpti_ActivityMarker2;
  using N = CUpti_ActivityName;
  const size_t pid = offsetof(CUpti_ActivityObjectKindId, pt.processId);
  const size_t tid = offsetof(CUpti_ActivityObjectKindId, pt.threadId);
  if (s == "CUpti_ActivityKernel10")
    return {{Field::kRegisters, CUPMON_FIELD(K, registersPerThread)}, {Field::kStart, CUPMON_FIELD(K, start)},
            {Field::kEnd, CUPMON_FIELD(K, end)}, {Field::kDeviceId, CUPMON_FIELD(K, deviceId)},
            {Field::kContextId, CUPMON_FIELD(K, contextId)}, {Field::kStreamId, CUPMON_FIELD(K, streamId)},
            {Field::kGridX, CUPMON_FIELD(K, gridX)}, {Field::kGridY, CUPMON_FIELD(K, gridY)},
            {Field::kGridZ, CUPMON_FIELD(K, gridZ)}, {Field::kBlockX, CUPMON_FIELD(K, blockX)},
            {Field::kBlockY, CUPMON_FIELD(K, blockY)}, {Field::kBlockZ, CUPMON_FIELD(K, blockZ)},
            {Field::kStaticSharedMemory, CUPMON_FIELD(K, staticSharedMemory)},
            {Field::kDynamicSharedMemory, CUPMON_FIELD(K, dynamicSharedMemory)},
            {Field::kCorrelationId, CUPMON_FIELD(K, correlationId)}, {Field::kNamePointer, CUPMON_FIELD(K, name)},
            {Field::kGraphId, CUPMON_FIELD(K, graphId)}};
  if (s == "CUpti_ActivityMemcpy6")
    return {{Field::kCopyKind, CUPMON_FIELD(M, copyKind)}, {Field::kSrcKind, CUPMON_FIELD(M, srcKind)},
            {Field::kDstKind, CUPMON_FIELD(M, dstKind)}, {Field::kBytes, CUPMON_FIELD(M, bytes)},
            {Field::kStart, CUPMON_FIELD(M, start)}, {Field::kEnd, CUPMON_FIELD(M, end)},
            {Field::kDeviceId, CUPMON_FIELD(M, deviceId)}, {Field::kContextId, CUPMON_FIELD(M, contextId)},
            {Field::kStreamId, CUPMON_FIELD(M, streamId)}, {Field::kCorrelationId, CUPMON_FIELD(M, correlationId)},
            {Field::kGraphId, CUPMON_FIELD(M, graphId)}};
  if (s == "CUpti_ActivityMemcpyPtoP4")
    return {{Field::kCopyKind, CUPMON_FIELD(P, copyKind)}, {Field::kSrcKind, CUPMON_FIELD(P, srcKind)},
            {Field::kDstKind, CUPMON_FIELD(P, dstKind)}, {Field::kBytes, CUPMON_FIELD(P, bytes)},
            {Field::kStart, CUPMON_FIELD(P, start)}, {Field::kEnd, CUPMON_FIELD(P, end)},
            {Field::kDeviceId, CUPMON_FIELD(P, deviceId)}, {Field::kContextId, CUPMON_FIELD(P, contextId)},
            {Field::kStreamId, CUPMON_FIELD(P, streamId)}, {Field::kSrcDeviceId, CUPMON_FIELD(P, srcDeviceId)},
            {Field::kDstDeviceId, CUPMON_FIELD(P, dstDeviceId)},
            {Field::kCorrelationId, CUPMON_FIELD(P, correlationId)}, {Field::kGraphId, CUPMON_FIELD(P, graphId)}};
  if (s == "CUpti_ActivityMemset4")
    return {{Field::kMemsetValue, CUPMON_FIELD(S, value)}, {Field::kBytes, CUPMON_FIELD(S, bytes)},
            {Field::kStart, CUPMON_FIELD(S, start)}, {Field::kEnd, CUPMON_FIELD(S, end)},
            {Field::kDeviceId, CUPMON_FIELD(S, deviceId)}, {Field::kContextId, CUPMON_FIELD(S, contextId)},
            {Field::kStreamId, CUPMON_FIELD(S, streamId)}, {Field::kCorrelationId, CUPMON_FIELD(S, correlationId)},
            {Field::kGraphId, CUPMON_FIELD(S, graphId)}};
  if (s == "CUpti_ActivityAPI")
    return {{Field::kCbid, CUPMON_FIELD(A, cbid)}, {Field::kStart, CUPMON_FIELD(A, start)},
            {Field::kEnd, CUPMON_FIELD(A, end)}, {Field::kProcessId, CUPMON_FIELD(A, processId)},
            {Field::kThreadId, CUPMON_FIELD(A, threadId)}, {Field::kCorrelationId, CUPMON_FIELD(A, correlationId)},
            {Field::kReturnValue, CUPMON_FIELD(A, returnValue)}};
  if (s == "CUpti_ActivityOverhead3")
    return {{Field::kOverheadKind, CUPMON_FIELD(O, overheadKind)}, {Field::kObjectKind, CUPMON_FIELD(O, objectKind)},
            {Field::kObjectId0, Expect{offsetof(O, objectId) + pid, 4}},
            {Field::kObjectId1, Expect{offsetof(O, objectId) + tid, 4}},
            {Field::kStart, CUPMON_FIELD(O, start)}, {Field::kEnd, CUPMON_FIELD(O, end)},
            {Field::kCorrelationId, CUPMON_FIELD(O, correlationId)}};
  if (s == "CUpti_ActivitySynchronization2")
    return {{Field::kSyncType, CUPMON_FIELD(Y, type)}, {Field::kStart, CUPMON_FIELD(Y, start)},
            {Field::kEnd, CUPMON_FIELD(Y, end)}, {Field::kCorrelationId, CUPMON_FIELD(Y, correlationId)},
            {Field::kContextId, CUPMON_FIELD(Y, contextId)}, {Field::kStreamId, CUPMON_FIELD(Y, streamId)},
            {Field::kEventId, CUPMON_FIELD(Y, cudaEventId)}, {Field::kEventSyncId, CUPMON_FIELD(Y, cudaEventSyncId)},
            {Field::kReturnValue, CUPMON_FIELD(Y, returnValue)}};
  if (s == "CUpti_ActivityCudaEvent2")
    return {{Field::kCorrelationId, CUPMON_FIELD(E, correlationId)}, {Field::kContextId, CUPMON_FIELD(E, contextId)},
            {Field::kStreamId, CUPMON_FIELD(E, streamId)}, {Field::kEventId, CUPMON_FIELD(E, eventId)},
            {Field::kDeviceId, CUPMON_FIELD(E, deviceId)}, {Field::kTimestamp, CUPMON_FIELD(E, deviceTimestamp)},
            {Field::kEventSyncId, CUPMON_FIELD(E, cudaEventSyncId)}};
  if (s == "CUpti_ActivityExternalCorrelation")
    return {{Field::kExternalKind, CUPMON_FIELD(X, externalKind)}, {Field::kExternalId, CUPMON_FIELD(X, externalId)},
            {Field::kCorrelationId, CUPMON_FIELD(X, correlationId)}};
  if (s == "CUpti_ActivityMarker2")
    return {{Field::kMarkerFlags, CUPMON_FIELD(R, flags)}, {Field::kTimestamp, CUPMON_FIELD(R, timestamp)},
            {Field::kMarkerId, CUPMON_FIELD(R, id)}, {Field::kObjectKind, CUPMON_FIELD(R, objectKind)},
            {Field::kObjectId0, Expect{offsetof(R, objectId) + pid, 4}},
            {Field::kObjectId1, Expect{offsetof(R, objectId) + tid, 4}},
            {Field::kNamePointer, CUPMON_FIELD(R, name)}, {Field::kDomainPointer, CUPMON_FIELD(R, domain)}};
  if (s == "CUpti_ActivityName")
    return {{Field::kObjectKind, CUPMON_FIELD(N, objectKind)},
            {Field::kObjectId0, Expect{offsetof(N, objectId) + pid, 4}},
            {Field::kObjectId1, Expect{offsetof(N, objectId) + tid, 4}},
            {Field::kNamePointer, CUPMON_FIELD(N, name)}};
  using M4 = CUpti_ActivityMemory4;
  using MP = CUpti_ActivityMemoryPool3;
  if (s == "CUpti_ActivityMemory4")
    return {{Field::kMemoryOperation, CUPMON_FIELD(M4, memoryOperationType)},
            {Field::kMemoryKind, CUPMON_FIELD(M4, memoryKind)},
            {Field::kCorrelationId, CUPMON_FIELD(M4, correlationId)},
            {Field::kAddress, CUPMON_FIELD(M4, address)}, {Field::kBytes, CUPMON_FIELD(M4, bytes)},
            {Field::kTimestamp, CUPMON_FIELD(M4, timestamp)},
            {Field::kProcessId, CUPMON_FIELD(M4, processId)},
            {Field::kDeviceId, CUPMON_FIELD(M4, deviceId)},
            {Field::kContextId, CUPMON_FIELD(M4, contextId)},
            {Field::kStreamId, CUPMON_FIELD(M4, streamId)},
            {Field::kPoolType, Expect{offsetof(M4, memoryPoolConfig.memoryPoolType),
                                      sizeof(M4{}.memoryPoolConfig.memoryPoolType)}},
            {Field::kPoolAddress, Expect{offsetof(M4, memoryPoolConfig.address),
                                         sizeof(M4{}.memoryPoolConfig.address)}}};
  if (s == "CUpti_ActivityMemoryPool3")
    return {{Field::kMemoryOperation, CUPMON_FIELD(MP, memoryPoolOperationType)},
            {Field::kPoolType, CUPMON_FIELD(MP, memoryPoolType)},
            {Field::kCorrelationId, CUPMON_FIELD(MP, correlationId)},
            {Field::kProcessId, CUPMON_FIELD(MP, processId)},
            {Field::kDeviceId, CUPMON_FIELD(MP, deviceId)},
            {Field::kAddress, CUPMON_FIELD(MP, address)}, {Field::kBytes, CUPMON_FIELD(MP, size)},
            {Field::kTimestamp, CUPMON_FIELD(MP, timestamp)}};
  return {};
}

size_t RealSize(const std::string& s) {
  if (s == "CUpti_ActivityKernel10") return sizeof(CUpti_ActivityKernel10);
  if (s == "CUpti_ActivityMemcpy6") return sizeof(CUpti_ActivityMemcpy6);
  if (s == "CUpti_ActivityMemcpyPtoP4") return sizeof(CUpti_ActivityMemcpyPtoP4);
  if (s == "CUpti_ActivityMemset4") return sizeof(CUpti_ActivityMemset4);
  if (s == "CUpti_ActivityAPI") return sizeof(CUpti_ActivityAPI);
  if (s == "CUpti_ActivityOverhead3") return sizeof(CUpti_ActivityOverhead3);
  if (s == "CUpti_ActivitySynchronization2") return sizeof(CUpti_ActivitySynchronization2);
  if (s == "CUpti_ActivityCudaEvent2") return sizeof(CUpti_ActivityCudaEvent2);
  if (s == "CUpti_ActivityExternalCorrelation") return sizeof(CUpti_ActivityExternalCorrelation);
  if (s == "CUpti_ActivityMarker2") return sizeof(CUpti_ActivityMarker2);
  if (s == "CUpti_ActivityName") return sizeof(CUpti_ActivityName);
  if (s == "CUpti_ActivityMemory4") return sizeof(CUpti_ActivityMemory4);
  if (s == "CUpti_ActivityMemoryPool3") return sizeof(CUpti_ActivityMemoryPool3);
  return 0;
}

TEST(RecordLayoutTest, EveryOffsetMatchesTheToolkitStructs) {
  ASSERT_EQ(CUPTI_API_VERSION, 130001) << "layouts were written for CUPTI 13.0";
  for (const RecordLayout& l : AllLayouts()) {
    SCOPED_TRACE(l.struct_name);
    EXPECT_EQ(l.size, RealSize(l.struct_name));
    EXPECT_GE(CUPTI_API_VERSION, static_cast<int>(l.min_api));
    EXPECT_LE(CUPTI_API_VERSION, static_cast<int>(l.max_api));
    const auto real = RealFields(l.struct_name);
    ASSERT_EQ(real.size(), l.fields.size());
    for (const FieldOffset& f : l.fields) {
      SCOPED_TRACE(FieldName(f.field));
      auto it = real.find(f.field);
      ASSERT_NE(it, real.end());
      EXPECT_EQ(f.offset, it->second.offset);
      EXPECT_EQ(f.width, it->second.width);
    }
  }
}

TEST(RecordLayoutTest, BuilderBytesReadBackThroughTheRealStructs) {
  BufferBuilder b;
  b.Kernel(111, 222, 33, 0xabcdef, 9, 2).Memcpy(5, 6, 34, 2, 4096).Runtime(7, 8, 35, 211, 77);
  const auto& bytes = b.bytes();
  ASSERT_EQ(bytes.size(), sizeof(CUpti_ActivityKernel10) + sizeof(CUpti_ActivityMemcpy6) +
                              sizeof(CUpti_ActivityAPI));
  CUpti_ActivityKernel10 k;
  std::memcpy(&k, bytes.data(), sizeof k);
  EXPECT_EQ(k.kind, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  EXPECT_EQ(k.start, 111u);
  EXPECT_EQ(k.end, 222u);
  EXPECT_EQ(k.correlationId, 33u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(k.name), 0xabcdefu);
  EXPECT_EQ(k.streamId, 9u);
  EXPECT_EQ(k.deviceId, 2u);
  EXPECT_EQ(k.gridX, 128);
  EXPECT_EQ(k.blockX, 256);
  EXPECT_EQ(k.registersPerThread, 32);
  CUpti_ActivityMemcpy6 m;
  std::memcpy(&m, bytes.data() + sizeof k, sizeof m);
  EXPECT_EQ(m.copyKind, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
  EXPECT_EQ(m.bytes, 4096u);
  EXPECT_EQ(m.correlationId, 34u);
  CUpti_ActivityAPI a;
  std::memcpy(&a, bytes.data() + sizeof k + sizeof m, sizeof a);
  EXPECT_EQ(a.kind, CUPTI_ACTIVITY_KIND_RUNTIME);
  EXPECT_EQ(a.cbid, 211u);
  EXPECT_EQ(a.threadId, 77u);
  EXPECT_EQ(a.correlationId, 35u);
}
#endif  // CUPMON_HAVE_CUDA_HEADERS

TEST(RecordDecoderTest, DecodesWhatTheBuilderWrote) {
  BufferBuilder b;
  b.Kernel(100, 200, 1, 0x1000).Memset(300, 400, 2, 64).Runtime(50, 90, 1, 211);
  RecordDecoder d(RecordSizeTable::Cupti13(), 130001);
  std::vector<DecodedRecord> got;
  const auto r = d.Decode(b.bytes(), [&](const DecodedRecord& rec) { got.push_back(rec); });
  EXPECT_TRUE(r.complete);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].record_class, RecordClass::kKernel);
  EXPECT_EQ(got[0].Get(Field::kNamePointer), 0x1000u);
  EXPECT_EQ(got[1].Get(Field::kBytes), 64u);
  EXPECT_FALSE(got[1].Has(Field::kNamePointer));
  EXPECT_EQ(got[2].Get32(Field::kCbid), 211u);
}

TEST(RecordDecoderTest, UnknownKindStopsTheBufferAndReportsIt) {
  BufferBuilder b;
  std::vector<uint8_t> unknown(40, 0);
  unknown[0] = 99;  // not in the size table
  b.Kernel(1, 2, 1, 0).AddRaw(unknown).Kernel(3, 4, 2, 0);
  RecordDecoder d(RecordSizeTable::Cupti13(), 130001);
  int n = 0;
  const auto r = d.Decode(b.bytes(), [&](const DecodedRecord&) { ++n; });
  EXPECT_EQ(n, 1);
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.stop.kind, 99u);
  EXPECT_EQ(r.stop.offset, 216u);
}

TEST(RecordDecoderTest, UnsupportedVersionStopsInsteadOfGuessing) {
  BufferBuilder b;
  b.Kernel(1, 2, 1, 0);
  RecordDecoder newer(RecordSizeTable::Cupti13(), 140000);
  int n = 0;
  auto r = newer.Decode(b.bytes(), [&](const DecodedRecord&) { ++n; });
  EXPECT_EQ(n, 0);
  EXPECT_FALSE(r.complete);
  EXPECT_NE(r.stop.why.find("140000"), std::string::npos);

  RecordSizeTable old_sizes = RecordSizeTable::Cupti13();
  old_sizes.Set(10, 200);  // CUPTI 11.8's kernel size
  std::vector<uint8_t> rec(200, 0);
  rec[0] = 10;
  RecordDecoder mismatched(old_sizes, 130001);
  r = mismatched.Decode(rec, [&](const DecodedRecord&) { ++n; });
  EXPECT_EQ(n, 0);
  EXPECT_FALSE(r.complete);
}

TEST(RecordDecoderTest, SizedKindsWithoutLayoutAreSkippedAndCounted) {
  BufferBuilder b;
  b.Kernel(1, 2, 1, 0).Add(51, {}).Kernel(3, 4, 2, 0);  // GRAPH_TRACE: sized, not decoded
  RecordDecoder d(RecordSizeTable::Cupti13(), 130001);
  int n = 0;
  const auto r = d.Decode(b.bytes(), [&](const DecodedRecord&) { ++n; });
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(n, 2);
  EXPECT_EQ(r.skipped, 1u);
}

TEST(RecordDecoderTest, RecordRunningPastTheEndStops) {
  BufferBuilder b;
  b.Kernel(1, 2, 1, 0);
  std::vector<uint8_t> cut(b.bytes().begin(), b.bytes().end() - 8);
  RecordDecoder d(RecordSizeTable::Cupti13(), 130001);
  int n = 0;
  const auto r = d.Decode(cut, [&](const DecodedRecord&) { ++n; });
  EXPECT_EQ(n, 0);
  EXPECT_FALSE(r.complete);
}

}  // namespace
// The words a partial columnar inverse keeps: the kind word and the words holding the named
// fields, for every kind the size table sizes (only the kind word where no layout applies).
TEST(RecordDecoderTest, WordsReadCoverTheNamedFields) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  RecordDecoder d(sizes, 130001);
  auto bits = [](std::initializer_list<int> words) {
    uint64_t m = 0;
    for (int w : words) m |= uint64_t{1} << w;
    return m;
  };
  const ColumnSelection all = d.WordsRead();
  EXPECT_EQ(all.kinds[10].size, 216u);
  // CUpti_ActivityKernel10: registers (6), start, end, device..block z (40-75), shared memory
  // (76-83), correlation (92), name (104), graph id (156).
  EXPECT_EQ(all.kinds[10].words, bits({0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 13, 19}));
  EXPECT_EQ(all.kinds[5].words, bits({0, 1, 2, 3, 4}));  // CUpti_ActivityAPI: every word
  const ColumnSelection some = d.WordsRead(FieldBit(Field::kStart) | FieldBit(Field::kEnd) |
                                           FieldBit(Field::kCorrelationId));
  EXPECT_EQ(some.kinds[10].words, bits({0, 2, 3, 11}));
  EXPECT_EQ(some.kinds[1].words, bits({0, 2, 3, 5}));  // memcpy: correlation at 44
  EXPECT_EQ(some.kinds[51].size, sizes.Size(51));      // sized, no layout: the kind only
  EXPECT_EQ(some.kinds[51].words, 1u);
  EXPECT_EQ(some.kinds[3].size, 216u);
  for (uint32_t k = 0; k < RecordSizeTable::kMaxKind; ++k)
    if (!sizes.Size(k)) {
      EXPECT_EQ(all.kinds[k].size, 0u) << "kind " << k;
    }
  // A version without layouts: Walk stops at every known kind, reading only its kind word.
  RecordDecoder newer(sizes, 140000);
  EXPECT_EQ(newer.WordsRead().kinds[10].words, 1u);
  // Packed, such kinds are left out (a buffer with one is decoded whole and stops as before).
  EXPECT_TRUE(newer.WordsRead(kAllFields, /*pack=*/true).pack);
  EXPECT_EQ(newer.WordsRead(kAllFields, true).kinds[10].size, 0u);
  EXPECT_EQ(newer.WordsRead(kAllFields, true).kinds[51].size, sizes.Size(51));
  EXPECT_EQ(d.WordsRead(kAllFields, true).kinds[10].words, all.kinds[10].words);
}

// A packed decoder reads from packed records what the whole decoder reads from whole ones; fields
// outside the selection read 0 and keep Has().
TEST(RecordDecoderTest, PackedDecoderReadsTheSelectedFieldsOfPackedRecords) {
  const RecordSizeTable sizes = RecordSizeTable::Cupti13();
  RecordDecoder d(sizes, 130001);
  const uint64_t fields = FieldBit(Field::kStart) | FieldBit(Field::kEnd) |
                          FieldBit(Field::kCorrelationId) | FieldBit(Field::kStreamId);
  const ColumnSelection sel = d.WordsRead(fields, /*pack=*/true);
  EXPECT_EQ(PackedSize(216, sel.kinds[10].words), 8u * 5);  // kind, start, end, stream, correlation
  const RecordDecoder packed = d.Packed(sel);
  // Records of several kinds, each packed by hand: its selected words in order.
  BufferBuilder b;
  b.Add(10, {{Field::kStart, 1000}, {Field::kEnd, 2000}, {Field::kCorrelationId, 11},
             {Field::kStreamId, 7}, {Field::kNamePointer, 0xABC}});
  b.Memcpy(1500, 1600, 12, 1, 4096, 7);
  b.Kernel(3000, 4000, 13, 0xDEF, 8);
  std::vector<uint8_t> whole(b.bytes().begin(), b.bytes().end()), pack;
  for (size_t off = 0; off < whole.size();) {
    const uint32_t kind = RecordKindAt(whole.data() + off), size = sizes.Size(kind);
    for (uint32_t w = 0; w < size / 8; ++w)
      if (WordSelected(sel.kinds[kind].words, w))
        pack.insert(pack.end(), whole.begin() + off + 8 * w, whole.begin() + off + 8 * w + 8);
    pack.insert(pack.end(), whole.begin() + off + size / 8 * 8, whole.begin() + off + size);
    off += size;
  }
  std::vector<std::vector<uint64_t>> a, p;
  auto collect = [](std::vector<std::vector<uint64_t>>* out) {
    return [out](const RecordLayout& layout, const FieldReader& f, const uint8_t* rec) {
      std::vector<uint64_t> v{layout.kind};
      for (Field x : {Field::kStart, Field::kEnd, Field::kCorrelationId, Field::kStreamId,
                      Field::kNamePointer, Field::kBytes}) {
        v.push_back(f.Has(x));
        v.push_back(f.Get(rec, x));
      }
      out->push_back(v);
    };
  };
  const auto ra = d.Walk(whole, collect(&a));
  const auto rp = packed.Walk(pack, collect(&p));
  EXPECT_TRUE(ra.complete);
  EXPECT_TRUE(rp.complete) << rp.stop.why;
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(p.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 9; ++j) EXPECT_EQ(a[i][j], p[i][j]) << "record " << i << " value " << j;
    EXPECT_EQ(a[i][9], p[i][9]);  // Has(kNamePointer): unchanged
    EXPECT_EQ(p[i][10], 0u);      // its word (13 of a kernel) is not selected: reads 0
  }
  EXPECT_EQ(a[0][2], 1000u);
  EXPECT_EQ(a[0][8], 7u);
  EXPECT_EQ(a[2][8], 8u);
  EXPECT_EQ(a[0][10], 0xABCu);  // the name, whole
  EXPECT_EQ(a[2][10], 0xDEFu);
  EXPECT_EQ(a[1][12], 4096u);  // memcpy bytes, whole
  EXPECT_EQ(p[1][12], 0u);     // not selected
}

}  // namespace cupmon::decoder
