#!/bin/bash
# Worker of test_static.py. Prints its environment; then does what MODE says:
#   ok          exit 0
#   fail_b      while TORCHELASTIC_RESTART_COUNT is 0: once all $ALL workers have started, the
#               worker with GROUP_RANK=1, LOCAL_RANK=0 exits 3 (writing the time to
#               $MARK_DIR/failed); every other worker waits for SIGTERM (writing the time to
#               $MARK_DIR/stopped.<group>.<local>). Later attempts exit 0.
#   wait_term   wait for SIGTERM (as above)
#   wait_file   exit 0 once $MARK_DIR/release exists (exit 4 after 20 s)
echo "ENV RANK=$RANK LOCAL_RANK=$LOCAL_RANK GROUP_RANK=$GROUP_RANK WORLD_SIZE=$WORLD_SIZE" \
     "GROUP_WORLD_SIZE=$GROUP_WORLD_SIZE MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT" \
     "RC=$TORCHELASTIC_RESTART_COUNT LWS=$LOCAL_WORLD_SIZE ROLE_RANK=$ROLE_RANK" \
     "ROLE_WORLD_SIZE=$ROLE_WORLD_SIZE USE_AGENT_STORE=$TORCHELASTIC_USE_AGENT_STORE" \
     "RUN_ID=$TORCHELASTIC_RUN_ID"
# wait_term: the handler is in place before the started mark, so a test that signals the job as
# soon as every worker has started always finds the stopped marks.
if [ "$MODE" = wait_term ]; then
  trap 'date +%s.%N > "$MARK_DIR/stopped.$GROUP_RANK.$LOCAL_RANK"; exit 143' TERM
fi
touch "$MARK_DIR/started.$GROUP_RANK.$LOCAL_RANK.$TORCHELASTIC_RESTART_COUNT"
wait_term() {
  trap 'date +%s.%N > "$MARK_DIR/stopped.$GROUP_RANK.$LOCAL_RANK"; exit 143' TERM
  sleep 60 &
  wait
}
case "$MODE" in
  ok) exit 0 ;;
  wait_term) wait_term ;;
  wait_file)
    for _ in $(seq 1000); do
      if [ -e "$MARK_DIR/release" ]; then exit 0; fi
      sleep 0.02  # polling period of the condition, not a wait for an event
    done
    exit 4 ;;
  fail_b)
    if [ "$TORCHELASTIC_RESTART_COUNT" != 0 ]; then exit 0; fi
    if [ "$GROUP_RANK" = 1 ] && [ "$LOCAL_RANK" = 0 ]; then
      for _ in $(seq 1000); do
        n=$(ls "$MARK_DIR" | grep -c '^started\..*\.0$')
        if [ "$n" -ge "$ALL" ]; then break; fi
        sleep 0.02  # polling period of the condition, not a wait for an event
      done
      date +%s.%N > "$MARK_DIR/failed"
      exit 3
    fi
    wait_term ;;
esac
