#!/usr/bin/env python3
"""Checks `cupmon-decode export --format perfetto` with Perfetto's own schema, as a reader would.

Compiles the official perfetto_trace.proto (../shared/third_party/perfetto, a test tool that is
not part of cupmon) with protoc for Python, parses every exported file whole with python3-protobuf
and replays it: sequences and their incremental state, interning, track descriptors, clocks
(incremental sequence clock and REALTIME), begin/end pairs per track in time order, flows. Every
row of the JSONL export of the same recording and filters must be exactly one slice on the right
track with the right start, duration, name and correlation; device memory is a bytes-in-use counter
track per device with the values the synthetic memory recording implies; the two ranks' "job"
track holds a slice per slow step of `job --format json`, named by its verdict, and a cut export
has none. Exits 77 (skipped) when the schema,
protoc or python3-protobuf is missing.

usage: perfetto_export_test.py --decode BIN --make-sample BIN --source REPO [--shared DIR]
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
CLOCK_REALTIME = 1
SEQ_INCREMENTAL_STATE_CLEARED = 1
TYPE_SLICE_BEGIN = 1
TYPE_SLICE_END = 2
TYPE_INSTANT = 3
TYPE_COUNTER = 4
UNIT_SIZE_BYTES = 3
GPU_CATEGORIES = {"kernel", "memcpy", "memset"}
API_CATEGORIES = {"cuda_runtime", "cuda_driver"}

from export_checks import check, failures, sanitizer_clean


def load_schema(shared, work):
    proto_dir = os.path.join(shared, "third_party", "perfetto")
    proto = os.path.join(proto_dir, "perfetto_trace.proto")
    if not os.path.exists(proto):
        print(f"SKIP: {proto} is absent (the Perfetto schema is a test tool kept in ../shared; "
              "a user's checkout has none)")
        sys.exit(SKIP)
    if not shutil.which("protoc"):
        print("SKIP: protoc is not installed (Debian: protobuf-compiler; tools/install-deps)")
        sys.exit(SKIP)
    try:
        import google.protobuf  # noqa: F401
    except ImportError:
        print("SKIP: python3-protobuf is not installed (tools/install-deps)")
        sys.exit(SKIP)
    subprocess.run(["protoc", "-I" + proto_dir, "--python_out=" + work, proto], check=True)
    sys.path.insert(0, work)
    import perfetto_trace_pb2
    return perfetto_trace_pb2


def export(decode, inputs, fmt, out, extra):
    r = subprocess.run([decode, "export", *inputs, "--format", fmt, "-o", out, *extra],
                       stderr=subprocess.PIPE, text=True)
    # 1 is cupmon-decode's "warnings" exit code (a damaged or dropping input still exports), and
    # also what a sanitizer exits with by default: its report is looked for in stderr.
    if not check(r.returncode in (0, 1), f"export {fmt} {extra} exited {r.returncode}: {r.stderr}"):
        sys.exit(1)
    if not sanitizer_clean(r.stderr, f"export {fmt} {extra}"):
        sys.exit(1)


class Reader:
    """Replays a Trace as trace_processor would, keeping what the checks need."""

    def __init__(self, trace):
        self.tracks = {}        # uuid -> TrackDescriptor
        self.events = collections.defaultdict(list)  # track uuid -> [(ts, file order, kind, data)]
        self.sequences = {}     # sequence id -> state
        self.instants = []      # NVTX marks: dicts like slices' with dur 0
        self.counters = collections.defaultdict(list)  # track uuid -> [(ts, file order, value)]
        order = 0
        for p in trace.packet:
            order += 1
            if not check(p.HasField("trusted_packet_sequence_id"),
                         f"packet {order} has no trusted_packet_sequence_id"):
                continue
            seq_id = p.trusted_packet_sequence_id
            if seq_id not in self.sequences:
                check(p.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED,
                      f"first packet of sequence {seq_id} does not clear incremental state")
            if p.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
                self.sequences[seq_id] = {"names": {}, "cats": {}, "ann": {}, "str": {},
                                          "clock": None, "inc": {}, "rt": {}}
            st = self.sequences.get(seq_id)
            if st is None:
                continue
            if p.HasField("trace_packet_defaults"):
                st["clock"] = p.trace_packet_defaults.timestamp_clock_id
            if p.HasField("interned_data"):
                d = p.interned_data
                for table, entries, attr in (("names", d.event_names, "name"),
                                             ("cats", d.event_categories, "name"),
                                             ("ann", d.debug_annotation_names, "name"),
                                             ("str", d.debug_annotation_string_values, "str")):
                    for e in entries:
                        v = getattr(e, attr)
                        old = st[table].get(e.iid)
                        check(old is None or old == v, f"iid {e.iid} of {table} redefined")
                        st[table][e.iid] = v
            if p.HasField("clock_snapshot"):
                rt = [c.timestamp for c in p.clock_snapshot.clocks if c.clock_id == CLOCK_REALTIME]
                check(len(rt) == 1, "clock snapshot without REALTIME")
                check(p.clock_snapshot.primary_trace_clock == CLOCK_REALTIME,
                      "primary trace clock is not REALTIME")
                for c in p.clock_snapshot.clocks:
                    if c.clock_id >= 64:
                        st["rt"][c.clock_id] = rt[0] - c.timestamp
                        if c.is_incremental:
                            st["inc"][c.clock_id] = c.timestamp
            if p.HasField("track_descriptor"):
                t = p.track_descriptor
                check(t.uuid not in self.tracks, f"track uuid {t.uuid} described twice")
                check(not t.parent_uuid or t.parent_uuid in self.tracks,
                      f"track {t.uuid} names parent {t.parent_uuid} before it is described")
                self.tracks[t.uuid] = t
            if p.HasField("track_event"):
                self.event(p, st, order)

    def time(self, p, st):
        clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else st["clock"]
        if clock == CLOCK_REALTIME:
            return p.timestamp
        if not check(clock in st["rt"], f"packet on clock {clock} with no snapshot"):
            return None
        if clock in st["inc"]:
            st["inc"][clock] += p.timestamp
            return st["inc"][clock] + st["rt"][clock]
        return p.timestamp + st["rt"][clock]

    def event(self, p, st, order):
        e = p.track_event
        ts = self.time(p, st)
        if ts is None:
            return
        if not check(e.track_uuid in self.tracks, f"event on undescribed track {e.track_uuid}"):
            return
        if e.type in (TYPE_SLICE_BEGIN, TYPE_INSTANT):
            if e.HasField("name_iid"):
                name = st["names"].get(e.name_iid)
                check(name is not None, f"name iid {e.name_iid} not interned")
            else:
                name = e.name
            cats = []
            for c in e.category_iids:
                check(c in st["cats"], f"category iid {c} not interned")
                cats.append(st["cats"].get(c))
            args = {}
            for a in e.debug_annotations:
                key = st["ann"].get(a.name_iid) if a.HasField("name_iid") else a.name
                check(key is not None, f"annotation name iid {a.name_iid} not interned")
                which = a.WhichOneof("value")
                if which == "string_value_iid":
                    value = st["str"].get(a.string_value_iid)
                    check(value is not None, f"string iid {a.string_value_iid} not interned")
                    value = value.decode()
                else:
                    value = getattr(a, which)
                args[key] = value
            data = {"name": name, "cats": cats, "args": args, "flows": list(e.flow_ids),
                    "seq": p.trusted_packet_sequence_id,
                    "ends": list(e.terminating_flow_ids)}
            if e.type == TYPE_INSTANT:
                self.instants.append(dict(data, track=e.track_uuid, start=ts, dur=0))
                return
            self.events[e.track_uuid].append((ts, order, TYPE_SLICE_BEGIN, data))
        elif e.type == TYPE_SLICE_END:
            self.events[e.track_uuid].append((ts, order, TYPE_SLICE_END, None))
        elif e.type == TYPE_COUNTER:
            check(self.tracks[e.track_uuid].HasField("counter"),
                  f"counter event on track {e.track_uuid}, which has no CounterDescriptor")
            self.counters[e.track_uuid].append((ts, order, e.counter_value))
        else:
            check(False, f"unexpected event type {e.type}")

    def slices(self):
        """Pairs begins and ends per track in time order (ties in file order, as the sorter)."""
        out = []
        for uuid, evs in self.events.items():
            evs.sort(key=lambda x: (x[0], x[1]))
            open_ = []
            for ts, _, kind, data in evs:
                if kind == TYPE_SLICE_BEGIN:
                    # The export nests only inside NVTX ranges (on their thread's track): other
                    # overlapping slices go to another lane.
                    check(all(o["cats"] == ["nvtx"] for _, o in open_),
                          f"slice '{data['name']}' overlaps another on track {uuid}")
                    open_.append((ts, data))
                else:
                    if check(open_, f"end without begin on track {uuid} at {ts}"):
                        start, data = open_.pop()
                        out.append(dict(data, track=uuid, start=start, dur=ts - start))
            check(not open_, f"{len(open_)} unterminated slice(s) on track {uuid}")
        return out

    def root(self, uuid):
        t = self.tracks[uuid]
        while t.parent_uuid:
            t = self.tracks[t.parent_uuid]
        return t


def compare(reader, jsonl_path, label):
    """Every JSONL row with a time is one slice on its track, and nothing else is a row slice."""
    slices = reader.slices()
    procs = {t.process.pid for t in reader.tracks.values() if t.HasField("process")}
    got = collections.Counter()
    for s in slices:
        t = reader.tracks[s["track"]]
        cat = s["cats"][0] if s["cats"] else None
        index = s["seq"] - 1  # one sequence per recording, in output order
        if cat in GPU_CATEGORIES:
            dev_proc = reader.root(s["track"])
            if not check(dev_proc.HasField("process") and dev_proc.process.pid >= 1000000,
                         f"{label}: GPU slice not under a device process"):
                continue
            dev_index, device = divmod(dev_proc.process.pid - 1000000, 1000)
            check(dev_index == index, f"{label}: device process of recording {dev_index} "
                  f"holds a slice of recording {index}")
            check(dev_proc.process.process_name.startswith(f"GPU {device}"),
                  f"{label}: device process named {dev_proc.process.process_name}")
            check(t.name.startswith("stream "), f"{label}: GPU track named {t.name}")
            check(t.description.startswith("context "), f"{label}: GPU track without context")
            stream, context = int(t.name.split()[1]), int(t.description.split()[1])
            detail = s["args"].get("launch") if cat == "kernel" else s["args"].get("bytes")
            got[(index, cat, s["name"], s["start"], s["dur"], device, context, stream,
                 s["args"].get("correlation"), detail)] += 1
        elif cat in API_CATEGORIES:
            if t.HasField("thread"):
                tid, pid = t.thread.tid, t.thread.pid
            else:  # a second lane of a thread: "thread N lane K" under the rank's process
                tid, pid = int(t.name.split()[1]), reader.tracks[t.parent_uuid].process.pid
            check(pid in procs, f"{label}: thread track of pid {pid} has no process track")
            got[(index, cat, s["name"], s["start"], s["dur"], tid,
                 s["args"].get("correlation"), s["args"].get("return", 0))] += 1
    want = collections.Counter()
    recordings = []
    for line in open(jsonl_path):
        row = json.loads(line)
        if row["recording"] not in recordings:
            recordings.append(row["recording"])
        index = recordings.index(row["recording"])
        if row["type"] in ("range", "memory") or row["start_ns"] is None:
            continue  # ranges: check_nvtx; memory: check_memory
        if row["type"] == "api":
            cat = "cuda_driver" if row["kind"] == 4 else "cuda_runtime"
            want[(index, cat, row["name"], row["start_ns"], row["duration_ns"], row["tid"],
                  row["correlation_id"], row["return_value"])] += 1
        else:
            if row["type"] == "kernel":
                shape = lambda v: ",".join(map(str, v))
                detail = (f"grid {shape(row['grid'])} block {shape(row['block'])} "
                          f"registers {row['registers']}")
            else:
                detail = row["bytes"]
            want[(index, row["type"], row["name"], row["start_ns"], row["duration_ns"],
                  row["device"], row["context"], row["stream"], row["correlation_id"],
                  detail)] += 1
    kernels = sum(n for k, n in want.items() if k[1] == "kernel")
    check(kernels > 0, f"{label}: the JSONL export has no kernel")
    check(got == want, f"{label}: slices differ from the JSONL rows: "
          f"{sum((want - got).values())} missing, {sum((got - want).values())} extra; "
          f"e.g. missing {list((want - got).items())[:2]} extra {list((got - want).items())[:2]}")
    gpu = sum(n for k, n in want.items() if k[1] in GPU_CATEGORIES)
    print(f"{label}: {gpu} GPU rows ({kernels} kernels) and {sum(want.values()) - gpu} API rows, "
          "each one slice on its track")
    return slices, want


def check_flows(slices, jsonl_path, label):
    sources = {}
    for s in slices:
        for f in s["flows"]:
            check(f not in sources, f"{label}: flow id {f} starts twice")
            sources[f] = s
    flows = 0
    for s in slices:
        for f in s["ends"]:
            src = sources.get(f)
            if not check(src is not None, f"{label}: flow {f} into '{s['name']}' has no source"):
                continue
            check(src["cats"][0] in API_CATEGORIES and s["cats"][0] in GPU_CATEGORIES,
                  f"{label}: flow from {src['cats']} to {s['cats']}")
            check(src["args"].get("correlation") == s["args"].get("correlation"),
                  f"{label}: flow joins correlation {src['args'].get('correlation')} to "
                  f"{s['args'].get('correlation')}")
            check(src["start"] <= s["start"], f"{label}: flow goes back in time")
            flows += 1
    joined = 0
    for line in open(jsonl_path):
        row = json.loads(line)
        if row["type"] != "api" and row.get("start_ns") is not None and "start_ns" in row.get("api", {}):
            joined += 1
    check(flows == joined, f"{label}: {flows} flows, {joined} GPU rows with a timed launch call")
    print(f"{label}: {flows} launch flows, each from its call to its activity")
    return flows


def check_nvtx(reader, slices, jsonl_path, label):
    """Every JSONL range is one "nvtx" slice (a mark one instant) on its thread's track, with
    its name, start, duration (unended: to the last record), depth and domain; every kernel the
    JSONL labels carries the label as "nvtx_range", and no other kernel does."""
    rows = [json.loads(line) for line in open(jsonl_path)]
    last_end = max(r["end_ns"] for r in rows if r["type"] != "range" and r["end_ns"] is not None)
    got = collections.Counter()
    for s in slices + reader.instants:
        if s["cats"] != ["nvtx"]:
            continue
        t = reader.tracks[s["track"]]
        check(t.HasField("thread"), f"{label}: NVTX '{s['name']}' is not on a thread track")
        got[(s["name"], t.thread.tid, s["start"], s["dur"], s["args"].get("depth"),
             s["args"].get("domain", ""), s["args"].get("unended", 0))] += 1
    want = collections.Counter()
    for r in rows:
        if r["type"] != "range" or r["start_ns"] is None:
            continue
        dur = r["duration_ns"] if r["end_ns"] is not None else max(0, last_end - r["start_ns"])
        want[(r["name"], r["tid"], r["start_ns"], dur, r["depth"], r["domain"],
              0 if r["end_ns"] is not None else 1)] += 1
    check(len(want) >= 3, f"{label}: only {len(want)} ranges in the JSONL export")
    check(got == want, f"{label}: NVTX slices differ from the JSONL ranges: "
          f"missing {list((want - got).items())[:3]} extra {list((got - want).items())[:3]}")
    labels = {r["correlation_id"]: r.get("range") for r in rows if r["type"] == "kernel"}
    seen = {s["args"]["correlation"]: s["args"].get("nvtx_range") for s in slices
            if s["cats"] == ["kernel"]}
    check(any(labels.values()) and None in labels.values(),
          f"{label}: the sample should have labelled and unlabelled kernels: {labels}")
    check(seen == labels, f"{label}: kernel nvtx_range {seen}, JSONL range {labels}")
    print(f"{label}: {sum(want.values())} NVTX ranges and marks, each one slice or instant; "
          f"{sum(1 for v in labels.values() if v)} labelled kernels")


def lane_of(track):
    """(the logical track's name, lane number): "stream 7 lane 2" -> ("stream 7", 2)."""
    if track.HasField("thread"):
        return track.thread.thread_name, 1
    name, _, lane = track.name.partition(" lane ")
    return name, int(lane) if lane else 1


def check_lanes_hold_overlaps(reader, slices, label):
    """A slice on a second (or later) lane overlaps a slice on an earlier lane of its track."""
    proc_uuid = {t.process.pid: u for u, t in reader.tracks.items() if t.HasField("process")}
    by_lane = collections.defaultdict(list)
    for s in slices:
        t = reader.tracks[s["track"]]
        # A thread's first lane is its thread track; its later lanes sit under its process.
        parent = proc_uuid.get(t.thread.pid) if t.HasField("thread") else t.parent_uuid
        base, lane = lane_of(t)
        by_lane[(parent, base, lane)].append(s)
    later = 0
    for (parent, base, lane), items in by_lane.items():
        if lane == 1:
            continue
        earlier = [o for (p2, b2, l2), other in by_lane.items()
                   if (p2, b2) == (parent, base) and l2 < lane for o in other]
        for s in items:
            later += 1
            check(any(o["start"] < s["start"] + s["dur"] and s["start"] < o["start"] + o["dur"]
                      or o["start"] == s["start"] for o in earlier),
                  f"{label}: '{s['name'][:60]}' at {s['start']} is on {base} lane {lane} "
                  "but overlaps nothing on the earlier lanes")
    print(f"{label}: {later} slice(s) on later lanes, each overlapping an earlier lane")


def check_memory(reader, label):
    """The synthetic memory recording (tests/decoder/recording_builder.cc): bytes in use per
    device at each change, in time order, on a counter track in the device's process."""
    mib, t0 = 1 << 20, 1767225600000000000  # kT0: no calibration, so wall time is CUPTI time
    us = lambda n: t0 + n * 1000
    want = {
        0: [(us(10), mib), (us(20), 3 * mib), (us(30), 2 * mib), (us(40), 6 * mib),
            (us(50), 2 * mib), (us(70), 2 * mib + 256 * 1024)],
        1: [(us(15), 8 * mib), (us(35), 0)],
    }
    got = {}
    for uuid, events in reader.counters.items():
        t = reader.tracks[uuid]
        check(t.name == "memory in use (since the recording began)",
              f"{label}: counter track named {t.name!r}")
        check(t.counter.unit == UNIT_SIZE_BYTES, f"{label}: counter unit {t.counter.unit}")
        proc = reader.tracks[t.parent_uuid]
        if not check(proc.HasField("process") and proc.process.pid >= 1000000,
                     f"{label}: memory counter not under a device process"):
            continue
        device = (proc.process.pid - 1000000) % 1000
        check(proc.process.process_name.startswith(f"GPU {device}"),
              f"{label}: counter under {proc.process.process_name}")
        check(device not in got, f"{label}: two memory counter tracks for device {device}")
        got[device] = [(ts, v) for ts, _, v in sorted(events)]
    check(got == want, f"{label}: memory counters {got}, want {want}")
    print(f"{label}: {sum(len(v) for v in got.values())} bytes-in-use counter values on "
          f"{len(got)} device track(s)")


def check_job_track(reader, slices, decode, inputs, label):
    """The "job" track: one slice per slow step of `job --format json` over the same inputs, named
    "step N: verdict[, culprit's label]", from the earliest rank's start of the step to the latest
    end, on a track "job" of the process "job (N ranks)"."""
    r = subprocess.run([decode, "job", *inputs, "--format", "json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    check(r.returncode in (0, 1), f"{label}: job --format json exited {r.returncode}")
    if r.returncode not in (0, 1):
        return
    doc = json.loads(r.stdout)
    steps = {s["step"]: s for s in doc["steps"]}
    want = []
    for v in doc["slow_steps"]:
        ranks = [f for f in steps[v["step"]]["ranks"] if f["present"]]
        name = f"step {v['step']}: {v['verdict']}"
        if v["culprit"] is not None:
            name += ", " + doc["ranks"][v["culprit"]]["label"]
        start, end = min(f["start_ns"] for f in ranks), max(f["end_ns"] for f in ranks)
        want.append((name, start, end - start))
    got = [(s["name"], s["start"], s["dur"]) for s in slices if s["cats"] == ["job"]]
    check(sorted(got) == sorted(want) and len(want) > 0,
          f"{label}: job slices {sorted(got)[:3]}..., job's slow steps {sorted(want)[:3]}...")
    for s in slices:
        if s["cats"] != ["job"]:
            continue
        t = reader.tracks[s["track"]]
        proc = reader.root(s["track"])
        check(t.name.startswith("job") and proc.HasField("process") and
              proc.process.process_name == f"job ({len(doc['ranks'])} ranks)",
              f"{label}: a job slice on track {t.name!r}")


def run_case(pb, decode, inputs, extra, work, label, keep_jsonl=False):
    """Exports the case both ways and compares; the files are removed afterwards (ddp-2rank's
    JSONL is 341 MB, and CI's disk is not large) unless keep_jsonl."""
    trace_path = os.path.join(work, label + ".pftrace")
    jsonl_path = os.path.join(work, label + ".jsonl")
    export(decode, inputs, "perfetto", trace_path, extra)
    export(decode, inputs, "jsonl", jsonl_path, extra)
    with open(trace_path, "rb") as f:
        trace = pb.Trace.FromString(f.read())
    size = os.path.getsize(trace_path)
    os.remove(trace_path)
    reader = Reader(trace)
    slices, _ = compare(reader, jsonl_path, label)
    check_flows(slices, jsonl_path, label)
    if not keep_jsonl:
        os.remove(jsonl_path)
    return reader, slices, size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", required=True)
    ap.add_argument("--make-sample", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--shared")
    a = ap.parse_args()
    shared = a.shared or os.path.join(a.source, "..", "shared")
    with tempfile.TemporaryDirectory() as work:
        pb = load_schema(shared, work)
        ddp = os.path.join(a.source, "tests", "data", "ddp-2rank")

        # Two real ranks: every row, then a window and a device cut.
        reader, slices, size = run_case(pb, a.decode, [ddp], [], work, "ddp-2rank")
        names = {t.process.process_name for t in reader.tracks.values() if t.HasField("process")}
        check(any(n.startswith("rank 0 (") for n in names) and
              any(n.startswith("rank 1 (") for n in names), f"rank processes: {sorted(names)}")
        windows = [s for s in slices if s["cats"] == ["window"]]
        check(len(windows) == 2, f"{len(windows)} window slices, want one per rank")
        chrome = os.path.join(work, "ddp.json")
        export(a.decode, [ddp], "chrome-json", chrome, [])
        chrome_size = os.path.getsize(chrome)
        os.remove(chrome)
        check(size * 8 <= chrome_size,
              f"pftrace {size} bytes is more than 1/8 of chrome-json's {chrome_size}")
        print(f"ddp-2rank: pftrace {size} bytes, chrome-json {chrome_size} bytes "
              f"(1/{chrome_size / size:.1f})")
        check_job_track(reader, slices, a.decode, [ddp], "ddp-2rank")
        _, cut, _ = run_case(pb, a.decode, [ddp], ["--window", "1", "--device", "1"], work,
                             "ddp-window1-dev1")
        check(not [s for s in cut if s["cats"] == ["job"]], "ddp-window1-dev1: a job track")

        check_lanes_hold_overlaps(reader, slices, "ddp-2rank")

        # Overlapping slices on one stream and on one thread get lanes of their own; a late row
        # (rows not reordered) still goes into the gap it fits.
        ov = os.path.join(work, "overlap")
        subprocess.run([a.make_sample, "--overlap", ov], check=True, stdout=subprocess.DEVNULL)
        for extra in ([], ["--reorder-rows", "0"]):
            label = "overlap" + "".join(extra)
            reader, slices, _ = run_case(pb, a.decode, [ov], extra, work, label)
            check_lanes_hold_overlaps(reader, slices, label)
            lanes = collections.Counter()
            for s in slices:
                base, lane = lane_of(reader.tracks[s["track"]])
                lanes[base] = max(lanes[base], lane)
            check(lanes["stream 7"] == 3, f"{label}: stream 7 has {lanes['stream 7']} lanes, want 3")
            check(lanes["stream 8"] == 1, f"{label}: stream 8 has {lanes['stream 8']} lanes, want 1")
            check(lanes["thread 101"] == 2,
                  f"{label}: thread 101 has {lanes['thread 101']} lanes, want 2")
            late = [s for s in slices if s["args"].get("correlation") == 4]
            check(len(late) == 1 and reader.tracks[late[0]["track"]].name == "stream 7",
                  f"{label}: the kernel at 122 us is not on stream 7's first lane")
            graph = [s for s in slices if s["name"] == "cudaGraphLaunch"]
            check(len(graph) == 1 and len(graph[0]["flows"]) == 5,
                  f"{label}: the graph launch does not start five flows")
            notes = [s for s in slices if s["cats"] == ["annotation"]]
            check([s["name"] for s in notes] == ["step 1"], f"{label}: annotations {notes}")
        # NVTX: ranges nest with the API calls on their thread's track; kernels carry labels.
        nv = os.path.join(work, "nvtx")
        subprocess.run([a.make_sample, "--nvtx", nv], check=True, stdout=subprocess.DEVNULL)
        reader, slices, _ = run_case(pb, a.decode, [nv], [], work, "nvtx", keep_jsonl=True)
        check_nvtx(reader, slices, os.path.join(work, "nvtx.jsonl"), "nvtx")
        check(not reader.counters, "nvtx: counter tracks in a recording without memory records")
        # Device memory: a bytes-in-use counter track per device.
        mem = os.path.join(work, "memory")
        subprocess.run([a.make_sample, "--memory", mem], check=True, stdout=subprocess.DEVNULL)
        reader, slices, _ = run_case(pb, a.decode, [mem], [], work, "memory")
        check_memory(reader, "memory")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
