"""Line-rate and PCIe arithmetic, and the `tern doctor rate` subcommand."""
import json
import unittest

from helpers import run_tern

from doctor import rate


class RateMath(unittest.TestCase):
    def test_100g_payload_with_and_without_timestamps(self):
        self.assertEqual(round(rate.payload_rate(100e9, 1500, True) / 1e9, 1), 94.1)
        self.assertEqual(round(rate.payload_rate(100e9, 1500, False) / 1e9, 1), 94.9)
        self.assertEqual(rate.mss(1500, True), 1448)
        self.assertEqual(rate.mss(1500, False), 1460)

    def test_64_byte_frames(self):
        self.assertEqual(round(rate.min_frame_pps(100e9) / 1e6, 1), 148.8)
        self.assertEqual(round(rate.min_frame_pps(10e9) / 1e6, 2), 14.88)

    def test_link_names(self):
        for text, bps in [("1G", 1e9), ("10G", 10e9), ("25G", 25e9), ("40G", 40e9), ("50G", 50e9),
                          ("100G", 100e9), ("200G", 200e9), ("400G", 400e9), ("25GbE", 25e9),
                          ("100 Gbit/s", 100e9), ("40000M", 40e9), ("10Gbps", 10e9),
                          ("2.5G", 2.5e9), ("100", 100e9), ("100gb/s", 100e9)]:
            self.assertAlmostEqual(rate.parse_link(text), bps, msg=text)
        for bad in ("", "fast", "G100", "100X", "-5G", "0G"):
            with self.assertRaises(ValueError, msg=bad):
                rate.parse_link(bad)

    def test_pcie(self):
        self.assertEqual(round(rate.pcie_bps(8.0, 8) / 1e9, 1), 63.0)   # Gen3 x8 < 100GbE
        self.assertEqual(round(rate.pcie_bps(8.0, 1) / 1e9, 2), 7.88)   # PCIe Gen3: 7.88 Gbps per lane
        self.assertEqual(rate.pcie_bps(2.5, 1), 2e9)                     # 8b/10b
        self.assertEqual(round(rate.pcie_bps(16.0, 16) / 1e9, 1), 252.1)
        self.assertEqual(rate.parse_pcie("gen3x8"), (8.0, 8))
        self.assertEqual(rate.parse_pcie("Gen4 x16"), (16.0, 16))
        self.assertEqual(rate.parse_pcie("8GT/s x8"), (8.0, 8))


class RateCommand(unittest.TestCase):
    def test_text_output(self):
        rc, out, _ = run_tern("doctor", "rate", "--link", "100G", "--mtu", "1500")
        self.assertEqual(rc, 0)
        self.assertIn("94.1 Gbit/s", out)
        self.assertIn("148.8 Mpps", out)
        rc, out, _ = run_tern("doctor", "rate", "--link", "100G", "--mtu", "1500", "--no-timestamps")
        self.assertEqual(rc, 0)
        self.assertIn("94.9 Gbit/s", out)

    def test_json_and_pcie(self):
        rc, out, _ = run_tern("doctor", "rate", "--link", "100GbE", "--pcie", "gen3x8", "--json")
        self.assertEqual(rc, 0)
        res = json.loads(out)
        self.assertEqual(res["mss"], 1448)
        self.assertFalse(res["pcie"]["enough"])
        self.assertEqual(round(res["pcie"]["usable_bps"] / 1e9, 1), 63.0)

    def test_bad_link_is_usage_error(self):
        rc, out, err = run_tern("doctor", "rate", "--link", "lots")
        self.assertEqual(rc, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)


if __name__ == "__main__":
    unittest.main()
