"""Agent thinking off the GUI thread: hints and watched moves (training runs use ``studio.worker``).

The live coach (:meth:`Thinker.request_grade`) grades one move just played by the default reviewer
(:func:`studio.services.review.default_reviewer`, the one the Replay tab, Progress and ``review``
use), with :func:`studio.services.review.grade_played`: the same unit (expected points given up) and
grades as the game's review will give; the Play tab keeps a Thinker of its own for it, so a hint and
a grade never make each other stale. With the coach on, a hint is the coach's reviewer's too
(:meth:`Thinker.request_review_hint`): its values in points, exactly those the grade will use, so the
hinted best move is graded "best". Both Thinkers of the tab share one built reviewer (and a lock):
a network is loaded once, and never used by two threads at once.

A checkpoint file is loaded once per window whatever plays it (:class:`Networks`): Watch, the hint
and the coach's reviewer each get an agent of their own (settings, search table), but agents that
can (``shared_copy``: an n-tuple network, 268 MB) read one network, loaded to play (no learning state).

An agent's answer is checked before anyone acts on it (:func:`answer_fault`): a move that is not legal
here, or a value that is not a number, becomes the result's ``fault``, a line naming the agent and the
fault, logged with the board; an exception is logged with its traceback (``error``).

An expectimax hint at depth 3 can take hundreds of milliseconds and the first use of a learner imports
torch, so the Play tab never calls an agent directly: it asks a :class:`Thinker`, which loads the agent
and runs ``move_values`` / ``act`` on a single worker thread (one at a time, so an agent's own state such
as its RNG or a transposition table is never used by two threads at once). Every request gets a ticket;
a newer request or :meth:`Thinker.cancel` makes older tickets stale and their results are dropped.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import threading
import time
import weakref
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
_ARROWS = {Direction.UP: "↑", Direction.LEFT: "←", Direction.DOWN: "↓", Direction.RIGHT: "→"}

log = logging.getLogger(__name__)


def choose(agent: Agent, game: Game, values: dict[Direction, float] | None) -> Direction:
    """The agent's move. When the agent keeps the base ``act`` (best value, ties by action order) and we
    already have its values, reuse them rather than search twice; otherwise ask ``act``."""
    if values and type(agent).act is Agent.act:
        # As Agent.act: a value that is not a number never wins (max() with a NaN first returns NaN).
        finite = {d: v for d, v in values.items() if math.isfinite(v)}
        if finite:
            best = max(finite.values())
            return next(d for d in DIRECTIONS if d in finite and finite[d] == best)
    return agent.act(game)


def _move(d: Direction) -> str:
    return f"{_ARROWS[d]} {d.label}"


def answer_fault(name: str, game: Game, values: dict[Direction, float] | None, choice: Any) -> str | None:
    """What is wrong with agent ``name``'s answer about ``game`` (None: nothing), in one line a person
    reads: "bad-agent chose ↑ up, which is illegal here". A plug-in can break the contract (a legal
    move, numbers for values) and the tab must say so rather than silently do nothing."""
    legal = game.legal_mask()
    if values is not None:
        broken = [d for d in DIRECTIONS if d in values and legal[d] and not math.isfinite(values[d])]
        if broken:
            which = ", ".join(f"{values[d]} for {_move(d)}" for d in broken)
            return f"{name} gave values that are not numbers: {which}"
    try:
        move = Direction.parse(choice)
    except ValueError:
        return f"{name} chose {choice!r}, which is not a move"
    if not legal[move]:
        return f"{name} chose {_move(move)}, which is illegal here"
    return None


def value_kind(agent: Agent) -> str:
    """What the agent's move values are (``Agent.value_kind``); "rank" for a kind hints do not know."""
    kind = getattr(agent, "value_kind", "rank")
    return kind if kind in VALUE_KINDS else "rank"


@dataclass(frozen=True)
class ThinkResult:
    """What an agent said about one position. ``values`` is None when it does not rate moves;
    ``value_kind`` says what they are (:mod:`agents.hints`), for hints a person reads. ``error``: the
    exception it raised; ``fault``: what is wrong with its answer (:func:`answer_fault`); either way
    nothing it said may be acted on. ``by_reviewer``: the values are the coach's reviewer's, in points."""

    ticket: int
    spec: AgentSpec
    agent_name: str
    moves_at_request: int
    values: dict[Direction, float] | None
    choice: Direction | None
    seconds: float
    error: str | None = None
    value_kind: str = "rank"
    fault: str | None = None
    by_reviewer: bool = False

    @property
    def problem(self) -> str | None:
        """One line naming the agent and what went wrong (None: a sound answer)."""
        return f"{self.agent_name} failed: {self.error}" if self.error else self.fault


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


class _HintTask(_Task):
    """A task that answers with a :class:`ThinkResult` (a move and maybe its values) in someone's
    name: the agent that thought, or the reviewer that rated."""

    def _who(self) -> tuple[Any, str]:
        """The spec and the name the result carries."""
        raise NotImplementedError

    def _extras(self) -> dict[str, Any]:
        """Fields every result of this task carries (besides what a call passes)."""
        return {}

    def _failed(self, error: str, seconds: float) -> ThinkResult:
        return self._result(None, None, seconds, error=error)

    def _result(
        self, values: dict[Direction, float] | None, choice: Direction | None, seconds: float, **more: Any
    ) -> ThinkResult:
        spec, name = self._who()
        return ThinkResult(
            self.ticket, spec, name, self.game.moves, values, choice, seconds, **{**more, **self._extras()}
        )


class _ThinkTask(_HintTask):
    """An agent's move (and its move values when ``want_values``)."""

    def __init__(self, thinker: Thinker, ticket: int, spec: AgentSpec, game: Game, want_values: bool):
        super().__init__(thinker, ticket, game)
        self.spec, self.want_values = spec, want_values
        self.agent_name = spec.name or spec.display  # the built agent's own name once it is loaded

    def _work(self, t0: float) -> ThinkResult:
        agent = self.thinker.agent_for(self.spec, self.game.rules)
        self.agent_name = self.spec.label or agent.name  # a labelled one ("n-tuple run 3") by its label
        values: dict[Direction, float] | None = None
        # The base act picks from move_values anyway: asking for them costs nothing and lets a value
        # that is not a number be found (act quietly skips it) before the agent moves on it.
        if self.want_values or type(agent).act is Agent.act:
            try:
                values = {Direction(d): float(v) for d, v in agent.move_values(self.game).items()}
            except NotImplementedError:
                values = None
        raw = choose(agent, self.game, values)
        seconds = time.perf_counter() - t0
        fault = answer_fault(agent.name, self.game, values, raw)
        if fault:
            log.error("%s (move %d, board %s)", fault, self.game.moves, self.game.board.tolist())
        try:
            choice: Direction | None = Direction.parse(raw)
        except ValueError:
            choice = None
        shown = values if self.want_values else None
        return self._result(shown, choice, seconds, value_kind=value_kind(agent), fault=fault)

    def _failure(self) -> str:
        return f"agent {self.agent_name} failed to think about"

    def _who(self) -> tuple[Any, str]:
        return self.spec, self.agent_name


class _ReviewHintTask(_HintTask):
    """A hint by the coach's reviewer: its values of the legal moves in points, exactly as
    :func:`studio.services.review.grade_played` reads them for a grade (calibrated, a game's end seen
    one move ahead), so the best move here is the one the coach grades "best"."""

    def __init__(self, thinker: Thinker, ticket: int, reviewer: Any, game: Game):
        super().__init__(thinker, ticket, game)
        self.reviewer = reviewer

    def _work(self, t0: float) -> ThinkResult:
        from studio.services.review import grade_played

        g = self.game
        legal = g.legal_moves()
        values: dict[Direction, float] = {}
        if legal:
            with self.thinker.reviewers.lock:
                agent = self.thinker.reviewer_for(self.reviewer, g.rules)
                # Any legal move graded gives the reviewer's values of all of them (``values``).
                values = dict(grade_played(agent, g.rules, g.board, legal[0], g.score, g.moves).values)
        best = max(values.values(), default=None)
        choice = next((d for d in DIRECTIONS if d in values and values[d] == best), None)
        return self._result(values, choice, time.perf_counter() - t0)

    def _failure(self) -> str:
        return f"reviewer {self.reviewer.label} failed to rate"

    def _who(self) -> tuple[Any, str]:
        return self.reviewer.spec, self.reviewer.label

    def _extras(self) -> dict[str, Any]:
        return {"value_kind": "points", "by_reviewer": True}


class _GradeTask(_Task):
    """Grade one move (the board before it, the move) with a reviewer (built once and kept)."""

    def __init__(self, thinker: Thinker, ticket: int, reviewer: Any, game: Game, played: Direction):
        super().__init__(thinker, ticket, game)
        self.reviewer, self.played = reviewer, played

    def _work(self, t0: float) -> GradeResult:
        from studio.services.review import grade_played

        g = self.game
        with self.thinker.reviewers.lock:
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


def _file_identity(path: str) -> tuple[str, int, int, int, int] | None:
    """Which file ``path`` is now (None: it cannot be read): a file replaced (a run's retention
    rewrites its checkpoints) or changed is another network."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return os.path.realpath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class Networks:
    """Checkpoints loaded once for every role that plays them (hint, Watch, the coach's reviewer),
    each role still with an agent of its own: its play settings, its search table, its thread.

    An agent with ``shared_copy`` (an n-tuple network) is loaded once per file (and board shape) and
    copied for each role over the same weights, read only; others are loaded per role, as before. Held
    weakly: the network goes when the last role's agent does (the Thinkers keep a few)."""

    def __init__(self) -> None:
        # held while a network is looked up or loaded: two roles asking at once load it once
        self.lock = threading.Lock()
        self._live: dict[tuple[Any, ...], weakref.WeakSet[Agent]] = {}
        self._configs: dict[tuple[Any, ...], Any] = {}  # the file's own settings, before a role's

    def build(self, spec: AgentSpec, rules: Rules | None = None, *, exact: bool = True) -> Agent:
        """``spec.build(rules, exact=exact)``, sharing the network with the other roles of the file."""
        ident = _file_identity(spec.checkpoint) if spec.checkpoint else None
        if ident is None:
            return spec.build(rules, exact=exact)
        # the file's agent without this role's play settings: those go on the role's copy
        own = AgentSpec(
            name=spec.name,
            config=spec.config,
            checkpoint=spec.checkpoint,
            rules=spec.rules,
            target=spec.target,
        )
        checked = None if rules is None else (rules if exact else rules.shape)  # what build compared
        key = (ident, own.key(), exact, checked)
        with self.lock:
            for k in [k for k, live in self._live.items() if not live]:
                del self._live[k], self._configs[k]
            live = self._live.get(key)
            source = next(iter(live), None) if live else None
            if source is not None:
                agent: Agent = source.shared_copy()  # type: ignore[attr-defined]
                agent.config = self._configs[key]
            else:
                agent = own.build(rules, exact=exact)
                if hasattr(agent, "shared_copy"):
                    self._live[key] = weakref.WeakSet([agent])
                    self._configs[key] = agent.config
            if source is not None:
                self._live[key].add(agent)
        if spec.play:
            agent.config = agent.config.replace(**dict(spec.play))
        return agent


#: The window's networks: every Thinker's unless given its own.
NETWORKS = Networks()


@dataclass(frozen=True, eq=False)
class _SharedSpec(AgentSpec):
    """``spec`` built through ``networks`` (a reviewer builds its spec itself, then sets its depth)."""

    networks: Networks | None = None

    def build(self, rules: Rules | None = None, *, exact: bool = True) -> Agent:
        plain = AgentSpec(
            name=self.name,
            config=self.config,
            checkpoint=self.checkpoint,
            rules=self.rules,
            label=self.label,
            target=self.target,
            play=self.play,
        )
        return (self.networks or NETWORKS).build(plain, rules, exact=exact)


class Reviewers:
    """Built reviewers kept for the next move, shared by the Thinkers of one tab (hint and coach):
    ``lock`` is held while one is built or used, so no reviewer thinks on two threads at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cache: OrderedDict[tuple[AgentSpec, int | None, Rules], Agent] = OrderedDict()


class Thinker(QObject):
    """Asks agents for values and moves on one worker thread; emits :attr:`resultReady` on the GUI thread.
    ``reviewers``: built reviewers to share with another Thinker (default: its own)."""

    resultReady = Signal(object)  # ThinkResult, fresh tickets only
    gradeReady = Signal(object)  # GradeResult (request_grade), fresh tickets only

    def __init__(
        self,
        parent: QObject | None = None,
        *,
        reviewers: Reviewers | None = None,
        networks: Networks | None = None,
    ) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self.emitter = _Emitter(self)
        self.emitter.done.connect(self._deliver)
        self.ticket = 0
        # Only touched from the worker thread (one at a time), so no lock is needed. A few agents are
        # kept (switching back and forth is instant) but not all: learners can hold large tables.
        self._agents: OrderedDict[tuple[AgentSpec, Rules], Agent] = OrderedDict()
        self.reviewers = reviewers or Reviewers()
        self.networks = networks or NETWORKS

    def agent_for(self, spec: AgentSpec, rules: Rules) -> Agent:
        return _kept(self._agents, (spec, rules), lambda: self.networks.build(spec, rules, exact=False))

    def reviewer_for(self, reviewer: Any, rules: Rules) -> Agent:
        """The built reviewer (:class:`studio.services.review.Reviewer`), kept for the next move; call
        it with ``reviewers.lock`` held. Its network is the window's (:class:`Networks`)."""

        def build() -> Agent:
            if not dataclasses.is_dataclass(reviewer):  # a reviewer of another make builds its own network
                built: Agent = reviewer.build(rules)
                return built
            made: Any = reviewer  # a services.review.Reviewer (a dataclass): its spec shares the network
            fields = {f.name: getattr(made.spec, f.name) for f in dataclasses.fields(AgentSpec)}
            shared = _SharedSpec(**fields, networks=self.networks)
            shared_built: Agent = dataclasses.replace(made, spec=shared).build(rules)
            return shared_built

        return _kept(self.reviewers.cache, (reviewer.spec, reviewer.depth, rules), build)

    def request(self, spec: AgentSpec, game: Game, *, want_values: bool) -> int:
        """Start thinking about (a copy of) ``game``; returns the ticket. Older requests become stale."""
        self.ticket += 1
        self.pool.clear()  # queued, not yet started, requests are stale now
        self.pool.start(_ThinkTask(self, self.ticket, spec, game.copy(), want_values))
        return self.ticket

    def request_review_hint(self, reviewer: Any, game: Game) -> int:
        """A hint by ``reviewer`` (the coach's, a :class:`studio.services.review.Reviewer`) about (a
        copy of) ``game``: a :class:`ThinkResult` in points. Returns the ticket; older ones go stale."""
        self.ticket += 1
        self.pool.clear()
        self.pool.start(_ReviewHintTask(self, self.ticket, reviewer, game.copy()))
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
