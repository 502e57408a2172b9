#!/bin/bash
# PBS job script that submits itself again after a failed training job, except when ddprun
# says the job makes no progress (docs/progress.md): then another run would only crash again.
#
#   qsub -v TRAIN_SCRIPT=$PWD/train.py scripts/jobs/pbs_requeue.sh
#
# The training resumes from its own checkpoint and beats its step number (docs/hangs.md,
# "Heartbeats"); ddprun restarts it up to --max-restarts times inside one allocation, and stops
# after --max-no-progress-restarts restarts in a row without a new step with exit code 93
# (--no-progress-exit-code). Exit codes of this script:
#   0   training finished
#   93  no progress: not submitted again (look at the root cause in the output)
#   *   any other failure: submitted again (qsub) up to MAX_REQUEUES times
#PBS -N ddprun-train
#PBS -l select=2:ngpus=4:ncpus=32:mpiprocs=1
#PBS -l place=scatter
#PBS -l walltime=02:00:00
#PBS -j oe

set -uo pipefail

cd "${PBS_O_WORKDIR:-$PWD}"

DDPRUN=${DDPRUN:-ddprun}
TRAIN_SCRIPT=${TRAIN_SCRIPT:?set TRAIN_SCRIPT with qsub -v TRAIN_SCRIPT=/path/to/train.py}
MAX_REQUEUES=${MAX_REQUEUES:-5}
REQUEUED=${REQUEUED:-0}
NO_PROGRESS_EXIT_CODE=93
# PBS runs a spooled copy of this script: name the original, relative to the submit directory.
JOB_SCRIPT=${JOB_SCRIPT:-scripts/jobs/pbs_requeue.sh}

# `--launcher pbs` exits with the training's exit code, the same on every node
# (scripts/jobs/pbs_job.sh).
"$DDPRUN" --launcher pbs --nproc-per-node gpu --max-restarts 3 --max-no-progress-restarts 2 \
  --no-progress-exit-code "$NO_PROGRESS_EXIT_CODE" "$TRAIN_SCRIPT" "$@"
rc=$?

if [ "$rc" -eq 0 ]; then
  exit 0
fi
if [ "$rc" -eq "$NO_PROGRESS_EXIT_CODE" ]; then
  echo "ddprun: no progress across restarts (exit $rc): not submitting again" >&2
  exit "$rc"
fi
if [ "$REQUEUED" -lt "$MAX_REQUEUES" ]; then
  echo "training failed (exit $rc): submitting again" >&2
  qsub -v "TRAIN_SCRIPT=$TRAIN_SCRIPT,DDPRUN=$DDPRUN,MAX_REQUEUES=$MAX_REQUEUES,REQUEUED=$((REQUEUED + 1))" \
    "$JOB_SCRIPT"
fi
exit "$rc"
