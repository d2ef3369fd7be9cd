"""The C API's counters against the counter list (monitor/counters/include/cupmon/counters/
counter_list.h): cupmon.h's cupmon_stats and cupmon_stats_sized and this module's ctypes mirror
(python/cupmon/_capi.py) must carry exactly its BASE and SIZED rows, in the order and at the
offsets it gives. stats() returns every ctypes field, so it needs no list of its own.

Run by ctest with the other module tests (deploy_python). Environment: CUPMON_INCLUDE_DIR (as
test_cupmon.py), CUPMON_COUNTER_LIST (the list; default: the source tree's).
"""

import ctypes
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO = os.path.dirname(PYTHON_DIR)
COUNTER_LIST = os.environ.get(
    "CUPMON_COUNTER_LIST",
    os.path.join(REPO, "monitor", "counters", "include", "cupmon", "counters", "counter_list.h"))

sys.path.insert(0, HERE)
sys.path.insert(0, PYTHON_DIR)
from cupmon import _capi  # noqa: E402
from test_cupmon import header_fields  # noqa: E402

# Fields of the C structs that are not counters, so not rows of the list.
NOT_COUNTERS = {
    "cupmon_stats": ("strings", "running", "reserved"),
    "cupmon_stats_sized": ("filled", "base", "window_open", "stop_timed_out"),
}
ROW = re.compile(r'X\(\s*(\w+)\s*,\s*(\d+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\d+)\s*,\s*(\w+)\s*,'
                 r'\s*"([^"]*)"\s*,((?:\s*"(?:[^"\\]|\\.)*")+)\s*\)')


def counter_rows():
    """(name, field, source, c_struct, c_offset, prom, prom_name) per row, in list order."""
    with open(COUNTER_LIST) as f:
        text = f.read()
    body = text[text.index("#define CUPMON_COUNTERS(X)"):]
    body = body[:body.index("\n\n")].replace("\\\n", "\n")
    rows = [(m[0], int(m[1]), m[2], m[3], int(m[4]), m[5], m[6]) for m in ROW.findall(body)]
    if len(rows) != body.count("X("):
        raise AssertionError(f"{COUNTER_LIST}: {body.count('X(')} rows, {len(rows)} parsed")
    return rows


def placed(c_struct):
    """Names of the rows the list places in `c_struct` (BASE, SIZED), by offset."""
    rows = sorted((off, name) for name, _, _, where, off, _, _ in counter_rows() if where == c_struct)
    return [name for _, name in rows], dict((name, off) for off, name in rows)


class CounterListTest(unittest.TestCase):
    def check_order(self, where, expected, fields, struct):
        counters = [f for f in fields if f not in NOT_COUNTERS[struct]]
        for name in expected:
            self.assertIn(name, counters, f"counter {name} of the counter list ({COUNTER_LIST}) "
                          f"is not in {where}'s {struct}")
        for name in counters:
            self.assertIn(name, expected, f"{where}'s {struct}.{name} is not a counter the list "
                          f"places there ({COUNTER_LIST}): add its row, or name it in NOT_COUNTERS")
        for i, (have, want) in enumerate(zip(counters, expected)):
            self.assertEqual(have, want, f"{where}'s {struct}: counter {i + 1} is {have}, the "
                             f"counter list puts {want} there")

    def test_the_parser_sees_every_row(self):
        # Guards the guard: a parser that found nothing would make the tests below vacuous.
        names = [r[0] for r in counter_rows()]
        self.assertEqual(names[0], "buffers_completed")
        self.assertIn("stranded_buffers", names)
        self.assertGreaterEqual(len(names), 40)

    def test_cupmon_h_carries_the_base_and_sized_rows_in_order(self):
        for struct, c_struct in (("cupmon_stats", "BASE"), ("cupmon_stats_sized", "SIZED")):
            with self.subTest(struct=struct):
                expected, _ = placed(c_struct)
                self.check_order("cupmon.h", expected, header_fields(struct), struct)

    def test_ctypes_mirror_carries_them_at_the_lists_offsets(self):
        for struct, cls, c_struct in (("cupmon_stats", _capi.CupmonStats, "BASE"),
                                      ("cupmon_stats_sized", _capi.CupmonStatsSized, "SIZED")):
            with self.subTest(struct=struct):
                expected, offsets = placed(c_struct)
                self.check_order("_capi.py", expected, [f for f, _ in cls._fields_], struct)
                types = dict(cls._fields_)
                for name, off in offsets.items():
                    self.assertIs(types[name], ctypes.c_uint64, f"{struct}.{name}")
                    self.assertEqual(getattr(cls, name).offset, off,
                                     f"_capi.py's {struct}.{name} is at offset "
                                     f"{getattr(cls, name).offset}, the counter list says {off}")


if __name__ == "__main__":
    unittest.main()
