"""How the etcd backend notices a lost node (docs/etcd.md, "Liveness: the lease"): a SIGKILLed
agent's death watch revokes its lease, so the others re-form long before that lease could
expire; a frozen agent (SIGSTOP: nothing dies, nothing revokes) is left to its lease. And a
spare (docs/spares.md) taking a lost node's place, the host's too (EtcdSpareTest). Real etcd
and real ddprun agents on loopback addresses; skipped (exit 77) where etcd is not installed.
Usage:
    test_etcd_loss.py DDPRUN [TestClass]
"""
import base64
import json
import os
import signal
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "testlib"))
import etcd  # noqa: E402
import etcd_case  # noqa: E402
from procs import close_unanswered, wait_for  # noqa: E402


class EtcdLossTest(etcd_case.ElasticPairCase):
    # A lease far longer than the recovery asserted: only a revoke can be this fast.
    LONG = "last_call_timeout=30,join_timeout=20,lease_ttl=10"
    SHORT = "last_call_timeout=30,join_timeout=20,lease_ttl=2"

    def test_a_sigkilled_agent_is_revoked_by_its_death_watch(self):
        self.CONF = self.LONG
        for victim in ("b", "a"):  # b: a plain node; a: the host (it started first)
            with self.subTest(victim=victim):
                survivor, took = self.kill_one_of_a_pair(victim, "loss-" + victim)
                print("lease_ttl=10, SIGKILL of %s -> survivor's workers running again: %.2f s"
                      % (victim, took), file=sys.stderr)
                self.assertLess(took, 2.0)  # the lease would take 6.7-10.5 s
                job = "/ddprun/loss-%s/" % victim
                state = json.loads(self.etcd.history(job + "state")[-1][1])
                self.assertEqual((state["departures"], state["restart_count"]), (1, 0))
                if victim == "a":  # b was elected and hosts the job now
                    self.assertIn("hosting the rendezvous", survivor.stderr())
                self.agents.clear()

    def test_a_frozen_agent_is_left_to_its_lease(self):
        self.CONF = self.SHORT
        a, b = self.start_pair()
        start = time.time()
        b.proc.send_signal(signal.SIGSTOP)  # alive, silent: nothing revokes its lease
        try:
            wait_for(lambda: "round 2:" in a.stderr(), 10, "a re-formed without b")
        finally:
            b.proc.send_signal(signal.SIGKILL)
        b.wait()
        self.check_survivor(a)
        took = self.restarted_after(start)
        print("lease_ttl=2, SIGSTOP of b -> a's workers running again: %.2f s" % took,
              file=sys.stderr)
        # Only the lease's expiry: at least 2/3 of its TTL after the last keep-alive, and
        # within the TTL + 1 s (etcd checks expiry every 500 ms).
        self.assertGreater(took, 2 * 2 / 3 - 0.1)
        self.assertLess(took, 2 + 1.5)  # + the workers' start

    def test_a_dead_hosts_daemon_closing_a_join_is_waited_out(self):
        # A host killed a moment ago still holds P/host (its lease is not revoked yet) while
        # its daemon's sockets close: a JOIN sent there ends unanswered. That means "wait for
        # P/host to change", not "lost" (etcd_it_EtcdSpareTest failed so once in CI).
        listener = socket.socket()
        listener.bind(("127.0.0.9", 0))
        listener.listen()
        url = "http://%s:%d/v3/" % (self.etcd.reach, self.etcd.client_ports[0])
        lease = etcd._post(url + "lease/grant", {"TTL": 60})["ID"]
        etcd._post(url + "kv/put", {
            "key": base64.b64encode(b"/ddprun/dead-host/host").decode(),
            "value": base64.b64encode(b"127.0.0.9:%d" % listener.getsockname()[1]).decode(),
            "lease": lease})
        b = self.start("b", self.B, 1, "ok", nnodes="1", run_id="dead-host")
        close_unanswered(listener)
        self.assertIsNone(b.proc.poll(), b.stderr())
        etcd._post(url + "lease/revoke", {"ID": lease})  # what the host's death watch does
        self.assertEqual(b.wait(), 0, b.stderr())
        self.assertIn("hosting the rendezvous", b.stderr())


class EtcdSpareTest(etcd_case.EtcdCase):
    D = "127.0.0.5"
    NNODES = "3"

    def job(self, name, addr):
        return self.start(name, addr, 2, "until_second", nnodes=self.NNODES,
                          conf="join_timeout=20,lease_ttl=10")

    def three_and_a_spare(self):
        a = self.job("a", self.A)
        wait_for(lambda: "hosting the rendezvous" in a.stderr(), 10, "a hosting")
        agents = {"a": a, "b": self.job("b", self.B), "c": self.job("c", self.C)}
        wait_for(lambda: len(self.started()) == 6, 30, "6 workers of round 1")
        d = self.job("d", self.D)
        wait_for(lambda: "(waiting" in d.stderr(), 20, "d to join as a spare")
        self.assertEqual(self.env_lines(d.stdout()), [], "a spare runs no workers")
        first = {name: self.env_lines(agent.stdout()) for name, agent in agents.items()}
        return agents, d, first

    @staticmethod
    def ranks(rows):
        return sorted((r["GROUP_RANK"], int(r["RANK"]), r["LOCAL_RANK"]) for r in rows)

    def lose(self, agents, name):
        open(os.path.join(self.marks, "second"), "w").close()
        agents[name].proc.send_signal(signal.SIGKILL)
        agents[name].wait()
        return {n: agent for n, agent in agents.items() if n != name}

    def check_kept(self, survivors, spares, first):
        """Every agent ended 0, and each survivor's workers of the second round have the ranks
        its first round's had."""
        for agent in list(survivors.values()) + spares:
            self.assertEqual(agent.wait(), 0, agent.stderr())
        for name, agent in survivors.items():
            second = self.env_lines(agent.stdout())[len(first[name]):]
            self.assertEqual(self.ranks(second), self.ranks(first[name]), name + " kept its ranks")

    def test_the_spare_takes_a_lost_nodes_ranks_on_the_hosts_daemon(self):
        agents, d, first = self.three_and_a_spare()
        lost = next(n for n, rows in first.items() if rows[0]["GROUP_RANK"] == "1")
        survivors = self.lose(agents, lost)
        self.check_kept(survivors, [d], first)
        self.assertEqual(self.ranks(self.env_lines(d.stdout())), self.ranks(first[lost]))

    def test_the_hosts_loss_is_survived_with_the_spare(self):
        # The new host's daemon resumes from P/state, which names the last round's nodes by
        # group rank: the survivors keep their ranks and the spare takes the lost host's.
        agents, d, first = self.three_and_a_spare()
        self.assertEqual(first["a"][0]["GROUP_RANK"], "0")  # a hosts: it joined first
        survivors = self.lose(agents, "a")
        self.check_kept(survivors, [d], first)
        spare = self.env_lines(d.stdout())
        self.assertEqual(self.ranks(spare), self.ranks(first["a"]))
        self.assertEqual({r["RC"] for r in spare}, {"0"})
        self.assertIn("hosting the rendezvous", "".join(x.stderr() for x in survivors.values())
                      + d.stderr())

    def test_an_elastic_jobs_new_host_waits_for_the_spare(self):
        # --nnodes 2:3: the two survivors alone could form the new host's first round, and the
        # one with group rank 2 would move down to 0. The spare's key under P/spares/ (while
        # it waits) makes that round wait for it too.
        self.NNODES = "2:3"
        agents, d, first = self.three_and_a_spare()
        spares = "/ddprun/job-%s/spares/" % self.id().split(".")[-1]
        wait_for(lambda: len(self.etcd.keys(spares)) == 1, 10, "the spare's key")
        survivors = self.lose(agents, "a")
        self.check_kept(survivors, [d], first)
        self.assertEqual(self.ranks(self.env_lines(d.stdout())), self.ranks(first["a"]))

    def test_with_two_spares_the_new_host_waits_for_the_survivors(self):
        # Four agents come back for three places: the new host's first round waits for the
        # survivors by key (P/state), so neither spare takes a survivor's place.
        agents, d, first = self.three_and_a_spare()
        e = self.job("e", "127.0.0.6")
        wait_for(lambda: "(waiting" in e.stderr(), 20, "e to join as a spare")
        survivors = self.lose(agents, "a")
        self.check_kept(survivors, [d, e], first)
        spares = self.env_lines(d.stdout()) + self.env_lines(e.stdout())
        self.assertEqual(self.ranks(spares), self.ranks(first["a"]))


if __name__ == "__main__":
    etcd_case.DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
