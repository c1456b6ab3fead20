"""tern-bulk on AF_PACKET sending to the Linux stack (kern-bulk --server
--once --verify pattern) over a veth wire (tools/netns.sh --wire), with the
driver's TCP segmentation offload (the kernel cuts tern's 64 KiB frames):

  - TSO on (the default): 64 MiB arrive, every byte checked, and the
    report's link.tso_frames is above 0 with no tso_drops;
  - --driver-opts tso=0: the same bytes verified, link.tso_frames is 0;
  - TSO on with 2% loss each way (tools/netns.sh loss 2): verified, TSO
    frames used, and tern resent data (the loss was seen).

Counts and completion only, never speed: each transfer has 120 s (it takes
about a second). Needs root (else exit 77 = ctest SKIP); hosts and
processes are removed on any exit."""
import os
import sys
import time
import unittest

import interop as it
from interop import log, prog

BYTES = 64 << 20
BOUND_S = 120
CPUS = os.cpu_count() or 1
TERN_CPU = CPUS - 1


class AfpacketTso(unittest.TestCase):
    hosts = None
    port = 5300

    @classmethod
    def setUpClass(cls):
        it.need_tools("nft")
        cls.hosts = it.Hosts("tso", wire=True)

    @classmethod
    def tearDownClass(cls):
        it.Proc.kill_all()
        if cls.hosts:
            cls.hosts.down()

    def finish(self, p, what):
        return it.finish_json(self, p, what, BOUND_S)

    def send(self, driver_opts=None):
        """tern -> Linux, BYTES verified; returns tern's report."""
        h = self.hosts
        AfpacketTso.port += 1
        port = AfpacketTso.port
        srv = it.Proc(h.ns_k, [prog("kern-bulk"), "--server", "--once",
                               "--port", str(port), "--verify", "pattern",
                               "--json"], name="kern-bulk server")
        self.assertTrue(it.wait_listen(h.ns_k, port),
                        "kern-bulk did not listen:\n" + srv.describe())
        argv = [prog("tern-bulk"), "--client", "%s:%d" % (h.ip_k, port),
                "--bytes", str(BYTES), "--driver", "afpacket", "--iface",
                h.if_t, "--cores", str(TERN_CPU), "--json"]
        if CPUS > 1:
            argv += ["--poll", "busy"]
        if driver_opts:
            argv += ["--driver-opts", driver_opts]
        t = time.time()
        cli = it.Proc(h.ns_t, argv, name="tern-bulk client")
        if cli.wait(BOUND_S) != 0 and "does not answer ARP" in cli.err:
            # A lossy wire can drop all 3 of tern's ARP exchanges.
            log("tern-bulk's ARP requests went unanswered: once more")
            cli = it.Proc(h.ns_t, argv, name="tern-bulk client")
        rep = self.finish(cli, "tern -> Linux")
        got = self.finish(srv, "kern-bulk --server --once")
        link, c = rep.get("link", {}), rep.get("counters", {})
        log("tern -> Linux %d MiB (%s): %.2f s, %d TSO frames, %d "
            "retransmits" % (BYTES >> 20, driver_opts or "tso", time.time() - t,
                             link.get("tso_frames", -1),
                             c.get("tcp_retransmits", 0)))
        self.assertEqual(got["bytes"], BYTES)
        self.assertTrue(got["verified"], got)
        self.assertEqual(link.get("tso_drops"), 0, link)
        return rep

    def test_01_tso(self):
        rep = self.send()
        self.assertGreater(rep["link"]["tso_frames"], 0, rep["link"])

    def test_02_tso_off(self):
        rep = self.send("tso=0")
        self.assertEqual(rep["link"]["tso_frames"], 0, rep["link"])

    def test_03_tso_loss(self):
        self.hosts.loss(2)
        try:
            rep = self.send()
        finally:
            self.hosts.loss(0)
        self.assertGreater(rep["link"]["tso_frames"], 0, rep["link"])
        self.assertGreater(rep["counters"].get("tcp_retransmits", 0), 0,
                           "no loss seen")


if __name__ == "__main__":
    it.skip_unless_possible()
    it.Watchdog.arm(int(os.environ.get("TERN_INTEROP_BUDGET_S", "150")))
    suite = unittest.TestLoader().loadTestsFromTestCase(AfpacketTso)
    res = unittest.TextTestRunner(verbosity=2).run(suite)
    sys.exit(0 if res.wasSuccessful() else 1)
