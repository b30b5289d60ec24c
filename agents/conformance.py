"""The agent contract as runnable checks: what every built-in agent passes, and what a plug-in must.

``check_agent(name)`` runs them all on a registered agent and returns one :class:`CheckResult` per
check; ``python main.py check-agent NAME`` prints them, and ``tests/agents/test_contract.py`` runs the
same checks on every built-in agent, so there is one definition of "an agent that works":

* ``contract``: the class is an :class:`~agents.base.Agent` of that name, its config builds from its
  defaults and from its ``smoke_config``, its ``value_kind`` is known (:func:`agents.registry.contract_problem`);
* ``config``: every knob has help text, its default passes its own check, a config survives
  ``to_dict`` / ``from_dict``, and a value outside a knob's range or choices is refused naming the knob;
* ``legal moves``: ``act`` and ``move_values`` on hand-drawn boards and through a seeded game only
  ever name legal moves, with finite values (on the board where only "left" is legal, "left");
* ``determinism``: two agents made with one seed play one seeded game move for move, and (learners)
  train to the same metrics and the same moves;
* ``training`` (learners): a tiny budget trains, ends, and stops when asked; every event has a known
  kind, counters that never go back, and metrics that are declared (:mod:`agents.metrics`) and finite
  (NaN or an infinity fails: the runner would stop such a run as diverged);
* ``checkpoint``: save / load (after training, for learners) gives the same agent: every state array
  and value, the generator state, the moves and the move values on fixed boards, without pickle; a
  ``set_state`` left at the base's while ``get_state`` saves something is named as the cause; and a
  truncated file, a newer format, a pickled payload and another agent's file are refused with a
  CheckpointError, the payload never run.

Every check runs the agent with its class's ``smoke_config`` (knob values that make a step quick).
What the agent returns is checked by :mod:`agents.guard` (a wrong type, an illegal move or a value that
is no finite number is a fault naming the agent and the method). Each check runs on a thread of its
own under a time limit (:func:`run_check`'s ``limit_s``): one over it fails naming the agent's method
it was in, and ``progress`` is told what runs while it waits. No Qt, no printing: the caller shows
the results.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
import threading
import time
import traceback
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import Agent, Budget, Control, MetricEvent, TrainContext
from agents.checkpoint import META_KEY, CheckpointError, load_checkpoint, read_checkpoint
from agents.config import ConfigError, FieldSpec
from agents.guard import AgentFault, calling, checked_move, checked_values
from agents.metrics import metrics_of
from agents.registry import contract_problem, get_agent_class, unknown_agent_message
from engine import DIRECTIONS, Direction, Game, Rules

log = logging.getLogger(__name__)

# Hand-drawn 4x4 boards. ONLY_LEFT: column 0 empty, the rest packed right with no equal neighbours,
# so left is the one legal move.
ONLY_LEFT = [[0, 2, 4, 8], [0, 4, 8, 2], [0, 2, 4, 8], [0, 4, 8, 2]]
MIDGAME = [[2, 4, 8, 16], [0, 2, 4, 8], [0, 0, 2, 4], [0, 0, 0, 2]]
CROWDED = [[2, 4, 2, 4], [4, 8, 16, 2], [2, 32, 64, 4], [128, 256, 2, 0]]
OPENING = [[0, 0, 0, 0], [0, 2, 0, 0], [0, 0, 0, 0], [0, 0, 2, 0]]
BOARDS = (ONLY_LEFT, MIDGAME, CROWDED, OPENING)

#: Moves of the seeded game the legality and determinism checks play (fewer when it ends sooner).
GAME_MOVES = 60
#: The tiny training budget: the first reached ends it (no seconds: the same seed must give the same run).
TINY_BUDGET = Budget(episodes=2, steps=400)
#: How long a tiny training may take, and how soon a stop must end one, before the check fails.
TRAIN_LIMIT_S = 300.0
STOP_LIMIT_S = 30.0
#: Metrics that measure the machine, not the agent (besides those declared of kind "speed"): left out
#: when two runs are compared.
TIMING_METRICS = frozenset({"steps_per_s", "eval_seconds"})
EVENT_KINDS = ("episode", "update", "info")


class CheckFailed(AssertionError):
    """The agent breaks this part of the contract; the message says how, in one line."""


class CheckSkipped(Exception):
    """The check does not apply (a non-learner's training) or cannot run here (no data to learn from)."""


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome: ``passed`` True / False, or None when skipped; ``detail`` one line;
    ``trace`` the traceback of the exception that failed it ("" when none: ``check-agent --verbose``)."""

    check: str
    passed: bool | None
    detail: str
    trace: str = ""

    @property
    def status(self) -> str:
        return {True: "pass", False: "FAIL", None: "skip"}[self.passed]

    def line(self) -> str:
        return f"{self.status:4}  {self.check:12}  {self.detail}"


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise CheckFailed(message)


# What each check's thread is doing now ("fault-slow.act", "hand-drawn board 2 of 4"), by thread: the
# waiting thread reads it for the progress line and for the failure of a check over its time limit.
_doing: dict[int, tuple[str, str]] = {}


def _now(agent: Agent | type[Agent], method: str, where: str = "") -> None:
    """Say that the agent's ``method`` runs now (on this thread), at ``where``."""
    name = agent.name if isinstance(agent, type) else getattr(agent, "name", type(agent).__name__)
    _doing[threading.get_ident()] = (f"{name}.{method}", where)


def _act(agent: Agent, game: Game, where: str) -> Direction:
    """``agent.act(game)`` checked: a legal Direction, or an AgentFault saying where it was asked."""
    _now(agent, "act", where)
    try:
        with calling(agent, "act"):
            move = agent.act(game)
        return checked_move(agent, game, move, "act")
    except AgentFault as e:
        e.where = e.where or where
        raise


def _values(
    agent: Agent, game: Game, where: str, method: str = "move_values"
) -> dict[Direction, float] | None:
    """``agent.move_values(game)`` (or ``review_values``) checked: finite numbers for legal moves only;
    None when the agent does not rate moves."""
    _now(agent, method, where)
    try:
        with calling(agent, method):
            raw = getattr(agent, method)(game)
        return checked_values(agent, game, raw, method, finite=True)
    except NotImplementedError:
        return None
    except AgentFault as e:
        e.where = e.where or where
        raise


# ------------------------------------------------------------------------------------------ agents


def smoke_config(cls: type[Agent]) -> dict[str, Any]:
    """The knob values the checks use: the class's ``smoke_config`` over its defaults."""
    return dict(getattr(cls, "smoke_config", {}) or {})


def make_agent(cls: type[Agent], seed: int = 1) -> Agent:
    _now(cls, "__init__", f"seed {seed}")
    return cls(cls.config_cls.from_dict(smoke_config(cls)), Rules(), seed=seed)


def game_on(board: list[list[int]]) -> Game:
    return Game(board=np.array(board), seed=0)


def _play(agent: Agent, seed: int, moves: int = GAME_MOVES) -> list[int]:
    """The moves ``agent`` plays in the seeded game (CheckFailed at the first illegal one)."""
    game = Game(seed=seed, rules=agent.rules)
    played: list[int] = []
    while not game.game_over and len(played) < moves:
        move = _act(agent, game, f"move {len(played)} of the game of seed {seed}")
        game.step(move)
        played.append(int(move))
    return played


# ------------------------------------------------------------------------------------------ checks


def check_contract(cls: type[Agent], name: str, _workdir: Path) -> str:
    problem = contract_problem(cls, name)
    _require(problem is None, str(problem))
    try:
        cls.config_cls.from_dict(smoke_config(cls))
    except (ConfigError, TypeError) as e:
        raise CheckFailed(f"its smoke_config is refused: {e}") from None
    return f"{cls.__module__}:{cls.__qualname__}, value_kind {cls.value_kind}, trainable {cls.trainable}"


def _out_of_range(spec: FieldSpec) -> object | None:
    """A value the knob must refuse (None when it accepts anything of its type)."""
    if spec.choices is not None:
        return "no-such-choice" if spec.kind == "str" else None
    if spec.low is not None:
        bad = spec.low - 1
    elif spec.high is not None:
        bad = spec.high + 1
    else:
        return None
    return {
        "int": int(bad),
        "float": float(bad),
        "int_tuple": (int(bad),),
        "float_tuple": (float(bad),),
    }.get(spec.kind)


def check_config(cls: type[Agent], _name: str, _workdir: Path) -> str:
    config = cls.config_cls()
    specs = cls.config_cls.specs()
    ranged = 0
    for spec in specs:
        _require(bool(spec.help), f"knob {spec.name} has no help text")
        _require(
            spec.check(getattr(config, spec.name)) == getattr(config, spec.name),
            f"knob {spec.name}'s default does not pass its own check",
        )
        bad = _out_of_range(spec)
        if bad is None:
            continue
        try:
            cls.config_cls(**{spec.name: bad})
        except ConfigError as e:
            _require(e.field == spec.name, f"{spec.name}={bad!r} is refused as a fault of {e.field!r}")
            _require(
                str(e).startswith(f"{spec.name}: "), f"the refusal of {spec.name}={bad!r} does not name it"
            )
        else:
            raise CheckFailed(f"knob {spec.name} accepts {bad!r}, outside its range or choices")
        ranged += 1
    _require(
        cls.config_cls.from_dict(config.to_dict()) == config,
        "the config does not survive to_dict / from_dict",
    )
    _require(not specs or ranged > 0, "it has knobs but none with a range or choices")
    return f"{len(specs)} knobs, {ranged} with a range or choices refused outside it"


def _reviews(cls: type[Agent]) -> bool:
    """The agent has a review_values of its own (the base's only repeats move_values)."""
    return cls.review_values is not Agent.review_values


def check_legal_moves(cls: type[Agent], _name: str, _workdir: Path) -> str:
    agent = make_agent(cls)
    rated = reviewed = 0
    for i, board in enumerate(BOARDS):
        where = f"hand-drawn board {i + 1} of {len(BOARDS)}"
        game = game_on(board)
        _act(agent, game, where)
        if _values(agent, game, where) is not None:
            rated += 1
        if _reviews(cls) and _values(agent, game, where, "review_values") is not None:
            reviewed += 1
    left = _act(agent, game_on(ONLY_LEFT), "the board where only left is legal")
    _require(left == DIRECTIONS[1], f"played {left.label} where only left is legal")
    played = _play(agent, seed=11)
    rated_text = "move_values legal and finite" if rated else "no move_values"
    if reviewed:
        rated_text += "; review_values legal and finite"
    return f"{len(BOARDS)} hand-drawn boards and {len(played)} moves of a seeded game legal; {rated_text}"


def _comparable(agent: Agent, events: list[MetricEvent]) -> list[Any]:
    """What two trainings of one seed must share: the games they finished (counters and metrics, less
    the machine's timings), the final counters and every state array. Update and info events are
    left out: learners may report those on a clock."""
    timing = TIMING_METRICS | {m.name for m in metrics_of(agent) if m.kind == "speed"}
    games = [
        (e.episode, e.step, sorted((k, v) for k, v in e.metrics.items() if k not in timing))
        for e in events
        if e.kind == "episode"
    ]
    c = agent.counters
    arrays, _ = agent.get_state()
    return [
        *games,
        (c.episodes, c.steps, c.updates),
        *((k, np.asarray(v).tobytes()) for k, v in sorted(arrays.items())),
    ]


def check_determinism(cls: type[Agent], _name: str, workdir: Path) -> str:
    a, b = make_agent(cls, seed=5), make_agent(cls, seed=5)
    first, second = _play(a, seed=3), _play(b, seed=3)
    same = next((i for i, (x, y) in enumerate(zip(first, second)) if x != y), None)
    _require(first == second, f"two agents of seed 5 part at move {same} of one seeded game")
    if not cls.trainable:
        return f"same {len(first)} moves from one seed"
    runs = [_train_tiny(make_agent(cls, seed=5), workdir) for _ in range(2)]
    one, two = (_comparable(*r) for r in runs)
    if one != two:
        at = next((i for i, (x, y) in enumerate(zip(one, two)) if x != y), min(len(one), len(two)))
        what = str(one[at][0]) if at < len(one) and isinstance(one[at][0], str) else f"game or counters {at}"
        raise CheckFailed(f"two trainings of seed 5 differ (first in {what})")
    moves = [
        [_act(runs[i][0], game_on(b), f"board {j + 1} after training") for j, b in enumerate(BOARDS)]
        for i in range(2)
    ]
    _require(moves[0] == moves[1], "two trainings of seed 5 end in agents that play differently")
    return f"same {len(first)} moves from one seed; same games, counters and state after training twice"


def _drain(
    events: Iterator[MetricEvent],
    control: Control,
    limit_s: float,
    on_event: Callable[[int], None] | None = None,
) -> list[MetricEvent]:
    """Run a training generator on a thread: a training that never ends fails the check instead of
    hanging it. ``on_event(i)`` is called after the i-th event (the stop check stops there)."""
    out: list[MetricEvent] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for event in events:
                out.append(event)
                if on_event is not None:
                    on_event(len(out) - 1)
        except BaseException as e:  # reported by the check; the thread ends either way
            errors.append(e)

    thread = threading.Thread(target=work, name="check-agent-training", daemon=True)
    thread.start()
    thread.join(limit_s)
    if thread.is_alive():
        control.stop()
        thread.join(STOP_LIMIT_S)
        raise CheckFailed(f"training did not end within {limit_s:.0f} s")
    if errors:
        raise errors[0]
    return out


#: Games logged for a learner that learns from the store's games (imitation), when it finds none.
SEED_GAMES = 8


def _log_games(data_dir: Path, games: int) -> None:
    """Log ``games`` greedy games (seeds 0, 1, ...) in the store at ``data_dir``."""
    from agents.baselines import GreedyAgent
    from engine.records import GameTrace, play_recorded
    from engine.store import GameStore

    player = GreedyAgent()
    with GameStore.open(data_dir) as store:
        for seed in range(games):
            game = Game(seed=seed)
            trace = GameTrace.start(game)
            while not game.game_over:
                play_recorded(game, player.act(game), trace)
            store.record_trace(trace, source="agent", agent=player.name)


def _train_tiny(agent: Agent, workdir: Path) -> tuple[Agent, list[MetricEvent]]:
    """``agent`` trained on :data:`TINY_BUDGET`; a learner that needs logged games to learn from gets
    :data:`SEED_GAMES` greedy ones in a store of its own."""
    context = TrainContext(data_dir=workdir / "data")
    try:
        agent.check_can_train(context)
    except ConfigError:
        _log_games(workdir / "data", SEED_GAMES)
        try:
            agent.check_can_train(context)
        except ConfigError as e:
            raise CheckSkipped(f"cannot train here: {e}") from None
    control = Control()
    return agent, _drain(agent.train(TINY_BUDGET, control, context), control, TRAIN_LIMIT_S)


def _check_events(cls: type[Agent], events: list[MetricEvent]) -> set[str]:
    declared = {m.name for m in metrics_of(cls)}
    seen: set[str] = set()
    last = (0, 0)
    for i, e in enumerate(events):
        _require(isinstance(e, MetricEvent), f"event {i} is a {type(e).__name__}, not a MetricEvent")
        _require(e.kind in EVENT_KINDS, f"event {i} has kind {e.kind!r}, not one of {EVENT_KINDS}")
        _require(
            (e.episode, e.step) >= last, f"event {i}'s counters go back: {last} -> {(e.episode, e.step)}"
        )
        last = (e.episode, e.step)
        _require(0.0 <= e.progress <= 1.0, f"event {i}'s progress {e.progress} is outside [0, 1]")
        for key, value in e.metrics.items():
            _require(
                key in declared, f"metric {key!r} is not declared (Agent.metrics, agents.metrics.MetricInfo)"
            )
            _require(
                isinstance(value, (int, float)) and math.isfinite(value),
                f"metric {key!r} is {value!r} at step {e.step}: not a finite number",
            )
            seen.add(key)
    return seen


def check_training(cls: type[Agent], _name: str, workdir: Path) -> str:
    if not cls.trainable:
        raise CheckSkipped("not a learner (trainable is False)")
    agent, events = _train_tiny(make_agent(cls), workdir)
    seen = _check_events(cls, events)
    c = agent.counters
    _require(c.episodes + c.steps + c.updates > 0, "a training budget left its counters at zero")
    # Stop: asked for at the first event of a budget that never ends, the generator must end soon.
    control = Control()
    endless = make_agent(cls, seed=2).train(
        Budget(episodes=10**9), control, TrainContext(data_dir=workdir / "data")
    )
    asked: list[float] = []

    def stop(_i: int) -> None:
        if not asked:
            asked.append(time.perf_counter())
            control.stop()

    _drain(endless, control, TRAIN_LIMIT_S, on_event=stop)
    took = time.perf_counter() - asked[0] if asked else 0.0
    _require(took <= STOP_LIMIT_S, f"training went on for {took:.0f} s after a stop")
    return (
        f"{len(events)} events ({c.episodes} games, {c.steps} moves, {c.updates} updates); "
        f"metrics {', '.join(sorted(seen)) or 'none'} declared and finite; stops when asked"
    )


class _Payload:
    """Unpickling this writes a marker file: the proof that a loader ran code from a checkpoint."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[Path]]:
        return (Path.touch, (self.marker,))


def _rewrite(
    path: Path,
    out: Path,
    meta_change: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """A copy of checkpoint ``path`` with its metadata changed and entries added (pickles allowed: hostile files)."""
    with np.load(path, allow_pickle=False) as npz:
        entries = {k: npz[k] for k in npz.files}
    meta = json.loads(bytes(entries[META_KEY]).decode())
    meta.update(meta_change or {})
    entries[META_KEY] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    entries.update(extra or {})
    with open(out, "wb") as fh:
        np.savez(fh, **entries)


def _refused(path: Path, match: str, **kw: Any) -> None:
    try:
        load_checkpoint(path, **kw)
    except CheckpointError as e:
        _require(match in str(e), f"{path.name} was refused with {str(e)!r}, which does not say {match!r}")
        return
    raise CheckFailed(f"{path.name} was loaded; it must be refused ({match})")


def check_checkpoint(cls: type[Agent], name: str, workdir: Path) -> str:
    if cls.trainable:
        agent, _ = _train_tiny_or_fresh(cls, workdir)
    else:
        agent = make_agent(cls, seed=7)
    path = agent.save(workdir / "agent.npz")
    meta, arrays = read_checkpoint(path)  # no pickle: every entry a plain numeric array
    with zipfile.ZipFile(path) as zf:
        _require(
            all(n.endswith(".npy") for n in zf.namelist()),
            "the checkpoint holds entries other than .npy arrays",
        )
    _now(agent, "get_state")
    saved_arrays, saved_meta = agent.get_state()
    saved_rng = agent.rng.bit_generator.state
    _now(cls, "set_state", "loading the checkpoint")
    again = load_checkpoint(path)
    _require(type(again) is type(agent), f"it loads as a {type(again).__name__}")
    _require(
        again.config == agent.config and again.rules == agent.rules, "config or rules change through a save"
    )
    _require(again.counters == agent.counters, "the training counters change through a save")
    _round_trip(cls, agent, again, saved_arrays, saved_meta, saved_rng)
    # Hostile and wrong files: one CheckpointError each, nothing run.
    data = path.read_bytes()
    cut = workdir / "cut.npz"
    cut.write_bytes(data[: len(data) // 2])
    _refused(cut, "truncated" if zipfile.is_zipfile(cut) else "not an .npz")
    newer = workdir / "newer.npz"
    _rewrite(path, newer, {"version": 99})
    _refused(newer, "newer")
    _refused(path, f"not '{name}-other'", expect_agent=f"{name}-other")
    marker = workdir / "payload-ran"
    payload = np.empty(1, dtype=object)
    payload[0] = _Payload(marker)
    evil = workdir / "evil.npz"
    _rewrite(path, evil, extra={"weights": payload})
    _refused(evil, "pickle")
    _require(not marker.exists(), "loading a pickled payload ran it")
    return f"{len(arrays)} arrays + {len(json.dumps(meta['state']))} bytes of state round trip; hostile files refused"


def _state_differs(
    arrays: Mapping[str, np.ndarray], meta: Any, other_arrays: Mapping[str, np.ndarray], other_meta: Any
) -> str | None:
    """The first thing that differs between two ``get_state`` answers, in words; None when they agree."""
    for key in sorted(set(arrays) | set(other_arrays)):
        if key not in other_arrays:
            return f"array {key!r} is missing after a load"
        if key not in arrays:
            return f"array {key!r} appears after a load"
        a, b = np.asarray(arrays[key]), np.asarray(other_arrays[key])
        if a.shape != b.shape and np.squeeze(a).shape == np.squeeze(b).shape:
            # torch's optimiser keeps its step as a 0-d tensor saved and a 1-element one loaded: the
            # same number (the values are compared below)
            a, b = np.squeeze(a), np.squeeze(b)
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"array {key!r} is {a.dtype}{list(a.shape)} saved, {b.dtype}{list(b.shape)} loaded"
        if a.tobytes() != b.tobytes():  # bytes: NaN where NaN was is the same state
            count = int(np.count_nonzero(a != b)) if a.dtype.kind in "biufc" else a.size
            return f"array {key!r} differs after a load ({count} of {a.size} values)"
    one, two = (json.dumps(m, sort_keys=True, default=repr) for m in (meta, other_meta))
    if one != two:
        keys: list[str] = (
            sorted(set(meta) | set(other_meta))
            if isinstance(meta, dict) and isinstance(other_meta, dict)
            else []
        )
        first = next((str(k) for k in keys if meta.get(k) != other_meta.get(k)), None)
        return (
            f"state value {first!r} differs after a load"
            if first
            else "the state's metadata differs after a load"
        )
    return None


def _holds_generator(value: Any) -> bool:
    """``value`` (a state's metadata) holds a numpy generator state somewhere (a ``bit_generator`` entry)."""
    if isinstance(value, Mapping):
        return "bit_generator" in value or any(_holds_generator(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_generator(v) for v in value)
    return False


def _round_trip(
    cls: type[Agent],
    agent: Agent,
    again: Agent,
    arrays: Mapping[str, np.ndarray],
    meta: Any,
    rng_state: Any,
) -> None:
    """``again`` (loaded from ``agent``'s checkpoint) holds what ``agent`` held: every state array and
    value, the generator state, and the same moves and move values on fixed boards. Moves alone are not
    enough: a checkpoint that restores nothing still plays a search agent's or an untrained net's moves."""
    # The generator is the agent's to save (docs/agents.md: "if a resumed run should continue the
    # same random stream"): one that saves it must get it back.
    if _holds_generator(meta) and again.rng.bit_generator.state != rng_state:
        raise CheckFailed(
            "the generator state (self.rng) differs after a load: get_state saves it, set_state "
            "must restore it (agents.nn.state.set_numpy_rng_state)"
        )
    _now(again, "get_state", "after a load")
    loaded_arrays, loaded_meta = again.get_state()
    differs = _state_differs(arrays, meta, loaded_arrays, loaded_meta)
    if differs is not None:
        if cls.set_state is Agent.set_state and cls.get_state is not Agent.get_state:
            raise CheckFailed(
                f"{differs}: set_state is the base's, which restores nothing, while get_state saves "
                f"{len(arrays)} arrays: override set_state"
            )
        raise CheckFailed(f"the checkpoint does not round trip: {differs}")
    boards = [*BOARDS, *_positions(seed=11, moves=12)]
    for i, board in enumerate(boards):
        where = f"board {i + 1} of {len(boards)} after a load"
        before, after = (_values(a, game_on(board), where) for a in (agent, again))
        _require(
            before == after, f"the loaded agent rates the moves otherwise on {board}: {before} -> {after}"
        )
        moves = [_act(a, game_on(board), where) for a in (agent, again)]
        _require(moves[0] == moves[1], f"the loaded agent plays otherwise on {board}")


def _positions(seed: int, moves: int) -> list[list[list[int]]]:
    """Boards of a game of seed ``seed`` played in a fixed cycle of moves (no agent): more boards to
    compare a saved and a loaded agent on than the hand-drawn ones."""
    game = Game(seed=seed)
    out: list[list[list[int]]] = []
    while not game.game_over and len(out) < moves:
        out.append(np.asarray(game.board).tolist())
        legal = game.legal_moves()
        game.step(legal[len(out) % len(legal)])
    return out


def _train_tiny_or_fresh(cls: type[Agent], workdir: Path) -> tuple[Agent, list[MetricEvent]]:
    """A trained agent where it can train here, else a fresh one (its state is what gets saved)."""
    try:
        return _train_tiny(make_agent(cls, seed=7), workdir)
    except CheckSkipped:
        return make_agent(cls, seed=7), []


Check = Callable[[type[Agent], str, Path], str]

#: The checks, in the order they run (a name here is a ``check-agent --only`` word).
CHECKS: dict[str, Check] = {
    "contract": check_contract,
    "config": check_config,
    "legal moves": check_legal_moves,
    "determinism": check_determinism,
    "training": check_training,
    "checkpoint": check_checkpoint,
}


#: Seconds a check may take (``check-agent --limit``): every check of a built-in agent takes a few.
CHECK_LIMIT_S = 60.0
#: Seconds between two progress reports while a check runs.
PROGRESS_EVERY_S = 5.0


def run_check(
    name: str,
    check: str,
    workdir: Path | None = None,
    *,
    limit_s: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> CheckResult:
    """One check on registered agent ``name``; any exception the agent raises is a failure, told in one
    line (``trace``: its traceback).

    The check runs on a thread of its own: past ``limit_s`` seconds (None: no limit) it fails naming
    the agent's method it is in (the thread is left to end on its own: a call cannot be cut short).
    ``progress(line)`` is called every :data:`PROGRESS_EVERY_S` seconds while it runs: what runs now."""
    try:
        cls = get_agent_class(name)
    except KeyError:
        return CheckResult(check, False, unknown_agent_message(name))
    except Exception as e:  # a registered module that no longer imports
        log.warning("agent %s could not be loaded", name, exc_info=True)
        return CheckResult(check, False, _one_line(f"cannot load {name}: {type(e).__name__}: {e}"))
    if check != "contract" and contract_problem(cls, name) is not None:
        return CheckResult(check, None, "the contract check fails first")
    tmp = tempfile.TemporaryDirectory(prefix="check-agent-")
    out: list[CheckResult] = []

    def work() -> None:
        try:
            out.append(_run(cls, name, check, Path(workdir or tmp.name)))
        finally:
            _doing.pop(threading.get_ident(), None)

    thread = threading.Thread(target=work, name=f"check-agent-{check}", daemon=True)
    t0 = time.perf_counter()
    thread.start()
    while True:
        left = None if limit_s is None else limit_s - (time.perf_counter() - t0)
        thread.join(PROGRESS_EVERY_S if left is None else max(0.0, min(PROGRESS_EVERY_S, left)))
        if not thread.is_alive():
            break
        took = time.perf_counter() - t0
        method, where = _doing.get(thread.ident or 0, (f"{name}", ""))
        at = f" ({where})" if where else ""
        if left is not None and took >= limit_s:  # type: ignore[operator]
            # Left running (a daemon thread): its temporary folder goes when it ends, or with the process.
            return CheckResult(check, False, _one_line(f"over the {limit_s:g} s limit, in {method}{at}"))
        if progress is not None:
            progress(f"{check}: {took:.0f} s, in {method}{at}")
    tmp.cleanup()
    return out[0]


def _run(cls: type[Agent], name: str, check: str, workdir: Path) -> CheckResult:
    try:
        detail = CHECKS[check](cls, name, workdir)
    except CheckFailed as e:
        return CheckResult(check, False, _one_line(str(e)), traceback.format_exc())
    except CheckSkipped as e:
        return CheckResult(check, None, _one_line(str(e)))
    except AgentFault as e:  # the agent's answer was wrong: the fault names it, the method and what
        log.debug("check %s of %s: %s", check, name, e, exc_info=True)
        return CheckResult(check, False, _one_line(str(e)), traceback.format_exc())
    except BaseException as e:  # the agent raised (SystemExit included: this is a thread): the failure
        log.debug("check %s of %s raised", check, name, exc_info=True)
        return CheckResult(check, False, _one_line(f"{type(e).__name__}: {e}"), traceback.format_exc())
    return CheckResult(check, True, _one_line(detail))


def check_agent(
    name: str, only: list[str] | None = None, *, limit_s: float | None = None
) -> list[CheckResult]:
    """Every check (or those named in ``only``) on registered agent ``name``, in :data:`CHECKS` order."""
    unknown = [c for c in only or [] if c not in CHECKS]
    if unknown:
        raise ValueError(f"unknown check {unknown[0]!r}: choose from {', '.join(CHECKS)}")
    return [run_check(name, check, limit_s=limit_s) for check in CHECKS if not only or check in only]
