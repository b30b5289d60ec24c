"""``python main.py bench store``: the game library at scale (issue 47): how long listings take.

Builds a store of ``-o games=100000`` short synthetic games (random play cut after 5 to ``-o
moves=40`` moves) in a temporary data dir, or in ``-o data_dir=PATH`` (a store there that already
holds games is measured as it is, so a big one is built once and measured again and again). Sources
are mixed as a studio that trains and evaluates sees them: evaluation, training, agent (Watch / agents
in Play), human and mixed (a person and an agent in one game), started over the last year. The rows
go in through :meth:`engine.store.GameStore.insert_games`, a few thousand per transaction.

Then, in seconds (best of ``--rounds``): every ``games list`` filter (run in this process as the
command runs it: open the store, list the newest 50, count them all, print the table; each
``--source``, ``mine`` too, ``--agent``, ``--min-score``, ``--since``), the Games tab's time from
refresh to its first rows, and the Progress tab's refresh ("your games") until its figures are drawn
(both offscreen). Goals (issue 47, 100,000 games): every filter <= 1.5 s, the Games tab <= 2 s to
first rows, the Progress tab <= 1 s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from studio.commands.bench import BenchOptions, BenchReport, Measurement, Option, parse_options
from studio.progress import ProgressLine

OPTIONS = {
    "games": Option("int", 100_000, 1, 10_000_000),
    "moves": Option("int", 40, 5, 2000),
    "data_dir": Option("text"),
    "gui": Option("bool", True),
}
#: Share of each source among the synthetic games (a training / evaluation heavy library).
MIX: tuple[tuple[str, float], ...] = (
    ("evaluation", 0.40),
    ("training", 0.30),
    ("agent", 0.10),
    ("human", 0.10),
    ("mixed", 0.10),
)
AGENTS = ("expectimax", "ntuple", "greedy", "dqn")
TEMPLATES = 256  # distinct move sequences; the games reuse them with their own players and times
YEAR_S = 365 * 86_400.0


class StoreBenchReport(BenchReport):
    """Seconds need decimals; every info line is printed."""

    value_format = "{:8.3f}"
    info_keys = None


def _templates(max_moves: int, seed: int) -> list[Any]:
    """Short random games as :class:`~engine.store.exchange.IncomingGame` (one player, no meta)."""
    from engine import Game
    from engine.store import HUMAN
    from engine.store.codec import spawn_triples
    from engine.store.exchange import IncomingGame

    rng = np.random.default_rng(seed)
    out = []
    for k in range(TEMPLATES):
        game = Game(seed=seed * TEMPLATES + k)
        initial = game.board
        layouts: list[np.ndarray] = []
        moves: list[int] = []
        rewards: list[int] = []
        scores: list[int] = []
        spawns: list[list[tuple[int, int, int]]] = []
        length = int(rng.integers(5, max_moves + 1))
        while len(moves) < length:
            legal = game.legal_moves()
            if not legal:
                break
            before = game.board
            step = game.step(legal[int(rng.integers(len(legal)))])
            layouts.append(before)
            moves.append(int(step.direction))
            rewards.append(step.reward)
            scores.append(game.score)
            spawns.append(spawn_triples(step.spawns))
        n = len(moves)
        out.append(
            IncomingGame(
                rules=game.rules,
                meta={},
                initial_board=initial,
                layouts=np.asarray(layouts, dtype=np.int64).reshape(n, *game.rules.shape),
                moves=np.asarray(moves, dtype=np.int64),
                rewards=np.asarray(rewards, dtype=np.int64),
                scores=np.asarray(scores, dtype=np.int64),
                spawns=spawns,
                final_board=game.board,
                players=[HUMAN],
                move_players=np.zeros(n, dtype=np.int64),
            )
        )
    return out


def synthetic_games(count: int, max_moves: int, seed: int = 0, now: float | None = None) -> Iterator[Any]:
    """``count`` games of mixed sources, oldest first, started evenly over the year before ``now``."""
    from engine.store import HUMAN, Player

    templates = _templates(max_moves, seed)
    rng = np.random.default_rng(seed + 1)
    kinds = [k for k, _ in MIX]
    picks = rng.choice(len(kinds), size=count, p=[w for _, w in MIX])
    shapes = rng.integers(len(templates), size=count)
    agents = rng.integers(len(AGENTS), size=count)
    end = time.time() if now is None else now
    for i in range(count):
        kind = kinds[int(picks[i])]
        t = templates[int(shapes[i])]
        agent = Player("agent" if kind == "mixed" else kind, AGENTS[int(agents[i])])
        n = len(t.moves)
        if kind == "human":
            players, who = [HUMAN], np.zeros(n, dtype=np.int64)
        elif kind == "mixed" and n >= 2:  # the person opens, an agent takes over half way (Watch)
            players, who = [HUMAN, agent], (np.arange(n) >= n // 2).astype(np.int64)
        else:
            players, who = [agent if kind != "mixed" else HUMAN], np.zeros(n, dtype=np.int64)
        started = end - YEAR_S * (1.0 - i / count)
        meta = {"started": started, "ended": started + 60.0, "status": "abandoned", "seed": None}
        yield dataclasses.replace(t, meta=meta, players=players, move_players=who)


def build_store(data_dir: Path, count: int, max_moves: int, seed: int, progress: ProgressLine) -> int:
    """Fill the store in ``data_dir`` with ``count`` synthetic games unless it holds games already;
    how many games it holds."""
    from engine.store import GameStore

    with GameStore.open(data_dir) as store:
        have = store.count_games()
        if have:
            return have
        games = synthetic_games(count, max_moves, seed)
        done = 0
        chunk = 5000
        while done < count:
            n = min(chunk, count - done)
            store.insert_games(next(games) for _ in range(n))
            done += n
            progress.update(done, f"building the store: {done:,} of {count:,} games")
        return store.count_games()


def _best(rounds: int, fn: Callable[[], Any]) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _games_list(data_dir: Path, flags: list[str]) -> Callable[[], None]:
    """``python main.py --data-dir DIR games list FLAGS`` in this process, its output swallowed."""
    from studio.cli import build_parser

    def run() -> None:
        args = build_parser().parse_args(["--data-dir", str(data_dir), "games", "list", *flags])
        with contextlib.redirect_stdout(io.StringIO()):
            args.func(args)

    return run


def _filters(median_score: int) -> list[tuple[str, list[str]]]:
    from engine.store.filters import FILTER_SOURCES

    since = time.strftime("%Y-%m-%d", time.localtime(time.time() - 30 * 86_400))
    return [
        ("all", []),
        *((f"source {s}", ["--source", s]) for s in FILTER_SOURCES),
        ("agent ntuple", ["--agent", "ntuple"]),
        (f"min-score {median_score}", ["--min-score", str(median_score)]),
        (f"since {since}", ["--since", since]),
        ("json", ["--json"]),
    ]


def _gui_times(data_dir: Path, rounds: int) -> tuple[float, float, int]:
    """(Games tab to first rows, Progress tab refresh) in seconds, and the Progress tab's game count."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from engine.store import GameStore
    from studio.tabs.games import GamesTab
    from studio.tabs.progress import ProgressTab

    app = QApplication.instance() or QApplication([])
    with tempfile.TemporaryDirectory(prefix="bench-store-qs-") as tmp:
        settings = QSettings(str(Path(tmp) / "settings.ini"), QSettings.Format.IniFormat)
        store = GameStore.open(data_dir)
        try:
            games = GamesTab(store, settings)
            games.resize(1000, 700)
            games.show()
            app.processEvents()

            def first_rows() -> None:
                games.refresh()
                while games.model.rowCount() == 0:
                    app.processEvents()
                app.processEvents()  # the rows painted

            games_s = _best(rounds, first_rows)
            games.close()

            tab = ProgressTab(store, settings)
            tab.resize(1000, 700)
            tab.show()
            tab.wait_loaded(120)

            def refresh() -> None:
                tab.refresh()
                if not tab.wait_loaded(120):
                    raise RuntimeError("the Progress tab did not load within 120 s")
                app.processEvents()

            progress_s = _best(rounds, refresh)
            n = 0 if tab.data is None else len(tab.data.games)
            tab.shutdown()
            tab.close()
            games.deleteLater()
            tab.deleteLater()
            app.processEvents()
        finally:
            store.close()
    return games_s, progress_s, n


def store_benchmark(options: BenchOptions, progress: ProgressLine) -> BenchReport:
    opts = parse_options("store", options.extra, OPTIONS)
    with contextlib.ExitStack() as stack:
        if opts["data_dir"]:
            data_dir = Path(opts["data_dir"]).expanduser()
        else:
            data_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-store-")))
        t0 = time.perf_counter()
        n_games = build_store(data_dir, opts["games"], opts["moves"], options.seed, progress)
        build_s = time.perf_counter() - t0
        from engine.paths import database_path
        from engine.store import GameStore

        db = database_path(data_dir)
        with GameStore(db) as store:
            scores = sorted(g.score for g in store.list_games(limit=2000))
            schema_version = store._conn().execute("PRAGMA user_version").fetchone()[0]
        median = scores[len(scores) // 2] if scores else 0
        measurements: list[Measurement] = []
        for label, flags in _filters(median):
            progress.update(len(measurements), f"games list {label}")
            seconds = _best(options.rounds, _games_list(data_dir, flags))
            key = "list_" + "_".join(label.split()[:2]).replace("-", "_")
            measurements.append(
                Measurement(
                    key, f"games list {' '.join(flags) or '(no filter)'}", seconds, detail={"goal_s": 1.5}
                )
            )
        info: dict[str, Any] = {
            "games": n_games,
            "store_mb": round(sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 2**20, 1),
            "schema": schema_version,
            "build_s": round(build_s, 1),
            "rounds": options.rounds,
            "data_dir": str(data_dir) if opts["data_dir"] else "(temporary)",
            "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        }
        if opts["gui"]:
            progress.update(len(measurements), "Games and Progress tabs")
            games_s, progress_s, n_progress = _gui_times(data_dir, options.rounds)
            measurements.append(
                Measurement("games_tab_first_rows", "Games tab: first rows", games_s, detail={"goal_s": 2.0})
            )
            measurements.append(
                Measurement(
                    "progress_tab_refresh", "Progress tab: refresh", progress_s, detail={"goal_s": 1.0}
                )
            )
            info["progress_games"] = n_progress
        return StoreBenchReport("store", "seconds", measurements, info=info)
