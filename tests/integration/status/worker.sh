#!/bin/bash
# Worker of the status tests. Prints its environment, marks its start, then waits until the
# test creates $MARK_DIR/release.<restart count>; then, in attempt 0, the worker with
# GROUP_RANK=1 and LOCAL_RANK=0 exits 3 and the others wait for SIGTERM; in later attempts
# every worker exits 0.
echo "ENV RANK=$RANK LOCAL_RANK=$LOCAL_RANK GROUP_RANK=$GROUP_RANK WORLD_SIZE=$WORLD_SIZE" \
     "RC=$TORCHELASTIC_RESTART_COUNT"
rc=$TORCHELASTIC_RESTART_COUNT
touch "$MARK_DIR/started.$GROUP_RANK.$LOCAL_RANK.$rc"
for _ in $(seq 3000); do
  [ -e "$MARK_DIR/release.$rc" ] && break
  sleep 0.02  # polling period of the test's release file, not a wait for an event
done
if [ "$rc" = 0 ]; then
  if [ "$GROUP_RANK" = 1 ] && [ "$LOCAL_RANK" = 0 ]; then exit 3; fi
  trap 'exit 143' TERM
  sleep 60 &
  wait
fi
exit 0
