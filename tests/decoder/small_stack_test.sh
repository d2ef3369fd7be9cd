#!/bin/sh
# Every report of cupmon-decode under a 2 MiB stack limit (the default is 8 MiB; threads and job
# launchers often give less). `steps` kept a 6 MiB table in a stack object and died with SIGSEGV
# under `ulimit -s 4096`.
# Usage: small_stack_test.sh CUPMON_DECODE SOURCE_DIR WORK_DIR
decode=$1 src=$2 work=$3
rec=$src/tests/data/ddp-2rank
mkdir -p "$work" || exit 1
ulimit -s 2048 || { echo "cannot set a 2 MiB stack limit"; exit 1; }
fails=0
# run OUTPUT COMMAND...: OUTPUT is removed afterwards (the exports of ddp-2rank come to 1.2 GB, and
# CI's disk is not large); on failure the command's last lines are printed.
run() {
  out=$1; shift
  "$@" >"$work/out.txt" 2>&1
  rc=$?
  rm -rf "$out"
  if [ $rc -ne 0 ]; then
    echo "FAILED (exit $rc) with a 2 MiB stack: $*"
    tail -3 "$work/out.txt"
    fails=$((fails + 1))
  else
    echo "ok: $*"
  fi
}
for cmd in summary steps info timeline report gpu-trace api-trace kern-exec; do
  run "$work/$cmd.out" "$decode" "$cmd" "$rec" -o "$work/$cmd.out"
done
for fmt in csv jsonl chrome-json perfetto; do
  run "$work/export.$fmt" "$decode" export "$rec" --format "$fmt" -o "$work/export.$fmt"
done
rm -rf "$work/kineto"
run "$work/kineto" "$decode" export "$rec" --format kineto -o "$work/kineto"
run "$work/diff.out" "$decode" diff "$rec" "$src/tests/data/sample" -o "$work/diff.out"
[ $fails -eq 0 ] || { echo "$fails command(s) failed"; exit 1; }
rm -rf "$work"
