// ImportRebinder: rewrites other objects' GOT slots for chosen imports (import_rebind.h).
#include "import_rebind.h"

#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <utility>

namespace cupmon {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_X86_64_GLOB_DAT;
constexpr bool kSupported = true;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_AARCH64_GLOB_DAT;
constexpr bool kSupported = true;
#else
constexpr uint32_t kJumpSlot = ~0u;
constexpr uint32_t kGlobDat = ~0u;
constexpr bool kSupported = false;
#endif

struct Range {
  uintptr_t begin = 0, end = 0;
};

bool InAny(const std::vector<Range>& ranges, uintptr_t a) {
  for (const Range& r : ranges)
    if (a >= r.begin && a < r.end) return true;
  return false;
}

std::vector<Range> LoadRanges(const dl_phdr_info* info) {
  std::vector<Range> out;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD)
      out.push_back({info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz});
  }
  return out;
}

bool IsVdso(const char* name) {
  return std::strncmp(name, "linux-vdso", 10) == 0 || std::strncmp(name, "linux-gate", 10) == 0;
}

// First pass: where the provider's and this code's objects lie, and the loader's count of objects
// added (read under the same lock, so the second pass can tell whether anything came in between).
struct Census {
  const char* provider;
  uintptr_t self_address;
  std::vector<Range> provider_ranges;
  uint64_t adds = 0;
};

int TakeCensus(dl_phdr_info* info, size_t size, void* data) noexcept {
  auto* c = static_cast<Census*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
    c->adds = info->dlpi_adds;
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  try {
    if (*name && std::strstr(name, c->provider)) {
      auto ranges = LoadRanges(info);
      c->provider_ranges.insert(c->provider_ranges.end(), ranges.begin(), ranges.end());
    }
  } catch (...) {
    return 1;  // out of memory: stop; the scan then finds no provider and rebinds nothing
  }
  return 0;
}

struct Pass {
  const Census* census = nullptr;
  const std::vector<ImportRebinding>* table = nullptr;
  uintptr_t page = 4096;
  bool changed = false;  // an object was added since the census: stop, scan again later
  RebindCounts counts;
};

// The dynamic section's pointers are absolute once the loader relocated them (glibc on x86-64
// and aarch64); where the section is read-only they stay relative to the load base.
uintptr_t Absolute(uintptr_t base, uintptr_t p) { return p < base ? p + base : p; }

bool WriteSlot(uintptr_t slot, void* value, const std::vector<Range>& relro,
               const std::vector<Range>& writable, uintptr_t page) {
  if (InAny(relro, slot)) {
    const uintptr_t first = slot & ~(page - 1);
    if (mprotect(reinterpret_cast<void*>(first), page, PROT_READ | PROT_WRITE) != 0) return false;
    __atomic_store_n(reinterpret_cast<void**>(slot), value, __ATOMIC_RELEASE);
    mprotect(reinterpret_cast<void*>(first), page, PROT_READ);
    return true;
  }
  if (!InAny(writable, slot)) return false;
  __atomic_store_n(reinterpret_cast<void**>(slot), value, __ATOMIC_RELEASE);
  return true;
}

int RebindObject(dl_phdr_info* info, size_t size, void* data) noexcept {
  auto* p = static_cast<Pass*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds) &&
      info->dlpi_adds != p->census->adds) {
    p->changed = true;
    return 1;
  }
  const char* name = info->dlpi_name ? info->dlpi_name : "";
  if (IsVdso(name) || (*name && std::strstr(name, p->census->provider))) return 0;
  try {
    const uintptr_t base = info->dlpi_addr;
    const std::vector<Range> own = LoadRanges(info);
    if (InAny(own, p->census->self_address)) return 0;
    std::vector<Range> relro, writable;
    const ElfW(Dyn)* dyn = nullptr;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      const Range r{base + ph.p_vaddr, base + ph.p_vaddr + ph.p_memsz};
      if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(r.begin);
      if (ph.p_type == PT_GNU_RELRO) relro.push_back(r);
      if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W)) writable.push_back(r);
    }
    if (!dyn) return 0;
    uintptr_t symtab = 0, strtab = 0, jmprel = 0, rela = 0;
    size_t strsz = 0, pltrelsz = 0, relasz = 0, relaent = sizeof(ElfW(Rela));
    bool plt_is_rela = true;
    for (; dyn->d_tag != DT_NULL; ++dyn) {
      switch (dyn->d_tag) {
        case DT_SYMTAB:
          symtab = Absolute(base, dyn->d_un.d_ptr);
          break;
        case DT_STRTAB:
          strtab = Absolute(base, dyn->d_un.d_ptr);
          break;
        case DT_STRSZ:
          strsz = dyn->d_un.d_val;
          break;
        case DT_JMPREL:
          jmprel = Absolute(base, dyn->d_un.d_ptr);
          break;
        case DT_PLTRELSZ:
          pltrelsz = dyn->d_un.d_val;
          break;
        case DT_PLTREL:
          plt_is_rela = dyn->d_un.d_val == DT_RELA;
          break;
        case DT_RELA:
          rela = Absolute(base, dyn->d_un.d_ptr);
          break;
        case DT_RELASZ:
          relasz = dyn->d_un.d_val;
          break;
        case DT_RELAENT:
          relaent = dyn->d_un.d_val;
          break;
        default:
          break;
      }
    }
    if (!symtab || !strtab || relaent != sizeof(ElfW(Rela))) return 0;
    const auto* syms = reinterpret_cast<const ElfW(Sym)*>(symtab);
    const char* strs = reinterpret_cast<const char*>(strtab);
    bool rebound_here = false;
    auto visit = [&](uintptr_t table, size_t bytes) {
      const auto* r = reinterpret_cast<const ElfW(Rela)*>(table);
      for (size_t i = 0; i < bytes / sizeof(ElfW(Rela)); ++i) {
        const auto type = static_cast<uint32_t>(ELF64_R_TYPE(r[i].r_info));
        if (type != kJumpSlot && type != kGlobDat) continue;
        const auto sym = static_cast<size_t>(ELF64_R_SYM(r[i].r_info));
        if (sym == 0 || syms[sym].st_name >= strsz) continue;
        const char* sym_name = strs + syms[sym].st_name;
        for (const ImportRebinding& want : *p->table) {
          if (want.name != sym_name) continue;
          const uintptr_t slot = base + r[i].r_offset;
          const auto value = reinterpret_cast<uintptr_t>(
              __atomic_load_n(reinterpret_cast<void**>(slot), __ATOMIC_ACQUIRE));
          if (value == reinterpret_cast<uintptr_t>(want.replacement)) break;
          // Bound to the provider, or a lazy stub of this object (never called yet). Anything
          // else (another interposer, a relocation the loader has not applied yet) stays.
          const bool lazy_stub = type == kJumpSlot && InAny(own, value);
          if (!InAny(p->census->provider_ranges, value) && !lazy_stub) {
            ++p->counts.foreign;
            break;
          }
          if (WriteSlot(slot, want.replacement, relro, writable, p->page)) {
            ++p->counts.slots;
            rebound_here = true;
          } else {
            ++p->counts.failed;
          }
          break;
        }
      }
    };
    if (jmprel && plt_is_rela) visit(jmprel, pltrelsz);
    if (rela) visit(rela, relasz);
    if (rebound_here) ++p->counts.objects;
  } catch (...) {
    // Out of memory for the ranges: this object is left as it is.
  }
  return 0;
}

}  // namespace

ImportRebinder::ImportRebinder(std::vector<ImportRebinding> table, std::string provider)
    : table_(std::move(table)), provider_(std::move(provider)) {}

bool ImportRebinder::Supported() noexcept { return kSupported; }

RebindCounts ImportRebinder::Scan() noexcept {
  RebindCounts counts;
  if (!kSupported || table_.empty() || provider_.empty()) return counts;
  // The loader is mapping objects (another thread inside dlopen): their slots may not be
  // relocated yet. Scan at the next call.
  if (_r_debug.r_state != r_debug::RT_CONSISTENT) return counts;
  try {
    Census census{provider_.c_str(), reinterpret_cast<uintptr_t>(&TakeCensus), {}, 0};
    dl_iterate_phdr(TakeCensus, &census);
    if (census.provider_ranges.empty()) {
      adds_seen_ = census.adds;
      return counts;  // the provider is not loaded: nobody can be bound to it yet
    }
    Pass pass;
    pass.census = &census;
    pass.table = &table_;
    pass.page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    dl_iterate_phdr(RebindObject, &pass);
    // An object added between the passes may not have been seen whole: the next ScanIfLoaded
    // scans again.
    if (!pass.changed) adds_seen_ = census.adds;
    counts = pass.counts;
    total_.Add(counts);
  } catch (...) {
  }
  return counts;
}

namespace {
int ReadAdds(dl_phdr_info* info, size_t size, void* data) noexcept {
  if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds))
    *static_cast<uint64_t*>(data) = info->dlpi_adds;
  return 1;  // the first object carries the count
}
}  // namespace

RebindCounts ImportRebinder::ScanIfLoaded() noexcept {
  uint64_t adds = 0;
  dl_iterate_phdr(ReadAdds, &adds);
  if (adds == adds_seen_) return {};
  // Objects came in: scan once the count has held still for one call, so that an object still
  // being relocated by another thread's dlopen is not written under the loader.
  if (adds != adds_pending_) {
    adds_pending_ = adds;
    return {};
  }
  return Scan();
}

}  // namespace cupmon
