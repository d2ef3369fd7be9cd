#!/usr/bin/env python3
"""Compares per-kernel-name counts: torch.profiler's (JSON from train_mlp.py --kernel-counts) against
cupmon's (cupmon-decode export --format jsonl). Exits 1 on any difference, printing the rows."""
import json
import sys


def cupmon_counts(path):
    counts = {}
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if row.get("type", row.get("kind", "")) in ("kernel", "concurrent_kernel"):
                counts[row["name"]] = counts.get(row["name"], 0) + 1
    return counts


def main():
    torch_counts = json.load(open(sys.argv[1]))["counts"]
    cm = cupmon_counts(sys.argv[2])
    # torch.profiler lists memcpy/memset under names like "Memcpy HtoD (...)"; compare kernels only.
    torch_kernels = {k: v for k, v in torch_counts.items()
                     if not k.startswith("Memcpy") and not k.startswith("Memset")}
    names = sorted(set(torch_kernels) | set(cm))
    bad = [(n, torch_kernels.get(n, 0), cm.get(n, 0)) for n in names
           if torch_kernels.get(n, 0) != cm.get(n, 0)]
    print(f"kernel names: torch {len(torch_kernels)}, cupmon {len(cm)}; "
          f"kernels: torch {sum(torch_kernels.values())}, cupmon {sum(cm.values())}; "
          f"differing names: {len(bad)}")
    for n, t, c in bad[:20]:
        print(f"  torch {t:6d}  cupmon {c:6d}  {n}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
