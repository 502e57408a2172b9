"""Runs PyTorch 2.x's own store tests (test/distributed/test_store.py and the elastic c10d/static
rendezvous tests, from Debian's source package) inside the PyTorch 2.x root, every TCPStore
server they would start being a fresh ddp-rendezvous instead. Started by
run_torch_store_suite.py (host side), which starts those daemons on request.

Usage (under scripts/torch2-python): torch_suite_inside.py SUITE_DIR CONTROL_SOCKET MODULE...

How the tests are redirected: before a test module is imported, TCPStore.__init__ is wrapped
so that an is_master=True construction asks the host side (one line over
the Unix socket CONTROL_SOCKET) for a fresh ddp-rendezvous on the same port (0: a free
one), listening on every address as the in-process server does, and becomes a client of it (what the test's later clients reach); every client is built with
use_libuv=False (Debian 13's torch has no libuv; a client's flag changes nothing on the wire).
A test that never made a server did not touch ddp-rendezvous: it is counted apart ("no
server"). NOT_APPLICABLE names the cases that test the in-process server itself, with why;
they are run by no one here and counted, never silently dropped.
Prints one line per test and "counts: passed N failed N not-applicable N no-server N
skipped N"; exits 1 on any failure or error.
"""
import os
import socket
import sys
import unittest

import torch
import torch.distributed as dist

SUITE_DIR, CONTROL, MODULES = sys.argv[1], sys.argv[2], sys.argv[3:]

# Cases about the server process itself, which a client of ddp-rendezvous cannot exercise.
_TCP_SERVER_CASES = {
    "test_address_already_in_use": "the in-process server binding a port already in use",
    "test_multitenancy": "two in-process multi_tenant servers sharing one port",
    "test_repr": "repr() of a store that owns an in-process TCPServer",
    "test_init_pg_and_rpc_with_same_socket": "an in-process server handing its listen socket "
                                            "to RPC (master_listen_fd)",
    "test_take_over_listen_socket": "an in-process server adopting a listen fd (master_listen_fd)",
}
NOT_APPLICABLE = {}
for cls in ("TCPStoreTest", "LibUvTCPStoreTest"):
    for name, why in _TCP_SERVER_CASES.items():
        NOT_APPLICABLE["test_store.%s.%s" % (cls, name)] = why
for cls in ("TCPStoreTest", "LibUvTCPStoreTest"):
    NOT_APPLICABLE["test_store.%s.test_store_timeout_on_missing_clients" % cls] = (
        "the in-process server waiting for world_size clients (a client does not wait)")
# LibUvTCPStoreTest's cases that assert the server runs the libuv backend (this torch has no
# libuv: they fail against its own server too); its other cases run.
for name in ("test_append", "test_multi_get", "test_multi_set",
             "test_multi_worker_with_fixed_world_size",
             "test_multi_worker_with_nonfixed_world_size"):
    NOT_APPLICABLE["test_store.LibUvTCPStoreTest.%s" % name] = (
        "asserts the in-process server's libuv backend (libuvBackend), which this build lacks")
NOT_APPLICABLE.update({
    "test_store.RendezvousTCPTest.test_tcp_store_url_with_libuv":
        "whether the in-process server of a tcp:// URL uses libuv (libuv_backend)",
    "test_store.TestMultiThreadedWait.test_wait_tcp_store_uv":
        "an in-process libuv server (this torch is built without libuv)",
})

_Original = dist.TCPStore
_servers_made = [0]  # servers redirected during the current test


def _new_daemon_port(host, port):
    """A fresh ddp-rendezvous bound to host:port (0: a free port); its port. When another
    process took port between the test's find_free_port() and this bind (tests run in parallel
    here), one on a free port instead: a test whose only client is this store then runs, and one
    whose other clients know only the first port fails as with PyTorch's own server.
    RuntimeError (as the in-process server's bind failure) when it cannot start."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(CONTROL)
        s.sendall(b"new %s %d\n" % (host.encode(), port))
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = s.recv(64)
            if not chunk:
                raise RuntimeError("the suite driver closed the control socket")
            reply += chunk
    if reply.startswith(b"error "):
        raise RuntimeError("ddp-rendezvous on %s:%d: %s" % (host, port, reply[6:].decode()))
    if reply == b"taken\n":
        return _new_daemon_port(host, 0)
    return int(reply)


_original_init = _Original.__init__


def _redirected_init(self, host_name, port, world_size=None, is_master=False, *args, **kwargs):
    """TCPStore.__init__ whose server is a fresh ddp-rendezvous (see the module comment). Like
    the in-process server, the daemon listens on every address (host_name is only the
    clients'); the store object stays a plain TCPStore (isinstance, repr of the client)."""
    names = ("timeout", "wait_for_workers", "multi_tenant", "master_listen_fd", "use_libuv")
    kwargs.update(zip(names, args))
    kwargs["use_libuv"] = False
    if is_master:
        _servers_made[0] += 1
        port = _new_daemon_port("0.0.0.0", port)
        kwargs.pop("multi_tenant", None)
        kwargs.pop("master_listen_fd", None)
    _original_init(self, host_name, port, world_size, False, **kwargs)


def redirect_tcpstore():
    """TCPStore(...) anywhere (Python callers: tests, c10d's rendezvous, elastic) redirects."""
    _Original.__init__ = _redirected_init


class CountingResult(unittest.TextTestResult):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.passed, self.no_server, self.not_applicable = [], [], []

    def startTest(self, test):
        _servers_made[0] = 0
        super().startTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        (self.passed if _servers_made[0] else self.no_server).append(test.id())


def main():
    sys.path.insert(0, SUITE_DIR)
    sys.path.insert(0, os.path.join(SUITE_DIR, "elastic", "rendezvous"))
    import torch.distributed.elastic.rendezvous.c10d_rendezvous_backend  # noqa: F401
    import torch.distributed.elastic.rendezvous.static_tcp_rendezvous  # noqa: F401
    import torch.testing._internal.common_utils as common_utils
    # Its load_tests insists the tests come from the script being run; here that is this one.
    common_utils.check_test_defined_in_running_script = lambda test: None
    redirect_tcpstore()
    loader = unittest.TestLoader()
    suite = unittest.TestSuite()
    na = []
    for name in MODULES:
        for test in _flatten(loader.loadTestsFromName(name)):
            if test.id() in NOT_APPLICABLE:
                na.append(test.id())
            else:
                suite.addTest(test)
    print("torch %s, modules %s" % (torch.__version__, " ".join(MODULES)), flush=True)
    runner = unittest.TextTestRunner(verbosity=2, resultclass=CountingResult, stream=sys.stdout)
    result = runner.run(suite)
    for t in na:
        print("NOT APPLICABLE %s: %s" % (t, NOT_APPLICABLE[t]))
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    print("counts: passed %d failed %d not-applicable %d no-server %d skipped %d"
          % (len(result.passed), failed, len(na), len(result.no_server), len(result.skipped)),
          flush=True)
    # os._exit: test_store's class-level stores and threads must not hang interpreter exit.
    os._exit(1 if failed else 0)


def _flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _flatten(t)
        else:
            yield t


if __name__ == "__main__":
    main()
