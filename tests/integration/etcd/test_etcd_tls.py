"""The etcd backend over TLS: two agents through https with a client certificate; a wrong CA
or a missing file is a clear error. Real etcd (certificates made here with openssl) and real
ddprun agents on loopback addresses; skipped (exit 77) where etcd or openssl is missing. Usage:
    test_etcd_tls.py DDPRUN [TestClass]
"""
import shutil
import subprocess
import sys
import tempfile

import etcd_case
from etcd_case import FAST_CONF, EtcdCase
import etcd  # noqa: E402  (etcd_case put testlib on the path)


class EtcdTlsTest(EtcdCase):
    """Two agents through https with a client certificate; a wrong CA is a clear error."""

    def setUp(self):
        self.certs = tempfile.mkdtemp(dir="/dev/shm")
        try:
            etcd.make_certificates(self.certs)
        except (OSError, subprocess.CalledProcessError) as e:
            self.skipTest("openssl: %s" % e)
        super().setUp()

    def tearDown(self):
        super().tearDown()
        shutil.rmtree(self.certs, ignore_errors=True)

    def make_cluster(self):
        return etcd.Cluster(1, tls_dir=self.certs)

    def tls_conf(self, ca="ca.pem"):
        return (FAST_CONF + ",protocol=https,cacert=%s/%s,cert=%s/client.pem,key=%s/client.key"
                % (self.certs, ca, self.certs, self.certs))

    def test_two_nodes_over_tls(self):
        a = self.start("a", self.A, 1, "ok", conf=self.tls_conf())
        b = self.start("b", self.B, 1, "ok", conf=self.tls_conf())
        self.assertEqual(a.wait(), 0, a.stderr())
        self.assertEqual(b.wait(), 0, b.stderr())
        rows = self.env_lines(a.stdout()) + self.env_lines(b.stdout())
        self.assertEqual(sorted(int(r["RANK"]) for r in rows), [0, 1])

    def test_wrong_ca_is_named(self):
        a = self.start("a", self.A, 1, "ok", nnodes="1", conf=self.tls_conf("other.pem"))
        self.assertEqual(a.wait(), 1, a.stderr())
        self.assertIn("TLS handshake failed", a.stderr())
        self.assertEqual(self.started(), [])

    def test_missing_file_is_named(self):
        a = self.start("a", self.A, 1, "ok", nnodes="1", conf=self.tls_conf("missing.pem"))
        self.assertEqual(a.wait(), 1, a.stderr())
        self.assertIn("missing.pem", a.stderr())


if __name__ == "__main__":
    etcd_case.DDPRUN = sys.argv[1]
    import testmain  # noqa: E402
    testmain.main([sys.argv[0]] + sys.argv[2:])
