# cupmon-slurm-lib.sh: helpers shared by cupmon-slurm-trigger and cupmon-slurm-collect (sourced).
# shellcheck shell=bash

# "10s", "500ms", "2m" -> milliseconds on stdout; non-zero for anything else (no bare numbers: the
# unit would be a guess, as in cupmonctl).
cupmon_parse_ms() {
  local text=$1
  if [[ $text =~ ^([0-9]+)ms$ ]]; then echo "${BASH_REMATCH[1]}"
  elif [[ $text =~ ^([0-9]+)s$ ]]; then echo $((BASH_REMATCH[1] * 1000))
  elif [[ $text =~ ^([0-9]+)m$ ]]; then echo $((BASH_REMATCH[1] * 60000))
  else return 1
  fi
}

# Sets cupmon_job_state and cupmon_job_nodes for job $1 from squeue; returns 1 with a message on
# stderr when Slurm does not know the job.
cupmon_job_info() {
  local job=$1 out
  if ! command -v squeue >/dev/null; then
    echo "squeue not found: run this where the Slurm client commands are (a login node)" >&2
    return 1
  fi
  if ! out=$(squeue --noheader --jobs="$job" --format="%T %D" 2>&1) || [[ -z $out ]]; then
    echo "job $job not found: squeue says: ${out:-nothing (the job has ended)}" >&2
    return 1
  fi
  read -r cupmon_job_state cupmon_job_nodes <<<"$out"
  export cupmon_job_state cupmon_job_nodes
}

cupmon_valid_job_id() { [[ $1 =~ ^[0-9]+(_[0-9]+)?$ ]]; }

# cupmon_merge_summaries JOB SUMMARY...: merges `cupmon-decode summary` outputs (one per node, each
# in DIR/<host>/summary.txt) into one report on stdout: a line per node, then every "Profiling
# result" table of every rank summed by (type, name): total time and calls added, min and max over
# all, average and Time(%) recomputed. It reads the times as printed (5 significant digits), so the
# sums are exact to about that. Used by cupmon-slurm-decode, on the host that runs it.
cupmon_merge_summaries() {
  local job=$1 program
  shift
  read -r -d '' program <<'AWK' || true
function ns(text,   v) {
  v = text
  if (sub(/ns$/, "", v)) return v + 0
  if (sub(/us$/, "", v)) return v * 1e3
  if (sub(/ms$/, "", v)) return v * 1e6
  if (sub(/s$/, "", v)) return v * 1e9
  return -1
}
function node_of(path,   n, parts) {
  n = split(path, parts, "/")
  return n >= 2 ? parts[n - 1] : path
}
FNR == 1 { nodes[++node_count] = node_of(FILENAME); in_table = 0 }
/^==cupmon== / {
  in_table = ($0 ~ /^==cupmon== Profiling result:/)
  if ($0 ~ /Recording 0x/) { ranks[node_count]++; total_ranks++ }
  if ($0 ~ /SYNTHETIC/) synthetic[node_count] = 1
  next
}
in_table {
  line = $0
  if (match(line, /^ *GPU activities: /)) { type = 1; line = substr(line, RLENGTH + 1) }
  else if (match(line, /^ *API calls: /)) { type = 2; line = substr(line, RLENGTH + 1) }
  if (!match(line, /^ *[0-9.]+% +[^ ]+ +[0-9]+ +[^ ]+ +[^ ]+ +[^ ]+  /)) next
  name = substr(line, RLENGTH + 1)
  split(substr(line, 1, RLENGTH), f, " ")
  t = ns(f[2]); mn = ns(f[5]); mx = ns(f[6])
  if (t < 0 || mn < 0 || mx < 0) { bad++; next }
  key = type SUBSEP name
  if (!(key in total)) { total[key] = 0; calls[key] = 0; lo[key] = mn; hi[key] = mx }
  total[key] += t; calls[key] += f[3]; type_total[type] += t
  if (mn < lo[key]) lo[key] = mn
  if (mx > hi[key]) hi[key] = mx
}
function dur(v) {
  if (v >= 1e9) return sprintf("%#.5gs", v / 1e9)
  if (v >= 1e6) return sprintf("%#.5gms", v / 1e6)
  if (v >= 1e3) return sprintf("%#.5gus", v / 1e3)
  return sprintf("%.4gns", v)
}
END {
  if (bad) {
    print "cupmon_merge_summaries: " bad " table row(s) with an unknown time unit" > "/dev/stderr"
    exit 1
  }
  printf("==cupmon== Merged by cupmon-slurm-decode: job %s, %d node(s), %d rank(s); " \
         "the node summaries beside this file, summed as printed there\n",
         job, node_count, total_ranks)
  printf("==cupmon== %-24s %6s  %s\n", "Node", "Ranks", "Summary")
  for (i = 1; i <= node_count; i++)
    printf("==cupmon== %-24s %6d  %s/summary.txt%s\n", nodes[i], ranks[i], nodes[i],
           synthetic[i] ? "  (SYNTHETIC: CUPTI test double, not measured on a GPU)" : "")
  printf("==cupmon== Total profiling result (%d node(s), %d rank(s)):\n", node_count, total_ranks)
  printf("%16s  %7s %10s %9s %10s %10s %10s  %s\n",
         "Type", "Time(%)", "Time", "Calls", "Avg", "Min", "Max", "Name")
  fflush()
  sorter = "sort -t '\t' -k1,1n -k2,2nr"
  for (key in total) {
    split(key, k, SUBSEP)
    pct = type_total[k[1]] > 0 ? 100 * total[key] / type_total[k[1]] : 0
    printf("%d\t%.0f\t%7.2f%% %10s %9d %10s %10s %10s  %s\n", k[1], total[key], pct,
           dur(total[key]), calls[key], dur(calls[key] ? total[key] / calls[key] : 0),
           dur(lo[key]), dur(hi[key]), k[2]) | sorter
  }
  close(sorter)
}
AWK
  # The sorted rows carry "type<TAB>total<TAB>" in front: the first row of each type gets its label.
  awk -v job="$job" "$program" "$@" | awk -F '\t' 'NF < 3 { print; next } {
      label = ""
      if ($1 != last) label = ($1 == 1 ? "GPU activities:" : "API calls:")
      last = $1
      sub(/^[^\t]*\t[^\t]*\t/, "")
      printf("%16s %s\n", label, $0)
    }'
}
