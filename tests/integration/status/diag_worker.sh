#!/bin/bash
# Worker of the diagnosis tests (test_diagnosis.py). In attempt 0 the worker with
# FAIL_HERE=1 and LOCAL_RANK=1 prints 60 numbered lines and a last error line, then exits 7;
# the others wait for SIGTERM. In later attempts every worker waits for $MARK_DIR/release,
# then exits 0.
rc=$TORCHELASTIC_RESTART_COUNT
touch "$MARK_DIR/started.$GROUP_RANK.$LOCAL_RANK.$rc"
if [ "$rc" = 0 ] && [ "$FAIL_HERE" = 1 ] && [ "$LOCAL_RANK" = 1 ]; then
  for i in $(seq 60); do echo "diag line $i of rank $RANK"; done
  echo "ValueError: the last words of rank $RANK"
  exit 7
fi
if [ "$rc" = 0 ]; then
  trap 'exit 143' TERM
  sleep 60 &
  wait
  exit 0
fi
for _ in $(seq 3000); do
  [ -e "$MARK_DIR/release" ] && exit 0
  sleep 0.02  # polling period of the test's release file, not a wait for an event
done
exit 1
