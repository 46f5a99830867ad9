"""Stores, results and the functions that make and run them."""

from __future__ import annotations

import builtins as _builtins
import json
import os
import tempfile
from typing import Any, Iterable, Sequence

import numpy as np

from . import _cli, _inputs, _native
from .errors import InputError

#: The value of a vertex that BFS did not reach (``Result.values`` of bfs and diam).
UNREACHED = np.iinfo(np.int64).max


class Result:
    """One algorithm's answer: a value per vertex, keyed by the user's ids.

    Attributes
    ----------
    algorithm : str
        The algorithm that ran (``"bfs"``, ``"pagerank"``, ...).
    ids : numpy.ndarray of uint64
        The user's id of each row, ascending (the dense vertex order unless the
        store was relabelled with ``reorder``).
    values : numpy.ndarray
        The value of each row: BFS levels (int64, :data:`UNREACHED` when not
        reached), SSSP distances (float64, ``inf`` when not reached), component
        labels (uint64: the smallest id in the component), 0/1 flags (mis),
        ranks or centralities (float64).
    parents : numpy.ndarray of int64 or None
        BFS/SSSP parents in user ids (-1: none) when ``parents=True`` was given;
        always for mcst (each vertex's forest parent).
    stats : dict
        What ``outcore run --stats`` writes: engine, iterations, bytes read and
        written, seconds, peak memory, the engine choice and its reason.
    labels : list or None
        The networkx node of each row, when the store was ingested from a
        networkx graph by this process (then ``ids`` are node positions).
    """

    def __init__(self, algorithm: str, table: np.ndarray, stats: dict, labels: list | None = None):
        self.algorithm = algorithm
        # Views of the result file mapped copy-on-write (mmap_mode="c"):
        # nothing is read or copied until used, and the pages are the file's,
        # which the kernel may drop and read again (the file's name is gone,
        # its data stays while the arrays live).
        self.ids = table["id"]
        self.values = table["value"]
        self.parents = table["parent"] if "parent" in (table.dtype.names or ()) else None
        self.stats = stats
        self.labels = labels

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        extra = f", summary={self.stats.get('summary')!r}" if self.stats.get("summary") else ""
        return f"<outcore.Result {self.algorithm}: {len(self)} vertices{extra}>"

    @property
    def summary(self) -> str:
        """The run's one-line summary (as ``outcore run`` prints it)."""
        return str(self.stats.get("summary", ""))

    def keys(self) -> list:
        """The row keys: networkx labels when known, else the user's ids (ints)."""
        if self.labels is not None:
            return [self.labels[int(i)] for i in self.ids]
        return self.ids.tolist()

    def to_dict(self) -> dict:
        """``{id or label: value}``, values as Python numbers (BFS levels of
        unreached vertices are left out, as networkx leaves them out)."""
        vals = self.values.tolist()
        keys = self.keys()
        if self.algorithm in ("bfs", "diam"):
            return {k: v for k, v in zip(keys, vals) if v != UNREACHED}
        if self.algorithm == "sssp":
            return {k: v for k, v in zip(keys, vals) if v != float("inf")}
        return dict(zip(keys, vals))

    def to_pandas(self):
        """A DataFrame with columns ``id``, ``value`` (and ``parent``; ``label``
        for a networkx graph's nodes)."""
        import pandas as pd

        cols: dict[str, Any] = {"id": self.ids, "value": self.values}
        if self.parents is not None:
            cols["parent"] = self.parents
        df = pd.DataFrame(cols)
        if self.labels is not None:
            df["label"] = self.keys()
        return df

    def to_networkx(self, graph, name: str | None = None):
        """Sets node attribute ``name`` (default: the algorithm's name) of
        ``graph`` to each vertex's value and returns the graph. Nodes are matched
        by label (a graph ingested from networkx) or by integer id."""
        import networkx as nx

        nx.set_node_attributes(graph, self.to_dict(), name or self.algorithm.replace("-", "_"))
        return graph


_RUN_OPTIONS = """

        Options (every ``outcore run`` option, underscores for dashes):
            memory: the call's budget, e.g. "512M" (default "1G"); the engine is
                chosen to fit it, or the call raises BudgetError at once.
            engine: "stream", "external", "sortreduce" or "vertex" (default: the
                streaming engine when the vertex state fits ``memory``, else external).
            threads: worker threads (default: one per core).
            verify: check the result independently (raises VerificationError).
            mrt, direct, work_dir, mapped_state, order, edge_reads: the streaming
                and external engines' settings; page_size, cache_split, policy, k,
                queue_depth, max_request, buffered: the vertex engine's.
            progress: True / False / a callable(label, position, length, message).

        Returns a Result (ids, values, stats, to_pandas(), to_dict(), to_networkx()).
        Ctrl-C stops the call cleanly (KeyboardInterrupt).
    """


def _with_run_options(cls):
    for name in ("run", "bfs", "sssp", "wcc", "wcc_lp", "mis", "mis_luby", "pagerank",
                 "pagerank_delta", "spmv", "conductance", "mis_gas", "scc", "bp", "mcst", "diam", "bc",
                 "apsp"):
        fn = getattr(cls, name)
        fn.__doc__ = (fn.__doc__ or "").rstrip() + _RUN_OPTIONS
    return cls


@_with_run_options
class Store:
    """An outcore store on disk: a graph ingested once, read by every algorithm.

    Make one with :func:`outcore.ingest`, open one with :func:`outcore.open`.
    The algorithm methods run ``outcore run ALGO`` on it and return a
    :class:`Result`; every keyword argument of ``outcore run`` is accepted
    (underscores for dashes): ``memory="512M"`` (the whole call's budget; the
    engine is chosen to fit it), ``engine="stream" | "external" | "sortreduce" |
    "vertex"``, ``threads=2``, ``mrt=5``, ``verify=True``, ``direct=True``,
    ``work_dir=...``, and the vertex engine's ``cache_split="5%,20%"``,
    ``policy="gvs"``, ``page_size=8192``. ``progress=`` shows a tqdm bar (by
    default when tqdm is installed and someone watches: a terminal or notebook).
    """

    def __init__(self, path: str | os.PathLike, labels: list | None = None):
        self.path = os.fspath(path)
        self.labels = labels
        self._manifest = _read_manifest(self.path)
        self._index: dict | None = None

    def __repr__(self) -> str:
        return f"<outcore.Store {self.path!r}: {self.num_vertices} vertices, {self.num_edges} edges>"

    # ---- facts -------------------------------------------------------------

    @property
    def num_vertices(self) -> int:
        """The number of vertices."""
        return int(self._manifest["vertices"])

    @property
    def num_edges(self) -> int:
        """The number of edges as stored (an undirected ingest stores both directions)."""
        return int(self._manifest["edges"])

    @property
    def weighted(self) -> bool:
        """Whether the store keeps edge weights."""
        return bool(self._manifest.get("weighted"))

    def info(self, verify: bool = True) -> dict:
        """What ``outcore info --json`` reports: counts, degree histograms, grid
        blocks, files and (with ``verify``) whether every checksum holds.

        Raises StoreDamagedError naming the damaged files."""
        return json.loads(_cli.native(_native.info_json, self.path, verify))

    def degrees(self, direction: str = "out") -> np.ndarray:
        """Out- (``"out"``) or in-degrees (``"in"``), uint32, in dense order
        (row ``k`` is the vertex whose user id is ``ids()[k]``)."""
        raw = _cli.native(_native.degrees, self.path, direction)
        return np.frombuffer(raw, dtype="<u4").copy()

    def ids(self) -> np.ndarray:
        """The user's id of every vertex, uint64, in dense order."""
        return np.frombuffer(_cli.native(_native.user_ids, self.path), dtype="<u8").copy()

    # ---- algorithms ---------------------------------------------------------

    def run(self, algorithm: str, progress: Any = None, **options: Any) -> Result:
        """Runs ``outcore run ALGORITHM`` with these options and returns its result.

        A ``root`` given as a networkx node label is translated for a store
        ingested from networkx in this process."""
        if "root" in options and options["root"] is not None:
            options["root"] = self._vertex_id(options["root"])
        if options.get("out") is not None or options.get("stats") is not None:
            raise InputError("out= and stats= are chosen by the Python package; use Result.values and Result.stats")
        work = options.get("work_dir")
        with tempfile.TemporaryDirectory(prefix="outcore-result-", dir=work) as tmp:
            out = os.path.join(tmp, "result.npy")
            stats = os.path.join(tmp, "stats.json")
            _cli.call("run", [algorithm, self.path], {**options, "out": out, "stats": stats}, progress)
            table = _load(out)
            with _builtins.open(stats) as f:
                st = json.load(f)
        return Result(algorithm, table, st, self.labels)

    def bfs(self, root: Any, *, parents: bool = False, progress: Any = None, **options: Any) -> Result:
        """Breadth-first search from ``root`` (a user id, or a networkx node):
        each vertex's level (:data:`UNREACHED` when not reached), and with
        ``parents=True`` its parent in the tree. Runs on every engine
        (``engine="stream" | "external" | "sortreduce" | "vertex"``)."""
        return self.run("bfs", progress, root=root, parents=parents, **options)

    def sssp(self, root: Any, *, parents: bool = False, progress: Any = None, **options: Any) -> Result:
        """Single-source shortest paths over the edge weights (1 when the store
        has none; negative weights are refused): each vertex's distance (``inf``
        when not reached), and with ``parents=True`` its parent."""
        return self.run("sssp", progress, root=root, parents=parents, **options)

    def wcc(self, *, progress: Any = None, **options: Any) -> Result:
        """Weakly connected components (one-pass union-find): each vertex's
        label is the smallest id in its component."""
        return self.run("wcc", progress, **options)

    def wcc_lp(self, *, progress: Any = None, **options: Any) -> Result:
        """Connected components by label propagation (same labels as ``wcc``;
        the form the external engine runs, on a store ingested undirected)."""
        return self.run("wcc-lp", progress, **options)

    def mis(self, *, progress: Any = None, **options: Any) -> Result:
        """A maximal independent set (greedy by id): 1 for members, 0 otherwise."""
        return self.run("mis", progress, **options)

    def mis_luby(self, *, seed: int = 1, progress: Any = None, **options: Any) -> Result:
        """A maximal independent set by Luby's randomized rounds (``seed``)."""
        return self.run("mis-luby", progress, seed=seed, **options)

    def pagerank(self, *, iterations: int = 10, damping: float = 0.85, progress: Any = None,
                 **options: Any) -> Result:
        """PageRank, ``iterations`` rounds (ranks sum to 1; dangling vertices'
        rank spread evenly)."""
        return self.run("pagerank", progress, iterations=iterations, damping=damping, **options)

    def pagerank_delta(self, *, tolerance: float = 1e-7, damping: float = 0.85, progress: Any = None,
                       **options: Any) -> Result:
        """PageRank by pushing rank deltas until the pending mass is below ``tolerance``."""
        return self.run("pagerank-delta", progress, tolerance=tolerance, damping=damping, **options)

    def spmv(self, *, iterations: int = 1, progress: Any = None, **options: Any) -> Result:
        """Sparse matrix-vector product x <- A^T x from x = 1, ``iterations`` times."""
        return self.run("spmv", progress, iterations=iterations, **options)

    def mis_gas(self, *, seed: int = 1, progress: Any = None, **options: Any) -> Result:
        """A maximal independent set by Luby's rounds written as an edge program
        (the form the external and distributed engines run; needs a store
        holding both directions, e.g. ingested undirected)."""
        return self.run("mis-gas", progress, seed=seed, **options)

    def scc(self, *, progress: Any = None, **options: Any) -> Result:
        """Strongly connected components: each vertex's value is the smallest id
        (label) of its component. Needs a store ingested with
        ``with_reverse=True`` (the algorithm follows edges backwards)."""
        return self.run("scc", progress, **options)

    def mcst(self, *, progress: Any = None, **options: Any) -> Result:
        """A minimum cost spanning forest (Borůvka's rounds): for each vertex,
        ``values`` holds the weight of its forest edge and ``parents`` the other
        end (a tree's root: weight 0, parent -1). Needs a store holding both
        directions (ingested undirected); negative weights are fine."""
        return self.run("mcst", progress, **options)

    def bp(self, *, coupling: float = 0.001, seed: int = 1, progress: Any = None,
           **options: Any) -> Result:
        """Belief propagation, linearized (Gatterbauer et al., VLDB 2015; two
        classes, homophily ``coupling`` h): values are each vertex's belief in
        class 1 from priors a ``seed`` gives a tenth of the vertices; runs until
        ``tolerance`` (L1) or ``iterations`` (default 100). Converges when
        2h(1 + 2h) times the largest degree is below 1. Needs a store holding
        both directions."""
        return self.run("bp", progress, coupling=coupling, seed=seed, **options)

    def conductance(self, *, seed: int = 1, progress: Any = None, **options: Any) -> Result:
        """Conductance of the vertex set a seed draws at random: values are 1 for
        its members; ``result.summary`` holds the conductance, the cut and both
        out-degree volumes."""
        return self.run("conductance", progress, seed=seed, **options)

    def diam(self, *, rounds: int = 2, progress: Any = None, **options: Any) -> Result:
        """A lower bound of the diameter by repeated BFS sweeps (vertex engine);
        ``result.stats["diameter"]`` holds it, values are the last sweep's levels."""
        options.setdefault("engine", "vertex")
        return self.run("diam", progress, rounds=rounds, **options)

    def bc(self, *, sources: int = 64, seed: int = 1, progress: Any = None, **options: Any) -> Result:
        """Betweenness centrality estimated from ``sources`` sampled sources
        (Brandes; vertex engine)."""
        options.setdefault("engine", "vertex")
        return self.run("bc", progress, sources=sources, seed=seed, **options)

    def apsp(self, *, sources: int = 64, seed: int = 1, progress: Any = None, **options: Any) -> Result:
        """Bit-parallel BFS from ``sources`` sampled sources (vertex engine);
        values are each vertex's summed distance to the sources it reaches."""
        options.setdefault("engine", "vertex")
        return self.run("apsp", progress, sources=sources, seed=seed, **options)

    # ---- derived layouts ----------------------------------------------------

    def reorder(self, out: str | os.PathLike, order: str = "norder", *, progress: Any = None,
                **options: Any) -> "Store":
        """A relabelled copy (``order`` norder, degree or random) for the vertex
        engine, written to ``out``; results stay in the user's ids."""
        _cli.call("reorder", [self.path], {"out": out, "order": order, **options}, progress)
        return Store(out, self.labels)

    def select_cache(self, policy: str = "gvs", size: str = "20%", *, progress: Any = None,
                     **options: Any) -> None:
        """Computes and saves the vertex engine's static-cache selection
        (``policy`` gvs, gvs-page, lowd, highd, random; ``size`` a size or a
        percentage of the CSR)."""
        _cli.call("select-cache", [self.path], {"policy": policy, "size": size, **options}, progress)

    def partition(self, *, vertex_memory: str | None = None, partitions: int | None = None,
                  progress: Any = None, **options: Any) -> None:
        """Builds the external engine's V-Part layout (done automatically by the
        first external run)."""
        _cli.call("partition", [self.path],
                  {"vertex_memory": vertex_memory, "partitions": partitions, **options}, progress)

    def _vertex_id(self, x: Any) -> int:
        if self.labels is None:
            if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
                raise InputError(f"root must be an integer vertex id, not {x!r}")
            return int(x)
        if self._index is None:
            self._index = {v: k for k, v in enumerate(self.labels)}
        if x not in self._index:
            raise InputError(f"{x!r} is not a node of the graph this store was ingested from")
        return self._index[x]


def _load(path: str) -> np.ndarray:
    """A result file, mapped copy-on-write (an empty one, which cannot be
    mapped, read)."""
    try:
        return np.load(path, mmap_mode="c")
    except ValueError:
        return np.load(path)


def _read_manifest(path: str) -> dict:
    manifest = os.path.join(path, "manifest.json")
    try:
        with _builtins.open(manifest) as f:
            return json.load(f)
    except FileNotFoundError:
        raise InputError(f"{path}: not an outcore store (no manifest.json)") from None
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read its manifest: {e}") from None


def open(path: str | os.PathLike) -> Store:  # noqa: A001  (outcore.open, like gzip.open)
    """Opens the store at ``path`` (made by ``outcore ingest`` or :func:`ingest`)."""
    return Store(path)


def ingest(source: Any, path: str | os.PathLike, *, weight: str | None = "weight",
           columns: Sequence[str] | None = None, progress: Any = None, **options: Any) -> Store:
    """Ingests a graph into a new store at ``path`` and opens it.

    ``source`` is
      * a file path or a list of them (text, CSV, DIMACS, Matrix Market, bin32,
        bin32w, bin64; gzip allowed),
      * a ``(src, dst)`` or ``(src, dst, weight)`` tuple of numpy arrays,
      * a scipy sparse matrix (entry (i, j) is the edge i -> j, its value the weight),
      * a networkx graph (node labels kept: results are keyed by them; an
        undirected graph stores both directions; edge attribute ``weight``),
      * a pandas DataFrame with columns ``source``, ``target`` [, ``weight``] (or
        ``columns=(...)`` naming them).

    Array-like inputs are written in chunks to a binary edge file beside
    ``path`` (never copied whole in memory) and every id up to the largest is a
    vertex, unless ``remap=True`` (arbitrary ids renumbered densely; results
    still in your ids) or ``vertices=N`` is given. Every option of
    ``outcore ingest`` is accepted: ``undirected``, ``with_reverse`` (each
    edge's reverse stored, marked: what ``scc`` needs), ``weighted``,
    ``no_weights``, ``remap``, ``dedup``, ``drop_self_loops``,
    ``memory="1G"``, ``partitions``, ``vertices``, ``in_edges``, ``force``,
    ``tmp_dir``, ``threads``, ``order``, ``format``.
    """
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    tmp_parent = options.get("tmp_dir") or parent
    with tempfile.TemporaryDirectory(prefix=".outcore-input-", dir=tmp_parent) as tmp:
        conv = _inputs.convert(source, tmp, weight=weight, columns=tuple(columns) if columns else None,
                               remap=bool(options.get("remap")), vertices=options.get("vertices"))
        _cli.call("ingest", conv.paths, {"out": path, **conv.options, **options}, progress)
    return Store(path, conv.labels)


def generate(kind: str, path: str | os.PathLike, *, progress: Any = None, **options: Any) -> str:
    """Writes a synthetic graph file and returns its path: ``kind`` kronecker
    (``scale=``, ``edge_factor=16``), grid (``rows=``, ``cols=``), uniform
    (``vertices=``, ``edges=``) or path (``vertices=``); ``seed``, ``weighted``,
    ``text``, ``force``, ``threads`` as ``outcore generate`` takes them. The file
    is bin32 (bin32w with ``weighted=True``; SNAP text with ``text=True``)."""
    _cli.call("generate", [kind], {"out": path, **options}, progress)
    return os.fspath(path)


def jobs(store: Store | str | os.PathLike, specs: Iterable[str], *, progress: Any = None,
         **options: Any) -> list[Result]:
    """Runs several jobs sharing one scan of the store (``outcore jobs``):
    ``specs`` like ``["bfs:root=0", "sssp:root=5", "wcc", "pagerank:iterations=5"]``.
    Returns one :class:`Result` per job, in order; each one's ``stats`` is the
    whole call's statistics (shared I/O, groups). Options as ``outcore jobs``
    takes them (``memory``, ``threads``, ``io_mode``, ``verify``, ...)."""
    st = store if isinstance(store, Store) else Store(store)
    specs = list(specs)
    if not specs:
        raise InputError("jobs needs at least one job spec, e.g. 'bfs:root=0'")
    with tempfile.TemporaryDirectory(prefix="outcore-jobs-", dir=options.get("work_dir")) as tmp:
        stats = os.path.join(tmp, "stats.json")
        _cli.call("jobs", [st.path, *specs],
                  {**options, "out_dir": tmp, "out_format": "npy", "stats": stats}, progress)
        with _builtins.open(stats) as f:
            st_json = json.load(f)
        results = []
        for k, spec in enumerate(specs):
            algo = spec.split(":", 1)[0]
            table = _load(os.path.join(tmp, f"job-{k}-{algo}.npy"))
            results.append(Result(algo, table, st_json, st.labels))
    return results
