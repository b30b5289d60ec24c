"""A run's options, declared once: :class:`RunOptions`, each field with its help, range, unit, command
line flag and form label (:func:`option`), and one :meth:`RunOptions.check`.

The run loop takes a ``RunOptions``; the window's request and the command line's are built on it
(:class:`studio.services.runs.RunRequest` extends it); the ``train`` and ``sweep`` flags are made
from :func:`option_specs` and the Train form's Run box reads its labels, ranges and tooltips there,
so an option is added, renamed or bounded here and nowhere else. As :func:`agents.config.knob`
does for an agent's settings.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from agents.run import settings
from agents.run.errors import RunError

#: The longest cadence an option accepts, in seconds (ten years, as the command line's longest
#: budget): a larger one is a typo, and nan or inf is never "never".
MAX_SECONDS = 60.0 * 60 * 24 * 366 * 10
#: The most evaluation games: a periodic evaluation plays them all each time, so more is hours.
MAX_EVAL_GAMES = 100_000
#: The largest evaluation seed: game i plays seed + i, which must still fit in SQLite's integers.
MAX_EVAL_SEED = 2**62


@dataclass(frozen=True)
class OptionSpec:
    """What the front ends need to know of one run option (read through :func:`option_specs`).

    ``low``/``high``: the accepted range (``above``: more than ``low``, not equal; None: no bound);
    ``unit``: ``"s"``, ``"MB"`` or ``""``; ``zero``: what 0 means (``"none"``), for messages and help.
    ``flag``: its command line flag (None: none), counting in ``per`` of the field's unit (60: a
    minutes flag of a seconds field), with ``help`` (argparse ``%(default)`` allowed) and ``metavar``.
    ``label``/``tip``: the form's row label and tooltip; ``form_range``: the form's narrower range (a
    spin box as wide as the full one crowds the panel), ``form_zero``: the form's text for 0.
    """

    name: str
    default: Any
    kind: type
    what: str
    low: float | None = None
    high: float | None = None
    above: bool = False
    unit: str = ""
    zero: str = ""
    flag: str | None = None
    per: float = 1.0
    metavar: str | None = None
    help: str = ""
    group: str | None = None
    label: str = ""
    tip: str = ""
    form_range: tuple[float, float] | None = None
    form_zero: str = ""

    @property
    def dest(self) -> str:
        """The flag's argparse attribute (``--eval-every-minutes``: ``eval_every_minutes``)."""
        assert self.flag is not None
        return self.flag.lstrip("-").replace("-", "_")

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not an accepted value of this option; None when it is."""
        if value is None or self.kind is bool:
            return None
        number = value if isinstance(value, int) else float(value)  # a large seed is exact as an int
        low_ok = self.low is None or (number > self.low if self.above else number >= self.low)
        if math.isfinite(number) and low_ok and (self.high is None or number <= self.high):
            return None
        return f"{self.what} must be {self.range_text()}{f' (0 = {self.zero})' if self.zero else ''}, got {value:g}"

    def range_text(self) -> str:
        """ "between 0 and 100,000", "more than 0 and at most 1,048,576 MB", ">= 0"."""
        unit = f" {self.unit}" if self.unit else ""
        if self.low is None:
            return f"at most {self.high:,g}{unit}"
        if self.high is None:
            return f"{'>' if self.above else '>='} {self.low:g}"
        if self.above:
            return f"more than {self.low:g} and at most {self.high:,.0f}{unit}"
        return f"between {self.low:g} and {self.high:,.0f}{unit}"


def option(default: Any, what: str, **meta: Any) -> Any:
    """A :class:`RunOptions` field: its default, how a message names it (``what``), and the rest of
    :class:`OptionSpec` as keywords."""
    return dataclasses.field(default=default, metadata={"what": what, **meta})


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """How a run trains besides its agent and budget: checkpoints, logged games, evaluations.

    Evaluation: ``eval_games`` greedy games (0 = none) every ``eval_every_s`` seconds of training and/or
    every ``eval_every_episodes`` episodes (None or 0 = not by that measure), on seed ``eval_seed``.
    ``eval_at_end``: also evaluate the agent the budget leaves (not after a stop), so the run ends with
    its own evaluation (what a sweep ranks its trials by). ``max_checkpoint_mb``: the largest checkpoint
    file written (a larger one is refused and the run goes on).
    """

    checkpoint_every_s: float = option(
        settings.DEFAULT_CHECKPOINT_EVERY_S,
        "seconds between checkpoints",
        low=0,
        high=MAX_SECONDS,
        above=True,
        unit="s",
        flag="--checkpoint-every",
        metavar="SECONDS",
        help="seconds between periodic checkpoints (default %(default)g)",
        label="Checkpoint every",
        tip="Minutes between periodic checkpoints (pause, stop and the end save one too)",
        form_range=(0.1, 10_000.0),
    )
    log_every: int = option(
        settings.DEFAULT_LOG_EVERY,
        "log every N-th game",
        low=0,
        zero="none",
        flag="--log-every",
        metavar="N",
        help="store one training game in N (0 = none; default %(default)s: keeps the store small)",
        label="Keep 1 game in",
        tip="Store one training game in N (0: none)",
        form_range=(0, 1_000_000),
    )
    eval_games: int = option(
        settings.DEFAULT_EVAL_GAMES,
        "evaluation games",
        low=0,
        high=MAX_EVAL_GAMES,
        zero="none",
        flag="--eval-games",
        metavar="K",
        help="greedy games of each periodic evaluation (0 = none; default %(default)s)",
        group="evaluation and checkpoint files",
        label="Evaluate",
        tip="Games of each periodic greedy evaluation (the same seeded games every time; 0: none)",
        form_range=(0, 10_000),
        form_zero="off",
    )
    eval_seed: int = option(
        settings.DEFAULT_EVAL_SEED,
        "evaluation seed",
        low=0,
        high=MAX_EVAL_SEED,
        flag="--eval-seed",
        metavar="S",
        help="seed of the evaluation games (default %(default)s, as eval's --seed)",
        group="evaluation and checkpoint files",
    )
    eval_every_s: float | None = option(
        settings.DEFAULT_EVAL_EVERY_S,
        "seconds between evaluations",
        low=0,
        high=MAX_SECONDS,
        unit="s",
        zero="not by time",
        flag="--eval-every-minutes",
        per=60.0,
        metavar="M",
        help="minutes of training between evaluations (0 = not by time; default %(default)g)",
        group="evaluation and checkpoint files",
        label="games every",
        tip="Minutes of training between greedy evaluations (played in the background; the best "
        "checkpoint is kept and marked)",
        form_range=(0.1, 10_000.0),
    )
    eval_every_episodes: int | None = option(
        None,
        "episodes between evaluations",
        low=0,
        zero="not by episodes",
        flag="--eval-every-episodes",
        metavar="N",
        help="also evaluate every N episodes (whichever comes first; default: by time only)",
        group="evaluation and checkpoint files",
    )
    keep_checkpoints: int = option(
        settings.DEFAULT_KEEP_CHECKPOINTS,
        "checkpoints to keep",
        low=0,
        zero="all",
        flag="--keep-checkpoints",
        metavar="N",
        help="checkpoint files kept besides the best: the newest N (0 = all; default %(default)s)",
        group="evaluation and checkpoint files",
        label="Keep checkpoints",
        tip="Checkpoint files to keep: the newest N plus the best (0: keep every one)",
        form_range=(0, 10_000),
        form_zero="all",
    )
    max_checkpoint_mb: float = option(
        settings.DEFAULT_MAX_CHECKPOINT_MB,
        "the checkpoint size limit",
        low=0,
        high=settings.MAX_CHECKPOINT_MB_LIMIT,
        above=True,
        unit="MB",
        flag="--max-checkpoint-mb",
        metavar="MB",
        help="largest checkpoint file written; a larger one is refused and training goes on, one past "
        "half of it is saved with a warning (default %(default)g)",
        group="evaluation and checkpoint files",
        label="Largest checkpoint",
        tip="Largest checkpoint file the run writes: a larger one is refused (training goes on, the "
        "refusal is in the run's messages); one past half of it is saved with a warning",
        form_range=(1.0, settings.MAX_CHECKPOINT_MB_LIMIT),
    )
    eval_at_end: bool = option(False, "evaluate at the end")

    def check(self) -> None:
        """RunError, with the field at fault, for options that make no run: each against its range,
        then evaluations that would never come."""
        for spec in option_specs():
            problem = spec.problem(getattr(self, spec.name))
            if problem:
                raise RunError(problem, spec.name)
        if (
            self.eval_games
            and not self.eval_every_s
            and not self.eval_every_episodes
            and not self.eval_at_end
        ):
            raise RunError(
                "evaluations need a cadence: seconds and/or episodes between them (or 0 evaluation games)",
                "eval_every_s",
            )

    def options(self) -> RunOptions:
        """Just the run options (of a request that extends them, for the run loop)."""
        return RunOptions(**{f.name: getattr(self, f.name) for f in dataclasses.fields(RunOptions)})


def option_specs() -> tuple[OptionSpec, ...]:
    """Every run option, in declaration order (the order of the flags and the form's rows)."""
    hints = {"float": float, "int": int, "bool": bool, "float | None": float, "int | None": int}
    return tuple(
        OptionSpec(name=f.name, default=f.default, kind=hints[str(f.type)], **f.metadata)
        for f in dataclasses.fields(RunOptions)
    )


def option_spec(name: str) -> OptionSpec:
    """The declaration of option ``name`` (KeyError when there is none)."""
    for spec in option_specs():
        if spec.name == name:
            return spec
    raise KeyError(name)
