"""Helpers shared by the export tests (perfetto_export_test.py, kineto_export_test.py): checks that
record a failure and go on, and the check that cupmon-decode's stderr holds no sanitizer report."""

failures = []


def check(cond, what):
    """Records `what` as a failure (printing the first 30) unless `cond`; returns `cond`."""
    if not cond:
        failures.append(what)
        if len(failures) <= 30:
            print("FAIL:", what)
    return cond


def sanitizer_clean(stderr, what):
    """A sanitizer build's report (ASan/UBSan exit 1 by default, like cupmon-decode's warnings)."""
    return check("Sanitizer" not in stderr and "runtime error:" not in stderr,
                 f"{what}: sanitizer report: {stderr[-2000:]}")
