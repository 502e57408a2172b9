"""Paths the event log cannot write are refused before any worker starts, in one line naming
the path and the fix: a missing directory, a directory, a path under a file, an empty path,
and (as a user other than root) a directory without write permission.

usage: test_event_log_refused.py DDPRUN [TestClass]
"""
import os
import sys

import event_log_case
from event_log_case import SingleNodeBase


class EventLogRefusedTest(SingleNodeBase):
    def test_missing_directory(self):
        missing = os.path.join(self.tmp.name, "no", "such")
        self.check_refused(os.path.join(missing, "events.jsonl"), "No such file or directory",
                           "create the directory " + missing)

    def test_a_directory(self):
        self.check_refused(self.tmp.name, "Is a directory", "name a file in that directory")

    def test_under_a_file(self):
        plain = os.path.join(self.tmp.name, "plain")
        with open(plain, "w") as f:
            f.write("x")
        self.check_refused(os.path.join(plain, "events.jsonl"), "Not a directory")

    def test_empty(self):
        r = self.run_ddprun(1, "ok", extra=["--event-log", ""])
        self.assertEqual(r.returncode, 2, r.stderr.decode())
        self.assertIn("--event-log is empty", r.stderr.decode())


# Its own class: where it cannot run (as root) CTest shows it Skipped without hiding the rest.
class EventLogPermissionTest(SingleNodeBase):
    def test_permission_denied(self):
        if os.geteuid() == 0:
            self.skipTest("root may write any file: nothing to refuse")
        locked = os.path.join(self.tmp.name, "locked")
        os.mkdir(locked, 0o500)
        try:
            self.check_refused(os.path.join(locked, "events.jsonl"), "Permission denied")
        finally:
            os.chmod(locked, 0o700)


if __name__ == "__main__":
    event_log_case.DDPRUN = os.path.abspath(sys.argv.pop(1))
    import testmain  # noqa: E402
    testmain.main(sys.argv)
