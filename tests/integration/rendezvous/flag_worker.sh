#!/bin/bash
# Test worker for LimitsTest: prints MASTER_ADDR:MASTER_PORT, marks that it started, then waits
# until the test creates $FLAG (exit 0) or 30 s pass (exit 4).
echo "MASTER=$MASTER_ADDR:$MASTER_PORT GROUP_RANK=$GROUP_RANK NOFILE=$(ulimit -Sn)"
touch "$MARK_DIR/started.$GROUP_RANK.$LOCAL_RANK"
for _ in $(seq 600); do
  if [ -e "$FLAG" ]; then exit 0; fi
  sleep 0.05  # polling period of the condition, not a wait for an event
done
exit 4
