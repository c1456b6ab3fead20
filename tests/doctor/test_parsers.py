"""Parsers of /proc, /sys and ethtool text (pure functions, no subprocess)."""
import os
import unittest

import helpers  # noqa: F401 - puts tools/ on sys.path

from doctor import ethtool, procfs

# 4.x kernel: 11 columns, no CPU index; rows are the online CPUs only.
SOFTNET_OLD = """\
0000272d 00000000 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
00001a2b 00000005 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
"""
# 5.10+: backlog length and CPU index (column 13) appended; 6.x adds two more.
SOFTNET_NEW = """\
0000272d 00000000 00000003 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
00001a2b 00000005 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000002 00000000 00000000 00000003
"""
SOFTNET_6X = """\
00000012 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000
00001031 00000000 00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000001 00000000 00000000
"""


class Softnet(unittest.TestCase):
    def test_old_layout_maps_rows_to_online_cpus(self):
        layout, rows = procfs.parse_softnet(SOFTNET_OLD, online_cpus=[0, 3])
        self.assertEqual(layout, "old")
        self.assertEqual([r["cpu"] for r in rows], [0, 3])   # CPU 1-2 offline: row 2 is cpu3
        self.assertEqual(rows[0]["processed"], 0x272d)
        self.assertEqual(rows[0]["time_squeeze"], 3)
        self.assertEqual(rows[1]["dropped"], 5)
        self.assertNotIn("backlog_len", rows[0])

    def test_old_layout_without_cpu_list(self):
        _, rows = procfs.parse_softnet(SOFTNET_OLD)
        self.assertEqual([r["cpu"] for r in rows], [0, 1])

    def test_new_layout_uses_index_column(self):
        layout, rows = procfs.parse_softnet(SOFTNET_NEW, online_cpus=[0, 1])
        self.assertEqual(layout, "new")
        self.assertEqual([r["cpu"] for r in rows], [0, 3])   # the index column wins
        self.assertEqual(rows[1]["dropped"], 5)
        self.assertEqual(rows[1]["received_rps"], 2)

    def test_6x_layout_with_queue_lengths(self):
        layout, rows = procfs.parse_softnet(SOFTNET_6X)
        self.assertEqual(layout, "new")
        self.assertEqual(rows[1]["cpu"], 1)
        self.assertEqual(rows[1]["time_squeeze"], 1)
        self.assertIn("process_qlen", rows[1])

    def test_junk(self):
        self.assertEqual(procfs.parse_softnet(""), ("none", []))
        self.assertEqual(procfs.parse_softnet(None), ("none", []))
        layout, rows = procfs.parse_softnet("zz yy\n0000000a 00000001 00000000\n")
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0]["dropped"], 1)


class CpuSets(unittest.TestCase):
    def test_cpulist(self):
        self.assertEqual(procfs.parse_cpulist("0-3,8,10-11\n"), [0, 1, 2, 3, 8, 10, 11])
        self.assertEqual(procfs.parse_cpulist(""), [])
        self.assertEqual(procfs.format_cpulist([0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11")

    def test_masks(self):
        self.assertEqual(procfs.parse_cpumask("00000000,0000000f"), [0, 1, 2, 3])
        self.assertEqual(procfs.parse_cpumask("0"), [])
        self.assertEqual(procfs.format_cpumask(range(40)), "ff,ffffffff")
        self.assertEqual(procfs.format_cpumask([0, 1, 2, 3]), "f")
        self.assertEqual(procfs.parse_cpumask(procfs.format_cpumask([1, 33, 70])), [1, 33, 70])


class ProcTables(unittest.TestCase):
    def test_interrupts(self):
        text = ("           CPU0       CPU1       \n"
                " 38:          0       2669 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n"
                "110:          0     250581   mlx5_comp1@pci:0000:c1:00.0\n"
                "NMI:          0          0   Non-maskable interrupts\n"
                "ERR:          0\n")
        table = procfs.parse_interrupts(text)
        self.assertEqual(table["cpus"], [0, 1])
        self.assertEqual(table["irqs"]["38"]["counts"], [0, 2669])
        self.assertEqual(table["irqs"]["38"]["name"], "virtio2-input.0")
        self.assertEqual(table["irqs"]["110"]["name"], "mlx5_comp1@pci:0000:c1:00.0")
        self.assertEqual(table["irqs"]["ERR"]["counts"], [0, 0])

    def test_softirqs_and_cmdline(self):
        soft = procfs.parse_softirqs("      CPU0  CPU1\nNET_RX:  10  20\nNET_TX: 1 2\n")
        self.assertEqual(soft["rows"]["NET_RX"], [10, 20])
        cmd = procfs.parse_cmdline("ro nosmt intel_idle.max_cstate=0 -- init-arg=1")
        self.assertEqual(cmd, {"ro": True, "nosmt": True, "intel_idle.max_cstate": "0"})
        self.assertEqual(procfs.parse_pcie_speed("8.0 GT/s PCIe"), 8.0)
        self.assertIsNone(procfs.parse_pcie_speed("Unknown"))


def canned(*parts):
    path = os.path.join(helpers.FIXTURES, *parts)
    with open(path) as f:
        return f.read()


class EthtoolParsers(unittest.TestCase):
    def test_channels_and_rings(self):
        ch = ethtool.parse_max_current(canned("noisy_host", ".ethtool", "eth0", "-l.txt"))
        self.assertEqual(ch["max"]["combined"], 63)
        self.assertEqual(ch["current"]["combined"], 4)
        self.assertIsNone(ch["current"]["rx"])
        rings = ethtool.parse_max_current(canned("noisy_host", ".ethtool", "eth0", "-g.txt"))
        self.assertEqual((rings["current"]["rx"], rings["max"]["rx"]), (512, 4096))

    def test_coalesce_pause_features(self):
        c = ethtool.parse_coalesce(canned("reader100g_untuned", ".ethtool", "enp193s0f0np0", "-c.txt"))
        self.assertEqual((c["adaptive-rx"], c["rx-usecs"], c["rx-frames"]), ("on", 8, 128))
        self.assertIsNone(c["rx-usecs-irq"])
        a = ethtool.parse_pause(canned("reader100g_tuned", ".ethtool", "enp193s0f0np0", "-a.txt"))
        self.assertEqual(a, {"autonegotiate": False, "rx": True, "tx": True})
        k = ethtool.parse_features("Features for x:\nlarge-receive-offload: off [fixed]\n"
                                   "generic-receive-offload: on\n\ttx-tcp-segmentation: on\n")
        self.assertEqual(k["large-receive-offload"], {"on": False, "fixed": True})
        self.assertTrue(k["generic-receive-offload"]["on"])

    def test_ntuple_and_rss(self):
        n = ethtool.parse_ntuple(canned("reader100g_tuned", ".ethtool", "enp193s0f0np0", "-n.txt"))
        self.assertEqual(n["rings"], 24)
        self.assertEqual(n["rules"][0]["id"], 1023)
        self.assertEqual(n["rules"][0]["queue"], 2)
        unsupported = ("rxclass: Cannot get RX class rule count: Operation not supported\n"
                       "RX classification rule retrieval failed\n1 RX rings available\n")
        self.assertEqual(ethtool.parse_ntuple(unsupported), {"rings": 1, "rules": None})
        x = ethtool.parse_rss(canned("reader100g_tuned", ".ethtool", "enp193s0f0np0", "-x.txt"))
        self.assertEqual((x["rings"], len(x["table"]), x["hfunc"]), (24, 128, "toeplitz"))
        self.assertEqual(sorted(set(x["table"])), list(range(24)))

    def test_unsupported_outputs_are_empty(self):
        self.assertEqual(ethtool.parse_pause("netlink error: Operation not supported\n"), {})
        self.assertEqual(ethtool.parse_max_current("Cannot get device ring settings\n"), {})
        self.assertEqual(ethtool.parse_info("Cannot get driver information: Operation not supported"), {})
        self.assertEqual(ethtool.parse_stats("no stats available\n"), {})


if __name__ == "__main__":
    unittest.main()
