// A real Prometheus (Debian's `prometheus`) scrapes a running Monitor on the CUPTI test double (a
// test double: no GPU, records made by the test): the test starts prometheus with a generated
// config and recording rule in a temp dir, waits for scrapes and checks the series through
// Prometheus' HTTP query API. Prometheus is stopped by pid at the end, also on failure, and gets
// SIGKILL from the kernel if this process dies first (PR_SET_PDEATHSIG).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cupmon/monitor/monitor.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"
#include "test_dir.h"

namespace cupmon {
namespace {

using boost::property_tree::ptree;
using testing::FakeCupti;
using Clock = std::chrono::steady_clock;

// Generous for a loaded 2-core CI machine: prometheus' start-up alone can take seconds there.
constexpr auto kStartTimeout = std::chrono::seconds(120);
constexpr auto kScrapeTimeout = std::chrono::seconds(90);

// The recording rule docs/DEPLOY.md gives, loaded as it is written there.
constexpr const char* kRules = R"(groups:
  - name: cupmon
    rules:
      - record: cupmon:gpu_busy:ratio_rate1m
        expr: rate(cupmon_gpu_busy_seconds_total[1m])
)";

std::string FindPrometheus() {
  if (const char* p = std::getenv("CUPMON_PROMETHEUS"); p != nullptr && *p) return p;
  for (const char* p : {"/usr/bin/prometheus", "/usr/local/bin/prometheus"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

// A port that was free a moment ago (bound to port 0, then closed). Prometheus binds it next; a
// collision with another process in between makes prometheus exit, which the test reports.
uint16_t FreeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  uint16_t port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

// Runs a command, returns its stdout; *rc is its exit status (-1 if it did not exit normally).
std::string RunCommand(const std::string& cmd, int* rc) {
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    *rc = -1;
    return "";
  }
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  const int status = ::pclose(pipe);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (const char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One prometheus process, owned: the destructor stops it by pid (SIGTERM, then SIGKILL after 30 s)
// and reaps it, so no early return of a failed assertion leaves it running.
class PrometheusProcess {
 public:
  PrometheusProcess(const std::string& binary, const std::string& dir, uint16_t port) : dir_(dir) {
    const std::vector<std::string> args = {
        binary,
        "--config.file=" + dir + "/prometheus.yml",
        "--storage.tsdb.path=" + dir + "/data",
        "--web.listen-address=127.0.0.1:" + std::to_string(port),
        "--log.level=info",
    };
    // Everything the child needs is made before fork(): the monitor's threads are running, so the
    // child may only call async-signal-safe functions (no stdio, no allocation) until execv.
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int log = ::open((dir + "/prometheus.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log < 0) return;
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      // The child: dies with the test (a crash or ctest's timeout kill of the test cannot leave
      // prometheus behind), logs to a file (dup2 clears close-on-exec on the copies), execs.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      if (::dup2(log, STDOUT_FILENO) < 0 || ::dup2(log, STDERR_FILENO) < 0) ::_exit(126);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(log);
  }
  ~PrometheusProcess() { Stop(); }
  PrometheusProcess(const PrometheusProcess&) = delete;
  PrometheusProcess& operator=(const PrometheusProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool Exited() {
    if (pid_ <= 0) return true;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return true;
    }
    return false;
  }
  std::string Log() const { return ReadFile(dir_ + "/prometheus.log"); }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) != pid_) {
      if (Clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
};

// Prometheus writes a sample's time as decimal seconds with at most millisecond digits
// ("1764585000.123"). Read exactly, as integer milliseconds: a double of seconds since 1970 loses
// the sub-microsecond digits a rate comparison needs.
int64_t ParseMillis(const std::string& text) {
  const size_t dot = text.find('.');
  int64_t ms = std::stoll(text.substr(0, dot)) * 1000;
  if (dot != std::string::npos) {
    std::string frac = text.substr(dot + 1);
    frac.resize(3, '0');
    ms += std::stoll(frac);
  }
  return ms;
}

// Prometheus' HTTP API through curl (from tools/install-deps).
class PrometheusApi {
 public:
  explicit PrometheusApi(uint16_t port) : base_("http://127.0.0.1:" + std::to_string(port)) {}

  bool Ready() {
    int rc = 0;
    RunCommand("curl -sS --fail --max-time 5 -o /dev/null " + base_ + "/-/ready 2>/dev/null", &rc);
    return rc == 0;
  }

  // GET path with url-encoded parameters; the parsed JSON "data" object of a successful answer.
  std::optional<ptree> Get(const std::string& path,
                           const std::vector<std::pair<std::string, std::string>>& params,
                           std::string* error) {
    std::string cmd = "curl -sS --max-time 20 -G";
    for (const auto& [k, v] : params) cmd += " --data-urlencode " + ShellQuote(k + "=" + v);
    cmd += " " + base_ + path + " 2>&1";
    int rc = 0;
    const std::string body = RunCommand(cmd, &rc);
    if (rc != 0) {
      *error = "curl exit " + std::to_string(rc) + ": " + body;
      return std::nullopt;
    }
    ptree root;
    try {
      std::istringstream in(body);
      boost::property_tree::read_json(in, root);
    } catch (const std::exception& e) {
      *error = std::string("not JSON (") + e.what() + "): " + body;
      return std::nullopt;
    }
    if (root.get<std::string>("status", "") != "success") {
      *error = body;
      return std::nullopt;
    }
    return root.get_child("data");
  }

  // An instant query: each result's labels and value ("value": [time, "text"]).
  struct Sample {
    std::map<std::string, std::string> labels;
    double value = 0;
  };
  std::optional<std::vector<Sample>> Query(const std::string& expr, std::string* error,
                                           std::optional<int64_t> at_ms = std::nullopt) {
    std::vector<std::pair<std::string, std::string>> params = {{"query", expr}};
    if (at_ms) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%lld.%03lld", static_cast<long long>(*at_ms / 1000),
                    static_cast<long long>(*at_ms % 1000));
      params.emplace_back("time", buf);
    }
    auto data = Get("/api/v1/query", params, error);
    if (!data) return std::nullopt;
    std::vector<Sample> out;
    for (const auto& [unused, result] : data->get_child("result")) {
      Sample s;
      for (const auto& [name, value] : result.get_child("metric")) s.labels[name] = value.data();
      const ptree& pair = result.get_child("value");  // [time, "value"]
      s.value = std::stod(std::next(pair.begin())->second.data());
      out.push_back(std::move(s));
    }
    return out;
  }

  // The raw samples of `series[10m]` at the current time: (scrape time in ms, value) pairs.
  std::optional<std::vector<std::pair<int64_t, double>>> RawSamples(const std::string& selector,
                                                                   std::string* error) {
    auto data = Get("/api/v1/query", {{"query", selector + "[10m]"}}, error);
    if (!data) return std::nullopt;
    std::vector<std::pair<int64_t, double>> out;
    for (const auto& [unused, result] : data->get_child("result")) {
      for (const auto& [unused2, pair] : result.get_child("values")) {
        auto it = pair.begin();
        const int64_t t = ParseMillis(it->second.data());
        out.emplace_back(t, std::stod(std::next(it)->second.data()));
      }
    }
    return out;
  }

 private:
  std::string base_;
};

// Polls `pred` every 200 ms until it holds or `timeout` passes. Not a timing assertion: on a slow
// machine it only waits longer.
bool PollUntil(std::chrono::seconds timeout, const std::function<bool()>& pred) {
  const auto deadline = Clock::now() + timeout;
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return true;
}

TEST(PrometheusLiveTest, RealPrometheusScrapesTheMonitorAndQueriesItsSeries) {
  const std::string prometheus = FindPrometheus();
  if (prometheus.empty())
    GTEST_SKIP() << "Debian's prometheus is not installed (/usr/bin/prometheus; tools/install-deps "
                    "installs it, or set CUPMON_PROMETHEUS=/path/to/prometheus)";
  if (std::system("command -v curl >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "curl is not installed (tools/install-deps installs it)";

  const std::string dir = testing::FreshTestDir("cupmon-prometheus-live-test", "scrape");
  std::filesystem::create_directories(dir + "/prom");

  FakeCupti fake;
  const uint32_t k = fake.AddKernelName("a_kernel_name_that_must_not_become_a_label");
  MonitorOptions o = testing::TestDoubleOptions(&fake, dir + "/rec");
  o.config.metrics_address = "127.0.0.1:0";
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  const uint16_t monitor_port = (*m)->metrics_port();
  ASSERT_NE(monitor_port, 0);

  const uint16_t prom_port = FreeLoopbackPort();
  ASSERT_NE(prom_port, 0);
  {
    std::ofstream cfg(dir + "/prom/prometheus.yml");
    cfg << "global:\n"
           "  scrape_interval: 1s\n"
           "  scrape_timeout: 1s\n"
           "  evaluation_interval: 1s\n"
           "rule_files:\n"
           "  - " << dir << "/prom/rules.yml\n"
           "scrape_configs:\n"
           "  - job_name: cupmon\n"
           "    static_configs:\n"
           "      - targets: ['127.0.0.1:" << monitor_port << "']\n";
    std::ofstream rules(dir + "/prom/rules.yml");
    rules << kRules;
  }
  // promtool (same package) validates what the test generated before prometheus loads it.
  int rc = 0;
  std::string out = RunCommand("promtool check config " + ShellQuote(dir + "/prom/prometheus.yml") + " 2>&1", &rc);
  ASSERT_EQ(rc, 0) << out;

  PrometheusProcess prom(prometheus, dir + "/prom", prom_port);
  ASSERT_GT(prom.pid(), 0) << "could not create " << dir << "/prom/prometheus.log or fork";
  PrometheusApi api(prom_port);
  ASSERT_TRUE(PollUntil(kStartTimeout, [&] { return prom.Exited() || api.Ready(); }) && !prom.Exited())
      << "prometheus did not become ready on 127.0.0.1:" << prom_port << "; its log:\n" << prom.Log();

  std::string error;
  // Waits until Prometheus has scraped `value` for `expr`; returns false (with the last answer in
  // `error`) on timeout.
  const auto await_value = [&](const std::string& expr, double value) {
    return PollUntil(kScrapeTimeout, [&] {
      auto r = api.Query(expr, &error);
      if (!r) return false;
      if (r->size() == 1 && (*r)[0].value == value) return true;
      error = expr + ": " + std::to_string(r->size()) + " series" +
              (r->empty() ? "" : ", value " + std::to_string((*r)[0].value));
      return false;
    });
  };

  // The first scrape: `up` is 1 and the counters are 0 (nothing produced yet).
  ASSERT_TRUE(await_value("up{job=\"cupmon\"}", 1)) << error << "\n" << prom.Log();
  ASSERT_TRUE(await_value("cupmon_kernel_records_total", 0)) << error;

  // Three steps of known size. After each, the test waits until a scrape shows the new total, so
  // every step is seen by at least one scrape. Busy time: each kernel lasts 250 us of GPU time and
  // kernels do not overlap.
  FakeCupti::Producer* p = fake.NewProducer();
  constexpr uint64_t kKernelNs = 250'000;
  const std::vector<uint64_t> steps = {40, 0, 100};  // kernels; 0: a scrape interval with none
  uint64_t total = 0;
  uint64_t t = 1'000'000;
  for (const uint64_t n : steps) {
    for (uint64_t i = 0; i < n; ++i, t += 2 * kKernelNs) ASSERT_TRUE(p->Kernel(k, t, t + kKernelNs));
    total += n;
    (*m)->FlushAndWait();
    ASSERT_TRUE(await_value("cupmon_kernel_records_total", static_cast<double>(total))) << error;
    // A step of 0 must still be followed by a new scrape before the next step, so wait for one
    // scrape later than the one that showed the total.
    auto before = api.RawSamples("cupmon_kernel_records_total", &error);
    ASSERT_TRUE(before) << error;
    const size_t seen = before->size();
    ASSERT_TRUE(PollUntil(kScrapeTimeout, [&] {
      auto now = api.RawSamples("cupmon_kernel_records_total", &error);
      return now && now->size() > seen;
    })) << error;
  }

  // The counter rose through the steps: raw samples are non-decreasing and pass through every
  // total the test produced (0, 40, 40, 140).
  auto raw = api.RawSamples("cupmon_kernel_records_total", &error);
  ASSERT_TRUE(raw) << error;
  ASSERT_GE(raw->size(), 4u);
  std::vector<double> distinct;
  for (size_t i = 0; i < raw->size(); ++i) {
    if (i > 0) {
      EXPECT_GE((*raw)[i].second, (*raw)[i - 1].second) << "counter went down at sample " << i;
    }
    if (distinct.empty() || distinct.back() != (*raw)[i].second) distinct.push_back((*raw)[i].second);
  }
  EXPECT_EQ(distinct, (std::vector<double>{0, 40, 140}));

  // The rate is what the test produced: at the first scrape that saw 140, irate() is (140 - 40)
  // kernels over the time between that scrape and the one before it, which saw 40. The time
  // between is the scrape timing's (about 1 s, longer on a loaded machine); the count is exact.
  size_t first140 = 0;
  while (first140 < raw->size() && (*raw)[first140].second != 140) ++first140;
  ASSERT_LT(first140, raw->size());
  ASSERT_GT(first140, 0u);
  const int64_t t_last = (*raw)[first140].first;
  const int64_t t_prev = (*raw)[first140 - 1].first;
  const double interval_s = static_cast<double>(t_last - t_prev) / 1000;
  ASSERT_EQ((*raw)[first140 - 1].second, 40);
  auto irate = api.Query("irate(cupmon_kernel_records_total[5m])", &error, t_last);
  ASSERT_TRUE(irate && irate->size() == 1) << error;
  EXPECT_NEAR((*irate)[0].value * interval_s, 100.0, 1e-9)
      << "irate " << (*irate)[0].value << "/s over " << interval_s << " s";

  // Busy seconds: exact (from the records' GPU timestamps), 140 kernels x 250 us, on gpu 0.
  auto busy = api.Query("cupmon_gpu_busy_seconds_total", &error);
  ASSERT_TRUE(busy && busy->size() == 1) << error;
  EXPECT_NEAR((*busy)[0].value, 140 * 250e-6, 1e-12);
  EXPECT_EQ((*busy)[0].labels["gpu"], "0");
  EXPECT_FALSE((*busy)[0].labels["Hostname"].empty());
  EXPECT_EQ((*busy)[0].labels.count("device"), 0u);

  // The recording rule docs/DEPLOY.md gives is loaded, evaluated, and its result is a ratio: the
  // busy seconds the test added per second of wall time, between 0 and 1, carrying the join labels.
  ASSERT_TRUE(PollUntil(kScrapeTimeout, [&] {
    auto r = api.Query("cupmon:gpu_busy:ratio_rate1m", &error);
    return r && r->size() == 1 && (*r)[0].value > 0;
  })) << "the recording rule produced no positive sample: " << error;
  auto ratio = api.Query("cupmon:gpu_busy:ratio_rate1m", &error);
  ASSERT_TRUE(ratio && ratio->size() == 1) << error;
  EXPECT_GT((*ratio)[0].value, 0);
  EXPECT_LE((*ratio)[0].value, 1);
  EXPECT_EQ((*ratio)[0].labels["gpu"], "0");
  EXPECT_FALSE((*ratio)[0].labels["Hostname"].empty());
  // The rule's health as Prometheus reports it.
  auto rules = api.Get("/api/v1/rules", {}, &error);
  ASSERT_TRUE(rules) << error;
  std::string health;
  for (const auto& [unused, group] : rules->get_child("groups"))
    for (const auto& [unused2, rule] : group.get_child("rules")) health = rule.get<std::string>("health", "");
  EXPECT_EQ(health, "ok");

  // The Grafana-style panel query docs/DEPLOY.md gives: busy percent per GPU and host.
  auto panel = api.Query("100 * max by (Hostname, gpu) (cupmon:gpu_busy:ratio_rate1m)", &error);
  ASSERT_TRUE(panel && panel->size() == 1) << error;
  EXPECT_GT((*panel)[0].value, 0);
  EXPECT_LE((*panel)[0].value, 100);
  EXPECT_EQ((*panel)[0].labels.size(), 2u);  // Hostname, gpu

  // No scrape errors: the target is healthy, nothing was dropped, no sample was rejected.
  auto targets = api.Get("/api/v1/targets", {{"state", "active"}}, &error);
  ASSERT_TRUE(targets) << error;
  int active = 0;
  for (const auto& [unused, target] : targets->get_child("activeTargets")) {
    ++active;
    EXPECT_EQ(target.get<std::string>("health", ""), "up");
    EXPECT_EQ(target.get<std::string>("lastError", "?"), "");
  }
  EXPECT_EQ(active, 1);
  auto up_all = api.Query("min_over_time(up{job=\"cupmon\"}[10m])", &error);
  ASSERT_TRUE(up_all && up_all->size() == 1) << error;
  EXPECT_EQ((*up_all)[0].value, 1) << "a scrape failed during the test";
  // Prometheus' own counters of rejected samples (not scraped here: read from its /metrics).
  const std::string self = RunCommand("curl -sS --fail --max-time 20 http://127.0.0.1:" +
                                   std::to_string(prom_port) + "/metrics 2>&1",
                               &rc);
  ASSERT_EQ(rc, 0) << self;
  for (const char* metric : {"prometheus_target_scrapes_sample_out_of_order_total",
                             "prometheus_target_scrapes_sample_duplicate_timestamp_total",
                             "prometheus_target_scrapes_sample_out_of_bounds_total",
                             "prometheus_target_scrapes_exceeded_sample_limit_total"}) {
    const size_t at = self.find(std::string("\n") + metric + " ");
    ASSERT_NE(at, std::string::npos) << metric << " not in prometheus' own metrics";
    EXPECT_EQ(std::stod(self.substr(at + 1 + std::strlen(metric) + 1)), 0) << metric;
  }
  // Prometheus' own linter for exposition (naming conventions: `_total` counters, base units, ...)
  // has nothing to say about what the monitor serves.
  out = RunCommand("curl -sS --fail --max-time 20 http://127.0.0.1:" + std::to_string(monitor_port) +
                "/metrics | promtool check metrics 2>&1",
            &rc);
  EXPECT_EQ(rc, 0) << "promtool check metrics:\n" << out;
  EXPECT_EQ(out, "") << "promtool check metrics:\n" << out;

  // No kernel name became a label value anywhere in what Prometheus stored.
  auto names = api.Query("{job=\"cupmon\"}", &error);
  ASSERT_TRUE(names) << error;
  EXPECT_GT(names->size(), 10u);
  for (const auto& s : *names) {
    for (const auto& [label, value] : s.labels) {
      EXPECT_EQ(value.find("a_kernel_name"), std::string::npos) << label << " on " << s.labels.at("__name__");
    }
  }

  prom.Stop();
  EXPECT_TRUE(prom.Exited());
  (*m)->Stop();
  std::filesystem::remove_all(dir);
}

// The culprit rule of docs/DEPLOY.md ("Per-step figures and a job's culprit rank"), read from that
// file: the yaml block that defines cupmon:step_culprit:ratio5m, as written there.
std::string DeployCulpritRules() {
  const std::string doc = ReadFile(CUPMON_DEPLOY_MD);
  const size_t at = doc.find("record: cupmon:step_culprit:ratio5m");
  if (at == std::string::npos) return "";
  const size_t open = doc.rfind("```yaml\n", at);
  const size_t close = doc.find("```", at);
  if (open == std::string::npos || close == std::string::npos) return "";
  return doc.substr(open + 8, close - open - 8);
}

// One rank: tests/monitor/metrics/prometheus_rank_child.cc, stopped by closing its stdin (and
// killed by pid if it does not exit), killed by the kernel if this process dies first.
class RankProcess {
 public:
  RankProcess(const std::string& dir, uint64_t collective_us, uint64_t gap_us) {
    const std::vector<std::string> args = {CUPMON_RANK_CHILD, dir, std::to_string(collective_us),
                                           std::to_string(gap_us)};
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return;
    if (::pipe2(out, O_CLOEXEC) != 0) {
      ::close(in[0]);
      ::close(in[1]);
      return;
    }
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      if (::dup2(in[0], STDIN_FILENO) < 0 || ::dup2(out[1], STDOUT_FILENO) < 0) ::_exit(126);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    stdout_ = ::fdopen(out[0], "r");
  }
  ~RankProcess() { Stop(); }
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;

  // Its metrics port, from its first line ("port N"); 0 if it did not say.
  uint16_t ReadPort() {
    if (!stdout_) return 0;
    char line[64] = {};
    unsigned port = 0;
    if (!std::fgets(line, sizeof(line), stdout_) || std::sscanf(line, "port %u", &port) != 1)
      return 0;
    return static_cast<uint16_t>(port);
  }
  void Stop() {
    if (stdin_ >= 0) ::close(stdin_);
    stdin_ = -1;
    if (pid_ > 0) {
      const auto deadline = Clock::now() + std::chrono::seconds(30);
      int status = 0;
      while (::waitpid(pid_, &status, WNOHANG) != pid_) {
        if (Clock::now() > deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      pid_ = -1;
    }
    if (stdout_) std::fclose(stdout_);
    stdout_ = nullptr;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  FILE* stdout_ = nullptr;
};

// Two ranks of one job with the same step time (2.45 ms): rank 0 waits 1.9 ms a step in its
// all-reduce (2 ms, host gap 0.1 ms), rank 1 launches 1.9 ms late (host gap 2 ms, all-reduce
// 0.1 ms). Each is a monitor in its own process, scraped by one Prometheus as two targets labelled
// rank 0 and 1, with the rules of docs/DEPLOY.md: the culprit rule names rank 1, and the per-step
// averages are the produced ones.
TEST(PrometheusLiveTest, TheCulpritRuleNamesTheRankWithTheLargerHostGap) {
  const std::string prometheus = FindPrometheus();
  if (prometheus.empty())
    GTEST_SKIP() << "Debian's prometheus is not installed (/usr/bin/prometheus; tools/install-deps "
                    "installs it, or set CUPMON_PROMETHEUS=/path/to/prometheus)";
  if (std::system("command -v curl >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "curl is not installed (tools/install-deps installs it)";
  const std::string rules_yaml = DeployCulpritRules();
  ASSERT_FALSE(rules_yaml.empty()) << "no yaml block with cupmon:step_culprit:ratio5m in "
                                   << CUPMON_DEPLOY_MD;

  const std::string dir = testing::FreshTestDir("cupmon-prometheus-live-test", "culprit");
  std::filesystem::create_directories(dir + "/prom");
  RankProcess waiter(dir + "/rank0", 2000, 100);
  RankProcess late(dir + "/rank1", 100, 2000);
  const uint16_t port0 = waiter.ReadPort(), port1 = late.ReadPort();
  ASSERT_NE(port0, 0) << "rank 0 did not start";
  ASSERT_NE(port1, 0) << "rank 1 did not start";

  const uint16_t prom_port = FreeLoopbackPort();
  ASSERT_NE(prom_port, 0);
  {
    std::ofstream cfg(dir + "/prom/prometheus.yml");
    cfg << "global:\n"
           "  scrape_interval: 1s\n"
           "  scrape_timeout: 1s\n"
           "  evaluation_interval: 1s\n"
           "rule_files:\n"
           "  - " << dir << "/prom/rules.yml\n"
           "scrape_configs:\n"
           "  - job_name: cupmon\n"
           "    static_configs:\n"
           "      - targets: ['127.0.0.1:" << port0 << "']\n"
           "        labels: {rank: '0'}\n"
           "      - targets: ['127.0.0.1:" << port1 << "']\n"
           "        labels: {rank: '1'}\n";
    std::ofstream rules(dir + "/prom/rules.yml");
    rules << rules_yaml;
  }
  int rc = 0;
  std::string out = RunCommand("promtool check config " + ShellQuote(dir + "/prom/prometheus.yml") + " 2>&1", &rc);
  ASSERT_EQ(rc, 0) << out << "\nrules:\n" << rules_yaml;

  PrometheusProcess prom(prometheus, dir + "/prom", prom_port);
  ASSERT_GT(prom.pid(), 0) << "could not create " << dir << "/prom/prometheus.log or fork";
  PrometheusApi api(prom_port);
  ASSERT_TRUE(PollUntil(kStartTimeout, [&] { return prom.Exited() || api.Ready(); }) && !prom.Exited())
      << "prometheus did not become ready on 127.0.0.1:" << prom_port << "; its log:\n" << prom.Log();

  // The rule's series, once both ranks' own times exist (two scrapes each with steps).
  std::string error;
  std::vector<PrometheusApi::Sample> culprit;
  ASSERT_TRUE(PollUntil(kScrapeTimeout, [&] {
    auto own = api.Query("cupmon:step_own_seconds:mean5m", &error);
    if (!own || own->size() != 2) return false;
    auto r = api.Query("cupmon:step_culprit:ratio5m", &error);
    if (!r || r->empty()) return false;
    culprit = *r;
    return true;
  })) << "the culprit rule produced no series: " << error << "\n" << prom.Log();
  ASSERT_EQ(culprit.size(), 1u);
  EXPECT_EQ(culprit[0].labels["rank"], "1");
  EXPECT_EQ(culprit[0].labels["job"], "cupmon");
  // Own time 2.35 ms against 0.45 ms: 2.35 / 1.4 over the median of two.
  EXPECT_NEAR(culprit[0].value, 2.35 / 1.4, 0.01);

  // Per-step averages, per rank, as produced (ratios of rates over the same scrapes).
  const auto per_step = [&](const std::string& family) {
    std::map<std::string, double> by_rank;
    auto r = api.Query("rate(" + family + "[5m]) / on (rank) rate(cupmon_steps_total[5m])", &error);
    EXPECT_TRUE(r) << error;
    if (r)
      for (const auto& s : *r) by_rank[s.labels.at("rank")] = s.value;
    return by_rank;
  };
  auto step = per_step("cupmon_step_seconds_total");
  auto work = per_step("cupmon_step_work_seconds_total");
  auto collective = per_step("cupmon_step_collective_seconds_total");
  auto gap = per_step("cupmon_step_host_gap_seconds_total");
  for (const std::string rank : {"0", "1"}) {
    SCOPED_TRACE("rank " + rank);
    EXPECT_NEAR(step[rank], 2.45e-3, 1e-6);
    EXPECT_NEAR(work[rank], 0.35e-3, 1e-6);
  }
  EXPECT_NEAR(collective["0"], 2.0e-3, 1e-6);
  EXPECT_NEAR(gap["0"], 0.1e-3, 1e-6);
  EXPECT_NEAR(collective["1"], 0.1e-3, 1e-6);
  EXPECT_NEAR(gap["1"], 2.0e-3, 1e-6);
  auto cut = api.Query("sum(cupmon_steps_cut_total) + sum(cupmon_step_intervals_dropped_total)", &error);
  ASSERT_TRUE(cut && cut->size() == 1) << error;
  EXPECT_EQ((*cut)[0].value, 0);

  // Every rule evaluated without error.
  auto rules = api.Get("/api/v1/rules", {}, &error);
  ASSERT_TRUE(rules) << error;
  int healthy = 0;
  for (const auto& [unused, group] : rules->get_child("groups"))
    for (const auto& [unused2, rule] : group.get_child("rules")) {
      EXPECT_EQ(rule.get<std::string>("health", ""), "ok") << rule.get<std::string>("name", "");
      ++healthy;
    }
  EXPECT_EQ(healthy, 3);
  // What the ranks serve passes Prometheus' linter.
  out = RunCommand("curl -sS --fail --max-time 20 http://127.0.0.1:" + std::to_string(port1) +
                       "/metrics | promtool check metrics 2>&1",
                   &rc);
  EXPECT_EQ(rc, 0) << "promtool check metrics:\n" << out;
  EXPECT_EQ(out, "") << "promtool check metrics:\n" << out;

  prom.Stop();
  waiter.Stop();
  late.Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cupmon
