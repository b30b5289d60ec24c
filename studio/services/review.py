"""Game review: every move of a logged game graded by a strong agent, stored, resumable. Qt-free.

What a review is (the unit, grades, losses and accuracy) is in :mod:`agents.review`; this module picks
the reviewer, walks a game's positions, stores the reviewer's raw values chunk by chunk
(:mod:`engine.store.reviews`) and hands back a :class:`GameReview`. The window (Replay), the live
coach (Play), Progress and the ``review`` / ``progress`` commands all go through the functions here, so
the same game and reviewer give the same figures everywhere.

* :func:`default_reviewer` — **the one default reviewer** (the rule, as the README states it): the
  store's strongest n-tuple network (each n-tuple run offers its best evaluated checkpoint with its
  evaluation score, or, never evaluated, its last checkpoint with the run's last mean score; the
  highest wins, a tie goes to the newer run) with 2-ply search; when the store has none (or the game is
  not a 4x4 one-spawn game, which n-tuple networks do not play), heuristic expectimax at depth 2 with
  its values mapped to points by its calibration. A fallback, or a network whose games score under
  :data:`STRONG_SCORE`, carries a ``fallback`` note that every front end shows with the review; one
  that :func:`prepare_reviewer` trained (``review --prepare-reviewer``, the Replay tab's "Prepare a
  reviewer") becomes the default once it is the strongest.
* :func:`resolve_reviewer` — **the one choice of who reviews**, used by every front end: the default
  (at another depth when asked), or a named reviewer (``--reviewer``, the reviewer boxes): a registry
  name or a checkpoint file (one of the store's networks named as the default names it).
  Only reviewers whose values are points (n-tuple networks) or that have a calibration (expectimax)
  grade; others are refused with the reason.
* :func:`review_game` — review one game: a stored complete review comes back without building the
  reviewer; an unfinished one goes on from where it stopped (a kill keeps every committed chunk);
  ``progress(done, total)`` and ``should_stop()`` let a worker thread report and cancel.
* :func:`review_games` — several games with one reviewer built once (``review --since``).
* :func:`grade_played` — one position and the move played: the live coach's badge.

Whose moves: every move names its player (:attr:`agents.review.MoveGrade.player`); in a game the
person played in (alone or with agents under Watch) only the person's moves count in the accuracy and
the grade counts, the agents' are graded but marked not counted; a game without the person counts every
move.

Reviewer keys (the identity a stored review is reused by) name a checkpoint by the SHA-256 of its
bytes (cached by path, size and modification time), never by its path: a copied or moved data dir
reuses every review, and a file overwritten in place is another reviewer. Reviews imported from a
game file carry an ``imported:`` key (:func:`engine.store.reviews.insert_review`), so they never
stand in for a local reviewer's.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent
from agents.review import (
    GRADES,
    MAX_POINTS,
    MISTAKES,
    SPAN,
    Calibration,
    MoveGrade,
    accuracy,
    fit_calibration,
    given_up,
    given_up_rate,
    grade_counts,
    grade_move,
    grading_refusal,
    parse_calibration,
    parse_depths,
    values_in_points,
)
from agents.review import grade_record as grades_of
from agents.review import review_subject as subject_of
from agents.spec import AgentSpec
from engine import DIRECTIONS, Direction, Game, Rules
from engine.core import legal_mask
from engine.store import GameRecord, GameStore
from engine.store.reviews import IMPORTED

#: Default search depth of the default reviewers (n-tuple 2-ply, expectimax depth 2).
DEFAULT_DEPTH = 2
#: The rule of :func:`default_reviewer` in a few words, for the reviewer boxes' tooltips and ``--help``.
DEFAULT_RULE = (
    f"the store's strongest n-tuple network at {DEFAULT_DEPTH}-ply, else expectimax depth {DEFAULT_DEPTH} "
    "calibrated to points"
)
#: A chunk of reviewed moves is committed after this many moves or this many seconds, whichever first.
CHUNK_MOVES = 64
CHUNK_SECONDS = 0.5
#: An n-tuple reviewer whose games score less than this on average is named a weak one.
STRONG_SCORE = 20_000.0
#: The unit every review grades in.
UNIT = "expected final score (points)"
#: The shipped calibrations of reviewers whose values are not points: read-only defaults (nothing
#: writes inside the installed package); ``review --calibrate`` writes to the data dir's
#: :data:`CALIBRATIONS_FOLDER`, read first.
CALIBRATION_FILE = Path(__file__).resolve().parents[2] / "resources" / "review_calibration.json"
CALIBRATIONS_FOLDER = "calibrations"
#: Phases of a game by the highest tile on the board before the move: labels and each one's least tile.
PHASES: tuple[str, ...] = ("< 512", "512", "1024", "2048", "4096+")
PHASE_FLOORS: tuple[int, ...] = (0, 512, 1024, 2048, 4096)
#: What ``review --prepare-reviewer`` trains by default (minutes).
PREPARE_MINUTES = 4.0

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]


def phase_of(max_tile: int) -> int:
    """Index into :data:`PHASES` of a position whose highest tile is ``max_tile``."""
    return max(i for i, floor in enumerate(PHASE_FLOORS) if max_tile >= floor)


# ------------------------------------------------------------------------------------ identity

_DIGESTS: dict[tuple[str, int, int], str] = {}
_DIGEST_LOCK = threading.Lock()


def file_digest(path: str | Path) -> str | None:
    """SHA-256 of a file's bytes (hex), cached by (path, size, mtime); None when it cannot be read."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError:
        return None
    slot = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    with _DIGEST_LOCK:
        if slot in _DIGESTS:
            return _DIGESTS[slot]
    h = hashlib.sha256()
    try:
        with p.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    digest = h.hexdigest()
    with _DIGEST_LOCK:
        _DIGESTS[slot] = digest
    return digest


@dataclass(frozen=True)
class Reviewer:
    """An agent spec (registry name or checkpoint file) and the search depth it reviews at (None: the
    agent's own setting). :meth:`key` is its stable identity in the store; ``fallback`` (not part of
    it) says why this is not a strong reviewer, when it is not. ``calibrations``: the data dir's
    calibrations folder (:func:`calibrations_dir`), read before the shipped defaults; None: the
    shipped ones only."""

    spec: AgentSpec
    depth: int | None = None
    fallback: str | None = field(default=None, compare=False)
    #: chosen by the default rule (:func:`default_reviewer`); stored with its reviews, so a review made
    #: by an earlier default is known as one once the default has changed
    default: bool = field(default=False, compare=False)
    calibrations: Path | None = field(default=None, compare=False)

    @property
    def label(self) -> str:
        name = self.spec.display
        if self.spec.name == "ntuple" or (self.spec.checkpoint and "ntuple" in name):
            name = name.replace("ntuple", "n-tuple", 1)
        if self.depth is None:
            return name
        return f"{name}, 2-ply" if self.depth == 2 and "n-tuple" in name else f"{name} depth {self.depth}"

    def _spec_ident(self) -> dict[str, Any]:
        spec: dict[str, Any] = json.loads(self.spec.key())
        if self.spec.checkpoint is not None:
            digest = file_digest(self.spec.checkpoint)
            # gone: the path alone (building the reviewer will say the file is missing)
            spec["checkpoint"] = f"sha256:{digest}" if digest else self.spec.checkpoint
        return spec

    def calibration_file(self) -> Path | None:
        """Where ``review --calibrate`` writes this reviewer's calibration in the data dir (one file
        per agent, settings and checkpoint content, every depth in it), or None without a data dir."""
        if self.calibrations is None:
            return None
        spec = self._spec_ident()
        for part in ("config", "play"):  # the depth is a key inside the file, not part of its name
            spec[part] = {k: v for k, v in spec[part].items() if k not in _DEPTH_SETTINGS}
        digest = hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]
        name = self.spec.name
        if name is None and self.spec.checkpoint is not None:  # the agent the file holds, for a person
            meta = _checkpoint_meta(Path(self.spec.checkpoint))
            name = str(meta.get("agent")) if meta is not None else None
        safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in name or "checkpoint")
        return self.calibrations / f"{safe[:40]}-{digest}.json"

    def calibration_depths(self) -> dict[int, Calibration]:
        """This reviewer's calibrations by depth: the data dir's (:meth:`calibration_file`) over the
        shipped defaults (a registry agent with its default settings). A one-line ValueError naming
        the file and field when one of them is refused."""
        config = {**self.spec.config, **self.spec.play}
        shipped = {} if self.spec.checkpoint else shipped_depths(self.spec.name, config)
        return {**shipped, **own_depths(self.calibration_file())}

    def key(self) -> str:
        """``name@dD:hash`` — the same for the same agent, settings, checkpoint *content* and depth."""
        ident_of: dict[str, Any] = {
            "spec": json.dumps(self._spec_ident(), sort_keys=True),
            "depth": self.depth,
        }
        try:
            depths = self.calibration_depths()
            cal = _nearest(depths, self.depth)
            if cal is not None:
                ident_of["calibration"] = _cal_hash(cal)
        except ValueError as e:  # a refused calibration: its own key; building the reviewer says why
            ident_of["calibration"] = hashlib.sha1(str(e).encode()).hexdigest()[:12]
        ident = json.dumps(ident_of, sort_keys=True)
        digest = hashlib.sha1(ident.encode()).hexdigest()[:16]
        name = self.spec.name or "checkpoint"  # never the file's name: a copy elsewhere is the same reviewer
        return f"{name}@d{self.depth if self.depth is not None else '-'}:{digest}"

    def agent(self, rules: Rules | None = None) -> Agent:
        """The agent at :attr:`depth`, whether or not it can grade (``review --calibrate`` fits it)."""
        agent = self.spec.build(rules, exact=False)
        if rules is not None:
            why = type(agent).unsupported_reason(rules)
            if why:
                raise ValueError(f"{agent.name} cannot review this game: {why}")
        if self.depth is not None:
            knob = _depth_knob(agent)
            if knob is None:
                raise ValueError(f"{agent.name} has no search depth to set (leave out --depth)")
            changes: dict[str, Any] = {knob: self.depth}
            if hasattr(agent.config, "depths_policy"):
                changes["depths_policy"] = ()
            agent.config = agent.config.replace(**changes)
        return agent

    def build(self, rules: Rules | None = None) -> Agent:
        """The reviewing agent, at :attr:`depth`; ValueError with the reason when it cannot review."""
        agent = self.agent(rules)
        # ValueError: its values are not points and it has no calibration (or a refused one)
        _CALIBRATED[agent] = self.calibration_depths()
        grading_info(agent)
        return agent

    def describe(self, agent: Agent) -> dict[str, Any]:
        """What a stored review says about its reviewer (``agent``: this reviewer, built)."""
        knob = _depth_knob(agent)
        return {
            "key": self.key(),
            "name": agent.name,
            "checkpoint": self.spec.checkpoint,
            "depth": None if knob is None else int(getattr(agent.config, knob)),
            "label": self.label,
            "fallback": self.fallback,
            "default": self.default,
            **grading_info(agent),
        }


#: settings that are a search depth: a calibration file holds every depth of one reviewer
_DEPTH_SETTINGS = ("depth", "search_depth", "depths_policy")
#: a built reviewer -> its calibrations by depth (:meth:`Reviewer.build`), so :func:`grading_info`
#: and the live coach (:func:`grade_played` without ``info``) read the data dir's calibration too
_CALIBRATED: weakref.WeakKeyDictionary[Agent, dict[int, Calibration]] = weakref.WeakKeyDictionary()


def _depth_knob(agent: Agent) -> str | None:
    for knob in ("search_depth", "depth"):
        if hasattr(agent.config, knob):
            return knob
    return None


def _nearest(depths: dict[int, Calibration], depth: int | None) -> Calibration | None:
    if not depths:
        return None
    want = depth if depth is not None else DEFAULT_DEPTH
    return depths[min(depths, key=lambda d: (abs(d - want), d))]


def _cal_hash(cal: Calibration) -> str:
    return hashlib.sha1(json.dumps(cal.to_json(), sort_keys=True).encode()).hexdigest()[:12]


# ------------------------------------------------------------------------------------ calibration


def calibrations_dir(data_dir: str | Path) -> Path:
    """The data dir's folder of calibrations (``review --calibrate`` writes there; nothing is ever
    written inside the installed package: :data:`CALIBRATION_FILE` is a read-only default)."""
    return Path(data_dir) / CALIBRATIONS_FOLDER


def _store_calibrations(store: GameStore | None) -> Path | None:
    return None if store is None else calibrations_dir(store.path.parent)


def load_calibrations(path: Path | None = None) -> dict[str, Any]:
    """The shipped calibration file's contents ({} when there is none or it does not read as JSON)."""
    try:
        data = json.loads((path or CALIBRATION_FILE).read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def shipped_depths(name: str | None, config: dict[str, Any] | None = None) -> dict[int, Calibration]:
    """The shipped calibrations of agent ``name`` by depth ({} for an agent with other settings than
    its defaults besides the depth: the fit is for that heuristic and those weights). ValueError (one
    line, naming the file) when the file's entry is refused."""
    if name is None or any(k not in _DEPTH_SETTINGS for k in (config or {})):
        return {}
    entry = load_calibrations().get(name)
    if not isinstance(entry, dict) or "depths" not in entry:
        return {}
    return parse_depths(entry["depths"], f"{CALIBRATION_FILE} ({name})")


def own_depths(path: Path | None) -> dict[int, Calibration]:
    """A data dir calibration file's calibrations by depth ({} when there is none); ValueError (one
    line, naming the file) when it is refused."""
    if path is None:
        return {}
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise ValueError(f"{path}: cannot be read ({e.strerror or e})") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(f"{path}: not a calibration file (not JSON)") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a calibration file")
    return parse_depths(data.get("depths"), str(path))


def calibration_for(
    name: str | None, depth: int | None, config: dict[str, Any] | None = None
) -> Calibration | None:
    """The shipped calibration of agent ``name`` at search ``depth`` (the nearest depth fitted), or
    None (a refused one too: :meth:`Reviewer.build` says why)."""
    try:
        return _nearest(shipped_depths(name, config), depth)
    except ValueError:
        return None


def grading_info(agent: Agent) -> dict[str, Any]:
    """How ``agent``'s values become points: ``value_kind``, ``unit``, ``calibration`` (its knots as
    JSON text, or None when the values are points already), ``sees_death`` (its values see a game end one move ahead).
    ValueError (one line) when the agent cannot grade. A reviewer built by :meth:`Reviewer.build`
    uses its own calibrations (the data dir's first); any other agent the shipped ones."""
    knob = _depth_knob(agent)
    depth = int(getattr(agent.config, knob)) if knob else 1
    policy = getattr(agent.config, "depths_policy", ()) or ()
    sees_death = min([depth, *policy]) >= 2
    if agent.value_kind == "points" or agent.reviews_in_points:
        # review values in points; an agent that reviews in points sees a game's end one move ahead
        sees_death = sees_death or agent.reviews_in_points
        return {"value_kind": "points", "unit": UNIT, "calibration": None, "sees_death": sees_death}
    if agent in _CALIBRATED:
        cal = _nearest(_CALIBRATED[agent], depth)
    else:
        changed = {
            k: getattr(agent.config, k)
            for k in ("heuristic", "prob_cutoff")
            if hasattr(agent.config, k) and getattr(agent.config, k) != getattr(type(agent.config)(), k)
        }
        cal = _nearest(shipped_depths(agent.name, changed), depth)
    if cal is None:
        raise ValueError(
            f"{agent.name}'s move values are not points and it has no calibration, so it cannot grade "
            f"moves (review with an n-tuple checkpoint, or expectimax; review --calibrate --reviewer "
            f"{agent.name} fits one)"
        )
    return {
        "value_kind": agent.value_kind,
        "unit": UNIT,
        # as text: a reviewer's description stays a flat object (game files carry it, engine.store.exchange)
        "calibration": json.dumps(cal.to_json(), separators=(",", ":")),
        "sees_death": sees_death,
    }


def to_points(values: np.ndarray, info: dict[str, Any]) -> np.ndarray:
    """A reviewer's raw values (``info``: what :func:`grading_info` said) in points."""
    return values_in_points(values, info)


def calibration_refusal(agent: Agent) -> str | None:
    """Why ``agent`` cannot be calibrated (one line), or None when it can: it needs move values that
    rank positions on one scale (not points already, not shares of a policy)."""
    if agent.value_kind == "points" or agent.reviews_in_points:
        return f"{agent.name}'s move values are points already: it grades without a calibration"
    if agent.value_kind == "share":
        return (
            f"{agent.name}'s move values are a policy's shares of 1 per position, not values that "
            "compare across positions: they cannot be calibrated to points"
        )
    if type(agent).move_values is Agent.move_values:
        return f"{agent.name} rates no moves (it has no move values to calibrate)"
    return None


def calibrate(
    reviewer: Reviewer | None = None,
    depths: Sequence[int | None] = (1, 2, 3),
    games: int = 12,
    *,
    seed: int = 1000,
    path: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Fit ``reviewer``'s calibration (default: heuristic expectimax) at each of ``depths`` (None: its
    own depth) and write it to ``path`` (default: :meth:`Reviewer.calibration_file`, in the data dir;
    the shipped file is never written), keeping the depths fitted before. Returns what was written:
    ``{"name", "label", "key", "depths": {"D": knots}}``.

    The reviewer plays ``games`` seeded games to the end at that depth; at every position its raw value
    of the move it played and the score the game still made from there are a pair; the pairs are fitted
    by :func:`agents.review.fit_calibration` (a lost position's penalty counts as 0 points).
    ValueError (one line) for a reviewer that cannot be calibrated."""
    from agents.expectimax import DEFAULT_LOSS_PENALTY

    reviewer = reviewer or Reviewer(AgentSpec(name="expectimax"))
    target = path or reviewer.calibration_file()
    if target is None:
        raise ValueError("calibrate needs a data dir to write the calibration to")
    try:
        kept = {str(d): c.to_json() for d, c in own_depths(target).items()}
    except ValueError:
        kept = {}  # a refused file is replaced by this fit
    fitted: dict[str, Any] = {}
    for want in depths:
        at = Reviewer(reviewer.spec, want if want is not None else reviewer.depth)
        agent = at.agent()
        why = calibration_refusal(agent)
        if why:
            raise ValueError(why)
        knob = _depth_knob(agent)
        depth = int(getattr(agent.config, knob)) if knob else 1
        # expectimax's lost-position penalty is worth 0 points; another agent's values have no floor
        floor = -DEFAULT_LOSS_PENALTY / 2 if agent.name == "expectimax" else -math.inf
        raw: list[float] = []
        remaining: list[float] = []
        for k in range(games):
            game = Game(rules=agent.rules, seed=seed + k)
            vals: list[float] = []
            before: list[int] = []
            while not game.game_over:
                legal = set(game.legal_moves())
                values = {d: v for d, v in agent.review_values(game).items() if d in legal}
                if not values:
                    raise ValueError(f"{agent.name} rated no legal move at move {game.moves} of game {k + 1}")
                best = max(values, key=lambda d: values[d])
                vals.append(float(values[best]))
                before.append(game.score)
                game.step(best)
            raw += vals
            remaining += [game.score - s for s in before]
            if progress is not None:
                progress(f"depth {depth}: game {k + 1}/{games}, score {game.score:,}")
        cal = fit_calibration(raw, remaining, floor=floor, games=games)
        parse_calibration(cal.to_json())  # what is written reads back (knots finite and in range)
        fitted[str(depth)] = cal.to_json()
    out = {
        "name": reviewer.spec.name,
        "checkpoint": reviewer.spec.checkpoint,
        "label": reviewer.spec.display,
        "depths": {**kept, **fitted},
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    tmp.replace(target)
    return {**out, "path": str(target), "fitted": sorted(int(d) for d in fitted)}


# ------------------------------------------------------------------------------------ choosing


#: (path, size, mtime) -> the checkpoint's metadata, None when its archive or metadata do not read: a
#: run's files are read once per window, not at every review
_METADATA: dict[tuple[str, int, int], dict[str, Any] | None] = {}


def _checkpoint_meta(path: Path) -> dict[str, Any] | None:
    """The metadata of the checkpoint at ``path`` (the arrays are not inflated), or None when it does not
    read: a damaged or truncated best checkpoint is passed over, so the default reviewer falls back to
    the next one instead of refusing to review."""
    from agents.checkpoint import CheckpointError, read_checkpoint

    try:
        st = path.stat()
    except OSError:
        return None
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _METADATA:
        try:
            _METADATA[key] = read_checkpoint(path, arrays=False)[0]
        except CheckpointError:
            _METADATA[key] = None
    return _METADATA[key]


def _readable(path: Path) -> bool:
    return _checkpoint_meta(path) is not None


def _ntuple_candidates(store: GameStore) -> list[tuple[float, int, Path]]:
    """(score, run id, checkpoint) of every n-tuple run's best (else last) checkpoint on disk that
    reads (:func:`_readable`)."""
    found: list[tuple[float, int, Path]] = []
    for run in store.list_runs(agent="ntuple"):
        best = store.best_checkpoint(run.id)
        if best is not None and best.eval_score is not None and best.path.is_file() and _readable(best.path):
            found.append((best.eval_score, run.id, best.path))
            continue
        last = store.last_checkpoint(run.id)
        if last is not None and last.is_file() and _readable(last):
            score = run.last_metrics.get("mean_score")
            value = float(score) if isinstance(score, (int, float)) and math.isfinite(score) else -math.inf
            found.append((value, run.id, last))
    return found


def default_reviewer(store: GameStore | None = None, rules: Rules | None = None) -> Reviewer:
    """The default reviewer for games of ``rules`` (see the module docstring for the rule)."""
    classic = rules is None or (rules.is_classic_shape and rules.spawn_per_move == 1)
    if store is not None and classic:
        found = _ntuple_candidates(store)
        if found:
            score, run_id, path = max(found, key=lambda f: (f[0], f[1]))
            note = None
            if not score >= STRONG_SCORE:
                shown = "unknown" if not math.isfinite(score) else f"{score:,.0f}"
                note = (
                    f"a weak reviewer: its games score {shown} on average (under {STRONG_SCORE:,.0f}); "
                    "prepare a stronger one"
                )
            spec = AgentSpec.from_checkpoint(str(path.resolve()), "ntuple", label=f"n-tuple run {run_id}")
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
    for _score, run_id, found in _ntuple_candidates(store) if store is not None else []:
        if str(found.resolve()) == checkpoint:
            return Reviewer(
                AgentSpec.from_checkpoint(checkpoint, "ntuple", label=f"n-tuple run {run_id}"),
                depth,
                calibrations=calibrations,
            )
    learners = {name for name, trainable in _plugin_reviewers() if trainable}
    for _label, spec in _critic_reviewers(store, learners) if store is not None else []:
        if spec.checkpoint == checkpoint:
            return Reviewer(spec, depth, calibrations=calibrations)
    return Reviewer(AgentSpec.from_checkpoint(checkpoint), depth, calibrations=calibrations)


def reviewer_choices(store: GameStore | None) -> list[tuple[str, tuple[str, int | None] | None]]:
    """What a window offers: (label, None for the default | (name or checkpoint, depth)): the default,
    each n-tuple run's best checkpoint at 2-ply (strongest first, five at most), expectimax d1-d3, the
    newest trained checkpoints of the other learners that grade (a critic in points, a plug-in in
    points), then each plug-in agent whose move values are points and that needs no training (at its
    own depth): an untrained learner's values (zero tables) would grade every move "best". An entry is
    the reviewer ``resolve_reviewer(store, *entry)`` (None: ``resolve_reviewer(store, None)``)."""
    out: list[tuple[str, tuple[str, int | None] | None]] = [("default", None)]
    if store is not None:
        for _score, run_id, path in sorted(_ntuple_candidates(store), key=lambda f: (-f[0], -f[1]))[:5]:
            out.append((f"n-tuple run {run_id}, 2-ply", (str(path.resolve()), DEFAULT_DEPTH)))
    out += [(f"expectimax d{d}", ("expectimax", d)) for d in (1, 2, 3)]
    plugins = _plugin_reviewers()
    if store is not None:
        learners = {name for name, trainable in plugins if trainable}
        out += [(label, (str(spec.checkpoint), None)) for label, spec in _critic_reviewers(store, learners)]
    out += [(f"{name} (plug-in)", (name, None)) for name, trainable in plugins if not trainable]
    return out


def _plugin_reviewers() -> list[tuple[str, bool]]:
    """(name, trainable) of the plug-in agents whose move values are points (a gap is points given
    up): they can grade moves, a learner from its trained checkpoints only. (Those that map a critic to
    points review from a trained checkpoint too: :func:`_critic_reviewers`.)"""
    from agents.registry import loaded_plugins

    # Those imported so far (the window's background preload imports them all, `agents` and a named
    # --agent too): the reviewer box is filled on the window's thread, which importing a plug-in
    # (torch, seconds) would freeze.
    return [(name, bool(cls.trainable)) for name, cls in loaded_plugins() if cls.value_kind == "points"]


#: runs looked at for :func:`_critic_reviewers`, newest first (each costs a read of a checkpoint's
#: metadata the first time)
CRITIC_RUNS_SCANNED = 200


def _critic_reviewers(
    store: GameStore, learners: set[str] | frozenset[str] = frozenset(), most: int = 3
) -> list[tuple[str, AgentSpec]]:
    """(label, spec) of the newest runs' checkpoints (best, else last) of the learners that review by a
    critic mapped to points (:attr:`agents.base.Agent.reviews_in_points`, e.g. MaskablePPO) or that are
    one of ``learners`` (plug-ins whose values are points), ``most`` per agent: "sb3-maskppo run 7".
    Critics are known from each checkpoint's metadata: no agent class is imported (the reviewer box is
    filled on the window's thread)."""
    out: list[tuple[str, AgentSpec]] = []
    per_agent: dict[str, int] = {}
    for run in store.list_runs(limit=CRITIC_RUNS_SCANNED):
        if per_agent.get(run.agent, 0) >= most:
            continue
        best = store.best_checkpoint(run.id)
        path = best.path if best is not None and best.path.is_file() else store.last_checkpoint(run.id)
        meta = _checkpoint_meta(path) if path is not None else None
        if path is None or meta is None:
            continue
        if meta.get("reviews_in_points") is not True and run.agent not in learners:
            continue
        label = f"{run.agent} run {run.id}"
        out.append((label, AgentSpec.from_checkpoint(str(path.resolve()), run.agent, label=label)))
        per_agent[run.agent] = per_agent.get(run.agent, 0) + 1
    return out


# ------------------------------------------------------------------------------------------ results


@dataclass
class GameReview:
    """A game's review: the verdict on each reviewed move (``moves[i]`` is move ``i``, with its player),
    and whether it covers the whole game. ``subject``: whose accuracy it is ("you", or "every player"
    in a game without the person); ``phases[i]``: the phase (:data:`PHASES`) of move ``i``;
    ``evaluated``: positions the reviewer evaluated in the call that returned it (0 when it came from
    the store)."""

    game_id: int
    reviewer: dict[str, Any]
    n_moves: int
    moves: list[MoveGrade] = field(default_factory=list)
    evaluated: int = 0
    subject: str = "every player"
    phases: list[int] = field(default_factory=list)
    #: the default reviewer's label now, when an earlier default made this review (else None)
    default_now: str | None = None

    @property
    def complete(self) -> bool:
        return len(self.moves) >= self.n_moves

    @property
    def accuracy(self) -> float:
        """Percent over the subject's graded moves, see :func:`agents.review.accuracy`."""
        return accuracy(self.moves)

    @property
    def given_up(self) -> float:
        """The share (0..1) of the expected final score the subject's graded moves gave up,
        compounded (:func:`agents.review.given_up`): what the accuracy is made from."""
        return given_up(self.moves)

    @property
    def given_up_points(self) -> float:
        """The same in points: the sum of the subject's moves' losses."""
        return float(sum(g.loss for g in self.moves if g.graded and math.isfinite(g.loss)))

    def given_up_text(self) -> str:
        """``15.2 % of the expected final score (7,400 pts)``; past :data:`agents.review.SPAN` graded
        moves also the share per SPAN moves, which the accuracy is made from."""
        text = f"{100 * self.given_up:.1f} % of the expected final score ({self.given_up_points:,.0f} pts"
        if sum(g.graded for g in self.moves) > SPAN:
            text += f"; {100 * given_up_rate(self.moves):.1f} % per {SPAN} moves"
        return text + ")"

    @property
    def counts(self) -> dict[str, int]:
        """Moves per grade, the subject's moves only."""
        return grade_counts(self.moves)

    @property
    def points(self) -> bool:
        """Losses are expected points (always, since every reviewer grades in points)."""
        return True

    @property
    def label(self) -> str:
        return str(self.reviewer.get("label") or self.reviewer.get("name") or "?")

    @property
    def fallback(self) -> str | None:
        note = self.reviewer.get("fallback")
        return str(note) if note else None

    @property
    def superseded(self) -> str | None:
        """``reviewed by X; the default is now Y — Review again`` when an earlier default made this
        review (its figures are X's, not what the default gives now), else None."""
        if self.default_now is None:
            return None
        return f"reviewed by {self.label}; the default is now {self.default_now} — Review again"

    @property
    def mixed(self) -> bool:
        """True when several players made the reviewed moves."""
        return len({g.player for g in self.moves}) > 1

    def by_player(self) -> dict[str, dict[str, Any]]:
        """Per player (in order of their first move): moves, graded moves, accuracy, counted or not."""
        out: dict[str, dict[str, Any]] = {}
        for g in self.moves:
            out.setdefault(g.player or "?", {"moves": 0, "graded": 0, "counted": g.counted, "_g": []})
            row = out[g.player or "?"]
            row["moves"] += 1
            row["graded"] += not g.forced
            row["_g"].append(g)
        for row in out.values():
            # the same geometric mean as the game's figure, so the subject's row and the headline agree
            row["accuracy"] = round(accuracy(row.pop("_g"), uncounted=True), 2)
        return out

    def phase_accuracy(self) -> dict[str, float | None]:
        """The subject's accuracy per phase (None where it made no graded move)."""
        out: dict[str, float | None] = {}
        for p, name in enumerate(PHASES):
            picked = [g for g, ph in zip(self.moves, self.phases) if ph == p and g.graded]
            out[name] = accuracy(picked) if picked else None
        return out

    def curve(self) -> list[float]:
        """The evaluation graph, one value per reviewed position: the expected final score (points)."""
        return [g.value for g in self.moves]

    def next_mistake(self, after: int = -1, grades: Sequence[str] = MISTAKES) -> int | None:
        """The first of the subject's moves after move ``after`` whose grade is in ``grades``, or None."""
        return next(
            (g.index for g in self.moves[max(after + 1, 0) :] if g.counted and g.grade in grades), None
        )

    def previous_mistake(self, before: int, grades: Sequence[str] = MISTAKES) -> int | None:
        """The last of the subject's moves before move ``before`` whose grade is in ``grades``, or None."""
        return next(
            (g.index for g in reversed(self.moves[: max(before, 0)]) if g.counted and g.grade in grades),
            None,
        )

    def header(self) -> str:
        """One line naming the game, who played, the reviewer and how much is reviewed."""
        players = ", ".join(f"{who} ({row['moves']:,} moves)" for who, row in self.by_player().items())
        return (
            f"Game #{self.game_id} · played by {players or 'nobody'} · reviewer {self.label} · "
            f"{len(self.moves):,}/{self.n_moves:,} moves reviewed"
        )

    def summary(self) -> str:
        """One line: ``game 12: accuracy 93.4 % (you) · 2 blunder, 1 mistake, ... · reviewer ...``."""
        counts = self.counts
        parts = [f"{counts[g]} {g}" for g in GRADES if counts[g]]
        done = "" if self.complete else f" (first {len(self.moves)} of {self.n_moves} moves)"
        note = f" · {self.superseded}" if self.superseded else ""
        return (
            f"game {self.game_id}: accuracy {self.accuracy:.1f} % ({self.subject}){done} · gave up "
            f"{self.given_up_text()} · {', '.join(parts) or 'no moves'} · reviewer {self.label}{note}"
        )

    def to_json(self, *, moves: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "game": self.game_id,
            "reviewer": {**self.reviewer, "label": self.label, "fallback": self.fallback},
            "unit": UNIT,
            "subject": self.subject,
            "n_moves": self.n_moves,
            "reviewed": len(self.moves),
            "complete": self.complete,
            "accuracy": round(self.accuracy, 2),
            "given_up": round(self.given_up, 6),
            "given_up_points": round(self.given_up_points, 1),
            "counts": self.counts,
            "players": self.by_player(),
            "phases": {p: _num(a) if a is not None else None for p, a in self.phase_accuracy().items()},
            "loss_unit": "points",
        }
        out["reviewer"].pop("calibration", None)  # knots: in the store, not needed to read a review
        if self.default_now is not None:
            out["default_now"] = self.default_now
        if moves:
            out["moves"] = [_move_json(g) for g in self.moves]
        return out


def _num(x: float, digits: int = 2) -> float | None:
    return round(float(x), digits) if math.isfinite(x) else None


def _move_json(g: MoveGrade) -> dict[str, Any]:
    return {
        "index": g.index,
        "player": g.player,
        "counted": g.counted,
        "played": g.played.label,
        "best": g.best.label,
        "values": {d.label: _num(v) for d, v in g.values.items()},
        "loss": _num(g.loss),
        "relative": _num(g.relative, 6),
        "rank": g.rank,
        "grade": g.grade,
        "accuracy": _num(g.score),
        "value": _num(g.value),
        "risky": g.risky,
    }


# ------------------------------------------------------------------------------------------- review


def position_values(agent: Agent, rules: Rules, board: np.ndarray, score: int = 0) -> np.ndarray:
    """The agent's raw value of each move from ``board``, float64[4] in action order (NaN: illegal)."""
    game = Game(rules=rules, board=board, score=score)
    out = np.full(4, np.nan)
    for d, v in agent.review_values(game).items():
        out[int(d)] = v
    mask = game.legal_mask()
    out[~mask] = np.nan  # an agent rating an illegal move never makes it the best
    return out


def grade_played(
    agent: Agent,
    rules: Rules,
    board: np.ndarray,
    played: Direction | int,
    score: int = 0,
    index: int = 0,
    info: dict[str, Any] | None = None,
) -> MoveGrade:
    """The verdict on one move (``board``: the position before it): the live coach's badge. ``info``:
    what :func:`grading_info` says of ``agent`` (worked out when not given)."""
    info = info if info is not None else grading_info(agent)
    raw = position_values(agent, rules, np.asarray(board, dtype=np.int64), score)
    checked_points(agent, raw, info, board, index)
    return grade_move(
        to_points(raw, info),
        int(played),
        index=index,
        score_before=score,
        board=np.asarray(board, dtype=np.int64),
        sees_death=bool(info.get("sees_death", False)),
    )


class ReviewerFault(ValueError):
    """A reviewer's values refused (:func:`checked_points`): its fault, named in one line."""


def _reviewed(store: GameStore, review_id: int, fallback: int) -> int:
    """How far a review stands now (``fallback`` when it cannot be read)."""
    try:
        return len(store.review_values(review_id))
    except Exception:
        return fallback


def checked_points(
    agent: Agent, raw: np.ndarray, info: dict[str, Any], board: np.ndarray, index: int
) -> None:
    """Refuse a reviewer's values of one position (raw, action order) that are not a finite number of
    points within reach of a game (±MAX_POINTS) for every legal move: NaN, infinities or 1e308 would
    grade every move "best" (all tied, or all past any score). Its fault, named, in one line."""
    points = to_points(raw, info)
    legal = legal_mask(np.asarray(board, dtype=np.int64))
    for d in DIRECTIONS:
        if not legal[d]:
            continue
        v = float(points[d])
        if not (math.isfinite(v) and abs(v) <= MAX_POINTS):
            raise ReviewerFault(
                f"reviewer {agent.name} rated {d.label} at move {index + 1} as {float(raw[d])!r}: not a "
                f"finite value within ±{MAX_POINTS:g} points, the reviewer's fault (nothing stored)"
            )


def _game_review(
    rec: GameRecord, info: dict[str, Any], values: np.ndarray, reviewer: Reviewer | None, evaluated: int = 0
) -> GameReview:
    why = grading_refusal(info)
    if why:  # a review from a file (or an older studio) whose calibration is refused: no figures
        who = info.get("label") or info.get("name") or "?"
        raise ValueError(f"the review of game {rec.id} by {who} cannot be graded: {why}")
    described = dict(info)
    if reviewer is not None:  # the label and note as they stand now (a store may have grown a network)
        described["label"] = reviewer.label
        described["fallback"] = reviewer.fallback
    subject, _ = subject_of(rec)
    grades = grades_of(rec, values, described)
    phases = [phase_of(int(rec.layouts[g.index].max())) for g in grades]
    return GameReview(rec.id, described, rec.n_moves, grades, evaluated, subject, phases)


def stored_review(store: GameStore, game_id: int, reviewer: Reviewer) -> GameReview | None:
    """The stored (maybe unfinished) review of a game by ``reviewer``, without building it; None when
    that reviewer never reviewed the game."""
    info = store.get_review(game_id, reviewer.key())
    if info is None:
        return None
    rec = store.load_game(game_id)
    return _game_review(rec, info.reviewer, store.review_values(info.id), reviewer)


def review_by_key(store: GameStore, game_id: int, key: str) -> GameReview | None:
    """The stored review of a game under ``key`` as it stands (an imported one's key starts with
    ``imported:``; its reviewer says ``"imported": true`` and its label says so), or None."""
    info = store.get_review(game_id, key)
    if info is None:
        return None
    described = dict(info.reviewer)
    if described.get("imported"):
        described["label"] = f"{described.get('label') or described.get('name') or '?'} (imported)"
    return _game_review(store.load_game(game_id), described, store.review_values(info.id), None)


#: Before reviewers said whether they were the default: the labels only :func:`default_reviewer` gives
_DEFAULT_LABELS = ("n-tuple run ", "expectimax (calibrated)")


def _made_by_default(described: dict[str, Any]) -> bool:
    """Whether the reviewer that made a stored review was the default then (it says so; a review from
    before reviewers said it: the default rule's own labels at its depth)."""
    if "default" in described:
        return described["default"] is True
    label = str(described.get("label") or "")
    return described.get("depth") == DEFAULT_DEPTH and label.startswith(_DEFAULT_LABELS)


def earlier_default_review(store: GameStore, game_id: int, reviewer: Reviewer) -> GameReview | None:
    """The newest stored review of a game made by a reviewer that was the default then but is not
    ``reviewer`` (the default now), with :attr:`GameReview.default_now` set, so what shows it says
    whose figures they are; None when there is none (imported reviews never count)."""
    key = reviewer.key()
    for info in store.list_reviews(game_id):
        if info.key == key or info.key.startswith(IMPORTED) or not info.reviewed:
            continue
        if not _made_by_default(info.reviewer) or grading_refusal(info.reviewer):
            continue
        review = _game_review(store.load_game(game_id), info.reviewer, store.review_values(info.id), None)
        review.default_now = reviewer.label
        return review
    return None


def review_game(
    store: GameStore,
    game_id: int,
    reviewer: Reviewer | None = None,
    *,
    agent: Agent | None = None,
    progress: Progress | None = None,
    should_stop: ShouldStop | None = None,
) -> GameReview:
    """Review game ``game_id`` (see the module docstring); ``agent``: ``reviewer`` already built (a
    batch builds it once). A stop request ends the review after the move in hand, its values stored."""
    rec = store.load_game(game_id)
    reviewer = reviewer or default_reviewer(store, rec.rules)
    key = reviewer.key()
    info = store.get_review(game_id, key)
    if info is not None and info.reviewed >= rec.n_moves:
        return _game_review(rec, info.reviewer, store.review_values(info.id), reviewer)
    if agent is None:
        agent = reviewer.build(rec.rules)
    else:
        why = type(agent).unsupported_reason(rec.rules)
        if why:
            raise ValueError(f"{agent.name} cannot review game {game_id}: {why}")
    info = store.open_review(game_id, key, reviewer.describe(agent))
    done = info.reviewed
    parts = [store.review_values(info.id)]
    try:
        evaluated = _evaluate(store, info.id, agent, info.reviewer, rec, done, parts, progress, should_stop)
    except ReviewerFault:
        store.truncate_review(info.id, done)  # values it gave are not to be trusted: none of this call's
        raise
    except Exception:
        # the reviewer crashed (a checkpoint that does not run): what it finished stays, as after a
        # kill, but never an empty review
        store.truncate_review(info.id, _reviewed(store, info.id, done))
        raise
    return _game_review(rec, info.reviewer, np.concatenate(parts), reviewer, evaluated)


def _evaluate(
    store: GameStore,
    review_id: int,
    agent: Agent,
    info: dict[str, Any],
    rec: GameRecord,
    start: int,
    out: list[np.ndarray],
    progress: Progress | None,
    should_stop: ShouldStop | None,
) -> int:
    """Evaluate positions ``start ..`` of ``rec``, committing chunks; appends them to ``out``."""
    n = rec.n_moves
    rules = rec.rules
    pending: list[np.ndarray] = []
    at = start
    last_flush = time.perf_counter()

    def flush() -> None:
        nonlocal at, last_flush
        if pending:
            chunk = np.stack(pending)
            store.add_review_values(review_id, at, chunk)
            out.append(chunk)
            at += len(pending)
            pending.clear()
        last_flush = time.perf_counter()

    try:
        for i in range(start, n):
            if should_stop is not None and should_stop():
                break
            before = int(rec.scores[i] - rec.rewards[i])
            raw = position_values(agent, rules, rec.layouts[i], before)
            checked_points(agent, raw, info, rec.layouts[i], i)
            pending.append(raw)
            if len(pending) >= CHUNK_MOVES or time.perf_counter() - last_flush >= CHUNK_SECONDS:
                flush()
                if progress is not None:
                    progress(at, n)
    finally:
        flush()  # an exception or Ctrl-C still keeps what was evaluated
    if progress is not None:
        progress(at, n)
    return at - start


def review_games(
    store: GameStore,
    game_ids: Iterable[int],
    reviewer: Reviewer | None = None,
    *,
    depth: int | None = None,
    progress: Callable[[int, int, int, int], None] | None = None,
    should_stop: ShouldStop | None = None,
    on_skip: Callable[[int, str], None] | None = None,
) -> list[GameReview]:
    """Review several games with one reviewer (built once per rules); ``reviewer`` None: the default
    one for each game's rules, at ``depth`` when given. ``progress(game_no, games, moves_done,
    moves)``. Stops between moves when ``should_stop()`` says so (the reviews so far are returned,
    the unfinished one included).

    A game the reviewer cannot review (another board size for an n-tuple network, say) is passed by
    with ``on_skip(game_id, reason)`` and the others go on; without ``on_skip`` it raises ValueError.
    """
    ids = list(game_ids)
    defaults: dict[Rules, Reviewer] = {}
    agents: dict[tuple[str, Rules], Agent | str] = {}  # a built reviewer, or why it cannot be built
    out = []
    for k, gid in enumerate(ids):
        if should_stop is not None and should_stop():
            break

        def each(done: int, total: int, k: int = k) -> None:
            if progress is not None:
                progress(k, len(ids), done, total)

        try:
            summary = store.get_game(gid)
            if reviewer is None and summary.rules not in defaults:
                defaults[summary.rules] = resolve_reviewer(store, None, depth, summary.rules)
            chosen = reviewer or defaults[summary.rules]
            info = store.get_review(gid, chosen.key())
            agent = None
            if info is None or info.reviewed < summary.n_moves:
                slot = (chosen.key(), summary.rules)
                if slot not in agents:
                    try:
                        agents[slot] = chosen.build(summary.rules)
                    except ValueError as e:
                        agents[slot] = str(e)  # said once per rules, not rebuilt for every game
                built = agents[slot]
                if isinstance(built, str):
                    raise ValueError(built)
                agent = built
            out.append(review_game(store, gid, chosen, agent=agent, progress=each, should_stop=should_stop))
        except ValueError as e:
            if on_skip is None:
                raise
            on_skip(gid, str(e))
    return out


# ------------------------------------------------------------------------------- preparing a reviewer


def prepare_request(minutes: float = PREPARE_MINUTES, seed: int | None = None) -> Any:
    """The training run that prepares a reviewer: an n-tuple network (the default layout) trained for
    ``minutes``, evaluated at the end (10 greedy games), so that its best checkpoint carries the score
    the default-reviewer rule ranks it by. Plain data: a child process (the window's) can run it."""
    from agents.base import Budget
    from studio.services.runs import RunRequest

    if not (isinstance(minutes, (int, float)) and math.isfinite(minutes) and 0 < minutes <= 24 * 60):
        raise ValueError(f"minutes must be a number in (0, 1440], got {minutes!r}")
    return RunRequest(
        agent="ntuple",
        budget=Budget(seconds=60.0 * float(minutes)),
        seed=seed,
        log_every=0,
        eval_games=10,
        eval_every_s=None,
        eval_at_end=True,
    )


def prepare_reviewer(
    store: GameStore,
    minutes: float = PREPARE_MINUTES,
    *,
    seed: int | None = None,
    control: Any = None,
    on_event: Callable[[Any], None] | None = None,
) -> int:
    """Train a reviewer in this process as a recorded run (the same call as ``train``, see
    :func:`prepare_request`); ``on_event(MetricEvent)`` for progress, ``control`` to stop it. Returns
    the run's id; once it is the store's strongest n-tuple network it is the default reviewer."""
    from studio.services.runs import open_run

    run = open_run(prepare_request(minutes, seed), store, control)
    for event in run:
        if on_event is not None:
            on_event(event)
    return int(run.run_id)
