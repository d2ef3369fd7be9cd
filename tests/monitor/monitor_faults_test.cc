// Fault injection: the host process survives faults in the monitor's own threads, a hung file
// system at stop, fork storms and termination signals, and every loss is counted. CUPTI is the
// test double (monitor/testing/fake_cupti.h); nothing here touches a GPU.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "cupmon/monitor/monitor.h"
#include "monitor/src/session_facts.h"
#include "monitor/src/string_table.h"
#include "monitor/testing/fake_cupti.h"
#include "monitor_fixture.h"
#include "../sanitized.h"
#include "recording_reader.h"
#include "test_dir.h"

// Set in the fork storm's children before they exit. LeakSanitizer (the ASan build) would report
// the parent's objects there as leaks: the child has none of the threads whose stacks point to
// them. That is fork's doing, not cupmon's, so the check is off in those children only.
volatile int g_forked_test_child = 0;
extern "C" int __lsan_is_turned_off() { return g_forked_test_child; }

namespace cupmon {
namespace {

using testing::FakeCupti;
using testing::ReadRecording;

std::string TempDir(const std::string& name) {
  return testing::FreshTestDir("cupmon-faults-test", name);
}

size_t CupmonFiles(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".cupmon") ++n;
  return n;
}

// Throws `what` at the `nth` (1-based) call of `point`, once, or at every call when nth is 0.
struct Injector {
  std::string point;
  int nth = 1;
  enum { kBadAlloc, kSystemError } what = kBadAlloc;
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  FaultInjector Make() const {
    return [*this](std::string_view p) {
      if (p != point) return;
      const int n = ++*calls;
      if (nth != 0 && n != nth) return;
      if (what == kBadAlloc) throw std::bad_alloc();
      throw std::system_error(EAGAIN, std::generic_category(), "thread creation refused");
    };
  }
};

using testing::WaitFor;

TEST(MonitorFaultsTest, RefusedThreadCreationLeavesTheJobRunningUnmonitored) {
  for (const char* point : {"start.writer_thread", "start.control_thread"}) {
    SCOPED_TRACE(point);
    FakeCupti fake;
    const std::string dir = TempDir(std::string("nothread-") + point);
    MonitorOptions o = testing::TestDoubleOptions(&fake, dir);
    Injector inj{point, 1, Injector::kSystemError};
    o.fault_injector = inj.Make();
    auto m = Monitor::Start(std::move(o));
    ASSERT_FALSE(m);
    EXPECT_NE(m.error().message.find("start failed"), std::string::npos) << m.error().message;
    EXPECT_NE(m.error().message.find("thread creation refused"), std::string::npos);
    // Undone: the kinds are off again and no file was created.
    EXPECT_FALSE(fake.kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    EXPECT_EQ(CupmonFiles(dir), 0u);
    // The process can start a monitor again afterwards.
    FakeCupti fake2;
    auto again = Monitor::Start(
        testing::TestDoubleOptions(&fake2, TempDir(std::string("nothread-") + point + "-again")));
    ASSERT_TRUE(again) << again.error().message;
    (*again)->Stop();
  }
}

TEST(MonitorFaultsTest, AllocationFailureOnTheWriterDropsOneBufferAndWritingGoesOn) {
  FakeCupti fake;
  const std::string dir = TempDir("writer-badalloc");
  MonitorOptions o = testing::TestDoubleOptions(&fake, dir);
  o.config.buffer_bytes = 64 << 10;
  // Items alternate buffer, flush task, buffer, ...: item 3 is the second buffer.
  Injector inj{"writer.item", 3};
  o.fault_injector = inj.Make();
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t k = fake.AddKernelName("k");
  // One buffer at a time, each handed over before the next.
  constexpr int kPerBuffer = (64 << 10) / 216;
  for (int b = 0; b < 6; ++b) {
    for (int i = 0; i < kPerBuffer; ++i) ASSERT_TRUE(p->Kernel(k, 1 + i, 2 + i));
    (*m)->FlushAndWait();
  }
  const MonitorStats st = (*m)->GetStats();
  (*m)->Stop();
  EXPECT_EQ(st.writer_faults, 1u);
  EXPECT_EQ(st.lost_buffers, 1u);
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_TRUE(rb.have_footer_ended);
  EXPECT_EQ(rb.records, 5u * kPerBuffer);  // exactly the one buffer's records are missing
  EXPECT_EQ(rb.last_stats.writer_faults(), 1u);
  EXPECT_EQ(rb.last_stats.lost_buffers(), 1u);
  EXPECT_EQ(rb.kernels_without_name, 0u);
}

TEST(MonitorFaultsTest, FlushBeforeTheFirstBufferReturnsAndCreatesNoFile) {
  // The first file waits for the first completed buffer (CUDA is up then: devices without
  // cuInit); a flush before that must not wait for a file that does not exist yet.
  FakeCupti fake;
  const std::string dir = TempDir("early-flush");
  auto m = Monitor::Start(testing::TestDoubleOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  auto flushed = std::async(std::launch::async, [&] { (*m)->FlushAndWait(); });
  ASSERT_EQ(flushed.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(CupmonFiles(dir), 0u);
  FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t k = fake.AddKernelName("k");
  ASSERT_TRUE(p->Kernel(k, 1, 2));
  (*m)->FlushAndWait();
  EXPECT_EQ(CupmonFiles(dir), 1u);
  (*m)->Stop();
  EXPECT_EQ(ReadRecording(dir).records, 1u);
}

TEST(MonitorFaultsTest, AllocationFailureWhileInterningLosesThatBufferOnly) {
  FakeCupti fake;
  const std::string dir = TempDir("intern-badalloc");
  MonitorOptions o = testing::TestDoubleOptions(&fake, dir);
  Injector inj{"intern", 1};
  o.fault_injector = inj.Make();
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t k = fake.AddKernelName("named_kernel");
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(p->Kernel(k, 1 + i, 2 + i));
  (*m)->FlushAndWait();  // the first completion: its interning throws inside CUPTI's callback
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(p->Kernel(k, 1 + i, 2 + i));
  (*m)->Stop();
  const MonitorStats st = (*m)->GetStats();
  EXPECT_EQ(st.intake_faults, 1u);
  EXPECT_EQ(st.lost_buffers, 1u);
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.records, 100u);
  EXPECT_EQ(rb.kernels_by_name.at("named_kernel"), 100u);  // interned again with the next buffer
}

TEST(MonitorFaultsTest, ControlTimerFaultsAreCountedAndTheTimerKeepsFlushing) {
  FakeCupti fake;
  const std::string dir = TempDir("control-tick");
  MonitorOptions o = testing::TestDoubleOptions(&fake, dir);
  o.config.flush_ms = 10;
  Injector inj{"control.tick", 0};  // every tick throws until `armed` is cleared
  auto armed = std::make_shared<std::atomic<bool>>(true);
  auto calls = inj.calls;
  o.fault_injector = [armed, calls](std::string_view p) {
    if (p != "control.tick" || !armed->load()) return;
    ++*calls;
    throw std::bad_alloc();
  };
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE(WaitFor([&] { return calls->load() >= 3; }));
  armed->store(false);
  FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t k = fake.AddKernelName("k");
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(p->Kernel(k, 1 + i, 2 + i));
  // No explicit flush: only the timer's periodic flush can hand the buffer over.
  EXPECT_TRUE(WaitFor([&] { return (*m)->GetStats().records == 10; }));
  EXPECT_GE((*m)->GetStats().control_faults, 3u);
  (*m)->Stop();
}

// A file system whose appends block until released: a hung NFS mount at exit.
class HungFileSystem final : public FileSystem {
 public:
  void Hang() {
    std::lock_guard<std::mutex> lk(mu_);
    hung_ = true;
  }
  void Release() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      hung_ = false;
    }
    cv_.notify_all();
  }
  bool blocked() const { return blocked_.load(); }
  Expected<int> OpenDirectory(const std::string& dir) override {
    return real_.OpenDirectory(dir);
  }
  Expected<int> CreateExclusive(int dir_fd, const std::string& dir_path,
                                const std::string& name) override {
    return real_.CreateExclusive(dir_fd, dir_path, name);
  }
  Expected<void> Append(int fd, std::span<const uint8_t> data, uint64_t size_before) override {
    std::unique_lock<std::mutex> lk(mu_);
    if (hung_) blocked_ = true;
    cv_.wait(lk, [&] { return !hung_; });
    lk.unlock();
    return real_.Append(fd, data, size_before);
  }
  Expected<void> Sync(int fd) override { return real_.Sync(fd); }
  void Close(int fd) override { real_.Close(fd); }
  Expected<void> Remove(int dir_fd, const std::string& dir_path,
                        const std::string& name) override {
    return real_.Remove(dir_fd, dir_path, name);
  }

 private:
  FileSystem& real_ = PosixFileSystem();
  std::mutex mu_;
  std::condition_variable cv_;
  bool hung_ = false;
  std::atomic<bool> blocked_{false};
};

// 100 kernels through the monitor and written, then `more` left inside the fake CUPTI.
bool HundredWrittenThenMoreInCupti(FakeCupti& fake, Monitor& m, int more) {
  FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t k = fake.AddKernelName("k");
  for (int i = 0; i < 100; ++i)
    if (!p->Kernel(k, 1 + i, 2 + i)) return false;
  m.FlushAndWait();
  for (int i = 0; i < more; ++i)
    if (!p->Kernel(k, 1 + i, 2 + i)) return false;
  return true;
}

// One line of /proc/PID/task/TID/FILE without its newline, or "" when it cannot be read.
std::string TaskFile(const std::filesystem::path& task, const char* file) {
  FILE* in = std::fopen((task / file).c_str(), "r");
  if (!in) return {};
  char text[256] = {};
  const bool read = std::fgets(text, sizeof text, in) != nullptr;
  std::fclose(in);
  std::string t = read ? text : "";
  if (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

// The task directories of `pid`'s threads ("self": this process).
std::vector<std::filesystem::path> TasksOf(const std::string& pid) {
  std::vector<std::filesystem::path> tasks;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + pid + "/task", ec))
    tasks.push_back(task.path());
  return tasks;
}

// The names of this process's threads that start with `prefix`.
std::vector<std::string> ThreadNamesStartingWith(const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& task : TasksOf("self"))
    if (std::string name = TaskFile(task, "comm"); name.rfind(prefix, 0) == 0) names.push_back(name);
  return names;
}

TEST(MonitorFaultsTest, StopWithAHungFileSystemGivesUpAfterItsTimeout) {
  FakeCupti fake;
  HungFileSystem fs;
  const std::string dir = TempDir("hung-fs");
  MonitorOptions o = testing::TestDoubleOptions(&fake, dir);
  o.fs = &fs;
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE(HundredWrittenThenMoreInCupti(fake, **m, 100));
  fs.Hang();
  // Without the bound this never returns while the file system hangs.
  EXPECT_FALSE((*m)->Stop(std::chrono::milliseconds(300)));
  EXPECT_TRUE(fs.blocked());
  EXPECT_TRUE((*m)->GetStats().stop_timed_out);
  fs.Release();
  m->reset();  // joins the writer, which finishes once the file system answers
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_GE(rb.records, 100u);  // what was written before the hang is intact
}

TEST(MonitorFaultsTest, StopWithCuptisFlushHungGivesUpAfterItsTimeoutAndClosesTheFile) {
  // A flush hung in CUPTI (a hung GPU or driver) must not hang the job's exit: the stop gives up
  // on it at its deadline and still writes the footer after what was written before.
  FakeCupti fake;
  std::atomic<bool> reached{false}, release{false};
  const std::string dir = TempDir("hung-flush");
  MonitorOptions o = testing::TestDoubleOptions(&fake, dir);
  o.fault_injector = [&](std::string_view point) {
    if (point != "stop.flush") return;
    reached = true;
    while (!release) usleep(1000);
  };
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE(HundredWrittenThenMoreInCupti(fake, **m, 50));
  const uint64_t forced_before = fake.forced_flushes();
  // Without the bound this never returns while the flush hangs.
  EXPECT_FALSE((*m)->Stop(std::chrono::milliseconds(300)));
  EXPECT_TRUE(reached);
  EXPECT_TRUE((*m)->GetStats().stop_timed_out);
  // The flush comes back later: its buffers return to the pool, not to the closed files. Its
  // thread is gone before the monitor is.
  release = true;
  for (int waited_ms = 0; waited_ms < 10000 && !ThreadNamesStartingWith("cupmon-flush").empty();
       ++waited_ms)
    usleep(1000);
  EXPECT_TRUE(ThreadNamesStartingWith("cupmon-flush").empty());
  EXPECT_GT(fake.forced_flushes(), forced_before);
  m->reset();  // joins the writer if the footer was still on its way
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_EQ(rb.records, 100u) << "what was written before the hang; the 50 in CUPTI are lost";
  EXPECT_TRUE(rb.have_footer_ended) << "the files are closed without the hung flush";
}

// True when this process has an AF_UNIX socket open whose bound name ends in `path`'s file name
// (the control plane binds through a directory descriptor, so the name may not be `path` itself).
bool HoldsSocketBoundTo(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  for (int fd = 0; fd < 1024; ++fd) {
    sockaddr_un addr{};
    socklen_t len = sizeof(addr);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) continue;
    const std::string bound(addr.sun_path);
    if (addr.sun_family == AF_UNIX && bound.size() >= name.size() &&
        bound.compare(bound.size() - name.size(), name.size(), name) == 0)
      return true;
  }
  return false;
}

TEST(MonitorFaultsTest, ForkStormWithExitInChildrenWhileTheParentFlushesAndScrapes) {
  FakeCupti fake;
  const std::string dir = TempDir("fork-storm");
  MonitorOptions o = testing::TestDoubleOptions(&fake, dir);
  o.config.flush_ms = 50;  // the timer flushes during the storm; short enough, and no false gap under ASan
  auto m = Monitor::Start(std::move(o));
  ASSERT_TRUE(m) << m.error().message;
  const std::string socket = (*m)->control_socket_path();
  ASSERT_FALSE(socket.empty());
  ASSERT_TRUE(HoldsSocketBoundTo(socket));
  std::atomic<bool> done{false};
  const uint32_t k = fake.AddKernelName("k");
  std::thread producer([&] {
    FakeCupti::Producer* p = fake.NewProducer();
    for (uint64_t i = 0; !done.load(); ++i) {
      p->Kernel(k, i + 1, i + 2);
      if (i % 2000 == 0) (*m)->FlushAndWait();
    }
  });
  std::thread scraper([&] {
    while (!done.load()) {
      (void)(*m)->GetStats();
      pb::StatusReply status;
      (*m)->RunOnControl([&] { status = (*m)->control_target().Status(); });
    }
  });
  int bad = 0;
  std::string statuses;
  for (int i = 0; i < 40; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      // The child: the monitor's calls return at once, no listener is left, exit() ends it.
      (*m)->FlushAndWait();
      (void)(*m)->GetStats();
      if (HoldsSocketBoundTo(socket)) _exit(3);
      if ((*m)->RequestWindow(10, {}, pb::TRIGGER_API)) _exit(4);
      g_forked_test_child = 1;
      exit(0);
    }
    int status = 0;
    // Bounded: a child that hangs is killed and counted. A sanitizer's child forks and exits far
    // slower (TSan copies its shadow's page tables and checks at exit), the more so beside another
    // test on a loaded machine, so its bound is longer.
    const int max_waits = testing::kSanitized ? 12000 : 2000;  // 5 ms each
    for (int waited = 0;; ++waited) {
      const pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) break;
      if (waited > max_waits) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++bad;
      statuses += " child " + std::to_string(i) + ": " +
                  (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                     : "signal " + std::to_string(WTERMSIG(status)));
    }
  }
  done = true;
  producer.join();
  scraper.join();
  EXPECT_EQ(bad, 0) << statuses;
  (*m)->Stop();
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_EQ(rb.records, fake.produced());
}

// Descriptors of this process open on `dir` or on a file in it (from /proc/self/fd).
std::vector<int> FdsInto(const std::string& dir) {
  std::vector<int> fds;
  const std::string canonical = std::filesystem::canonical(dir).string();
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (!ec && (target == canonical || target.rfind(canonical + "/", 0) == 0))
      fds.push_back(std::stoi(e.path().filename().string()));
  }
  return fds;
}

TEST(MonitorFaultsTest, AForkedChildKeepsNoRecordingFileOrDirectoryOpen) {
  // A child forked without exec (DataLoader workers) that kept the open recording file would keep
  // its disk space after retention deletes it, for as long as the child lives.
  FakeCupti fake;
  const std::string dir = TempDir("fork-fds");
  auto m = Monitor::Start(testing::TestDoubleOptions(&fake, dir));
  ASSERT_TRUE(m) << m.error().message;
  FakeCupti::Producer* p = fake.NewProducer();
  const uint32_t k = fake.AddKernelName("k");
  p->Kernel(k, 1, 2);
  (*m)->FlushAndWait();
  const std::vector<int> parent = FdsInto(dir);
  // The recordings' directory, the file being written, and the control plane's vetted control
  // and registry directories (below `dir` in the test double's options).
  ASSERT_GE(parent.size(), 4u) << "the directories and the file being written are open";
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(pipe_fds[0]);
    const std::string left = std::to_string(FdsInto(dir).size());
    (void)!write(pipe_fds[1], left.data(), left.size());
    _exit(0);
  }
  close(pipe_fds[1]);
  char buf[16] = {};
  const ssize_t n = read(pipe_fds[0], buf, sizeof(buf) - 1);
  close(pipe_fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf), "0") << "descriptors into " << dir << " left open in the child";
  EXPECT_EQ(FdsInto(dir), parent) << "the parent keeps its own";
  p->Kernel(k, 3, 4);
  (*m)->Stop();
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_EQ(rb.records, fake.produced());
}

struct TermResult {
  int status = 0;
  uint64_t produced = 0;
  int resent = 0;      // signals sent again (ThreadSanitizer builds only; see RunTermChild)
  bool hung = false;   // the child was still there at the end and was SIGKILLed
  std::string what;    // when hung: where it stood
};

#if defined(__SANITIZE_THREAD__)
constexpr bool kThreadSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool kThreadSanitizer = true;
#else
constexpr bool kThreadSanitizer = false;
#endif
#else
constexpr bool kThreadSanitizer = false;
#endif

// The child's "produced N" line from `fd`, or 0 when it did not come within `ms`.
uint64_t ReadProduced(int fd, int ms) {
  std::string line;
  for (int waited = 0; waited < ms && line.find('\n') == std::string::npos;) {
    pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, 100);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) {
      waited += 100;
      continue;
    }
    char buf[64];
    const ssize_t got = read(fd, buf, sizeof buf);
    if (got <= 0) break;  // the child closed it (or died) without the line
    line.append(buf, static_cast<size_t>(got));
  }
  unsigned long long produced = 0;
  return std::sscanf(line.c_str(), "produced %llu", &produced) == 1 ? produced : 0;
}

// Waits up to `ms` for `pid` to end; true with its status when it did.
bool WaitWithin(pid_t pid, int* status, int ms) {
  for (int waited = 0; waited <= ms; waited += 10) {
    const pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return false;
    usleep(10000);
  }
  return false;
}

// Where the threads of `pid` stand: "[name] wchan" each, from /proc.
std::string ThreadsOf(pid_t pid) {
  std::string out;
  for (const auto& task : TasksOf(std::to_string(pid)))
    out += " [" + TaskFile(task, "comm") + "] " + TaskFile(task, "wchan");
  return out;
}

// Ends a child that did not end by itself, and says where its threads stood.
void KillHungChild(pid_t pid, TermResult* r, const char* stage) {
  r->hung = true;
  r->what = std::string("the child was still running ") + stage + "; its threads:" + ThreadsOf(pid);
  kill(pid, SIGKILL);
  waitpid(pid, &r->status, 0);
}

// mode: nullptr, "app-handler" or "sigwait" (term_child.cc). `sig` goes to the child's main
// thread (tgkill) or, with to_process, to the process (kill), where the kernel picks the thread.
// Never waits for good: a child that does not report within 60 s, or does not end within 20 s of
// the signal, is SIGKILLed and the result says `hung`, with where its threads stood.
// exit_timeout_ms: CUPMON_EXIT_TIMEOUT_MS for the child (nullptr: the default); resend: whether a
// ThreadSanitizer build sends the signal again when the child has not ended (see below).
TermResult RunTermChild(const std::string& dir, const char* mode, bool term_flush = true,
                        int sig = SIGTERM, bool to_process = false,
                        const char* exit_timeout_ms = nullptr, bool resend = true) {
  TermResult r;
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return r;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 3);
    if (!term_flush) setenv("CUPMON_TERM_FLUSH", "0", 1);
    if (exit_timeout_ms) setenv("CUPMON_EXIT_TIMEOUT_MS", exit_timeout_ms, 1);
    execl(CUPMON_TERM_CHILD, CUPMON_TERM_CHILD, dir.c_str(), "3", mode, nullptr);
    _exit(127);
  }
  close(pipe_fds[1]);
  r.produced = ReadProduced(pipe_fds[0], 60000);
  close(pipe_fds[0]);
  if (r.produced == 0) {
    if (!WaitWithin(pid, &r.status, 0)) KillHungChild(pid, &r, "without reporting its records");
    return r;
  }
  // To the child's main thread (in its sleep loop), not to the process: ThreadSanitizer runs a
  // handler only when the thread that took the signal reaches one of its intercepted calls, and
  // a process-directed SIGTERM that landed on another thread once left the child hanging in the
  // TSan suite. Which handler runs (the application's or cupmon's) is what these tests check.
  const auto send = [&] {
    if (to_process)
      kill(pid, sig);
    else
      syscall(SYS_tgkill, pid, pid, sig);
  };
  send();
  if (WaitWithin(pid, &r.status, 20000)) return r;
  // Under ThreadSanitizer a signal can fail to end the child, seen in the TSan suite with both
  // cores loaded, about once in 30 runs of a test: (1) "app-handler": the application's handler
  // never ran; the main thread was back in its usleep() loop with nothing pending in the kernel
  // (/proc SigPnd 0: the signal had reached TSan's handler). (2) No application handler: cupmon's
  // handler ran, the stop finished (Stop() returned true) and the cupmon-term thread called
  // raise(SIGTERM) with SIG_DFL restored; raise() never returned, that thread was gone, and the
  // process ran on. A second SIGTERM to the main thread then ended it at once, so these runs
  // pass with a note. Outside TSan (release and ASan suites, the GPU chaos runs) one signal must
  // do, and a child still there after 20 s fails the test.
  if (kThreadSanitizer && resend) r.what = "20 s after the signal its threads were:" + ThreadsOf(pid);
  while (kThreadSanitizer && resend && r.resent < 10) {
    ++r.resent;
    send();
    if (WaitWithin(pid, &r.status, 2000)) return r;
  }
  KillHungChild(pid, &r, "20 s after the signal");
  return r;
}

// Every test of the term child: it ended by itself (not SIGKILLed here), and whether a signal
// had to be sent again (ThreadSanitizer only) is in the log.
void ExpectEnded(const TermResult& r) {
  EXPECT_FALSE(r.hung) << r.what;
  if (r.resent > 0)
    std::printf("note: the signal was sent %d more time(s) (ThreadSanitizer); %s\n", r.resent,
                r.what.c_str());
}

TEST(MonitorFaultsTest, SigtermWithoutAnApplicationHandlerFlushesThenEndsTheProcess) {
  const std::string dir = TempDir("sigterm");
  const TermResult r = RunTermChild(dir, nullptr);
  ExpectEnded(r);
  ASSERT_EQ(r.produced, 5000u);
  // Ended by the signal, as it would have been without cupmon...
  ASSERT_TRUE(WIFSIGNALED(r.status)) << r.status;
  EXPECT_EQ(WTERMSIG(r.status), SIGTERM);
  // ...but with CUPTI's buffers flushed and the file closed.
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_EQ(rb.records, 5000u);
  EXPECT_TRUE(rb.have_footer_ended);
}

TEST(MonitorFaultsTest, SigtermWritesWhatCuptiHeldBeforeTheStopSoAKillRightAfterLosesNothing) {
  // At a Slurm time limit srun answers its own SIGTERM by SIGKILLing its tasks, milliseconds
  // after they got SIGTERM. Here the stop after SIGTERM never finishes (it blocks at
  // "term.stop"), so the records reach the file only if cupmon hands CUPTI's buffers to the
  // writer before it starts the stop; then SIGKILL, as srun sends it.
  const std::string dir = TempDir("sigterm-kill");
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 3);
    // The bound on the stop (below) must not end the process before the SIGKILL does.
    setenv("CUPMON_EXIT_TIMEOUT_MS", "60000", 1);
    execl(CUPMON_TERM_CHILD, CUPMON_TERM_CHILD, dir.c_str(), "3", "stop-hangs", nullptr);
    _exit(127);
  }
  close(pipe_fds[1]);
  const uint64_t produced = ReadProduced(pipe_fds[0], 60000);
  close(pipe_fds[0]);
  if (produced != 5000u) kill(pid, SIGKILL);
  ASSERT_EQ(produced, 5000u);
  syscall(SYS_tgkill, pid, pid, SIGTERM);
  uint64_t on_disk = 0;
  for (int waited_ms = 0; waited_ms < 20000 && on_disk < produced; waited_ms += 20) {
    usleep(20000);
    on_disk = ReadRecording(dir).records;
    // A signal ThreadSanitizer lost (RunTermChild): sent again every 5 s while nothing came.
    if (kThreadSanitizer && on_disk == 0 && waited_ms % 5000 == 4980)
      syscall(SYS_tgkill, pid, pid, SIGTERM);
  }
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL) << "the stop was to hang until the kill";
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.records, 5000u);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_FALSE(rb.have_footer_ended) << "the stop never ran, so no footer";
}

TEST(MonitorFaultsTest, SigtermWithTheFlushTurnedOffLosesWhatCuptiHeld) {
  // The counter-check of the test above: without the flush the records in CUPTI are gone.
  const std::string dir = TempDir("sigterm-off");
  const TermResult r = RunTermChild(dir, nullptr, /*term_flush=*/false);
  ExpectEnded(r);
  ASSERT_EQ(r.produced, 5000u);
  ASSERT_TRUE(WIFSIGNALED(r.status));
  EXPECT_EQ(WTERMSIG(r.status), SIGTERM);
  EXPECT_EQ(ReadRecording(dir).records, 0u);
}

// A hung stop or a hung CUPTI flush must not keep a job alive that SIGTERM would have ended:
// the process ends with the default action CUPMON_EXIT_TIMEOUT_MS + Monitor::kTermGraceMs after
// the signal. Under ThreadSanitizer the final raise can be lost (RunTermChild), so these run in
// the release and ASan suites.
// The term child in `mode`, with a 300 ms exit timeout: it must have ended by SIGTERM itself.
TermResult RunHungTermChild(const std::string& dir, const char* mode) {
  const TermResult r = RunTermChild(dir, mode, true, SIGTERM, false, "300", /*resend=*/false);
  ExpectEnded(r);
  EXPECT_EQ(r.produced, 5000u);
  EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGTERM)
      << "status " << r.status << ": not ended by the default action of SIGTERM";
  return r;
}

TEST(MonitorFaultsTest, SigtermWithAHungStopStillEndsTheProcessKeepingWhatWasFlushed) {
  if (kThreadSanitizer) GTEST_SKIP() << "ThreadSanitizer can lose the final raise (RunTermChild)";
  const std::string dir = TempDir("sigterm-stop-hangs");
  RunHungTermChild(dir, "stop-hangs");
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.records, 5000u) << "the forced flush before the stop reached the file";
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_FALSE(rb.have_footer_ended) << "the stop never ran";
}

TEST(MonitorFaultsTest, SigtermWithCuptisFlushHungStillEndsTheProcess) {
  if (kThreadSanitizer) GTEST_SKIP() << "ThreadSanitizer can lose the final raise (RunTermChild)";
  const std::string dir = TempDir("sigterm-flush-hangs");
  RunHungTermChild(dir, "flush-hangs");
  EXPECT_EQ(ReadRecording(dir).damage, 0u) << "what is there reads cleanly";
}

TEST(MonitorFaultsTest, SigtermWithAnApplicationHandlerIsLeftToTheApplication) {
  const std::string dir = TempDir("sigterm-app");
  const TermResult r = RunTermChild(dir, "app-handler");
  ExpectEnded(r);
  ASSERT_EQ(r.produced, 5000u);
  ASSERT_TRUE(WIFEXITED(r.status)) << r.status;
  EXPECT_EQ(WEXITSTATUS(r.status), 42);  // the application's handler ran
}

TEST(MonitorFaultsTest, AProcessSignalTheJobTakesWithSigwaitNeverLandsOnACupmonThread) {
  // The job blocks SIGHUP in its thread after cupmon started (its threads were made while the
  // job's thread still took SIGHUP) and waits for it with sigwait(). A process-directed SIGHUP
  // must reach that sigwait(): were a cupmon thread to take it, SIG_DFL would end the process.
  const std::string dir = TempDir("sigwait");
  const TermResult r = RunTermChild(dir, "sigwait", true, SIGHUP, /*to_process=*/true);
  ExpectEnded(r);
  ASSERT_EQ(r.produced, 5000u);
  ASSERT_TRUE(WIFEXITED(r.status)) << "ended by signal " << (WIFSIGNALED(r.status) ? WTERMSIG(r.status) : 0);
  EXPECT_EQ(WEXITSTATUS(r.status), 43);  // the job's sigwait() took it and shut down in order
  const auto rb = ReadRecording(dir);
  EXPECT_EQ(rb.damage, 0u);
  EXPECT_EQ(rb.records, 5000u);
}

// The SigBlk mask of each of this process's threads whose name starts with `prefix`.
std::vector<uint64_t> BlockedMasksOfThreads(const std::string& prefix) {
  std::vector<uint64_t> masks;
  for (const auto& task : TasksOf("self")) {
    if (TaskFile(task, "comm").rfind(prefix, 0) != 0) continue;
    FILE* status = std::fopen((task / "status").c_str(), "r");
    if (!status) continue;
    char line[256];
    while (std::fgets(line, sizeof line, status))
      if (std::strncmp(line, "SigBlk:", 7) == 0) masks.push_back(std::strtoull(line + 7, nullptr, 16));
    std::fclose(status);
  }
  return masks;
}

TEST(MonitorFaultsTest, CupmonThreadsBlockAsynchronousSignalsAndLeaveTheCallersMaskAsItWas) {
  sigset_t before, after;
  pthread_sigmask(SIG_SETMASK, nullptr, &before);
  FakeCupti fake;
  auto m = Monitor::Start(TestDoubleOptions(&fake, TempDir("sigmask")));
  ASSERT_TRUE(m) << m.error().message;
  pthread_sigmask(SIG_SETMASK, nullptr, &after);
  for (int sig = 1; sig < 32; ++sig)
    EXPECT_EQ(sigismember(&before, sig), sigismember(&after, sig)) << "signal " << sig;
  // Each thread names itself once it runs (its mask is set before that, at its creation): wait,
  // bounded, until all three have (CI once read the names before the control thread had set its own).
  for (int waited_ms = 0; waited_ms < 10000 && ThreadNamesStartingWith("cupmon-").size() < 3;
       waited_ms += 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto masks = BlockedMasksOfThreads("cupmon-");
  ASSERT_EQ(masks.size(), 3u) << "cupmon-writer, cupmon-control and cupmon-periodic";
  const auto bit = [](int sig) { return uint64_t{1} << (sig - 1); };
  for (uint64_t mask : masks) {
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2, SIGCHLD, SIGPIPE, SIGALRM})
      EXPECT_TRUE(mask & bit(sig)) << "signal " << sig << " not blocked, mask " << std::hex << mask;
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL})
      EXPECT_FALSE(mask & bit(sig)) << "synchronous signal " << sig << " blocked";
  }
  (*m)->Stop();
}

TEST(MonitorFaultsTest, ASlowClockReadDoesNotSkewTheCalibrationSample) {
  // The test double's clock is CLOCK_REALTIME itself, so a perfect sample has cupti == realtime.
  // One read 4 ms slow would put a single bracket's midpoint 2 ms off; the narrowest of the
  // sample's brackets is kept instead.
  FakeCupti fake;
  for (int slow_calls : {1, 2}) {
    fake.DelayNextTimestamps(slow_calls, 4000);
    const pb::CalibrationSample s = TakeCalibrationSample(fake);
    const int64_t error = static_cast<int64_t>(s.cupti_ns()) - s.realtime_ns();
    EXPECT_LT(std::llabs(error), 500'000) << slow_calls << " slow read(s): " << error << " ns off";
  }
}

TEST(StringTableTest, NamesAndLabelsBeyondTheirByteCapsAreRefusedAndCounted) {
  StringTable::Limits limits;
  limits.max_label_bytes = 4 * (10 + 96);  // room for four 10-byte labels
  limits.max_label_length = 64;
  StringTable table(limits);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(table.InternLabel("label-" + std::to_string(1000 + i)));
  auto refused = table.InternLabel("label-9999");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("reuse labels"), std::string::npos);
  EXPECT_EQ(table.labels_refused(), 1u);
  // A known label is still answered (from this thread's cache, without the table's lock).
  auto again = table.InternLabel("label-1000");
  ASSERT_TRUE(again);
  EXPECT_EQ(table.InternLabel("label-1000").value(), *again);
  EXPECT_FALSE(table.InternLabel(std::string(65, 'x')));  // too long
  std::vector<pb::StringEntry> entries;
  table.TakeNew(&entries);
  EXPECT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].pointer(), table.InternLabel("label-1000").value());
}

TEST(StringTableTest, KernelNamesStopAtTheByteCap) {
  // Kernel records from the test double, interned through a real table with a small cap.
  FakeCupti fake;
  std::vector<std::string> warnings;
  SessionFacts facts = ProbeSessionFacts(fake, MonitorConfig{}, "test-double", true, &warnings);
  ASSERT_NE(facts.kernel_name_offset, 0u);
  StringTable::Limits limits;
  limits.max_bytes = 3 * (100 + 96);
  StringTable table(limits);
  alignas(8) uint8_t buffer[216 * 5] = {};
  std::vector<std::string> names;
  for (int i = 0; i < 5; ++i) names.push_back(std::string(100, static_cast<char>('a' + i)));
  for (int i = 0; i < 5; ++i) {
    uint8_t* rec = buffer + 216 * i;
    const uint32_t kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    std::memcpy(rec, &kind, 4);
    const uint64_t ptr = reinterpret_cast<uint64_t>(names[i].c_str());
    std::memcpy(rec + facts.kernel_name_offset, &ptr, 8);
  }
  table.InternBuffer(facts, buffer, sizeof(buffer));
  EXPECT_EQ(table.strings(), 3u);
  EXPECT_EQ(table.strings_refused(), 2u);
  EXPECT_LE(table.bytes(), limits.max_bytes);
}

}  // namespace
}  // namespace cupmon
