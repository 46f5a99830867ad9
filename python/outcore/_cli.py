"""Calling the command line's commands in-process (the native module)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Callable, Iterable, Sequence

from . import _native
from .errors import from_failure


def flag(name: str) -> str:
    """``out_format`` -> ``--out-format``."""
    return "--" + name.replace("_", "-")


def options_to_args(options: dict[str, Any]) -> list[str]:
    """Keyword arguments as command-line options: ``True`` is a bare flag,
    ``False`` and ``None`` are left out, a list or tuple is joined by commas,
    anything else is its ``str``."""
    args: list[str] = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag(name))
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(x) for x in value)
        elif isinstance(value, os.PathLike):
            value = os.fspath(value)
        args += [flag(name), str(value)]
    return args


class _Bar:
    """A tqdm bar fed by the command's progress (tqdm.auto: notebooks too)."""

    def __init__(self) -> None:
        from tqdm.auto import tqdm  # noqa: F401  (checked by the caller)

        self._tqdm = tqdm
        self._bar = None
        self._label = None

    def __call__(self, label: str, position: int, length: int, message: str) -> None:
        if label != self._label or self._bar is None:
            self.close()
            self._label = label
            self._bar = self._tqdm(total=length or None, desc=label, leave=False)
        bar = self._bar
        if length and bar.total != length:
            bar.total = length
        bar.n = position
        if message:
            bar.set_postfix_str(message, refresh=False)
        bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _progress_bar(progress: bool | Callable | None):
    if callable(progress):
        return progress
    if progress is False:
        return None
    try:
        import tqdm.auto  # noqa: F401
    except ImportError:
        if progress:
            raise ImportError("progress=True needs tqdm: pip install tqdm") from None
        return None
    if progress is None and not _interactive():
        return None
    return _Bar()


def _interactive() -> bool:
    """Progress by default only where someone watches: a terminal or a notebook."""
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def call(command: str, positional: Sequence[str], options: dict[str, Any],
         progress: bool | Callable | None = None) -> None:
    """Runs ``outcore COMMAND POSITIONAL... --OPTIONS`` in this process.

    Raises the :mod:`outcore.errors` exception matching the failure, or
    KeyboardInterrupt when interrupted (after the command stopped cleanly).
    """
    args = [command, *[os.fspath(p) for p in positional], *options_to_args(options)]
    run_args(args, progress)


@contextlib.contextmanager
def _raising():
    """Turns the native module's CommandFailure into the matching exception."""
    try:
        yield
    except _native.CommandFailure as e:
        kind, message = e.args
        raise from_failure(kind, message) from None


def run_args(args: Iterable[str], progress: bool | Callable | None = None) -> None:
    """Runs the command with these exact arguments (without the program name)."""
    bar = _progress_bar(progress)
    try:
        with _raising():
            _native.run([str(a) for a in args], bar)
    finally:
        if isinstance(bar, _Bar):
            bar.close()


def native(fn, *args):
    """Calls a native helper, turning its failure into the matching exception."""
    with _raising():
        return fn(*args)
