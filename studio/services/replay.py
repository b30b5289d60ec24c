"""What the Replay tab asks of the store, and the words it shows for a game and a step (Qt-free).

The tab lists games (:func:`list_games`), opens one whole (:func:`open_game`: the record and how many
moves were taken back in Play), shows a stored review (:func:`shown_review`), reviews on a worker thread with that thread's own
connection, handing the review so far to the window as it goes (:func:`review_in_thread`), and prepares a reviewer in a child process (:func:`start_preparing`,
:func:`follow_preparing`). The texts (:func:`game_label`, :func:`game_title`, :func:`step_text`) are
plain strings, so they are tested without a window.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import Direction
from engine.store import GameFilter, GameRecord, GameStore, GameSummary
from engine.store.recorder import takebacks
from studio.services.review import GameReview, Reviewer, earlier_default_review, stored_review
from studio.text import game_status

if TYPE_CHECKING:
    from studio.services.training_process import TrainingProcess

LIST_LIMIT = 5000  # newest games listed; the Games tab's table holds the rest
ARROWS = {Direction.UP: "↑", Direction.LEFT: "←", Direction.DOWN: "↓", Direction.RIGHT: "→"}
log = logging.getLogger(__name__)


# ---------------------------------------------------------------------- the store
def list_games(store: GameStore, match: GameFilter | None, limit: int = LIST_LIMIT) -> list[GameSummary]:
    """The newest ``limit`` games ``match`` lets through, the highest id first."""
    games = store.list_games(match, limit=limit)
    return sorted(games, key=lambda g: g.id, reverse=True)


def open_game(store: GameStore, game_id: int) -> tuple[GameRecord, int]:
    """Game ``game_id`` read whole, and how many moves were taken back in Play (not in the record).
    KeyError / ValueError: no such game, or one too damaged to replay."""
    record = store.load_game(game_id)
    return record, len(takebacks(store, game_id))


def shown_review(store: GameStore, game_id: int, reviewer: Reviewer) -> GameReview | None:
    """The review of ``game_id`` by ``reviewer`` in the store; for the default reviewer, when the
    default changed since, the earlier default's (it says whose it is). None: not reviewed, or
    unreadable (a damaged review is shown as not reviewed, not as an error)."""
    try:
        review = stored_review(store, game_id, reviewer)
        if review is None and reviewer.default:
            review = earlier_default_review(store, game_id, reviewer)
        return review
    except (ValueError, OSError):  # a damaged stored review (a StoreError)
        return None
    except Exception:  # none of those: shown as not reviewed, its traceback in the log
        log.exception("reading the stored review of game %s", game_id)
        return None


def review_in_thread(
    db_path: str | Path,
    game_id: int,
    reviewer: Reviewer,
    report: Callable[..., None],
    stop: threading.Event,
) -> GameReview:
    """Review game ``game_id`` on the calling (worker) thread with its own connection; ``report(done,
    total, "")`` after each chunk and ``report(done, total, "", review)`` with the review so far (at most
    once a second, graded from the values in hand: the window draws it without reading the store on
    its own thread); ends early, keeping what was done, once ``stop`` is set."""
    from studio.services.review import review_game

    with GameStore(db_path) as store:  # SQLite connections stay on the thread that made them
        return review_game(
            store,
            game_id,
            reviewer,
            progress=lambda done, total: report(done, total, ""),
            should_stop=stop.is_set,
            on_partial=lambda review: report(len(review.moves), review.n_moves, "", review),
        )


# ---------------------------------------------------------------------- preparing a reviewer
def start_preparing(db_path: str | Path, minutes: float | None = None) -> tuple[TrainingProcess, float]:
    """Start training the n-tuple network that becomes the default reviewer, in a child process; the
    process and its budget in seconds. ValueError / OSError: it cannot start."""
    from studio.services.review import PREPARE_MINUTES, prepare_request
    from studio.services.training_process import TrainingProcess

    request = prepare_request(PREPARE_MINUTES if minutes is None else minutes)
    total = float(request.budget.seconds or 1.0)
    return TrainingProcess(request, db_path), total


def follow_preparing(proc: TrainingProcess, total: float, report: Callable[..., None]) -> str:
    """Follow the preparing run to its end (on a worker thread): ``report(seconds done, total, text)``
    as it trains; its final status, and the error when it failed."""
    from studio.services.messages import Done, Events, Failed, Started

    status, error = "?", ""
    for msg in proc.messages():
        if isinstance(msg, Started):
            report(0.0, total, f"run {msg.run_id}: starting")
        elif isinstance(msg, Events) and msg.events:
            ev = msg.events[-1]
            mean = ev.metrics.get("mean_score")
            text = "" if mean is None else f"mean score {mean:,.0f}"
            report(min(ev.progress, 1.0) * total, total, text)
        elif isinstance(msg, Done):
            status = msg.status
        elif isinstance(msg, Failed):
            status, error = "failed", msg.message
    proc.wait(30)
    return f"{status}{': ' + error if error else ''}"


def duration_text(seconds: float) -> str:
    """``4 minutes``, ``1 minute``, ``3 seconds``."""
    if seconds >= 60:
        minutes = seconds / 60
        return f"{minutes:g} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:.0f} seconds"


# ---------------------------------------------------------------------- texts
def _who(g: Any) -> str:
    """``human``, ``greedy``, ``mixed (you + greedy)``."""
    return f"mixed ({g.who})" if g.source == "mixed" else g.agent or g.source


def moves_text(n: int) -> str:
    return f"{n:,} move" if n == 1 else f"{n:,} moves"


def game_label(g: Any) -> str:
    """One line per game: ``#12 human · 1,234 · max 256 · 180 moves · 5x5 · unfinished``."""
    who = _who(g)
    parts = [f"#{g.id} {who}", f"{g.score:,}", f"max {g.max_tile}", moves_text(g.n_moves)]
    if g.rules.shape != (4, 4):
        parts.append(f"{g.rules.rows}x{g.rules.cols}")
    if g.status != "finished":
        parts.append(game_status(g.status))
    return " · ".join(parts)


def game_title(g: Any, taken_back: int = 0) -> str:
    """The heading above the replayed board: who, where, how it went (and the moves taken back)."""
    who = g.source if not g.agent or g.source == "mixed" else f"{g.source} ({g.agent})"
    if g.source == "mixed":
        who = _who(g)
    if g.origin is not None:
        who += f", imported from {g.origin.get('file', '?')}"
    status = game_status(g.status)
    title = f"Game #{g.id} · {who} · {g.rules.rows}x{g.rules.cols} · {g.score:,} points · {status}"
    return title + (f" · {taken_back} taken back" if taken_back else "")


def spawn_text(spawns: Any) -> str:
    if not spawns:
        return "none"
    return ", ".join(f"{s.value} at ({s.row}, {s.col})" for s in spawns)


def step_text(r: GameRecord, i: int) -> str:
    """What position ``i`` of ``r`` shows: the start (with the seed), or the move that led to it (who,
    reward, score, spawn); at the end, how the game ended."""
    n = r.n_moves
    if i == 0:
        text = f"Start · {moves_text(n)} in this game" if n else "Start: this game has no moves"
        if r.summary.seed is not None:
            text += f" · seed {r.summary.seed}"
    else:
        k = i - 1
        d = Direction(int(r.moves[k]))
        text = (
            f"Move {i}/{n}: {ARROWS[d]} {d.label} by {r.player_of(k).label} · reward {int(r.rewards[k]):,} · "
            f"score {int(r.scores[k]):,} · spawn {spawn_text(r.spawns_of(k))}"
        )
    if i == n and n:
        status = r.summary.status
        text += " · " + ("game over" if status == "finished" else game_status(status))
    return text
