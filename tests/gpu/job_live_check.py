#!/usr/bin/env python3
"""The live side of tools/gpu-check-job: per-rank step metrics and the windows ranks open themselves.

  job_live_check.py scrape OUT INTERVAL_S PORT...
      Scrapes http://127.0.0.1:PORT/metrics of every rank every INTERVAL_S until killed, and
      appends one JSON line per answer to OUT: {"t", "port", "values": {metric: value}} with the
      cupmon_step*_total counters.
  job_live_check.py check DECODE REC SCRAPES BASE_PORT NRANKS BY... -- INJECT...
      BY is each rank's --auto-window-by (rank 0 first). INJECT as tests/gpu/job_emul takes it
      (host-gap:R:S:MS, gpu-work:R:S:MS, collectives:S:MS). Checks:
        - metrics: every rank served its step counters and summed past the last injected step;
          between two scrapes (a step's sums are added at once, at the flush that releases it) the
          largest growth of the host-gap counter is on the rank with the injected host gap and at
          least its length, and likewise the work counter for the injected GPU work;
        - windows (`cupmon-decode steps`, its "windows:" list): under `own`, `work` or `host-gap`, a
          rank opens a window at the step where it added the time (the watch numbers steps from 1,
          so job_emul's step S is the watch's step S+1; one step either way is accepted) and none
          at a step where it only waited or where every rank's collective was slower; under `step`
          the same rank that only waited opens one (the contrast).
      Prints one row per check (name|ok or FAILED|truth|cupmon) and exits 1 when any failed.
"""
import json
import re
import subprocess
import sys
import time
import urllib.request

COUNTERS = ("cupmon_steps_total", "cupmon_step_seconds_total", "cupmon_step_work_seconds_total",
            "cupmon_step_collective_seconds_total", "cupmon_step_host_gap_seconds_total")
RANK = re.compile(r"^==cupmon== rank (\d+) ")
WINDOW = re.compile(r"^  #(\d+) (\S+) at ")
# "took" for the step time; "own time (work + host gap)", "work" or "host gap" under --auto-window-by.
WHY = re.compile(r"^    why: step (\d+)(?: took|: [a-z +()-]+?) (\S+), (\S+)x the median (\S+)")


def parse_metrics(text):
    values = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in COUNTERS:
            values[name] = float(line.rsplit(" ", 1)[1])
    return values


def scrape(out, interval, ports):
    with open(out, "a") as f:
        while True:
            for port in ports:
                try:
                    body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=1).read()
                except OSError:
                    continue
                f.write(json.dumps({"t": time.time(), "port": port,
                                    "values": parse_metrics(body.decode())}) + "\n")
                f.flush()
            time.sleep(interval)


def windows_by_rank(decode, rec):
    r = subprocess.run([decode, "steps", rec], capture_output=True, text=True)
    out, rank = {}, None
    for line in r.stdout.splitlines():
        m = RANK.match(line)
        if m:
            rank = int(m.group(1))
            out.setdefault(rank, [])
            continue
        m = WINDOW.match(line)
        if m and rank is not None:
            out[rank].append({"source": m.group(2)})
            continue
        m = WHY.match(line)
        if m and rank is not None and out[rank]:
            out[rank][-1].update(step=int(m.group(1)), took=m.group(2), ratio=m.group(3),
                                 median=m.group(4))
    return out, r


def parse_injects(args):
    injects = []
    for a in args:
        p = a.split(":")
        if p[0] == "collectives":
            injects.append({"what": p[0], "rank": None, "step": int(p[1]), "ms": int(p[2])})
        else:
            injects.append({"what": p[0], "rank": int(p[1]), "step": int(p[2]), "ms": int(p[3])})
    return injects


def largest_growth(samples, counter):
    """The largest growth of COUNTER between two successive scrapes of one rank, in seconds."""
    best, prev = 0.0, None
    for s in samples:
        v = s["values"].get(counter)
        if v is None:
            continue
        if prev is not None:
            best = max(best, v - prev)
        prev = v
    return best


def check(argv):
    decode, rec, scrapes, base_port, nranks = argv[0], argv[1], argv[2], int(argv[3]), int(argv[4])
    sep = argv.index("--")
    by = argv[5:sep]
    injects = parse_injects(argv[sep + 1:])
    rows = []

    def row(name, ok, truth, seen):
        rows.append((name, "ok" if ok else "FAILED", truth, seen))

    per_rank = {r: [] for r in range(nranks)}
    try:
        for line in open(scrapes):
            s = json.loads(line)
            r = s["port"] - base_port
            if r in per_rank:
                per_rank[r].append(s)
    except OSError as e:
        row("metrics-scraped", False, "scrapes of every rank", str(e))
    last_step = max(i["step"] for i in injects)
    for r in range(nranks):
        last = per_rank[r][-1]["values"] if per_rank[r] else {}
        steps = int(last.get("cupmon_steps_total", 0))
        row(f"live-rank-{r}-steps", steps > last_step + 1,
            f"steps summed past step {last_step + 1}",
            f"{len(per_rank[r])} scrapes, last: {steps} steps, "
            f"work {last.get('cupmon_step_work_seconds_total', 0) * 1e3:.1f} ms, "
            f"collective {last.get('cupmon_step_collective_seconds_total', 0) * 1e3:.1f} ms, "
            f"host gap {last.get('cupmon_step_host_gap_seconds_total', 0) * 1e3:.1f} ms")
    for what, counter in (("host-gap", "cupmon_step_host_gap_seconds_total"),
                          ("gpu-work", "cupmon_step_work_seconds_total")):
        for inj in (i for i in injects if i["what"] == what):
            growth = {r: largest_growth(per_rank[r], counter) for r in range(nranks)}
            top = max(growth, key=growth.get)
            ok = top == inj["rank"] and growth[top] * 1e3 >= inj["ms"]
            row(f"live-{what}-metric", ok,
                f"largest growth on rank {inj['rank']}, at least {inj['ms']} ms",
                ", ".join(f"rank {r} {g * 1e3:.1f} ms" for r, g in growth.items()))
    wins, res = windows_by_rank(decode, rec)
    if res.returncode not in (0, 1):
        row("windows-read", False, "cupmon-decode steps exit 0 or 1",
            f"exit {res.returncode}: {res.stderr.strip()[:200]}")
        return rows
    for r in range(nranks):
        auto = [w for w in wins.get(r, []) if w.get("source") == "TRIGGER_AUTO" and "step" in w]
        near = lambda s: [w for w in auto if abs(w["step"] - (s + 1)) <= 1]  # noqa: E731
        own_kind = by[r] != "step"
        for inj in injects:
            s = inj["step"]
            added = inj["rank"] == r and (
                (inj["what"] == "host-gap" and by[r] in ("own", "host-gap", "step")) or
                (inj["what"] == "gpu-work" and by[r] in ("own", "work", "step")))
            want = added or not own_kind
            got = near(s)
            if inj["rank"] == r:
                role = f"added {inj['ms']} ms ({inj['what']})"
            elif inj["what"] == "collectives":
                role = f"every collective {inj['ms']} ms longer"
            else:
                role = f"waited for rank {inj['rank']}"
            seen = ", ".join(f"step {w['step']} ({w['took']}, {w['ratio']}x {w['median']})" for w in got) or "none"
            row(f"window-rank-{r}-step-{s}-by-{by[r]}", bool(got) == want,
                f"{'a window' if want else 'no window'}: {role}", seen)
        others = [w for w in auto if all(abs(w["step"] - (i["step"] + 1)) > 1 for i in injects)]
        row(f"window-rank-{r}-other", True, "noise of time-slicing (shown)",
            f"{len(others)} other automatic window(s)" +
            (": steps " + ", ".join(str(w["step"]) for w in others) if others else ""))
    return rows


def main(argv):
    if len(argv) >= 5 and argv[1] == "scrape":
        scrape(argv[2], float(argv[3]), [int(p) for p in argv[4:]])
        return 0
    if len(argv) >= 8 and argv[1] == "check" and "--" in argv:
        rows = check(argv[2:])
        for r in rows:
            print("|".join(str(x) for x in r))
        return 0 if all(r[1] == "ok" for r in rows) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
