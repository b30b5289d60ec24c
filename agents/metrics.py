"""What a learner's metrics mean and how to draw them, declared once next to the agent's events.

Declare them the way knobs are declared (:func:`agents.config.knob`), in the agent class::

    class DQNAgent(TorchAgent):
        metrics = (
            LOSS,
            MetricInfo("mean_q", "Mean Q", group="Mean Q", kind="other"),
            EPSILON,
            LR,
        )

The standard metrics every learner may emit (score, max tile, moves, speed) are implied
(:data:`STANDARD`); :func:`metrics_of` gives an agent's whole list. ``group`` says which axis a
metric shares: every group is one panel of the Train tab's curves, titled with the group's name; a
metric with ``group=""`` is a counter that is recorded but not drawn. ``kind`` orders the panels and
says what a metric is (``"loss"``, ``"schedule"``, ``"evaluation"``, ``"score"``, ``"speed"``,
``"other"``); ``scale="log"`` asks for a log y axis; ``smoothable=False`` keeps the smoothing slider
off it (a schedule is drawn as it is).

No Qt here: the CLI's progress line reads the same declarations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agents.config import default_label

KINDS = ("loss", "schedule", "evaluation", "score", "speed", "other")
SCALES = ("linear", "log")


@dataclass(frozen=True)
class MetricInfo:
    """One metric of a learner: its event name, how it reads, which axis it shares."""

    name: str
    label: str = ""  # what a person reads ("TD error"); default: from the name, as knob labels are
    unit: str = ""
    group: str | None = None  # the panel (axis) it shares; None: its own label; "": not drawn
    kind: str = "other"
    scale: str = "linear"
    smoothable: bool = True
    help: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a metric needs a name")
        if self.kind not in KINDS:
            raise ValueError(f"metric {self.name}: kind {self.kind!r} is not one of {KINDS}")
        if self.scale not in SCALES:
            raise ValueError(f"metric {self.name}: scale {self.scale!r} is not one of {SCALES}")
        if not self.label:
            object.__setattr__(self, "label", default_label(self.name))
        if self.group is None:
            object.__setattr__(self, "group", self.label)

    @property
    def drawn(self) -> bool:
        return bool(self.group)


def counter(name: str, help: str = "") -> MetricInfo:
    """A metric that is recorded (the store, the CSV) but not drawn: a generation number, a count."""
    return MetricInfo(name, group="", kind="other", smoothable=False, help=help)


def schedule_metric(name: str, label: str = "", help: str = "", scale: str = "linear") -> MetricInfo:
    """A value the learner sets rather than measures (a learning rate, an exploration rate): a panel of
    its own, drawn as it is (never smoothed)."""
    return MetricInfo(name, label, kind="schedule", scale=scale, smoothable=False, help=help)


# ------------------------------------------------------------------ the standard ones
SCORE = MetricInfo(
    "score", "Score", group="Score", kind="score", help="final score of the game just finished"
)
MAX_TILE = MetricInfo(
    "max_tile", "Max tile", group="Max tile", kind="score", smoothable=False, help="largest tile of that game"
)
MOVES = MetricInfo("moves", "Moves", group="", kind="score", help="moves in that game")
STEPS_PER_S = MetricInfo(
    "steps_per_s",
    "Moves/s",
    unit="moves/s",
    group="Speed",
    kind="speed",
    help="moves per second, recent average",
)
#: Every learner may emit these; the Score / Max tile / Speed panels draw them.
#: What the runner's periodic greedy evaluation reports (agents.runner.EVAL_METRICS), for every learner:
#: the mean score is drawn on its own axis; the rest is recorded (store, CSV, runs show).
EVALUATION: tuple[MetricInfo, ...] = (
    MetricInfo(
        "eval_score",
        "Greedy evaluation: mean score",
        group="Greedy evaluation",
        kind="evaluation",
        smoothable=False,
        help="mean score of the run's fixed evaluation games, played without exploration",
    ),
    counter("eval_score_ci95", "95 % half-width of that mean"),
    counter("eval_max_tile", "median max tile of the evaluation games"),
    counter("eval_2048_rate", "share of evaluation games that reached 2048"),
    counter("eval_moves", "mean moves per evaluation game"),
    counter("eval_games", "evaluation games played"),
    counter("eval_seconds", "wall seconds the evaluation took"),
)
STANDARD: tuple[MetricInfo, ...] = (SCORE, MAX_TILE, MOVES, STEPS_PER_S, *EVALUATION)

# ------------------------------------------------------------------ shared by several agents
LOSS = MetricInfo("loss", "Loss", group="Loss", kind="loss", scale="log", help="training loss")
VAL_LOSS = MetricInfo("val_loss", "Validation loss", group="Loss", kind="loss", scale="log")
EPSILON = schedule_metric("epsilon", "Exploration ε", "exploration rate")
LR = schedule_metric("lr", "Learning rate", scale="log")
GAMMA = schedule_metric("gamma", "Discount γ")
MEAN_SCORE = MetricInfo(
    "mean_score",
    "Mean score (recent games)",
    group="Score",
    kind="score",
    help="mean score of the recent games",
)
GAMES = MetricInfo("games", "Games", group="", kind="other", help="games finished since the last event")


# ------------------------------------------------------------------ reading them
def metrics_of(agent: Any) -> tuple[MetricInfo, ...]:
    """Every metric an agent class (or instance) may emit: the standard ones, then its own declarations
    (an agent's own declaration of a standard name wins)."""
    own = tuple(getattr(agent, "metrics", ()) or ())
    names = {m.name for m in own}
    return tuple(m for m in STANDARD if m.name not in names) + own


def by_name(infos: Iterable[MetricInfo]) -> dict[str, MetricInfo]:
    return {m.name: m for m in infos}


def groups(infos: Iterable[MetricInfo]) -> list[tuple[str, list[MetricInfo]]]:
    """The drawn metrics grouped by axis, in panel order: scores first, then losses, evaluations,
    schedules and the rest in declaration order, speeds last."""
    order: dict[str, list[MetricInfo]] = {}
    for m in infos:
        if m.drawn:
            order.setdefault(str(m.group), []).append(m)
    rank = {"score": 0, "loss": 1, "evaluation": 1, "other": 1, "schedule": 2, "speed": 3}
    items = list(order.items())
    return sorted(items, key=lambda kv: (rank[kv[1][0].kind], items.index(kv)))


def names_of_kind(infos: Sequence[MetricInfo], *kinds: str) -> tuple[str, ...]:
    """Names of the declared metrics of these kinds (``loss_metrics``-style lists for older callers)."""
    return tuple(m.name for m in infos if m.kind in kinds)


def legacy_metrics(loss: Sequence[str], schedule: Sequence[str]) -> tuple[MetricInfo, ...]:
    """Declarations for an agent that still lists ``loss_metrics`` / ``schedule_metrics`` names."""
    known = by_name((LOSS, VAL_LOSS, EPSILON, LR, GAMMA))
    out = [known.get(n) or MetricInfo(n, group="Loss", kind="loss") for n in loss]
    out += [known.get(n) or schedule_metric(n) for n in schedule]
    return tuple(out)


def complete_declarations(cls: Any) -> None:
    """Fill in what a class did not declare itself: ``metrics`` from the older ``loss_metrics`` /
    ``schedule_metrics`` names, or those names from ``metrics`` (``Agent.__init_subclass__`` calls this)."""
    own = vars(cls)
    if "metrics" in own:
        infos = tuple(own["metrics"])
        if "loss_metrics" not in own:
            cls.loss_metrics = names_of_kind(infos, "loss")
        if "schedule_metrics" not in own:
            cls.schedule_metrics = names_of_kind(infos, "schedule", "evaluation")
    elif "loss_metrics" in own or "schedule_metrics" in own:
        cls.metrics = legacy_metrics(getattr(cls, "loss_metrics", ()), getattr(cls, "schedule_metrics", ()))
