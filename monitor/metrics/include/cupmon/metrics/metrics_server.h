// The monitor's Prometheus endpoint: an HTTP/1.1 server for the text exposition format 0.0.4 on a
// loopback TCP address, running on the monitor's control io_context (no thread of its own, no CUDA).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "cupmon.pb.h"
#include "cupmon/base/error.h"
#include "cupmon/counters/counter_list.h"

namespace cupmon::metrics {

// GPU busy time of one device: the length of the union of its kernel, memcpy and memset intervals,
// as the monitor's writer thread computes it. The server only renders it.
struct DeviceBusy {
  uint32_t device = 0;
  uint64_t busy_ns = 0;
};

struct StreamBusy {
  uint32_t device = 0;
  uint32_t stream = 0;
  uint64_t busy_ns = 0;
};

// The steps the monitor's writer summed (docs/CONTROL.md, "Per-step figures"), cumulative: served
// as cupmon_steps_total and cupmon_step_{,work_,collective_,host_gap_}seconds_total, so that a
// ratio of rates is a per-step average. All five come from one publication of the writer.
struct StepTotals {
  uint64_t steps = 0;
  uint64_t step_ns = 0;
  uint64_t work_ns = 0;
  uint64_t collective_ns = 0;
  uint64_t host_gap_ns = 0;
  // False while the process does not sum steps (CUPMON_STEP_METRICS off): no series are served.
  bool on = false;
};

// What one scrape shows. Counters are cumulative since the monitor started. Busy entries should be
// unique per device (per device and stream); duplicates are summed so the exposition stays valid.
//
// Labels follow dcgm-exporter's, so that dashboards can join cupmon's series with DCGM's: `gpu` (the
// CUDA device ordinal of the records), `UUID` ("GPU-xxxxxxxx-...", where the monitor knows it) and
// `Hostname`. No label is ever taken from a kernel name (unbounded cardinality).
struct MetricsSnapshot {
  std::string version;     // label of cupmon_info
  std::string output_dir;  // label of cupmon_info; any bytes, escaped when rendered
  // `Hostname` label of cupmon_info and of every per-GPU series. Empty: MetricsServer fills in the
  // host's name (gethostname) before rendering; RenderExposition then leaves the label out.
  std::string hostname;
  // `UUID` label of a device's series: 16 raw bytes (a CUuuid, as the session facts hold it),
  // rendered as nvidia-smi and DCGM write it ("GPU-" + 8-4-4-4-12 hex digits); any other length is
  // rendered as given. A device without an entry gets no UUID label.
  std::map<uint32_t, std::string> gpu_uuids;
  std::vector<DeviceBusy> device_busy;
  std::vector<StreamBusy> stream_busy;
  StepTotals steps;                // served only when on
  bool last_write_failed = false;  // true while the most recent write attempt failed
  uint64_t files = 0;              // recording files currently on disk (after retention)
  uint64_t disk_bytes = 0;         // their total size
  // How long after its newest GPU record ended CUPTI completed the last buffer (ns): seconds
  // mean CUPTI's worker is behind its records (docs/RELIABILITY.md, "CUPTI behind its own
  // records").
  uint64_t cupti_delivery_lag_ns = 0;
  // The counters served as `cupmon_*_total`: the PROM rows of the counter list, each a uint64_t
  // named as in pb::Stats (kernel_records, cupti_gaps, ...). The losses cupmon knows of beyond
  // CUPTI's dropped records are among them (docs/RELIABILITY.md).
#define CUPMON_METRICS_COUNTER(name, field, source, c_struct, c_offset, prom, prom_name, help) \
  CUPMON_COUNTER_IF_PROM_##prom(uint64_t name = 0;)
  CUPMON_COUNTERS(CUPMON_METRICS_COUNTER)
#undef CUPMON_METRICS_COUNTER
};

// Implemented by the monitor. Snapshot() is called on the io_context thread, once per scrape, and
// must return quickly (read atomics or a copy the writer published): it runs on the thread that also
// serves the control socket. It may throw; the server answers 500 and counts it.
class MetricsSource {
 public:
  virtual ~MetricsSource() = default;
  virtual MetricsSnapshot Snapshot() = 0;
};

// The node agent's source (cupmonctl serve): the exposition is only known once its processes have
// answered. RenderAsync() is called on the io_context thread, once per scrape; it must call `done`
// exactly once, on that thread, with the exposition text (200) or an error (500, its message in the
// body). The server's write deadline (write_timeout_ms) runs from the call, so a source that never
// answers costs the connection, not the server. An exception thrown by RenderAsync is a 500.
class AsyncMetricsSource {
 public:
  virtual ~AsyncMetricsSource() = default;
  virtual void RenderAsync(std::function<void(Expected<std::string>)> done) = 0;
};

// Renders the text exposition format 0.0.4: a HELP and a TYPE line per family, metric names
// prefixed `cupmon_`, label values escaped (backslash, double quote, newline), series sorted,
// busy times in seconds printed exactly from nanoseconds. Pure function; any thread.
std::string RenderExposition(const MetricsSnapshot& snapshot);

// One process's snapshot with the labels that tell it apart on a node's endpoint (`pid`, `rank`,
// `job`), in the order given. They come first on every series of that process.
struct LabelledSnapshot {
  std::vector<std::pair<std::string, std::string>> labels;
  MetricsSnapshot snapshot;
};

// As above for several processes: each family's HELP and TYPE once, then every process's series,
// in the order given. With one process and no labels the text is RenderExposition(snapshot)'s.
std::string RenderExposition(const std::vector<LabelledSnapshot>& processes);

// The snapshot as the status reply carries it (pb::MetricsView), and back. `version`, `output_dir`
// and `hostname` are not part of the view (the reply has version and output_dir; the agent that
// renders it knows the host).
pb::MetricsView ToMetricsView(const MetricsSnapshot& snapshot);
MetricsSnapshot FromMetricsView(const pb::MetricsView& view);

// Sets the snapshot's counters (the PROM rows of the counter list) from a stats message; leaves
// the rest of the snapshot as it is.
void CopyCounters(const pb::Stats& stats, MetricsSnapshot* snapshot);

// Escapes a label value for the exposition format: `\` -> `\\`, `"` -> `\"`, newline -> `\n`.
std::string EscapeLabelValue(std::string_view value);

// 16 raw bytes -> "GPU-00112233-4455-6677-8899-aabbccddeeff" (nvidia-smi's and DCGM's spelling).
// Any other length is returned unchanged.
std::string FormatGpuUuid(std::string_view raw);

// `1234567890` ns -> "1.234567890": exact decimal seconds, no floating point.
std::string FormatNanosecondsAsSeconds(uint64_t ns);

struct MetricsOptions {
  // Numeric IPv4 or IPv6 address (no host names: nothing is resolved). `localhost` is accepted as
  // 127.0.0.1. Port 0 picks a free port (see MetricsServer::port()).
  std::string address = "127.0.0.1";
  uint16_t port = 9464;
  // A non-loopback address (0.0.0.0, a NIC address) exposes the counters and the output directory
  // to the network: refused unless this is set. See docs/DEPLOY.md.
  bool allow_non_loopback = false;
  // Request line plus headers; larger requests get 431 and are closed.
  size_t max_request_bytes = 8 * 1024;
  // The whole request must arrive within this time of accepting (a client dripping bytes cannot
  // extend it); otherwise the connection is closed without a reply and counted in `timeouts`.
  uint32_t read_timeout_ms = 2000;
  // The response must be taken by the client within this time, or the connection is closed.
  uint32_t write_timeout_ms = 5000;
  size_t max_connections = 16;
};

// Parses "ADDRESS:PORT", "[V6]:PORT" or ":PORT" (loopback) into options.address/port, as the monitor
// reads it from its configuration (CUPMON_METRICS_ADDRESS). Does not check loopback: Start() does.
Expected<MetricsOptions> ParseListenAddress(std::string_view text, MetricsOptions base = {});

// Cumulative since Start(). Readable from any thread.
struct MetricsCounters {
  uint64_t connections = 0;           // accepted and served or refused with a status
  uint64_t scrapes = 0;               // 200 responses
  uint64_t not_found = 0;             // 404
  uint64_t method_not_allowed = 0;    // 405
  uint64_t bad_requests = 0;          // 400 (unparsable request line)
  uint64_t oversized = 0;             // 431
  uint64_t timeouts = 0;              // read or write deadline passed
  uint64_t rejected_connections = 0;  // over max_connections, closed at once
  uint64_t source_errors = 0;         // Snapshot() threw: 500
  uint64_t handler_exceptions = 0;    // anything else caught at an asio handler boundary
  uint64_t accept_errors = 0;  // accept failed (out of descriptors or memory): retried after 100 ms
};

// Threading: construct anywhere; Start(), Stop(), port() and local_endpoint() are called on the
// io_context thread or before io.run() starts. counters() may be called from any thread. The
// io_context must outlive the server; the (Async)MetricsSource must outlive Stop(). Handlers still
// queued after Stop() (or after destruction) do nothing.
//
// Every connection carries one request and is closed after the response ("Connection: close").
// Descriptors are close-on-exec from their first instant (socket/accept4 with SOCK_CLOEXEC), as in
// the control plane, because the monitor lives inside someone else's process.
class MetricsServer {
 public:
  MetricsServer(boost::asio::io_context& io, MetricsOptions options, MetricsSource& source);
  MetricsServer(boost::asio::io_context& io, MetricsOptions options, AsyncMetricsSource& source);
  ~MetricsServer();  // calls Stop()
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Validates the address (loopback unless allowed), binds and starts accepting. On error nothing
  // is left open and the message says what to change (address in use, not loopback, ...). The
  // monitor keeps running without an endpoint. Call once.
  Expected<void> Start();
  // Closes the listener and every connection. Idempotent.
  void Stop();

  uint16_t port() const;  // the bound port (useful with port 0); 0 before Start()
  MetricsCounters counters() const;

  class Core;

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace cupmon::metrics
