"""Command line: the tools/tern dispatcher, --help, bad usage (exit 2, one line)."""
import unittest

from helpers import fixture, run_doctor, run_tern


class Dispatcher(unittest.TestCase):
    def test_help_lists_doctor(self):
        rc, out, _ = run_tern("--help")
        self.assertEqual(rc, 0)
        self.assertIn("doctor", out)

    def test_unknown_subcommand(self):
        rc, out, err = run_tern("frobnicate")
        self.assertEqual(rc, 2)
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertIn("unknown subcommand 'frobnicate'", err)

    def test_no_subcommand_is_usage_error(self):
        rc, out, _ = run_tern()
        self.assertEqual(rc, 2)
        self.assertIn("usage: tern", out)

    def test_doctor_help(self):
        for args in (("doctor", "--help"), ("doctor", "rate", "--help"), ("doctor", "validate", "--help")):
            rc, out, _ = run_tern(*args)
            self.assertEqual(rc, 0, args)
            self.assertIn("usage:", out)
        rc, out, _ = run_tern("doctor", "--help")
        for flag in ("--profile", "--iface", "--app-cores", "--during", "--root", "--json",
                     "--fail-on", "--apply", "--revert", "--state"):
            self.assertIn(flag, out)


class BadUsage(unittest.TestCase):
    CASES = [
        ("--bogus",),
        ("--profile", "fastest"),
        ("--fail-on", "info"),
        ("--app-cores", "two"),
        ("--app-cores", "1,,2"),
        ("--root", "/does/not/exist"),
        ("--root", fixture("noisy_host"), "--iface", "nope0"),
        ("--apply", "--revert"),
        ("--revert", "--during", "true"),
        ("--probe-seconds", "-1"),
        ("--probe-seconds", "soon"),
        ("rate", "--link", "fast"),
        ("rate",),
        ("rate", "--link", "100G", "--mtu", "10"),
        ("validate",),
    ]

    def test_exit_2_with_one_line(self):
        for args in self.CASES:
            rc, out, err = run_doctor(*args)
            self.assertEqual(rc, 2, args)
            self.assertEqual(out, "", args)
            self.assertEqual(len(err.strip().splitlines()), 1, (args, err))
            self.assertIn("error:", err, args)

    def test_through_the_dispatcher(self):
        rc, out, err = run_tern("doctor", "--no-such-flag")
        self.assertEqual(rc, 2)
        self.assertEqual(err.strip().splitlines(),
                         ["tern doctor: error: unrecognized arguments: --no-such-flag (see --help)"])


if __name__ == "__main__":
    unittest.main()
