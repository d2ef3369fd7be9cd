#!/usr/bin/env python3
"""Opens `cupmon-decode report` pages in headless Chromium (Debian's chromium, installed by
tools/install-deps): --dump-dom must hold the charts as SVG elements with the numbers `summary`
and `steps` give, and --screenshot must write a 1400x2000 PNG that is not blank. Chromium is
started and stopped by its pid (its own process group) under a timeout, with a profile directory
of its own. Exits 77 (skipped) with the reason when chromium is not installed.

usage: html_report_browser_test.py --decode BIN --source REPO [--save-screenshot FILE]
"""
import argparse
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import html_report_test as pages  # noqa: E402  (the parser and the summary/steps checks)

TIMEOUT_S = 60


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def browse(browser, profile, url, *args):
    """Runs one headless Chromium; returns its stdout. Killed (its whole group) after TIMEOUT_S."""
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--user-data-dir=" + profile, *args, url]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pages.check(False, "chromium did not finish in %d s: %s" % (TIMEOUT_S, " ".join(cmd)))
        return ""
    pages.check(proc.returncode == 0, "chromium exit %d: %s" %
                (proc.returncode, err.decode(errors="replace")[-500:]))
    return out.decode("utf-8", errors="replace")


def check_png(path, width, height):
    data = open(path, "rb").read() if os.path.exists(path) else b""
    pages.check(len(data) > 20000, "screenshot %s: %d bytes (expected a rendered page)" %
                (path, len(data)))
    if len(data) < 33 or data[:8] != b"\x89PNG\r\n\x1a\n":
        pages.check(False, "screenshot %s is no PNG" % path)
        return
    w, h = struct.unpack(">II", data[16:24])
    pages.check((w, h) == (width, height), "screenshot is %dx%d, asked for %dx%d" %
                (w, h, width, height))
    idat, off = b"", 8
    while off + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[off:off + 8])
        if kind == b"IDAT":
            idat += data[off + 8:off + 8 + length]
        off += 12 + length
    pixels = zlib.decompress(idat)
    # A blank page is one colour: its rows hold a handful of byte values.
    pages.check(len(set(pixels[:4_000_000])) > 64, "screenshot looks blank")


def check_dom(decode, paths, dom, merged, what):
    tmp = tempfile.NamedTemporaryFile("w", suffix=".html", delete=False, encoding="utf-8")
    tmp.write(dom)
    tmp.close()
    try:
        page = pages.check_page(decode, paths, tmp.name, merged, what + " (Chromium's DOM)")
    finally:
        os.unlink(tmp.name)
    charts = [e for e in page.find("svg") if "chart" in e["attrs"].get("class", "")]
    pages.check(len(charts) >= 2, "%s: %d SVG charts in the DOM" % (what, len(charts)))
    return page


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--decode", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--save-screenshot", help="keep the sample's screenshot here")
    a = ap.parse_args()
    browser = chromium()
    if not browser:
        print("SKIP: chromium is not installed (tools/install-deps installs Debian's chromium)")
        return 77
    data = os.path.join(a.source, "tests", "data")
    tmp = tempfile.mkdtemp(prefix="cupmon-browser-")
    try:
        profile = os.path.join(tmp, "profile")
        for name, merged in (("sample", False), ("ddp-2rank", True)):
            src = os.path.join(data, name)
            html_path = os.path.join(tmp, name + ".html")
            r = pages.run(a.decode, "report", src, "-o", html_path)
            pages.check(r.returncode == 0,
                        "report %s: exit %d: %s" % (name, r.returncode, r.stderr))
            url = "file://" + html_path
            dom = browse(browser, profile, url, "--dump-dom")
            pages.check("<svg" in dom, "%s: no SVG in Chromium's DOM" % name)
            page = check_dom(a.decode, [src], dom, merged, name)
            if name == "sample":
                pages.check(page.by_id.get("rank0-steps", {}).get("attrs", {}).get("data-count")
                            == "820", "sample: Chromium's DOM lacks the 820 steps")
            shot = os.path.join(tmp, name + ".png")
            browse(browser, profile, url, "--hide-scrollbars", "--screenshot=" + shot,
                   "--window-size=1400,2000")
            check_png(shot, 1400, 2000)
            if name == "sample" and a.save_screenshot and os.path.exists(shot):
                shutil.copyfile(shot, a.save_screenshot)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if pages.failures:
        print("%d failure(s)" % len(pages.failures))
        return 1
    print("html report in Chromium: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
