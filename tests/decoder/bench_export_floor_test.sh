#!/bin/sh
# tools/bench-export-floor on a small recording: its table and rates, the bytes it stored, and
# its refusals (exit 2: bad usage; exit 1: the export failed, with the export's message).
# Usage: bench_export_floor_test.sh CUPMON_DECODE SOURCE_DIR WORK_DIR
decode=$1 src=$2 work=$3
tool=$src/tools/bench-export-floor
rec=$src/tests/data/h200-torch-nvtx
rm -rf "$work" && mkdir -p "$work" || exit 1
fails=0
fail() {
  echo "FAILED: $*"
  fails=$((fails + 1))
}

"$tool" --runs 3 --events 1000 "$decode" "$rec" kineto "$work/place" >"$work/out.txt" 2>&1
rc=$?
cat "$work/out.txt"
[ $rc -eq 0 ] || fail "kineto run exited $rc"
[ "$(grep -c '^run ' "$work/out.txt")" -eq 3 ] || fail "not 3 runs printed"
bytes=$(sed -n 's/.*): \([0-9]*\) bytes, 3 runs each.*/\1/p' "$work/out.txt")
[ -n "$bytes" ] && [ "$bytes" -gt 100000 ] || fail "bytes stored not reported or too few: '$bytes'"
grep -Eq '^export +[0-9]+\.[0-9]{3} +[0-9]+\.[0-9]{3} +[0-9]+\.[0-9]{3} +[0-9]+\.[0-9]{3}$' \
  "$work/out.txt" || fail "no export row of medians"
grep -Eq '^floor +0\.[0-9]{3} ' "$work/out.txt" || fail "no floor row of medians"
grep -q '^rates of 1000: export cpu ' "$work/out.txt" || fail "no rates line with --events"
[ ! -e "$work/place/out" ] || fail "the output was left behind in PLACE"

# The same bytes as the export writes by itself.
"$decode" export "$rec" --format kineto -o "$work/own" >/dev/null 2>&1
own=$(find "$work/own" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
[ "$own" = "$bytes" ] || fail "stored $bytes bytes, the export writes $own"

"$tool" --runs 1 "$decode" "$rec" csv "$work/place" >"$work/csv.txt" 2>&1 || fail "csv run failed"
grep -q '^csv export of ' "$work/csv.txt" || fail "csv: no summary line"
grep -q '^rates' "$work/csv.txt" && fail "csv: rates printed without --events"

expect() {  # expect RC MESSAGE ARGS...
  want=$1 msg=$2
  shift 2
  "$tool" "$@" >"$work/err.txt" 2>&1
  got=$?
  [ $got -eq "$want" ] || fail "exit $got, not $want: $*"
  grep -q "$msg" "$work/err.txt" || { fail "no '$msg' for: $*"; cat "$work/err.txt"; }
}
expect 2 "needs BINARY RECORDING FORMAT PLACE" "$decode" "$rec"
expect 2 "runs must be a positive number, not '0'" --runs 0 "$decode" "$rec" csv "$work/place"
expect 2 "events must be a positive number, not 'x'" --events x "$decode" "$rec" csv "$work/place"
expect 2 "unknown option --bogus" --bogus
expect 2 "is not an executable" "$work/none" "$rec" csv "$work/place"
expect 2 "does not exist" "$decode" "$work/none" csv "$work/place"
expect 1 "nosuch not in" --runs 1 "$decode" "$rec" nosuch "$work/place"
"$tool" --help | grep -q "^Example" || fail "--help has no example"

[ $fails -eq 0 ] && echo "bench-export-floor: all checks passed"
[ $fails -eq 0 ]
