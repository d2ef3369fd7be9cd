// SQLite table B-trees without SQLite (see sqlite_pages.h). The layout follows "Database File
// Format" (https://www.sqlite.org/fileformat2.html): sections 1.3 (the header), 1.6 (B-tree
// pages), 2.1 (records) and the varint of 1.6.
#include "export/sqlite/sqlite_pages.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace cupmon::decoder {
namespace {

constexpr uint8_t kTableLeaf = 0x0D;
constexpr uint8_t kTableInterior = 0x05;
constexpr uint8_t kIndexLeaf = 0x0A;
constexpr uint8_t kIndexInterior = 0x02;
constexpr size_t kMaxIndexPayload = 3 + 8 + 8;  // header (size, two serial types), key, rowid
constexpr size_t kLeafHeader = 8;
constexpr size_t kInteriorHeader = 12;
constexpr size_t kMaxVarint = 9;
constexpr size_t kFixedBytes = 32;  // a fixed step's most serial-type bytes, and body bytes

// SQLite's varint: big-endian groups of seven bits, the high bit set on all but the last byte; a
// ninth byte carries eight bits.
[[gnu::always_inline]] inline size_t PutVarint(uint8_t* p, uint64_t v) {
  if (v <= 0x7f) {
    p[0] = static_cast<uint8_t>(v);
    return 1;
  }
  if (v <= 0x3fff) {
    p[0] = static_cast<uint8_t>(0x80 | v >> 7);
    p[1] = static_cast<uint8_t>(v & 0x7f);
    return 2;
  }
  if (v >> 56) {
    p[8] = static_cast<uint8_t>(v);
    v >>= 8;
    for (int i = 7; i >= 0; --i) {
      p[i] = static_cast<uint8_t>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    return 9;
  }
  uint8_t groups[8];
  size_t n = 0;
  do {
    groups[n++] = static_cast<uint8_t>((v & 0x7f) | 0x80);
    v >>= 7;
  } while (v);
  groups[0] &= 0x7f;  // the last byte written
  for (size_t i = 0; i < n; ++i) p[i] = groups[n - 1 - i];
  return n;
}

size_t VarintSize(uint64_t v) {
  uint8_t scratch[kMaxVarint];
  return PutVarint(scratch, v);
}

void Put16(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
void Put32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
uint32_t Get32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}

// An integer's serial type (record format, section 2.1) at *type and its body, big-endian, at
// `body`: the smallest size that holds it, from the count of its significant bits, written with
// one eight-byte store (so eight bytes at `body` must be writable). Returns the body's end.
constexpr uint8_t kSizeOfBytes[9] = {0, 1, 2, 3, 4, 6, 6, 8, 8};  // bytes needed -> stored
constexpr uint8_t kTypeOfBytes[9] = {0, 1, 2, 3, 4, 5, 5, 6, 6};
[[gnu::always_inline]] inline uint8_t* PutInt(uint8_t* type, uint8_t* body, int64_t v,
                                              bool small_ints) {
  if (small_ints && static_cast<uint64_t>(v) <= 1) {
    *type = static_cast<uint8_t>(8 + v);
    return body;
  }
  const uint64_t magnitude = static_cast<uint64_t>(v ^ (v >> 63));
  const int bits = 65 - __builtin_clzll(magnitude | 1);  // with the sign bit
  const int needed = (bits + 7) / 8;
  const int size = kSizeOfBytes[needed];
  *type = kTypeOfBytes[needed];
  const uint64_t big_endian = __builtin_bswap64(static_cast<uint64_t>(v) << (64 - 8 * size));
  std::memcpy(body, &big_endian, 8);
  return body + size;
}

// A B-tree page's header (section 1.6) once its cells are in: `type`, no freeblock, `cells` cells,
// the content area from `content`, no fragmented bytes; the space between the cell pointers and
// the content zeroed. An interior page's right-most pointer (bytes 8-11) is the caller's.
void FinishPage(uint8_t* page, uint8_t type, uint32_t cells, uint32_t content, size_t header) {
  page[0] = type;
  Put16(page + 1, 0);
  Put16(page + 3, cells);
  Put16(page + 5, content == 65536 ? 0 : content);
  page[7] = 0;
  const size_t pointers_end = header + 2 * size_t{cells};
  std::memset(page + pointers_end, 0, content - pointers_end);
}

// pwrite until all `size` bytes are written; errno of the failure (EIO for a write of nothing),
// or 0.
int WriteAll(int fd, const uint8_t* data, size_t size, uint64_t offset) {
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd, data + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

struct SqliteTablePages::Table {
  std::string name;
  std::vector<Column> columns;
  int max_cell = -1;
  std::vector<uint8_t> leaf, first;  // the leaf being filled; the table's first full leaf, held
  uint32_t cells = 0;                // in `leaf`
  uint32_t content = 0;              // where `leaf`'s cell content area starts
  int64_t leaf_max = 0;              // the largest rowid in `leaf`
  bool first_held = false;           // `first` is full and not written yet (it may be the root)
  int64_t first_max = 0;
  // The leaves written, in rowid order: their index in the leaf file and their largest rowid.
  std::vector<std::pair<uint32_t, int64_t>> children;
  int64_t next_rowid = 1;
  std::vector<uint8_t> record;  // one row's cell, built before it is placed
  std::vector<Index*> indexes;
  // The columns as Append encodes them. Neighbouring NULLs and constants are encoded beforehand
  // into one kFixed step of up to kFixedBytes serial-type bytes and body bytes (more: the next
  // step), each copied as kFixedBytes bytes whatever its size (`record` has room after both).
  struct Step {
    enum Kind : uint8_t { kFixed, kCell } kind = kFixed;
    bool not_null = false;                  // kCell
    uint8_t types_size = 0, body_size = 0;  // kFixed
    int cell = 0;                       // kCell
    const std::string* name = nullptr;  // kCell: the column's, for the NOT NULL message
    uint8_t types[kFixedBytes] = {}, body[kFixedBytes] = {};  // kFixed
  };
  std::vector<Step> steps;
};

struct SqliteTablePages::Index {
  std::string name;
  int cell = 0;
  std::vector<Entry> buffer;                        // entries not yet in a run
  struct Run {
    uint64_t offset, bytes, entries;  // in runs_fd_
  };
  std::vector<Run> runs;  // sorted runs, delta-coded (RunCoder)
  uint64_t entries = 0;
};

SqliteTablePages::SqliteTablePages(int fd, int runs_fd, uint32_t page_size, uint32_t reserved,
                                   bool small_ints)
    : fd_(fd),
      runs_fd_(runs_fd),
      page_size_(page_size),
      usable_(page_size - reserved),
      small_ints_(small_ints) {}

SqliteTablePages::~SqliteTablePages() = default;

bool SqliteTablePages::Fail(std::string what) {
  if (error_.empty()) error_ = std::move(what);
  return false;
}

uint64_t SqliteTablePages::rows(int id) const {
  return Has(id) ? static_cast<uint64_t>(tables_[id]->next_rowid - 1) : 0;
}

bool SqliteTablePages::SetTable(int id, const std::string& name, std::vector<Column> columns) {
  if (id < 0 || id >= kMaxTables)
    return Fail("table number " + std::to_string(id) + " is out of range");
  if (page_size_ < 512 || page_size_ > 65536 || (page_size_ & (page_size_ - 1)) || usable_ < 480 ||
      usable_ > page_size_)
    return Fail("unusable page size " + std::to_string(page_size_));
  auto t = std::make_unique<Table>();
  t->name = name;
  // The largest record: a header of one varint per column (a text's serial type may take more)
  // and eight body bytes per integer.
  size_t most = kMaxVarint;
  for (const Column& c : columns) {
    if (c.source == Column::kNull && c.not_null)
      return Fail(name + "." + c.name + " is NOT NULL and has no value");
    if (c.source == Column::kCell) t->max_cell = std::max(t->max_cell, c.cell);
    most += c.source == Column::kText ? kMaxVarint + c.text.size() : kMaxVarint + 8;
  }
  // A cell is its payload's size, the rowid and the payload; a payload beyond usable - 35 would
  // need overflow pages (section 1.6), which these tables never do.
  if (columns.empty() || most > usable_ - 35)
    return Fail("the rows of " + name + " may not fit a page of " + std::to_string(page_size_) +
                " bytes");
  t->columns = std::move(columns);
  using Step = Table::Step;
  // The fixed step that `types` and `body` bytes go into: the last step, or a new one.
  const auto fixed_for = [&](size_t types, size_t body) -> Step& {
    if (t->steps.empty() || t->steps.back().kind != Step::kFixed ||
        t->steps.back().types_size + types > kFixedBytes ||
        t->steps.back().body_size + body > kFixedBytes)
      t->steps.emplace_back();
    return t->steps.back();
  };
  for (const Column& c : t->columns) {
    if (c.source == Column::kCell) {
      Step& st = t->steps.emplace_back();
      st.kind = Step::kCell;
      st.cell = c.cell;
      st.not_null = c.not_null;
      st.name = &c.name;  // t->columns does not change from here on
      continue;
    }
    uint8_t types[kMaxVarint], body[kMaxVarint + 8];
    size_t types_size = 1;
    const uint8_t* body_bytes = body;
    size_t body_size = 0;
    if (c.source == Column::kNull) {
      types[0] = 0;
    } else if (c.source == Column::kInt) {
      body_size = static_cast<size_t>(PutInt(types, body, c.value, small_ints_) - body);
    } else {
      types_size = PutVarint(types, 13 + 2 * uint64_t{c.text.size()});
      body_bytes = reinterpret_cast<const uint8_t*>(c.text.data());
      body_size = c.text.size();
    }
    for (size_t at = 0; at == 0 || at < body_size; at += kFixedBytes) {  // a long text: in parts
      const size_t part = std::min(kFixedBytes, body_size - at);
      Step& st = fixed_for(at == 0 ? types_size : 0, part);
      if (at == 0) {
        std::memcpy(st.types + st.types_size, types, types_size);
        st.types_size = static_cast<uint8_t>(st.types_size + types_size);
      }
      std::memcpy(st.body + st.body_size, body_bytes + at, part);
      st.body_size = static_cast<uint8_t>(st.body_size + part);
    }
  }
  // The record: room for the cell's three varints, the serial types and the body; after each of
  // the last two, kFixedBytes of slack (a fixed step's copy; an integer's eight-byte store).
  t->record.resize(3 * kMaxVarint + kMaxVarint * t->columns.size() + kFixedBytes + most +
                   kFixedBytes);
  t->leaf.assign(page_size_, 0);
  t->first.assign(page_size_, 0);
  t->content = usable_;
  tables_[id] = std::move(t);
  return true;
}

bool SqliteTablePages::SetIndex(int id, const std::string& name, const std::string& column) {
  if (!Has(id)) return Fail("index " + name + " is on a table the pages do not hold");
  Table& t = *tables_[id];
  const auto c = std::find_if(t.columns.begin(), t.columns.end(),
                              [&](const Column& k) { return k.name == column; });
  if (c == t.columns.end() || c->source != Column::kCell)
    return Fail("index " + name + " is on " + t.name + "." + column +
                ", which is not a column the rows give");
  auto x = std::make_unique<Index>();
  x->name = name;
  x->cell = c->cell;
  // Room for a run at once (address space: its pages are touched only as entries arrive), rather
  // than grown by copies up to it.
  x->buffer.reserve(run_entries_);
  t.indexes.push_back(x.get());
  indexes_.push_back(std::move(x));
  return true;
}

namespace {
// SQLite's order of index entries: NULL (kNullCell) first, then by value, then by rowid. A type
// rather than a function, so that std::sort inlines it.
struct EntryLess {
  bool operator()(const SqliteTablePages::Entry& a, const SqliteTablePages::Entry& b) const {
    return a.key != b.key ? a.key < b.key : a.rowid < b.rowid;
  }
};
// Rows mostly arrive in start order, and in correlation order within a rank, rank after rank:
// a run is often sorted already, or a few sorted stretches (one per rank, and one after each row
// out of order), which merging puts in order in a few passes. Otherwise: std::sort.
void SortEntries(std::vector<SqliteTablePages::Entry>& v) {
  constexpr size_t kMaxStretches = 64;
  std::vector<size_t> bounds{0};  // where each sorted stretch starts, then the end
  for (size_t i = 1; i < v.size(); ++i) {
    if (!EntryLess{}(v[i], v[i - 1])) continue;
    if (bounds.size() == kMaxStretches) {
      std::sort(v.begin(), v.end(), EntryLess{});
      return;
    }
    bounds.push_back(i);
  }
  bounds.push_back(v.size());
  while (bounds.size() > 2) {  // stretches merged two by two
    std::vector<size_t> merged{0};
    size_t k = 0;
    for (; k + 2 < bounds.size(); k += 2) {
      std::inplace_merge(v.begin() + static_cast<ptrdiff_t>(bounds[k]),
                         v.begin() + static_cast<ptrdiff_t>(bounds[k + 1]),
                         v.begin() + static_cast<ptrdiff_t>(bounds[k + 2]), EntryLess{});
      merged.push_back(bounds[k + 2]);
    }
    if (k + 1 < bounds.size()) merged.push_back(bounds.back());  // an odd stretch, as it is
    bounds = std::move(merged);
  }
}
}  // namespace

// A sorted run's entries on disk: each as its key's difference from the previous entry's key
// (never negative: the run is sorted; in 64-bit unsigned arithmetic, so INT64_MIN to INT64_MAX
// is a difference too) and its rowid's from the previous rowid (either sign, zigzag-coded), both
// as LEB128 varints: a few bytes an entry where keys are close together and rowids mostly one
// apart (start times), against 16 uncoded.
struct SqliteTablePages::RunCoder {
  static constexpr size_t kMaxBytes = 20;  // two varints of 64 bits
  uint64_t key = 0, rowid = 0;             // the previous entry's

  uint8_t* Put(uint8_t* p, const Entry& e) {
    p = PutLeb(p, static_cast<uint64_t>(e.key) - key);
    const auto d = static_cast<int64_t>(static_cast<uint64_t>(e.rowid) - rowid);
    p = PutLeb(p, static_cast<uint64_t>(d) << 1 ^ static_cast<uint64_t>(d >> 63));
    key = static_cast<uint64_t>(e.key);
    rowid = static_cast<uint64_t>(e.rowid);
    return p;
  }
  const uint8_t* Get(const uint8_t* p, Entry* e) {
    uint64_t v = 0;
    p = GetLeb(p, &v);
    key += v;
    p = GetLeb(p, &v);
    rowid += (v >> 1) ^ (0 - (v & 1));
    e->key = static_cast<int64_t>(key);
    e->rowid = static_cast<int64_t>(rowid);
    return p;
  }

 private:
  static uint8_t* PutLeb(uint8_t* p, uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
    return p;
  }
  static const uint8_t* GetLeb(const uint8_t* p, uint64_t* v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const uint8_t b = *p++;
      r |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
    }
    *v = r;
    return p;
  }
};

bool SqliteTablePages::Spill(Index& x) {
  if (runs_fd_ < 0)
    return Fail("index " + x.name + " has more entries than memory holds and no file for runs");
  SortEntries(x.buffer);
  spill_.resize(x.buffer.size() * RunCoder::kMaxBytes);
  RunCoder coder;
  uint8_t* p = spill_.data();
  for (const Entry& e : x.buffer) p = coder.Put(p, e);
  const size_t size = static_cast<size_t>(p - spill_.data());
  if (const int e = WriteAll(runs_fd_, spill_.data(), size, runs_end_))
    return Fail(std::string("writing the index entries: ") + std::strerror(e));
  x.runs.push_back({runs_end_, size, x.buffer.size()});
  runs_end_ += size;
  x.buffer.clear();
  return true;
}

bool SqliteTablePages::WritePage(const uint8_t* page, uint64_t offset, int fd, const char* where) {
  if (const int e = WriteAll(fd, page, page_size_, offset))
    return Fail(std::string("writing ") + where + ": " + std::strerror(e));
  return true;
}

// Completes `leaf`'s header and hands it on: the table's first full leaf is held (it is the
// whole table, and goes to the root page, if no other follows); any other is written out.
bool SqliteTablePages::LeafFull(Table& t) {
  FinishPage(t.leaf.data(), kTableLeaf, t.cells, t.content, kLeafHeader);
  if (t.children.empty() && !t.first_held) {
    std::swap(t.leaf, t.first);
    t.first_held = true;
    t.first_max = t.leaf_max;
  } else {
    if (t.first_held) {
      if (!WritePage(t.first.data(), uint64_t{leaves_} * page_size_, fd_, "the table pages"))
        return false;
      t.children.emplace_back(leaves_++, t.first_max);
      t.first_held = false;
    }
    if (!WritePage(t.leaf.data(), uint64_t{leaves_} * page_size_, fd_, "the table pages"))
      return false;
    t.children.emplace_back(leaves_++, t.leaf_max);
  }
  t.cells = 0;
  t.content = usable_;
  return true;
}

bool SqliteTablePages::PutCell(Table& t, const uint8_t* cell, size_t size, int64_t rowid) {
  if (kLeafHeader + 2 * (size_t{t.cells} + 1) + size > t.content) {
    if (!LeafFull(t)) return false;
  }
  t.content -= static_cast<uint32_t>(size);
  std::memcpy(t.leaf.data() + t.content, cell, size);
  Put16(t.leaf.data() + kLeafHeader + 2 * size_t{t.cells}, t.content);
  ++t.cells;
  t.leaf_max = rowid;
  return true;
}

bool SqliteTablePages::Append(int id, const int64_t* cells, size_t rows, int stride) {
  if (!error_.empty()) return false;
  if (!Has(id)) return Fail("table number " + std::to_string(id) + " has no columns set");
  Table& t = *tables_[id];
  if (t.max_cell >= stride)
    return Fail("rows of " + t.name + " have " + std::to_string(stride) +
                " cells, fewer than its columns read");
  const size_t ncols = t.columns.size();
  // Serial types first (the record's header), then the body, each in its own part of `record`:
  // the header starts after room for the cell's three varints, the body after room for the
  // largest header.
  uint8_t* const base = t.record.data();
  uint8_t* const types = base + 3 * kMaxVarint;
  uint8_t* const body = types + kMaxVarint * ncols + kFixedBytes;
  for (size_t r = 0; r < rows; ++r) {
    const int64_t* row = cells + r * static_cast<size_t>(stride);
    uint8_t* tp = types;
    uint8_t* bp = body;
    for (const Table::Step& st : t.steps) {
      if (st.kind == Table::Step::kFixed) {
        std::memcpy(tp, st.types, kFixedBytes);
        tp += st.types_size;
        std::memcpy(bp, st.body, kFixedBytes);
        bp += st.body_size;
        continue;
      }
      const int64_t v = row[st.cell];
      if (v == kNullCell) {
        if (st.not_null)
          return Fail("writing " + t.name + ": NOT NULL constraint failed: " + t.name + "." +
                      *st.name);
        *tp++ = 0;
      } else {
        bp = PutInt(tp++, bp, v, small_ints_);
      }
    }
    const size_t types_size = static_cast<size_t>(tp - types);
    const size_t body_size = static_cast<size_t>(bp - body);
    size_t header_size = types_size + 1;
    if (VarintSize(header_size) > 1) header_size = types_size + VarintSize(types_size + 2);
    const size_t payload = header_size + body_size;
    const int64_t rowid = t.next_rowid;
    // The cell: payload size, rowid, header size, serial types, body; laid out backwards from
    // the serial types so that only the body moves.
    uint8_t prefix[3 * kMaxVarint];
    size_t n = PutVarint(prefix, payload);
    n += PutVarint(prefix + n, static_cast<uint64_t>(rowid));
    n += PutVarint(prefix + n, header_size);
    uint8_t* const cell = types - n;
    std::memcpy(cell, prefix, n);
    std::memmove(tp, body, body_size);
    if (!PutCell(t, cell, n + types_size + body_size, rowid)) return false;
    for (Index* x : t.indexes) {
      x->buffer.push_back(Entry{row[x->cell], rowid});
      ++x->entries;
      if (x->buffer.size() >= run_entries_ && !Spill(*x)) return false;
    }
    ++t.next_rowid;
  }
  return true;
}

bool SqliteTablePages::Finish(int db_fd, uint32_t db_pages,
                              const std::map<std::string, uint32_t>& roots) {
  if (!error_.empty()) return false;
  // What these pages assumed of the database (section 1.3): its page size, reserved bytes,
  // schema format (0 and 1 in the header alone) and text encoding (UTF-8).
  uint8_t header[100];
  if (pread(db_fd, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header))
    return Fail("reading the database header");
  const uint32_t db_page_size = header[16] << 8 | header[17];
  if ((db_page_size == 1 ? 65536u : db_page_size) != page_size_ ||
      header[20] != page_size_ - usable_ || (small_ints_ && Get32(header + 44) < 4) ||
      Get32(header + 56) != 1)
    return Fail(
        "the database's header does not match the table pages (page size, reserved "
        "bytes, schema format or text encoding)");
  // The last leaves. A table of one leaf keeps it (in `first`) for its root page.
  for (auto& owned : tables_) {
    if (owned && owned->next_rowid > 1 && owned->cells > 0 && !LeafFull(*owned)) return false;
  }
  // The leaves, to the database's end: leaf i becomes page db_pages + 1 + i. What is copied is
  // freed from the leaves' file as it goes (where the file system can), so that the disk holds
  // the leaves about once, not twice.
  const uint64_t out_start = uint64_t{db_pages} * page_size_;
  const uint64_t bytes = uint64_t{leaves_} * page_size_;
  constexpr uint64_t kStep = uint64_t{64} << 20;
  uint64_t copied = 0;
  bool kernel_copy = true;
  std::vector<uint8_t> chunk;
  const auto release = [&](uint64_t from, uint64_t to) {
    (void)fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from),
                    static_cast<off_t>(to - from));
  };
  while (copied < bytes) {
    if (kernel_copy) {
      loff_t in = static_cast<loff_t>(copied), out = static_cast<loff_t>(out_start + copied);
      const ssize_t n = copy_file_range(fd_, &in, db_fd, &out, std::min(kStep, bytes - copied), 0);
      if (n > 0) {
        release(copied, copied + static_cast<uint64_t>(n));
        copied += static_cast<uint64_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
        return Fail(std::string("copying the table pages into the database: ") +
                    std::strerror(errno));
      kernel_copy = false;  // not between these files: read and write
      chunk.resize(size_t{1} << 20);
    }
    const size_t want = static_cast<size_t>(std::min<uint64_t>(chunk.size(), bytes - copied));
    const ssize_t got = pread(fd_, chunk.data(), want, static_cast<off_t>(copied));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      return Fail(std::string("reading the table pages back: ") +
                  std::strerror(got < 0 ? errno : EIO));
    if (const int e = WriteAll(db_fd, chunk.data(), static_cast<size_t>(got), out_start + copied))
      return Fail(std::string("copying the table pages into the database: ") + std::strerror(e));
    release(copied, copied + static_cast<uint64_t>(got));
    copied += static_cast<uint64_t>(got);
  }
  // The interior pages, level by level, after the leaves; each tree's top page into its root.
  uint32_t next_page = db_pages + leaves_ + 1;
  const size_t per_page = (usable_ - kInteriorHeader) / (2 + 4 + kMaxVarint) + 1;  // children
  std::vector<uint8_t> page(page_size_);
  for (auto& owned : tables_) {
    if (!owned || owned->next_rowid == 1) continue;
    Table& t = *owned;
    const auto root = roots.find(t.name);
    if (root == roots.end() || root->second < 2 || root->second > db_pages)
      return Fail("the database has no root page for " + t.name);
    const uint64_t root_at = uint64_t{root->second - 1} * page_size_;
    if (t.children.empty()) {  // one leaf
      if (!WritePage(t.first.data(), root_at, db_fd, "the database")) return false;
      continue;
    }
    std::vector<std::pair<uint32_t, int64_t>> level;  // (page number, largest rowid below)
    level.reserve(t.children.size());
    for (const auto& [leaf, max] : t.children) level.emplace_back(db_pages + 1 + leaf, max);
    for (;;) {
      // Children spread evenly: every page gets at least two (one cell and the right pointer).
      const size_t pages = (level.size() + per_page - 1) / per_page;
      std::vector<std::pair<uint32_t, int64_t>> above;
      size_t at = 0;
      for (size_t k = 0; k < pages; ++k) {
        const size_t take = level.size() / pages + (k < level.size() % pages ? 1 : 0);
        std::fill(page.begin(), page.end(), 0);
        uint32_t content = usable_;
        for (size_t i = 0; i + 1 < take; ++i) {
          uint8_t cell[4 + kMaxVarint];
          Put32(cell, level[at + i].first);
          const size_t size = 4 + PutVarint(cell + 4, static_cast<uint64_t>(level[at + i].second));
          content -= static_cast<uint32_t>(size);
          std::memcpy(page.data() + content, cell, size);
          Put16(page.data() + kInteriorHeader + 2 * i, content);
        }
        FinishPage(page.data(), kTableInterior, static_cast<uint32_t>(take - 1), content,
                   kInteriorHeader);
        Put32(page.data() + 8, level[at + take - 1].first);  // the right-most child
        const int64_t max = level[at + take - 1].second;
        at += take;
        if (pages == 1) {
          if (!WritePage(page.data(), root_at, db_fd, "the database")) return false;
          break;
        }
        if (!WritePage(page.data(), uint64_t{next_page - 1} * page_size_, db_fd, "the database"))
          return false;
        above.emplace_back(next_page++, max);
      }
      if (pages == 1) break;
      level = std::move(above);
    }
  }
  for (const auto& x : indexes_) {
    if (x->entries == 0) continue;  // SQLite's empty root stays
    const auto root = roots.find(x->name);
    if (root == roots.end() || root->second < 2 || root->second > db_pages)
      return Fail("the database has no root page for " + x->name);
    if (!BuildIndex(*x, db_fd, uint64_t{root->second - 1} * page_size_, &next_page)) return false;
  }
  // The header: the new page count, valid as the change counter says (section 1.3.7).
  const uint32_t counter = Get32(header + 24) + 1;
  Put32(header + 24, counter);
  Put32(header + 28, next_page - 1);
  Put32(header + 92, counter);
  if (pwrite(db_fd, header, sizeof header, 0) != static_cast<ssize_t>(sizeof header))
    return Fail(std::string("writing the database header: ") + std::strerror(errno));
  return true;
}

// An index cell that goes up a level: the page of the entries below it, and its payload.
struct SqliteTablePages::IndexDivider {
  uint32_t left;
  uint8_t size;
  uint8_t payload[kMaxIndexPayload];
};

// One index's entries in order: its runs, read back from runs_fd_ a part at a time into
// read_buf_, merged with its sorted memory buffer. The source with the smallest head gives
// entries for as long as its head stays below the others' smallest; only then does it go back
// into the heap. Runs that follow one another (a start time's runs do, and a correlation id's
// mostly) cost one comparison an entry, not a heap's pop and push.
class SqliteTablePages::IndexMerge {
 public:
  enum class Next { kEntry, kEnd, kError };

  IndexMerge(SqliteTablePages& pages, Index& x) : pages_(pages), x_(x) {}

  bool Start() {
    SortEntries(x_.buffer);
    sources_.resize(x_.runs.size() + 1);
    per_run_ = std::max<size_t>(
        1024, (size_t{32} << 20) / sizeof(Entry) / std::max<size_t>(1, x_.runs.size()));
    // One block for every index, left uninitialized: a block per index (zeroed, and returned to
    // the system after each) cost a page fault per 4 KiB again for each index.
    if (pages_.read_buf_size_ < per_run_ * x_.runs.size()) {
      pages_.read_buf_size_ = per_run_ * x_.runs.size();
      pages_.read_buf_.reset(new Entry[pages_.read_buf_size_]);
    }
    // spill_ has an entry's most bytes after a read, so that a damaged run is not decoded out
    // of bounds.
    chunk_ = pages_.read_bytes_ ? pages_.read_bytes_ : per_run_ * 4;
    if (pages_.spill_.size() < chunk_ + RunCoder::kMaxBytes)
      pages_.spill_.resize(chunk_ + RunCoder::kMaxBytes);
    for (size_t i = 0; i < x_.runs.size(); ++i) {
      sources_[i].next = x_.runs[i].offset;
      sources_[i].bytes = x_.runs[i].bytes;
      sources_[i].left = x_.runs[i].entries;
      sources_[i].buf = pages_.read_buf_.get() + i * per_run_;
      if (!Refill(sources_[i])) return false;
    }
    sources_.back().at = x_.buffer.data();
    sources_.back().end = x_.buffer.data() + x_.buffer.size();
    for (size_t i = 0; i < sources_.size(); ++i)
      if (sources_[i].at != sources_[i].end) heap_.push_back(i);
    std::make_heap(heap_.begin(), heap_.end(), Later{sources_});
    current_ = TakeTop();
    return true;
  }

  Next Take(Entry* e) {
    if (current_ == kNone) return Next::kEnd;
    Source& src = sources_[current_];
    *e = *src.at++;
    if (src.at == src.end && src.left > 0 && !Refill(src)) return Next::kError;
    if (src.at == src.end) {
      current_ = TakeTop();
    } else if (!heap_.empty() && EntryLess{}(*sources_[heap_.front()].at, *src.at)) {
      heap_.push_back(current_);
      std::push_heap(heap_.begin(), heap_.end(), Later{sources_});
      current_ = TakeTop();
    }
    return Next::kEntry;
  }

 private:
  struct Source {
    const Entry* at = nullptr;
    const Entry* end = nullptr;
    // The rest of the run in runs_fd_: where it starts, its bytes, its entries.
    uint64_t next = 0, bytes = 0, left = 0;
    Entry* buf = nullptr;
    RunCoder coder;  // where decoding stopped
  };
  // Heap order: the source with the smallest head on top.
  struct Later {
    const std::vector<Source>& s;
    bool operator()(size_t a, size_t b) const { return EntryLess{}(*s[b].at, *s[a].at); }
  };
  static constexpr size_t kNone = SIZE_MAX;

  size_t TakeTop() {
    if (heap_.empty()) return kNone;
    std::pop_heap(heap_.begin(), heap_.end(), Later{sources_});
    const size_t top = heap_.back();
    heap_.pop_back();
    return top;
  }

  // The next entries of `src`'s run, at most per_run_: as many as its next bytes (read into
  // spill_, chunk_ of them) hold whole.
  bool Refill(Source& src) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(src.bytes, chunk_));
    uint8_t* const start = pages_.spill_.data();
    size_t done = 0;
    while (done < want) {
      const ssize_t got =
          pread(pages_.runs_fd_, start + done, want - done, static_cast<off_t>(src.next + done));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)
        return pages_.Fail(std::string("reading the index entries back: ") +
                           std::strerror(got < 0 ? errno : EIO));
      done += static_cast<size_t>(got);
    }
    // Entries whose bytes may run past what was read wait for the next read, unless the read
    // holds the rest of the run.
    const uint8_t* const whole =
        want == src.bytes ? start + want : start + want - (RunCoder::kMaxBytes - 1);
    const uint8_t* p = start;
    size_t n = 0;
    const size_t most = static_cast<size_t>(std::min<uint64_t>(src.left, per_run_));
    while (n < most && p < whole) p = src.coder.Get(p, &src.buf[n++]);
    if (n == 0 || p > start + want)
      return pages_.Fail("reading the index entries back: a run ends inside an entry");
    const auto used = static_cast<uint64_t>(p - start);
    src.next += used;
    src.bytes -= used;
    src.left -= n;
    if (src.left == 0 && src.bytes != 0)
      return pages_.Fail("reading the index entries back: a run holds more bytes than its entries");
    src.at = src.buf;
    src.end = src.at + n;
    return true;
  }

  SqliteTablePages& pages_;
  Index& x_;
  size_t per_run_ = 0, chunk_ = 0;
  std::vector<Source> sources_;
  std::vector<size_t> heap_;  // the other sources with entries left
  size_t current_ = kNone;
};

// One index's entries, merged from its runs and what is left in memory, into leaves written
// one after another at next_page on; the last cell of each full leaf goes up as the divider
// between it and the next leaf (an index B-tree holds each entry once: on a leaf or as a
// divider), and the dividers are built into interior pages level by level as the tables' are.
bool SqliteTablePages::BuildIndex(Index& x, int db_fd, uint64_t root_at, uint32_t* next_page) {
  IndexMerge merge(*this, x);
  if (!merge.Start()) return false;
  std::vector<uint8_t> page(page_size_, 0);
  uint32_t cells = 0, content = usable_;
  std::vector<IndexDivider> dividers;
  for (;;) {
    Entry e;
    const IndexMerge::Next next = merge.Take(&e);
    if (next == IndexMerge::Next::kError) return false;
    if (next == IndexMerge::Next::kEnd) break;
    // The cell: its payload's size (below 128: one byte) and the record (key, rowid).
    uint8_t cell[1 + kMaxIndexPayload + 8];  // and PutInt's eight-byte store
    uint8_t* p = cell + 1;
    p[0] = 3;
    uint8_t* end = p + 3;
    if (e.key == kNullCell)
      p[1] = 0;
    else
      end = PutInt(p + 1, end, e.key, small_ints_);
    end = PutInt(p + 2, end, e.rowid, small_ints_);
    const size_t body = static_cast<size_t>(end - p);
    cell[0] = static_cast<uint8_t>(body);
    const size_t size = 1 + body;
    if (kLeafHeader + 2 * (size_t{cells} + 1) + size > content) {
      // Full: its last cell goes up as the divider, the page out, and `e` starts the next.
      IndexDivider d{};
      d.size = page[content];
      std::memcpy(d.payload, page.data() + content + 1, d.size);
      content += 1 + uint32_t{d.size};
      --cells;
      FinishPage(page.data(), kIndexLeaf, cells, content, kLeafHeader);
      if (!WritePage(page.data(), uint64_t{*next_page - 1} * page_size_, db_fd, "the database"))
        return false;
      d.left = (*next_page)++;
      dividers.push_back(d);
      cells = 0;
      content = usable_;
    }
    content -= static_cast<uint32_t>(size);
    std::memcpy(page.data() + content, cell, size);
    Put16(page.data() + kLeafHeader + 2 * size_t{cells}, content);
    ++cells;
  }
  FinishPage(page.data(), kIndexLeaf, cells, content, kLeafHeader);
  if (dividers.empty()) return WritePage(page.data(), root_at, db_fd, "the database");
  if (!WritePage(page.data(), uint64_t{*next_page - 1} * page_size_, db_fd, "the database"))
    return false;
  std::vector<uint32_t> children;
  children.reserve(dividers.size() + 1);
  for (const IndexDivider& d : dividers) children.push_back(d.left);
  children.push_back((*next_page)++);
  return WriteIndexLevels(std::move(children), std::move(dividers), page, db_fd, root_at,
                          next_page);
}

// The interior pages above an index's leaves, level by level up to the root at root_at:
// children[i] and children[i + 1] are parted by dividers[i].
bool SqliteTablePages::WriteIndexLevels(std::vector<uint32_t> children,
                                        std::vector<IndexDivider> dividers,
                                        std::vector<uint8_t>& page, int db_fd, uint64_t root_at,
                                        uint32_t* next_page) {
  const size_t per_page = (usable_ - kInteriorHeader) / (2 + 4 + 1 + kMaxIndexPayload) + 1;
  for (;;) {
    const size_t pages = (children.size() + per_page - 1) / per_page;
    std::vector<uint32_t> above;
    std::vector<IndexDivider> above_dividers;
    size_t at = 0;
    for (size_t k = 0; k < pages; ++k) {
      const size_t take = children.size() / pages + (k < children.size() % pages ? 1 : 0);
      std::fill(page.begin(), page.end(), 0);
      uint32_t start = usable_;
      for (size_t i = 0; i + 1 < take; ++i) {
        const IndexDivider& d = dividers[at + i];
        start -= 4 + 1 + uint32_t{d.size};
        Put32(page.data() + start, children[at + i]);
        page[start + 4] = d.size;
        std::memcpy(page.data() + start + 5, d.payload, d.size);
        Put16(page.data() + kInteriorHeader + 2 * i, start);
      }
      FinishPage(page.data(), kIndexInterior, static_cast<uint32_t>(take - 1), start,
                 kInteriorHeader);
      Put32(page.data() + 8, children[at + take - 1]);  // the right-most child
      if (pages == 1) return WritePage(page.data(), root_at, db_fd, "the database");
      if (!WritePage(page.data(), uint64_t{*next_page - 1} * page_size_, db_fd, "the database"))
        return false;
      above.push_back((*next_page)++);
      if (k + 1 < pages) above_dividers.push_back(dividers[at + take - 1]);
      at += take;
    }
    children = std::move(above);
    dividers = std::move(above_dividers);
  }
}

}  // namespace cupmon::decoder
