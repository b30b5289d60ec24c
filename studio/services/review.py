"""Game review: every move of a logged game graded by a strong agent, stored, resumable. Qt-free.

What a review is (grades, losses, accuracy and their thresholds) is in :mod:`agents.review`; this
module picks the reviewer, walks a game's positions, stores the reviewer's values chunk by chunk
(:mod:`engine.store.reviews`) and hands back a :class:`GameReview`.

* :func:`resolve_reviewer` / :func:`default_reviewer` — which agent reviews: a registry name or a
  checkpoint file, at a search depth; by default the store's strongest n-tuple checkpoint with 2-ply
  search (each n-tuple run offers its best checkpoint with its evaluation score, or, never evaluated,
  its last checkpoint with the run's last mean score; the highest wins, a tie goes to the newer run;
  files that are gone are skipped), else heuristic expectimax at depth 2.
* :func:`review_game` — review one game: a stored complete review comes back without building the
  reviewer; an unfinished one goes on from where it stopped (a kill keeps every committed chunk);
  ``progress(done, total)`` and ``should_stop()`` let a worker thread report and cancel.
* :func:`review_games` — several games with one reviewer built once (``review --since``).
* :func:`grade_played` — one position and the move played: what a live coach badge shows after a
  Play move (the caller keeps a built reviewer agent and runs it off the GUI thread).

For the window: :meth:`GameReview.curve` is the evaluation graph of the Replay tab (expected final
score for points reviewers, 0..1 otherwise), :meth:`GameReview.next_mistake` /
:meth:`GameReview.previous_mistake` the mistake navigation, ``GameReview.moves[i]`` the verdict shown
beside move ``i``.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent
from agents.review import (
    GRADES,
    MISTAKES,
    MoveGrade,
    accuracy,
    grade_counts,
    grade_move,
    normalised_curve,
)
from agents.spec import AgentSpec
from engine import Direction, Game, Rules
from engine.store import GameRecord, GameStore

#: Default search depth of the default reviewers (n-tuple 2-ply, expectimax depth 2).
DEFAULT_DEPTH = 2
#: A chunk of reviewed moves is committed after this many moves or this many seconds, whichever first.
CHUNK_MOVES = 64
CHUNK_SECONDS = 0.5

Progress = Callable[[int, int], None]
ShouldStop = Callable[[], bool]


@dataclass(frozen=True)
class Reviewer:
    """An agent spec (registry name or checkpoint file) and the search depth it reviews at (None: the
    agent's own setting). :meth:`key` is its stable identity in the store."""

    spec: AgentSpec
    depth: int | None = None

    @property
    def label(self) -> str:
        depth = "" if self.depth is None else f" depth {self.depth}"
        return f"{self.spec.display}{depth}"

    def key(self) -> str:
        """``name@dD:hash`` — the same for the same agent, settings, checkpoint file and depth.

        A checkpoint counts by its path, size and modification time: a file overwritten in place (a
        run that saves to the same name, a copy over it) is another reviewer, whose reviews are its own.
        """
        ident_of: dict[str, Any] = {"spec": self.spec.key(), "depth": self.depth}
        if self.spec.checkpoint is not None:
            try:
                st = Path(self.spec.checkpoint).stat()
                ident_of["file"] = [st.st_size, st.st_mtime_ns]
            except OSError:
                pass  # gone: the path alone (building the reviewer will say the file is missing)
        ident = json.dumps(ident_of, sort_keys=True)
        digest = hashlib.sha1(ident.encode()).hexdigest()[:16]
        name = self.spec.name or Path(self.spec.checkpoint or "checkpoint").stem
        return f"{name}@d{self.depth if self.depth is not None else '-'}:{digest}"

    def build(self, rules: Rules | None = None) -> Agent:
        """The reviewing agent, at :attr:`depth`; ValueError with the reason when it cannot review."""
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

    def describe(self, agent: Agent) -> dict[str, Any]:
        """What a stored review says about its reviewer (``agent``: this reviewer, built)."""
        knob = _depth_knob(agent)
        return {
            "key": self.key(),
            "name": agent.name,
            "checkpoint": self.spec.checkpoint,
            "depth": None if knob is None else int(getattr(agent.config, knob)),
            "label": self.label,
            "value_kind": agent.value_kind,
        }


def _depth_knob(agent: Agent) -> str | None:
    for knob in ("search_depth", "depth"):
        if hasattr(agent.config, knob):
            return knob
    return None


def default_reviewer(store: GameStore | None = None, rules: Rules | None = None) -> Reviewer:
    """The strongest reviewer the store has: its best n-tuple checkpoint at 2-ply search, else
    heuristic expectimax at depth 2 (also for games an n-tuple network cannot play: not 4x4)."""
    if store is not None and (rules is None or (rules.is_classic_shape and rules.spawn_per_move == 1)):
        found: list[tuple[float, int, Path]] = []
        for run in store.list_runs(agent="ntuple"):
            best = store.best_checkpoint(run.id)
            if best is not None and best.eval_score is not None and best.path.is_file():
                found.append((best.eval_score, run.id, best.path))
                continue
            last = store.last_checkpoint(run.id)
            if last is not None and last.is_file():
                score = run.last_metrics.get("mean_score")
                value = (
                    float(score) if isinstance(score, (int, float)) and math.isfinite(score) else -math.inf
                )
                found.append((value, run.id, last))
        if found:
            _, _, path = max(found, key=lambda f: (f[0], f[1]))
            return Reviewer(AgentSpec.from_checkpoint(str(path.resolve()), "ntuple"), DEFAULT_DEPTH)
    return Reviewer(AgentSpec(name="expectimax"), DEFAULT_DEPTH)


def resolve_reviewer(
    store: GameStore | None, text: str | None, depth: int | None = None, rules: Rules | None = None
) -> Reviewer:
    """``text``: a registry agent name or a checkpoint file (None: :func:`default_reviewer` for games
    of ``rules``, with ``depth`` replacing its depth when given). ValueError (one line) otherwise."""
    from agents.registry import agent_names

    if text is None:
        chosen = default_reviewer(store, rules)
        return chosen if depth is None else Reviewer(chosen.spec, depth)
    if text in agent_names():
        return Reviewer(AgentSpec(name=text), depth)
    path = Path(text).expanduser()
    if path.is_file():
        return Reviewer(AgentSpec.from_checkpoint(str(path.resolve())), depth)
    raise ValueError(
        f"unknown reviewer {text!r}: an agent name ({', '.join(agent_names())}) or a checkpoint file"
    )


# ------------------------------------------------------------------------------------------ results


@dataclass
class GameReview:
    """A game's review: the verdict on each reviewed move (``moves[i]`` is move ``i``), who made it,
    and whether it covers the whole game. ``evaluated``: positions the reviewer evaluated in the call
    that returned it (0 when it came from the store)."""

    game_id: int
    reviewer: dict[str, Any]
    n_moves: int
    moves: list[MoveGrade] = field(default_factory=list)
    evaluated: int = 0

    @property
    def complete(self) -> bool:
        return len(self.moves) >= self.n_moves

    @property
    def accuracy(self) -> float:
        """Percent, see :func:`agents.review.accuracy`."""
        return accuracy(self.moves)

    @property
    def counts(self) -> dict[str, int]:
        return grade_counts(self.moves)

    @property
    def points(self) -> bool:
        """True when losses are expected points (the reviewer's values are score-like)."""
        return self.reviewer.get("value_kind") == "points"

    def curve(self) -> list[float]:
        """The evaluation graph, one value per reviewed position: the expected final score for a points
        reviewer, else the reviewer's value normalised to 0..1 over the game."""
        return [g.value for g in self.moves] if self.points else normalised_curve(self.moves)

    def next_mistake(self, after: int = -1, grades: Sequence[str] = MISTAKES) -> int | None:
        """The first move after move ``after`` whose grade is in ``grades``, or None."""
        return next((g.index for g in self.moves[max(after + 1, 0) :] if g.grade in grades), None)

    def previous_mistake(self, before: int, grades: Sequence[str] = MISTAKES) -> int | None:
        """The last move before move ``before`` whose grade is in ``grades``, or None."""
        return next((g.index for g in reversed(self.moves[: max(before, 0)]) if g.grade in grades), None)

    def summary(self) -> str:
        """One line: ``game 12: accuracy 93.4 % · 2 blunders, 1 mistake, ... · by ntuple (...)``."""
        counts = self.counts
        parts = [f"{counts[g]} {g}" for g in GRADES if counts[g]]
        done = "" if self.complete else f" (first {len(self.moves)} of {self.n_moves} moves)"
        return (
            f"game {self.game_id}: accuracy {self.accuracy:.1f} %{done} · "
            f"{', '.join(parts) or 'no moves'} · reviewer {self.reviewer.get('label', '?')}"
        )

    def to_json(self, *, moves: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "game": self.game_id,
            "reviewer": dict(self.reviewer),
            "n_moves": self.n_moves,
            "reviewed": len(self.moves),
            "complete": self.complete,
            "accuracy": round(self.accuracy, 2),
            "counts": self.counts,
            "loss_unit": "points" if self.points else "relative",
        }
        if moves:
            out["moves"] = [_move_json(g) for g in self.moves]
        return out


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def _move_json(g: MoveGrade) -> dict[str, Any]:
    return {
        "index": g.index,
        "played": g.played.label,
        "best": g.best.label,
        "values": {d.label: _num(v) for d, v in g.values.items()},
        "loss": _num(g.loss),
        "relative": _num(g.relative),
        "rank": g.rank,
        "grade": g.grade,
        "value": _num(g.value),
    }


# ------------------------------------------------------------------------------------------- review


def position_values(agent: Agent, rules: Rules, board: np.ndarray, score: int = 0) -> np.ndarray:
    """The agent's value of each move from ``board``, float64[4] in action order (NaN: illegal)."""
    game = Game(rules=rules, board=board, score=score)
    out = np.full(4, np.nan)
    for d, v in agent.move_values(game).items():
        out[int(d)] = v
    mask = game.legal_mask()
    out[~mask] = np.nan  # an agent rating an illegal move never makes it the best
    return out


def grade_played(
    agent: Agent, rules: Rules, board: np.ndarray, played: Direction | int, score: int = 0, index: int = 0
) -> MoveGrade:
    """The verdict on one move (``board``: the position before it): the live coach's badge."""
    values = position_values(agent, rules, np.asarray(board, dtype=np.int64), score)
    return grade_move(values, int(played), agent.value_kind, index=index, score_before=score, board=board)


def grades_of(rec: GameRecord, values: np.ndarray, kind: str) -> list[MoveGrade]:
    """Each move of ``rec`` graded from a review's stored values (grades are derived, never stored)."""
    out = []
    for i in range(min(len(values), rec.n_moves)):
        before = int(rec.scores[i] - rec.rewards[i])
        out.append(
            grade_move(values[i], int(rec.moves[i]), kind, index=i, score_before=before, board=rec.layouts[i])
        )
    return out


def stored_review(store: GameStore, game_id: int, reviewer: Reviewer) -> GameReview | None:
    """The stored (maybe unfinished) review of a game by ``reviewer``, without building it; None when
    that reviewer never reviewed the game."""
    info = store.get_review(game_id, reviewer.key())
    if info is None:
        return None
    rec = store.load_game(game_id)
    values = store.review_values(info.id)
    kind = str(info.reviewer.get("value_kind", "rank"))
    return GameReview(game_id, info.reviewer, rec.n_moves, grades_of(rec, values, kind))


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
        values = store.review_values(info.id)
        kind = str(info.reviewer.get("value_kind", "rank"))
        return GameReview(game_id, info.reviewer, rec.n_moves, grades_of(rec, values, kind))
    if agent is None:
        agent = reviewer.build(rec.rules)
    else:
        why = type(agent).unsupported_reason(rec.rules)
        if why:
            raise ValueError(f"{agent.name} cannot review game {game_id}: {why}")
    info = store.open_review(game_id, key, reviewer.describe(agent))
    done = info.reviewed
    parts = [store.review_values(info.id)]
    evaluated = _evaluate(store, info.id, agent, rec, done, parts, progress, should_stop)
    allv = np.concatenate(parts)
    return GameReview(game_id, info.reviewer, rec.n_moves, grades_of(rec, allv, agent.value_kind), evaluated)


def _evaluate(
    store: GameStore,
    review_id: int,
    agent: Agent,
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
            pending.append(position_values(agent, rules, rec.layouts[i], before))
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
