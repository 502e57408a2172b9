#!/bin/bash
# Worker of the allocation tests. Prints one ENV line; then, as MODE says:
#   ok      exit 0
#   fail_b  the worker with GROUP_RANK=1, LOCAL_RANK=0 exits 3 once all 4 workers have
#           started (marks in MARK_DIR); every other worker waits for SIGTERM and records when
#           it came in MARK_DIR/stopped.<GROUP_RANK>.<LOCAL_RANK>
echo "ENV RANK=$RANK LOCAL_RANK=$LOCAL_RANK GROUP_RANK=$GROUP_RANK WORLD_SIZE=$WORLD_SIZE" \
     "GROUP_WORLD_SIZE=$GROUP_WORLD_SIZE LWS=$LOCAL_WORLD_SIZE" \
     "MASTER=$MASTER_ADDR:$MASTER_PORT RUN_ID=$TORCHELASTIC_RUN_ID" \
     "CUDA=${CUDA_VISIBLE_DEVICES-unset}"
touch "$MARK_DIR/started.$GROUP_RANK.$LOCAL_RANK"
case "$MODE" in
  ok) exit 0 ;;
  fail_b)
    if [ "$GROUP_RANK" = 1 ] && [ "$LOCAL_RANK" = 0 ]; then
      for _ in $(seq 1000); do
        [ "$(ls "$MARK_DIR" | grep -c '^started\.')" -ge 4 ] && break
        sleep 0.02  # polling period of the condition, not a wait for an event
      done
      date +%s.%N > "$MARK_DIR/failed"
      exit 3
    fi
    trap 'date +%s.%N > "$MARK_DIR/stopped.$GROUP_RANK.$LOCAL_RANK"; exit 143' TERM
    sleep 60 &
    wait
    exit 0 ;;
esac
exit 5
