"""The launching ddprun's fan-out over ssh, for real: one command starts the agent of each of
two ssh hosts (ssh_hosts.py: network namespaces running Debian's sshd; root and netns needed,
skipped otherwise). A Gloo job, stopping (SIGINT, SIGKILL, a lost ssh session), the job secret,
program arguments, the exit code, a hostfile, one remote host, an etcd job, an unreachable
host.

usage: test_fanout_ssh.py DDPRUN [SshTest[.test]]
"""
import os
import re
import signal
import sys

import fanout_case
from fanout_case import all_cmdlines, marked_processes
from ssh_hosts import TORCH_WORKER, SshHostsCase
import etcd  # noqa: E402  (fanout_case put testlib on the path)


class SshTest(SshHostsCase):
    def test_gloo_allreduce_on_two_ssh_hosts(self):
        launcher = self.launch([], [TORCH_WORKER])
        code = launcher.wait(100)
        out, err = launcher.stdout(), launcher.stderr()
        self.assertEqual(code, 0, err + out)
        lines = re.findall(r"^\[(\S+)\] \[default(\d)\]:allreduce rank (\d) of 4 sum (\S+)$",
                           out, re.M)
        self.assertEqual(sorted(int(r) for _, _, r, _ in lines), [0, 1, 2, 3], out)
        self.assertEqual({s for _, _, _, s in lines}, {"6.0"})
        self.assertEqual({h for h, _, _, _ in lines}, set(self.addrs))
        self.assertIn("finished with exit code 0", err)
        self.assert_nothing_left()

    def test_sigint_on_the_launcher_leaves_nothing_on_either_host(self):
        launcher = self.start_waiting_job()
        # Each host runs its agent (and the agent's death watch, a fork of it).
        agents = {re.search(r"--local-addr=(\S+)", p[1]).group(1)
                  for p in marked_processes(self.mark)
                  if p[1].startswith(fanout_case.DDPRUN) and "--exit-on-stdin-eof" in p[1]}
        self.assertEqual(agents, set(self.addrs))
        launcher.proc.send_signal(signal.SIGINT)
        self.assertEqual(launcher.wait(60), 128 + signal.SIGINT, launcher.stderr())
        self.assert_nothing_left()
        for addr in self.addrs:  # each agent heard its stdin close and stopped its workers
            self.assertRegex(launcher.stderr(), r"\[%s\] .*EOF on stdin" % re.escape(addr))

    def test_a_lost_ssh_session_ends_that_hosts_agent_and_workers(self):
        launcher = self.start_waiting_job()
        victim = self.addrs[1]
        ssh = [p for p in marked_processes(self.mark)
               if p[1].startswith("ssh ") and (" " + victim + " ") in p[1]]
        self.assertEqual(len(ssh), 1, ssh)
        os.kill(ssh[0][0], signal.SIGKILL)

        def on_victim(p):  # the agent advertises the victim; its workers carry its agent id
            return ("--local-addr=" + victim) in p[1] or \
                ("DDPRUN_AGENT_ID=" + victim + ":").encode() in p[2]
        self.assert_nothing_left(30, where=on_victim)
        # Below --nnodes' minimum the job cannot go on: everything ends, with a failure.
        code = launcher.wait(60)
        self.assertNotEqual(code, 0, launcher.stderr())
        self.assert_nothing_left()

    def test_the_job_secret_reaches_the_agents_on_stdin_never_in_argv(self):
        # The job got this far, so both agents proved the launcher's fresh secret (its daemon
        # pins the job's key and refuses agents without it).
        launcher = self.start_waiting_job()
        agents = [p for p in marked_processes(self.mark)
                  if p[1].startswith(fanout_case.DDPRUN) and "--exit-on-stdin-eof" in p[1]]
        self.assertTrue(agents)
        for _, cmd, env in agents:
            self.assertIn("--secret-from-stdin", cmd)
        for pid, cmd in all_cmdlines():
            self.assertIsNone(re.search(r"\b[0-9a-f]{64}\b", cmd), "%d %s" % (pid, cmd))
        for _, _, env in marked_processes(self.mark):
            self.assertNotIn(b"DDPRUN_SECRET=", env)
        launcher.proc.send_signal(signal.SIGINT)
        self.assertEqual(launcher.wait(60), 128 + signal.SIGINT, launcher.stderr())
        self.assert_nothing_left()

    def test_a_sigkilled_launcher_leaves_nothing_on_either_host(self):
        # No handler runs: the kernel closes the ssh clients' stdin pipes, ssh sends EOF, and
        # every remote agent stops as if told to.
        launcher = self.start_waiting_job()
        launcher.proc.send_signal(signal.SIGKILL)
        launcher.wait(10)
        self.assert_nothing_left(40)

    def test_program_arguments_reach_the_workers_unchanged(self):
        pwned = os.path.join(self.tmp, "pwned")
        hostile = ["a b; touch %s" % pwned, "$(touch %s)" % pwned, "it's", "`touch %s`" % pwned,
                   "x\"y", "*"]
        launcher = self.launch(["--no-python"], ["/usr/bin/printf", "ARG<%s>\\n"] + hostile)
        code = launcher.wait(60)
        out = launcher.stdout()
        self.assertEqual(code, 0, launcher.stderr() + out)
        for addr in self.addrs:
            for local in ("0", "1"):
                got = re.findall(r"^\[%s\] \[default%s\]:ARG<(.*)>$" % (re.escape(addr), local),
                                 out, re.M)
                self.assertEqual(got, hostile, out)
        self.assertFalse(os.path.exists(pwned))

    def test_the_exit_code_is_the_jobs_root_cause(self):
        # Through a hostfile: slots 1 and 2 (not --nproc-per-node 2) make a world of 3. Rank 2
        # exits 7 once every rank printed (it polls their marks): the job's exit code is 7 on
        # every node and the launcher's.
        hostfile = os.path.join(self.tmp, "hosts")
        with open(hostfile, "w") as f:
            f.write("# two namespaces\n%s slots=1\n%s slots=2  # the second\n" %
                    tuple(self.addrs))
        args = self.ssh_args()
        args[0:2] = ["--hostfile", hostfile]
        script = ('echo "rank $RANK of $WORLD_SIZE"; touch "$MARK_DIR/printed.$RANK"; '
                  '[ "$RANK" = 2 ] || exit 0; '
                  'while [ "$(ls "$MARK_DIR" | grep -c "^printed")" -lt 3 ]; do sleep 0.05; done; '
                  'exit 7')
        launcher = self.start(args + ["--no-python", "/bin/sh", "-c", script],
                              GLOO_SOCKET_IFNAME="fan0")
        self.assertEqual(launcher.wait(60), 7, launcher.stderr())
        err = launcher.stderr()
        self.assertIn("finished with exit code 7", err)
        # The root-cause table once, from the launcher itself (not once per node, prefixed).
        self.assertEqual(err.count("Root Cause (first observed failure)"), 1, err)
        table = err[err.index("Root Cause (first observed failure)"):]
        self.assertRegex(table, r"rank\s+: 2 ")
        self.assertRegex(table, r"exitcode\s+: 7")
        self.assertNotRegex(err, r"\] Root Cause")
        ranks = re.findall(r"^\[(\S+)\] \[default\d\]:rank (\d) of 3$", launcher.stdout(), re.M)
        self.assertEqual(sorted(r for _, r in ranks), ["0", "1", "2"], launcher.stdout())
        self.assertEqual(sorted(h for h, _ in ranks).count(self.addrs[1]), 2, ranks)
        self.assert_nothing_left()

    def test_one_remote_host_joins_the_launchers_rendezvous(self):
        launcher = self.start(self.ssh_args(hosts=[self.addrs[1] + ":3"]) +
                              ["--no-python", "/bin/sh", "-c", 'echo "rank $RANK of $WORLD_SIZE"'],
                              GLOO_SOCKET_IFNAME="fan0")
        code = launcher.wait(60)
        self.assertEqual(code, 0, launcher.stderr())
        lines = re.findall(r"^\[%s\] \[default\d\]:rank (\d) of 3$" % re.escape(self.addrs[1]),
                           launcher.stdout(), re.M)
        self.assertEqual(sorted(lines), ["0", "1", "2"], launcher.stdout())
        self.assertIn("finished with exit code 0", launcher.stderr())

    def test_an_etcd_job_on_two_ssh_hosts(self):
        # etcd runs on the bridge (this namespace); the launching ddprun hosts nothing: the
        # agents get --rdzv-backend etcd and etcd's endpoint, and the job's exit code and root
        # cause come from etcd's record of its end.
        try:
            store = etcd.Cluster(1, host=self.prefix + "254")
        except etcd.Unavailable as e:
            self.skipTest(str(e))
        self.addCleanup(store.stop)
        args = self.ssh_args()
        args[args.index("--rdzv-conf") + 1] = "last_call_timeout=0.2,lease_ttl=2,join_timeout=60"
        script = ('echo "rank $RANK of $WORLD_SIZE"; touch "$MARK_DIR/printed.$RANK"; '
                  '[ "$RANK" = 3 ] || exit 0; '
                  'while [ "$(ls "$MARK_DIR" | grep -c "^printed")" -lt 4 ]; do sleep 0.05; done; '
                  'exit 6')
        launcher = self.start(args + ["--rdzv-backend", "etcd", "--rdzv-endpoint",
                                      store.endpoints(), "--rdzv-id", "ssh-etcd",
                                      "--no-python", "/bin/sh", "-c", script],
                              GLOO_SOCKET_IFNAME="fan0")
        self.assertEqual(launcher.wait(60), 6, launcher.stderr())
        err = launcher.stderr()
        self.assertIn("rendezvous through etcd %s" % store.endpoints(), err)
        self.assertNotIn("rendezvous on", err)
        for addr in self.addrs:
            self.assertRegex(err, r"\[%s\] .*joined job ssh-etcd for round" % re.escape(addr))
        self.assertEqual(len(re.findall(r"hosting the rendezvous .*elected through etcd", err)), 1, err)
        self.assertEqual(err.count("Root Cause (first observed failure)"), 1, err)
        self.assertRegex(err[err.index("Root Cause"):], r"exitcode\s+: 6")
        ranks = re.findall(r"^\[\S+\] \[default\d\]:rank (\d) of 4$", launcher.stdout(), re.M)
        self.assertEqual(sorted(ranks), ["0", "1", "2", "3"], launcher.stdout())
        self.assertIn("/ddprun/ssh-etcd/finished", store.keys("/ddprun/ssh-etcd/"))
        self.assert_nothing_left()

    def test_an_unreachable_host_is_refused_before_anything_starts(self):
        nowhere = self.prefix + "99"  # on the bridge's subnet, but no machine has it
        launcher = self.start(self.ssh_args(hosts=[self.addrs[0], nowhere]) +
                              ["--no-python", "/bin/sh", "-c", "touch $MARK_DIR/started.$RANK"],
                              GLOO_SOCKET_IFNAME="fan0")
        self.assertEqual(launcher.wait(60), 2, launcher.stderr())
        err = launcher.stderr().strip()
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("ddprun: error: cannot reach host " + nowhere), err)
        self.assertEqual(os.listdir(self.marks), [])
        self.assertEqual(launcher.stdout(), "")


if __name__ == "__main__":
    fanout_case.DDPRUN = os.path.abspath(sys.argv[1])
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
