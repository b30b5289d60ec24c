"""numba kernels of the n-tuple agent: feature lookups, TD(0) afterstate training, expectimax play.

Boards are :mod:`engine.fast`'s packed ``uint64`` (cell (r, c) in nibble ``4*r + c``, nibble = exponent),
and every move / spawn goes through its kernels, so there is one move implementation in the studio.

The network, as flat arrays (built by :class:`agents.ntuple.TupleLayout`):

* ``w``: float32 weights, ``n_stages`` blocks of ``stage_size`` entries; tuple ``t``'s table starts at
  ``toff[t]`` inside a block and has ``16 ** tlen[t]`` entries (one per combination of exponents).
* ``ext``: how tuple ``t`` reads its cells off a board, applied to each of the board's 8 symmetric
  views (:func:`symmetries`): either ``runs[t]``, shift-and-mask runs of neighbouring cells
  (:func:`tuple_index`), or ``masks[t]``, the tuple's cells for one BMI2 ``pext`` where the CPU has a
  fast one (:func:`_view_indices`; :mod:`agents.ntuple.cpu` decides). All symmetries share the
  tuple's table, so a pattern learnt in one corner is known in all of them.
* ``tc``: with temporal coherence, each weight's error sum and absolute error sum side by side
  (``tc[2 i]``, ``tc[2 i + 1]``), so a TD update touches two cache lines per feature, not three.
* ``stage_thr``: exponents that open the next stage (multi-stage weights); a board is in stage
  ``#{e in stage_thr : max exponent >= e}``, capped at ``n_live - 1`` (stages not reached in training yet
  use the last reached one, which is what promotion would have copied into them).

Overflow: nibbles stop at 15 (32768). A move that would merge two 32768s (``engine.fast.overflows``) is
never applied here: training ends the game there as a truncation (the last afterstate is not pulled
towards 0 because the game did not end), evaluation records it as a game that reached 65536, and the
search values such a move at its reward alone. Only the agent's Python side plays on past 32768 (it
falls back to the general engine and caps exponents at 15 when reading features).

Reference counting: the hot kernels that allocate nothing (:func:`_greedy`, :func:`_learn_backward`,
:func:`_leaf_chance`, :func:`_search_walk`) are compiled with ``_nrt=False``. Elsewhere numba counts
references to every array an inlined helper receives, with an atomic increment on the way in and a
decrement on the way out; in a loop its pruning pass cannot remove them. Atomic operations are full
memory barriers, so besides their own cost they keep the processor from overlapping one board's
weight loads with the next: a profile of 2-ply play had a quarter of its samples in them. The callers
allocate the scratch (:func:`search_scratch`, ``gfeat``) and pass it in; an allocation added to one
of these kernels fails to compile ("NRT required but not enabled").
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.core.extending import intrinsic, overload

import engine.fast
from engine.fast import (
    ROW_LEFT,
    ROW_RIGHT,
    ROW_SCORE,
    best_move,
    count_empty,
    max_exponent,
    move,
    new_board,
    overflows,
    spawn,
    splitmix64,
    step_bits,
    transpose,
)


def _drop_stale_cache() -> None:
    """Forget this module's cached machine code when engine/fast.py has changed since it was built.

    numba's on-disk cache checks only the timestamp of the file that defines a function, but these
    kernels have engine.fast's kernels compiled into them: after an engine change the stale code
    would run (and may crash on a changed signature). A stamp of engine/fast.py kept beside the cache
    files tells when to drop them.
    """
    cache_dir = Path(__file__).resolve().parent / "__pycache__"
    try:
        digest = hashlib.sha1(Path(engine.fast.__file__).read_bytes()).hexdigest()
        stamp = cache_dir / f"{Path(__file__).stem}.engine-fast.stamp"
        if stamp.exists() and stamp.read_text() == digest:
            return
        for f in cache_dir.glob(f"{Path(__file__).stem}.*.nb[ic]"):
            f.unlink(missing_ok=True)
        cache_dir.mkdir(exist_ok=True)
        stamp.write_text(digest)
    except OSError:  # a read-only install: numba then caches elsewhere or not at all
        pass


_drop_stale_cache()

#: njit's option for the kernels compiled without reference counting (the module's note); spread as
#: ``**_NO_NRT`` because numba's type stubs do not list it
_NO_NRT: dict[str, Any] = {"_nrt": False}

_NIBBLE = np.uint64(15)
NEG_INF = -1e300
#: Move choice (1-ply, the search's root) takes the best *finite* value: NaN and infinities (a
#: diverged network) never win, and when no legal move has a finite value the first legal one is
#: played, as :meth:`agents.base.Agent.act` does, so a game always goes on to its end.
INF = np.inf


# ------------------------------------------------------------------------------------------ features


def _pext_intrinsic(typingctx, x, mask):
    """BMI2 ``pext``: the bits of ``x`` under ``mask``, packed into the low bits (LLVM's intrinsic).

    Compiled only into the kernels' ``pext`` specialisation (:func:`_view_indices`), which runs only
    where :mod:`agents.ntuple.cpu` found the instruction and found it fast.
    """
    sig = types.uint64(types.uint64, types.uint64)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i64, [i64, i64]), "llvm.x86.bmi.pext.64"
        )
        return builder.call(fn, args)

    return sig, codegen


def _prefetch_intrinsic(typingctx, arr, i):
    """Start loading the cache line of ``arr[i]`` (1-D, C order) without waiting for it (LLVM's
    portable ``llvm.prefetch``: a hint, nothing on CPUs without one)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(i, types.Integer)):
        return None
    sig = types.void(arr, types.intp)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # read (0), high temporal locality (3: into every cache level), data cache (1)
        builder.call(fn, [ptr, i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen


# Any: mypy would read the intrinsics' typing signatures (typingctx first) as their call signatures
_pext: Any = intrinsic(_pext_intrinsic)
_prefetch: Any = intrinsic(_prefetch_intrinsic)

_M_ROW0 = np.uint64(0x000F000F000F000F)
_M_ROW1 = np.uint64(0x00F000F000F000F0)
_W1 = np.uint64(0x0000FFFF00000000)
_W2 = np.uint64(0x00000000FFFF0000)


@njit(cache=True, inline="always")
def _mirror(b: np.uint64) -> np.uint64:
    """The board mirrored left-right (``np.fliplr``): the 4 cells of each row reversed."""
    return (
        ((b & _M_ROW0) << np.uint64(12))
        | ((b & _M_ROW1) << np.uint64(4))
        | ((b >> np.uint64(4)) & _M_ROW1)
        | ((b >> np.uint64(12)) & _M_ROW0)
    )


@njit(cache=True, inline="always")
def _flipud(b: np.uint64) -> np.uint64:
    """The board upside down (``np.flipud``): the four 16-bit rows in reverse order."""
    return (
        (b << np.uint64(48))
        | ((b << np.uint64(16)) & _W1)
        | ((b >> np.uint64(16)) & _W2)
        | (b >> np.uint64(48))
    )


@njit(cache=True, inline="always")
def symmetries(
    b: np.uint64,
) -> tuple[np.uint64, np.uint64, np.uint64, np.uint64, np.uint64, np.uint64, np.uint64, np.uint64]:
    """The 8 boards ``b`` seen through symmetry ``s`` (``np.rot90(grid, s % 4)``, then ``np.fliplr`` when
    ``s >= 4``; :func:`agents.ntuple.symmetry_cells`): cell ``p`` of board ``s`` is board cell
    ``symmetry_cells(s)[p]`` of ``b``. Eight bit tricks per board instead of one shift per cell of every
    tuple: a tuple's index is then a few masks of these boards (:func:`tuple_index`)."""
    b = np.uint64(b)  # callers may hold the board as a signed int (numba would mix them into floats)
    t = transpose(b)
    m = _mirror(b)
    r1 = _flipud(t)  # np.rot90 once: flipud of the transpose
    return (b, r1, _flipud(m), _mirror(t), m, _mirror(r1), _flipud(b), t)


_U1 = np.uint64(1)
_U63 = np.uint64(63)
_U64 = np.uint64(64)


@njit(cache=True, inline="always")
def _rotr(x: np.uint64, d: np.uint64) -> np.uint64:
    return (x >> d) | (x << ((_U64 - d) & _U63))


@njit(cache=True, inline="always")
def tuple_index(bs: np.uint64, runs: np.ndarray, t: int) -> np.int64:
    """Index into tuple ``t``'s table of the (already transformed) board ``bs``.

    Element ``i`` of the tuple is board cell ``cells[i]``, read into nibble ``i`` of the index.
    ``runs[t] = [n, d_0, m_0, d_1, m_1, ...]`` (:meth:`agents.ntuple.TupleLayout.arrays`) groups the
    elements whose cells follow each other on the board into ``n`` runs, each one rotation (right by
    ``d``) and one mask: the 4x6 tuples are 1 or 2 runs, not 6 cells.
    """
    idx = np.uint64(0)
    for r in range(runs[t, 0]):
        idx |= _rotr(bs, runs[t, 1 + 2 * r]) & runs[t, 2 + 2 * r]
    return np.int64(idx)


@njit(cache=True, inline="always")
def _idx3(
    x: np.uint64, d0: np.uint64, m0: np.uint64, d1: np.uint64, m1: np.uint64, d2: np.uint64, m2: np.uint64
) -> np.int64:
    return np.int64((_rotr(x, d0) & m0) | (_rotr(x, d1) & m1) | (_rotr(x, d2) & m2))


def _view_indices(bs, ext, t):
    """Tuple ``t``'s index in each of the 8 views ``bs``: the hot path of every kernel (jitted only).

    ``ext`` says how to read the features and picks the implementation when a kernel is compiled:
    a 2-D ``runs`` array (:meth:`agents.ntuple.TupleLayout.arrays`) is read by rotate-and-mask, a
    1-D array of cell masks (:meth:`agents.ntuple.TupleLayout.pext_masks`) by one BMI2 ``pext`` per
    view. Both give the same indices; the caller passes the masks only where :mod:`agents.ntuple.cpu`
    says ``pext`` is there and fast, so the ``pext`` specialisation is never compiled anywhere else.
    """
    raise NotImplementedError("only callable from jitted code")


def _rotate_view_indices(bs, ext, t):
    # Runs are read once per tuple, not per view, and the usual tuples (1 run, or 2-3: every built-in
    # layout) take a branch-free path where unused runs have mask 0; about 2x the speed of the general
    # loop of tuple_index, which serves tuples of more runs.
    n = ext[t, 0]
    if n == 1:
        d0 = ext[t, 1]
        m0 = ext[t, 2]
        return (
            np.int64(_rotr(bs[0], d0) & m0),
            np.int64(_rotr(bs[1], d0) & m0),
            np.int64(_rotr(bs[2], d0) & m0),
            np.int64(_rotr(bs[3], d0) & m0),
            np.int64(_rotr(bs[4], d0) & m0),
            np.int64(_rotr(bs[5], d0) & m0),
            np.int64(_rotr(bs[6], d0) & m0),
            np.int64(_rotr(bs[7], d0) & m0),
        )
    if n <= 3:
        d0, m0, d1, m1, d2, m2 = ext[t, 1], ext[t, 2], ext[t, 3], ext[t, 4], ext[t, 5], ext[t, 6]
        return (
            _idx3(bs[0], d0, m0, d1, m1, d2, m2),
            _idx3(bs[1], d0, m0, d1, m1, d2, m2),
            _idx3(bs[2], d0, m0, d1, m1, d2, m2),
            _idx3(bs[3], d0, m0, d1, m1, d2, m2),
            _idx3(bs[4], d0, m0, d1, m1, d2, m2),
            _idx3(bs[5], d0, m0, d1, m1, d2, m2),
            _idx3(bs[6], d0, m0, d1, m1, d2, m2),
            _idx3(bs[7], d0, m0, d1, m1, d2, m2),
        )
    return (
        tuple_index(bs[0], ext, t),
        tuple_index(bs[1], ext, t),
        tuple_index(bs[2], ext, t),
        tuple_index(bs[3], ext, t),
        tuple_index(bs[4], ext, t),
        tuple_index(bs[5], ext, t),
        tuple_index(bs[6], ext, t),
        tuple_index(bs[7], ext, t),
    )


def _pext_view_indices(bs, ext, t):
    # the tuple's cells in increasing order are its elements in order (pext_masks checks), so the
    # gathered nibbles are the index as rotate-and-mask builds it
    m = ext[t]
    return (
        np.int64(_pext(bs[0], m)),
        np.int64(_pext(bs[1], m)),
        np.int64(_pext(bs[2], m)),
        np.int64(_pext(bs[3], m)),
        np.int64(_pext(bs[4], m)),
        np.int64(_pext(bs[5], m)),
        np.int64(_pext(bs[6], m)),
        np.int64(_pext(bs[7], m)),
    )


@overload(_view_indices, inline="always")
def _view_indices_overload(bs, ext, t):
    if isinstance(ext, types.Array) and ext.ndim == 1:
        return _pext_view_indices
    if isinstance(ext, types.Array) and ext.ndim == 2:
        return _rotate_view_indices
    return None


@njit(cache=True)
def features(b: np.uint64, ext: np.ndarray, tlen: np.ndarray) -> np.ndarray:
    """All tuple indices of ``b``: int64 ``[n_tuples, 8]`` (for tests and tools, not the hot loop);
    ``ext`` is either extraction (:func:`_view_indices`)."""
    n_t = tlen.shape[0]
    out = np.empty((n_t, 8), dtype=np.int64)
    bs = symmetries(b)
    for t in range(n_t):
        ix = _view_indices(bs, ext, t)
        for s in range(8):
            out[t, s] = ix[s]
    return out


_ROW_MASK = np.uint64(0xFFFF)


@njit(cache=True, inline="always")
def _moves4_at(b: np.uint64, gb: np.ndarray, gr: np.ndarray, o: int) -> None:
    """:func:`moves4` into ``gb[o + d]`` and ``gr[o + d]``."""
    b = np.uint64(b)
    t = transpose(b)
    left = np.uint64(0)
    right = np.uint64(0)
    up = np.uint64(0)
    down = np.uint64(0)
    rows = np.int64(0)
    cols = np.int64(0)
    for i in range(4):
        shift = np.uint64(16 * i)
        row = (b >> shift) & _ROW_MASK  # unsigned: no test for a negative index
        col = (t >> shift) & _ROW_MASK
        left |= np.uint64(ROW_LEFT[row]) << shift
        right |= np.uint64(ROW_RIGHT[row]) << shift
        up |= np.uint64(ROW_LEFT[col]) << shift
        down |= np.uint64(ROW_RIGHT[col]) << shift
        rows += np.int64(ROW_SCORE[row])  # a row scores the same slid either way
        cols += np.int64(ROW_SCORE[col])
    gb[o + 0] = transpose(up)
    gb[o + 1] = left
    gb[o + 2] = transpose(down)
    gb[o + 3] = right
    gr[o + 0] = cols
    gr[o + 1] = rows
    gr[o + 2] = cols
    gr[o + 3] = rows


@njit(cache=True, inline="always")
def moves4(b: np.uint64, gb: np.ndarray, gr: np.ndarray) -> None:
    """All four :func:`engine.fast.move` results of ``b`` at once into ``gb`` (boards) and ``gr``
    (rewards), direction ``d`` at ``[d]``: one transpose serves up and down, and left and right share
    the row reads (the same tables, so the same bits as four calls)."""
    _moves4_at(b, gb, gr, 0)


@njit(cache=True, inline="always")
def _has15(b: np.uint64) -> bool:
    """Some cell holds 32768 (nibble 15): the only boards where a move may overflow."""
    x = b & (b >> np.uint64(1)) & (b >> np.uint64(2)) & (b >> np.uint64(3))
    return (x & np.uint64(0x1111111111111111)) != np.uint64(0)


@njit(cache=True, inline="always")
def stage_of(b: np.uint64, stage_thr: np.ndarray, n_live: int) -> int:
    """The weight stage of ``b``: how many of ``stage_thr``'s max-tile exponents it has reached, capped
    at ``n_live - 1``. Inlined: it runs for every board valued, and with no stages it is one test."""
    if stage_thr.shape[0] == 0:
        return 0
    m = max_exponent(b)
    k = 0
    for e in stage_thr:
        if m >= e:
            k += 1
    return min(k, n_live - 1)


@njit(cache=True, inline="always")
def _fill_features(
    feat: np.ndarray,
    row: int,
    b: np.uint64,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
) -> None:
    """The weight index of every (tuple, view) feature of afterstate ``b``, tuple-major, into
    ``feat[row, : 8 * n_tuples]``: computed once and then read, updated and read again (a TD step), and
    all known before the first weight is loaded, so the loads do not wait on each other.

    ``feat`` is 2-D and addressed by ``row`` here and in the other ``*_features`` helpers, never
    sliced: a row view (``feat[row]``) is a new array, which numba reference-counts (atomic increments
    and decrements) wherever the caller is compiled with reference counting. It is uint64: numba
    tests a signed index for a negative value (one counted from the end) at every access, an
    unsigned one never, and a 3-ply search ran 8% faster for it."""
    base = stage_of(b, stage_thr, n_live) * stage_size
    bs = symmetries(b)
    for t in range(tlen.shape[0]):
        o = base + toff[t]
        ix = _view_indices(bs, ext, t)
        for s in range(8):
            feat[row, 8 * t + s] = o + ix[s]


@njit(cache=True, inline="always")
def _sum_features(w: np.ndarray, feat: np.ndarray, row: int, n: int) -> float:
    """The sum of the weights of ``feat[row, :n]``, in order (float64, as every value here is summed)."""
    v = 0.0
    for j in range(n):
        v += w[feat[row, j]]
    return v


@njit(cache=True, inline="always")
def _prefetch_features(
    w: np.ndarray, tc: np.ndarray, use_tc: bool, feat: np.ndarray, row: int, n: int
) -> None:
    """Ask for the cache lines of ``feat[row, :n]`` (weights, and TC sums) ahead of their use."""
    for j in range(n):
        _prefetch(w, feat[row, j])
    if use_tc:
        for j in range(n):
            _prefetch(tc, feat[row, j] << _U1)


@njit(cache=True)
def evaluate(
    w: np.ndarray,
    b: np.uint64,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
) -> float:
    """V(b): the sum of the weights of all (tuple, symmetry) features of afterstate ``b``."""
    base = stage_of(b, stage_thr, n_live) * stage_size
    bs = symmetries(b)
    v = 0.0
    for t in range(tlen.shape[0]):
        o = base + toff[t]
        ix = _view_indices(bs, ext, t)
        for s in range(8):
            v += w[o + ix[s]]
    return v


@njit(cache=True, inline="always")
def downgrade(b: np.uint64, from_exp: int) -> np.uint64:
    """Tile downgrading (after TDL2048+, Guei et al.): once the max tile reaches exponent ``from_exp``,
    every tile above the largest missing exponent below the max moves down one step; 0 = off.

    A board with 16384, 8192, 4096 and no 2048 reads as 8192, 4096, 2048: the network has seen the
    lower version of the same shape in every game that built its first big tile, while boards past
    it are rare in training and their weights are thin. Only play uses it; training never does.
    A board with no missing exponent below its max is read as it is.

    Inlined for the common cases (off, or no tile that big yet): the search calls it on every leaf.
    """
    if from_exp <= 0:
        return b
    m = max_exponent(b)
    if m < from_exp:
        return b
    return _downgrade_from(b, m)


@njit(cache=True)
def _downgrade_from(b: np.uint64, m: int) -> np.uint64:
    """:func:`downgrade` of ``b`` whose max exponent ``m`` has reached the threshold."""
    present = np.int64(0)  # bit e set: some cell holds exponent e
    for i in range(16):
        present |= np.int64(1) << np.int64((b >> np.uint64(4 * i)) & _NIBBLE)
    hole = m - 1
    while hole >= 1 and (present >> hole) & 1:
        hole -= 1
    if hole < 1:
        return b
    out = np.uint64(0)
    for i in range(16):
        e = (b >> np.uint64(4 * i)) & _NIBBLE
        if e > np.uint64(hole):
            e -= np.uint64(1)
        out |= e << np.uint64(4 * i)
    return out


@njit(cache=True, inline="always")
def _apply_features(
    w: np.ndarray, tc: np.ndarray, use_tc: bool, feat: np.ndarray, row: int, n: int, delta: float, step: float
) -> None:
    """:func:`td_update`'s step on the weights ``feat[row, :n]`` (see there); ``tc`` holds each weight's
    two temporal-coherence sums side by side (error sum at ``2 i``, absolute error sum at ``2 i + 1``),
    so both come in one cache line."""
    for j in range(n):
        i = feat[row, j]
        if use_tc:
            ie = i << _U1
            ia = ie | _U1
            e = tc[ie]
            a = tc[ia]
            rate = abs(e) / a if a > 0.0 else 1.0
            w[i] += np.float32(step * delta * rate)
            tc[ie] = e + np.float32(delta)
            tc[ia] = a + np.float32(abs(delta))
        else:
            w[i] += np.float32(step * delta)


@njit(cache=True)
def td_update(
    w: np.ndarray,
    tc: np.ndarray,
    use_tc: bool,
    b: np.uint64,
    delta: float,
    step: float,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
) -> float:
    """Move V(b) towards its target by ``step * delta`` per feature; returns V(b) after the update.

    The value is read again after all the updates, not summed on the way: symmetric views often
    share a weight (an empty corner looks the same from several sides), and a running sum would miss
    the later hits of a shared weight.

    With temporal coherence (Jaśkowski et al.) each weight's step is scaled by |sum of its errors| /
    sum of |its errors|: weights whose errors keep their sign learn at full speed, weights whose errors
    cancel out (noise) slow down on their own, so no hand-tuned decay of the learning rate is needed.
    ``tc``: the sums, interleaved (:func:`_apply_features`); unused (any array) without ``use_tc``.
    """
    n = 8 * tlen.shape[0]
    feat = np.empty((1, n), dtype=np.uint64)
    _fill_features(feat, 0, b, ext, tlen, toff, stage_size, stage_thr, n_live)
    _apply_features(w, tc, use_tc, feat, 0, n, delta, step)
    return _sum_features(w, feat, 0, n)


@njit(cache=True)
def td_toward(
    w: np.ndarray,
    tc: np.ndarray,
    use_tc: bool,
    b: np.uint64,
    target: float,
    step: float,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
) -> tuple[float, float]:
    """:func:`evaluate` then :func:`td_update` towards ``target`` with the features found once:
    ``(V(b) before, V(b) after)``, the same numbers as the two calls (the learner's inner step)."""
    n = 8 * tlen.shape[0]
    feat = np.empty((1, n), dtype=np.uint64)
    _fill_features(feat, 0, b, ext, tlen, toff, stage_size, stage_thr, n_live)
    v = _sum_features(w, feat, 0, n)
    _apply_features(w, tc, use_tc, feat, 0, n, target - v, step)
    return v, _sum_features(w, feat, 0, n)


# ------------------------------------------------------------------------------------------ training


@njit(cache=True)
def _promote(w: np.ndarray, stage_size: int, n_live: int) -> None:
    """Multi-stage weight promotion: a stage reached for the first time starts from the previous one."""
    src = (n_live - 1) * stage_size
    dst = n_live * stage_size
    for i in range(stage_size):
        w[dst + i] = w[src + i]


@njit(cache=True, **_NO_NRT)
def _greedy(
    w: np.ndarray,
    b: np.uint64,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
    dg: int,
    gfeat: np.ndarray,
    gb: np.ndarray,
    gr: np.ndarray,
) -> tuple[int, np.uint64, int]:
    """The 1-ply move: argmax over legal moves of reward + V(afterstate) (read through
    :func:`downgrade` with ``dg``), ties to the first; values that are not finite never win, and the
    first legal move is played when no value is finite; (-1, b, 0) when none is legal.

    The features of all legal afterstates are found before the first weight is read, so the loads
    of the four lookups overlap. Scratch (the caller's, so nothing is allocated per move):
    ``gfeat`` uint64 [4, 8 * n_tuples], ``gb`` uint64 [4], ``gr`` int64 [4].
    """
    n_feat = gfeat.shape[1]
    moves4(b, gb, gr)
    for d in range(4):
        nb = gb[d]
        if nb != b:
            _fill_features(gfeat, d, downgrade(nb, dg), ext, tlen, toff, stage_size, stage_thr, n_live)
    best_v = NEG_INF
    best_d = -1
    best_b = b
    best_r = 0
    for d in range(4):
        nb = gb[d]
        if nb == b:
            continue
        r = gr[d]
        v = r + _sum_features(w, gfeat, d, n_feat)
        if v > best_v and v < INF:
            best_v = v
            best_d = d
            best_b = nb
            best_r = int(r)
        elif best_d < 0:  # NaN or infinite: the first legal move stands in until a finite value comes
            best_d = d
            best_b = nb
            best_r = int(r)
    return best_d, best_b, best_r


#: Columns of ``game_u`` (uint64), one row per self-play worker: the board of the game in progress, the
#: spawn rng state, the restart rng state. Module constants, so numba folds them into the kernels.
U_BOARD, U_SPAWN_RNG, U_RESTART_RNG = 0, 1, 2
U_COLS = 3
#: Columns of ``game_i`` (int64): the game's score so far, moves so far, in progress (0/1), an unused
#: column (kept so saved layouts and tests keep their meaning), truncated games (lifetime), this game is
#: a restart (0/1), the score at the start of this game (non-zero for a restart).
I_SCORE, I_MOVES, I_ACTIVE, I_UNUSED, I_TRUNCATED, I_RESTART, I_START_SCORE = 0, 1, 2, 3, 4, 5, 6
I_COLS = 7


@njit(cache=True, nogil=True, **_NO_NRT)
def _learn_backward(
    w: np.ndarray,
    tc: np.ndarray,
    use_tc: bool,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
    buf_after: np.ndarray,
    buf_reward: np.ndarray,
    last: int,
    target: float,
    lam: float,
    step: float,
    feat: np.ndarray,
    acc: np.ndarray,
) -> None:
    """:func:`train_steps`' learning from a finished game: the TD updates of afterstates
    ``buf_after[last], ..., buf_after[0]`` in that order, the first towards ``target``, each next one
    towards its reward + the freshly updated value of the one after it (the TD(lambda) return with
    ``lam``). ``feat``: uint64 [2, 8 * n_tuples] scratch; ``acc`` gathers [sum of |TD error|, updates].

    Compiled without reference counting (``_nrt=False``: see the module's note), so it allocates nothing.
    """
    n_feat = 8 * tlen.shape[0]
    cur = 0
    if last >= 0:
        _fill_features(feat, cur, buf_after[last], ext, tlen, toff, stage_size, stage_thr, n_live)
    for k in range(last, -1, -1):
        if k > 0:
            # the next (earlier) afterstate's lines are on their way while this one learns
            _fill_features(feat, 1 - cur, buf_after[k - 1], ext, tlen, toff, stage_size, stage_thr, n_live)
            _prefetch_features(w, tc, use_tc, feat, 1 - cur, n_feat)
        # evaluate, then td_update towards the target (td_toward, the features found once)
        v = _sum_features(w, feat, cur, n_feat)
        _apply_features(w, tc, use_tc, feat, cur, n_feat, target - v, step)
        v_new = _sum_features(w, feat, cur, n_feat)
        acc[0] += abs(target - v)
        acc[1] += 1.0
        # lambda-return of the previous afterstate: r + (1 - lam) V(s) + lam * (this target)
        target = buf_reward[k] + (1.0 - lam) * v_new + lam * target
        cur = 1 - cur


@njit(cache=True, nogil=True)
def train_steps(
    w: np.ndarray,
    tc: np.ndarray,
    use_tc: bool,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    alpha: float,
    lam: float,
    restart: float,
    p4: float,
    start_tiles: int,
    live: np.ndarray,
    game_u: np.ndarray,
    game_i: np.ndarray,
    buf_board: np.ndarray,
    buf_after: np.ndarray,
    buf_reward: np.ndarray,
    max_steps: int,
    out_score: np.ndarray,
    out_maxexp: np.ndarray,
    out_moves: np.ndarray,
    out_restart: np.ndarray,
    acc: np.ndarray,
    train_depth: int = 1,
    search_from_exp: int = 0,
) -> tuple[int, int]:
    """Play and learn from self-play games for up to ``max_steps`` moves: ``(games finished, moves)``.

    The game in progress lives in ``game_u`` (columns ``U_*``: board, spawn rng state, restart rng
    state) and ``game_i`` (columns ``I_*``: score, moves so far, in progress, truncated games, is a
    restart, score at its start), so a call may stop mid-game and the next one
    carries on: the caller sizes ``max_steps`` to return every few hundred ms. ``live[0]`` is the
    number of stages reached so far; it lives apart from the game because parallel workers
    (:func:`train_steps_parallel`) share it with the weights.
    Boards, afterstates and rewards of the game are kept in ``buf_*`` (the caller keeps them larger than
    ``moves so far + max_steps``); the TD(0) updates run backwards over the game when it ends (each
    afterstate towards the next reward + the freshly updated value of the next afterstate; with
    ``lam`` > 0 towards the TD(lambda) return), which propagates the outcome through the game in one pass.
    Restarts: with probability ``restart`` a finished game is followed by one that starts from the
    middle of it (its board and score there) instead of a new game, so more of the moves are spent in
    the late game, where the values are learnt last (a simple form of Jaśkowski's carousel shaping).
    Finished games are written to ``out_*`` (score, max exponent, moves, was a restart); the call
    also returns when they are full. Max exponent 16 marks a game truncated by a 65536 merge. ``acc`` gathers
    [sum of |TD error|, updates] for the loss plot.

    Moves are greedy on reward + V(afterstate) (:func:`_greedy`), or with ``train_depth`` > 1 chosen by
    an expectimax of that depth (:func:`_search_walk`, as :func:`play_games` plays) on boards whose max
    exponent is at least ``search_from_exp`` (0: every board). Either way the game learns the chosen
    move's afterstate, so only the moves differ. The search's leaf-value cache and transposition table
    hold values of the weights they were filled with, and the weights change between moves (at a
    game's end, and at any time under a second worker), so nothing a search stored is read by the next
    one: the leaf cache is emptied and the table's stamp bumped before each search.
    """
    step = alpha / (8.0 * tlen.shape[0])  # the step is shared by all 8 * n_tuples features
    n_feat = 8 * tlen.shape[0]
    feat = np.empty((2, n_feat), dtype=np.uint64)  # rows: this afterstate's features, the next one's
    gfeat = np.empty((4, n_feat), dtype=np.uint64)  # _greedy's scratch
    # written at every move: on cache lines of their own when workers run side by side (_private)
    gb = _private(np.zeros(4, dtype=np.uint64))
    gr = _private(np.zeros(4, dtype=np.int64))
    # the search's scratch, allocated once per call (each worker its own); the table only serves
    # searches of 3 plies or more (a 2-ply search neither reads nor fills it: see _search_walk), and
    # greedy training (depth 1, the presets') never searches, so its leaf cache is one slot
    policy = np.full(1, max(train_depth, 1), dtype=np.int64)
    scratch = search_scratch(policy, tlen.shape[0], LEAF_CACHE_BITS if train_depth > 1 else 0)
    lc_key = scratch[9]
    tt_n = 1 << 16 if train_depth > 2 else 2
    tt_key = np.zeros(tt_n, dtype=np.uint64)
    tt_level = np.zeros(tt_n, dtype=np.int64)
    tt_gen = np.zeros(tt_n, dtype=np.int64)
    tt_val = np.zeros(tt_n)
    gen = 0
    n_stages = stage_thr.shape[0] + 1
    steps = 0
    done = 0
    while steps < max_steps and done < out_score.shape[0]:
        if game_i[I_ACTIVE] == 0:
            b, rng = new_board(np.uint64(game_u[U_SPAWN_RNG]), p4, start_tiles)
            game_u[U_BOARD] = b
            game_u[U_SPAWN_RNG] = rng
            game_i[I_SCORE] = 0
            game_i[I_MOVES] = 0
            game_i[I_ACTIVE] = 1
            game_i[I_RESTART] = 0
            game_i[I_START_SCORE] = 0
        b = np.uint64(game_u[U_BOARD])
        n_live = live[0]
        if n_live < n_stages:
            # a move may reach a new stage: promote before valuing its afterstate with the new block
            for d in range(4):
                nb, _ = move(b, d)
                if nb != b and stage_of(nb, stage_thr, n_stages) >= n_live:
                    if live[0] == n_live:  # another worker may have just promoted it
                        _promote(w, stage_size, n_live)
                        live[0] = n_live + 1
                    n_live = live[0]
                    break
        if train_depth > 1 and max_exponent(b) >= search_from_exp:
            for j in range(lc_key.shape[0]):  # leaf values of the weights as they were: forget them
                lc_key[j] = 0
            gen += 1  # the table's entries of earlier searches no longer count
            _search_walk(
                w, b, policy, p4, ext, tlen, toff, stage_size, stage_thr, n_live, 0,
                tt_key, tt_level, tt_gen, tt_val, gen, *scratch,
            )  # fmt: skip
            d = best_move(scratch[0], step_bits(b) & 15)
            after = b
            r = 0
            if d >= 0:
                after, merged = move(b, d)
                r = int(merged)
        else:
            d, after, r = _greedy(w, b, ext, tlen, toff, stage_size, stage_thr, n_live, 0, gfeat, gb, gr)
        truncated = d >= 0 and _has15(b) and overflows(b, d)
        if d >= 0 and not truncated:
            n = game_i[I_MOVES]
            buf_board[n] = b
            buf_after[n] = after
            buf_reward[n] = r
            game_i[I_MOVES] = n + 1
            game_i[I_SCORE] += r
            rng = np.uint64(game_u[U_SPAWN_RNG])
            nb, rng = spawn(after, rng, p4)
            game_u[U_BOARD] = nb
            game_u[U_SPAWN_RNG] = rng
            steps += 1
            continue
        # the game is over (or truncated): learn from it backwards
        n = game_i[I_MOVES]
        target = 0.0
        last = n - 1
        if truncated and n > 0:
            # not a terminal state: its value stays; the previous afterstate learns towards it
            target = buf_reward[last] + evaluate(
                w, buf_after[last], ext, tlen, toff, stage_size, stage_thr, n_live
            )
            last -= 1
        _learn_backward(
            w, tc, use_tc, ext, tlen, toff, stage_size, stage_thr, n_live,
            buf_after, buf_reward, last, target, lam, step, feat, acc,
        )  # fmt: skip
        out_score[done] = game_i[I_SCORE]
        out_maxexp[done] = 16 if truncated else max_exponent(b)
        out_moves[done] = n
        out_restart[done] = game_i[I_RESTART]
        done += 1
        if truncated:
            game_i[I_TRUNCATED] += 1
        game_i[I_ACTIVE] = 0
        if restart > 0.0 and n >= 20:
            rs, u = splitmix64(np.uint64(game_u[U_RESTART_RNG]))
            game_u[U_RESTART_RNG] = rs
            if float(u >> np.uint64(11)) * (1.0 / 9007199254740992.0) < restart:
                k = n // 2
                score = game_i[I_START_SCORE]
                for j in range(k):
                    score += np.int64(buf_reward[j])
                game_u[U_BOARD] = buf_board[k]
                game_i[I_SCORE] = score
                game_i[I_MOVES] = 0
                game_i[I_ACTIVE] = 1
                game_i[I_RESTART] = 1
                game_i[I_START_SCORE] = score
    return done, steps


@njit(cache=True, parallel=True, nogil=True)
def train_steps_parallel(
    w: np.ndarray,
    tc: np.ndarray,
    use_tc: bool,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    alpha: float,
    lam: float,
    restart: float,
    p4: float,
    start_tiles: int,
    live: np.ndarray,
    game_u: np.ndarray,
    game_i: np.ndarray,
    buf_board: np.ndarray,
    buf_after: np.ndarray,
    buf_reward: np.ndarray,
    max_steps: np.ndarray,
    room: np.ndarray,
    out_score: np.ndarray,
    out_maxexp: np.ndarray,
    out_moves: np.ndarray,
    out_restart: np.ndarray,
    acc: np.ndarray,
    result: np.ndarray,
    train_depth: int = 1,
    search_from_exp: int = 0,
) -> None:
    """:func:`train_steps` on one worker per row of the ``game_*`` / ``buf_*`` / ``out_*`` / ``acc``
    arrays, the workers on their own threads and all learning into the same weights without locks
    (Hogwild, Recht et al. 2011). Each worker plays its own games from its own random streams and
    plays at most ``max_steps[k]`` moves and
    records at most ``room[k]`` games; ``result[k]`` = (games finished, moves) of worker ``k``.
    ``train_depth`` and ``search_from_exp``: each worker's move choice, as :func:`train_steps`'.

    Two workers touch the same weight at the same instant rarely (each 6-tuple table holds 16.7M
    weights), and a lost update there is noise of the size TD already copes with; the price is that
    the thread timing, so the numbers, differ from run to run.

    Each worker plays on private copies of its rows of ``game_u``, ``game_i`` and ``acc``, each with
    a cache line of its own (:func:`_private`), written back at the end: the rows of neighbouring
    workers share 64-byte lines, and :func:`train_steps` writes them at every move, so the two cores
    would pass those lines back and forth (false sharing) all the time.
    """
    for k in prange(game_u.shape[0]):
        gu = _private(game_u[k])
        gi = _private(game_i[k])
        ga = _private(acc[k])
        done, steps = train_steps(
            w,
            tc,
            use_tc,
            ext,
            tlen,
            toff,
            stage_size,
            stage_thr,
            alpha,
            lam,
            restart,
            p4,
            start_tiles,
            live,
            gu,
            gi,
            buf_board[k],
            buf_after[k],
            buf_reward[k],
            max_steps[k],
            out_score[k, : room[k]],
            out_maxexp[k, : room[k]],
            out_moves[k, : room[k]],
            out_restart[k, : room[k]],
            ga,
            train_depth,
            search_from_exp,
        )
        game_u[k] = gu
        game_i[k] = gi
        acc[k] = ga
        result[k, 0] = done
        result[k, 1] = steps


def launch_workers_passive() -> None:
    """Start numba's thread pool with OpenMP's passive wait policy (unless it runs already, or the
    environment names a policy of its own).

    GNU OpenMP's default lets a worker that has finished its share spin for milliseconds waiting for
    the next parallel region: after every training slice, and whenever a neighbour's process holds
    the other core while its twin still works. That spinning is CPU time of this process that makes no
    moves (2 threads made ~13 % fewer moves per CPU-second than 1 on a busy 2-core machine, the same
    with passive waiting), and a CPU-seconds budget pays for it. A slice lasts ~0.25 s, so waking a
    sleeping worker costs nothing measurable. libgomp reads the variable once, when it loads; it is
    taken away again at once, so that an OpenMP library loaded later (torch's) keeps its default.
    """
    import os

    from numba.np.ufunc import parallel

    if parallel._is_initialized or "OMP_WAIT_POLICY" in os.environ:
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        parallel._launch_threads()
    finally:
        del os.environ["OMP_WAIT_POLICY"]


#: Padding (in 8-byte elements) on each side of a worker's private row: two 64-byte cache lines, so
#: that the row shares no line with anything another thread writes (an adjacent-line prefetcher
#: fetches lines in pairs).
_PAD = 16


@njit(cache=True, nogil=True)
def _private(row: np.ndarray) -> np.ndarray:
    """A copy of the 8-byte-element ``row`` in the middle of an allocation :data:`_PAD` elements wider
    on each side: a worker's hot little row, on cache lines of its own."""
    n = row.shape[0]
    out = np.empty(n + 2 * _PAD, dtype=row.dtype)[_PAD : _PAD + n]
    out[:] = row
    return out


# ------------------------------------------------------------------------------------------ search


@njit(cache=True, inline="always")
def _tt_slot(b: np.uint64, level: int, shift: np.uint64) -> np.uint64:
    """Slot of chance node (``b``, ``level``) in a table of ``2 ** (64 - shift)`` entries: the top bits
    of a multiplicative hash, the ones that depend on every cell (see :func:`_leaf_slot`); unsigned, as
    every index of the hot loops (see :func:`_fill_features`)."""
    h = (b ^ (np.uint64(level) * np.uint64(0x9E3779B97F4A7C15))) * np.uint64(0xBF58476D1CE4E5B9)
    return h >> shift


#: Entries of a search's leaf-value cache (see :func:`_leaf_max`): 2^14 keys and values, 256 KB,
#: which stays in a core's L2 cache while a 3-ply search evaluates some 10,000 distinct leaves.
LEAF_CACHE_BITS = 14


_LEAF_SHIFT = np.uint64(64 - LEAF_CACHE_BITS)


@njit(cache=True, inline="always")
def _leaf_slot(b: np.uint64) -> np.uint64:
    """Slot of afterstate ``b`` in the leaf cache: the top bits of a multiplicative hash. Only the top
    bits depend on every cell: a product's bit ``i`` depends on the key's bits up to ``i``, and slots
    from the middle bits (``>> 32``, masked) ignored the bottom row, so leaves that differ there only
    shared a slot: a 3-ply search then evaluated 66 % of its leaves instead of the 45 % that are new."""
    return (b * np.uint64(0x9E3779B97F4A7C15)) >> _LEAF_SHIFT


@njit(cache=True, inline="always")
def _leaf_prepare(
    w: np.ndarray,
    s: np.uint64,
    o: int,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
    dg: int,
    leaf_feat: np.ndarray,
    leaf_b: np.ndarray,
    leaf_r: np.ndarray,
    vals: np.ndarray,
    leaf_slot: np.ndarray,
    lc_key: np.ndarray,
    lc_val: np.ndarray,
) -> None:
    """The first half of :func:`_leaf_max` for max node ``s``, into rows ``o .. o + 3`` of the leaf
    scratch: the moves, the leaf cache's answers (``vals``), and for the other afterstates their
    features, with their weight lines asked for. :func:`_leaf_finish` sums them later."""
    n_feat = 8 * tlen.shape[0]
    top = _has15(s)
    _moves4_at(s, leaf_b, leaf_r, o)
    for d in range(4):
        leaf_slot[o + d] = -1
        if leaf_b[o + d] != s and not (top and overflows(s, d)):
            sl = _leaf_slot(leaf_b[o + d])
            if lc_key[sl] == leaf_b[o + d]:
                vals[o + d] = lc_val[sl]
                continue
            leaf_slot[o + d] = np.int64(sl)
            _fill_features(
                leaf_feat, o + d, downgrade(leaf_b[o + d], dg), ext, tlen, toff, stage_size, stage_thr, n_live
            )
            for j in range(n_feat):
                _prefetch(w, leaf_feat[o + d, j])


@njit(cache=True, inline="always")
def _leaf_finish(
    w: np.ndarray,
    s: np.uint64,
    o: int,
    tlen: np.ndarray,
    leaf_feat: np.ndarray,
    leaf_b: np.ndarray,
    leaf_r: np.ndarray,
    vals: np.ndarray,
    leaf_slot: np.ndarray,
    lc_key: np.ndarray,
    lc_val: np.ndarray,
) -> float:
    """The second half of :func:`_leaf_max`: each move's value into ``vals[o + d]``, the sums put in
    the leaf cache; the best value."""
    n_feat = 8 * tlen.shape[0]
    top = _has15(s)
    best = NEG_INF
    for d in range(4):
        if leaf_b[o + d] == s:
            vals[o + d] = NEG_INF
            continue
        v = float(leaf_r[o + d])
        if not (top and overflows(s, d)):
            if leaf_slot[o + d] >= 0:
                e = _sum_features(w, leaf_feat, o + d, n_feat)
                sl = np.uint64(leaf_slot[o + d])
                lc_key[sl] = leaf_b[o + d]
                lc_val[sl] = e
            else:
                e = vals[o + d]
            v += e
        vals[o + d] = v
        if v > best:
            best = v
    return best


@njit(cache=True, inline="always")
def _leaf_max(
    w: np.ndarray,
    s: np.uint64,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
    dg: int,
    leaf_feat: np.ndarray,
    leaf_b: np.ndarray,
    leaf_r: np.ndarray,
    vals: np.ndarray,
    leaf_slot: np.ndarray,
    lc_key: np.ndarray,
    lc_val: np.ndarray,
) -> float:
    """A max node ``s`` whose afterstates are leaves: ``vals[d]`` = reward + V(afterstate) of each move
    (the reward alone for a 32768 merge, ``NEG_INF`` for an illegal move); returns the best (``NEG_INF``
    when no move is legal). The features of all legal moves are found, and their weight lines
    prefetched, before the first sum, so the loads of the four lookups overlap.

    V(afterstate) goes through the leaf cache ``lc_key`` / ``lc_val`` (direct-mapped, key 0 = empty:
    an afterstate always has a tile): most of a deep search's leaves are met more than once, as tiles
    spawned on different cells of a line slide to the same place (a 3-ply search of a real game's
    boards meets each distinct leaf 2.3 times). The cached value is the sum itself, so the values are
    the same bit for bit; it stays exact for as long as the weights, ``dg`` and the stages do, which is the life of the
    scratch that holds it (:func:`search_scratch`)."""
    _leaf_prepare(
        w, s, 0, ext, tlen, toff, stage_size, stage_thr, n_live, dg,
        leaf_feat, leaf_b, leaf_r, vals, leaf_slot, lc_key, lc_val,
    )  # fmt: skip
    return _leaf_finish(w, s, 0, tlen, leaf_feat, leaf_b, leaf_r, vals, leaf_slot, lc_key, lc_val)


@njit(cache=True, **_NO_NRT)
def _leaf_chance(
    w: np.ndarray,
    a: np.uint64,
    p4: float,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
    dg: int,
    leaf_feat: np.ndarray,
    leaf_b: np.ndarray,
    leaf_r: np.ndarray,
    vals: np.ndarray,
    leaf_slot: np.ndarray,
    lc_key: np.ndarray,
    lc_val: np.ndarray,
) -> float:
    """The value of chance node ``a`` whose spawns lead to leaf max nodes (every chance node of a 2-ply
    search, the deepest ones of any search): the mean over the spawns of :func:`_leaf_max`, in the
    order and with the sums :func:`search_values`' general walk uses, so the values are the same bit
    for bit. Most of a search's time is spent here, so it is a plain loop without the walk's stack.
    """
    acc = 0.0
    n_empty = 0
    # Two spawns in flight: the next spawn's leaves are found and their weight lines asked for before
    # the last one's are summed, so one spawn's memory waits overlap the other's work. The sums are
    # still added in spawn order (the same value, bit for bit).
    pending = False
    last_s = np.uint64(0)
    last_p = 0.0
    o = 0
    for i in range(16):
        shift = np.uint64(4 * i)
        if (a >> shift) & _NIBBLE != np.uint64(0):
            continue
        n_empty += 1
        for tile in range(1, 3):
            p = 1.0 - p4 if tile == 1 else p4
            if p <= 0.0:
                continue
            s = a | (np.uint64(tile) << shift)
            _leaf_prepare(
                w, s, o, ext, tlen, toff, stage_size, stage_thr, n_live, dg,
                leaf_feat, leaf_b, leaf_r, vals, leaf_slot, lc_key, lc_val,
            )  # fmt: skip
            if pending:
                best = _leaf_finish(
                    w, last_s, 4 - o, tlen, leaf_feat, leaf_b, leaf_r, vals, leaf_slot, lc_key, lc_val
                )
                acc += last_p * (best if best > NEG_INF else 0.0)
            pending = True
            last_s = s
            last_p = p
            o = 4 - o
    if pending:
        best = _leaf_finish(
            w, last_s, 4 - o, tlen, leaf_feat, leaf_b, leaf_r, vals, leaf_slot, lc_key, lc_val
        )
        acc += last_p * (best if best > NEG_INF else 0.0)
    return acc / n_empty if n_empty > 0 else 0.0


@njit(cache=True, nogil=True)
def search_values(
    w: np.ndarray,
    b: np.uint64,
    policy: np.ndarray,
    p4: float,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
    dg: int,
    tt_key: np.ndarray,
    tt_level: np.ndarray,
    tt_gen: np.ndarray,
    tt_val: np.ndarray,
    gen: int,
) -> np.ndarray:
    """Expectimax values of the 4 moves from ``b`` (-1e300 for illegal ones); depth from ``policy``.

        A max node at ``level`` (1 at the root) values each legal move by reward + V(afterstate) once
        ``level`` reaches its depth limit ``final``, otherwise by reward + the mean over the afterstate's
        spawns (a 2 with 1 - p4, a 4 with p4, on each empty cell) of the max nodes one level down, whose own
        limit is ``policy[free cells of the afterstate]`` (switching-ply, seed 002; a one-entry policy is a
        fixed depth). A max node without a legal move is worth 0 (V(terminal) = 0). A move that would merge
        two 32768s is valued at its reward alone (the 65536 cannot be represented). Leaf afterstates are
    read through :func:`downgrade` with ``dg`` (0 = as they are).

        ``tt_*`` is a transposition table of chance-node values keyed by (afterstate, level), size a power
        of two (2 at least); entries count only when stamped with this ``gen``, so bumping ``gen`` per
        root clears it.

        The walk itself is :func:`_search_walk`, on scratch from :func:`search_scratch` (which
        :func:`play_games` allocates once per call, not once per move).

        The tree is walked with an explicit stack (one frame per level) rather than by recursion: numba
        cannot load a cached recursive function.
    """
    scratch = search_scratch(policy, tlen.shape[0])
    _search_walk(
        w, b, policy, p4, ext, tlen, toff, stage_size, stage_thr, n_live, dg,
        tt_key, tt_level, tt_gen, tt_val, gen, *scratch,
    )  # fmt: skip
    return scratch[0]


@njit(cache=True, inline="always")
def search_scratch(
    policy: np.ndarray, n_tuples: int, cache_bits: int = LEAF_CACHE_BITS
) -> tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
    np.ndarray, np.ndarray, np.ndarray,
]:  # fmt: skip
    """What :func:`_search_walk` works in, for searches with depths from ``policy``: the 4 move values,
    the walk's stack (uint64 [2, depth + 2], int64 [7, depth + 2], float64 [3, depth + 2]), two leaf max
    nodes' features, values, boards, rewards and cache slots (rows 0-3 and 4-7: :func:`_leaf_chance`
    has two in flight), and the leaf-value cache (keys zeroed: empty; 2^``cache_bits`` slots, which
    a search needs at the full ``LEAF_CACHE_BITS``: a smaller one only serves a caller that never
    searches). Otherwise uninitialised: the walk resets what it reads first.

    The leaf cache holds values for the weights, ``dg`` and stages of the searches it serves: one
    scratch per :func:`play_games` call or :func:`search_values` call, never one across a change
    (:func:`train_steps`, whose weights change between moves, empties it before each search)."""
    depth = 1
    for k in range(policy.shape[0]):
        depth = max(depth, policy[k])
    size = depth + 2
    n_feat = 8 * n_tuples
    return (
        np.empty(4),
        np.empty((2, size), dtype=np.uint64),
        np.empty((7, size), dtype=np.int64),
        np.empty((3, size)),
        np.empty((8, n_feat), dtype=np.uint64),
        np.empty(8),
        np.empty(8, dtype=np.uint64),
        np.empty(8, dtype=np.int64),
        np.empty(8, dtype=np.int64),
        np.zeros(1 << cache_bits, dtype=np.uint64),
        np.empty(1 << cache_bits),
    )


@njit(cache=True, nogil=True, **_NO_NRT)
def _search_walk(
    w: np.ndarray,
    b: np.uint64,
    policy: np.ndarray,
    p4: float,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
    dg: int,
    tt_key: np.ndarray,
    tt_level: np.ndarray,
    tt_gen: np.ndarray,
    tt_val: np.ndarray,
    gen: int,
    out: np.ndarray,
    su: np.ndarray,
    si: np.ndarray,
    sf: np.ndarray,
    leaf_feat: np.ndarray,
    leaf_v: np.ndarray,
    leaf_b: np.ndarray,
    leaf_r: np.ndarray,
    leaf_slot: np.ndarray,
    lc_key: np.ndarray,
    lc_val: np.ndarray,
) -> None:
    """:func:`search_values` into ``out``, on the scratch of :func:`search_scratch` (reset here).

    Compiled without reference counting (``_nrt=False``: see the module's note), so it allocates nothing.
    """
    n_pol = policy.shape[0]
    tt_bits = 0
    while (1 << tt_bits) < tt_key.shape[0]:  # a power of two
        tt_bits += 1
    tt_shift = np.uint64(64 - tt_bits)
    board = su[0]  # max node of each level
    after = su[1]  # chance node below the move being searched at each level
    final = si[0]
    dnext = si[1]  # next move to try there
    slot = si[2]
    cell = si[3]
    tile = si[4]
    n_empty = si[5]
    child_final = si[6]
    best = sf[0]
    rew = sf[1]
    acc = sf[2]
    su[:] = 0
    si[:] = 0
    sf[:] = 0.0
    best[:] = NEG_INF
    out[:] = NEG_INF

    k = 1
    board[1] = b
    final[1] = policy[min(np.int64(count_empty(b)), n_pol - 1)]
    phase = 0  # 0: next move of max node k; 1: a child's value returns to chance node k; 2: next child
    ret = 0.0
    while True:
        if phase == 0:
            if k >= final[k] and dnext[k] == 0:
                # a max node whose afterstates are leaves (only the root can be one: a chance node
                # whose spawns are leaves is valued whole by _leaf_chance)
                bv = _leaf_max(
                    w, board[k], ext, tlen, toff, stage_size, stage_thr, n_live, dg,
                    leaf_feat, leaf_b, leaf_r, leaf_v, leaf_slot, lc_key, lc_val,
                )  # fmt: skip
                if k == 1:
                    for d in range(4):  # not out[:] = leaf_v: that may copy, and nothing allocates here
                        out[d] = leaf_v[d]
                if bv > best[k]:
                    best[k] = bv
                dnext[k] = 4
            opened = False
            while dnext[k] < 4:
                d = dnext[k]
                dnext[k] += 1
                nb, r = move(board[k], d)
                if nb == board[k]:
                    continue
                if _has15(board[k]) and overflows(board[k], d):
                    v = float(r)
                else:  # k < final[k] here: a leaf max node's moves were all valued above
                    sl = _tt_slot(nb, k, tt_shift)
                    # A root afterstate (level 1) is never met again: another root move makes another
                    # board, and a later search's roots have a larger tile sum (every move keeps it,
                    # every spawn raises it). So level 1 neither reads nor fills the table: at 2-ply
                    # that is every probe, each a likely cache miss, for nothing.
                    if k > 1 and tt_gen[sl] == gen and tt_key[sl] == nb and tt_level[sl] == k:
                        v = r + tt_val[sl]
                    else:
                        n_empty[k] = np.int64(count_empty(nb))
                        child_final[k] = policy[min(n_empty[k], n_pol - 1)]
                        if k + 1 >= child_final[k]:  # its spawns are leaf max nodes: valued in one loop
                            ev = _leaf_chance(
                                w, nb, p4, ext, tlen, toff, stage_size, stage_thr, n_live, dg,
                                leaf_feat, leaf_b, leaf_r, leaf_v, leaf_slot, lc_key, lc_val,
                            )  # fmt: skip
                            if k > 1:
                                tt_key[sl] = nb
                                tt_level[sl] = k
                                tt_gen[sl] = gen
                                tt_val[sl] = ev
                            v = r + ev
                            if k == 1:
                                out[d] = v
                            if v > best[k]:
                                best[k] = v
                            continue
                        after[k] = nb
                        rew[k] = r
                        slot[k] = np.int64(sl)
                        cell[k] = -1
                        tile[k] = 2
                        acc[k] = 0.0
                        opened = True
                        break
                if k == 1:
                    out[d] = v
                if v > best[k]:
                    best[k] = v
            if opened:
                phase = 2
                continue
            ret = best[k] if best[k] > NEG_INF else 0.0
            if k == 1:
                return
            k -= 1
            phase = 1
            continue
        if phase == 1:
            acc[k] += (p4 if tile[k] == 2 else 1.0 - p4) * ret
        # phase 2 (and after 1): the next spawn of chance node k, or its value when all are done
        found = False
        if tile[k] == 1 and p4 > 0.0:
            tile[k] = 2
            found = True
        else:
            for i in range(cell[k] + 1, 16):
                if (after[k] >> np.uint64(4 * i)) & _NIBBLE == np.uint64(0):
                    cell[k] = i
                    tile[k] = 1 if p4 < 1.0 else 2
                    found = True
                    break
        if found:
            child = after[k] | (np.uint64(tile[k]) << np.uint64(4 * cell[k]))
            board[k + 1] = child
            final[k + 1] = child_final[k]
            dnext[k + 1] = 0
            best[k + 1] = NEG_INF
            k += 1
            phase = 0
            continue
        ev = acc[k] / n_empty[k] if n_empty[k] > 0 else 0.0
        if k > 1:
            ts = np.uint64(slot[k])
            tt_key[ts] = after[k]
            tt_level[ts] = k
            tt_gen[ts] = gen
            tt_val[ts] = ev
        v = rew[k] + ev
        d = dnext[k] - 1
        if k == 1:
            out[d] = v
        if v > best[k]:
            best[k] = v
        phase = 0


@njit(cache=True, nogil=True)
def play_games(
    w: np.ndarray,
    policy: np.ndarray,
    p4: float,
    start_tiles: int,
    rng_states: np.ndarray,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
    dg: int,
    tt_key: np.ndarray,
    tt_level: np.ndarray,
    tt_gen: np.ndarray,
    tt_val: np.ndarray,
    out_score: np.ndarray,
    out_maxexp: np.ndarray,
    out_moves: np.ndarray,
    gen: int,
) -> int:
    """Play one game per entry of ``rng_states`` (no learning), the same spawn stream as ``Game(seed)``.

    Depth 1 everywhere (policy all ones) is the plain 1-ply player. Max exponent 16 = ended by a
    65536 merge the packed board cannot hold. ``gen``: the last transposition-table stamp used
    (returned updated, so the table never needs clearing).
    """
    n_feat = 8 * tlen.shape[0]
    gfeat = np.empty((4, n_feat), dtype=np.uint64)  # _greedy's scratch
    gb = np.empty(4, dtype=np.uint64)
    gr = np.empty(4, dtype=np.int64)
    all_greedy = True
    for k in range(policy.shape[0]):
        if policy[k] > 1:
            all_greedy = False
    scratch = search_scratch(policy, tlen.shape[0])  # once per call: a search allocates nothing
    # One stamp for the whole call, not one per move: a chance node's value depends only on its
    # afterstate and its level (the depth limits below it come from the policy and the boards, the
    # root always has level 1), and the weights do not change during the call, so what one move's
    # search stored is exact for every later search of this call; consecutive moves share many
    # chance nodes. A new call (new weights or settings, perhaps) starts a new stamp.
    gen += 1
    for g in range(rng_states.shape[0]):
        b, rng = new_board(np.uint64(rng_states[g]), p4, start_tiles)
        score = 0
        moves = 0
        capped = False
        while True:
            if all_greedy:
                d, after, r = _greedy(w, b, ext, tlen, toff, stage_size, stage_thr, n_live, dg, gfeat, gb, gr)
            else:
                _search_walk(
                    w, b, policy, p4, ext, tlen, toff, stage_size, stage_thr, n_live, dg,
                    tt_key, tt_level, tt_gen, tt_val, gen, *scratch,
                )  # fmt: skip
                d = best_move(scratch[0], step_bits(b) & 15)
                after = b
                r = 0
                if d >= 0:
                    after, merged = move(b, d)
                    r = int(merged)
            if d < 0:
                break
            if _has15(b) and overflows(b, d):
                capped = True
                score += r
                moves += 1
                break
            score += r
            moves += 1
            b, rng = spawn(after, rng, p4)
        out_score[g] = score
        out_maxexp[g] = 16 if capped else max_exponent(b)
        out_moves[g] = moves
    return gen


@njit(cache=True, nogil=True)
def search_positions(
    w: np.ndarray,
    boards: np.ndarray,
    policy: np.ndarray,
    p4: float,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
    dg: int,
    tt_key: np.ndarray,
    tt_level: np.ndarray,
    tt_gen: np.ndarray,
    tt_val: np.ndarray,
    gen: int,
    out_after: np.ndarray,
) -> int:
    """Search each of ``boards`` as :func:`play_games` searches a game's moves (one scratch, one table
    stamp) and write the afterstate of the move chosen into ``out_after`` (the board itself when none
    is legal). The studio's half of a timing on the same boards as another program (``bench ntuple -o
    vs_cpp``), where playing each its own games compares positions as much as searches. Returns the
    stamp used, as :func:`play_games`; depth 1 everywhere is its plain 1-ply player too. Its move
    choice repeats :func:`play_games`' on purpose: one helper for both, taking the search's scratch
    as a tuple, made 1-ply play about a fifth slower, inlined or as a call of its own."""
    gfeat = np.empty((4, 8 * tlen.shape[0]), dtype=np.uint64)  # _greedy's scratch
    gb = np.empty(4, dtype=np.uint64)
    gr = np.empty(4, dtype=np.int64)
    all_greedy = True
    for k in range(policy.shape[0]):
        if policy[k] > 1:
            all_greedy = False
    scratch = search_scratch(policy, tlen.shape[0])
    gen += 1
    for i in range(boards.shape[0]):
        b = np.uint64(boards[i])
        if all_greedy:
            d, after, _r = _greedy(w, b, ext, tlen, toff, stage_size, stage_thr, n_live, dg, gfeat, gb, gr)
            out_after[i] = after if d >= 0 else b
            continue
        _search_walk(
            w, b, policy, p4, ext, tlen, toff, stage_size, stage_thr, n_live, dg,
            tt_key, tt_level, tt_gen, tt_val, gen, *scratch,
        )  # fmt: skip
        d = best_move(scratch[0], step_bits(b) & 15)
        out_after[i] = move(b, d)[0] if d >= 0 else b
    return gen


@njit(cache=True, parallel=True, nogil=True)
def play_games_parallel(
    w: np.ndarray,
    policy: np.ndarray,
    p4: float,
    start_tiles: int,
    rng_states: np.ndarray,
    ext: np.ndarray,
    tlen: np.ndarray,
    toff: np.ndarray,
    stage_size: int,
    stage_thr: np.ndarray,
    n_live: int,
    dg: int,
    tt_key: np.ndarray,
    tt_level: np.ndarray,
    tt_gen: np.ndarray,
    tt_val: np.ndarray,
    out_score: np.ndarray,
    out_maxexp: np.ndarray,
    out_moves: np.ndarray,
    gen: np.ndarray,
) -> None:
    """:func:`play_games` with the games shared out over ``tt_key.shape[0]`` threads.

    Thread ``k`` plays games ``k, k + n, k + 2n, ...`` (interleaved, so long and short games mix) with
    its own transposition table (row ``k`` of ``tt_*``) and stamp ``gen[k]``. The table only caches
    exact values, so every game is the one :func:`play_games` plays, whatever the thread count.
    """
    n = tt_key.shape[0]
    for k in prange(n):
        idx = np.arange(k, rng_states.shape[0], n)
        sc = np.zeros(idx.shape[0], dtype=out_score.dtype)
        mx = np.zeros(idx.shape[0], dtype=out_maxexp.dtype)
        mv = np.zeros(idx.shape[0], dtype=out_moves.dtype)
        gen[k] = play_games(
            w,
            policy,
            p4,
            start_tiles,
            rng_states[idx],
            ext,
            tlen,
            toff,
            stage_size,
            stage_thr,
            n_live,
            dg,
            tt_key[k],
            tt_level[k],
            tt_gen[k],
            tt_val[k],
            sc,
            mx,
            mv,
            gen[k],
        )
        for j in range(idx.shape[0]):
            out_score[idx[j]] = sc[j]
            out_maxexp[idx[j]] = mx[j]
            out_moves[idx[j]] = mv[j]
