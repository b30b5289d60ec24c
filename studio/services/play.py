"""A person's game in the Play tab, Qt-free: recorded move by move, taken back, gone on with later.

Moves go through :class:`engine.store.GameRecorder`, which stores each one before the board even starts
animating. A game the person shares with an agent (Watch, Step, a key press takes over) stays one record,
each move stored with who made it (:class:`Player`, see :mod:`engine.store.recorder`). A move taken back
is gone from the record and counted beside it (:func:`engine.store.recorder.takebacks`).

Like the web game, the tab opens on the game you left: the last unfinished game (the window closed,
the app killed) goes on where it stopped, as the same record (:meth:`GameRecorder.resume`). Which game
that is the settings say (a *resume token*, ``ID@DATABASE``, ``@DATABASE``: none); a profile that has
never said falls back to the person's latest unfinished game in the store.

BEST is the person's best score on a board size: the games they played in, with or without an agent's
help (an agent watched on their game raises it live, move by move, as it passes it).

The window keeps the token in its settings; everything here only reads and writes the store.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from engine.core import Rules
from engine.store import HUMAN, GameRecorder, GameStore, Player
from engine.store.recorder import takebacks

log = logging.getLogger(__name__)

__all__ = ["HUMAN", "GameRecorder", "PlayRecords", "Player", "agent_player", "game_info"]


def agent_player(agent: str, checkpoint: str | None = None) -> Player:
    """The player of a move an agent makes on the person's game (Watch, Step)."""
    return Player("agent", agent, checkpoint)


def game_info(recorder: GameRecorder, *, resumed: bool, taken_back: int) -> str:
    """The line under the score: size, rules that differ from the classic game, and the record, e.g.
    ``4x4 · p4 0.2 · game #12, resumed, 2 taken back``."""
    r = recorder.rules
    extras = []
    if r.p4 != 0.1:
        extras.append(f"p4 {r.p4:g}")
    if r.spawn_per_move != 1:
        extras.append(f"{r.spawn_per_move} per spawn")
    record = f"game #{recorder.game_id}" if recorder.game_id is not None else "not logged yet"
    if resumed:
        record += ", resumed"
    if taken_back:
        record += f", {taken_back} taken back"
    return " · ".join([f"{r.rows}x{r.cols}", *extras, record])


class PlayRecords:
    """What the Play tab asks of the store: new and resumed games, takebacks, the game to go on with
    and BEST (kept per board size once read: the store is read once a size)."""

    def __init__(self, store: GameStore) -> None:
        self.store = store
        self._best: dict[tuple[int, int], int] = {}
        self._reviewer: tuple[Rules | None, float, Any] | None = None  # rules, when, reviewer

    def coach_reviewer(self, rules: Rules | None) -> Any:
        """Who grades the person's moves (and hints while the coach is on): the default reviewer for
        ``rules`` (:func:`studio.services.review.default_reviewer`), re-read from the store at most
        every few seconds (a reviewer prepared meanwhile takes over)."""
        from studio.services.review import (
            default_reviewer,  # as the tab did: loaded when first asked, not at start
        )

        now = time.monotonic()
        cached = self._reviewer
        if cached is None or cached[0] != rules or now - cached[1] > 10.0:
            cached = self._reviewer = (rules, now, default_reviewer(self.store, rules))
        return cached[2]

    def new_game(self, rules: Rules, seed: int | None = None) -> GameRecorder:
        """A game with no record until its first move (a game opened and left untouched is not kept)."""
        return GameRecorder(self.store, rules=rules, seed=seed, lazy=True)

    def resume(self, token: object) -> GameRecorder | None:
        """The game to go on with (see :meth:`resume_candidates`) reopened as the same record; None
        when there is none."""
        for game_id in self.resume_candidates(token):
            try:
                return GameRecorder.resume(self.store, game_id)
            except ValueError:  # StoreError: gone, over, played elsewhere, or it does not replay
                continue
        return None

    def resume_candidates(self, token: object) -> list[int]:
        """The games to try to go on with: the one ``token`` names ("": none), else, when it says
        nothing about this store, the person's latest unfinished games of their own (not imported)."""
        game_id, _, where = str(token or "").partition("@")
        if token is not None and where == str(getattr(self.store, "path", "")):
            return [int(game_id)] if game_id.isdigit() else []
        try:
            games = self.store.list_games(played_by="human", status="abandoned", limit=50)
        except Exception:  # a damaged store must not stop play: a new game
            log.warning("cannot look for an unfinished game to resume", exc_info=True)
            return []
        own = [g for g in games if g.origin is None and g.run_id is None and g.n_moves and g.seed is not None]
        own.sort(key=lambda g: g.ended or g.started, reverse=True)
        return [g.id for g in own[:3]]

    def resume_token(self, recorder: GameRecorder | None) -> str:
        """The token naming ``recorder``'s game to go on with at the next start (none when it has no
        record yet or is over)."""
        game_id = recorder.game_id if recorder is not None and not recorder.closed else None
        return f"{game_id or ''}@{getattr(self.store, 'path', '')}"

    def takeback_count(self, recorder: GameRecorder) -> int:
        """How many moves were taken back in ``recorder``'s game, in this session and before."""
        if recorder.game_id is None:
            return 0
        try:
            return len(takebacks(self.store, recorder.game_id))
        except ValueError:  # StoreError: the count is informative only
            log.warning("cannot read the takebacks of game %s", recorder.game_id, exc_info=True)
            return 0

    def best(self, rules: Rules) -> int:
        """BEST of this board size: the top score of the games the person played in (agents may have
        helped: the mixed ones count, as the game in progress does while an agent plays it on)."""
        key = rules.shape
        if key not in self._best:
            best = 0
            try:
                for g in self.store.list_games(played_by="human"):
                    g_rules = getattr(g, "rules", None)
                    if g_rules is None or tuple(getattr(g_rules, "shape", key)) == key:
                        best = max(best, int(getattr(g, "score", 0)))
            except Exception:  # a damaged store must not stop play: best starts from 0
                log.warning("cannot read the best score from the store", exc_info=True)
                best = 0
            self._best[key] = best
        return self._best[key]

    def best_with(self, recorder: GameRecorder) -> int:
        """BEST counting the game in progress: the person's game counts whoever moves, live."""
        best = self.best(recorder.rules)
        if HUMAN in recorder.players:
            best = max(best, recorder.score)
            self._best[recorder.rules.shape] = best
        return best

    def forget_best(self, rules: Rules) -> None:
        """Read BEST again next time: a move taken back may have raised it live."""
        self._best.pop(rules.shape, None)
