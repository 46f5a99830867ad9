"""The exceptions outcore raises.

Every failure of a command is an :class:`OutcoreError` carrying the message the
``outcore`` command line prints; its subclass says what went wrong. Ctrl-C
during a call raises :class:`KeyboardInterrupt` after the command has stopped
and removed its temporaries (no store or result is left half-written).
"""

from __future__ import annotations


class OutcoreError(Exception):
    """A command failed. ``kind`` is one of input, damaged, budget, io, verify, other."""

    kind: str = "other"

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind


class InputError(OutcoreError, ValueError):
    """Bad arguments or bad input data: a malformed line (with file and line),
    an id out of range, a negative weight where none is allowed, an unknown
    option, a path that is not a store."""

    kind = "input"


class StoreDamagedError(OutcoreError):
    """A store file is damaged or truncated (its checksum fails); the message
    names the file and what to run to mend it."""

    kind = "damaged"


class BudgetError(OutcoreError, MemoryError):
    """``memory=`` is too small for the call; the message says what it needs."""

    kind = "budget"


class OutcoreIOError(OutcoreError, OSError):
    """The operating system refused a read or write (a full disk, permissions)."""

    kind = "io"


class VerificationError(OutcoreError):
    """An independent check of a result (``verify=True``) failed."""

    kind = "verify"


_BY_KIND = {
    "input": InputError,
    "damaged": StoreDamagedError,
    "budget": BudgetError,
    "io": OutcoreIOError,
    "verify": VerificationError,
}


def from_failure(kind: str, message: str) -> OutcoreError:
    """The exception for a failure of the given kind."""
    return _BY_KIND.get(kind, OutcoreError)(message, kind)
