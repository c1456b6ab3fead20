"""Line-rate and PCIe arithmetic, and the `tern doctor rate` subcommand."""
import json
import os
import tempfile
import unittest

from helpers import doctor_json, fixture, run_tern

from doctor import rate, schema_check


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

    def test_both_timestamp_settings_in_table_and_json(self):
        for extra in ((), ("--no-timestamps",)):
            rc, out, _ = run_tern("doctor", "rate", "--link", "100G", "--mtu", "1500", *extra)
            self.assertEqual(rc, 0)
            self.assertRegex(out, r"94\.1 Gbit/s with timestamps")
            self.assertRegex(out, r"94\.9 Gbit/s without timestamps")
            self.assertIn("1448 B with timestamps", out)
            self.assertIn("1460 B without", out)
            selected = [l for l in out.splitlines() if "<- selected" in l]
            self.assertEqual(len(selected), 1)
            self.assertIn("without" if extra else "with timestamps", selected[0])
            rc, out, _ = run_tern("doctor", "rate", "--link", "100G", "--json", *extra)
            res = json.loads(out)
            self.assertEqual(schema_check.validate(res, definition="rate_report"), [])
            self.assertEqual(res["with_timestamps"]["mss"], 1448)
            self.assertEqual(res["without_timestamps"]["mss"], 1460)
            self.assertEqual(round(res["with_timestamps"]["payload_bps"] / 1e9, 1), 94.1)
            self.assertEqual(round(res["without_timestamps"]["payload_bps"] / 1e9, 1), 94.9)
            self.assertEqual(res["timestamps"], not extra)
            self.assertEqual(res["payload_bps"], res["without_timestamps" if extra else "with_timestamps"]["payload_bps"])

    def test_jumbo_frames(self):
        res = rate.calculate(100e9, 9000, True)
        self.assertEqual(res["with_timestamps"]["mss"], 8948)
        self.assertEqual(round(res["with_timestamps"]["payload_bps"] / 1e9, 2), 99.0)
        self.assertEqual(round(res["without_timestamps"]["payload_bps"] / 1e9, 2), 99.14)

    def test_validate_accepts_rate_json(self):
        rc, out, _ = run_tern("doctor", "rate", "--link", "25G", "--pcie", "gen4x8", "--json")
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(out)
        self.addCleanup(os.remove, f.name)
        rc, out, _ = run_tern("doctor", "validate", f.name)
        self.assertEqual(rc, 0, out)
        with open(f.name) as g:
            bad = json.load(g)
        del bad["without_timestamps"]
        with open(f.name, "w") as g:
            json.dump(bad, g)
        rc, out, _ = run_tern("doctor", "validate", f.name)
        self.assertEqual(rc, 1)
        self.assertIn("without_timestamps", out)

    def test_report_shows_both(self):
        _, doc, _ = doctor_json("--root", fixture("reader100g_tuned"), "--app-cores", "5", "--probe-seconds", "0")
        link = [f for f in doc["findings"] if f["id"] == "nic.link"][0]
        self.assertEqual(round(link["data"]["payload_limit_bps_timestamps"] / 1e9, 1), 94.1)
        self.assertEqual(round(link["data"]["payload_limit_bps_no_timestamps"] / 1e9, 1), 94.9)
        self.assertIn("94.9 Gbit/s without", link["current"])
        ts = [f for f in doc["findings"] if f["id"] == "sysctl.tcp_timestamps"][0]
        self.assertIn("94.1 Gbit/s with timestamps, 94.9 Gbit/s without", ts["current"])

    def test_bad_link_is_usage_error(self):
        rc, out, err = run_tern("doctor", "rate", "--link", "lots")
        self.assertEqual(rc, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)


if __name__ == "__main__":
    unittest.main()
