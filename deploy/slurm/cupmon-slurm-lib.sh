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
