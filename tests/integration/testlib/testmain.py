"""unittest.main() for the integration tests, telling CTest the truth about skips.

A test file's tests that cannot run here (no root for namespaces, no sshd, no GPU) call
skipTest(reason). unittest would still exit 0, and CTest would show the file as Passed. Here:
exit 1 when a test failed, else SKIP_RETURN_CODE (77, which every Python test's CTest entry
declares) when any test was skipped, else 0. The skip reasons are printed last.

    if __name__ == "__main__":
        sys.path.insert(0, TESTLIB); import testmain; testmain.main(argv)
"""
import sys
import unittest

SKIP_RETURN_CODE = 77


def ddprun_argv(argv):
    """`SCRIPT DDPRUN [--daemon=DDP_RENDEZVOUS] [unittest args]` split into (DDPRUN, the
    daemon's path or None, the argv for main())."""
    rest = argv[2:]
    daemon = rest.pop(0).split("=", 1)[1] if rest and rest[0].startswith("--daemon=") else None
    return argv[1], daemon, [argv[0]] + rest


def main(argv=None, verbosity=2):
    program = unittest.main(argv=argv, verbosity=verbosity, exit=False)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.skipped:
        for test, reason in result.skipped:
            print("SKIPPED %s: %s" % (test.id(), reason), file=sys.stderr)
        sys.exit(SKIP_RETURN_CODE)
    sys.exit(0)
