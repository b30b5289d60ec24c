"""Sweeps: many runs of one agent over a grid or a random search, ranked by one metric (Qt-free).

A sweep is one agent, a base config (preset + form / flags), knobs with values (a grid: lists; a random
search: ranges, linear or log, ``samples`` points drawn with the sweep's seed), ``seeds`` runs per
point, a per-trial budget and a metric to rank by. Every trial is an ordinary run in the store, linked
to its sweep (``engine.store.sweeps``), so the runs table, the curves and ``runs list`` show trials like
any run.

**Metric.** ``auto`` ranks by the trial's own evaluation: each trial ends with ``eval_games`` greedy
games on the same seeded games for every trial (``eval_at_end``), and a point's figure is the mean of
its trials' last ``eval_score``. With ``eval_games=0`` it is the smoothed training score (the mean of
the last :data:`SMOOTH_LAST` episodes' scores). Any other metric the agent reports may be named; a loss
ranks lowest first.

**Backends.** ``local`` (default): up to ``workers`` trials at once, each in a child process that makes
the same :func:`studio.services.runs.open_run` call as ``train`` (``training_process``). A local child
writes its own run to the store as a window's run does: it is on the driver's machine, and SQLite in WAL
mode serialises the writers, so one code path trains a run wherever it starts. ``ray``: trials run as
Ray Tune trials (:mod:`studio.services.sweep_ray`); a trial on another machine never touches the SQLite
file: its metrics and checkpoints come back to the driver, which writes them.

**Resume.** A sweep killed at any moment resumes (:func:`run_sweep` with ``resume=ID``): finished trials
stay, a trial with a run that did not finish resumes from its last checkpoint, the rest start.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, NamedTuple

import numpy as np

from agents.base import Budget
from agents.runner import (
    DEFAULT_CHECKPOINT_EVERY_S,
    DEFAULT_EVAL_GAMES,
    DEFAULT_EVAL_SEED,
    DEFAULT_KEEP_CHECKPOINTS,
    RunError,
)
from agents.threads import thread_env
from engine.core import Rules
from engine.store import GameStore, TrialInfo
from studio.services.messages import ChildMessage, Done, Events, Failed, Started, is_last_word
from studio.services.runs import RunRequest, check_parallel, resolve
from studio.services.training_process import TrainingProcess, exit_reason
from studio.services.trials import TrialJob, TrialMessage

__all__ = [
    "AUTO",
    "MAX_TRIALS",
    "KnobRange",
    "PointResult",
    "SweepError",
    "SweepEvent",
    "SweepFinished",
    "SweepPlanned",
    "SweepProgress",
    "SweepRequest",
    "TrialDone",
    "TrialEvent",
    "TrialProgress",
    "TrialStarted",
    "grid_value_text",
    "knob_text",
    "metric_value",
    "parse_grid",
    "parse_grids",
    "parse_point",
    "parse_range",
    "parse_ranges",
    "plan_trials",
    "rank_sweep",
    "run_sweep",
    "sweep_request_from_spec",
    "swept_knobs",
]

log = logging.getLogger(__name__)

AUTO = "auto"
#: Trials one sweep may plan (a grid's product grows fast; thousands of runs is a typo, not a plan).
MAX_TRIALS = 1000
#: Episodes averaged for the smoothed training score.
SMOOTH_LAST = 100
#: Trial statuses after which a trial is done (a failed trial is not retried: it would fail again).
DONE = ("finished", "failed")
#: A sweep trial's periodic evaluations: none by time (it ends with one; see ``eval_at_end``).
TRIAL_EVAL_EVERY_S = 0.0
#: The sweep's settings each trial's run takes as they are (its fields of the same name).
TRIAL_FIELDS = (
    "agent",
    "preset",
    "rules",
    "budget",
    "seed",
    "checkpoint_every_s",
    "log_every",
    "eval_games",
    "eval_seed",
    "keep_checkpoints",
    "ray_address",
)


class SweepError(RunError):
    """A sweep that cannot be planned or run; ``field`` names the input at fault."""


@dataclass(frozen=True)
class KnobRange:
    """A random-search range of one numeric knob: ``low`` to ``high``, uniform or log-uniform."""

    name: str
    low: float
    high: float
    log: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "low": self.low, "high": self.high, "log": self.log}


@dataclass(frozen=True)
class SweepRequest:
    """Everything a user says about a sweep. Plain data (JSON-able through :meth:`spec`)."""

    agent: str | None = None
    preset: str | None = None
    #: the base config over the preset's (the window sends its whole form)
    config: Mapping[str, Any] = field(default_factory=dict)
    rules: Rules | None = None
    #: the budget of each trial
    budget: Budget | None = None
    #: knob -> values: the whole grid is tried (random search: drawn from like a choice)
    grid: Mapping[str, Sequence[Any]] = field(default_factory=dict)
    #: numeric knobs drawn from ranges: makes it a random search of ``samples`` points
    ranges: Sequence[KnobRange] = ()
    samples: int = 0
    #: explicit points instead of a grid or ranges: each a set of knob values over the base config (an
    #: A/B comparison is two points; ``{}`` is the base config itself)
    points: Sequence[Mapping[str, Any]] = ()
    #: runs per point, seeded seed, seed + 1, ...: every point sees the same seeds
    seeds: int = 1
    seed: int = 1
    metric: str = AUTO
    workers: int = 1
    backend: str = "local"
    ray_address: str | None = None
    eval_games: int = DEFAULT_EVAL_GAMES
    eval_seed: int = DEFAULT_EVAL_SEED
    checkpoint_every_s: float = DEFAULT_CHECKPOINT_EVERY_S
    keep_checkpoints: int = DEFAULT_KEEP_CHECKPOINTS
    #: store one training game in N (0 = none: a sweep's trials make many games nobody replays)
    log_every: int = 0

    @property
    def search(self) -> str:
        return "points" if self.points else "random" if self.ranges else "grid"

    def spec(self) -> dict[str, Any]:
        """The sweep as the store keeps it: enough to plan and run it again from the store alone."""
        b = self.budget
        return {
            "agent": self.agent,
            "preset": self.preset,
            "config": dict(self.config),
            "rules": None if self.rules is None else self.rules.to_dict(),
            "budget": None
            if b is None
            else {
                "episodes": b.episodes,
                "steps": b.steps,
                "seconds": b.seconds,
                "cpu_seconds": b.cpu_seconds,
            },
            "grid": {k: list(v) for k, v in self.grid.items()},
            "ranges": [r.to_dict() for r in self.ranges],
            "points": [dict(p) for p in self.points],
            "samples": self.samples,
            "seeds": self.seeds,
            "seed": self.seed,
            "metric": self.metric,
            "search": self.search,
            "workers": self.workers,
            "backend": self.backend,
            "ray_address": self.ray_address,
            "eval_games": self.eval_games,
            "eval_seed": self.eval_seed,
            "checkpoint_every_s": self.checkpoint_every_s,
            "keep_checkpoints": self.keep_checkpoints,
            "log_every": self.log_every,
        }


def sweep_request_from_spec(spec: Mapping[str, Any]) -> SweepRequest:
    """A stored spec back as a request (the inverse of :meth:`SweepRequest.spec`)."""
    b = spec.get("budget")
    rules = spec.get("rules")
    return SweepRequest(
        agent=spec.get("agent"),
        preset=spec.get("preset"),
        config=dict(spec.get("config") or {}),
        rules=None if not rules else Rules.from_dict(rules),
        budget=None
        if not b
        else Budget(**{k: b.get(k) for k in ("episodes", "steps", "seconds", "cpu_seconds")}),
        grid={k: tuple(v) for k, v in (spec.get("grid") or {}).items()},
        ranges=tuple(
            KnobRange(r["name"], r["low"], r["high"], bool(r.get("log"))) for r in spec.get("ranges") or ()
        ),
        samples=int(spec.get("samples") or 0),
        points=tuple(dict(p) for p in spec.get("points") or ()),
        seeds=int(spec.get("seeds") or 1),
        seed=int(spec.get("seed") or 0),
        metric=str(spec.get("metric") or AUTO),
        workers=int(spec.get("workers") or 1),
        backend=str(spec.get("backend") or "local"),
        ray_address=spec.get("ray_address"),
        eval_games=int(spec.get("eval_games", DEFAULT_EVAL_GAMES)),
        eval_seed=int(spec.get("eval_seed", DEFAULT_EVAL_SEED)),
        checkpoint_every_s=float(spec.get("checkpoint_every_s", DEFAULT_CHECKPOINT_EVERY_S)),
        keep_checkpoints=int(spec.get("keep_checkpoints", DEFAULT_KEEP_CHECKPOINTS)),
        log_every=int(spec.get("log_every", 0)),
    )


# ------------------------------------------------------------------------------------ parsing


def _field_name(config_cls: Any, name: str) -> str:
    wanted = name.strip().replace("-", "_")
    names = [s.name for s in config_cls.specs()]
    if wanted not in names:
        raise SweepError(f"{name!r} is not a setting of this agent; its settings: {', '.join(names)}", "grid")
    return wanted


def _split_quoted(rest: str, sep: str, name: str) -> list[tuple[str, bool]]:
    """``rest`` cut at each ``sep`` outside double (or single) quotes: (text, quoted) pieces, the quotes
    gone. SweepError for a quote left open (the rest of the line would silently be one value)."""
    pieces: list[tuple[str, bool]] = []
    buf: list[str] = []
    quote: str | None = None
    quoted = False
    for ch in rest:
        if quote is not None:
            if ch == quote:
                quote = None
            else:
                buf.append(ch)
        elif ch in "\"'" and not "".join(buf).strip():
            quote, quoted = ch, True
        elif ch == sep:
            pieces.append(("".join(buf), quoted))
            buf, quoted = [], False
        else:
            buf.append(ch)
    if quote is not None:
        raise SweepError(f"{name}: a {quote} is not closed in {rest!r}", name)
    pieces.append(("".join(buf), quoted))
    return pieces


def _join_choices(pieces: list[tuple[str, bool]], choices: Sequence[Any]) -> list[str]:
    """Unquoted pieces that together spell a choice with commas (``down,left,right,up``) as that one
    value, the longest first; any other piece stays as it is (and is refused if it is no choice)."""
    names = {str(c) for c in choices}
    out: list[str] = []
    i = 0
    while i < len(pieces):
        text, quoted = pieces[i]
        end = i + 1
        if not quoted:
            for j in range(len(pieces), i + 1, -1):
                run = pieces[i:j]
                if not any(q for _, q in run) and ",".join(t.strip() for t, _ in run) in names:
                    text, end = ",".join(t.strip() for t, _ in run), j
                    break
        out.append(text)
        i = end
    return out


def grid_value_text(value: Any, kind: str) -> str:
    """A knob value as one item of a ``--grid`` list: quoted when it holds the list's separator
    (``"down,left,right,up"``), so it is read back as one value."""
    text = knob_text(value)
    sep = ";" if kind.endswith("_tuple") else ","
    if sep in text or text[:1] in "\"'":
        q = "'" if '"' in text else '"'
        return f"{q}{text}{q}"
    return text


def parse_grid(text: str, config_cls: Any) -> tuple[str, tuple[Any, ...]]:
    """``"lr=1e-4,5e-4"`` -> ``("lr", (0.0001, 0.0005))``: values read and checked as the knob's type.

    A tuple knob takes values separated by ``;`` (``hidden=256,256;512,512``). A value in quotes is one
    value whatever it holds (``tag="a,b",c``); a choice knob also reads unquoted commas that spell one
    of its choices as that choice (``tie_break=down,left,right,up``)."""
    name, sep, rest = text.partition("=")
    if not sep or not rest.strip():
        raise SweepError(f"a grid knob is NAME=V1,V2,...; got {text!r}", "grid")
    spec = config_cls.spec(_field_name(config_cls, name))
    pieces = _split_quoted(rest, ";" if spec.kind.endswith("_tuple") else ",", spec.name)
    parts = _join_choices(pieces, spec.choices) if spec.choices else [t for t, _ in pieces]
    values: list[Any] = []
    for part in parts:
        if not part.strip():
            raise SweepError(f"{spec.name}: an empty value in {rest!r}", spec.name)
        try:
            v = spec.check(spec.parse(part))
        except ValueError as e:  # ConfigError
            raise SweepError(str(e), spec.name) from None  # ConfigError names the knob
        if v not in values:
            values.append(v)
    return spec.name, tuple(values)


def parse_point(text: str, config_cls: Any) -> dict[str, Any]:
    """``"lr=0.1 tc=false"`` -> ``{"lr": 0.1, "tc": False}``: one explicit point (``""``: the base config)."""
    point: dict[str, Any] = {}
    for item in text.split():
        name, values = parse_grid(item, config_cls)
        if len(values) != 1:
            raise SweepError(f"a point gives each knob one value; {name} has {len(values)}", name)
        if name in point:  # the second would silently win
            raise SweepError(f"the point {text.strip()!r} gives {name} twice: give each knob once", name)
        point[name] = values[0]
    return point


def parse_grids(texts: Sequence[str], config_cls: Any) -> dict[str, tuple[Any, ...]]:
    """Several grid knobs (``--grid A=1,2 B=3``) as one grid; a knob given twice is refused (the second
    would silently replace the first: ``lr=0.1,0.2 lr=0.3`` is a typo, not a plan)."""
    grid: dict[str, tuple[Any, ...]] = {}
    for text in texts:
        name, values = parse_grid(text, config_cls)
        if name in grid:
            raise SweepError(
                f"the grid gives {name} twice ({text!r}): list all its values once ({name}=V1,V2,...)", name
            )
        grid[name] = values
    return grid


def parse_ranges(texts: Sequence[str], config_cls: Any) -> tuple[KnobRange, ...]:
    """Several random knobs; a knob given twice is refused."""
    ranges = tuple(parse_range(t, config_cls) for t in texts)
    _refuse_repeats([r.name for r in ranges], "random search")
    return ranges


def _refuse_repeats(names: Sequence[str], what: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise SweepError(f"the {what} gives {name} twice: give each knob once", name)
        seen.add(name)


def parse_range(text: str, config_cls: Any) -> KnobRange:
    """``"lr=1e-5:1e-2:log"`` -> a log-uniform range of ``lr`` (``:lin`` or nothing: uniform)."""
    name, sep, rest = text.partition("=")
    bits = rest.split(":")
    if not sep or len(bits) not in (2, 3):
        raise SweepError(f"a random knob is NAME=LOW:HIGH[:log]; got {text!r}", "ranges")
    spec = config_cls.spec(_field_name(config_cls, name))
    if spec.kind not in ("int", "float"):
        raise SweepError(f"{spec.name} is not a number: give its values as a grid list instead", spec.name)
    scale = bits[2].strip().lower() if len(bits) == 3 else "lin"
    if scale not in ("log", "lin", "linear"):
        raise SweepError(f"{spec.name}: the scale is log or lin, got {bits[2]!r}", spec.name)
    try:
        low, high = (float(spec.check(spec.parse(b))) for b in bits[:2])
    except ValueError as e:
        raise SweepError(str(e), spec.name) from None  # ConfigError names the knob
    if not low < high:
        raise SweepError(f"{spec.name}: the range needs low < high, got {bits[0]}:{bits[1]}", spec.name)
    if scale == "log" and low <= 0:
        raise SweepError(f"{spec.name}: a log range needs low > 0, got {bits[0]}", spec.name)
    return KnobRange(spec.name, low, high, scale == "log")


def swept_knobs(spec: Mapping[str, Any]) -> list[str]:
    """The knobs a stored sweep spec varies, in order: its grid's, its ranges', its explicit points'."""
    names = [*spec.get("grid", {}), *(r["name"] for r in spec.get("ranges", []))]
    names += [k for p in spec.get("points", []) for k in p]
    return list(dict.fromkeys(names))


def knob_text(value: Any) -> str:
    """A knob value as tables, plots and line edits show it: ``true``, ``256,256``, ``0.0005``, and
    ``base`` for a knob an explicit point leaves at the base setting (None)."""
    if value is None:
        return "base"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple | list):
        return ",".join(str(x) for x in value)
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# ----------------------------------------------------------------------------------- planning


def _round(x: float) -> float:
    """Four significant digits: a drawn 0.000312847... reads as 0.0003128 in tables and forms."""
    return float(f"{x:.4g}")


class PlannedTrial(NamedTuple):
    """One trial of a plan: the knob values it sets over the sweep's config, and its seed. (A named
    tuple: the store takes plans as ``(values, seed)`` pairs, and old plans compare equal.)"""

    values: dict[str, Any]
    seed: int


def plan_trials(request: SweepRequest) -> list[PlannedTrial]:
    """The sweep's trials in order: their knob values and seed. Deterministic: the same request plans the
    same trials (a random search draws its points from ``seed``). SweepError for a plan that cannot run.
    """
    resolved = _resolved(request)
    cls = _agent_cls(resolved.agent)
    if not request.grid and not request.ranges and not request.points:
        raise SweepError("a sweep needs knobs to vary: a grid (NAME=V1,V2) or ranges (NAME=LOW:HIGH)", "grid")
    if request.points and (request.grid or request.ranges):
        raise SweepError("give explicit points, or a grid / ranges, not both", "points")
    if not 1 <= request.seeds <= 100:
        raise SweepError(f"seeds per point must be 1 to 100, got {request.seeds}", "seeds")
    # A knob both listed and ranged (or ranged twice) would be drawn twice, the last draw winning.
    _refuse_repeats([*request.grid, *(r.name for r in request.ranges)], "random search")
    points: list[dict[str, Any]]
    if request.points:
        points = [dict(p) for p in request.points]
        if len(points) < 2 and request.seeds < 2:
            raise SweepError(
                "explicit points compare at least two settings (or one setting over several seeds)", "points"
            )
    elif request.ranges:
        if not 1 <= request.samples <= MAX_TRIALS:
            raise SweepError(
                f"a random search needs 1 to {MAX_TRIALS} samples, got {request.samples}", "samples"
            )
        rng = np.random.default_rng(request.seed)
        points = []
        for _ in range(request.samples):
            p: dict[str, Any] = {}
            for name, values in request.grid.items():
                p[name] = values[int(rng.integers(len(values)))]
            for r in request.ranges:
                u = float(rng.random())
                x = (
                    math.exp(math.log(r.low) + u * (math.log(r.high) - math.log(r.low)))
                    if r.log
                    else r.low + u * (r.high - r.low)
                )
                p[r.name] = round(x) if cls.config_cls.spec(r.name).kind == "int" else _round(x)
            points.append(p)
    else:
        # Counted before a single combination is built: twelve knobs of ten values are 10^12 points,
        # which would fill the memory long before the limit below is checked.
        _check_trial_count(math.prod(len(v) for v in request.grid.values()), request.seeds)
        names = list(request.grid)
        points = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*request.grid.values())]
    _check_trial_count(len(points), request.seeds)
    base = dict(resolved.config.to_dict())
    for p in points:
        try:
            cls.config_cls.from_dict({**base, **p})
        except ValueError as e:  # ConfigError: a combination the agent refuses
            raise SweepError(
                f"the point {_point_text(p)} makes no config: {e}", getattr(e, "field", "grid")
            ) from None
    return [PlannedTrial(p, request.seed + k) for p in points for k in range(request.seeds)]


def _check_trial_count(points: int, seeds: int) -> None:
    n = points * seeds
    if n > MAX_TRIALS:
        raise SweepError(
            f"the sweep plans {n:,} trials; at most {MAX_TRIALS:,}: fewer values or seeds", "grid"
        )


def _point_text(p: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in p.items())


def _agent_cls(name: str) -> Any:
    from agents.registry import get_agent_class

    return get_agent_class(name)


def _base_run(request: SweepRequest) -> RunRequest:
    """A trial's run before its point and seed: the sweep's settings, one worker (the sweep's workers
    run trials side by side), evaluated once at its end. ``ray_address`` goes along: where the Ray
    backend runs the trials (a trial itself trains on its own machine)."""
    same = {name: getattr(request, name) for name in TRIAL_FIELDS}
    return RunRequest(
        **same,
        config=dict(request.config),
        eval_every_s=TRIAL_EVAL_EVERY_S,
        eval_every_episodes=None,
        eval_at_end=True,
        target=_target_of(request.agent),
    )


def _target_of(agent: str | None) -> str | None:
    """Where ``agent`` lives ("module:Class"): a trial's child process registers an agent that was
    registered at run time (a plug-in in code, a test's agent), which it would not know otherwise
    and every trial would fail with "unknown agent"."""
    if not agent:
        return None
    from agents.registry import target_of

    return target_of(agent)


def _resolved(request: SweepRequest) -> Any:
    try:
        check_parallel(request.workers, request.backend, request.ray_address)
        if (request.backend == "ray" or request.ray_address) and not _have_tune():
            raise SweepError(
                "sweeps on Ray need Ray Tune: pip install -e '.[ray]' (or pip install 'ray[tune]')", "backend"
            )
        resolved = resolve(_base_run(request))
    except SweepError:
        raise
    except RunError as e:  # one kind of error for every front end of a sweep
        raise SweepError(str(e), e.field) from None
    if request.metric != AUTO:
        from agents.metrics import metrics_of

        known = {m.name for m in metrics_of(_agent_cls(resolved.agent))}
        if request.metric not in known:
            raise SweepError(
                f"{resolved.agent} reports no metric {request.metric!r}; it reports {', '.join(sorted(known))}",
                "metric",
            )
    return resolved


def _have_tune() -> bool:
    """Whether Ray Tune can be imported (Ray installed without its ``tune`` extra lacks pandas)."""
    try:
        import ray.tune  # noqa: F401  (seconds: only asked when the Ray backend is)
    except ImportError:  # Ray without its tune extra
        return False
    except Exception:  # a broken dependency of Tune fails in its own way: the log keeps how
        log.exception("Ray Tune cannot be imported")
        return False
    return True


def trial_request(
    request: SweepRequest, sweep_id: int, trial: int, params: Mapping[str, Any], seed: int
) -> RunRequest:
    """The run request of one new trial."""
    base = _base_run(request)
    return replace(base, config={**base.config, **params}, seed=seed, sweep_trial=(sweep_id, trial))


def _starts_again(store: GameStore, run_id: int, status: str | None) -> bool:
    """Whether a trial's unfinished run has nothing to resume from: no checkpoint, or none of its
    checkpoint files left. A run that a live process still trains (running / paused: the store marks
    those of dead processes stopped when it opens) is never touched."""
    if status in ("running", "paused"):
        return False
    return not any(c.path.is_file() for c in store.run_checkpoints(run_id))


def resume_request(request: SweepRequest, run_id: int) -> RunRequest:
    """The request that resumes a trial's unfinished run from its last checkpoint."""
    base = _base_run(request)
    # A trial stopped during its closing evaluation has used its budget: one more move, then the
    # evaluation it still owes (a Budget cannot be zero; one move in thousands changes nothing).
    return replace(
        base,
        agent=None,
        preset=None,
        config={},
        rules=None,
        budget=None,
        seed=None,
        resume=run_id,
        budget_if_used_up=Budget(steps=1),
    )


# ----------------------------------------------------------------------------------- ranking


def metric_name(request: SweepRequest) -> str:
    """The metric a sweep ranks by (``auto`` resolved)."""
    if request.metric != AUTO:
        return request.metric
    return "eval_score" if request.eval_games > 0 else "score"


def lower_is_better(metric: str, agent: str | None = None) -> bool:
    """A loss ranks lowest first; every other metric highest first."""
    from agents.metrics import metrics_of

    infos = metrics_of(_agent_cls(agent)) if agent else ()
    return any(m.name == metric and m.kind == "loss" for m in infos)


def metric_value(store: GameStore, run_id: int, metric: str) -> float | None:
    """A run's figure for ``metric``: its last evaluation's ``eval_*`` figure, else the mean of the
    metric's last :data:`SMOOTH_LAST` values; None when it has none (yet)."""
    if metric.startswith("eval_"):
        cols = store.run_metrics(run_id, ["evaluation"])
        values = cols.get(metric)
        if values is None:
            return None
        values = values[np.isfinite(values)]
        return float(values[-1]) if len(values) else None
    kinds = ["episode"] if metric in ("score", "max_tile") else None
    cols = store.run_metrics(run_id, kinds)
    values = cols.get(metric)
    if values is None:
        return None
    values = values[np.isfinite(values)][-SMOOTH_LAST:]
    return float(values.mean()) if len(values) else None


@dataclass(frozen=True)
class PointResult:
    """One point of a sweep: its knob values, its trials and runs, and its figure (mean over seeds)."""

    params: dict[str, Any]
    trials: tuple[int, ...]
    run_ids: tuple[int | None, ...]
    statuses: tuple[str | None, ...]
    values: tuple[float | None, ...]
    rank: int | None = None

    @property
    def done(self) -> bool:
        return all(s in DONE for s in self.statuses)

    @property
    def scored(self) -> list[float]:
        return [v for v in self.values if v is not None]

    @property
    def mean(self) -> float | None:
        s = self.scored
        return float(np.mean(s)) if s else None

    @property
    def std(self) -> float | None:
        s = self.scored
        return float(np.std(s, ddof=1)) if len(s) > 1 else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "params": self.params,
            "mean": self.mean,
            "std": self.std,
            "values": list(self.values),
            "trials": list(self.trials),
            "runs": list(self.run_ids),
            "statuses": list(self.statuses),
        }


def rank_sweep(store: GameStore, sweep_id: int) -> tuple[str, list[PointResult]]:
    """The sweep's metric and its points, best first (points without a figure yet last, unranked)."""
    info = store.get_sweep(sweep_id)
    request = sweep_request_from_spec(info.spec)
    metric = metric_name(request)
    groups: dict[str, list[Any]] = {}
    order: list[str] = []
    for t in store.sweep_trials(sweep_id):
        key = repr(sorted(t.params.items()))
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(t)
    points = []
    for key in order:
        ts = groups[key]
        values = tuple(None if t.run_id is None else metric_value(store, t.run_id, metric) for t in ts)
        points.append(
            PointResult(
                dict(ts[0].params),
                tuple(t.trial for t in ts),
                tuple(t.run_id for t in ts),
                tuple(t.run_status for t in ts),
                values,
            )
        )
    low = lower_is_better(metric, info.agent)
    scored = sorted(
        (p for p in points if p.mean is not None),
        key=lambda p: (p.mean if low else -(p.mean or 0.0), p.trials[0]),
    )
    ranked = [replace(p, rank=i + 1) for i, p in enumerate(scored)]
    return metric, ranked + [p for p in points if p.mean is None]


# ------------------------------------------------------------------------------------ running


@dataclass(frozen=True)
class SweepEvent:
    """What a running sweep reports: one of :class:`SweepPlanned`, :class:`TrialStarted`,
    :class:`TrialProgress`, :class:`TrialDone` and :class:`SweepFinished` (match on the class). Each
    carries the sweep, its number of trials and how many of them have ended. ``kind`` names the class
    in words (logs, tests)."""

    kind: ClassVar[str] = ""
    sweep_id: int
    total: int = 0
    finished_trials: int = 0

    @property
    def failure(self) -> str | None:
        """A failed trial in one line (``trial 3 (run 12) failed: ...``); None for any other event."""
        return None


@dataclass(frozen=True)
class SweepPlanned(SweepEvent):
    """The sweep's trials are planned (``total``)."""

    kind: ClassVar[str] = "planned"


@dataclass(frozen=True)
class TrialEvent(SweepEvent):
    """An event of one trial (``trial``) and its run (None before the run exists)."""

    trial: int = 0
    run_id: int | None = None


@dataclass(frozen=True)
class TrialStarted(TrialEvent):
    """A trial's run began."""

    kind: ClassVar[str] = "started"


@dataclass(frozen=True)
class TrialProgress(TrialEvent):
    """A trial's latest metric events."""

    kind: ClassVar[str] = "progress"
    events: tuple[Any, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Ended(SweepEvent):
    """What ended (a trial, or the sweep) and how: ``status``, and ``error`` when it did not finish.
    Keyword-only, so that a trial's event still takes its trial and run after the sweep's fields."""

    status: str = "finished"
    error: str | None = None


@dataclass(frozen=True)
class TrialDone(TrialEvent, Ended):
    """A trial ended: its run's ``status``, and ``error`` when it failed."""

    kind: ClassVar[str] = "done"

    @property
    def failure(self) -> str | None:
        if not self.error:
            return None
        return f"trial {self.trial} (run {self.run_id}) failed: {self.error}"


@dataclass(frozen=True)
class SweepFinished(Ended):
    """The sweep ended: ``status`` (finished, stopped, failed) and why, when it did not finish."""

    kind: ClassVar[str] = "finished"


@dataclass
class SweepProgress:
    """How far a running sweep is, from its events: what the CLI's progress line and the Train tab show.

    ``running`` holds each running trial's own progress (0..1), so the sweep's :attr:`fraction` grows
    while its trials train, not only as they end. ``status``: ``starting``, ``running`` once a trial
    started, ``stopping`` after :meth:`stopping`, then the sweep's own end (``finished`` / ``stopped``).
    """

    sweep_id: int | None = None
    total: int = 0
    finished_trials: int = 0
    status: str = "starting"
    running: dict[int, float] = field(default_factory=dict)
    #: why the sweep failed or stopped, from its ``finished`` event (None: it says nothing)
    error: str | None = None

    def update(self, ev: SweepEvent) -> None:
        self.sweep_id, self.total, self.finished_trials = ev.sweep_id, ev.total, ev.finished_trials
        if isinstance(ev, TrialStarted):
            self.running[ev.trial] = 0.0
            if self.status == "starting":
                self.status = "running"
        elif isinstance(ev, TrialProgress) and ev.events:
            self.running[ev.trial] = float(getattr(ev.events[-1], "progress", 0.0))
        elif isinstance(ev, TrialDone):
            self.running.pop(ev.trial, None)
        elif isinstance(ev, SweepFinished):
            self.status = ev.status or "finished"
            self.error = ev.error

    def stopping(self) -> None:
        """The user asked the sweep to stop (its trials stop after their step and save)."""
        if self.status in ("starting", "running"):
            self.status = "stopping"

    @property
    def fraction(self) -> float:
        """The sweep's share done (running trials count by their own progress)."""
        return (self.finished_trials + sum(self.running.values())) / max(1, self.total)

    @property
    def final_status(self) -> str:
        """How the sweep ended: ``finished``, ``stopped`` (it resumes), else ``failed``."""
        return self.status if self.status in ("finished", "stopped") else "failed"

    def text(self) -> str:
        """``3/8 trials done, 2 running`` (``0/1 trial done``: the noun agrees with the total)."""
        trials = "trial" if self.total == 1 else "trials"
        return f"{self.finished_trials}/{self.total} {trials} done, {len(self.running)} running"


#: A backend runs trial jobs and reports what each trial's run says: it gets the jobs, the store, the
#: number of workers and a stop flag, and yields :class:`TrialMessage`, whatever runs the trials.
Backend = Callable[[list[TrialJob], GameStore, int, threading.Event], Iterator[TrialMessage]]


class LocalTrials:
    """The ``local`` backend: up to ``workers`` trials at once, each in a training child process (see
    the module's docstring). :meth:`run` yields what the children say; a child that dies before its
    last word (killed, crashed) is reported as a failed trial."""

    def __init__(self, jobs: list[TrialJob], store: GameStore, workers: int, stop: threading.Event) -> None:
        self.store, self.workers, self.stop = store, workers, stop
        # Each trial's share of the cores for its math libraries (torch, BLAS): trials side by side that
        # each start a thread per core fight over every core and all run slower.
        share = max(1, (os.cpu_count() or 1) // max(1, min(workers, len(jobs) or 1)))
        self.threads = thread_env(share)  # OpenMP, MKL, OpenBLAS: agents.threads
        #: what the children say, and None when a child's output ends
        self.inbox: queue.Queue[tuple[int, ChildMessage | None]] = queue.Queue()
        self.waiting = list(jobs)
        self.live: dict[int, TrainingProcess] = {}
        self.ended: set[int] = set()  # trials whose child said how their run ended
        self.stopping = False

    def run(self) -> Iterator[TrialMessage]:
        try:
            while self.waiting or self.live:
                self._start_more()
                try:
                    trial, msg = self.inbox.get(timeout=0.2)
                except queue.Empty:
                    continue
                said = self._take(trial, msg)
                if said is not None:
                    yield TrialMessage(trial, said)
        finally:
            self._close()

    def _start_more(self) -> None:
        if self.stop.is_set() and not self.stopping:
            self.stopping = True
            self.waiting.clear()
            for proc in self.live.values():
                proc.send("stop")
        while self.waiting and len(self.live) < self.workers and not self.stopping:
            trial, req = self.waiting.pop(0)
            proc = TrainingProcess(req, self.store.path, env=self.threads)
            self.live[trial] = proc
            threading.Thread(
                target=self._pump, args=(trial, proc), name=f"trial-{trial}", daemon=True
            ).start()

    def _pump(self, trial: int, proc: TrainingProcess) -> None:
        """A reading thread per child: its messages into the inbox, then None."""
        try:
            for msg in proc.messages():
                self.inbox.put((trial, msg))
        finally:
            self.inbox.put((trial, None))

    def _take(self, trial: int, msg: ChildMessage | None) -> ChildMessage | None:
        if msg is not None:
            if is_last_word(msg):
                self.ended.add(trial)
            return msg
        # The child's output ended.
        code = self.live.pop(trial).wait(30)
        if trial in self.ended:
            return None
        return Failed(f"the trial's process ended ({exit_reason(code)})")  # killed, crashed

    def _close(self) -> None:
        for proc in self.live.values():
            proc.send("stop")
        for proc in self.live.values():
            if proc.wait(60) is None:
                proc.kill()


def local_backend(
    jobs: list[TrialJob], store: GameStore, workers: int, stop: threading.Event
) -> Iterator[TrialMessage]:
    """Run the trials in local child processes (:class:`LocalTrials`)."""
    return LocalTrials(jobs, store, workers, stop).run()


def resumed_request(
    base: SweepRequest,
    *,
    workers: int | None = None,
    backend: str | None = None,
    ray_address: str | None = None,
) -> SweepRequest:
    """A stored sweep with what its resume says about where it runs: flags given now win over stored
    ones. ``backend="local"`` drops the stored Ray address (an address implies Ray); a new address
    implies Ray; what is not given stays as stored."""
    if ray_address is not None and not ray_address.strip():
        raise SweepError("--ray-address is empty: give HOST:PORT (or leave it out)", "ray_address")
    if backend == "local" and ray_address is not None:
        raise SweepError("--ray-address runs the sweep on Ray: leave out --backend local", "backend")
    if backend == "local":
        address = None
    elif ray_address is not None:
        address = ray_address
    else:
        address = base.ray_address
    return replace(
        base,
        workers=workers or base.workers,
        backend=backend or ("ray" if ray_address is not None else base.backend),
        ray_address=address,
    )


def _backend(name: str) -> Backend:
    if name == "ray":
        from studio.services.sweep_ray import ray_backend

        return ray_backend
    return local_backend


class _TrialNews:
    """A sweep's events from what its trials' runs say (counting the trials that ended)."""

    def __init__(self, sweep_id: int, total: int, finished: int) -> None:
        self.sweep_id, self.total, self.finished = sweep_id, total, finished
        self.runs: dict[int, int] = {}  # trial -> its run
        #: trials that failed here, even before their run existed (unknown agent, refused config)
        self.failed: set[int] = set()
        #: the first failure here: (trial, its run or None, the one-line reason)
        self.first_failure: tuple[int, int | None, str | None] | None = None

    def planned(self) -> SweepPlanned:
        return SweepPlanned(self.sweep_id, self.total, self.finished)

    def finished_with(self, status: str, error: str | None) -> SweepFinished:
        return SweepFinished(self.sweep_id, self.total, self.finished, status=status, error=error)

    def of(self, trial: int, msg: ChildMessage) -> SweepEvent | None:
        """The sweep's event for ``msg`` of ``trial`` (None: nothing the sweep reports)."""
        if isinstance(msg, Started):
            self.runs[trial] = msg.run_id
            return TrialStarted(self.sweep_id, self.total, self.finished, trial, msg.run_id)
        run_id = self.runs.get(trial)
        if isinstance(msg, Events):
            events = tuple(msg.events)
            return TrialProgress(self.sweep_id, self.total, self.finished, trial, run_id, events=events)
        if isinstance(msg, Done):
            self.finished += msg.status in DONE
            if msg.status == "failed":
                self._failed(trial, None)  # the store has its run's error
            return TrialDone(self.sweep_id, self.total, self.finished, trial, run_id, status=msg.status)
        if isinstance(msg, Failed):
            self.finished += 1
            self._failed(trial, msg.message)
            return TrialDone(
                self.sweep_id, self.total, self.finished, trial, run_id, status="failed", error=msg.message
            )
        return None  # a checkpoint: the ranking reads the store

    def _failed(self, trial: int, reason: str | None) -> None:
        self.failed.add(trial)
        if self.first_failure is None:
            self.first_failure = (trial, self.runs.get(trial), reason)


def _ending(
    store: GameStore, sweep_id: int, stop: threading.Event, news: _TrialNews
) -> tuple[str, str | None]:
    """How a sweep whose backend ran out of trials ended, and why when it failed.

    ``stopped`` when asked to or when trials are left (resume continues them); ``failed`` when no
    trial finished (every one failed: the first failure's reason, so that the terminal and the window
    say it, not only the log); else ``finished``."""
    trials = store.sweep_trials(sweep_id)
    left = [t for t in trials if t.run_status not in DONE and t.trial not in news.failed]
    if stop.is_set() or left:
        return "stopped", None
    if not trials or any(t.run_status == "finished" for t in trials):
        return "finished", None
    # They may all have failed before this run of the sweep (a resume): the store says why then.
    trial, run_id, reason = news.first_failure or (trials[0].trial, trials[0].run_id, None)
    if reason is None and run_id is not None:
        reason = store.get_run(run_id).error
    reason = reason or "its run failed (logs/studio.log says why)"
    where = f"trial {trial}" + ("" if run_id is None else f", run {run_id}")
    if len(trials) == 1:
        return "failed", f"its one trial failed ({where}): {reason}"
    return "failed", f"all {len(trials)} trials failed; the first ({where}): {reason}"


def run_sweep(
    request: SweepRequest | None,
    store: GameStore,
    *,
    resume: int | None = None,
    stop: threading.Event | None = None,
    workers: int | None = None,
    backend: str | None = None,
    ray_address: str | None = None,
) -> Iterator[SweepEvent]:
    """Plan (or resume) a sweep and run its trials; iterate for what happens.

    A new sweep: ``request``. A sweep to resume: ``resume=ID`` (its stored spec; ``workers``,
    ``backend`` and ``ray_address`` may change). Setting ``stop`` (or closing the iterator) stops the
    trials cleanly (each saves a checkpoint); the sweep is then ``stopped`` and resumes later.
    """
    stop = stop if stop is not None else threading.Event()
    if resume is not None:
        request = _claim_resumed(store, resume, workers, backend, ray_address)
        sweep_id = resume
    else:
        if request is None:
            raise SweepError("give a sweep to run or one to resume", "agent")
        trials = plan_trials(request)
        agent = _resolved(request).agent
        request = replace(request, agent=agent)
        sweep_id = store.create_sweep(agent, request.spec(), trials)
    plan = store.sweep_trials(sweep_id)
    news = _TrialNews(sweep_id, len(plan), sum(1 for t in plan if t.run_status in DONE))
    yield news.planned()
    jobs = _trial_jobs(request, store, sweep_id, plan)
    status, error = "failed", None
    try:
        for trial, msg in _backend("ray" if request.ray_address else request.backend)(
            jobs, store, request.workers, stop
        ):
            ev = news.of(trial, msg)
            if ev is not None:
                yield ev
        status, error = _ending(store, sweep_id, stop, news)
    except GeneratorExit:
        stop.set()
        status = "stopped"
        raise
    except KeyboardInterrupt:
        stop.set()
        status, error = "stopped", "interrupted (Ctrl-C): resume continues the unfinished trials"
        raise
    except RunError as e:  # the backend could not run trials (Ray did not start): nothing is lost
        status, error = "stopped", str(e)
        raise SweepError(str(e), e.field) from None
    except BaseException as e:
        error = f"{type(e).__name__}: {e}"
        raise
    finally:
        try:
            store.set_sweep_status(sweep_id, status, error)
        except (sqlite3.Error, ValueError):  # the error under way (if any) matters more; a resume fixes it
            log.exception("cannot mark sweep %s %s", sweep_id, status)
    yield news.finished_with(status, error)


def _claim_resumed(
    store: GameStore, sweep_id: int, workers: int | None, backend: str | None, ray_address: str | None
) -> SweepRequest:
    """The stored sweep ``sweep_id`` as a request (with what the resume says about where it runs),
    claimed by this process."""
    try:
        info = store.get_sweep(sweep_id)
    except ValueError as e:
        raise SweepError(str(e), "resume") from None
    request = resumed_request(
        sweep_request_from_spec(info.spec), workers=workers, backend=backend, ray_address=ray_address
    )
    _resolved(request)
    try:
        store.claim_sweep(sweep_id)
    except ValueError as e:
        raise SweepError(str(e), "resume") from None
    return request


def _trial_jobs(
    request: SweepRequest, store: GameStore, sweep_id: int, plan: Sequence[TrialInfo]
) -> list[TrialJob]:
    """The run request of every trial not done yet: a new run, or its unfinished run resumed."""
    jobs: list[TrialJob] = []
    for t in plan:
        if t.run_status in DONE:
            continue
        if t.run_id is not None and _starts_again(store, t.run_id, t.run_status):
            # Killed before its first checkpoint: nothing to resume from. Its run goes (it holds only
            # the metrics of moves the new run plays again) and the trial starts afresh on its seed,
            # so it ends as it would have without the kill.
            store.delete_run(t.run_id)
            t = replace(t, run_id=None, run_status=None)
        if t.run_id is not None:
            jobs.append(TrialJob(t.trial, resume_request(request, t.run_id)))
        else:
            jobs.append(TrialJob(t.trial, trial_request(request, sweep_id, t.trial, t.params, t.seed or 0)))
    return jobs
