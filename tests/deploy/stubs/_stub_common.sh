# TEST STUB helpers (sourced by the stub commands in this directory). Not Slurm, not cupmon.
# Each stub appends one line to $STUB_LOG: its name, then each argument, separated by tabs.
# shellcheck shell=bash
stub_log() {
  local IFS=$'\t'
  printf '%s\n' "$*" >>"${STUB_LOG:?STUB_LOG must be set by the test}"
}
# STUB_JOBS="ID:STATE:NODES ..." is the stub cluster's job table.
stub_job_field() {  # stub_job_field ID FIELD(2=state,3=nodes) -> value, or return 1
  local entry
  for entry in ${STUB_JOBS:-}; do
    IFS=: read -r id state nodes <<<"$entry"
    if [[ $id == "$1" ]]; then
      if [[ $2 == 2 ]]; then echo "$state"; else echo "$nodes"; fi
      return 0
    fi
  done
  return 1
}
