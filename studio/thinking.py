"""Agent thinking off the GUI thread: hints and watched moves (training runs use ``studio.worker``).

The live coach (:meth:`Thinker.request_grade`) grades one move just played by the default reviewer
(:func:`studio.services.review.default_reviewer`, the one the Replay tab, Progress and ``review``
use), with :func:`studio.services.review.grade_played`: the same unit (expected points given up) and
grades as the game's review will give; the Play tab keeps a Thinker of its own for it, so a hint and
a grade never make each other stale.

An expectimax hint at depth 3 can take hundreds of milliseconds and the first use of a learner imports
torch, so the Play tab never calls an agent directly: it asks a :class:`Thinker`, which loads the agent
and runs ``move_values`` / ``act`` on a single worker thread (one at a time, so an agent's own state such
as its RNG or a transposition table is never used by two threads at once). Every request gets a ticket;
a newer request or :meth:`Thinker.cancel` makes older tickets stale and their results are dropped.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

from agents.base import Agent
from agents.hints import VALUE_KINDS
from agents.review import MoveGrade
from agents.spec import AgentSpec
from engine import DIRECTIONS, Direction, Game, Rules

AGENT_CACHE = 3  # agents kept loaded

log = logging.getLogger(__name__)


def choose(agent: Agent, game: Game, values: dict[Direction, float] | None) -> Direction:
    """The agent's move. When the agent keeps the base ``act`` (best value, ties by action order) and we
    already have its values, reuse them rather than search twice; otherwise ask ``act``."""
    if values and type(agent).act is Agent.act:
        best = max(values.values())
        return next(d for d in DIRECTIONS if d in values and values[d] == best)
    return agent.act(game)


def value_kind(agent: Agent) -> str:
    """What the agent's move values are (``Agent.value_kind``); "rank" for a kind hints do not know."""
    kind = getattr(agent, "value_kind", "rank")
    return kind if kind in VALUE_KINDS else "rank"


@dataclass(frozen=True)
class ThinkResult:
    """What an agent said about one position. ``values`` is None when it does not rate moves;
    ``value_kind`` says what they are (:mod:`agents.hints`), for hints a person reads."""

    ticket: int
    spec: AgentSpec
    agent_name: str
    moves_at_request: int
    values: dict[Direction, float] | None
    choice: Direction | None
    seconds: float
    error: str | None = None
    value_kind: str = "rank"


@dataclass(frozen=True)
class GradeResult:
    """The coach's verdict on one move: ``grade`` (None with an ``error``) of move number ``index``
    (the moves made before it), by the reviewer ``agent_name`` (its label); ``fallback``: the
    reviewer's fallback note, if any. Losses are expected points."""

    ticket: int
    spec: AgentSpec
    agent_name: str
    index: int
    grade: MoveGrade | None
    seconds: float
    error: str | None = None
    value_kind: str = "points"
    fallback: str | None = None


def _kept(cache: OrderedDict[Any, Agent], key: Any, build: Callable[[], Agent]) -> Agent:
    """``cache[key]``, built on a miss; the least recently used of more than AGENT_CACHE agents goes."""
    if key in cache:
        cache.move_to_end(key)
    else:
        cache[key] = build()
        while len(cache) > AGENT_CACHE:
            cache.popitem(last=False)
    return cache[key]


class _Emitter(QObject):
    done = Signal(object)


class _Task(QRunnable):
    """One request on the Thinker's thread about (a copy of) ``game``: skipped when its ticket is stale
    before it starts; an agent's exception becomes the result's ``error`` (and the log's traceback)."""

    def __init__(self, thinker: Thinker, ticket: int, game: Game) -> None:
        super().__init__()
        self.thinker, self.ticket, self.game = thinker, ticket, game
        self.setAutoDelete(True)

    def run(self) -> None:
        if self.ticket != self.thinker.ticket:
            return  # stale before it started: skip the work entirely
        t0 = time.perf_counter()
        try:
            result = self._work(t0)
        except Exception as e:  # an agent bug or a bad checkpoint must not take the window down
            log.exception("%s move %d", self._failure(), self.game.moves)
            result = self._failed(str(e) or type(e).__name__, time.perf_counter() - t0)
        self.thinker.emitter.done.emit(result)

    def _work(self, t0: float) -> ThinkResult | GradeResult:
        raise NotImplementedError

    def _failure(self) -> str:
        """What failed, for the log ("agent greedy failed to think about")."""
        raise NotImplementedError

    def _failed(self, error: str, seconds: float) -> ThinkResult | GradeResult:
        raise NotImplementedError


class _ThinkTask(_Task):
    """An agent's move (and its move values when ``want_values``)."""

    def __init__(self, thinker: Thinker, ticket: int, spec: AgentSpec, game: Game, want_values: bool):
        super().__init__(thinker, ticket, game)
        self.spec, self.want_values = spec, want_values
        self.agent_name = spec.name or "checkpoint"  # the built agent's own name once it is loaded

    def _work(self, t0: float) -> ThinkResult:
        agent = self.thinker.agent_for(self.spec, self.game.rules)
        self.agent_name = agent.name
        values: dict[Direction, float] | None = None
        if self.want_values:
            try:
                values = {Direction(d): float(v) for d, v in agent.move_values(self.game).items()}
            except NotImplementedError:
                values = None
        choice = choose(agent, self.game, values)
        seconds = time.perf_counter() - t0
        return self._result(values, choice, seconds, value_kind=value_kind(agent))

    def _failure(self) -> str:
        return f"agent {self.agent_name} failed to think about"

    def _failed(self, error: str, seconds: float) -> ThinkResult:
        return self._result(None, None, seconds, error=error)

    def _result(
        self, values: dict[Direction, float] | None, choice: Direction | None, seconds: float, **more: Any
    ) -> ThinkResult:
        return ThinkResult(
            self.ticket, self.spec, self.agent_name, self.game.moves, values, choice, seconds, **more
        )


class _GradeTask(_Task):
    """Grade one move (the board before it, the move) with a reviewer (built once and kept)."""

    def __init__(self, thinker: Thinker, ticket: int, reviewer: Any, game: Game, played: Direction):
        super().__init__(thinker, ticket, game)
        self.reviewer, self.played = reviewer, played

    def _work(self, t0: float) -> GradeResult:
        from studio.services.review import grade_played

        g = self.game
        agent = self.thinker.reviewer_for(self.reviewer, g.rules)
        grade = grade_played(agent, g.rules, g.board, self.played, g.score, g.moves)
        return self._result(grade, time.perf_counter() - t0, None)

    def _failure(self) -> str:
        return f"reviewer {self.reviewer.label} failed to grade"

    def _failed(self, error: str, seconds: float) -> GradeResult:
        return self._result(None, seconds, error)

    def _result(self, grade: MoveGrade | None, seconds: float, error: str | None) -> GradeResult:
        r = self.reviewer
        return GradeResult(
            self.ticket, r.spec, r.label, self.game.moves, grade, seconds, error, "points", r.fallback
        )


class Thinker(QObject):
    """Asks agents for values and moves on one worker thread; emits :attr:`resultReady` on the GUI thread."""

    resultReady = Signal(object)  # ThinkResult, fresh tickets only
    gradeReady = Signal(object)  # GradeResult (request_grade), fresh tickets only

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self.emitter = _Emitter(self)
        self.emitter.done.connect(self._deliver)
        self.ticket = 0
        # Only touched from the worker thread (one at a time), so no lock is needed. A few agents are
        # kept (switching back and forth is instant) but not all: learners can hold large tables.
        self._agents: OrderedDict[tuple[AgentSpec, Rules], Agent] = OrderedDict()
        self._reviewers: OrderedDict[tuple[AgentSpec, int | None, Rules], Agent] = OrderedDict()

    def agent_for(self, spec: AgentSpec, rules: Rules) -> Agent:
        return _kept(self._agents, (spec, rules), lambda: spec.build(rules, exact=False))

    def reviewer_for(self, reviewer: Any, rules: Rules) -> Agent:
        """The built reviewer (:class:`studio.services.review.Reviewer`), kept for the next move."""
        return _kept(self._reviewers, (reviewer.spec, reviewer.depth, rules), lambda: reviewer.build(rules))

    def request(self, spec: AgentSpec, game: Game, *, want_values: bool) -> int:
        """Start thinking about (a copy of) ``game``; returns the ticket. Older requests become stale."""
        self.ticket += 1
        self.pool.clear()  # queued, not yet started, requests are stale now
        self.pool.start(_ThinkTask(self, self.ticket, spec, game.copy(), want_values))
        return self.ticket

    def request_grade(self, reviewer: Any, game: Game, played: Direction) -> int:
        """Grade move ``played`` from (a copy of) ``game``, the position before it (the live coach),
        with ``reviewer`` (a :class:`studio.services.review.Reviewer`); the verdict comes with
        :attr:`gradeReady`. Returns the ticket; older requests become stale."""
        self.ticket += 1
        self.pool.clear()
        self.pool.start(_GradeTask(self, self.ticket, reviewer, game.copy(), Direction(played)))
        return self.ticket

    def cancel(self) -> None:
        """Forget pending requests (a move was made, the game changed)."""
        self.ticket += 1
        self.pool.clear()

    @property
    def busy(self) -> bool:
        return self.pool.activeThreadCount() > 0

    def shutdown(self, wait_ms: int = 3000) -> None:
        self.cancel()
        self.pool.waitForDone(wait_ms)

    @Slot(object)
    def _deliver(self, result: ThinkResult | GradeResult) -> None:
        if result.ticket != self.ticket:
            return
        if isinstance(result, GradeResult):
            self.gradeReady.emit(result)
        else:
            self.resultReady.emit(result)
