#!/usr/bin/env python3
"""`cupmon-decode report` on the real recordings: the page parses (python3 html.parser, every
element closed), loads nothing from elsewhere, and its numbers are those of `summary` (GPU
activity and kernel counts, the top activity's name and time) and `steps --format csv` (step
counts, which steps are slow). Also: many steps are downsampled to the chart's columns with every
slow step still marked, --kernel narrows the counts as it narrows summary, a recording without
steps gets a page without a step chart, damaged input is flagged, and each refusal (a terminal
without -o, an unwritable -o, --from, a missing input) exits 2 with a message naming it.

usage: html_report_test.py --decode BIN --make-sample BIN --source REPO
"""
import argparse
import csv
import html.parser
import io
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile

failures = []
# Elements without an end tag; SVG elements written self-closed (<line .../>) reach
# handle_startendtag instead.
VOID = {"meta", "br", "hr", "img", "link", "input", "col", "area", "base", "wbr"}


def check(cond, what):
    if not cond:
        what = what if len(what) < 400 else what[:400] + "..."
        failures.append(what)
        print("FAIL:", what)


class Page(html.parser.HTMLParser):
    """Elements by id, every element's tag, attributes and text; unbalanced tags are errors."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.elements, self.by_id = [], [], [], {}

    def _open(self, tag, attrs, closed):
        e = {"tag": tag, "attrs": dict(attrs), "text": "", "children": []}
        if self.stack:
            self.stack[-1]["children"].append(e)
        self.elements.append(e)
        if "id" in e["attrs"]:
            if e["attrs"]["id"] in self.by_id:
                self.errors.append("duplicate id " + e["attrs"]["id"])
            self.by_id[e["attrs"]["id"]] = e
        if not closed and tag not in VOID:
            self.stack.append(e)

    def handle_starttag(self, tag, attrs):
        self._open(tag, attrs, False)

    def handle_startendtag(self, tag, attrs):
        self._open(tag, attrs, True)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1]["tag"] != tag:
            self.errors.append("unexpected </%s> (open: %s)" % (
                tag, "/".join(e["tag"] for e in self.stack)))
            return
        self.stack.pop()

    def handle_data(self, data):
        for e in self.stack:
            e["text"] += data

    def find(self, tag=None, cls=None):
        return [e for e in self.elements if (tag is None or e["tag"] == tag) and
                (cls is None or cls in e["attrs"].get("class", "").split())]


def descendants(e):
    for c in e["children"]:
        yield c
        yield from descendants(c)


def parse(text):
    p = Page()
    p.feed(text)
    p.close()
    if p.stack:
        p.errors.append("not closed: " + "/".join(e["tag"] for e in p.stack))
    return p


def run(decode, *args, stdout=subprocess.PIPE, env=None):
    return subprocess.run([decode, *args], stdout=stdout, stderr=subprocess.PIPE, text=True,
                          timeout=120, env=env)


def check_one_read(decode, paths, out, what, code=0):
    """The page `out` (read once: the busy chart in every bucket size the recording's span may ask
    for) is the page of the reads that find the steps first (CUPMON_READ_ALL=1), byte for byte,
    with the same exit code `code`."""
    twice = out + ".two-reads.html"
    r = run(decode, "report", *paths, "-o", twice, env=dict(os.environ, CUPMON_READ_ALL="1"))
    same = (r.returncode == code and
            open(out, "rb").read() == open(twice, "rb").read())
    check(same, "%s: the one-read page differs from the two-read one (exit %d)" %
          (what, r.returncode))


def summary_rows(text, total):
    """The GPU activities rows of `summary` (of the "Total profiling result" when `total`)."""
    if total:
        text = text[text.index("Total profiling result"):]
    rows, in_gpu = [], False
    pat = re.compile(r"^\s*(GPU activities:|API calls:)?\s+([\d.]+)%\s+(\S+)\s+(\d+)\s+\S+\s+\S+"
                     r"\s+\S+\s+(.*)$")
    for line in text.splitlines():
        if "GPU activities:" in line:
            in_gpu = True
        elif "API calls:" in line or line.startswith("==cupmon=="):
            if rows:
                break
            in_gpu = False
        m = pat.match(line)
        if in_gpu and m:
            rows.append({"time": m.group(3), "calls": int(m.group(4)), "name": m.group(5)})
    return rows


def self_contained(text, page, what):
    for e in page.elements:
        for key in ("src", "href", "xlink:href", "data", "action"):
            v = e["attrs"].get(key) or ""
            check(not re.match(r"\s*(https?:)?//", v, re.I),
                  "%s: <%s %s=%s> loads from elsewhere" % (what, e["tag"], key, v))
    check(not page.find("script") or all("src" not in e["attrs"] for e in page.find("script")),
          what + ": a <script src>")
    check(not page.find("link") and not page.find("img") and not page.find("iframe"),
          what + ": <link>, <img> or <iframe> in the page")
    check(not re.search(r"url\(\s*['\"]?(https?:)?//", text), what + ": a CSS url() elsewhere")
    check(not re.search(r"@import", text), what + ": a CSS @import")


def check_page(decode, paths, html_path, merged, what):
    text = open(html_path, encoding="utf-8").read()
    page = parse(text)
    check(not page.errors, "%s: the HTML does not parse cleanly: %s" % (what, page.errors[:3]))
    gen = [e for e in page.find("meta") if e["attrs"].get("name") == "generator"]
    check(gen and gen[0]["attrs"].get("content", "").startswith("cupmon-decode"),
          what + ": no <meta name=generator>")
    self_contained(text, page, what)

    summ = run(decode, "summary", *paths)
    rows = summary_rows(summ.stdout, merged)
    check(rows, what + ": no GPU activity rows in summary")
    gpu_total = page.by_id.get("gpu-rows-total", {}).get("text")
    check(gpu_total == str(sum(r["calls"] for r in rows)),
          "%s: gpu-rows-total %s, summary's calls add up to %d" %
          (what, gpu_total, sum(r["calls"] for r in rows)))
    kernels = sum(r["calls"] for r in rows if not r["name"].startswith("[CUDA "))
    check(page.by_id.get("kernels-total", {}).get("text") == str(kernels),
          "%s: kernels-total %s, summary %d" %
          (what, page.by_id.get("kernels-total", {}).get("text"), kernels))
    top = page.by_id.get("top-activity")
    check(top is not None, what + ": no top-activity row")
    if top and rows:
        cells = {c["attrs"].get("class", ""): c["text"] for c in top["children"]}
        check(cells.get("name") == rows[0]["name"],
              "%s: top activity %r, summary's %r" % (what, cells.get("name"), rows[0]["name"]))
        check(cells.get("n time") == rows[0]["time"],
              "%s: top activity time %s, summary's %s" % (what, cells.get("n time"),
                                                           rows[0]["time"]))
        check(top["attrs"].get("data-calls") == str(rows[0]["calls"]),
              what + ": top activity calls differ from summary's")
        # Kernel names hold <, > and &: escaped in the file, the same name once parsed.
        if "<" in rows[0]["name"]:
            check(rows[0]["name"] not in text, what + ": a kernel name written unescaped")

    steps_csv = run(decode, "steps", *paths, "--format", "csv").stdout
    steps = list(csv.DictReader(io.StringIO(steps_csv)))
    by_rank = {}
    for s in steps:
        by_rank.setdefault(s["rank"], []).append(s)
    sections = page.find("section", "rank-section")
    check(len(sections) == max(len(by_rank), 1),
          "%s: %d rank sections, steps has %d ranks" % (what, len(sections), len(by_rank)))
    for i, sec in enumerate(sections):
        rank_steps = by_rank.get(sec["attrs"].get("data-rank"), [])
        count = page.by_id.get("rank%d-steps" % i, {}).get("attrs", {}).get("data-count")
        check(count == str(len(rank_steps)),
              "%s: rank %d shows %s steps, steps finds %d" % (what, i, count, len(rank_steps)))
        slow = {s["step"] for s in rank_steps if s["slow"] == "1"}
        chart = page.by_id.get("rank%d-steps-chart" % i)
        check(chart is not None and chart["tag"] == "svg",
              "%s: rank %d has no step chart" % (what, i))
        if chart:
            marked = {c["attrs"]["data-step"] for c in descendants(chart)
                      if "slow" in c["attrs"].get("class", "").split()}
            check(marked == slow, "%s: rank %d marks slow steps %s, steps says %s" %
                  (what, i, sorted(marked)[:5], sorted(slow)[:5]))
            check(any(c["tag"] == "path" and "median" in c["attrs"].get("class", "")
                      for c in descendants(chart)), what + ": the step chart has no median line")
        table = page.by_id.get("rank%d-slow-steps" % i)
        if slow:
            # (A browser's DOM puts the rows in a <tbody>.)
            listed = ({r["attrs"].get("data-step") for r in descendants(table) if r["tag"] == "tr"}
                      - {None}) if table else set()
            check(listed == slow, "%s: rank %d lists slow steps %s" % (what, i, sorted(listed)[:5]))
            cmds = [c["text"] for c in page.find("code") if "gpu-trace" in c["text"]]
            check(cmds and all("--from" in c and "--to" in c for c in cmds),
                  what + ": slow steps without drill-down commands")
        busy = page.by_id.get("rank%d-busy-chart" % i)
        check(busy is not None, "%s: rank %d has no busy chart" % (what, i))
        if busy:
            devices = [g for g in busy["children"] if g["tag"] == "g"]
            check(devices, what + ": the busy chart has no device")
            for g in devices:
                n = int(g["attrs"]["data-buckets"])
                check(0 < n <= 2002, "%s: %d busy buckets on a device" % (what, n))
    axes = {(c["attrs"].get("data-from-ns"), c["attrs"].get("data-to-ns"))
            for c in page.find("svg", "chart")}
    check(len(axes) == 1 and None not in next(iter(axes)),
          "%s: the charts do not share one time axis: %s" % (what, sorted(axes)[:4]))
    if merged:
        ranks = [r for r in page.find("tr", "rank")]
        check(len(ranks) == len(by_rank), "%s: %d rank rows, %d ranks" % (what, len(ranks),
                                                                          len(by_rank)))
        for r in ranks:
            n = len(by_rank.get(r["attrs"]["data-rank"], []))
            check(r["attrs"]["data-steps"] == str(n), what + ": a rank row's step count differs")
    return page


def check_job_section(decode, paths, page, what):
    """The Job section against `job --format json` over the same paths: every slow step (step,
    verdict, culprit, step time, excess, culprit's excess, each rank's step time and which cell is
    marked the culprit's) and every rank's medians and culprit count."""
    r = run(decode, "job", *paths, "--format", "json")
    check(r.returncode in (0, 1), "%s: job --format json: exit %d: %s" % (what, r.returncode,
                                                                           r.stderr))
    if r.returncode not in (0, 1):
        return
    doc = json.loads(r.stdout)
    sec = page.by_id.get("job")
    check(sec is not None, what + ": no Job section")
    if sec is None:
        return
    check((sec["attrs"]["data-steps"], sec["attrs"]["data-slow"]) ==
          (str(len(doc["steps"])), str(len(doc["slow_steps"]))),
          "%s: Job section of %s steps, %s slow; job: %d, %d" % (
              what, sec["attrs"]["data-steps"], sec["attrs"]["data-slow"], len(doc["steps"]),
              len(doc["slow_steps"])))
    by_step = {s["step"]: s for s in doc["steps"]}
    want = [(s["step"], s["verdict"], "" if s["culprit"] is None else str(s["culprit"]),
             by_step[s["step"]]["step_ns"], s["excess_ns"], s["culprit_ns"],
             [(str(i), f["step_ns"] if f["present"] else None, i == s["culprit"])
              for i, f in enumerate(by_step[s["step"]]["ranks"])])
            for s in doc["slow_steps"][:100]]
    got = []
    table = page.by_id.get("job-slow")
    for row in ([e for e in table["children"] if e["tag"] == "tr" and "data-step" in e["attrs"]]
                if table else []):
        at = row["attrs"]
        cells = [(c["attrs"]["data-rank"],
                  int(c["attrs"]["data-step-ns"]) if "data-step-ns" in c["attrs"] else None,
                  "culprit" in c["attrs"].get("class", "").split())
                 for c in row["children"] if c["tag"] == "td" and "data-rank" in c["attrs"]]
        got.append((int(at["data-step"]), at["data-verdict"], at["data-culprit"],
                    int(at["data-step-ns"]), int(at["data-excess-ns"]), int(at["data-culprit-ns"]),
                    cells))
    check(got == want, "%s: the Job section's slow steps %s, job's %s" % (what, got, want))
    fields = ("steps", "median_step_ns", "median_work_ns", "median_collective_ns",
              "median_wait_ns", "median_host_gap_ns", "culprit_of")
    want = [tuple(x[f] for f in fields) for x in doc["ranks"]]
    got = [tuple(int(e["attrs"]["data-" + f.replace("_ns", "-ns").replace("_", "-")])
                 for f in fields)
           for e in page.by_id["job-ranks"]["children"] if e["tag"] == "tr" and
           "data-rank" in e["attrs"]] if "job-ranks" in page.by_id else []
    check(got == want, "%s: the Job section's ranks %s, job's %s" % (what, got, want))
    return doc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", required=True)
    ap.add_argument("--make-sample", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    data = os.path.join(a.source, "tests", "data")
    sample, ddp = os.path.join(data, "sample"), os.path.join(data, "ddp-2rank")
    tmp = tempfile.mkdtemp(prefix="cupmon-html-")
    try:
        out = os.path.join(tmp, "sample.html")
        r = run(a.decode, "report", sample, "-o", out)
        check(r.returncode == 0, "report on the sample: exit %d: %s" % (r.returncode, r.stderr))
        page = check_page(a.decode, [sample], out, False, "sample")
        check(page.by_id.get("rank0-steps", {}).get("attrs", {}).get("data-count") == "820",
              "the sample's 820 steps (tests/data/sample: train_mlp.py --steps 800 --warmup 20)")
        check(not [f for f in os.listdir(tmp) if ".tmp-" in f], "a temporary file left behind")
        # Standard output when it is no terminal: the same page.
        r2 = run(a.decode, "report", sample)
        check(r2.returncode == 0 and r2.stdout == open(out, encoding="utf-8").read(),
              "report to a pipe differs from -o FILE")

        out = os.path.join(tmp, "ddp.html")
        r = run(a.decode, "report", ddp, "-o", out)
        check(r.returncode == 0, "report on ddp-2rank: exit %d: %s" % (r.returncode, r.stderr))
        page = check_page(a.decode, [ddp], out, True, "ddp-2rank")
        check_job_section(a.decode, [ddp], page, "ddp-2rank")

        # A synthetic job with two stragglers: the verdicts `job` gives, the culprits marked.
        jobdir = os.path.join(tmp, "job3")
        subprocess.run([a.make_sample, "--job", jobdir, "3", "host-gap:1:40:60",
                        "gpu-work:2:60:40"], check=True, stdout=subprocess.DEVNULL, timeout=120)
        out = os.path.join(tmp, "job3.html")
        r = run(a.decode, "report", jobdir, "-o", out)
        check(r.returncode == 0, "report on a synthetic job: exit %d: %s" % (r.returncode, r.stderr))
        page = check_page(a.decode, [jobdir], out, True, "make-sample --job")
        check_one_read(a.decode, [jobdir], out, "make-sample --job")
        doc = check_job_section(a.decode, [jobdir], page, "make-sample --job")
        verdicts = {s["step"]: (s["verdict"], s["culprit"]) for s in doc["slow_steps"]} if doc else {}
        check(verdicts == {40: ("host-gap", 1), 60: ("gpu-work", 2)},
              "make-sample --job: verdicts %s" % verdicts)
        # One rank of it, two ranks without collectives, a --kernel filter: no Job section.
        for name, args in (("one-rank", [os.path.join(jobdir, "rank1")]),
                           ("no-nccl", [sample, os.path.join(data, "synthetic-sample")]),
                           ("filtered", [jobdir, "--kernel", "gemm"])):
            out = os.path.join(tmp, name + ".html")
            r = run(a.decode, "report", *args, "-o", out)
            text = open(out, encoding="utf-8").read() if os.path.exists(out) else ""
            check(text and 'id="job"' not in text and "job-slow" not in text,
                  "%s: exit %d, a Job section or no page: %s" % (name, r.returncode, r.stderr))

        # A rank that lacks a window the other has (the sample has #1 and #2, ddp rank 0 only #1;
        # two jobs, so a warning for that too): a warning naming it, and its row says so.
        rank0 = sorted(f for f in os.listdir(ddp) if "-vm-1611-" in f)[0]
        out = os.path.join(tmp, "mixed.html")
        r = run(a.decode, "report", sample, os.path.join(ddp, rank0), "-o", out)
        page = parse(open(out, encoding="utf-8").read()) if os.path.exists(out) else None
        lacks = [e["text"] for e in page.find("span", "missing-windows")] if page else []
        check(r.returncode == 1 and "(vm:1611)" in r.stderr and "lacks window(s) #2" in r.stderr
              and lacks == ["lacks #2"],
              "a rank without window #2: exit %d, rows %s, %r" % (r.returncode, lacks, r.stderr))

        # Many steps: at most one column per pixel, every slow step still marked.
        big = os.path.join(tmp, "big")
        subprocess.run([a.make_sample, "--steps", big, "2000000"], check=True,
                       stdout=subprocess.DEVNULL, timeout=120)
        out = os.path.join(tmp, "big.html")
        r = run(a.decode, "report", big, "-o", out)
        check(r.returncode == 0, "report on %d-record steps: exit %d: %s" % (2000000, r.returncode,
                                                                               r.stderr))
        page = check_page(a.decode, [big], out, False, "make-sample --steps")
        check_one_read(a.decode, [big], out, "make-sample --steps")
        # A recording still being written (its last file has no footer yet, as after a crash):
        # the span is guessed from that file's calibration samples, and the page is the same.
        live = os.path.join(tmp, "live")
        subprocess.run([a.make_sample, "--day", live, "0.5", "200", "1"], check=True,
                       stdout=subprocess.DEVNULL, timeout=120)
        files = sorted(os.listdir(live))
        check(len(files) > 1, "--day 0.5 200 1 wrote %d file(s), not several" % len(files))
        last = os.path.join(live, files[-1])
        os.truncate(last, os.path.getsize(last) - 3)
        out_live = os.path.join(tmp, "live.html")
        r = run(a.decode, "report", live, "-o", out_live)
        check(r.returncode in (0, 1) and os.path.exists(out_live),
              "report of a recording whose last file is cut: exit %d: %s" %
              (r.returncode, r.stderr))
        check_one_read(a.decode, [live], out_live, "make-sample --day, its last file cut",
                       r.returncode)
        n = int(page.by_id["rank0-steps"]["attrs"]["data-count"])
        med = [c for c in page.by_id["rank0-steps-chart"]["children"] if c["tag"] == "path"]
        cols = int(med[0]["attrs"]["data-columns"]) if med else -1
        check(n > 5000 and 0 < cols <= 1000,
              "%d steps drawn in %d columns (expected at most 1000)" % (n, cols))

        # --kernel narrows the table as it narrows summary.
        out = os.path.join(tmp, "gemm.html")
        r = run(a.decode, "report", sample, "--kernel", "gemm", "-o", out)
        page = parse(open(out, encoding="utf-8").read()) if r.returncode == 0 else None
        gemm = summary_rows(run(a.decode, "summary", sample, "--kernel", "gemm").stdout, False)
        check(page is not None and gemm and
              page.by_id["kernels-total"]["text"] == str(sum(g["calls"] for g in gemm)) and
              "Filtered" in page.by_id["overview"]["text"],
              "report --kernel gemm: exit %d, kernels do not match summary --kernel gemm" %
              r.returncode)

        # No steps (the small synthetic sample): a note, a page without a step chart, exit 0.
        out = os.path.join(tmp, "synthetic.html")
        r = run(a.decode, "report", os.path.join(data, "synthetic-sample"), "-o", out)
        page = parse(open(out, encoding="utf-8").read()) if r.returncode == 0 else None
        check(page is not None and not page.errors and "no training steps" in r.stderr and
              page.by_id["rank0-steps"]["attrs"].get("data-count") == "0" and
              "rank0-steps-chart" not in page.by_id,
              "report without steps: exit %d, %r" % (r.returncode, r.stderr))

        # Device memory: a chart and a table when the recording has MEMORY2 records (the synthetic
        # memory recording, tests/decoder/recording_builder.cc), nothing when it has none.
        for name in ("sample.html", "synthetic.html"):
            text = open(os.path.join(tmp, name), encoding="utf-8").read()
            check("Device memory" not in text and "memory-chart" not in text,
                  name + ": a memory section in a recording without memory records")
        mem = os.path.join(tmp, "memory")
        subprocess.run([a.make_sample, "--memory", mem], check=True, stdout=subprocess.DEVNULL)
        out = os.path.join(tmp, "memory.html")
        r = run(a.decode, "report", mem, "-o", out)
        page = parse(open(out, encoding="utf-8").read()) if os.path.exists(out) else None
        check(page is not None and not page.errors and "rank0-memory-chart" in page.by_id,
              "report on the memory recording: exit %d, no memory chart: %r" % (r.returncode,
                                                                                r.stderr))
        if page is not None and "rank0-memory-chart" in page.by_id:
            mib, t0 = 1 << 20, 1767225600000000000  # kT0; no calibration: wall = CUPTI time
            want = {"0": (6 * mib, t0 + 40000, 2 * mib + 256 * 1024, 4, 3),
                    "1": (8 * mib, t0 + 15000, 0, 1, 1)}
            chart = page.by_id["rank0-memory-chart"]
            groups = [e for e in descendants(chart) if e["tag"] == "g"]
            got = {}
            for g in groups:
                at = g["attrs"]
                got[at["data-device"]] = (int(at["data-peak-bytes"]), int(at["data-peak-ns"]),
                                          int(at["data-in-use-bytes"]),
                                          int(at["data-allocations"]), int(at["data-releases"]))
                kids = {c["tag"]: c for c in g["children"]}
                top = float(kids["rect"]["attrs"]["y"])
                base = top + float(kids["rect"]["attrs"]["height"])
                ys = [float(v) for v in re.findall(r"[ML][\d.]+ ([\d.]+)", kids["path"]["attrs"]["d"])]
                peak, _, in_use = got[at["data-device"]][:3]
                # The path reaches the strip's top (the peak) once and ends at the bytes in use.
                check(abs(min(ys) - top) < 0.06 and abs(float(kids["circle"]["attrs"]["cy"]) - top)
                      < 0.06, "GPU %s: the peak is not drawn at the strip's top" % at["data-device"])
                check(abs(ys[-1] - (base - (base - top) * in_use / peak)) < 0.06,
                      "GPU %s: the path ends at y %s, not at the bytes in use" %
                      (at["data-device"], ys[-1]))
                check("peak" in kids["circle"]["text"], "GPU %s: the peak mark has no title" %
                      at["data-device"])
            check(got == want, "memory chart: %s, want %s" % (got, want))
            rows = [e for e in descendants(page.by_id["rank0-memory"]) if e["tag"] == "tr"]
            check(len(rows) == 3 and "6291456 B (6.00 MiB)" in rows[1]["text"],
                  "memory table: %s" % [e["text"] for e in rows])

        # Damage: bytes overwritten in the middle of the first file.
        bad = os.path.join(tmp, "damaged")
        shutil.copytree(sample, bad)
        first = sorted(f for f in os.listdir(bad) if f.endswith(".cupmon"))[0]
        with open(os.path.join(bad, first), "r+b") as f:
            f.seek(os.path.getsize(os.path.join(bad, first)) // 2)
            f.write(b"\xff" * 4096)
        out = os.path.join(tmp, "damaged.html")
        r = run(a.decode, "report", bad, "-o", out)
        check(r.returncode == 1 and "warning" in r.stderr,
              "damaged input: exit %d (expected 1 with a warning)" % r.returncode)
        if os.path.exists(out):
            page = parse(open(out, encoding="utf-8").read())
            integ = page.by_id.get("rank0-integrity")
            check(integ is not None and integ["attrs"].get("data-warnings") == "1",
                  "damaged input: the integrity block does not flag it")
        else:
            check(False, "damaged input: no page written")

        # Refusals.
        master, slave = pty.openpty()
        r = run(a.decode, "report", sample, stdout=slave)
        os.close(slave)
        os.close(master)
        check(r.returncode == 2 and "-o FILE.html" in r.stderr,
              "report to a terminal: exit %d, %r" % (r.returncode, r.stderr))
        r = run(a.decode, "report", sample, "-o", os.path.join(tmp, "no-such-dir", "x.html"))
        check(r.returncode == 2 and "no-such-dir" in r.stderr,
              "unwritable -o: exit %d, %r" % (r.returncode, r.stderr))
        r = run(a.decode, "report", sample, "--from", "1s", "-o", os.path.join(tmp, "f.html"))
        check(r.returncode == 2 and "--from" in r.stderr and
              not os.path.exists(os.path.join(tmp, "f.html")),
              "report --from: exit %d, %r" % (r.returncode, r.stderr))
        r = run(a.decode, "report", os.path.join(tmp, "missing"), "-o", os.path.join(tmp, "m.html"))
        check(r.returncode == 2 and "missing" in r.stderr,
              "missing input: exit %d, %r" % (r.returncode, r.stderr))
        r = run(a.decode, "report", "--help")
        check(r.returncode == 0 and "cupmon-decode report rec/ -o report.html" in r.stdout,
              "report --help lacks its examples")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("html report: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
