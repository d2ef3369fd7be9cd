// ImportRebinder: sends the calls that other loaded objects make to chosen functions of one library
// (libcupti's activity entry points) to replacements, by rewriting those objects' GOT slots: what
// LD_PRELOAD would have bound at load time, done after the fact. cupmon uses it when it was
// injected without its preload library (docs/COEXISTENCE.md, "Injection only").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cupmon/monitor/cupti_api.h"  // CUPMON_PRELOAD_API

namespace cupmon {

struct ImportRebinding {
  std::string name;             // the imported function's symbol name
  void* replacement = nullptr;  // where its callers are sent from now on
};

// What one scan did, or all scans together.
struct RebindCounts {
  uint64_t objects = 0;  // objects whose imports were rebound
  uint64_t slots = 0;    // GOT slots pointed at a replacement
  uint64_t foreign = 0;  // slots bound to neither the provider nor a replacement: left alone
  uint64_t failed = 0;   // slots that could not be made writable: left alone
  void Add(const RebindCounts& o) {
    objects += o.objects;
    slots += o.slots;
    foreign += o.foreign;
    failed += o.failed;
  }
};

// A slot is rebound when it names one of the table's functions and holds either the provider's
// definition (an object whose file name contains `provider`, e.g. "libcupti") or a lazy-binding
// stub of the importing object itself (not called yet). Slots already holding a replacement are
// left as they are, so scans are idempotent. Skipped: the provider's objects, the object that
// holds this code (its calls to the provider are the replacements' own way to it), and the vDSO.
// Only JUMP_SLOT and GLOB_DAT relocations are rewritten (calls and PIC address-taking); a pointer
// fetched with dlsym, or stored by an absolute relocation in data, keeps the provider's function.
// A slot in a RELRO page is written through a short mprotect(PROT_READ | PROT_WRITE) and made
// read-only again.
//
// Thread-safety: one caller at a time (cupmon's start, then its control thread). Each scan runs
// inside dl_iterate_phdr, which holds the loader's lock, so no object is unloaded while its slots
// are written; it calls nothing that takes the loader's other lock (no dladdr, no dlsym).
// x86-64 and aarch64 only; elsewhere Supported() is false and scans do nothing.
class CUPMON_PRELOAD_API ImportRebinder {
 public:
  ImportRebinder(std::vector<ImportRebinding> table, std::string provider);

  static bool Supported() noexcept;

  // Scans every loaded object and rebinds what it finds. Never throws.
  RebindCounts Scan() noexcept;
  // Scans only when objects were loaded since the last scan (dl_iterate_phdr's count of objects
  // added) and that count has not moved since the previous call, so that an object is scanned
  // once its loader is done with it (the periodic caller rebinds a late object at its second
  // call); otherwise returns zeros at the cost of one loader-lock round trip.
  RebindCounts ScanIfLoaded() noexcept;

  // Everything rebound so far.
  const RebindCounts& total() const { return total_; }

 private:
  std::vector<ImportRebinding> table_;
  std::string provider_;
  uint64_t adds_seen_ = 0;
  uint64_t adds_pending_ = 0;
  RebindCounts total_;
};

}  // namespace cupmon
