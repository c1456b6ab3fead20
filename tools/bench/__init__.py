"""tern bench: tern beside the Linux kernel and smoltcp, with plots.

Layout (one job per module):
  cli.py        flags, validation, orchestration of one run
  matrix.py     the points to run (stack x workload x cores x conns x size x poll)
  stacks.py     the stacks: how each runs each workload, and whether it can
  procs.py      running programs: timeouts, servers in the background, CPU use
  netns.py      the veth test hosts (tools/netns.sh) for the veth stacks, and
                what the namespace benches churn, flood, loss share: processes
                in the hosts, their cleanup, the JSON result file
  wrk.py        the HTTP client (wrk) and the 151-byte response sizing
  measure.py    one point: warm-up, repeats, CPU cost, summary
  callgrind.py  instructions per request for the in-memory stacks
  stats.py      median, quartiles, min/max
  hostinfo.py   machine, git commit, the doctor's JSON, load
  schema.py     the result document's shape (and `tern bench validate`)
  markdown.py   the Markdown tables
  plots.py      the PNG plots (matplotlib; runs under a Python that has it)
  progress.py   progress lines on stderr
"""
HELP = "benchmark tern beside the Linux kernel and smoltcp (tern bench --help)"


def main(argv):
    from .cli import main as cli_main
    return cli_main(argv)
