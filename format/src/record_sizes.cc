// CUPTI 13.0 record sizes, as listed in docs/FORMAT.md (checked against the headers in a test).
#include "cupmon/format/record_sizes.h"

namespace cupmon {

RecordSizeTable RecordSizeTable::Cupti13() {
  RecordSizeTable t;
  t.Set(1, 96);    // MEMCPY (CUpti_ActivityMemcpy6)
  t.Set(2, 88);    // MEMSET (Memset4)
  t.Set(3, 216);   // KERNEL (Kernel10)
  t.Set(4, 40);    // DRIVER (CUpti_ActivityAPI)
  t.Set(5, 40);    // RUNTIME
  t.Set(10, 216);  // CONCURRENT_KERNEL
  t.Set(11, 32);   // NAME
  t.Set(12, 56);   // MARKER (Marker2)
  t.Set(17, 56);   // OVERHEAD (Overhead3)
  t.Set(22, 96);   // MEMCPY2 (peer to peer, MemcpyPtoP4)
  t.Set(36, 56);   // CUDA_EVENT (CudaEvent2)
  t.Set(38, 56);   // SYNCHRONIZATION (Synchronization2)
  t.Set(39, 24);   // EXTERNAL_CORRELATION
  t.Set(49, 128);  // MEMORY2 (Memory4)
  t.Set(50, 80);   // MEMORY_POOL (MemoryPool3)
  t.Set(51, 56);   // GRAPH_TRACE (GraphTrace2)
  return t;
}

}  // namespace cupmon
