"""Starts ddp-rendezvous on a free port, runs a command with DDP_RDZV_PORT set, stops the
daemon (which must exit 0) and exits with the command's status.

usage: run_with_daemon.py DAEMON_BINARY COMMAND [ARGS...]
"""
import os
import subprocess
import sys

from daemon_util import Daemon


def main():
    daemon = Daemon(sys.argv[1])
    try:
        env = dict(os.environ, DDP_RDZV_PORT=str(daemon.port))
        result = subprocess.run(sys.argv[2:], env=env, timeout=120)
    finally:
        code = daemon.stop()
    if code != 0:
        print(f"daemon exited {code}: {daemon.stderr_text()[-2000:]}", file=sys.stderr)
        return 1
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
