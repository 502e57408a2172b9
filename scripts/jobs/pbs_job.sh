#!/bin/bash
# PBS job script for ddprun: one ddprun agent per node, every node's GPUs used.
#
#   qsub -v TRAIN_SCRIPT=$PWD/train.py scripts/jobs/pbs_job.sh
#   qsub -v TRAIN_SCRIPT=$PWD/train.py,DDPRUN=/opt/ddprun/bin/ddprun scripts/jobs/pbs_job.sh
#
# With select=1 ddprun runs on this node. With select=2 it starts one agent per node through
# pbsdsh and exits with the training's exit code.
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
# `--launcher pbs` runs ddprun once here: it hosts the rendezvous on this node and starts one
# agent per unique host of PBS_NODEFILE through pbsdsh (`pbsdsh -u -- ...` on Torque, one
# `pbsdsh -n I -- ...` per host on PBS Pro, which has no -u), in this directory; output lines
# read "[HOST] [default0]:...". The job exits with the training's exit code, which ddprun's
# rendezvous recorded (pbsdsh itself returns 0 when tasks fail).
# If ddprun cannot tell Torque from PBS Pro, set DDPRUN_PBS_FLAVOR=torque or pbspro.
exec "$DDPRUN" --launcher pbs --nproc-per-node gpu "$TRAIN_SCRIPT" "$@"

# By hand on Torque, the same thing: every agent reads PBS_NODEFILE itself. pbsdsh tasks
# start in $HOME with the job's environment, hence the cd:
#   pbsdsh -u -- /bin/bash -c "cd '$PBS_O_WORKDIR' && exec '$DDPRUN' --nproc-per-node gpu '$TRAIN_SCRIPT'"
