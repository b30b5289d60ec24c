"""One game played in the studio (Qt window or pygame), logged to the store move by move.

Qt-free, so the Play tab and the pygame player record games the same way.

How a game is recorded
----------------------
* Nothing is written until the first move (a game opened and left untouched is not worth a record).
  From then on every move is written, and committed, the moment it is made, so closing the window or
  killing the process loses nothing. A killed game is left ``"playing"`` until a store is opened again,
  which marks it ``"abandoned"`` (its process is gone); the Games tab shows both as unfinished.
* A game mixing human and agent moves is recorded as **consecutive records, one per player**: when
  control passes from the person to an agent (Watch, Step) or back (a key press takes over), the
  current record is closed and a new one starts from the current board and score, with
  ``source="agent"`` and the agent's name (and checkpoint file) or ``source="human"``. Every record
  holds the moves of exactly one player, which is what imitation learning and per-agent statistics
  need: no human game is polluted by agent moves and vice versa. The store knows three statuses, so a
  record closed by a hand-over ends ``"abandoned"`` (that player left the game before it was over); the
  record that continues it starts at the same moment from the same board. The last record ends
  ``"finished"`` (game over) or ``"abandoned"`` (new game, window closed). Scores are the game's running
  score, so a continuing record starts from the score where the previous one stopped. Only the first
  record carries the game's seed: later ones start in the middle of the spawn stream.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine import Direction, Game, Rules, StepResult


@dataclass(frozen=True)
class Player:
    """Who makes a move: the person, or an agent (registry name, and the checkpoint it was loaded from)."""

    source: str = "human"
    agent: str | None = None
    checkpoint: str | None = None

    @property
    def is_human(self) -> bool:
        return self.source == "human"


HUMAN = Player()

STATUS_HANDED_OVER = "abandoned"  # see the module docstring


class PlaySession:
    """A :class:`engine.Game` plus its records in ``store``.

    ``play(direction, player)`` makes the move (IllegalMoveError-free: an illegal move returns None and
    changes nothing) and logs it before returning, so a caller may crash right after without loss.
    """

    def __init__(self, store: Any, rules: Rules, seed: int | None = None) -> None:
        self.store = store
        self.rules = rules
        # A drawn seed is recorded with the game, so an unseeded game can still be replayed exactly.
        self.seed = seed if seed is not None else secrets.randbelow(2**31)
        self.game = Game(rules=rules, seed=seed)
        self.game_id: int | None = None  # the open record (segment), None before the first move
        self.segment_ids: list[int] = []
        self._player: Player | None = None
        self._index = 0  # move index within the open segment
        self.closed = False

    # ------------------------------------------------------------------ state
    @property
    def board(self) -> np.ndarray:
        return self.game.board

    @property
    def score(self) -> int:
        return self.game.score

    @property
    def moves(self) -> int:
        return self.game.moves

    @property
    def game_over(self) -> bool:
        return self.game.game_over

    @property
    def player(self) -> Player | None:
        """Who made the last move (None before the first)."""
        return self._player

    # ------------------------------------------------------------------ moves
    def play(self, direction: Direction | int | str, player: Player = HUMAN) -> StepResult | None:
        """Make and log one move; None (nothing logged) when it is illegal or the game is closed.

        The move is made on a copy and becomes the game only once the store has it, so when logging
        fails (StoreError, a ValueError) the game is left as it was and shows what the store holds.
        """
        if self.closed:
            return None
        d = Direction.parse(direction)
        if not self.game.legal_mask()[d]:
            return None
        before = self.game.board
        if self.game_id is None or player != self._player:
            self._open_segment(player, before)
        assert self.game_id is not None
        after = self.game.copy()
        result = after.step(d)
        self.store.log_move(
            self.game_id,
            index=self._index,
            board_before=before,
            direction=int(d),
            reward=int(result.reward),
            score_after=int(after.score),
            spawns=result.spawns,
            board_after=after.board,
        )
        self.game = after
        self._index += 1
        if result.game_over:
            self._close_segment("finished")
            self.closed = True
        return result

    def close(self, status: str = "abandoned") -> None:
        """End the game (new game, window closed). Safe to call twice."""
        if not self.closed:
            self._close_segment(status)
            self.closed = True

    # ------------------------------------------------------------------ records
    def _open_segment(self, player: Player, board: np.ndarray) -> None:
        previous = self.game_id
        if previous is not None:
            self._close_segment(STATUS_HANDED_OVER)
        first = previous is None and self.game.moves == 0
        self.game_id = self.store.start_game(
            source=player.source,
            rules=self.rules,
            # The seed reproduces a record only from the game's first move; later segments start mid-stream.
            seed=self.seed if first else None,
            agent=player.agent,
            checkpoint=player.checkpoint,
            initial_board=board,
        )
        self.segment_ids.append(self.game_id)
        self._player = player
        self._index = 0

    def _close_segment(self, status: str) -> None:
        if self.game_id is not None:
            self.store.finish_game(self.game_id, status=status, final_board=self.game.board)
            self.game_id = None

