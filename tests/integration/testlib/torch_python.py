"""Which Python the workers of a PyTorch integration test run under: CTest runs each such test
twice, once as it always has (PyTorch 1.13, Debian 12's /usr/bin/python3) and once with
DDP_TEST_TORCH=2.14 (PyTorch 2.14 in the Debian sid root of `scripts/debian_root.sh sid`, through
scripts/torch214-py); DDP_TEST_TORCH=2 picks PyTorch 2.6 (the Debian 13 root of
`scripts/debian_root.sh`, through scripts/torch2-python). Only workers and PyTorch clients
switch; the tests' own driver processes stay on the host's Python.

    import torch_python
    class MyTest(unittest.TestCase):
        def setUp(self):
            self.python = torch_python.worker_python(self)   # skipTest(reason) when it cannot

With DDP_TEST_TORCH=2 or 2.14, worker_python() calls skipTest with the exact reason when the root is
missing, this checkout is not bound inside it (workers run scripts and binaries at their host
paths), /tmp is not bound, or torch does not import there; testmain then exits 77 and CTest
shows Skipped, never Passed. That check runs once per process (about 2-4 s, one torch import).
"""
import os
import subprocess

HOST_PYTHON = "/usr/bin/python3"  # Debian 12's, with python3-torch 1.13
CHECKOUT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                         "..", "..", ".."))
TORCH2_PYTHON = os.path.join(CHECKOUT, "scripts", "torch2-python")
TORCH2_ROOT = os.environ.get("DDP_TORCH2_ROOT", "/var/lib/ddprun/trixie")
TORCH214_PYTHON = os.path.join(CHECKOUT, "scripts", "torch214-py")
TORCH214_ROOT = os.environ.get("DDP_TORCH214_ROOT", "/var/lib/ddprun/sid")
# version -> (interpreter, root, the release scripts/debian_root.sh takes)
ROOTS = {"2": (TORCH2_PYTHON, TORCH2_ROOT, "trixie"),
         "2.14": (TORCH214_PYTHON, TORCH214_ROOT, "sid")}
_why_not = {}  # version -> reason or None, once checked


def version():
    """The PyTorch version the workers are asked to run: "1" (1.13, default), "2" (2.6) or
    "2.14"."""
    v = os.environ.get("DDP_TEST_TORCH", "1")
    if v not in ("1", "2", "2.14"):
        raise ValueError("DDP_TEST_TORCH must be 1, 2 or 2.14, not %r" % v)
    return v


def torch2_missing(v="2"):
    """Why PyTorch `v` ("2" or "2.14") workers cannot run here, or None when they can (checked
    once per version)."""
    if v not in _why_not:
        _why_not[v] = _check_root(*ROOTS[v])
    return _why_not[v]


def _check_root(python, root, release):
    make = "scripts/debian_root.sh %s" % release
    if not os.access(os.path.join(root, "usr", "bin", "python3"), os.X_OK):
        return "no PyTorch root at %s (%s makes it)" % (root, make)
    if not _same(os.path.join(root, "tmp"), "/tmp"):
        return "/tmp is not bound inside %s (run %s)" % (root, make)
    inside = os.path.join(root, CHECKOUT.lstrip("/"))
    if not _same(inside, CHECKOUT):
        return ("this checkout (%s) is not bound inside %s (run its %s)" % (CHECKOUT, root, make))
    try:
        p = subprocess.run([python, "-c", "import torch"], cwd="/tmp",
                           capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "cannot run %s: %s" % (python, e)
    if p.returncode != 0:
        return "torch does not import in %s: %s" % (root, p.stderr.strip()[-300:])
    return None


def _same(a, b):
    """Whether a and b are one directory (a bind mount of b; ismount misses a bind mount of a
    directory on the same file system)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def python_for(case, v):
    """The worker interpreter for PyTorch version `v` ("1", "2" or "2.14"); for 2.x calls
    case.skipTest(reason) when those workers cannot run here."""
    if v == "1":
        return HOST_PYTHON
    why = torch2_missing(v)
    if why:
        case.skipTest(why)
    return ROOTS[v][0]


def worker_python(case):
    """The worker interpreter DDP_TEST_TORCH asks for (see python_for)."""
    return python_for(case, version())
