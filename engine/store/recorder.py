"""``GameRecorder``: one game played move by move, stored as one record whoever makes the moves.

The terminal (``play``), the Play tab and the pygame window all record through it.

How a game is recorded
----------------------
* **One game, one record.** Each move is stored with its :class:`~engine.store.model.Player`: the
  person, or an agent (name and checkpoint file). A person who lets an agent play for a while (Watch,
  Step) and then takes over again makes one game whose source is ``mixed``; imitation and per-agent
  statistics still know who made each move (:meth:`GameRecord.moves_by`).
* **Every move is committed before the game advances.** The move is made on a copy of the game, which
  becomes the game only once the store has the move, so a move the store refuses (a StoreError) is not
  made at all and the board always shows what the store holds; closing the window or killing the
  process loses nothing. A killed game stays ``playing`` until a store is opened again, which marks it
  ``abandoned`` (its process is gone).
* **The recorded seed replays the game.** Without a seed the recorder draws one and builds the game
  with it, so every game it starts can be replayed from its record: same seed, same moves, same boards.
* **A game left unfinished goes on as the same game.** :meth:`GameRecorder.resume` replays an
  ``abandoned`` record's moves from its seed (checking every board against the record, so the next
  tiles are the ones the seed would have drawn next) and reopens it: the moves that follow append to
  the same record, which still replays from its seed as one game.
* **A move taken back is gone from the record, and counted.** :meth:`GameRecorder.take_back` deletes
  the last stored move and goes back to the exact game before it, the spawn generator's state
  included: the same move then brings the same tile, as in the web game's undo. That keeps the record
  a game its seed replays (every stored move followed from the one before, with the seed's next
  tiles), so Replay, Review (which grades the moves that stood, never a taken-back one), resuming and
  exports need nothing new. What was taken back (move number, direction, who made it) is kept beside
  the game in the store's ``meta`` table (``takebacks:ID``, see :func:`takebacks`), so it outlives the
  session; it does not travel in exported files, which hold the game as it stands.
* ``lazy=True`` writes nothing until the first move (the window: a game opened and left untouched is
  not worth a record); otherwise the record exists from the start (the terminal says "saved as game N"
  even when no move was made).

numpy and the standard library only, like the rest of :mod:`engine.store`; never prints.
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from dataclasses import dataclass

import numpy as np

from engine.core import Direction, Rules, StepResult
from engine.game import Game
from engine.store.base import one_row
from engine.store.db import GameStore
from engine.store.model import HUMAN, Player, StoreError

log = logging.getLogger(__name__)

SEED_RANGE = 2**31  # drawn seeds stay short enough to read out and type into "New game"
#: Beside game ID in the store's ``meta`` table: its taken-back moves, a JSON list of :class:`Takeback`.
TAKEBACKS_KEY = "takebacks:{}"


@dataclass(frozen=True)
class Takeback:
    """A move taken back: move ``index`` (0-based; the record's move ``index`` is the one played
    instead, if any), its ``direction``, who had made it, and when it was taken back (Unix seconds)."""

    index: int
    direction: Direction
    player: Player
    at: float


def takebacks(store: GameStore, game_id: int) -> list[Takeback]:
    """The moves taken back in game ``game_id``, in the order they were taken back (none: ``[]``).

    Damaged notes read as none (and are logged): they only tell the story, the record stands without them.
    """
    with store._tx(write=False) as con:
        row = con.execute("SELECT value FROM meta WHERE key = ?", (TAKEBACKS_KEY.format(game_id),)).fetchone()
    if row is None:
        return []
    try:
        return [
            Takeback(
                int(t["index"]), Direction(int(t["direction"])), Player.from_json(t["player"]), float(t["at"])
            )
            for t in json.loads(row[0])
        ]
    except (TypeError, ValueError, KeyError):
        log.warning("game %s: its takebacks cannot be read", game_id, exc_info=True)
        return []


class GameRecorder:
    """A :class:`engine.Game` and its record in ``store``.

    ``GameRecorder(store, rules=Rules(), seed=None)`` starts a new game (drawing its seed when none is
    given); ``GameRecorder(store, game)`` records a game the caller built (its ``seed`` is recorded as
    it is, None included); ``GameRecorder.resume(store, game_id)`` goes on with an unfinished one.
    ``play(direction, player)`` makes and stores one move; ``close()`` ends the
    record as ``finished`` (no move left) or ``abandoned``. Usable as a context manager (closes on exit).
    """

    def __init__(
        self,
        store: GameStore,
        game: Game | None = None,
        player: Player = HUMAN,
        *,
        rules: Rules | None = None,
        seed: int | None = None,
        lazy: bool = False,
        run_id: int | None = None,
    ) -> None:
        if game is not None and (rules is not None or seed is not None):
            raise ValueError("give a game, or rules and a seed for a new one, not both")
        if game is None:
            seed = seed if seed is not None else secrets.randbelow(SEED_RANGE)
            game = Game(rules=rules or Rules(), seed=seed)
        self.store = store
        self.game = game
        self.seed: int | None = game.seed
        self.run_id = run_id
        self.game_id: int | None = None  # None until the record exists (lazy: the first move)
        self._player = player  # who moves when play() is not told: the last mover, first the given one
        self._moved = False
        self._players: list[Player] = []  # who has moved in this game, in order of their first move
        # Before each move that stands: the game (spawn generator included), the move, who made it, and
        # the recorder's last mover then (and whether anyone had moved): what take_back() restores.
        self._history: list[tuple[Game, Direction, Player, Player, bool]] = []
        self.closed = False
        if not lazy:
            self._create(player)
        if game.game_over:  # a board without a single legal move: nothing will ever be stored
            self.close()

    @classmethod
    def resume(cls, store: GameStore, game_id: int) -> GameRecorder:
        """Go on with game ``game_id``, left unfinished: the same record, its next move appended.

        The game is rebuilt by replaying its moves from its seed, every board checked against the
        record; a game that does not replay (no seed, a move that does not follow), is over, or is being
        played by another process is a one-line StoreError and is left as it was.
        """
        rec = store.load_game(game_id)
        s = rec.summary
        if s.status != "abandoned":  # finished, or being played right now
            raise StoreError(f"game {game_id} is {s.status}: it cannot be continued here")
        if s.seed is None:
            raise StoreError(f"game {game_id} has no seed: its next tiles cannot be drawn as the same game")
        game = Game(rules=s.rules, seed=s.seed)
        if not np.array_equal(game.board, rec.initial_board):
            raise StoreError(f"game {game_id} does not start as its seed {s.seed} does")
        history: list[tuple[Game, Direction, Player, Player, bool]] = []
        for i in range(rec.n_moves):
            d = Direction(int(rec.moves[i]))
            if not game.legal_mask()[d]:
                raise StoreError(f"game {game_id}: move {i + 1} is not legal when replayed from its seed")
            last = rec.player_of(i - 1) if i else rec.player_of(0)
            history.append((game.copy(), d, rec.player_of(i), last, i > 0))  # taken back after a restart too
            game.step(d)
            if not np.array_equal(game.board, rec.board_after(i)) or game.score != int(rec.scores[i]):
                raise StoreError(f"game {game_id}: move {i + 1} does not follow from its seed {s.seed}")
        if game.game_over:
            raise StoreError(f"game {game_id} has no move left: nothing to go on with")
        store.reopen_game(game_id)
        self = cls(store, game, lazy=True, run_id=s.run_id)
        self.game_id = game_id
        self._history = history
        if rec.n_moves:
            self._player = rec.player_of(rec.n_moves - 1)
            self._moved = True
            self._players = list(s.players)
        elif s.players:
            self._player = s.players[0]
        return self

    # ------------------------------------------------------------------ state
    @property
    def rules(self) -> Rules:
        return self.game.rules

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
    def players(self) -> tuple[Player, ...]:
        """Everyone who has moved in this game, in order of their first move (the record's players)."""
        return tuple(self._players)

    @property
    def player(self) -> Player | None:
        """Who made the last move (None before the first)."""
        return self._player if self._moved else None

    # ------------------------------------------------------------------ moves
    def play(self, direction: Direction | int | str, player: Player | None = None) -> StepResult | None:
        """Make and store one move by ``player`` (default: the last mover); None when it is illegal.

        An illegal move, or one after :meth:`close`, changes nothing and stores nothing. A StoreError
        (the store refused the move) leaves the game as it was. Ends the record as ``finished`` when no
        move is left.
        """
        if self.closed:
            return None
        d = Direction.parse(direction)
        if not self.game.legal_mask()[d]:
            return None
        who = player if player is not None else self._player
        before = self.game.board
        after = self.game.copy()
        result = after.step(d)
        if self.game_id is None:
            self._create(who)
        assert self.game_id is not None
        self.store.log_move(
            self.game_id,
            index=self.game.moves,
            board_before=before,
            direction=int(d),
            reward=int(result.reward),
            score_after=int(after.score),
            spawns=result.spawns,
            board_after=after.board,
            player=who,
        )
        self._history.append((self.game, d, who, self._player, self._moved))
        self.game = after
        self._player = who
        self._moved = True
        if who not in self._players:
            self._players.append(who)
        if result.game_over:
            self.close()
        return result

    @property
    def can_take_back(self) -> bool:
        """True when there is a move to take back (a game still being played, with a move made)."""
        return not self.closed and bool(self._history)

    def take_back(self) -> Takeback | None:
        """Take back the last move: it leaves the record, and the game is the exact one before it, its
        spawn generator included (the same move brings the same tile again). None when there is nothing
        to take back (no move, or the record is closed: a game over is final). A StoreError leaves the
        game and its record as they were."""
        if not self.can_take_back or self.game_id is None:
            return None
        before, direction, who, last, moved = self._history[-1]
        taken = Takeback(self.game.moves - 1, direction, who, time.time())
        _drop_last_move(self.store, self.game_id, taken, int(before.board.max()))
        self._history.pop()
        self.game = before
        self._player = last
        self._moved = moved
        return taken

    def close(self, status: str | None = None) -> None:
        """End the record: ``finished`` when no move is left, else ``abandoned`` (or ``status``).

        Safe to call twice; a lazy recorder that never moved stores nothing.
        """
        if self.closed:
            return
        if status is None:
            status = "finished" if self.game.game_over else "abandoned"
        if self.game_id is not None:
            self.store.finish_game(self.game_id, status, final_board=self.game.board)
        self.closed = True

    def __enter__(self) -> GameRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ record
    def _create(self, player: Player) -> None:
        if self.game.moves:
            raise StoreError("a game is recorded from its first move: start the recorder before moving")
        self.game_id = self.store.start_game(
            rules=self.game.rules,
            initial_board=self.game.board,
            player=player,
            seed=self.seed,
            run_id=self.run_id,
        )


def _drop_last_move(store: GameStore, game_id: int, taken: Takeback, max_tile: int) -> None:
    """Delete move ``taken.index`` (the last) of a playing game and note it among its takebacks, in one
    transaction. ``max_tile``: the biggest tile of the board before it (tiles never shrink, so it is
    the game's biggest tile again)."""
    key = TAKEBACKS_KEY.format(game_id)
    with store._tx(write=True) as con:
        row = one_row(
            con, "SELECT status, n_moves FROM games WHERE id = ?", game_id, f"no game {game_id} (deleted?)"
        )
        if row["status"] != "playing":
            raise StoreError(f"game {game_id} is {row['status']}: no move can be taken back")
        if row["n_moves"] != taken.index + 1:
            raise StoreError(
                f"game {game_id}: move {taken.index + 1} is not its last (it has {row['n_moves']})"
            )
        con.execute("DELETE FROM moves WHERE game_id = ? AND idx = ?", (game_id, taken.index))
        prev = con.execute(
            "SELECT score FROM moves WHERE game_id = ? AND idx = ?", (game_id, taken.index - 1)
        ).fetchone()
        con.execute(
            "UPDATE games SET n_moves = ?, score = ?, max_tile = ?, updated = ? WHERE id = ?",
            (taken.index, int(prev[0]) if prev else 0, max_tile, taken.at, game_id),
        )
        old = con.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        items = json.loads(old[0]) if old else []
        items.append(
            {
                "index": taken.index,
                "direction": int(taken.direction),
                "player": taken.player.to_json(),
                "at": taken.at,
            }
        )
        con.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, json.dumps(items)))
