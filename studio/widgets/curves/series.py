"""One run's metrics as they grow (Qt-free): buffers, the score's moving averages, EMA smoothing.

Data lives in :class:`GrowingArray` buffers (amortised doubling: appending n points costs O(n) in all,
and a plot gets a view of the buffer, never a copy of a Python list). :class:`RunSeries` keeps every
metric of a run with its three x candidates (episode, step, elapsed), the moving averages of the score
and of log2(max tile) incrementally, and TensorBoard's EMA (:func:`ema`) per smoothing weight.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agents.base import MetricEvent
from agents.metrics import MEAN_SCORE, MetricInfo, metrics_of

log = logging.getLogger(__name__)

#: Games in an agent's own mean score when its settings do not say (td-afterstate keeps 100).
DEFAULT_MEAN_WINDOW = 100
#: Metrics with a moving average kept (agents.metrics.STANDARD).
SCORE, MAX_TILE, SPEED = "score", "max_tile", "steps_per_s"

#: Agents whose class failed to load, said once in the log (not at every redraw).
_LOAD_FAILED: set[str] = set()


def declared_metrics(agent: str) -> tuple[MetricInfo, ...] | None:
    """The metrics agent ``agent`` declares (:func:`agents.metrics.metrics_of`); None when this build
    has no such agent (a run of a plug-in not installed here) or its class fails to load (logged)."""
    from agents.registry import get_agent_class

    try:
        return metrics_of(get_agent_class(agent))
    except KeyError:
        return None  # not registered here: the curves fall back to the standard metrics
    except Exception:
        # A registered agent whose module does not import: the run's curves still draw.
        if agent not in _LOAD_FAILED:
            _LOAD_FAILED.add(agent)
            log.exception("could not load agent %r for its metric declarations", agent)
        return None


def ema(values: np.ndarray, weight: float, start: int = 0, carry: float = 0.0) -> tuple[np.ndarray, float]:
    """TensorBoard's smoothing: ``last = last * w + (1 - w) * v``, divided by ``1 - w ** (i + 1)``.

    ``start`` / ``carry`` continue a series (the index of ``values[0]`` and the biased ``last`` so far),
    so a growing series is smoothed in O(new points). Returns (smoothed, new carry). NaN points repeat
    the last value. Vectorised in blocks (a matrix product per block, a short loop across blocks).
    """
    y = np.asarray(values, dtype=np.float64)
    n = len(y)
    out = np.empty(n)
    if n == 0:
        return out, carry
    if np.isnan(y).any():
        y = y.copy()
        ok = ~np.isnan(y)
        idx = np.where(ok, np.arange(n), -1)
        np.maximum.accumulate(idx, out=idx)
        first = y[ok][0] if ok.any() else 0.0
        y = np.where(idx >= 0, y[np.maximum(idx, 0)], first)
    w = float(weight)
    block = 256
    k = np.arange(block)
    diff = np.subtract.outer(k, k)
    mat = np.where(diff >= 0, w ** np.maximum(diff, 0), 0.0) * (1.0 - w)
    pow_k = w ** (k + 1)
    full = (n // block) * block
    if full:
        local = y[:full].reshape(-1, block) @ mat.T
        for b in range(len(local)):
            local[b] += pow_k * carry
            carry = float(local[b, -1])
        out[:full] = local.ravel()
    for i in range(full, n):
        carry = carry * w + (1.0 - w) * y[i]
        out[i] = carry
    with np.errstate(under="ignore"):
        debias = 1.0 - w ** (np.arange(start, start + n, dtype=np.float64) + 1.0)
    return out / np.where(debias > 0, debias, 1.0), carry


class GrowingArray:
    """An append-only float64 array with amortised doubling; ``view`` is the filled part (no copy)."""

    __slots__ = ("_buf", "_n")

    def __init__(self, capacity: int = 1024, dtype: Any = np.float64) -> None:
        self._buf = np.empty(max(1, capacity), dtype=dtype)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def _reserve(self, extra: int) -> None:
        need = self._n + extra
        if need > len(self._buf):
            cap = len(self._buf)
            while cap < need:
                cap *= 2
            new = np.empty(cap, dtype=self._buf.dtype)
            new[: self._n] = self._buf[: self._n]
            self._buf = new

    def append(self, value: float) -> None:
        self._reserve(1)
        self._buf[self._n] = value
        self._n += 1

    def extend(self, values: Sequence[float] | np.ndarray) -> None:
        arr = np.asarray(values, dtype=self._buf.dtype)
        self._reserve(len(arr))
        self._buf[self._n : self._n + len(arr)] = arr
        self._n += len(arr)

    @property
    def view(self) -> np.ndarray:
        """The data so far; valid until the next append (which may move the buffer)."""
        return self._buf[: self._n]

    @property
    def capacity(self) -> int:
        return len(self._buf)

    def clear(self) -> None:
        self._n = 0


@dataclass
class MetricSeries:
    """One metric of one run: its values and the three x candidates (episode, step, elapsed)."""

    episode: GrowingArray = field(default_factory=GrowingArray)
    step: GrowingArray = field(default_factory=GrowingArray)
    elapsed: GrowingArray = field(default_factory=GrowingArray)
    y: GrowingArray = field(default_factory=GrowingArray)
    lo: float = math.inf  # smallest / largest value so far (NaN left out): constants, log axes
    hi: float = -math.inf

    def __len__(self) -> int:
        return len(self.y)

    def note(self, values: np.ndarray | float) -> None:
        if isinstance(values, (float, int)):
            v = float(values)
            if v == v:  # not NaN
                self.lo = v if v < self.lo else self.lo
                self.hi = v if v > self.hi else self.hi
            return
        arr = np.asarray(values, dtype=np.float64)
        if arr.size and not np.isnan(arr).all():
            self.lo = min(self.lo, float(np.nanmin(arr)))
            self.hi = max(self.hi, float(np.nanmax(arr)))

    @property
    def constant(self) -> bool:
        """Every value so far equal (and at least one)."""
        return len(self.y) > 0 and self.lo == self.hi

    def x(self, axis: str) -> np.ndarray:
        """x values for ``axis`` ("episode" / "step" / "elapsed"); the point index when that counter does
        not move (an imitation epoch has no games and no moves)."""
        if self.uses_index(axis):
            return np.arange(len(self.y), dtype=np.float64)
        return getattr(self, axis).view

    def uses_index(self, axis: str) -> bool:
        xs = getattr(self, axis).view
        return len(xs) > 1 and xs[-1] == xs[0]


class RunSeries:
    """Every metric of one run, growing as events arrive; the score's moving average kept incrementally."""

    def __init__(
        self,
        label: str,
        ma_window: int = 100,
        agent: str = "",
        run_id: int | None = None,
        infos: Sequence[MetricInfo] | None = None,
    ) -> None:
        self.label = label
        found = re.match(r"run (\d+) ([\w.+-]+)", label)
        self.agent = agent or (found.group(2) if found else "")
        self.run_id = run_id if run_id is not None else (int(found.group(1)) if found else None)
        #: what the run's agent declares (agents.metrics); None: looked up from ``agent``
        self._infos = tuple(infos) if infos is not None else None
        self.ma_window = max(1, ma_window)
        self.metrics: dict[str, MetricSeries] = {}
        self._smoothed: dict[tuple[str, float], tuple[GrowingArray, float]] = {}
        # Moving averages, kept incrementally: of the score, and of log2(max tile) (a geometric mean of
        # tiles reads better than an arithmetic one on a doubling scale).
        self.ma: dict[str, GrowingArray] = {SCORE: GrowingArray(), MAX_TILE: GrowingArray()}
        self._cumsum: dict[str, GrowingArray] = {SCORE: GrowingArray(), MAX_TILE: GrowingArray()}
        self.events = 0
        #: the run's episode counter, the highest its events said (0: no game counted yet)
        self.episodes_counted = 0
        self.last_board: np.ndarray | None = None
        #: games in the agent's own rolling mean score (its ``window`` knob; an agent without one
        #: keeps its last 100), see :meth:`set_config`
        self.mean_window: int | None = DEFAULT_MEAN_WINDOW
        #: (whether a greedy evaluation comes within the budget, the line saying when), see
        #: :meth:`set_evaluation`; None: not known (a stored run)
        self.eval_plan: tuple[bool, str] | None = None

    def set_evaluation(
        self,
        games: int,
        every_s: float | None,
        every_episodes: int | None,
        budget: Any = None,
        at_end: bool = False,
    ) -> None:
        """The run's evaluation settings and budget (a :class:`agents.base.Budget` or None): the
        curves say when the first greedy evaluation comes, or that none comes within the budget."""
        self.eval_plan = evaluation_plan(
            games,
            every_s,
            every_episodes,
            getattr(budget, "seconds", None),
            getattr(budget, "episodes", None),
            at_end,
        )

    def set_config(self, config: Mapping[str, Any] | None) -> None:
        """What of the run's settings the curves say: the games in the agent's mean score."""
        window = (config or {}).get("window")
        if isinstance(window, int) and not isinstance(window, bool) and window > 0:
            self.mean_window = window

    @property
    def has_own_mean(self) -> bool:
        """Whether the run's agent reports its own mean score over its last games (``mean_score``)."""
        return any(m.name == MEAN_SCORE.name for m in (self.infos or ()))

    @property
    def title(self) -> str:
        """How legends name the run: "run 3 · dqn" (its label until it has a run id)."""
        if self.run_id is not None and self.agent:
            return f"run {self.run_id} · {self.agent}"
        return self.label

    @property
    def infos(self) -> tuple[MetricInfo, ...] | None:
        """The metric metadata of the run's agent; None when the agent is unknown here."""
        if self._infos is None and self.agent:
            self._infos = declared_metrics(self.agent)
        return self._infos

    def set_agent(self, agent: str, run_id: int | None = None) -> None:
        if agent != self.agent:
            self._infos = None
        self.agent = agent
        if run_id is not None:
            self.run_id = run_id

    def smoothed(self, name: str, weight: float) -> np.ndarray:
        """The EMA of metric ``name`` (see :func:`ema`), brought up to date incrementally."""
        s = self.metrics.get(name)
        if s is None:
            return np.empty(0)
        key = (name, round(float(weight), 4))
        for other in [k for k in self._smoothed if k[0] == name and k != key]:
            del self._smoothed[other]  # the slider moved: the old weight is not coming back soon
        buf, carry = self._smoothed.get(key, (GrowingArray(), 0.0))
        if len(buf) < len(s):
            new, carry = ema(s.y.view[len(buf) :], key[1], len(buf), carry)
            buf.extend(new)
        self._smoothed[key] = (buf, carry)
        return buf.view

    def values(self, name: str, moving_average: bool = False, smooth: float = 0.0) -> np.ndarray:
        """What a curve of metric ``name`` draws: its moving average, its EMA (``smooth`` > 0), or its
        raw values."""
        if moving_average:
            return self.ma[name].view
        if smooth > 0:
            return self.smoothed(name, smooth)
        return self.metrics[name].y.view

    def series(self, name: str) -> MetricSeries:
        s = self.metrics.get(name)
        if s is None:
            s = self.metrics[name] = MetricSeries()
        return s

    def count(self, name: str) -> int:
        s = self.metrics.get(name)
        return len(s) if s is not None else 0

    @property
    def score_ma(self) -> GrowingArray:
        return self.ma[SCORE]

    def add_events(self, events: Iterable[MetricEvent]) -> None:
        before = {m: self.count(m) for m in self.ma}
        for ev in events:
            self.events += 1
            for name, value in ev.metrics.items():
                s = self.series(name)
                s.episode.append(ev.episode)
                s.step.append(ev.step)
                s.elapsed.append(ev.elapsed)
                s.y.append(value)
                s.note(value)
            if ev.board is not None:
                self.last_board = ev.board
            self.episodes_counted = max(self.episodes_counted, int(ev.episode))
        self._extend_ma(before)

    def add_columns(self, columns: Mapping[str, np.ndarray]) -> None:
        """Add the store's ``run_metrics`` columns (episode, step, elapsed + one per metric, NaN = absent)."""
        n = len(next(iter(columns.values()))) if columns else 0
        ep = np.asarray(columns.get("episode", np.zeros(n)), dtype=np.float64)
        st = np.asarray(columns.get("step", np.zeros(n)), dtype=np.float64)
        el = np.asarray(columns.get("elapsed", np.zeros(n)), dtype=np.float64)
        before = {m: self.count(m) for m in self.ma}
        for name, col in columns.items():
            if name in ("episode", "step", "elapsed", "kind", "id", "run_id"):
                continue
            col = np.asarray(col)
            if col.dtype.kind not in "fiu":
                continue
            col = col.astype(np.float64)
            keep = ~np.isnan(col)
            s = self.series(name)
            s.episode.extend(ep[keep])
            s.step.extend(st[keep])
            s.elapsed.extend(el[keep])
            s.y.extend(col[keep])
            s.note(col[keep])
        self.events += n
        if n:
            self.episodes_counted = max(self.episodes_counted, int(np.nanmax(ep, initial=0)))
        self._extend_ma(before)

    def _extend_ma(self, before: Mapping[str, int]) -> None:
        """Moving averages for the points added since ``before`` (O(new points), via running sums)."""
        for name, start in before.items():
            s = self.metrics.get(name)
            if s is None or len(s) == start:
                continue
            new = s.y.view[start:]
            if name == MAX_TILE:
                new = np.log2(np.maximum(new, 1.0))
            csum = self._cumsum[name]
            base = csum.view[-1] if len(csum) else 0.0
            csum.extend(base + np.cumsum(new))
            cs = csum.view
            idx = np.arange(start, len(cs))
            w = self.ma_window
            lo = idx - w
            prev = np.where(lo >= 0, cs[np.maximum(lo, 0)], 0.0)
            self.ma[name].extend((cs[idx] - prev) / np.minimum(idx + 1, w))


def _minutes(seconds: float) -> str:
    """ "10 minutes", "2 minutes", "30 seconds", "1.5 hours": a span as the evaluation plan says it."""
    if seconds < 60:
        return f"{seconds:g} seconds"
    if seconds < 5400:
        m = seconds / 60
        return f"{m:.3g} minute" + ("" if m == 1 else "s")
    return f"{seconds / 3600:.3g} hours"


def evaluation_plan(
    games: int,
    every_s: float | None,
    every_episodes: int | None,
    budget_s: float | None,
    budget_episodes: int | None,
    at_end: bool = False,
) -> tuple[bool, str]:
    """When a run's first greedy evaluation comes, from its settings: (whether one comes within the
    budget, a line saying when, or why none does). A 2-minute run evaluated every 10 minutes showed a
    "Greedy evaluation" panel that could never fill."""
    head = "Greedy evaluation"
    if games <= 0:
        return False, f"{head}: none in this run (0 evaluation games)"
    by_time = bool(every_s) and (budget_s is None or every_s is None or every_s < budget_s)
    by_episodes = bool(every_episodes) and (
        budget_episodes is None or every_episodes is None or every_episodes < budget_episodes
    )
    whens = []
    if by_time and every_s:
        whens.append(f"{_minutes(every_s)} of training")
    if by_episodes and every_episodes:
        whens.append(f"{every_episodes:,} episodes")
    if whens:
        return True, f"{head}: the first after {' or '.join(whens)}"
    if at_end:
        return True, f"{head}: at the end of the run"
    every = ([f"{_minutes(every_s)} of training"] if every_s else []) + (
        [f"{every_episodes:,} episodes"] if every_episodes else []
    )
    budget = ([_minutes(budget_s)] if budget_s else []) + (
        [f"{budget_episodes:,} episodes"] if budget_episodes else []
    )
    if not every:
        return False, f"{head}: none in this run (no evaluation interval)"
    return (
        False,
        f"{head}: none in this run (one every {' or '.join(every)}; the budget is {', '.join(budget)})",
    )
