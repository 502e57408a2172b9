#!/bin/bash
# PBS job script for ddprun: one ddprun agent per node, every node's GPUs used.
#
#   qsub -v TRAIN_SCRIPT=$PWD/train.py scripts/jobs/pbs_job.sh
#   qsub -v TRAIN_SCRIPT=$PWD/train.py,DDPRUN=/opt/ddprun/bin/ddprun scripts/jobs/pbs_job.sh
#
# STATUS: with select=1 this runs today (ddprun reads PBS_NODEFILE, finds one node, runs there
# with the job id as run id). With select=2 ddprun stops with "multi-node launch is not
# available yet" (exit 2) until multi-node rendezvous lands; the lines below are the intended
# use and need no change then.
#
# Resources (PBS Pro / OpenPBS syntax): 2 chunks, each with 4 GPUs, 32 cores and one MPI
# "process" (mpiprocs=1), so PBS_NODEFILE lists each node once. Torque spells this
# `#PBS -l nodes=2:ppn=32:gpus=4` instead.
#PBS -N ddprun-train
#PBS -l select=2:ngpus=4:ncpus=32:mpiprocs=1
#PBS -l place=scatter
#PBS -l walltime=02:00:00
#PBS -j oe

set -euo pipefail

# qsub starts the script in $HOME; run where the job was submitted from.
cd "${PBS_O_WORKDIR:-$PWD}"

DDPRUN=${DDPRUN:-ddprun}
TRAIN_SCRIPT=${TRAIN_SCRIPT:?set TRAIN_SCRIPT with qsub -v TRAIN_SCRIPT=/path/to/train.py}

# PBS Pro and OpenPBS hide the unallocated GPUs through their cgroup hook and set
# CUDA_VISIBLE_DEVICES; `--nproc-per-node gpu` starts one worker per GPU this node sees.
#
# `--launcher pbs` runs ddprun once here and starts one agent per unique host of
# PBS_NODEFILE through pbsdsh: `pbsdsh -u -- ddprun ...` on Torque, one `pbsdsh -n I -- ...`
# per host on PBS Pro (which has no -u). Each agent derives its node rank from its position
# in PBS_NODEFILE; the first host is the rendezvous endpoint; PBS_JOBID is the run id. The job
# exits with the training's exit code (pbsdsh itself returns 0 when tasks fail).
# If ddprun cannot tell Torque from PBS Pro, set DDPRUN_PBS_FLAVOR=torque or pbspro.
exec "$DDPRUN" --launcher pbs --nproc-per-node gpu "$TRAIN_SCRIPT" "$@"

# By hand on Torque, the same thing: every agent reads PBS_NODEFILE itself. pbsdsh tasks
# start in $HOME with the job's environment, hence the cd:
#   pbsdsh -u -- /bin/bash -c "cd '$PBS_O_WORKDIR' && exec '$DDPRUN' --nproc-per-node gpu '$TRAIN_SCRIPT'"
