"""outcore — out-of-core graph processing from Python.

Graphs larger than memory, processed from disk by the same engines as the
``outcore`` command line (the package runs its commands in-process):

>>> import outcore
>>> path = outcore.generate("kronecker", "k16.bin32", scale=16)
>>> g = outcore.ingest(path, "k16.store", undirected=True, memory="256M")
>>> levels = g.bfs(root=0, memory="64M")          # numpy values, user ids
>>> ranks = g.pagerank(iterations=10).to_pandas()

Inputs: files, numpy edge arrays, scipy sparse matrices, networkx graphs and
pandas DataFrames (:func:`ingest`). Results: :class:`Result` with numpy
``ids``/``values``, ``to_pandas()``, ``to_dict()``, ``to_networkx()`` and the
run's ``stats``. Long calls release the GIL, show a tqdm bar when tqdm is
installed, and stop cleanly on Ctrl-C (KeyboardInterrupt). Failures raise
:class:`OutcoreError` subclasses carrying the command line's messages.
"""

from ._native import version as _version
from ._store import UNREACHED, Result, Store, generate, ingest, jobs, open
from .errors import (
    BudgetError,
    InputError,
    OutcoreError,
    OutcoreIOError,
    StoreDamagedError,
    VerificationError,
)
from ._cli import run_args as run_command

__version__ = _version()

__all__ = [
    "UNREACHED",
    "BudgetError",
    "InputError",
    "OutcoreError",
    "OutcoreIOError",
    "Result",
    "Store",
    "StoreDamagedError",
    "VerificationError",
    "generate",
    "ingest",
    "jobs",
    "open",
    "run_command",
]
