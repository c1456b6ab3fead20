"""Progress on stderr: one line per step, rewritten in place on a terminal."""
import sys
import time


class Progress:
    def __init__(self, total, quiet=False, stream=None):
        self.total = total
        self.done = 0
        self.quiet = quiet
        self.out = stream or sys.stderr
        self.tty = self.out.isatty()
        self.t0 = time.monotonic()
        self._open = False

    def _stamp(self):
        s = int(time.monotonic() - self.t0)
        return "%d:%02d" % (s // 60, s % 60)

    def status(self, label, detail=""):
        """Where we are: [done/total] label detail (replaced on a tty)."""
        if self.quiet:
            return
        line = "[%s %d/%d] %s %s" % (self._stamp(), self.done + 1, self.total, label, detail)
        if self.tty:
            self.out.write("\r\033[K" + line[:150])
            self._open = True
        else:
            self.out.write(line + "\n")
        self.out.flush()

    def finish(self, label, result):
        """A step is over: one permanent line with its result."""
        self.done += 1
        if self.quiet:
            return
        if self._open:
            self.out.write("\r\033[K")
            self._open = False
        self.out.write("[%s %d/%d] %s: %s\n" % (self._stamp(), self.done, self.total, label, result))
        self.out.flush()

    def note(self, msg):
        if self.quiet:
            return
        if self._open:
            self.out.write("\r\033[K")
            self._open = False
        self.out.write("bench: %s\n" % msg)
        self.out.flush()
