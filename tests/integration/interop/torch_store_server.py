"""PyTorch's own TCPStore server (the reference the interop tests are checked against).

Usage: PYTHON torch_store_server.py HOST
Binds port 0, prints "listening on HOST:PORT", serves until SIGTERM or SIGINT, exits 0. PyTorch
>= 2.2 serves with its own (non-libuv) loop: Debian builds it without libuv.
"""

import signal
import sys

import torch.distributed as dist


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_store_server.py HOST")
    host = sys.argv[1]
    # Block the stop signals before the server threads start so only sigwait sees them.
    stop = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)
    try:
        store = dist.TCPStore(host, 0, is_master=True, wait_for_workers=False, use_libuv=False)
    except TypeError:  # PyTorch < 2.2: no use_libuv
        store = dist.TCPStore(host, 0, is_master=True, wait_for_workers=False)
    print(f"listening on {host}:{store.port}", flush=True)
    signal.sigwait(stop)
    del store


if __name__ == "__main__":
    main()
