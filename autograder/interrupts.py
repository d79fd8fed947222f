"""Ctrl-C, noted as well as raised, so that it is never lost and the command can say what it left behind."""

from __future__ import annotations

import signal
import sys


class Interrupts:
    """Ctrl-C as KeyboardInterrupt, never lost. Python raises it wherever the signal lands, and one that lands in
    an at-fork callback (logging's, around every ``os.fork``) or inside pytest (which turns it into an exit code)
    is not seen by the caller: the batch then graded on to the end and exited 0. The handler also notes it
    (``seen``), and ``check`` raises it again. Used as a context manager, it puts the previous handler back."""

    def __init__(self) -> None:
        self.seen = False
        self._previous = signal.signal(signal.SIGINT, self._handle)
        self._unraisable = sys.unraisablehook
        sys.unraisablehook = self._ignored

    def _handle(self, signum, frame) -> None:
        if self.seen:  # raised once: a second Ctrl-C does not cut short the clean-up the first one started
            return
        self.seen = True
        raise KeyboardInterrupt

    def _ignored(self, unraisable) -> None:
        """The interrupt is raised again by ``check``: no "Exception ignored" traceback for it on the way."""
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            self._unraisable(unraisable)

    def check(self) -> None:
        if self.seen:
            raise KeyboardInterrupt

    def restore(self) -> None:
        signal.signal(signal.SIGINT, self._previous)
        sys.unraisablehook = self._unraisable

    def __enter__(self) -> Interrupts:
        return self

    def __exit__(self, *exc) -> None:
        self.restore()
