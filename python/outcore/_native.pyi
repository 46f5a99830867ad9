"""Type stubs of the compiled module (crates/py)."""

from typing import Callable, Optional, Sequence

class CommandFailure(Exception):
    """args: (kind, message); kind one of input, damaged, budget, io, verify, other."""

def run(
    args: Sequence[str],
    progress: Optional[Callable[[str, int, int, str], None]] = None,
) -> None:
    """Runs `outcore ARGS...` in-process (GIL released; Ctrl-C stops it cleanly)."""

def info_json(path: str, verify: bool = True) -> str:
    """`outcore info --json PATH` as a JSON string."""

def degrees(path: str, direction: str) -> bytes:
    """Out- or in-degrees in dense order, little-endian u32."""

def user_ids(path: str) -> bytes:
    """Every vertex's user id in dense order, little-endian u64."""

def version() -> str:
    """The version of the crates the module was built from."""
