#!/bin/bash
# Keeps N cores busy (a busy loop per core, at normal priority) to run the test suite under
# load: see docs/chaos.md ("The suite under load"). Pure bash, no packages.
#
#   scripts/cpu_hog.sh [-n N]            until SIGTERM/SIGINT (N defaults to every core)
#   scripts/cpu_hog.sh [-n N] -- CMD...  runs CMD under the load, then stops the load;
#                                        exits with CMD's status
set -u

n=$(nproc)
if [ "${1:-}" = "-n" ]; then
  n=${2:?"-n needs a number of cores"}
  shift 2
fi
if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
  echo "cpu_hog.sh: -n wants a positive number of cores, not '$n'" >&2
  exit 2
fi

loops=()
stop() {
  kill "${loops[@]}" 2>/dev/null
  wait "${loops[@]}" 2>/dev/null
}
trap 'stop; exit 143' TERM
trap 'stop; exit 130' INT

for _ in $(seq "$n"); do
  # A subshell spinning on builtins: one core's worth of work, no I/O. Stopped by this
  # script's signal handler; if this script is SIGKILLed, the loop sees its parent change
  # (field 4 of /proc/self/stat; $$ is this script's pid) and ends within a fraction of a
  # second.
  (
    trap - TERM INT
    while read -r _ _ _ parent _ <"/proc/$BASHPID/stat" && [ "$parent" = $$ ]; do
      for ((i = 0; i < 20000; i++)); do :; done
    done
  ) &
  loops+=($!)
done
echo "cpu_hog.sh: $n busy loop(s), pids ${loops[*]}" >&2

if [ "${1:-}" = "--" ]; then
  shift
  "$@"
  status=$?
  stop
  exit "$status"
fi
# Until killed: wait returns when a trapped signal arrives.
wait
stop
