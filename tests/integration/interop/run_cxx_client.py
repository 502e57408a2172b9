"""Start a store server, run the LibTorch c10d::TCPStore client program against it.

Usage: /usr/bin/python3 run_cxx_client.py --client PATH --server daemon --daemon PATH
Passes when the client exits 0 within the deadline and the server stops cleanly.
"""

import argparse
import subprocess
import sys

from store_server import StoreServer, add_server_args

DEADLINE_S = 60


def main():
    parser = argparse.ArgumentParser()
    add_server_args(parser)
    parser.add_argument("--client", required=True, help="interop_torch_store_client binary")
    args = parser.parse_args()
    with StoreServer(args.server, args.daemon) as server:
        try:
            done = subprocess.run([args.client, server.host, str(server.port)],
                                  stdin=subprocess.DEVNULL, timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            sys.exit(f"c10d client did not finish within {DEADLINE_S}s")
    if done.returncode != 0:
        sys.exit(f"c10d client exited {done.returncode}")
    print("c10d::TCPStore client interop: OK")


if __name__ == "__main__":
    main()
