// The tables of `export --format sqlite` (see nsys_schema.h). The nsys tables follow the column
// lists of Nsight Systems' export schema 3.28.1 (Analysis Guide, "SQLite Schema Reference",
// release 2026.4): every column of each table, in order, with its type and constraints; which of
// them cupmon fills is in docs/DECODER.md. The ENUM_* values are those nsys exports (the CUPTI
// enums for memcpy kinds and synchronization types, nsys's own numbering for memory kinds).
#include "export/sqlite/nsys_schema.h"

#include "cupmon/decoder/kernel_names.h"

namespace cupmon::decoder::nsys {
namespace {

constexpr Table kTables[] = {
    // ---- Nsight Systems tables ----
    {"StringIds",
     "CREATE TABLE StringIds (\n"
     "    id INTEGER NOT NULL PRIMARY KEY,\n"
     "    value TEXT NOT NULL\n"
     ")"},
    {"META_DATA_EXPORT",
     "CREATE TABLE META_DATA_EXPORT (\n"
     "    name TEXT NOT NULL,\n"
     "    value TEXT\n"
     ")"},
    {"TARGET_INFO_SESSION_START_TIME",
     "CREATE TABLE TARGET_INFO_SESSION_START_TIME (\n"
     "    utcEpochNs INTEGER,\n"
     "    utcTime TEXT,\n"
     "    localTime TEXT,\n"
     "    systemClockNs INTEGER,\n"
     "    sessionStartCntVctNs INTEGER\n"
     ")"},
    {"TARGET_INFO_GPU",
     "CREATE TABLE TARGET_INFO_GPU (\n"
     "    vmId INTEGER NOT NULL,\n"
     "    id INTEGER NOT NULL,\n"
     "    name TEXT,\n"
     "    busLocation TEXT,\n"
     "    isDiscrete INTEGER,\n"
     "    l2CacheSize INTEGER,\n"
     "    totalMemory INTEGER,\n"
     "    memoryBandwidth INTEGER,\n"
     "    clockRate INTEGER,\n"
     "    smCount INTEGER,\n"
     "    pwGpuId INTEGER,\n"
     "    uuid TEXT,\n"
     "    luid INTEGER,\n"
     "    chipName TEXT,\n"
     "    cuDevice INTEGER,\n"
     "    ctxswDevPath TEXT,\n"
     "    ctrlDevPath TEXT,\n"
     "    revision INTEGER,\n"
     "    nodeMask INTEGER,\n"
     "    constantMemory INTEGER,\n"
     "    maxIPC INTEGER,\n"
     "    maxRegistersPerBlock INTEGER,\n"
     "    maxShmemPerBlock INTEGER,\n"
     "    maxShmemPerBlockOptin INTEGER,\n"
     "    maxShmemPerSm INTEGER,\n"
     "    maxRegistersPerSm INTEGER,\n"
     "    threadsPerWarp INTEGER,\n"
     "    asyncEngines INTEGER,\n"
     "    maxWarpsPerSm INTEGER,\n"
     "    maxBlocksPerSm INTEGER,\n"
     "    maxThreadsPerBlock INTEGER,\n"
     "    maxBlockDimX INTEGER,\n"
     "    maxBlockDimY INTEGER,\n"
     "    maxBlockDimZ INTEGER,\n"
     "    maxGridDimX INTEGER,\n"
     "    maxGridDimY INTEGER,\n"
     "    maxGridDimZ INTEGER,\n"
     "    computeMajor INTEGER,\n"
     "    computeMinor INTEGER,\n"
     "    smMajor INTEGER,\n"
     "    smMinor INTEGER,\n"
     "    numaNodeId INTEGER\n"
     ")"},
    {"ENUM_NSYS_EVENT_CLASS",
     "CREATE TABLE ENUM_NSYS_EVENT_CLASS (\n"
     "    id INTEGER NOT NULL PRIMARY KEY,\n"
     "    name TEXT,\n"
     "    label TEXT\n"
     ")"},
    {"ENUM_CUDA_MEMCPY_OPER",
     "CREATE TABLE ENUM_CUDA_MEMCPY_OPER (\n"
     "    id INTEGER NOT NULL PRIMARY KEY,\n"
     "    name TEXT,\n"
     "    label TEXT\n"
     ")"},
    {"ENUM_CUDA_MEM_KIND",
     "CREATE TABLE ENUM_CUDA_MEM_KIND (\n"
     "    id INTEGER NOT NULL PRIMARY KEY,\n"
     "    name TEXT,\n"
     "    label TEXT\n"
     ")"},
    {"ENUM_CUPTI_SYNC_TYPE",
     "CREATE TABLE ENUM_CUPTI_SYNC_TYPE (\n"
     "    id INTEGER NOT NULL PRIMARY KEY,\n"
     "    name TEXT,\n"
     "    label TEXT\n"
     ")"},
    {"CUPTI_ACTIVITY_KIND_MEMCPY",
     "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (\n"
     "    start INTEGER NOT NULL,\n"
     "    end INTEGER NOT NULL,\n"
     "    deviceId INTEGER NOT NULL,\n"
     "    contextId INTEGER NOT NULL,\n"
     "    greenContextId INTEGER,\n"
     "    streamId INTEGER NOT NULL,\n"
     "    correlationId INTEGER,\n"
     "    globalPid INTEGER,\n"
     "    bytes INTEGER NOT NULL,\n"
     "    copyKind INTEGER NOT NULL,\n"
     "    deprecatedSrcId INTEGER,\n"
     "    srcKind INTEGER,\n"
     "    dstKind INTEGER,\n"
     "    srcDeviceId INTEGER,\n"
     "    srcContextId INTEGER,\n"
     "    dstDeviceId INTEGER,\n"
     "    dstContextId INTEGER,\n"
     "    migrationCause INTEGER,\n"
     "    graphNodeId INTEGER,\n"
     "    virtualAddress INTEGER,\n"
     "    copyCount INTEGER\n"
     ")"},
    {"CUPTI_ACTIVITY_KIND_MEMSET",
     "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (\n"
     "    start INTEGER NOT NULL,\n"
     "    end INTEGER NOT NULL,\n"
     "    deviceId INTEGER NOT NULL,\n"
     "    contextId INTEGER NOT NULL,\n"
     "    greenContextId INTEGER,\n"
     "    streamId INTEGER NOT NULL,\n"
     "    correlationId INTEGER,\n"
     "    globalPid INTEGER,\n"
     "    value INTEGER NOT NULL,\n"
     "    bytes INTEGER NOT NULL,\n"
     "    graphNodeId INTEGER,\n"
     "    memKind INTEGER\n"
     ")"},
    {"CUPTI_ACTIVITY_KIND_KERNEL",
     "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (\n"
     "    start INTEGER NOT NULL,\n"
     "    end INTEGER NOT NULL,\n"
     "    deviceId INTEGER NOT NULL,\n"
     "    contextId INTEGER NOT NULL,\n"
     "    greenContextId INTEGER,\n"
     "    streamId INTEGER NOT NULL,\n"
     "    correlationId INTEGER,\n"
     "    globalPid INTEGER,\n"
     "    demangledName INTEGER NOT NULL,\n"
     "    shortName INTEGER NOT NULL,\n"
     "    mangledName INTEGER,\n"
     "    launchType INTEGER,\n"
     "    cacheConfig INTEGER,\n"
     "    registersPerThread INTEGER NOT NULL,\n"
     "    gridX INTEGER NOT NULL,\n"
     "    gridY INTEGER NOT NULL,\n"
     "    gridZ INTEGER NOT NULL,\n"
     "    blockX INTEGER NOT NULL,\n"
     "    blockY INTEGER NOT NULL,\n"
     "    blockZ INTEGER NOT NULL,\n"
     "    staticSharedMemory INTEGER NOT NULL,\n"
     "    dynamicSharedMemory INTEGER NOT NULL,\n"
     "    localMemoryPerThread INTEGER NOT NULL,\n"
     "    localMemoryTotal INTEGER NOT NULL,\n"
     "    gridId INTEGER NOT NULL,\n"
     "    sharedMemoryExecuted INTEGER,\n"
     "    graphNodeId INTEGER,\n"
     "    sharedMemoryLimitConfig INTEGER,\n"
     "    qmdBulkReleaseDone INTEGER,\n"
     "    qmdPreexitDone INTEGER,\n"
     "    qmdLastCtaDone INTEGER,\n"
     "    graphId INTEGER,\n"
     "    clusterX INTEGER,\n"
     "    clusterY INTEGER,\n"
     "    clusterZ INTEGER,\n"
     "    clusterSchedulingPolicy INTEGER,\n"
     "    maxPotentialClusterSize INTEGER,\n"
     "    maxActiveClusters INTEGER,\n"
     "    sharedMemoryRequestedPercentage INTEGER,\n"
     "    tensorSizeMinusOneElements TEXT NOT NULL\n"
     ")"},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
     "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (\n"
     "    start INTEGER NOT NULL,\n"
     "    end INTEGER NOT NULL,\n"
     "    deviceId INTEGER NOT NULL,\n"
     "    contextId INTEGER NOT NULL,\n"
     "    greenContextId INTEGER,\n"
     "    streamId INTEGER NOT NULL,\n"
     "    correlationId INTEGER,\n"
     "    globalPid INTEGER,\n"
     "    deprecatedSyncType INTEGER,\n"
     "    syncType INTEGER NOT NULL,\n"
     "    eventId INTEGER NOT NULL,\n"
     "    eventSyncId INTEGER\n"
     ")"},
    {"CUPTI_ACTIVITY_KIND_RUNTIME",
     "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (\n"
     "    start INTEGER NOT NULL,\n"
     "    end INTEGER NOT NULL,\n"
     "    eventClass INTEGER NOT NULL,\n"
     "    globalTid INTEGER,\n"
     "    correlationId INTEGER,\n"
     "    nameId INTEGER NOT NULL,\n"
     "    returnValue INTEGER NOT NULL,\n"
     "    callchainId INTEGER\n"
     ")"},

    // ---- cupmon's own facts (docs/DECODER.md) ----
    // One row per recording (rank): where its globalPid comes from and what it is.
    {"CUPMON_RANKS",
     "CREATE TABLE CUPMON_RANKS (\n"
     "    globalPid INTEGER NOT NULL PRIMARY KEY,  -- as in the CUPTI_ACTIVITY_KIND_* tables\n"
     "    rank INTEGER,                 -- rank in its job as cupmon-decode numbers it; NULL: one recording\n"
     "    rankFromLauncher INTEGER,     -- 1: RANK/SLURM_PROCID, 0: numbered by (host, pid)\n"
     "    label TEXT,                   -- 'rank N (host:pid)' as the other exports name it\n"
     "    jobId TEXT,\n"
     "    host TEXT NOT NULL,\n"
     "    pid INTEGER NOT NULL,\n"
     "    node INTEGER NOT NULL,        -- the host's number in globalPid's upper 16 bits\n"
     "    recordingId TEXT NOT NULL,    -- hexadecimal, as cupmon-decode info prints it\n"
     "    localRank INTEGER,\n"
     "    worldSize INTEGER,\n"
     "    commandLine TEXT,\n"
     "    processStartUtcNs INTEGER,    -- unix ns\n"
     "    cuptiApiVersion INTEGER,\n"
     "    cudaDriverVersion INTEGER,\n"
     "    cudaRuntimeVersion INTEGER,\n"
     "    cupmonVersion TEXT,\n"
     "    synthetic INTEGER NOT NULL,   -- 1: written by the CUPTI test double, not by a GPU\n"
     "    files INTEGER NOT NULL,\n"
     "    calibrated INTEGER NOT NULL,  -- 1: times mapped to the wall clock through calibration samples\n"
     "    calibrationSamples INTEGER NOT NULL,\n"
     "    calibrationNonMonotonic INTEGER NOT NULL,\n"
     "    clockDomainChanges INTEGER NOT NULL,\n"
     "    firstStart INTEGER,           -- earliest record start, session ns; NULL: no timed record\n"
     "    lastEnd INTEGER\n"
     ")"},
    // Trace windows (runtime/driver API, synchronization... recorded inside them only).
    {"CUPMON_WINDOWS",
     "CREATE TABLE CUPMON_WINDOWS (\n"
     "    globalPid INTEGER NOT NULL,\n"
     "    windowId INTEGER NOT NULL,\n"
     "    start INTEGER,                -- session ns; NULL: the BEGIN marker is missing\n"
     "    end INTEGER,                  -- NULL: open, or the END marker is missing\n"
     "    source TEXT,                  -- TRIGGER_SIGNAL, TRIGGER_SOCKET, TRIGGER_API, TRIGGER_ENV\n"
     "    beginNote TEXT,\n"
     "    endNote TEXT,\n"
     "    firstApiCorrelationId INTEGER, -- smallest API correlation id inside; NULL: none\n"
     "    launchedBefore INTEGER NOT NULL -- GPU rows inside with a smaller id: launched before\n"
     ")"},
    // Intervals in which another CUPTI client held CUPTI's callbacks: no records inside.
    {"CUPMON_GAPS",
     "CREATE TABLE CUPMON_GAPS (\n"
     "    globalPid INTEGER NOT NULL,\n"
     "    gapId INTEGER NOT NULL,\n"
     "    start INTEGER,\n"
     "    end INTEGER,\n"
     "    note TEXT\n"
     ")"},
    // Intervals in which CUPTI was behind its own records: it may have lost some uncounted.
    {"CUPMON_BEHIND",
     "CREATE TABLE CUPMON_BEHIND (\n"
     "    globalPid INTEGER NOT NULL,\n"
     "    behindId INTEGER NOT NULL,\n"
     "    start INTEGER,\n"
     "    end INTEGER,\n"
     "    note TEXT\n"
     ")"},
    // Per rank: the monitor's stats (drops, losses, zero timestamps, ...), the reader's integrity
    // report, the decoder's counts and the export's own (rows per table, rows without times).
    {"CUPMON_COUNTERS",
     "CREATE TABLE CUPMON_COUNTERS (\n"
     "    globalPid INTEGER NOT NULL,\n"
     "    name TEXT NOT NULL,           -- 'stats.dropped_records', 'integrity.damaged_ranges', ...\n"
     "    value INTEGER NOT NULL\n"
     ")"},
    // User annotations (external correlation labels): one row per label and rank.
    {"CUPMON_ANNOTATIONS",
     "CREATE TABLE CUPMON_ANNOTATIONS (\n"
     "    globalPid INTEGER NOT NULL,\n"
     "    externalId INTEGER NOT NULL,\n"
     "    labelId INTEGER NOT NULL,     -- REFERENCES StringIds(id)\n"
     "    start INTEGER NOT NULL,       -- first start of the rows carrying it\n"
     "    end INTEGER NOT NULL,         -- last end\n"
     "    rows INTEGER NOT NULL\n"
     ")"},
    // Which calls (and their GPU work) an annotation covers: join on (globalPid, correlationId).
    {"CUPMON_CORRELATION_ANNOTATIONS",
     "CREATE TABLE CUPMON_CORRELATION_ANNOTATIONS (\n"
     "    globalPid INTEGER NOT NULL,\n"
     "    correlationId INTEGER NOT NULL,\n"
     "    externalId INTEGER NOT NULL   -- REFERENCES CUPMON_ANNOTATIONS(externalId)\n"
     ")"},
    // CUPTI names threads by pthread_t (32 bits), not by the OS tid that nsys's globalTid packs:
    // each thread of a rank gets a number from 1, and this table keeps CUPTI's value.
    {"CUPMON_THREADS",
     "CREATE TABLE CUPMON_THREADS (\n"
     "    globalTid INTEGER NOT NULL PRIMARY KEY,\n"
     "    cuptiThreadId INTEGER NOT NULL,\n"
     "    cuptiProcessId INTEGER NOT NULL\n"
     ")"},
    // API calls that share the correlation id of the call nsys's kernel-launch join must find:
    // driver calls a runtime call made (nsys leaves them out of CUPTI_ACTIVITY_KIND_RUNTIME) and
    // second records of a correlation id. In CUPTI_ACTIVITY_KIND_RUNTIME's columns.
    {"CUPMON_SECONDARY_API",
     "CREATE TABLE CUPMON_SECONDARY_API (\n"
     "    start INTEGER NOT NULL,\n"
     "    end INTEGER NOT NULL,\n"
     "    eventClass INTEGER NOT NULL,\n"
     "    globalTid INTEGER,\n"
     "    correlationId INTEGER,\n"
     "    nameId INTEGER NOT NULL,\n"
     "    returnValue INTEGER NOT NULL,\n"
     "    reason INTEGER NOT NULL       -- REFERENCES CUPMON_ENUM_SECONDARY_API_REASON(id)\n"
     ")"},
    {"CUPMON_ENUM_SECONDARY_API_REASON",
     "CREATE TABLE CUPMON_ENUM_SECONDARY_API_REASON (\n"
     "    id INTEGER NOT NULL PRIMARY KEY,\n"
     "    name TEXT,\n"
     "    label TEXT\n"
     ")"},
};

constexpr EnumRow kEnumRows[] = {
    {"ENUM_NSYS_EVENT_CLASS", kEventClassCudaRuntime, "TRACE_PROCESS_EVENT_CUDA_RUNTIME", "CUDA runtime"},
    {"ENUM_NSYS_EVENT_CLASS", kEventClassCudaDriver, "TRACE_PROCESS_EVENT_CUDA_DRIVER", "CUDA driver"},
    {"ENUM_CUDA_MEMCPY_OPER", 0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"},
    {"ENUM_CUDA_MEMCPY_OPER", 1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"},
    {"ENUM_CUDA_MEMCPY_OPER", 2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"},
    {"ENUM_CUDA_MEMCPY_OPER", 3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"},
    {"ENUM_CUDA_MEMCPY_OPER", 4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"},
    {"ENUM_CUDA_MEMCPY_OPER", 5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"},
    {"ENUM_CUDA_MEMCPY_OPER", 6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"},
    {"ENUM_CUDA_MEMCPY_OPER", 7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"},
    {"ENUM_CUDA_MEMCPY_OPER", 8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"},
    {"ENUM_CUDA_MEMCPY_OPER", 9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"},
    {"ENUM_CUDA_MEMCPY_OPER", 10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer"},
    {"ENUM_CUDA_MEMCPY_OPER", 11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device"},
    {"ENUM_CUDA_MEMCPY_OPER", 12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host"},
    {"ENUM_CUDA_MEMCPY_OPER", 13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device"},
    {"ENUM_CUDA_MEM_KIND", 0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable"},
    {"ENUM_CUDA_MEM_KIND", 1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned"},
    {"ENUM_CUDA_MEM_KIND", 2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device"},
    {"ENUM_CUDA_MEM_KIND", 3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array"},
    {"ENUM_CUDA_MEM_KIND", 4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed"},
    {"ENUM_CUDA_MEM_KIND", 5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static"},
    {"ENUM_CUDA_MEM_KIND", 6, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static"},
    {"ENUM_CUDA_MEM_KIND", 7, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown"},
    {"ENUM_CUPTI_SYNC_TYPE", 0, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN", "Unknown"},
    {"ENUM_CUPTI_SYNC_TYPE", 1, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE", "Event sync"},
    {"ENUM_CUPTI_SYNC_TYPE", 2, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT", "Stream wait sync"},
    {"ENUM_CUPTI_SYNC_TYPE", 3, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE", "Stream sync"},
    {"ENUM_CUPTI_SYNC_TYPE", 4, "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE", "Context sync"},
    {"CUPMON_ENUM_SECONDARY_API_REASON", kSecondaryNested, "NESTED_DRIVER_CALL",
     "Driver call made by the runtime call of its correlation id"},
    {"CUPMON_ENUM_SECONDARY_API_REASON", kSecondaryDuplicate, "DUPLICATE_CORRELATION",
     "Later record of a correlation id another call of its kind holds"},
};

// NVTX_EVENTS in nsys's column order. cupmon fills start, end, eventType, rangeId, globalTid,
// textId (ranges' and marks' names, in StringIds) and domainId; text only on the domain rows
// (eventType 75), as nsys writes them. The payload, color and category columns stay NULL: CUPTI's
// MARKER record does not carry them.
constexpr Table kNvtxTables[] = {
    {"ENUM_NSYS_EVENT_TYPE",
     "CREATE TABLE ENUM_NSYS_EVENT_TYPE (\n"
     "    id INTEGER NOT NULL PRIMARY KEY,\n"
     "    name TEXT NOT NULL,\n"
     "    label TEXT\n"
     ")"},
    {"NVTX_EVENTS",
     "CREATE TABLE NVTX_EVENTS (\n"
     "    start INTEGER NOT NULL,       -- Event start timestamp (ns)\n"
     "    end INTEGER,                  -- Event end timestamp (ns); NULL for marks, unended\n"
     "    eventType INTEGER NOT NULL,   -- REFERENCES ENUM_NSYS_EVENT_TYPE(id)\n"
     "    rangeId INTEGER,              -- CUPTI's marker id of a range\n"
     "    category INTEGER,\n"
     "    color INTEGER,\n"
     "    text TEXT,                    -- domain name (eventType 75)\n"
     "    globalTid INTEGER,            -- the thread that started it\n"
     "    endGlobalTid INTEGER,\n"
     "    textId INTEGER,               -- REFERENCES StringIds(id): the range's or mark's name\n"
     "    domainId INTEGER,             -- 0: the default domain\n"
     "    uint64Value INTEGER,\n"
     "    int64Value INTEGER,\n"
     "    doubleValue REAL,\n"
     "    uint32Value INTEGER,\n"
     "    int32Value INTEGER,\n"
     "    floatValue REAL,\n"
     "    jsonTextId INTEGER,\n"
     "    jsonText TEXT,\n"
     "    binaryData TEXT\n"
     ")"},
};
constexpr EnumRow kNvtxEnumRows[] = {
    {"ENUM_NSYS_EVENT_TYPE", kEventTypeNvtxMark, "NvtxMark", "NVTX mark"},
    {"ENUM_NSYS_EVENT_TYPE", kEventTypeNvtxPushPopRange, "NvtxPushPopRange", "NVTX push/pop range"},
    {"ENUM_NSYS_EVENT_TYPE", kEventTypeNvtxStartEndRange, "NvtxStartEndRange",
     "NVTX start/end range"},
    {"ENUM_NSYS_EVENT_TYPE", kEventTypeNvtxDomainCreate, "NvtxDomainCreate", "NVTX domain create"},
};

constexpr Index kIndexes[] = {
    {"CUPMON_KERNEL_CORRELATION", "CUPTI_ACTIVITY_KIND_KERNEL", "correlationId"},
    {"CUPMON_KERNEL_START", "CUPTI_ACTIVITY_KIND_KERNEL", "start"},
    {"CUPMON_MEMCPY_CORRELATION", "CUPTI_ACTIVITY_KIND_MEMCPY", "correlationId"},
    {"CUPMON_MEMSET_CORRELATION", "CUPTI_ACTIVITY_KIND_MEMSET", "correlationId"},
    {"CUPMON_RUNTIME_CORRELATION", "CUPTI_ACTIVITY_KIND_RUNTIME", "correlationId"},
    {"CUPMON_RUNTIME_START", "CUPTI_ACTIVITY_KIND_RUNTIME", "start"},
    {"CUPMON_SYNCHRONIZATION_CORRELATION", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "correlationId"},
    {"CUPMON_CORRELATION_ANNOTATIONS_CORRELATION", "CUPMON_CORRELATION_ANNOTATIONS",
     "correlationId"},
};

}  // namespace

std::span<const Table> Tables() { return kTables; }
std::span<const EnumRow> EnumRows() { return kEnumRows; }
std::span<const Index> Indexes() { return kIndexes; }

std::string CreateIndex(const Index& index) {
  return std::string("CREATE INDEX ") + index.name + " ON " + index.table + " (" + index.column +
         ")";
}
std::span<const Table> NvtxTables() { return kNvtxTables; }
std::span<const EnumRow> NvtxEnumRows() { return kNvtxEnumRows; }

int MemKind(uint32_t cupti_kind) {
  // CUPTI: UNKNOWN 0, PAGEABLE 1, PINNED 2, DEVICE 3, ARRAY 4, MANAGED 5, DEVICE_STATIC 6,
  // MANAGED_STATIC 7. nsys: the same order from PAGEABLE = 0, UNKNOWN = 7.
  return cupti_kind >= 1 && cupti_kind <= 7 ? static_cast<int>(cupti_kind) - 1 : 7;
}

std::string KernelShortName(std::string_view demangled) {
  const std::string qualified = ShortKernelName(demangled);
  // Given back whole: not a signature ("[CUDA memcpy HtoD]", unbalanced brackets), whole here too.
  if (qualified == demangled && qualified.find_first_of(" (<[{") != std::string::npos)
    return qualified;
  // The last scope component; "(anonymous namespace)" and lambda scopes may hold "::" inside.
  size_t begin = 0;
  int depth = 0;
  for (size_t i = 0; i + 1 < qualified.size(); ++i) {
    const char c = qualified[i];
    if (c == '(' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == '}') && depth > 0) {
      --depth;
    } else if (depth == 0 && c == ':' && qualified[i + 1] == ':') {
      begin = i + 2;
      ++i;
    }
  }
  return qualified.substr(begin);
}

std::string GpuUuidText(std::string_view b) {
  if (b.size() != 16) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "GPU-";
  for (size_t i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    const auto v = static_cast<unsigned char>(b[i]);
    out += kHex[v >> 4];
    out += kHex[v & 15];
  }
  return out;
}

}  // namespace cupmon::decoder::nsys
