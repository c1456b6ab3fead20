"""Command line of `tern doctor` (checks) and `tern doctor rate` (calculator)."""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

from . import apply as fixer
from . import checks, during, export, rate, report, schema_check
from .facts import Facts
from .host import Host
from .model import DEFAULT_PROFILE, PROFILES
from .procfs import format_cpulist, parse_cpulist

EPILOG = """\
subcommands:
  tern doctor rate --link 100G --mtu 1500 [--no-timestamps] [--pcie gen3x8]
                   TCP payload limit and 64-byte packet rate of a link
  tern doctor validate FILE.json
                   check a saved --json report against tools/doctor/schema.json

exit status: 0 no finding at or above --fail-on, 1 otherwise, 2 bad usage.
See docs/doctor.md for every check, the profiles and the JSON schema."""


class Parser(argparse.ArgumentParser):
    """argparse that reports bad usage in one line and exits 2."""

    def error(self, message):
        self.exit(2, "%s: error: %s (see --help)\n" % (self.prog, message))


def _cores(text):
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text.strip()):
        raise argparse.ArgumentTypeError("expected a CPU list like 2,3 or 0-5, got %r" % text)
    return parse_cpulist(text)


def check_parser():
    p = Parser(prog="tern doctor", description="Audit this host (or a fixture tree) for "
               "settings that distort network benchmarks or cap throughput.",
               epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--profile", choices=PROFILES, default=DEFAULT_PROFILE,
                   help="what to tune for (default: %(default)s = what a benchmark needs)")
    p.add_argument("--iface", action="append", metavar="NAME",
                   help="interface to audit (repeatable; default: all but lo)")
    p.add_argument("--app-cores", type=_cores, metavar="LIST",
                   help="CPUs the application runs on, e.g. 2,3: related to the IRQ cores and their L3")
    p.add_argument("--during", metavar="COMMAND",
                   help="run COMMAND via the shell and report counter deltas around it")
    p.add_argument("--root", default="/", metavar="DIR",
                   help="read /proc and /sys under DIR (fixture trees; default /)")
    p.add_argument("--probe-seconds", type=float, default=1.0, metavar="S",
                   help="time the core speed probe runs on each app core (else on the first 4 "
                        "CPUs), one after the other (default 1; 0 = off)")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of the table")
    p.add_argument("--json-file", metavar="FILE", help="also write the JSON report to FILE")
    p.add_argument("--fail-on", choices=("warn", "crit", "never"), default="warn",
                   help="lowest severity that makes the exit status 1 (default: %(default)s)")
    p.add_argument("-q", "--quiet", action="store_true", help="table: show only warn and crit rows")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="table: explain every row that has a fix, not only warn and crit")
    p.add_argument("--apply", action="store_true",
                   help="write the recommended runtime settings (sysctl, sysfs, ethtool), saving old values")
    p.add_argument("--revert", action="store_true", help="restore the values saved by --apply")
    p.add_argument("--state", metavar="FILE",
                   help="state file for --apply/--revert (default ROOT%s)" % fixer.DEFAULT_STATE)
    p.add_argument("--export", metavar="DIR",
                   help="write the files that make the fixes survive a reboot (sysctl.d, udev rule, "
                        "tmpfiles.d, IRQ/RPS unit, boot parameters, tuned profile) and a README to DIR")
    return p


def rate_parser():
    p = Parser(prog="tern doctor rate", description="Line-rate calculator: TCP payload limit = "
               "link x MSS / (MTU + 38); 64-byte frames = link / (84 x 8).")
    p.add_argument("--link", required=True, metavar="RATE",
                   help="link rate: 1G 10G 25G 40G 50G 100G 200G 400G, or e.g. 25000M, 10Gbit/s")
    p.add_argument("--mtu", type=int, default=1500, help="IP MTU in bytes (default 1500)")
    p.add_argument("--no-timestamps", action="store_true", help="TCP timestamps off (MSS = MTU - 40)")
    p.add_argument("--pcie", metavar="GENxW", help="also compare a PCIe link, e.g. gen3x8")
    p.add_argument("--json", action="store_true", help="print JSON")
    return p


def main_rate(argv):
    p = rate_parser()
    args = p.parse_args(argv)
    try:
        link = rate.parse_link(args.link)
        pcie = rate.parse_pcie(args.pcie) if args.pcie else None
    except ValueError as exc:
        p.error(str(exc))
    if not 68 <= args.mtu <= 65535:
        p.error("--mtu must be between 68 and 65535")
    res = rate.calculate(link, args.mtu, not args.no_timestamps, pcie)
    sys.stdout.write(json.dumps(res, indent=2) + "\n" if args.json else rate.render(res))
    return 0


def main_validate(argv):
    p = Parser(prog="tern doctor validate", description="Check a `tern doctor --json` report (or "
               "`tern doctor rate --json` output) against tools/doctor/schema.json (exit 0 valid, 1 invalid).")
    p.add_argument("file", help="JSON report, or - for stdin")
    args = p.parse_args(argv)
    try:
        with (sys.stdin if args.file == "-" else open(args.file)) as f:
            doc = json.load(f)
    except (OSError, ValueError) as exc:
        p.error("cannot read %s: %s" % (args.file, exc))
    errors = schema_check.validate(doc, definition=schema_check.kind_of(doc))
    for err in errors:
        print(err)
    print("%s: %s" % (args.file, "invalid (%d problems)" % len(errors) if errors else "valid"))
    return 1 if errors else 0


def main(argv=None, runner=None):
    """Entry point; runner replaces the program runner (tests, other tools)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "rate":
        return main_rate(argv[1:])
    if argv and argv[0] == "validate":
        return main_validate(argv[1:])
    p = check_parser()
    args = p.parse_args(argv)
    if not os.path.isdir(args.root):
        p.error("--root %s is not a directory" % args.root)
    if args.apply and args.revert:
        p.error("--apply and --revert exclude each other")
    if args.revert and args.during:
        p.error("--revert cannot be combined with --during")
    if not 0 <= args.probe_seconds <= 60:
        p.error("--probe-seconds must be between 0 and 60")
    host = Host(args.root, runner)
    _check_app_cores(p, host, args.app_cores)
    if args.export and args.revert:
        p.error("--export and --revert exclude each other")
    for iface in args.iface or []:
        if not host.isdir("/sys/class/net/" + iface):
            p.error("no interface %r under %s" % (iface, host.path("/sys/class/net")))
    state = fixer.state_path(host, args.state)
    log = _logger(args.json)
    try:
        if args.revert:
            undone, failed = fixer.revert(host, state, log)
            if args.json:
                print(json.dumps({"reverted": undone, "failed": failed, "state": state}))
            return 1 if failed else 0
        doc, apply_failed = audit(host, args, state, log)
    except (OSError, ValueError) as exc:  # unreadable state file, unwritable --json-file...
        sys.stderr.write("tern doctor: error: %s\n" % exc)
        return 2
    if args.json:
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    else:
        sys.stdout.write(report.render(doc, colour=report.use_colour(sys.stdout), quiet=args.quiet,
                                       verbose=args.verbose))
    return 1 if doc["summary"]["exit_code"] or apply_failed else 0


def audit(host, args, state, log):
    """Checks (after --apply if asked), then --during; returns (report, apply failures)."""
    facts = Facts(host, args.profile, args.iface, args.app_cores, args.probe_seconds)
    findings = checks.run_all(facts)
    apply_failed = 0
    if args.export:  # before --apply: what the host needs, not what is left after
        written = export.write(args.export, facts, findings, state)
        log("wrote %s to %s (see %s/README)" % (", ".join(written), args.export, args.export))
    if args.apply:
        _, apply_failed = fixer.apply(host, findings, state, log)
        speeds = facts.core_speeds
        facts = Facts(host, args.profile, args.iface, args.app_cores)  # re-read what changed
        facts.core_speeds = speeds            # no knob of ours changes them: not probed twice
        findings = checks.run_all(facts)
    during_doc = None
    if args.during:
        before = during.snapshot(facts)
        rc, seconds = during.run_command(args.during, host.root, quiet_stdout=args.json)
        after = during.snapshot(facts)
        findings += during.findings(facts, before, after, args.during, rc, seconds)
        during_doc = {"command": args.during, "exit_code": rc, "seconds": round(seconds, 3)}
    options = {"ifaces": facts.ifaces, "app_cores": args.app_cores or [], "during": args.during,
               "fail_on": args.fail_on, "applied": bool(args.apply)}
    doc = report.build(facts, findings, options, during_doc)
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    return doc, apply_failed


def _check_app_cores(p, host, cores):
    """--app-cores must name online CPUs of the audited host (usage error otherwise)."""
    if not cores:
        return
    online = Facts(host, DEFAULT_PROFILE).cpus
    if not online:
        return  # the tree does not say which CPUs are online: nothing to check against
    missing = [c for c in cores if c not in online]
    if missing:
        p.error("--app-cores: CPU%s %s not online on this host (online: %s)" % (
            "s" if len(missing) > 1 else "", format_cpulist(missing), format_cpulist(online)))


def _logger(to_stderr):
    """--apply/--revert progress: stderr when stdout carries JSON."""
    stream = sys.stderr if to_stderr else sys.stdout

    def log(msg):
        stream.write(msg + "\n")
        stream.flush()
    return log
