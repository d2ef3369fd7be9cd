#!/usr/bin/env python3
"""Figures of one recording for tools/gpu-chaos, from `cupmon-decode info` (one recording).

Usage: chaos_info.py DECODE DIR
Prints one line of key=value: exit (the decoder's exit code), kernels (kind 10 decoded),
lost_kernels (kernel records lost before disk), records_in, decoded, lost, damaged (damaged
ranges), undecodable, nofooter (files without footer), files, windows.
"""
import re
import subprocess
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    decode, directory = sys.argv[1], sys.argv[2]
    run = subprocess.run([decode, "info", directory], capture_output=True, text=True)
    text = run.stdout + run.stderr
    figures = {"exit": run.returncode, "kernels": 0, "lost_kernels": 0, "records_in": 0,
               "decoded": 0, "lost": 0, "damaged": 0, "undecodable": 0, "nofooter": 0,
               "files": 0, "windows": 0}
    for m in re.finditer(r"records by kind: (.*)", text):
        for item in m.group(1).split():
            kind, _, count = item.partition("=")
            if kind == "10":
                figures["kernels"] += int(count)
    for m in re.finditer(r"^\s+lost before disk: (\d+) records \((\d+) kernel", text, re.M):
        figures["lost_kernels"] += int(m.group(2))
    for m in re.finditer(r"records: (\d+) in, (\d+) decoded, (\d+) lost before disk", text):
        figures["records_in"] += int(m.group(1))
        figures["decoded"] += int(m.group(2))
        figures["lost"] += int(m.group(3))
    for m in re.finditer(r"integrity: (\d+) damaged ranges .*?, (\d+) undecodable chunks.*?"
                         r"(\d+) files without footer", text):
        figures["damaged"] += int(m.group(1))
        figures["undecodable"] += int(m.group(2))
        figures["nofooter"] += int(m.group(3))
    for m in re.finditer(r"  files: (\d+)", text):
        figures["files"] += int(m.group(1))
    for m in re.finditer(r"  windows: (\d+)", text):
        figures["windows"] += int(m.group(1))
    print(" ".join(f"{k}={v}" for k, v in figures.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
