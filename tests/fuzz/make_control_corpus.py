#!/usr/bin/env python3
"""Writes the seed corpus of cupmon_control_fuzz (tests/fuzz/control_corpus/): valid and invalid
control request frames behind the entry's flags byte (tests/fuzz/control_fuzz_entry.h). The protobuf
bytes are written by hand so the script needs nothing but Python.

    tests/fuzz/make_control_corpus.py tests/fuzz/control_corpus
"""
import os
import struct
import sys


def varint(n):
    n &= (1 << 64) - 1  # negative int64 values are 10-byte two's complement varints
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field(num, wire, payload):
    key = varint((num << 3) | wire)
    if wire == 2:
        return key + varint(len(payload)) + payload
    return key + payload


def open_window(duration=None, kinds=(), at=None):
    body = b""
    if duration is not None:
        body += field(1, 0, varint(duration))
    for k in kinds:
        body += field(2, 2, k.encode())
    if at is not None:
        body += field(3, 0, varint(at))
    return field(2, 2, body)


def frame(body):
    return struct.pack("<I", len(body)) + body


STATUS = field(1, 2, b"")
CLOSE = field(3, 2, b"")
FLUSH = field(4, 2, b"")
ROTATE = field(5, 2, b"")
FAR_FUTURE = 4102444800000  # 2100-01-01, more than 24 h ahead whenever this runs

SEEDS = {
    # Valid requests.
    "status": b"\0" + frame(STATUS),
    "open-window": b"\0" + frame(open_window(5000, ["runtime", "DRIVER"])),
    "open-window-all-kinds": b"\0" + frame(open_window(
        1, ["runtime", "driver", "overhead", "synchronization", "cuda_event",
            "external_correlation", "Runtime"])),
    "pipelined": b"\0" + frame(STATUS) + frame(open_window(100)) + frame(CLOSE) + frame(FLUSH) +
                 frame(ROTATE) + frame(STATUS),
    "target-refuses": b"\x01" + frame(open_window(100)) + frame(CLOSE) + frame(FLUSH) + frame(ROTATE),
    "target-throws": b"\x02" + frame(STATUS) + frame(open_window(100)) + frame(FLUSH),
    "stopped-plane": b"\x08" + frame(STATUS) + frame(open_window(100)),
    "odd-status": b"\x10" + frame(STATUS),
    # Invalid values inside well-formed requests.
    "duration-zero": b"\0" + frame(open_window(0)),
    "duration-huge": b"\0" + frame(open_window(0xFFFFFFFF)),
    "duration-over-24h": b"\0" + frame(open_window(86400001)),
    "unknown-kind": b"\0" + frame(open_window(100, ["KERNEL"])),
    "at-far-future": b"\0" + frame(open_window(100, [], FAR_FUTURE)),
    "at-past": b"\0" + frame(open_window(100, [], 1)),
    "at-negative": b"\0" + frame(open_window(100, [], -1)),
    "at-int64-min": b"\0" + frame(open_window(100, [], -(1 << 63))),
    "at-int64-max": b"\0" + frame(open_window(100, [], (1 << 63) - 1)),
    # Broken frames.
    "empty-body": b"\0" + frame(b""),
    "garbage": b"\0" + frame(b"\xff\xff\xff\xff\xff"),
    "unknown-request-type": b"\0" + frame(field(6, 2, b"")),
    "wrong-wire-type": b"\0" + frame(field(2, 0, varint(5))),
    # Strings protobuf would complain about on stderr (invalid UTF-8), and a valid non-ASCII one.
    "kinds-invalid-utf8": b"\0" + frame(field(2, 2, field(1, 0, varint(100)) +
                                            field(2, 2, b"RUN\xff\xfeTIME"))),
    "kinds-valid-utf8-unknown": b"\0" + frame(open_window(100, ["RUNTIME\u00e9"])),
    "oversized-prefix": b"\0" + struct.pack("<I", 0xFFFFFFFF) + b"xyz",
    "oversized-small-limit": b"\x04" + frame(open_window(100, ["runtime"] * 12)),
    "truncated": b"\0" + struct.pack("<I", 10) + b"abc",
    "truncated-prefix": b"\0\x05\x00",
}

if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fuzz/control_corpus"
    os.makedirs(out, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
