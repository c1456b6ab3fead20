"""tern programs over --driver mem: both stacks in one process. Skipped
(exit 77) while the core still has its TCP stub."""
import sys
import unittest

from apptest import main, run_json, tcp_stub_present


class TernMem(unittest.TestCase):
    def test_echo_exact_requests(self):
        d = run_json(self, ["tern-echo", "--driver", "mem", "--requests",
                            "100000", "--json"])
        self.assertEqual(d["requests"], 100000)
        for k in ("rps", "p50_us", "p99_us", "p999_us", "conns", "size",
                  "duration_s", "driver", "retransmits"):
            self.assertIn(k, d)
        self.assertEqual(d["driver"], "mem")
        self.check_host_speed(d, "rps_full", d["rps"])

    def check_host_speed(self, d, full_key, figure):
        """The host speed report (docs/performance.md, "Host speed"): a
        probe ran, every window is in the totals, and the work rates are
        those of the run (the full-speed one only with enough time)."""
        h = d["host_speed"]
        self.assertGreater(h["best_ghz"], 0)
        self.assertGreater(h["median_ghz"], 0)
        self.assertLessEqual(h["median_ghz"], h["best_ghz"] + 0.03)
        self.assertTrue(0 <= h["full_share"] <= 1, h)
        self.assertGreater(h["rate_all"], 0)
        self.assertGreaterEqual(h["cycles_per_unit"], 0)
        if h["full_s"] >= 0.2:
            self.assertIn(full_key, d)
            self.assertGreater(d[full_key], 0)
        else:
            self.assertNotIn(full_key, d)
        # the loop's windows span a little more than the app's own
        # timing (connection setup): same order of magnitude
        unit = 8 / 1e9 if full_key == "gbps_full" else 1
        self.assertLess(h["rate_all"] * unit, figure * 2)
        self.assertGreater(h["rate_all"] * unit, figure / 4)

    def test_echo_depth_two_cores(self):
        d = run_json(self, ["tern-echo", "--requests", "20001", "--depth",
                            "4", "--size", "1", "--cores", "0,1", "--json"])
        self.assertEqual(d["requests"], 20001)

    def test_echo_tfo(self):
        # --tfo: each core's first connection asks for the cookie, the
        # other three carry their first request in the SYN, which the
        # server takes; the run is still exact.
        d = run_json(self, ["tern-echo", "--driver", "mem", "--requests",
                            "2000", "--conns", "4", "--tfo", "--json"])
        self.assertEqual(d["requests"], 2000)
        c = d["counters"]
        self.assertEqual(c.get("tcp_tfo_cookie_req_out"), 1, c)
        self.assertEqual(c.get("tcp_tfo_cookie_req_in"), 1, c)
        self.assertEqual(c.get("tcp_tfo_syn_data_out"), 3, c)
        self.assertEqual(c.get("tcp_tfo_syn_data_in"), 3, c)
        self.assertEqual(c.get("tcp_tfo_syn_data_acked"), 3, c)

    def test_echo_server_backlog(self):
        # Requests larger than the server's send buffer takes at once: its
        # echo sends part, keeps the rest (srv_backlog) and holds what
        # arrives behind it until the ACKs drain it; still exact.
        d = run_json(self, ["tern-echo", "--driver", "mem", "--requests",
                            "400", "--size", "65536", "--depth", "16",
                            "--conns", "2", "--json"])
        self.assertEqual(d["requests"], 400)

    def test_bulk_verified(self):
        d = run_json(self, ["tern-bulk", "--driver", "mem", "--bytes", "256M",
                            "--json"])
        self.assertEqual(d["bytes"], 256 << 20)
        self.assertIs(d["verified"], True)
        self.check_host_speed(d, "gbps_full", d["gbps"])

    def test_bulk_hash_verified(self):
        # Both ends in one process: the receiver's stream hashes are
        # compared with the sender's.
        d = run_json(self, ["tern-bulk", "--driver", "mem", "--bytes", "16M",
                            "--conns", "3", "--verify", "hash", "--json"])
        self.assertEqual(d["verify"], "hash")
        self.assertIs(d["verified"], True)
        self.assertEqual(len(d["sha256"].split(",")), 3)

    def test_bulk_verified_with_loss(self):
        # Real time: 256 MiB at 1% loss, and a shorter run at 5% (the
        # 256 MiB at 5% case runs in simulated time in tests/tcp).
        for size, loss in (("256M", "0.01"), ("8M", "0.05")):
            d = run_json(self, ["tern-bulk", "--driver", "mem", "--bytes", size,
                                "--loss", loss, "--json"], timeout=120)
            self.assertIs(d["verified"], True)
            self.assertGreater(d["retransmits"], 0)

    def test_bulk_faults_and_offloads(self):
        d = run_json(self, ["tern-bulk", "--bytes", "32M", "--conns", "2",
                            "--dup", "0.01", "--reorder", "0.01",
                            "--offload", "csum,tso,lro", "--json"],
                     timeout=300)
        self.assertIs(d["verified"], True)

    def test_bulk_offloads_by_reference(self):
        # A clean link passes TSO frames to the LRO receiver by reference
        # (as veth); ",copy" makes it copy them. Same bytes either way.
        for extra, by_ref in (("", True), (",copy", False)):
            d = run_json(self, ["tern-bulk", "--bytes", "64M",
                                "--offload", "csum,tso,lro" + extra, "--json"],
                         timeout=300)
            self.assertIs(d["verified"], True)
            link = d["link"]
            self.assertGreater(link["lro_frames"], 0)
            if by_ref:
                self.assertEqual(link["lro_by_ref"], link["lro_frames"])
            else:
                self.assertEqual(link["lro_by_ref"], 0)

    def test_echo_ipv6(self):
        # --ip6 on mem: the server end takes the address, the client end
        # the next one, and the client connects over IPv6: every frame is
        # IPv6 (no IPv4 counted), the run exact.
        d = run_json(self, ["tern-echo", "--driver", "mem", "--ip6",
                            "2001:db8::1/64", "--requests", "20000",
                            "--conns", "4", "--json"])
        self.assertEqual(d["requests"], 20000)
        c = d["counters"]
        self.assertNotIn("ip_in", c)
        self.assertGreaterEqual(c["ip6_in"], 2 * 20000)
        self.assertEqual(c["tcp_conns_established"], 8)
        self.assertNotIn("tcp_drop_csum", c)

    def test_bulk_and_httpd_ipv6(self):
        d = run_json(self, ["tern-bulk", "--driver", "mem", "--ip6",
                            "2001:db8::1/64", "--bytes", "16M", "--json"])
        self.assertEqual(d["bytes"], 16 << 20)
        self.assertIs(d["verified"], True)
        self.assertNotIn("ip_in", d["counters"])
        d = run_json(self, ["tern-httpd", "--ip6", "2001:db8::1/64",
                            "--requests", "2000", "--json"])
        self.assertEqual(d["requests"], 2000)
        self.assertNotIn("ip_in", d["counters"])

    def test_httpd_builtin_client(self):
        d = run_json(self, ["tern-httpd", "--requests", "20000", "--depth",
                            "4", "--json"])
        self.assertEqual(d["requests"], 20000)


if __name__ == "__main__":
    if tcp_stub_present():
        print("SKIP: src/core/tcp/tcp_stub.c present: tern TCP not in yet")
        sys.exit(77)
    main()
