#!/bin/bash
# Test worker for job-secret tests: marks that it started (restart count in the name), then
# waits until the test creates $MARK_DIR/go and exits 0; exits 4 after 40 s without it.
touch "$MARK_DIR/started.$GROUP_RANK.$LOCAL_RANK.$TORCHELASTIC_RESTART_COUNT"
for _ in $(seq 400); do
  [ -e "$MARK_DIR/go" ] && exit 0
  sleep 0.1  # the point: the job stays up while the test attacks it
done
exit 4
