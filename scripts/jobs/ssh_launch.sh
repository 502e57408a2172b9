#!/bin/bash
# Multi-node training over ssh with ddprun, from any machine that can ssh to the nodes
# without a password (keys; BatchMode=yes means ssh never prompts).
#
#   scripts/jobs/ssh_launch.sh scripts/jobs/hostfile.example train.py --epochs 10
#
# ddprun probes every host (ssh ... HOST true, in parallel), hosts the rendezvous itself and
# starts one agent per host with
#   ssh -o BatchMode=yes [-p PORT] [-i KEY] [-l USER] -- HOST \
#     "cd <this directory> && exec env NCCL_...=... <ddprun> <agent options> train.py ..."
# where every word is shell-quoted (program arguments arrive byte for byte, nothing is
# shell-injected). Output lines read "[HOST] [default0]:...". Ctrl-C stops every node's agent
# and workers; a lost ssh session stops that node's. The exit code is the job's.
# The remote login shell must be POSIX (sh, bash, dash, zsh), and the working directory and
# ddprun must exist at the same paths on every host (a shared file system). A hostfile naming
# only this machine runs here without ssh.
set -euo pipefail

HOSTFILE=${1:?usage: ssh_launch.sh HOSTFILE TRAIN_SCRIPT [ARGS...]}
shift
DDPRUN=${DDPRUN:-ddprun}

# --forward-env: which of this shell's variables travel to the remote agents (NAME or
# PREFIX*). The default is NCCL_*,GLOO_*,TORCH_*,PYTHONPATH,OMP_NUM_THREADS,DDPRUN_PYTHON,
# DDPRUN_LOG_LEVEL; giving it replaces the list.
exec "$DDPRUN" \
  --hostfile "$HOSTFILE" \
  --ssh-command "${SSH_COMMAND:-ssh}" \
  ${SSH_PORT:+--ssh-port "$SSH_PORT"} \
  ${SSH_IDENTITY:+--ssh-identity "$SSH_IDENTITY"} \
  ${SSH_USER:+--ssh-user "$SSH_USER"} \
  --forward-env 'NCCL_*,GLOO_*,TORCH_*,PYTHONPATH,OMP_NUM_THREADS' \
  "$@"
