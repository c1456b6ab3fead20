"""tern doctor: is this host set up to give trustworthy network numbers?

Layout (one job per module):
  host.py      file access under --root, program runners (real / fixture)
  procfs.py    parsers for /proc and /sys formats
  ethtool.py   ethtool queries and their parsers
  facts.py     shared facts: CPUs, L3 groups, IRQs of an interface
  model.py     Finding, Action, severities, profiles
  checks/      the checks, one module per area
  during.py    --during: counter snapshots and deltas
  rate.py      line-rate and PCIe arithmetic, `tern doctor rate`
  report.py    JSON document and terminal table
  apply.py     --apply / --revert with a state file
  cli.py       argument parsing and orchestration
"""
HELP = "audit the host for settings that distort network benchmarks (tern doctor --help)"


def main(argv):
    from .cli import main as cli_main
    return cli_main(argv)
