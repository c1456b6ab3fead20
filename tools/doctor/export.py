"""--export DIR: the files that make the doctor's fixes survive a reboot.

What is exported: the Persist entries (persist.py) of every finding that
--apply would change or that is warn/crit, plus the changes an earlier
--apply recorded in the state file (so "apply now, export later" keeps
them).  Nothing on the host is touched; DIR/README says how to install.
"""
from __future__ import annotations

import datetime
import os
import re

from . import persist
from .apply import load_state
from .model import Action

TUNED_NET = {"-G": "ring", "-C": "coalesce", "-L": "channels", "-K": "features", "-A": "pause"}

# Shell helper of the steering script: pin every IRQ named $1 to CPU $2.
PIN_FUNCTION = """\
pin() {  # IRQ numbers change between boots; names do not
	found=
	for irq in $(awk -v n="$1" '$NF == n { sub(":", "", $1); print $1 }' /proc/interrupts); do
		echo "$2" > "/proc/irq/$irq/smp_affinity_list" && found=1
	done
	[ -n "$found" ] || { echo "tern-doctor-steering: no IRQ named $1" >&2; return 1; }
}
"""


def collect(facts, findings, state_path):
    """The Persist entries to export, merged by method."""
    items = []
    for f in findings:
        if f.actions or f.severity in ("warn", "crit"):
            items += f.persist
    try:
        state = load_state(state_path) or {"changes": []}
    except ValueError:
        state = {"changes": []}
    for change in state["changes"]:
        act = Action("write", path=change["path"], value=change["new"]) if change["kind"] == "write" \
            else Action("run", argv=change["argv"])
        p = persist.from_action(facts, act)
        if p:
            items.append(p)
    return persist.merge(items)


def write(dest, facts, findings, state_path):
    """Write the files into dest (created if needed); returns their names."""
    os.makedirs(dest, exist_ok=True)
    entries = collect(facts, findings, state_path)
    by_method = {}
    for p in entries:
        by_method.setdefault(p.method, []).append(p)
    stamp = "%s, host %s, profile %s" % (
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        facts.host.read_line("/proc/sys/kernel/hostname") or "?", facts.profile)
    head = "# Written by `tern doctor --export` (%s).\n" % stamp
    files = {}
    lines = _lines(by_method, "sysctl.d")
    if lines:
        files["90-tern-doctor.conf"] = head + "\n".join(lines) + "\n"
    lines = _lines(by_method, "tmpfiles.d")
    if lines:
        files["tern-doctor.tmpfiles.conf"] = head + "# Type Path Mode User Group Age Argument\n" + \
            "\n".join(lines) + "\n"
    lines = _lines(by_method, "udev")
    if lines:
        files["90-tern-doctor.rules"] = head + "\n".join(lines) + "\n"
    steer = by_method.get("systemd-unit", [])
    if steer:
        ifaces = sorted({i for p in steer for i in p.ifaces})
        files["tern-doctor-steering"] = steering_script(head, _lines(by_method, "systemd-unit"))
        files["tern-doctor-steering.service"] = steering_unit(head, ifaces)
    lines = _lines(by_method, "cmdline")
    if lines:
        files["kernel-cmdline.txt"] = " ".join(lines) + "\n"
    tuned_dir = "tuned/tern-%s" % facts.profile
    files[tuned_dir + "/tuned.conf"] = tuned_conf(head, facts.profile, entries)
    files["README"] = readme(stamp, files, facts.profile, by_method)
    for name, text in files.items():
        path = os.path.join(dest, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        if name == "tern-doctor-steering":
            os.chmod(path, 0o755)
    return sorted(files)


def _lines(by_method, method):
    out = []
    for p in by_method.get(method, []):
        out += [l for l in p.lines if l not in out]
    return out


def steering_script(head, lines):
    body = "\n".join("%s || status=1" % l for l in lines)
    return ("#!/bin/sh\n" + head +
            "# Queue IRQ affinity and RPS/RFS/XPS, re-applied at every boot by\n"
            "# tern-doctor-steering.service.\n" + PIN_FUNCTION + "status=0\n" + body + "\nexit $status\n")


def unit_escape(name):
    """systemd-escape for a device unit name component ('-' and odd bytes as \\xNN)."""
    return "".join(c if re.match(r"[A-Za-z0-9_.]", c) else "\\x%02x" % ord(c) for c in name)


def steering_unit(head, ifaces):
    devs = " ".join("sys-subsystem-net-devices-%s.device" % unit_escape(i) for i in ifaces)
    return (head +
            "[Unit]\n"
            "Description=tern doctor: queue IRQ affinity and RPS/RFS/XPS (%s)\n"
            "%s"
            "# irqbalance would move the pinned IRQs again\n"
            "Conflicts=irqbalance.service\n"
            "\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=%s\n"
            "\n[Install]\nWantedBy=multi-user.target\n"
            % (", ".join(ifaces) or "host",
               "Wants=%s\nAfter=%s\n" % (devs, devs) if devs else "",
               persist.STEERING_SCRIPT))


def tuned_conf(head, profile, entries):
    """A tuned profile holding the same settings (tuned applies them at boot and
    undoes them when another profile is chosen)."""
    sysctl, sysfs, cmdline, net = [], [], [], {}
    for p in entries:
        for s in p.settings:
            if s[0] == "sysctl":
                sysctl.append("%s=%s" % (s[1], s[2]))
            elif s[0] == "sysfs":
                sysfs.append("%s=%s" % (s[1], s[2]))
            elif s[0] == "cmdline":
                cmdline.append(s[1])
            elif s[0] == "ethtool" and len(s[1]) > 3 and s[1][1] in TUNED_NET:
                net.setdefault(s[1][2], []).append("%s=%s" % (TUNED_NET[s[1][1]], " ".join(s[1][3:])))
    out = [head.rstrip("\n"),
           "# Install: mkdir -p /etc/tuned/tern-%s && cp tuned.conf /etc/tuned/tern-%s/ && "
           "tuned-adm profile tern-%s" % (profile, profile, profile),
           "# Queue IRQ affinity and RPS/RFS/XPS are not here: install tern-doctor-steering too.",
           "", "[main]", "summary=tern doctor: %s network benchmarks" % profile, "",
           "[cpu]", "governor=performance"]
    if profile in ("reproducible", "latency"):
        out.append("# only idle states that wake within 2 us (POLL, C1)")
        out.append("force_latency=2")
    for title, items in (("sysctl", sysctl), ("sysfs", sysfs)):
        if items:
            out += ["", "[%s]" % title] + _dedup(items)
    for iface, items in sorted(net.items()):
        out += ["", "[net_%s]" % re.sub(r"\W", "_", iface), "type=net", "devices=%s" % iface] + _dedup(items)
    if cmdline:
        out += ["", "[bootloader]", "cmdline=%s" % " ".join(_dedup(cmdline))]
    return "\n".join(out) + "\n"


def _dedup(items):
    out = []
    for i in items:
        if i not in out:
            out.append(i)
    return out


INSTALL = {
    "90-tern-doctor.conf": ("sysctls", "install -m 644 90-tern-doctor.conf %s && sysctl --system"
                            % persist.SYSCTL_FILE),
    "tern-doctor.tmpfiles.conf": ("CPU settings in /sys (boost, governor, idle states)",
                                  "install -m 644 tern-doctor.tmpfiles.conf %s && systemd-tmpfiles --create %s"
                                  % (persist.TMPFILES_FILE, persist.TMPFILES_FILE)),
    "90-tern-doctor.rules": ("NIC settings (ethtool), re-run by udev whenever the NIC appears",
                             "install -m 644 90-tern-doctor.rules %s && udevadm control --reload"
                             % persist.UDEV_FILE),
    "tern-doctor-steering": ("queue IRQ affinity and RPS/RFS/XPS, by a unit at every boot",
                             "install -m 755 tern-doctor-steering %s && install -m 644 "
                             "tern-doctor-steering.service %s && systemctl daemon-reload && "
                             "systemctl enable --now tern-doctor-steering.service"
                             % (persist.STEERING_SCRIPT, persist.STEERING_UNIT)),
}


def readme(stamp, files, profile, by_method):
    out = ["tern doctor --export (%s)" % stamp, "",
           "Runtime changes (`tern doctor --apply`, or the fix commands it prints) are lost",
           "at the next boot.  These files make them permanent.  Install them as root from",
           "this directory, either one by one:", ""]
    for name, (what, cmd) in INSTALL.items():
        if name in files:
            out += ["  # %s" % what, "  %s" % cmd, ""]
    if "kernel-cmdline.txt" in files:
        out += ["  # boot parameters (kernel-cmdline.txt): add them to GRUB_CMDLINE_LINUX in",
                "  # %s, then run update-grub (Debian/Ubuntu) or" % persist.GRUB_FILE,
                "  # grub2-mkconfig -o /boot/grub2/grub.cfg (Fedora/RHEL), and reboot:",
                "  #   %s" % files["kernel-cmdline.txt"].strip(), ""]
    if len(out) == 5:
        out += ["  (nothing to install: no finding needs a change that must survive a reboot)", ""]
    out += ["or, with tuned installed, the tuned profile (sysctls, CPU, ethtool and boot",
            "parameters in one place; tuned undoes them when another profile is chosen),",
            "plus tern-doctor-steering above, which tuned cannot express:", "",
            "  mkdir -p /etc/tuned/tern-%s && cp tuned/tern-%s/tuned.conf /etc/tuned/tern-%s/"
            % (profile, profile, profile),
            "  tuned-adm profile tern-%s" % profile, ""]
    manual = [p for m in ("service", "manual") for p in by_method.get(m, [])]
    if manual:
        out += ["Also, by hand:", ""]
        for p in manual:
            out += ["  - %s%s" % (p.how, (": " + "; ".join(p.lines)) if p.lines else "")]
        out.append("")
    out += ["To undo: remove the installed files (and the unit: systemctl disable",
            "tern-doctor-steering.service), then reboot; `tern doctor --revert` restores the",
            "runtime values that `tern doctor --apply` saved.", ""]
    return "\n".join(out)
