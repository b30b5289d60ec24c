"""Who reviews: the one default reviewer, a named one, and what a window offers. Qt-free.

The store is reached only through the :class:`~engine.store.GameStore` handed in: its n-tuple runs'
checkpoints (the default and the offered networks) and the newest runs of learners that grade.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agents.spec import AgentSpec
from engine import Rules

from .calibration import DEFAULT_DEPTH, calibrations_dir
from .identity import Reviewer, checkpoint_meta

if TYPE_CHECKING:
    from engine.store import GameStore

#: The rule of :func:`default_reviewer` in a few words, for the reviewer boxes' tooltips and ``--help``.
DEFAULT_RULE = (
    f"the store's strongest n-tuple network at {DEFAULT_DEPTH}-ply, else expectimax depth {DEFAULT_DEPTH} "
    "calibrated to points"
)
#: An n-tuple reviewer whose games score less than this on average is named a weak one.
STRONG_SCORE = 20_000.0
#: runs looked at for :func:`critic_reviewers`, newest first (each costs a read of a checkpoint's
#: metadata the first time)
CRITIC_RUNS_SCANNED = 200


@dataclass(frozen=True)
class Network:
    """An n-tuple run's checkpoint that can review: its best evaluated one with that evaluation's
    ``score``, else its last one with the run's last mean score (-inf: none)."""

    score: float
    run_id: int
    path: Path


@dataclass(frozen=True)
class ReviewerTarget:
    """A reviewer as :func:`resolve_reviewer` takes it: an agent name or a checkpoint file, at a search
    ``depth`` (None: the agent's own)."""

    text: str
    depth: int | None = None


@dataclass(frozen=True)
class ReviewerChoice:
    """One entry a window's reviewer box offers: its ``label`` and its ``target`` (None: the default)."""

    label: str
    target: ReviewerTarget | None = None


@dataclass(frozen=True)
class CriticReviewer:
    """A run's checkpoint of a learner that grades (``label``: "sb3-maskppo run 7")."""

    label: str
    spec: AgentSpec


def _store_calibrations(store: GameStore | None) -> Path | None:
    return None if store is None else calibrations_dir(store.path.parent)


def ntuple_candidates(store: GameStore) -> list[Network]:
    """Every n-tuple run's best (else last) checkpoint on disk that reads."""
    found: list[Network] = []
    for run in store.list_runs(agent="ntuple"):
        best = store.best_checkpoint(run.id)
        if (
            best is not None
            and best.eval_score is not None
            and best.path.is_file()
            and checkpoint_meta(best.path) is not None
        ):
            found.append(Network(best.eval_score, run.id, best.path))
            continue
        last = store.last_checkpoint(run.id)
        if last is not None and last.is_file() and checkpoint_meta(last) is not None:
            score = run.last_metrics.get("mean_score")
            value = float(score) if isinstance(score, (int, float)) and math.isfinite(score) else -math.inf
            found.append(Network(value, run.id, last))
    return found


@dataclass(frozen=True)
class PlayNetwork:
    """One of the store's n-tuple networks a person can take hints from or watch: ``label`` ("n-tuple
    run 3 · avg 255,422": its games' mean score), its ``spec`` (named as the reviewer of that
    checkpoint is, so the hint and the coach say which network they are), its ``score`` and whether
    it is ``strong`` enough to be the Play tab's default (as :func:`default_reviewer` takes the
    strongest to review)."""

    label: str
    spec: AgentSpec
    score: float
    strong: bool


def play_networks(store: GameStore, most: int = 3) -> list[PlayNetwork]:
    """The store's n-tuple networks (each run's best evaluated checkpoint, else its last), strongest
    first, ``most`` at most: the Play tab offers them above the untrained agents of the registry."""
    out = []
    for net in sorted(ntuple_candidates(store), key=lambda f: (-f.score, -f.run_id))[:most]:
        name = f"n-tuple run {net.run_id}"
        label = f"{name} · avg {net.score:,.0f}" if math.isfinite(net.score) else name
        spec = AgentSpec.from_checkpoint(str(net.path.resolve()), "ntuple", label=name)
        out.append(PlayNetwork(label, spec, net.score, net.score >= STRONG_SCORE))
    return out


def default_reviewer(store: GameStore | None = None, rules: Rules | None = None) -> Reviewer:
    """The default reviewer for games of ``rules`` (see the package docstring for the rule)."""
    classic = rules is None or (rules.is_classic_shape and rules.spawn_per_move == 1)
    if store is not None and classic:
        found = ntuple_candidates(store)
        if found:
            top = max(found, key=lambda f: (f.score, f.run_id))
            note = None
            if not top.score >= STRONG_SCORE:
                shown = "unknown" if not math.isfinite(top.score) else f"{top.score:,.0f}"
                note = (
                    f"a weak reviewer: its games score {shown} on average (under {STRONG_SCORE:,.0f}); "
                    "prepare a stronger one"
                )
            label = f"n-tuple run {top.run_id}"
            spec = AgentSpec.from_checkpoint(str(top.path.resolve()), "ntuple", label=label)
            return Reviewer(spec, DEFAULT_DEPTH, note, default=True, calibrations=_store_calibrations(store))
    why = (
        "no n-tuple network in this store yet: prepare a reviewer for sharper grades"
        if classic
        else "n-tuple networks review 4x4 one-spawn games only"
    )
    return Reviewer(
        AgentSpec(name="expectimax", label="expectimax (calibrated)"),
        DEFAULT_DEPTH,
        f"fallback: {why}",
        default=True,
        calibrations=_store_calibrations(store),
    )


def resolve_reviewer(
    store: GameStore | None, text: str | None, depth: int | None = None, rules: Rules | None = None
) -> Reviewer:
    """**The** choice of who reviews, for every front end (the Replay and Progress tabs' reviewer box,
    ``review`` and ``progress`` with or without ``--reviewer`` / ``--depth``, batches of games):

    * ``text`` None: :func:`default_reviewer` for games of ``rules``, ``depth`` replacing its depth
      when given;
    * a registry agent name: that agent at ``depth`` (None: its own setting);
    * a checkpoint file: that network at ``depth``. One of the store's n-tuple networks is named as the
      default and the reviewer box name it (``n-tuple run 3``), so the same network at the same depth
      is the same reviewer, with the same stored reviews, however it was chosen.

    Anything else: a one-line ValueError."""
    from agents.registry import agent_names

    if text is None:
        chosen = default_reviewer(store, rules)
        if depth is None:
            return chosen
        return Reviewer(
            chosen.spec,
            depth,
            chosen.fallback,
            default=depth == chosen.depth,
            calibrations=chosen.calibrations,
        )
    calibrations = _store_calibrations(store)
    if text in agent_names():
        return Reviewer(AgentSpec(name=text), depth, calibrations=calibrations)
    path = Path(text).expanduser()
    if not path.is_file():
        raise ValueError(
            f"unknown reviewer {text!r}: an agent name ({', '.join(agent_names())}) or a checkpoint file"
        )
    checkpoint = str(path.resolve())
    for net in ntuple_candidates(store) if store is not None else []:
        if str(net.path.resolve()) == checkpoint:
            label = f"n-tuple run {net.run_id}"
            spec = AgentSpec.from_checkpoint(checkpoint, "ntuple", label=label)
            return Reviewer(spec, depth, calibrations=calibrations)
    learners = {name for name, trainable in plugin_reviewers().items() if trainable}
    for critic in critic_reviewers(store, learners) if store is not None else []:
        if critic.spec.checkpoint == checkpoint:
            return Reviewer(critic.spec, depth, calibrations=calibrations)
    return Reviewer(AgentSpec.from_checkpoint(checkpoint), depth, calibrations=calibrations)


def resolve_choice(
    store: GameStore | None, target: ReviewerTarget | None, rules: Rules | None = None
) -> Reviewer:
    """The reviewer a :class:`ReviewerChoice`'s ``target`` names (None: the default for ``rules``)."""
    if target is None:
        return resolve_reviewer(store, None, None, rules)
    return resolve_reviewer(store, target.text, target.depth, rules)


def reviewer_options(store: GameStore | None) -> list[ReviewerChoice]:
    """What a window offers: the default, each n-tuple run's best checkpoint at 2-ply (strongest first,
    five at most), expectimax d1-d3, the newest trained checkpoints of the other learners that grade (a
    critic in points, a plug-in in points), then each plug-in agent whose move values are points and
    that needs no training (at its own depth): an untrained learner's values (zero tables) would grade
    every move "best". Each is the reviewer :func:`resolve_choice` gives for its target."""
    out = [ReviewerChoice("default")]
    if store is not None:
        for net in sorted(ntuple_candidates(store), key=lambda f: (-f.score, -f.run_id))[:5]:
            target = ReviewerTarget(str(net.path.resolve()), DEFAULT_DEPTH)
            out.append(ReviewerChoice(f"n-tuple run {net.run_id}, 2-ply", target))
    out += [ReviewerChoice(f"expectimax d{d}", ReviewerTarget("expectimax", d)) for d in (1, 2, 3)]
    plugins = plugin_reviewers()
    if store is not None:
        learners = {name for name, trainable in plugins.items() if trainable}
        for critic in critic_reviewers(store, learners):
            out.append(ReviewerChoice(critic.label, ReviewerTarget(str(critic.spec.checkpoint))))
    out += [
        ReviewerChoice(f"{name} (plug-in)", ReviewerTarget(name))
        for name, trainable in plugins.items()
        if not trainable
    ]
    return out


def reviewer_choices(store: GameStore | None) -> list[tuple[str, tuple[str, int | None] | None]]:
    """:func:`reviewer_options` as (label, None | (name or checkpoint, depth)): the item data the tabs'
    reviewer boxes hold today (``resolve_reviewer(store, *data)``); new code takes the options."""
    return [
        (c.label, None if c.target is None else (c.target.text, c.target.depth))
        for c in reviewer_options(store)
    ]


def plugin_reviewers() -> dict[str, bool]:
    """The plug-in agents whose move values are points (a gap is points given up), each with whether it
    is trainable: they can grade moves, a learner from its trained checkpoints only. (Those that map a
    critic to points review from a trained checkpoint too: :func:`critic_reviewers`.)"""
    from agents.registry import loaded_plugins

    # Those imported so far (the window's background preload imports them all, `agents` and a named
    # --agent too): the reviewer box is filled on the window's thread, which importing a plug-in
    # (torch, seconds) would freeze.
    return {name: bool(cls.trainable) for name, cls in loaded_plugins() if cls.value_kind == "points"}


def critic_reviewers(
    store: GameStore, learners: set[str] | frozenset[str] = frozenset(), most: int = 3
) -> list[CriticReviewer]:
    """The newest runs' checkpoints (best, else last) of the learners that review by a critic mapped to
    points (:attr:`agents.base.Agent.reviews_in_points`, e.g. MaskablePPO) or that are one of
    ``learners`` (plug-ins whose values are points), ``most`` per agent. Critics are known from each
    checkpoint's metadata: no agent class is imported (the reviewer box is filled on the window's
    thread)."""
    out: list[CriticReviewer] = []
    per_agent: dict[str, int] = {}
    for run in store.list_runs(limit=CRITIC_RUNS_SCANNED):
        if per_agent.get(run.agent, 0) >= most:
            continue
        best = store.best_checkpoint(run.id)
        path = best.path if best is not None and best.path.is_file() else store.last_checkpoint(run.id)
        meta = checkpoint_meta(path) if path is not None else None
        if path is None or meta is None:
            continue
        if meta.get("reviews_in_points") is not True and run.agent not in learners:
            continue
        label = f"{run.agent} run {run.id}"
        out.append(
            CriticReviewer(label, AgentSpec.from_checkpoint(str(path.resolve()), run.agent, label=label))
        )
        per_agent[run.agent] = per_agent.get(run.agent, 0) + 1
    return out
