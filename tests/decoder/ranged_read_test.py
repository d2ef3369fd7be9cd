"""Ranged reads (FORMAT.md, "Chunk index"): every command given --from/--to or --window prints the
rows of a whole read (CUPMON_READ_ALL=1) while reading only the chunks that can hold the range.
On the recordings of tests/data (written before the index: read whole) and on synthetic histories
with windows, rotation and a change of CUPTI's clock domain; and on damaged copies: damaged index
bytes cost at most the seek, never rows, and damage outside the range is not reported.

Run by ctest (tests/decoder/CMakeLists.txt): ranged_read_test.py --decode BIN --make-sample BIN
--source DIR --work DIR.
"""

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import unittest

ARGS = None
BUNDLED = ("sample", "ddp-2rank", "synthetic-sample", "h200-nvtx", "h200-torch-nvtx")
NOT_READ = "cannot hold the time range were not read or checked"
# summary's lines that speak of what was read (its Span, windows' launch counts, integrity); the
# profiling table and the rest are the whole read's.
READ_LINES = re.compile(r"^==cupmon== (Span|Windows|Integrity|Drops):")


def decode(args, whole=False, cwd=None):
    env = dict(os.environ)
    env.pop("CUPMON_READ_ALL", None)
    if whole:
        env["CUPMON_READ_ALL"] = "1"
    return subprocess.run([ARGS.decode] + args, capture_output=True, env=env, timeout=300,
                          cwd=cwd)


def make(*args):
    subprocess.run([ARGS.make_sample] + list(args), check=True, capture_output=True, timeout=600)


def span_of(path):
    """(first record's unix ns, duration ns) from a whole summary's Span line."""
    out = decode(["summary", path], whole=True).stdout.decode()
    m = re.search(r"Span: (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{9})Z \+ ([\d.]+)(ns|us|ms|s)", out)
    if not m:
        return None
    import calendar
    import time
    secs = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(4)]
    return secs * 10**9 + int(m.group(2)), int(float(m.group(3)) * scale)


def ranges_of(path):
    """Ranges across the recording: relative, wall-clock (@ns) and windows."""
    span = span_of(path)
    out = []
    if span:
        first, dur = span
        for lo, hi in ((0.0, 0.01), (0.5, 0.52), (0.97, 1.2)):
            out.append(["--from", "%dns" % int(dur * lo), "--to", "%dns" % int(dur * hi)])
        mid = first + dur // 2
        out.append(["--from", "@%d" % (mid - 30 * 10**9), "--to", "@%d" % (mid + 30 * 10**9)])
        out.append(["--from", "@%d" % (mid + dur // 7)])
        out.append(["--to", "@%d" % (first + dur // 9)])
    for w in (1, 3):
        out.append(["--window", str(w)])
    out.append(["--window", "2", "--from", "0s", "--to", "%dns" % (span[1] // 2 if span else 10**9)])
    return out


def summary_rows(text):
    return "\n".join(l for l in text.splitlines() if not READ_LINES.match(l))


COMMANDS = (
    ["gpu-trace"],
    ["api-trace"],
    ["kern-exec"],
    ["export", "--format", "csv"],
    ["export", "--format", "jsonl"],
    ["export", "--format", "chrome-json"],
    ["export", "--format", "perfetto", "-o", "OUT"],
    ["summary"],
)


# The synthetic histories: one command per kind of output (rows, an export, the summary), so that
# the test stays within CI's time in its three suites; every command runs on the dense recording.
HISTORY_COMMANDS = (
    ["gpu-trace"],
    ["api-trace"],
    ["export", "--format", "csv"],
    ["export", "--format", "perfetto", "-o", "OUT"],
    ["summary"],
)


class RangedRead(unittest.TestCase):
    def compare(self, path, commands=COMMANDS, ranges=None):
        """Each command over each range, ranged and whole; returns how many runs left chunks out."""
        skipped = 0
        work = os.path.join(ARGS.work, "out")
        os.makedirs(work, exist_ok=True)
        for r in ranges if ranges is not None else ranges_of(path):
            for cmd in commands:
                outs = []
                for whole in (False, True):
                    out_file = os.path.join(work, "whole" if whole else "ranged")
                    args = [a if a != "OUT" else out_file for a in cmd] + [path] + r
                    p = decode(args, whole=whole)
                    body = p.stdout
                    if "OUT" in cmd:
                        with open(out_file, "rb") as f:
                            body = f.read()
                    if cmd == ["summary"]:
                        body = summary_rows(body.decode())
                    outs.append((body, p.returncode, p.stderr.decode()))
                what = "%s %s %s" % (" ".join(cmd), path, " ".join(r))
                self.assertEqual(outs[0][0], outs[1][0], what)
                self.assertEqual(outs[0][1], outs[1][1], what + "\n" + outs[0][2])
                self.assertNotIn(NOT_READ, outs[1][2], what)
                if NOT_READ in outs[0][2]:
                    skipped += 1
        return skipped

    def test_bundled_recordings(self):
        # Written before the index: every range is read whole, with the whole read's output.
        for name in BUNDLED:
            path = os.path.join(ARGS.source, "tests", "data", name)
            ranges = ranges_of(path)
            self.assertEqual(self.compare(path, ranges=ranges[1:2] + ranges[3:4] + ranges[-2:-1]),
                             0, name)

    def test_history_with_windows_and_rotation(self):
        path = os.path.join(ARGS.work, "history")
        shutil.rmtree(path, ignore_errors=True)
        # 10 minutes at 2,000 activities a second, rotated at 1 MiB, a window every minute.
        make("--day", path, "0.17", "2000", "1", "60")
        self.assertGreater(len(os.listdir(path)), 3)
        self.assertGreater(self.compare(path, commands=HISTORY_COMMANDS), 10)

    def test_history_with_a_clock_domain_change(self):
        path = os.path.join(ARGS.work, "domains")
        shutil.rmtree(path, ignore_errors=True)
        make("--day", path, "0.12", "2000", "1", "75", "200")
        self.assertGreater(self.compare(path, commands=HISTORY_COMMANDS), 5)

    def test_dense_recording(self):
        # The timing mix at its own rate: windows every 10 buffers, their launches and annotations
        # in untimed buffers placed by correlation id.
        path = os.path.join(ARGS.work, "dense")
        shutil.rmtree(path, ignore_errors=True)
        make(path, "600000")
        self.assertGreater(self.compare(path, ranges=[r for r in ranges_of(path)]), 0)


def chunks(data):
    """(offset, type, payload offset, payload length) of each chunk, walking the headers."""
    at, out = 0, []
    while at + 32 <= len(data) and data[at:at + 4] == b"CPMN":
        length = struct.unpack_from("<I", data, at + 16)[0]
        out.append((at, data[at + 6], at + 32, length))
        at += 32 + length
    return out


class Damage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.clean = os.path.join(ARGS.work, "damage-clean")
        shutil.rmtree(cls.clean, ignore_errors=True)
        make("--day", cls.clean, "0.17", "2000", "2", "60")
        cls.files = sorted(os.listdir(cls.clean))
        first, dur = span_of(cls.clean)
        cls.mid = first + dur // 2
        cls.range = ["--from", "@%d" % (cls.mid - 20 * 10**9), "--to", "@%d" % (cls.mid + 20 * 10**9)]

    def copy(self, name):
        path = os.path.join(ARGS.work, name)
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(self.clean, path)
        return path

    def rows(self, path, whole=False):
        return decode(["gpu-trace", path] + self.range, whole=whole)

    def test_damaged_index_costs_no_rows(self):
        clean = self.rows(self.clean, whole=True)
        self.assertEqual(clean.returncode, 0)
        target = self.files[len(self.files) // 2]
        with open(os.path.join(self.clean, target), "rb") as f:
            data = f.read()
        footer = chunks(data)[-1]
        self.assertEqual(footer[1], 7)
        # Bytes of the footer's header and of its index, flipped one at a time: the file is read
        # whole (the checksums fail), and the rows are those of the clean history.
        for at in (footer[0] + 17, footer[2] + 3, footer[2] + footer[3] // 2,
                   footer[2] + footer[3] - 40):
            path = self.copy("damage-index")
            with open(os.path.join(path, target), "r+b") as f:
                f.seek(at)
                b = f.read(1)
                f.seek(at)
                f.write(bytes([b[0] ^ 0x5A]))
            ranged, whole = self.rows(path), self.rows(path, whole=True)
            self.assertEqual(ranged.stdout, clean.stdout, "byte %d" % at)
            self.assertEqual(whole.stdout, clean.stdout, "byte %d" % at)
            self.assertEqual(ranged.returncode, whole.returncode, "byte %d" % at)

    def damage_raw(self, file_index, which):
        path = self.copy("damage-raw")
        target = os.path.join(path, self.files[file_index])
        with open(target, "rb") as f:
            data = f.read()
        raw = [c for c in chunks(data) if c[1] == 2]
        c = raw[which]
        with open(target, "r+b") as f:
            f.seek(c[2] + c[3] // 2)
            f.write(b"\0" * 16)
        return path

    def test_damage_outside_the_range_is_not_read(self):
        path = self.damage_raw(0, 2)
        ranged, whole = self.rows(path), self.rows(path, whole=True)
        self.assertEqual(whole.returncode, 1, whole.stderr)
        self.assertEqual(ranged.returncode, 0, ranged.stderr)
        self.assertIn(NOT_READ.encode(), ranged.stderr)
        self.assertEqual(ranged.stdout, self.rows(self.clean, whole=True).stdout)

    def test_damage_inside_the_range_is_reported(self):
        # The middle file's middle raw buffer: inside a range around the middle of the history.
        path = self.damage_raw(len(self.files) // 2, 0)
        with open(os.path.join(path, self.files[len(self.files) // 2]), "rb") as f:
            pass
        ranged = decode(["gpu-trace", path, "--from", "@%d" % (self.mid - 600 * 10**9), "--to",
                         "@%d" % (self.mid + 60 * 10**9)])
        whole = decode(["gpu-trace", path, "--from", "@%d" % (self.mid - 600 * 10**9), "--to",
                        "@%d" % (self.mid + 60 * 10**9)], whole=True)
        self.assertEqual(whole.returncode, 1)
        self.assertEqual(ranged.returncode, 1, ranged.stderr)
        self.assertIn(b"payload checksum mismatch", ranged.stderr)
        self.assertEqual(ranged.stdout, whole.stdout)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--decode", required=True)
    p.add_argument("--make-sample", required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--work", required=True)
    ARGS, rest = p.parse_known_args()
    os.makedirs(ARGS.work, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
