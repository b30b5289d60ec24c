"""``python main.py bench review``: how long a game review takes, on one core.

A 1,000-move game (the first seeded game of expectimax depth 2 that lasts 1,000 moves, cut there) is
stored in a scratch store and reviewed end to end by :func:`studio.services.review.review_game`
(every position evaluated, values committed chunk by chunk, grades computed) with two reviewers:
heuristic expectimax at depth 2 (goal: <= 5 s) and an n-tuple network with 2-ply search (goal:
<= 2 s; a fresh 4x6 network filled with seeded noise, so that its 268 MB of weights are real memory
rather than the shared zero page of an untouched array, unless ``-o checkpoint=PATH`` names one; what
the weights are does not change the work). One untimed review first (numba compilation or cache load); each round then deletes the
stored review and times a new one. The figure is moves/s; the label gives seconds per game.
Options (``-o KEY=VALUE``): ``checkpoint`` (an ntuple checkpoint), ``moves`` (game length, default
1000), ``clock`` (cpu|wall, default cpu: wall time on a shared machine mostly measures neighbours).

``bench review -o accuracy=1``: what the accuracy figure says about players of known strength. Each of
random, a down/left alternator, greedy, expectimax depth 1 and expectimax depth 2 plays ``games``
fixed-seed games (the same seeds for each, from ``--seed``) to the end; the default reviewer of the
data dir (``data_dir``, default ``$STUDIO2048_DATA_DIR`` or the user data dir), or the n-tuple network
``checkpoint`` at 2-ply, reviews every move. Per player it prints the mean accuracy (min-max) and the
mean share of the expected final score given up, over the first ``first`` moves (default 100) and over
whole games, and whether the means rise in that order. The value of each measurement is the mean
accuracy in percent.
"""

from __future__ import annotations

import itertools
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from studio.commands.bench import (
    CLOCK_OPTION,
    CLOCKS,
    BenchOptions,
    BenchReport,
    Measurement,
    Option,
    _machine,
    parse_options,
)
from studio.progress import ProgressLine

OPTIONS = {
    "checkpoint": Option("text"),
    "moves": Option("int", 1000, 10, 20_000),
    "clock": CLOCK_OPTION,
    "accuracy": Option("bool", False),
    "games": Option("int", 5, 1, 200),
    "first": Option("int", 100, 1, 100_000),
    "data_dir": Option("text"),
}
#: The players of ``-o accuracy=1``, weakest first: (key, registry agent or None, its settings).
PLAYERS: tuple[tuple[str, str | None, dict[str, Any]], ...] = (
    ("random", "random", {}),
    ("alternator", None, {}),
    ("greedy", "greedy", {}),
    ("expectimax_d1", "expectimax", {"depth": 1, "depths_policy": ()}),
    ("expectimax_d2", "expectimax", {"depth": 2, "depths_policy": ()}),
)


def _long_game(moves: int, seed: int, progress: ProgressLine) -> object:
    """A GameTrace of exactly ``moves`` moves by expectimax depth 2 (trying seeds from ``seed``)."""
    from agents.registry import create_agent
    from engine import Game
    from engine.records import GameTrace, play_recorded

    agent = create_agent("expectimax", {"depth": 2})
    for s in range(seed, seed + 50):
        progress.update(0, f"playing a {moves:,}-move game (seed {s})", force=True)
        game = Game(seed=s)
        trace = GameTrace.start(game)
        while not game.game_over and game.moves < moves:
            play_recorded(game, agent.act(game), trace)
        if trace.n_moves >= moves:
            trace.final_board = game.board
            return trace
    raise ValueError(f"no game of expectimax depth 2 lasted {moves} moves in 50 seeds")


def review_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    from agents.spec import AgentSpec
    from engine.store import GameStore
    from studio.services.review import Reviewer, review_game

    opts = parse_options("review", options.extra, OPTIONS)
    if opts["accuracy"]:
        return accuracy_benchmark(options, progress, opts)
    clock_name = opts["clock"]
    clock = CLOCKS[clock_name]
    n_moves: int = opts["moves"]
    if opts["checkpoint"] is not None:
        path = Path(opts["checkpoint"]).expanduser()
        if not path.is_file():
            raise ValueError(f"{path}: no such checkpoint file")
        ntuple = Reviewer(AgentSpec.from_checkpoint(str(path.resolve()), "ntuple"), 2)
    else:
        ntuple = Reviewer(AgentSpec(name="ntuple"), 2)
    reviewers = {"expectimax_d2": Reviewer(AgentSpec(name="expectimax"), 2), "ntuple_2ply": ntuple}
    goals = {"expectimax_d2": 5.0, "ntuple_2ply": 2.0}
    trace = _long_game(n_moves, options.seed, progress)
    measurements: list[Measurement] = []
    info: dict[str, object] = {"rounds": options.rounds, "clock": clock_name, "game_moves": n_moves}
    with (
        tempfile.TemporaryDirectory(prefix="bench-review-") as tmp,
        GameStore(Path(tmp) / "s.sqlite") as store,
    ):
        game_id = store.record_trace(trace, "agent", "expectimax")  # type: ignore[arg-type]
        for key, reviewer in reviewers.items():
            progress.update(0, f"{key}: warming up", force=True)
            agent = reviewer.build(store.get_game(game_id).rules)
            weights = getattr(agent, "weights", None)
            if opts["checkpoint"] is None and isinstance(weights, np.ndarray):
                rng = np.random.default_rng(options.seed)
                rng.standard_normal(dtype=np.float32, out=weights)
                weights *= 100
            review_game(store, game_id, reviewer, agent=agent)
            best = float("inf")
            wall_best = float("inf")
            for k in range(options.rounds):
                progress.update(k, f"{key}: round {k + 1}/{options.rounds}", force=True)
                stored = store.get_review(game_id, reviewer.key())
                if stored is not None:
                    store.delete_review(stored.id)
                t0, w0 = clock(), time.perf_counter()
                review = review_game(store, game_id, reviewer, agent=agent)
                seconds, wall = clock() - t0, time.perf_counter() - w0
                if review.evaluated != n_moves:
                    raise RuntimeError(f"{key} evaluated {review.evaluated} positions, not {n_moves}")
                best, wall_best = min(best, seconds), min(wall_best, wall)
            measurements.append(
                Measurement(
                    key=key,
                    label=(
                        f"{key.replace('_', ' ')}: {best:.2f} s per {n_moves:,}-move game "
                        f"(goal <= {goals[key]:g} s; wall {wall_best:.2f} s)"
                    ),
                    value=n_moves / max(best, 1e-9),
                    detail={
                        "seconds_per_game": best,
                        "wall_seconds_per_game": wall_best,
                        "goal_s": goals[key],
                    },
                )
            )
            info[f"{key}_reviewer"] = reviewer.label
    info["machine"] = _machine()
    return BenchReport("review", "moves_per_s", measurements, baseline=None, info=info)


# ------------------------------------------------------------------------------ -o accuracy=1


def alternator(game: Any) -> Any:
    """Down, left, down, left… by the parity of the move number; when the due move is illegal the other
    one, then right, then up: the mechanical corner player the accuracy must see through."""
    from engine import Direction

    due = (Direction.DOWN, Direction.LEFT) if game.moves % 2 == 0 else (Direction.LEFT, Direction.DOWN)
    legal = game.legal_mask()
    return next(d for d in (*due, Direction.RIGHT, Direction.UP) if legal[d])


def _player(name: str | None, config: dict[str, Any], seed: int) -> Callable[[Any], Any]:
    from agents.registry import create_agent

    if name is None:
        return alternator
    agent = create_agent(name, config, seed=seed)
    return agent.act


def _whole_game(act: Callable[[Any], Any], seed: int) -> Any:
    from engine import Game
    from engine.records import GameTrace, play_recorded

    game = Game(seed=seed)
    trace = GameTrace.start(game)
    while not game.game_over:
        play_recorded(game, act(game), trace)
    trace.final_board = game.board
    return trace


def _reviewer_for(opts: dict[str, Any]) -> Any:
    """The network named by ``checkpoint`` at 2-ply, else the data dir's default reviewer."""
    from agents.spec import AgentSpec
    from engine.store import GameStore
    from studio.services.review import DEFAULT_DEPTH, Reviewer, default_reviewer

    if opts["checkpoint"] is not None:
        path = Path(opts["checkpoint"]).expanduser()
        if not path.is_file():
            raise ValueError(f"{path}: no such checkpoint file")
        return Reviewer(AgentSpec.from_checkpoint(str(path.resolve()), "ntuple"), DEFAULT_DEPTH)
    with GameStore.open(opts["data_dir"]) as store:
        return default_reviewer(store)


def accuracy_benchmark(options: BenchOptions, progress: ProgressLine, opts: dict[str, Any]) -> BenchReport:
    """``bench review -o accuracy=1`` (the module docstring)."""
    from agents.review import accuracy, given_up
    from engine.store import GameStore
    from studio.services.review import review_game

    reviewer = _reviewer_for(opts)
    games, first = int(opts["games"]), int(opts["first"])
    seeds = [options.seed + k for k in range(games)]
    rows: dict[str, dict[str, list[float]]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench-review-") as tmp,
        GameStore(Path(tmp) / "s.sqlite") as store,
    ):
        agent = reviewer.build()
        for key, name, config in PLAYERS:
            row = rows.setdefault(key, {"first": [], "first_lost": [], "whole": [], "whole_lost": []})
            row.update(moves=[], scores=[])
            for k, seed in enumerate(seeds):
                progress.update(0, f"{key}: game {k + 1}/{games} (seed {seed})", force=True)
                trace = _whole_game(_player(name, config, seed), seed)
                gid = store.record_trace(trace, "agent", name or key)
                review = review_game(store, gid, reviewer, agent=agent)
                for part, moves in (("first", review.moves[:first]), ("whole", review.moves)):
                    row[part].append(accuracy(moves))
                    row[f"{part}_lost"].append(100.0 * given_up(moves))
                row["moves"].append(float(trace.n_moves))
                row["scores"].append(float(trace.final_score))
    measurements: list[Measurement] = []
    for part, what in (("first", f"first {first} moves"), ("whole", "whole games")):
        for key, row in rows.items():
            acc, lost = row[part], row[f"{part}_lost"]
            mean, mean_lost = float(np.mean(acc)), float(np.mean(lost))
            measurements.append(
                Measurement(
                    key=f"{key}_{part}",
                    label=(
                        f"{key.replace('_', ' ')}, {what}: accuracy {mean:.1f} % ({min(acc):.1f}-{max(acc):.1f}), "
                        f"gave up {mean_lost:.1f} % of the expected final score"
                        + (
                            f" (mean score {np.mean(row['scores']):,.0f}, {np.mean(row['moves']):,.0f} moves)"
                            if part == "whole"
                            else ""
                        )
                    ),
                    value=mean,
                    detail={"accuracy": acc, "given_up_percent": lost, "scores": row["scores"]},
                )
            )
    info: dict[str, Any] = {
        "rounds": 1,
        "reviewer": reviewer.label,
        "games": games,
        "seeds": f"{seeds[0]}..{seeds[-1]}",
        "first": first,
    }
    if reviewer.fallback:
        info["reviewer_note"] = reviewer.fallback
    for part in ("first", "whole"):
        means = [float(np.mean(rows[key][part])) for key, _, _ in PLAYERS]
        strict = [a < b for a, b in itertools.pairwise(means)]
        # alternator <= greedy: both are mechanical; the others must rise strictly
        info[f"in_order_{part}"] = all(ok or (i == 1 and means[1] <= means[2]) for i, ok in enumerate(strict))
    first_means = {key: float(np.mean(rows[key]["first"])) for key, _, _ in PLAYERS}
    info["expectimax_d2_first_at_least_95"] = first_means["expectimax_d2"] >= 95.0
    info["alternator_first_at_most_70"] = first_means["alternator"] <= 70.0
    info["machine"] = _machine()
    return _AccuracyReport("review", "accuracy_percent", measurements, baseline=None, info=info)


class _AccuracyReport(BenchReport):
    """The figures are the labels; the reviewer and the checks follow them."""

    def render_text(self) -> str:
        lines = [f"bench review -o accuracy=1 (reviewer {self.info['reviewer']}, seeds {self.info['seeds']})"]
        lines += [f"  {m.label}" for m in self.measurements]
        for key in (
            "reviewer_note",
            "in_order_first",
            "in_order_whole",
            "expectimax_d2_first_at_least_95",
            "alternator_first_at_most_70",
        ):
            if key in self.info:
                lines.append(f"  {key}: {self.info[key]}")
        return "\n".join(lines)
