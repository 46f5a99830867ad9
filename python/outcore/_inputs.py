"""Graphs in: numpy edge arrays, scipy sparse matrices, networkx graphs and
pandas DataFrames written as binary edge files for ``outcore ingest``.

Each input is streamed in chunks of ``CHUNK`` edges into a file in a temporary
directory beside the store being made (never a second copy of the edges in
memory): ``bin32``/``bin32w`` (u32 ids, f32 weights) when every id fits 32
bits, ``bin64`` for larger ids without weights, text otherwise. The ingest then
reads that file like any other input, within its own ``memory=`` budget.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .errors import InputError

#: Edges converted at a time (12 MiB of bin32w).
CHUNK = 1 << 20

U32_LIMIT = (1 << 32) - 1


def is_path(x: Any) -> bool:
    return isinstance(x, (str, bytes, os.PathLike))


class Converted:
    """What a converted input hands to the ingest."""

    def __init__(self, paths: list[str], options: dict[str, Any], labels: list | None = None):
        self.paths = paths
        self.options = options
        self.labels = labels


def convert(source: Any, tmp: str, *, weight: str | None, columns: tuple | None,
            remap: bool, vertices: int | None) -> Converted:
    """Turns ``source`` into input files for the ingest (see ``outcore.ingest``)."""
    if is_path(source):
        return Converted([os.fspath(source)], {})
    if isinstance(source, list) and source and all(is_path(p) for p in source):
        return Converted([os.fspath(p) for p in source], {})
    if _is_networkx(source):
        return _networkx(source, tmp, weight)
    if _is_scipy_sparse(source):
        return _sparse(source, tmp, remap, vertices)
    if _is_dataframe(source):
        return _dataframe(source, tmp, columns, weight, remap, vertices)
    if isinstance(source, tuple) and len(source) in (2, 3):
        src, dst = np.asarray(source[0]), np.asarray(source[1])
        w = np.asarray(source[2]) if len(source) == 3 else None
        return _arrays(src, dst, w, tmp, remap, vertices)
    raise InputError(
        "outcore.ingest reads a file path or a list of them, a (src, dst[, weight]) tuple "
        f"of arrays, a scipy sparse matrix, a networkx graph or a pandas DataFrame; not {type(source).__name__}"
    )


def _is_networkx(x: Any) -> bool:
    return hasattr(x, "is_directed") and hasattr(x, "adj") and hasattr(x, "nodes")


def _is_scipy_sparse(x: Any) -> bool:
    try:
        import scipy.sparse as sp
    except ImportError:
        return False
    return sp.issparse(x)


def _is_dataframe(x: Any) -> bool:
    return hasattr(x, "columns") and hasattr(x, "iloc") and hasattr(x, "to_numpy")


def _ids(a: np.ndarray, what: str) -> np.ndarray:
    """Integer ids as unsigned 64-bit, refusing negative or fractional ones."""
    if a.dtype.kind == "u":
        return a
    if a.dtype.kind == "i":
        if a.size and a.min() < 0:
            raise InputError(f"{what} holds a negative vertex id ({int(a.min())}); ids are 0 or more")
        return a
    if a.dtype.kind == "f":
        if a.size and (not np.all(np.isfinite(a)) or np.any(a != np.floor(a)) or a.min() < 0):
            raise InputError(f"{what} holds ids that are not whole numbers of 0 or more")
        return a
    if a.dtype.kind == "b":
        raise InputError(f"{what} is boolean; vertex ids are integers")
    raise InputError(
        f"{what} has dtype {a.dtype}; vertex ids are integers (map labels to integers first, "
        "or pass a networkx graph, whose labels are kept)"
    )


class _Writer:
    """Appends edges in one binary (or text) format chosen up front."""

    def __init__(self, tmp: str, max_id: int, weighted: bool):
        if max_id <= U32_LIMIT - 1:
            self.format = "bin32w" if weighted else "bin32"
            self.dtype = np.dtype([("u", "<u4"), ("v", "<u4")] + ([("w", "<f4")] if weighted else []))
        elif not weighted:
            self.format = "bin64"
            self.dtype = np.dtype([("u", "<u8"), ("v", "<u8")])
        else:
            self.format = "text"
            self.dtype = None
        self.weighted = weighted
        self.path = os.path.join(tmp, "edges." + self.format)
        self.file = open(self.path, "wb")
        self.edges = 0

    def write(self, u: np.ndarray, v: np.ndarray, w: np.ndarray | None) -> None:
        n = len(u)
        if n == 0:
            return
        if self.dtype is None:
            ww = np.asarray(w, dtype=np.float32)
            lines = "".join(
                f"{a} {b} {float(c)!r}\n" for a, b, c in zip(u.tolist(), v.tolist(), ww.tolist())
            )
            self.file.write(lines.encode())
        else:
            rec = np.empty(n, dtype=self.dtype)
            rec["u"] = u
            rec["v"] = v
            if self.weighted:
                rec["w"] = np.ones(n, dtype=np.float32) if w is None else w
            rec.tofile(self.file)
        self.edges += n

    def close(self) -> None:
        self.file.close()


def _arrays(src, dst, w, tmp, remap, vertices, what=("src", "dst")) -> Converted:
    if src.ndim != 1 or dst.ndim != 1 or len(src) != len(dst):
        raise InputError(f"{what[0]} and {what[1]} must be 1-D arrays of the same length "
                         f"(got shapes {src.shape} and {dst.shape})")
    if w is not None and (w.ndim != 1 or len(w) != len(src)):
        raise InputError(f"the weights must be a 1-D array as long as {what[0]} (got shape {w.shape})")
    src, dst = _ids(src, what[0]), _ids(dst, what[1])
    if w is not None:
        if w.dtype.kind not in "fiub":
            raise InputError(f"the weights have dtype {w.dtype}; numbers are needed")
        if w.size and not np.all(np.isfinite(w)):
            raise InputError("the weights hold NaN or infinity")
    max_id = int(max(src.max(initial=0), dst.max(initial=0))) if len(src) else 0
    out = _Writer(tmp, max_id, w is not None)
    try:
        for a in range(0, len(src), CHUNK):
            b = a + CHUNK
            out.write(src[a:b], dst[a:b], None if w is None else w[a:b])
    finally:
        out.close()
    return Converted([out.path], _declared(out, max_id, remap, vertices))


def _declared(out: _Writer, max_id: int, remap: bool, vertices: int | None) -> dict:
    """Format, and the vertex count: every id up to the largest is a vertex
    (as in scipy), unless ids are remapped or the count is given."""
    opts: dict[str, Any] = {"format": out.format}
    if not remap and vertices is None and out.edges:
        opts["vertices"] = max_id + 1
    return opts


def _sparse(m, tmp, remap, vertices) -> Converted:
    """A sparse matrix: entry (i, j) is the edge i -> j with weight m[i, j]."""
    rows, cols = m.shape
    weighted = m.dtype.kind != "b"
    n = max(rows, cols)
    if m.format == "coo":
        w = m.data if weighted else None
        c = _arrays(np.asarray(m.row), np.asarray(m.col), w, tmp, remap, vertices, ("row", "col"))
    else:
        csr = m.tocsr()  # no copy for a CSR matrix
        out = _Writer(tmp, n - 1, weighted)
        try:
            indptr = csr.indptr
            step = max(1, rows * CHUNK // max(csr.nnz, 1))
            for a in range(0, rows, step):
                b = min(rows, a + step)
                lo, hi = int(indptr[a]), int(indptr[b])
                u = np.repeat(np.arange(a, b, dtype=np.uint64), np.diff(indptr[a:b + 1]))
                w = csr.data[lo:hi] if weighted else None
                if w is not None and w.size and not np.all(np.isfinite(w)):
                    raise InputError("the matrix holds NaN or infinity")
                out.write(u, csr.indices[lo:hi], w)
        finally:
            out.close()
        c = Converted([out.path], {"format": out.format})
    if not remap and vertices is None:
        c.options["vertices"] = n
    return c


def _dataframe(df, tmp, columns, weight, remap, vertices) -> Converted:
    names = list(df.columns)
    if columns is not None:
        pick = list(columns)
    elif "source" in names and "target" in names:
        pick = ["source", "target"] + ([weight] if weight and weight in names else [])
    elif len(names) in (2, 3):
        pick = names
    else:
        raise InputError(
            f"the DataFrame has columns {names}: name them source, target[, weight] "
            "or pass columns=(source, target[, weight])"
        )
    missing = [c for c in pick if c not in names]
    if missing:
        raise InputError(f"the DataFrame has no column {missing[0]!r} (it has {names})")
    arrays = [df[c].to_numpy() for c in pick]
    return _arrays(arrays[0], arrays[1], arrays[2] if len(arrays) == 3 else None, tmp,
                   remap, vertices, (str(pick[0]), str(pick[1])))


def _chunks(items):
    """Lists of up to CHUNK items."""
    chunk = []
    for x in items:
        chunk.append(x)
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _networkx(g, tmp, weight) -> Converted:
    """A networkx graph: vertex k is the k-th node of ``g.nodes`` (its label is
    kept by the Store, and results are keyed by labels); an undirected graph is
    stored with both directions of every edge."""
    labels = list(g.nodes())
    index = {x: k for k, x in enumerate(labels)}
    weighted = bool(weight) and any(weight in d for _, _, d in g.edges(data=True))
    out = _Writer(tmp, max(len(labels) - 1, 0), weighted)
    try:
        edges = g.edges(data=weight, default=1.0) if weighted else g.edges(data=False)
        for chunk in _chunks(edges):
            cols = list(zip(*chunk))
            out.write(np.fromiter((index[x] for x in cols[0]), np.uint64, len(chunk)),
                      np.fromiter((index[x] for x in cols[1]), np.uint64, len(chunk)),
                      np.asarray(cols[2], dtype=np.float32) if weighted else None)
    finally:
        out.close()
    opts: dict[str, Any] = {"format": out.format, "vertices": len(labels)}
    if not g.is_directed():
        opts["undirected"] = True
    return Converted([out.path], opts, labels)
