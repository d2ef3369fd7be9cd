// The Nsight Systems SQLite export schema that `cupmon-decode export --format sqlite` writes: one
// pinned version of NVIDIA's tables (names, columns, constraints), the values of the ENUM_* tables
// its columns refer to, nsys's id conventions, and cupmon's own CUPMON_* tables. Plain data and
// pure functions (no SQLite), so that it is tested in builds without SQLite too. Private to the
// decoder.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace cupmon::decoder::nsys {

// The pinned schema: Nsight Systems 2026.4, export schema 3.28.1 (the Analysis Guide's "SQLite
// Schema Reference" of that release). Written to META_DATA_EXPORT as EXPORT_SCHEMA_VERSION.
inline constexpr const char* kSchemaVersion = "3.28.1";
inline constexpr const char* kSchemaRelease = "Nsight Systems 2026.4";

// A table and the statement that creates it. nsys tables keep nsys's column order, types and
// NOT NULL / PRIMARY KEY constraints (so that `SELECT *` and positional readers see what they see
// in an nsys export); CUPMON_* tables are cupmon's.
struct Table {
  const char* name;
  const char* create;
};
std::span<const Table> Tables();

// One row of an ENUM_* table (id, name, label), as nsys writes them.
struct EnumRow {
  const char* table;
  int id;
  const char* name;
  const char* label;
};
std::span<const EnumRow> EnumRows();

// NVTX: the NVTX_EVENTS table and ENUM_NSYS_EVENT_TYPE (with the NVTX rows of it), created only
// when a recording has NVTX ranges (nsys creates its tables lazily too), so that exports
// without NVTX keep their tables. ENUM_NSYS_EVENT_TYPE ids of NVTX_EVENTS.eventType, as nsys
// numbers them (its nvtx_sum report selects 59 and 60; domain names are the text of 75 rows).
std::span<const Table> NvtxTables();
std::span<const EnumRow> NvtxEnumRows();
inline constexpr int kEventTypeNvtxMark = 34;
inline constexpr int kEventTypeNvtxPushPopRange = 59;
inline constexpr int kEventTypeNvtxStartEndRange = 60;
inline constexpr int kEventTypeNvtxDomainCreate = 75;

// The indexes cupmon adds, each on one column, made after every row is written (nsys itself
// creates none; these serve the joins the nsys reports make: on correlationId and on time).
// Writers that build an index's pages themselves read its fields; the others run CreateIndex.
struct Index {
  const char* name;
  const char* table;
  const char* column;
};
std::span<const Index> Indexes();
// "CREATE INDEX <name> ON <table> (<column>)".
std::string CreateIndex(const Index& index);

// ENUM_NSYS_EVENT_CLASS values of CUPTI_ACTIVITY_KIND_RUNTIME.eventClass.
inline constexpr int kEventClassCudaRuntime = 0;
inline constexpr int kEventClassCudaDriver = 1;
// CUPMON_ENUM_SECONDARY_API_REASON values of CUPMON_SECONDARY_API.reason.
inline constexpr int kSecondaryNested = 1;
inline constexpr int kSecondaryDuplicate = 2;

// Serialized global ids, packed as nsys packs them: <hardware id:8><VM id:8><process id:24>
// <thread id:24>. A globalPid has thread id 0, so nsys's kernel-launch join
// `kernel.globalPid = runtime.globalTid & 0xFFFFFFFFFF000000` holds. cupmon numbers the hosts of
// one export in the upper 16 bits (hardware and VM ids: `node`, 0 for the first host), so that
// ranks of several hosts stay apart; nodes stay below 2^15, keeping the ids positive in SQLite.
inline constexpr uint32_t kMaxNode = (1u << 15) - 1;
inline constexpr uint32_t kIdMask24 = 0xFFFFFF;
constexpr int64_t GlobalVid(uint32_t node) { return static_cast<int64_t>(node) << 48; }
constexpr int64_t GlobalPid(uint32_t node, uint32_t pid) {
  return GlobalVid(node) | static_cast<int64_t>(pid & kIdMask24) << 24;
}
constexpr int64_t GlobalTid(int64_t global_pid, uint32_t tid) {
  return global_pid | static_cast<int64_t>(tid & kIdMask24);
}

// ENUM_CUDA_MEM_KIND id of a CUPTI memory kind (CUpti_ActivityMemoryKind). nsys numbers them
// from PAGEABLE = 0 and puts UNKNOWN last (7); CUPTI has UNKNOWN = 0, PAGEABLE = 1, ...
int MemKind(uint32_t cupti_kind);

// nsys's shortName of a kernel: the base function name of a demangled name, without return type,
// scope, template arguments and parameters ("void at::native::foo<float, 4>(int, float*)" ->
// "foo"): the last scope component of ShortKernelName (cupmon/decoder/kernel_names.h), which the
// text reports show. A name that is not a C++ function signature comes back whole.
std::string KernelShortName(std::string_view demangled);

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (as nvidia-smi prints it) for a 16-byte UUID; ""
// for any other length.
std::string GpuUuidText(std::string_view uuid_bytes);

}  // namespace cupmon::decoder::nsys
