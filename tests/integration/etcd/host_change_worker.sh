#!/bin/bash
# Worker of the host-change tests. Prints its environment (as multinode/worker.sh) and touches
# started.<GROUP_RANK>.<LOCAL_RANK>.<restart>. Local rank 0 of the agent started with
# FAIL_HERE=1 exits 3 once $MARK_DIR/trigger.<restart count> exists. Every other worker waits
# for SIGTERM.
echo "ENV RANK=$RANK LOCAL_RANK=$LOCAL_RANK GROUP_RANK=$GROUP_RANK WORLD_SIZE=$WORLD_SIZE" \
     "GROUP_WORLD_SIZE=$GROUP_WORLD_SIZE MASTER=$MASTER_ADDR:$MASTER_PORT" \
     "RC=$TORCHELASTIC_RESTART_COUNT"
touch "$MARK_DIR/started.$GROUP_RANK.$LOCAL_RANK.$TORCHELASTIC_RESTART_COUNT"
if [ "$FAIL_HERE" = 1 ] && [ "$LOCAL_RANK" = 0 ]; then
  for _ in $(seq 6000); do
    [ -e "$MARK_DIR/trigger.$TORCHELASTIC_RESTART_COUNT" ] && exit 3
    sleep 0.01  # polling period of the trigger file, not a wait for an event
  done
  exit 4
fi
trap 'exit 143' TERM
sleep 90 &
wait
