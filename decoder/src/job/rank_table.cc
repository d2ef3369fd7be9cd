// BuildRankTable (one rank's side of the job analysis) and the `.cupmon-job` file form.
#include "job/rank_table.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <string_view>

#include "cupmon/base/file_system.h"
#include "job/job_analysis.h"

namespace cupmon::decoder::job {
namespace {

// Splits [since, end] of one rank by what its GPU runs (RankStep's contract) and measures the idle
// time before `cutoff` (the host gap). `spans` by start, `max_end` their prefix maximum of ends.
void Split(const std::vector<GpuSpan>& spans, const std::vector<uint64_t>& max_end, uint64_t since,
           uint64_t end, uint64_t cutoff, TableRow* out) {
  struct Edge {
    uint64_t t;
    int work, coll;
  };
  std::vector<Edge> edges;
  const auto hi = static_cast<size_t>(
      std::lower_bound(spans.begin(), spans.end(), end,
                       [](const GpuSpan& s, uint64_t t) { return s.start < t; }) -
      spans.begin());
  for (size_t i = hi; i-- > 0 && max_end[i] > since;) {
    const GpuSpan& s = spans[i];
    const uint64_t a = std::max(s.start, since), b = std::min(s.end, end);
    if (b <= a) continue;
    edges.push_back({a, s.collective ? 0 : 1, s.collective ? 1 : 0});
    edges.push_back({b, s.collective ? 0 : -1, s.collective ? -1 : 0});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& x, const Edge& y) { return x.t < y.t; });
  int work = 0, coll = 0;
  uint64_t at = since;
  auto account = [&](uint64_t to) {
    if (to <= at) return;
    const uint64_t len = to - at;
    if (work > 0 && coll > 0)
      out->both_ns += len;
    else if (work > 0)
      out->work_alone_ns += len;
    else if (coll > 0)
      out->collective_alone_ns += len;
    else {
      out->idle_ns += len;
      if (at < cutoff) out->host_gap_ns += std::min(to, cutoff) - at;
    }
    at = to;
  };
  for (const Edge& e : edges) {
    account(e.t);
    work += e.work;
    coll += e.coll;
  }
  account(end);
}

// Varints (LEB128) and zigzag for signed values.
class Encoder {
 public:
  void U(uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  }
  void I(int64_t v) { U((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63)); }
  void S(std::string_view s) {
    U(s.size());
    out.append(s);
  }
  std::string out;
};

class Decoder {
 public:
  Decoder(const char* p, size_t n) : p_(p), end_(p + n) {}
  uint64_t U() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return Bad();
      const auto b = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    return Bad();
  }
  int64_t I() {
    const uint64_t v = U();
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  }
  // A count of items that take at least one byte each.
  uint64_t Count() {
    const uint64_t n = U();
    return n <= Left() ? n : Bad();
  }
  std::string S() {
    const uint64_t n = U();
    if (n > Left()) return Bad(), std::string();
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  size_t Left() const { return static_cast<size_t>(end_ - p_); }
  bool ok() const { return ok_; }

 private:
  uint64_t Bad() {
    ok_ = false;
    p_ = end_;
    return 0;
  }
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

constexpr char kMagic[8] = {'C', 'U', 'P', 'M', 'J', 'O', 'B', '\x01'};

void EncodeRow(Encoder& e, const TableRow& r) {
  e.U(r.number);
  e.U(r.since);
  e.U(r.end - r.since);
  e.I(r.wall_start);
  e.I(r.wall_end - r.wall_start);
  for (uint64_t v : {r.work_alone_ns, r.collective_alone_ns, r.both_ns, r.idle_ns, r.host_gap_ns,
                     r.collectives})
    e.U(v);
  e.U(r.streams.size());
  for (const StepCollectives& c : r.streams) {
    e.U(c.stream);
    e.U(c.first);
    e.U(c.durations.size());
    for (uint64_t d : c.durations) e.U(d);
  }
  e.U(r.work_by_name.size());
  for (const NameTime& n : r.work_by_name) e.U(n.name), e.U(n.ns);
}

bool DecodeRow(Decoder& d, const RankTableHeader& h, TableRow* r) {
  r->number = d.U();
  r->since = d.U();
  r->end = r->since + d.U();
  r->wall_start = d.I();
  r->wall_end = r->wall_start + d.I();
  for (uint64_t* v : {&r->work_alone_ns, &r->collective_alone_ns, &r->both_ns, &r->idle_ns,
                      &r->host_gap_ns, &r->collectives})
    *v = d.U();
  r->streams.resize(d.Count());
  for (StepCollectives& c : r->streams) {
    c.stream = static_cast<uint32_t>(d.U());
    c.first = d.U();
    c.durations.resize(d.Count());
    for (uint64_t& x : c.durations) x = d.U();
    if (c.stream >= h.streams.size()) return false;
  }
  r->work_by_name.resize(d.Count());
  for (NameTime& n : r->work_by_name) {
    n.name = static_cast<uint32_t>(d.U());
    n.ns = d.U();
    if (n.name >= h.names.size()) return false;
  }
  return d.ok();
}

std::string EncodeHeader(const RankTableHeader& h) {
  Encoder e;
  e.S(h.who.label);
  e.U(h.who.rank);
  e.U(h.who.rank_from_header);
  e.U(h.who.pid);
  e.S(h.who.host);
  e.S(h.who.job);
  e.U(h.who.paths.size());
  for (const auto& p : h.who.paths) e.S(p);
  e.U(h.names.size());
  for (const auto& n : h.names) e.S(n);
  e.U(h.streams.size());
  for (const TableStream& s : h.streams) e.S(s.key), e.U(s.stream), e.U(s.instances);
  e.U(h.completed_collectives);
  e.S(h.last_kernel);
  e.I(h.last_kernel_wall_end);
  e.U(h.unfinished.size());
  for (const TableUnfinished& u : h.unfinished) e.U(u.name), e.U(u.stream), e.U(u.collective);
  e.U(h.rows);
  return std::move(e.out);
}

bool DecodeHeader(Decoder& d, RankTableHeader* h) {
  h->who.label = d.S();
  h->who.rank = static_cast<uint32_t>(d.U());
  h->who.rank_from_header = d.U() != 0;
  h->who.pid = static_cast<uint32_t>(d.U());
  h->who.host = d.S();
  h->who.job = d.S();
  h->who.paths.resize(d.Count());
  for (auto& p : h->who.paths) p = d.S();
  h->names.resize(d.Count());
  for (auto& n : h->names) n = d.S();
  h->streams.resize(d.Count());
  for (TableStream& s : h->streams) {
    s.key = d.S();
    s.stream = static_cast<uint32_t>(d.U());
    s.instances = d.U();
  }
  h->completed_collectives = d.U();
  h->last_kernel = d.S();
  h->last_kernel_wall_end = d.I();
  h->unfinished.resize(d.Count());
  for (TableUnfinished& u : h->unfinished) {
    u.name = static_cast<uint32_t>(d.U());
    u.stream = static_cast<uint32_t>(d.U());
    u.collective = d.U() != 0;
    if (u.name >= h->names.size()) return false;
  }
  h->rows = d.U();
  return d.ok();
}

Error FileError(const std::string& path, const std::string& what, int err = 0) {
  return Error{path + ": " + what + (err ? std::string(": ") + std::strerror(err) : ""), err};
}

// Reads exactly n bytes at `at`.
Expected<void> ReadAt(int fd, const std::string& path, uint64_t at, char* out, size_t n) {
  while (n) {
    const ssize_t got = pread(fd, out, n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return unexpected(FileError(path, "cannot read", errno));
    if (got == 0) return unexpected(FileError(path, "cut short at byte " + std::to_string(at)));
    out += got, n -= static_cast<size_t>(got), at += static_cast<uint64_t>(got);
  }
  return {};
}

Expected<int> OpenRead(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return unexpected(FileError(path, "cannot open", errno));
  return fd;
}

}  // namespace

RankTable BuildRankTable(const RankInput& in) {
  RankTable t;
  RankTableHeader& h = t.header;
  h.who = in.who;
  h.who.label = in.label;
  h.names = in.names;
  std::vector<GpuSpan> spans = in.spans;
  std::stable_sort(spans.begin(), spans.end(),
                   [](const GpuSpan& a, const GpuSpan& b) { return a.start < b.start; });
  std::vector<uint64_t> max_end(spans.size());
  std::map<uint32_t, std::vector<size_t>> collectives;  // CUDA stream -> span indices
  uint64_t m = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    m = std::max(m, spans[i].end);
    max_end[i] = m;
    if (spans[i].collective) collectives[spans[i].stream].push_back(i);
  }
  for (const GpuSpan& g : spans) {
    if (g.collective) ++h.completed_collectives;
    if (!h.last_kernel.empty() && g.wall_end < h.last_kernel_wall_end) continue;
    h.last_kernel = in.names[g.name];
    h.last_kernel_wall_end = g.wall_end;
  }
  for (const Unfinished& u : in.unfinished) h.unfinished.push_back({u.name, u.stream, u.collective});

  // Streams by first launch; each keyed by its most frequent name (the lowest index on a tie).
  std::vector<std::pair<uint64_t, uint32_t>> by_first;
  for (const auto& [stream, idx] : collectives) by_first.emplace_back(spans[idx.front()].start, stream);
  std::sort(by_first.begin(), by_first.end());
  std::vector<int32_t> stream_of(spans.size(), -1);
  std::vector<uint64_t> instance_of(spans.size(), 0);
  std::map<std::string, int> seen;
  for (const auto& [first, stream] : by_first) {
    const auto& idx = collectives[stream];
    std::map<uint32_t, size_t> count;
    for (size_t i : idx) ++count[spans[i].name];
    uint32_t best = 0;
    size_t n = 0;
    for (const auto& [name, c] : count)
      if (c > n) best = name, n = c;
    std::string key = in.names[best];
    if (const int k = ++seen[key]; k > 1) key += " #" + std::to_string(k);
    const auto s = static_cast<int32_t>(h.streams.size());
    h.streams.push_back({key, stream, idx.size()});
    std::vector<Instance>& seq = t.sequences.emplace_back();
    for (size_t i : idx) {
      stream_of[i] = s;
      instance_of[i] = seq.size();
      seq.push_back({spans[i].start, spans[i].end, spans[i].wall_end, spans[i].name});
    }
  }

  std::map<std::string_view, uint32_t> name_index;  // one index per distinct name
  for (size_t i = 0; i < in.names.size(); ++i)
    name_index.try_emplace(in.names[i], static_cast<uint32_t>(i));
  for (const StepSpan& st : in.steps) {
    TableRow& r = t.rows.emplace_back();
    r.number = st.number;
    r.since = st.since;
    r.end = std::max(st.end, st.since);
    r.wall_start = st.wall_start;
    r.wall_end = st.wall_end;
    const auto first = static_cast<size_t>(
        std::lower_bound(spans.begin(), spans.end(), st.since,
                         [](const GpuSpan& g, uint64_t x) { return g.start < x; }) -
        spans.begin());
    uint64_t cutoff = st.end;
    std::map<uint32_t, uint64_t> work;
    for (size_t i = first; i < spans.size() && spans[i].start < st.end; ++i) {
      const GpuSpan& g = spans[i];
      if (!g.collective) {
        work[name_index.at(in.names[g.name])] += g.end - g.start;
        continue;
      }
      if (r.collectives++ == 0) cutoff = g.start;
      const auto s = static_cast<uint32_t>(stream_of[i]);
      auto it = std::find_if(r.streams.begin(), r.streams.end(),
                             [&](const StepCollectives& c) { return c.stream == s; });
      if (it == r.streams.end()) {
        r.streams.push_back({s, instance_of[i], {}});
        it = r.streams.end() - 1;
      }
      it->durations.push_back(g.end - g.start);
    }
    std::sort(r.streams.begin(), r.streams.end(),
              [](const StepCollectives& a, const StepCollectives& b) { return a.stream < b.stream; });
    for (const auto& [name, ns] : work) r.work_by_name.push_back({name, ns});
    if (st.end > st.since) Split(spans, max_end, st.since, st.end, cutoff, &r);
  }
  h.rows = t.rows.size();
  return t;
}

Expected<void> WriteRankTable(const std::string& path, const RankTable& t) {
  Encoder seq;
  for (const auto& s : t.sequences) {
    seq.U(s.size());
    uint64_t prev = 0;
    int64_t prev_wall = 0;
    for (const Instance& i : s) {
      seq.I(static_cast<int64_t>(i.start - prev));
      seq.U(i.end - i.start);
      seq.I(i.wall_end - prev_wall);
      seq.U(i.name);
      prev = i.start;
      prev_wall = i.wall_end;
    }
  }
  Encoder rows;
  Encoder one;
  for (const TableRow& r : t.rows) {
    one.out.clear();
    EncodeRow(one, r);
    rows.S(one.out);
  }
  RankTableHeader h = t.header;
  h.rows = t.rows.size();
  Encoder head;
  head.S(EncodeHeader(h));
  head.U(seq.out.size());
  head.U(rows.out.size());
  const std::string tmp = path + ".part";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return unexpected(FileError(tmp, "cannot create", errno));
  UniqueFd owner(fd);
  const auto fail = [&] {
    const int e = errno;
    unlink(tmp.c_str());
    return unexpected(FileError(tmp, "cannot write", e));
  };
  for (const std::string* part : {&head.out, &seq.out, &rows.out}) {
    std::string_view left = *part;
    if (part == &head.out) {
      std::string all(kMagic, sizeof(kMagic));
      all += head.out;
      if (write(fd, all.data(), all.size()) != static_cast<ssize_t>(all.size())) return fail();
      continue;
    }
    while (!left.empty()) {
      const ssize_t n = write(fd, left.data(), left.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return fail();
      left.remove_prefix(static_cast<size_t>(n));
    }
  }
  if (close(owner.release()) != 0) return fail();
  if (rename(tmp.c_str(), path.c_str()) != 0)
    return unexpected(FileError(path, "cannot rename " + tmp + " to it", errno));
  return {};
}

Expected<RankTableFile> RankTableFile::Open(const std::string& path) {
  auto fd = OpenRead(path);
  if (!fd) return unexpected(fd.error());
  const UniqueFd owner(*fd);
  struct stat st {};
  if (fstat(*fd, &st) != 0) return unexpected(FileError(path, "cannot stat", errno));
  const auto size = static_cast<uint64_t>(st.st_size);
  // The magic and the header's length prefix, then the header with the parts' sizes.
  char start[8 + 10];
  const size_t want = static_cast<size_t>(std::min<uint64_t>(sizeof(start), size));
  if (auto ok = ReadAt(*fd, path, 0, start, want); !ok) return unexpected(ok.error());
  if (want < 9 || std::memcmp(start, kMagic, 7) != 0)
    return unexpected(FileError(path, "not a cupmon job table (made by cupmon-decode job "
                                      "--tables-out)"));
  if (start[7] != kMagic[7])
    return unexpected(FileError(path, "a job table of another version (" +
                                          std::to_string(static_cast<uint8_t>(start[7])) +
                                          "; this cupmon-decode reads " +
                                          std::to_string(static_cast<uint8_t>(kMagic[7])) + ")"));
  Decoder len(start + 8, want - 8);
  const uint64_t head_size = len.U();
  const uint64_t head_at = 8 + (want - 8 - len.Left());
  if (!len.ok() || head_at + head_size + 2 > size)
    return unexpected(FileError(path, "cut short in its header"));
  std::string head(static_cast<size_t>(std::min<uint64_t>(head_size + 20, size - head_at)), '\0');
  if (auto ok = ReadAt(*fd, path, head_at, head.data(), head.size()); !ok)
    return unexpected(ok.error());
  RankTableFile f;
  f.path_ = path;
  Decoder hd(head.data(), static_cast<size_t>(head_size));
  if (!DecodeHeader(hd, &f.header_) || hd.Left())
    return unexpected(FileError(path, "damaged header"));
  Decoder sizes(head.data() + head_size, head.size() - static_cast<size_t>(head_size));
  f.sequences_size_ = sizes.U();
  f.rows_size_ = sizes.U();
  if (!sizes.ok()) return unexpected(FileError(path, "cut short in its header"));
  f.sequences_at_ = head_at + head_size + (head.size() - head_size - sizes.Left());
  f.rows_at_ = f.sequences_at_ + f.sequences_size_;
  if (f.rows_at_ + f.rows_size_ != size)
    return unexpected(FileError(path, (f.rows_at_ + f.rows_size_ > size ? "cut short: " : "damaged: ") +
                                          std::to_string(size) + " bytes, its header says " +
                                          std::to_string(f.rows_at_ + f.rows_size_)));
  return f;
}

Expected<std::vector<std::vector<Instance>>> RankTableFile::Sequences() const {
  auto fd = OpenRead(path_);
  if (!fd) return unexpected(fd.error());
  const UniqueFd owner(*fd);
  std::string bytes(static_cast<size_t>(sequences_size_), '\0');
  if (auto ok = ReadAt(*fd, path_, sequences_at_, bytes.data(), bytes.size()); !ok)
    return unexpected(ok.error());
  Decoder d(bytes.data(), bytes.size());
  std::vector<std::vector<Instance>> out(header_.streams.size());
  bool ok = true;
  for (size_t s = 0; s < out.size() && ok; ++s) {
    const uint64_t n = d.Count();
    ok = n == header_.streams[s].instances;
    if (!ok) break;
    out[s].resize(static_cast<size_t>(n));
    uint64_t prev = 0;
    int64_t prev_wall = 0;
    for (Instance& i : out[s]) {
      i.start = prev + static_cast<uint64_t>(d.I());
      i.end = i.start + d.U();
      i.wall_end = prev_wall + d.I();
      i.name = static_cast<uint32_t>(d.U());
      ok &= i.name < header_.names.size();
      prev = i.start;
      prev_wall = i.wall_end;
    }
  }
  if (!ok || !d.ok() || d.Left())
    return unexpected(FileError(path_, "damaged collective sequences at byte " +
                                           std::to_string(sequences_at_)));
  return out;
}

Expected<void> RankTableFile::ReadRows(uint64_t* pos, bool (*take)(void*, const TableRow&),
                                       void* ctx) const {
  if (*pos >= rows_size_) return {};
  auto fd = OpenRead(path_);
  if (!fd) return unexpected(fd.error());
  const UniqueFd owner(*fd);
  constexpr size_t kChunk = 64 * 1024;
  std::string buf;
  uint64_t buf_at = *pos;  // rows-section offset of buf[0]
  TableRow row;
  while (*pos < rows_size_) {
    // Enough bytes for the length prefix and the row it announces.
    auto fill = [&](uint64_t need_to) -> Expected<void> {
      if (need_to <= buf_at + buf.size()) return {};
      const uint64_t until = std::min(rows_size_, std::max(need_to, *pos + kChunk));
      buf.erase(0, static_cast<size_t>(*pos - buf_at));
      buf_at = *pos;
      const size_t old = buf.size();
      buf.resize(static_cast<size_t>(until - buf_at));
      return ReadAt(*fd, path_, rows_at_ + buf_at + old, buf.data() + old, buf.size() - old);
    };
    if (auto ok = fill(std::min(rows_size_, *pos + 10)); !ok) return ok;
    Decoder len(buf.data() + (*pos - buf_at), buf.size() - static_cast<size_t>(*pos - buf_at));
    const uint64_t n = len.U();
    const uint64_t body = *pos + (buf.size() - static_cast<size_t>(*pos - buf_at) - len.Left());
    if (!len.ok() || body + n > rows_size_)
      return unexpected(FileError(path_, "damaged row at byte " + std::to_string(rows_at_ + *pos)));
    if (auto ok = fill(body + n); !ok) return ok;
    Decoder d(buf.data() + (body - buf_at), static_cast<size_t>(n));
    if (!DecodeRow(d, header_, &row) || d.Left())
      return unexpected(FileError(path_, "damaged row at byte " + std::to_string(rows_at_ + *pos)));
    if (!take(ctx, row)) return {};
    *pos = body + n;
  }
  return {};
}

std::vector<std::string> FindTableFiles(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  auto is_table = [](const fs::path& p) {
    std::error_code ec;
    return p.string().ends_with(kTableSuffix) && fs::is_regular_file(p, ec);
  };
  for (const std::string& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      if (is_table(p)) out.push_back(p);
      continue;
    }
    for (const auto& e : fs::directory_iterator(p, ec)) {
      if (is_table(e.path())) out.push_back(e.path().string());
      std::error_code sub_ec;
      if (e.is_directory(sub_ec))
        for (const auto& f : fs::directory_iterator(e.path(), sub_ec))
          if (is_table(f.path())) out.push_back(f.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace cupmon::decoder::job
