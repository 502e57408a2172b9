#!/bin/bash
# Test worker. Prints its environment; then does what MODE says:
#   ok          exit 0
#   fail_b      the worker with GROUP_RANK=1, LOCAL_RANK=0 exits 3 after 0.3 s while
#               TORCHELASTIC_RESTART_COUNT is 0; every other worker waits for SIGTERM
#   wait_big    while WORLD_SIZE is above $SMALL: wait for SIGTERM; else exit 0
#   wait_small  while WORLD_SIZE is at most $SMALL: wait for SIGTERM; else exit 0
#   until_second wait for SIGTERM unless $MARK_DIR/second exists (the test makes it before a
#               change that re-forms the job); then exit 0
#   all_started wait until $ALL workers (of every job sharing MARK_DIR) have started, then
#               exit 0; exit 4 when that takes over 20 s
# MARK_TAG (optional) prefixes the GROUP_RANK in mark names, for jobs sharing MARK_DIR.
echo "ENV RANK=$RANK LOCAL_RANK=$LOCAL_RANK GROUP_RANK=$GROUP_RANK WORLD_SIZE=$WORLD_SIZE" \
     "GROUP_WORLD_SIZE=$GROUP_WORLD_SIZE MASTER=$MASTER_ADDR:$MASTER_PORT" \
     "RC=$TORCHELASTIC_RESTART_COUNT LWS=$LOCAL_WORLD_SIZE ROLE_RANK=$ROLE_RANK" \
     "ROLE_WORLD_SIZE=$ROLE_WORLD_SIZE RUN_ID=$TORCHELASTIC_RUN_ID"
touch "$MARK_DIR/started.$MARK_TAG$GROUP_RANK.$LOCAL_RANK.$TORCHELASTIC_RESTART_COUNT"
wait_term() {
  trap 'date +%s.%N > "$MARK_DIR/stopped.$GROUP_RANK.$LOCAL_RANK"; exit 143' TERM
  sleep 60 &
  wait
}
case "$MODE" in
  ok) exit 0 ;;
  fail_b)
    if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
      if [ "$GROUP_RANK" = 1 ] && [ "$LOCAL_RANK" = 0 ]; then
        sleep 0.3  # the point: let every worker of both nodes start first
        date +%s.%N > "$MARK_DIR/failed"
        exit 3
      fi
      wait_term
    fi
    exit 0 ;;
  wait_big)
    if [ "$WORLD_SIZE" -gt "$SMALL" ]; then wait_term; fi
    exit 0 ;;
  wait_small)
    if [ "$WORLD_SIZE" -le "$SMALL" ]; then wait_term; fi
    exit 0 ;;
  until_second)
    if [ ! -e "$MARK_DIR/second" ]; then wait_term; fi
    exit 0 ;;
  all_started)
    for _ in $(seq 1000); do
      n=$(ls "$MARK_DIR" | grep -c '^started\.')
      if [ "$n" -ge "$ALL" ]; then exit 0; fi
      sleep 0.02  # polling period of the condition, not a wait for an event
    done
    exit 4 ;;
esac
