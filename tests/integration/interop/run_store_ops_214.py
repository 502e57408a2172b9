"""PyTorch 2.14's TCPStore client (the sid root of `scripts/debian_root.sh sid`) running
store_ops_client.py against a server: ddp-rendezvous, or 2.14's own server in that root (the
reference). Skipped with the reason where the root is missing.

Usage: /usr/bin/python3 run_store_ops_214.py --server daemon --daemon PATH
       /usr/bin/python3 run_store_ops_214.py --server torch
"""
import argparse
import os
import subprocess
import sys

from store_server import StoreServer, add_server_args

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import torch_python  # noqa: E402

DEADLINE_S = 120
SKIP_RETURN_CODE = 77


def main():
    parser = argparse.ArgumentParser()
    add_server_args(parser)
    args = parser.parse_args()
    why = torch_python.torch2_missing("2.14")
    if why:
        print("SKIPPED:", why, file=sys.stderr)
        sys.exit(SKIP_RETURN_CODE)
    python = torch_python.TORCH214_PYTHON
    with StoreServer(args.server, args.daemon, python=python) as server:
        try:
            done = subprocess.run([python, os.path.join(HERE, "store_ops_client.py"),
                                   server.host, str(server.port)],
                                  stdin=subprocess.DEVNULL, timeout=DEADLINE_S, cwd=HERE)
        except subprocess.TimeoutExpired:
            sys.exit("the 2.14 client did not finish within %d s" % DEADLINE_S)
    if done.returncode != 0:
        sys.exit("the 2.14 client exited %d" % done.returncode)
    print("PyTorch 2.14 store operations against %s: OK" % args.server)


if __name__ == "__main__":
    main()
