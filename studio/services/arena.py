"""The Arena's run without its window: the contestants' rows, what the settings keep of them, the
job that plays them one after another into the store, and the figures and lines the tab shows.

Qt-free (the layers: engine <- agents <- studio services <- Qt front ends), so a row's state, the
progress share and the summary lines are tested without a window. The Arena tab
(:mod:`studio.tabs.arena`) gathers its inputs, starts :func:`play_contestants` in a worker thread and
draws snapshots of :class:`LiveRows`.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.arena import EtaModel, EvalResult, tile_thresholds
from agents.spec import AgentSpec
from engine import Rules
from studio.text import duration, plural


def spec_to_json(spec: Any) -> dict[str, Any]:
    """An :class:`agents.spec.AgentSpec` as plain JSON values (what the settings keep)."""
    return {
        "name": spec.name,
        "config": dict(spec.config),
        "checkpoint": spec.checkpoint,
        "rules": None if spec.rules is None else spec.rules.to_dict(),
        "label": spec.label,
        "target": spec.target,
        "play": dict(spec.play),
    }


def spec_from_json(data: Any) -> AgentSpec:
    """The inverse of :func:`spec_to_json`; ValueError / TypeError for anything else."""
    if not isinstance(data, dict):
        raise TypeError("a contestant is a JSON object")
    rules = data.get("rules")
    return AgentSpec(
        name=data.get("name"),
        config=dict(data.get("config") or {}),
        checkpoint=data.get("checkpoint"),
        rules=None if rules is None else Rules.from_dict(rules),
        label=data.get("label"),
        target=data.get("target"),
        play=dict(data.get("play") or {}),
    )


def contestants_to_json(entries: Sequence[tuple[Any, bool]]) -> str:
    """The contestants list as the settings keep it: a JSON list of {"spec": ..., "ticked": bool}."""
    return json.dumps([{"spec": spec_to_json(spec), "ticked": bool(ticked)} for spec, ticked in entries])


def contestants_from_json(text: str) -> list[tuple[AgentSpec, bool]]:
    """The inverse of :func:`contestants_to_json`, forgiving: hand-edited settings give what can be
    read (an entry that is not a spec is left out; text that is not a list gives none)."""
    try:
        entries = json.loads(text)
    except ValueError:
        return []
    out = []
    for entry in entries if isinstance(entries, list) else []:
        try:
            spec = spec_from_json(entry.get("spec") if isinstance(entry, dict) else None)
        except (TypeError, ValueError, AttributeError, KeyError):
            continue
        out.append((spec, bool(entry.get("ticked", True))))
    return out


def checkpoint_missing(spec: Any) -> bool:
    """Whether ``spec`` names a checkpoint file that is not there (any more)."""
    return bool(spec.checkpoint) and not Path(spec.checkpoint).exists()


def result_to_json(result: Any) -> dict[str, Any]:
    """An :class:`agents.arena.EvalResult` as plain JSON values: its per-game arrays and its head, all
    the figures the table, the tile table and the chart are drawn from (not the workers' threads)."""
    return {
        "label": result.label,
        "agent": result.agent,
        "checkpoint": result.checkpoint,
        "config": result.config,
        "rules": result.rules.to_dict(),
        "seed": int(result.seed),
        "workers": int(result.workers),
        "scores": [int(v) for v in result.scores],
        "moves": [int(v) for v in result.moves],
        "max_tiles": [int(v) for v in result.max_tiles],
        "seconds": [float(v) for v in result.seconds],
        "wall_seconds": float(result.wall_seconds),
        "game_ids": [int(v) for v in result.game_ids],
        "planned": int(result.planned),
        "cancelled": bool(result.cancelled),
    }


def result_from_json(data: Any) -> EvalResult:
    """The inverse of :func:`result_to_json`; ValueError / TypeError / KeyError for anything else."""
    if not isinstance(data, dict):
        raise TypeError("a result is a JSON object")
    scores, moves, max_tiles = (
        np.asarray(data[key], dtype=np.int64).reshape(-1) for key in ("scores", "moves", "max_tiles")
    )
    seconds = np.asarray(data["seconds"], dtype=np.float64).reshape(-1)
    if len({scores.size, moves.size, max_tiles.size, seconds.size}) != 1:
        raise ValueError("a result's per-game lists differ in length")
    return EvalResult(
        label=str(data["label"]),
        agent=str(data["agent"]),
        checkpoint=data.get("checkpoint"),
        config=dict(data.get("config") or {}),
        rules=Rules.from_dict(data["rules"]),
        seed=int(data["seed"]),
        workers=int(data["workers"]),
        wall_seconds=float(data["wall_seconds"]),
        game_ids=tuple(int(v) for v in data.get("game_ids") or ()),
        planned=int(data.get("planned", 0)),
        cancelled=bool(data.get("cancelled", False)),
        scores=scores,
        moves=moves,
        max_tiles=max_tiles,
        seconds=seconds,
    )


@dataclass
class ContestantRow:
    """One contestant of the run: ``status`` is waiting / playing / done / cancelled / not played /
    failed; ``result`` holds its finished games so far (None before the first); ``moves`` the moves
    played so far, games in flight included; ``elapsed`` its seconds so far; ``reason`` why it failed
    (one line naming it and the fault)."""

    spec: Any
    status: str = "waiting"
    result: Any = None
    moves: int = 0
    elapsed: float = 0.0
    reason: str = ""

    @property
    def games(self) -> int:
        return self.result.games if self.result is not None else 0

    @property
    def status_text(self) -> str:
        n = self.games
        if self.status == "playing":
            return (
                f"playing · {n:,} / {self.result.planned:,}"
                if self.result is not None
                else "playing · starting"
            )
        if self.status == "cancelled":
            return f"cancelled after {n:,} game{'' if n == 1 else 's'}"
        if self.status == "failed":
            # Short, so the figures and the agent's name keep their width: the reason (naming the
            # agent, the move and the game) is the cell's tooltip and a line under the progress bar.
            return f"failed after {n:,} game{'' if n == 1 else 's'}" if n else "failed"
        return self.status


def rows_to_json(rows: Sequence[ContestantRow], games_each: int, summary: str) -> str:
    """A finished run as kept in the settings: its rows (spec, status, reason, figures), the games
    each contestant was to play and the line that summed it up."""
    return json.dumps(
        {
            "games_each": int(games_each),
            "summary": summary,
            "rows": [
                {
                    "spec": spec_to_json(r.spec),
                    "status": r.status,
                    "reason": r.reason,
                    "moves": int(r.moves),
                    "elapsed": float(r.elapsed),
                    "result": None if r.result is None else result_to_json(r.result),
                }
                for r in rows
            ],
        },
        default=str,  # a config value JSON has no word for is kept as its text, not refused
    )


def rows_from_json(text: str) -> tuple[list[ContestantRow], int, str]:
    """The inverse of :func:`rows_to_json`; ValueError / TypeError / KeyError for anything else."""
    data = json.loads(text)
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise TypeError("the last run is a JSON object with rows")
    rows = []
    for entry in data["rows"]:
        result = entry.get("result")
        rows.append(
            ContestantRow(
                spec=spec_from_json(entry["spec"]),
                status=str(entry["status"]),
                result=None if result is None else result_from_json(result),
                moves=int(entry.get("moves", 0)),
                elapsed=float(entry.get("elapsed", 0.0)),
                reason=str(entry.get("reason") or ""),
            )
        )
    return rows, int(data.get("games_each", 0)), str(data.get("summary") or "")


def one_line(error: BaseException) -> str:
    """An exception as one line: its message (its type when it has none)."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def fault_reason(spec: Any, error: BaseException | str) -> str:
    """Why a contestant failed, on one line that names it (a checkpoint's load error does not)."""
    text = " ".join(error.split()) if isinstance(error, str) else one_line(error)
    name = spec.display
    return text if text.startswith(name) else f"{name}: {text}"


def results_of(rows: Sequence[ContestantRow]) -> list[Any]:
    """The results of the rows that finished games (what the tile table and the chart compare)."""
    return [r.result for r in rows if r.result is not None and r.result.games]


def played_share(rows: Sequence[ContestantRow], games_each: int) -> float:
    """The progress bar's share of a run (0..1): every contestant's games weigh alike. A contestant
    done counts whole; one playing counts its finished games, plus its games in flight by their moves
    at its mean moves per finished game (at most to its next whole game each, so to say).

    Not the share of the run's time: that one follows the ETA, which rises when a slower contestant's
    first games finish (random done in a second, then expectimax), so the bar went back (81 % -> 62 %).
    The tab keeps the bar from moving back where this estimate wavers (a game longer than the mean
    finishing)."""
    if not rows or games_each <= 0:
        return 0.0
    units = 0.0
    for row in rows:
        if row.status == "done":
            units += 1.0
            continue
        done = min(row.games, games_each)
        share = done / games_each
        if row.result is not None and done and done < games_each:
            finished_moves = float(row.result.moves.sum())
            in_flight = max(0.0, row.moves - finished_moves) / max(1.0, finished_moves / done)
            share += min(in_flight, 0.99 * (games_each - done)) / games_each
        units += min(1.0, share)
    return min(1.0, units / len(rows))


def run_eta(rows: Sequence[ContestantRow], games_each: int) -> EtaModel:
    """The time model of a run from its rows: those finished by their time, the one playing by its
    games and moves so far (the rows after it have not started)."""
    model = EtaModel(games_each, max(1, len(rows)))
    for k, row in enumerate(rows):
        if row.status in ("done", "cancelled"):
            model.finish(k, row.elapsed)
        elif row.status == "playing":
            finished_moves = int(row.result.moves.sum()) if row.result is not None else 0
            model.update(k, row.games, finished_moves, row.moves, row.elapsed)
            break
    return model


def reached_counts(results: Sequence[Any]) -> dict[str, dict[int, int]]:
    """What the tile table shows: label -> {tile: games whose max tile is at least that tile}."""
    thresholds = tile_thresholds(*(r.max_tiles for r in results))
    return {r.label: {t: int(np.count_nonzero(r.max_tiles >= t)) for t in thresholds} for r in results}


def progress_text(rows: Sequence[ContestantRow], games_each: int) -> str:
    """The lines under the bar while a run plays: games done · ETA, then who plays at what speed."""
    total = games_each * len(rows)
    done = sum(r.games for r in rows)
    eta = duration(run_eta(rows, games_each).seconds_left(), "…")
    lines = [f"{done:,} / {total:,} games · ETA {eta}"]
    for k, row in enumerate(rows):
        if row.status == "playing":
            rate = row.moves / row.elapsed if row.elapsed > 0 else 0.0
            lines.append(
                f"Playing {row.spec.display} ({k + 1} of {len(rows)})"
                + (f" · {rate:,.0f} moves/s" if rate else "")
            )
    return "\n".join(lines)


def starting_text(total: int, workers: int, backend: str) -> str:
    """The lines under the bar as a run starts, before its first word."""
    players = (
        f"{workers} Ray actor{'s' if workers > 1 else ''}"
        if backend == "ray"
        else f"{workers} process{'es' if workers > 1 else ''}"
    )
    return f"0 / {total:,} games · ETA …\nStarting {players}…"


def finished_text(rows: Sequence[ContestantRow], *, crashed: bool, cancelled: bool) -> str:
    """The lines that sum up a run that ended: games and time (or how it stopped), then each failed
    contestant on its own line (who, and the move or fault that stopped it)."""
    n = sum(r.games for r in rows)
    if crashed:
        return f"Failed after {n:,} game{'' if n == 1 else 's'}"
    if cancelled:
        text = f"Cancelled after {n:,} game{'' if n == 1 else 's'}"
    else:
        text = f"Done: {plural(n, 'game')} in {duration(sum(r.elapsed for r in rows))}"
    text += " (in the store)" if n else ""
    failed = [r for r in rows if r.status == "failed"]
    if failed:
        text += "\n" + "\n".join(f"Failed: {r.reason or r.spec.display}" for r in failed)
    return text


class LiveRows:
    """The run's rows, written by the job thread and read by the window, under one lock."""

    def __init__(self, specs: Sequence[Any]) -> None:
        self._lock = threading.Lock()
        self._rows = [ContestantRow(spec) for spec in specs]
        self.cancel = False  # set by the window; evaluate() polls it

    def set(self, k: int, **changes: Any) -> None:
        with self._lock:
            row = self._rows[k]
            for key, value in changes.items():
                setattr(row, key, value)
            if "result" in changes and changes["result"] is not None:
                row.elapsed = float(changes["result"].wall_seconds)

    def snapshot(self) -> list[ContestantRow]:
        with self._lock:
            return [dataclasses.replace(r) for r in self._rows]

    def games_done(self) -> int:
        with self._lock:
            return sum(r.games for r in self._rows)

    def results(self) -> list[Any]:
        with self._lock:
            return results_of(self._rows)

    def close(self, failed: bool) -> None:
        """The job ended: a row still playing failed; rows still waiting were not played."""
        with self._lock:
            for r in self._rows:
                if r.status == "playing":
                    r.status = "failed" if failed else "cancelled"
                elif r.status == "waiting":
                    r.status = "not played"


@dataclass(frozen=True)
class ArenaRun:
    """What one run plays: each contestant ``games`` games from ``seed`` on ``workers`` processes
    (or Ray actors, ``backend="ray"``), stored in the store at ``db_path``."""

    games: int
    seed: int
    workers: int
    backend: str
    db_path: Path


def play_contestants(
    run: ArenaRun, live: LiveRows, specs: Sequence[Any], report: Callable[..., None]
) -> list[Any]:
    """Play every contestant of ``live`` one after another (the worker thread's job): each row
    follows its games as they finish, ``report(done, total, "")`` after each change; returns the
    results with finished games. One contestant's fault is its row's; the others still play."""
    # Looked up at each run, so a test's stand-in for evaluate reaches the job.
    from agents.arena import evaluate
    from engine.store import GameStore

    total = run.games * len(specs)
    with GameStore(run.db_path) as store:  # the worker thread's own connection
        for k, spec in enumerate(specs):
            if live.cancel:
                break
            live.set(k, status="playing")
            report(live.games_done(), total, "")

            def on_live(snap: Any, moves: int, k: int = k) -> None:
                live.set(k, result=snap, moves=moves, elapsed=snap.wall_seconds)
                report(live.games_done(), total, "")

            try:
                result = evaluate(
                    spec,
                    run.games,
                    run.seed,
                    run.workers,
                    store=store,
                    should_stop=lambda: live.cancel,
                    live=on_live,
                    backend=run.backend,
                )
            except Exception as e:
                # An illegal move, an agent that raises, a checkpoint that does not load: that row's.
                live.set(k, status="failed", reason=fault_reason(spec, e))
                report(live.games_done(), total, "")
                continue
            # evaluate() ends an agent that breaks the rules (an illegal move, an exception of its
            # own) with the games it finished and ``failure``, the line naming the fault.
            failure = getattr(result, "failure", None)
            if failure:
                live.set(k, status="failed", result=result, reason=fault_reason(spec, failure))
            else:
                live.set(k, status="cancelled" if result.cancelled else "done", result=result)
            report(live.games_done(), total, "")
    return live.results()
