"""``GameStore``: games (every move committed as it is made) and training runs in one SQLite file.

See :mod:`engine.store.schema` for the tables, the file identity check and the durability choice.

Interrupted games: a game is written by one process, whose pid and host are kept in its row. When a
store is opened, ``playing`` games of this host whose process no longer exists are marked
``abandoned`` (``ended`` = the time of their last move). A game of a live process (e.g. the GUI
playing while ``games list`` runs in a terminal) is never touched, so "older than this process" is
not used as the test. The same goes for runs: a ``running``/``paused`` run whose process is gone
becomes ``stopped`` with the error ``interrupted ...`` (it can be resumed from its last checkpoint).
On platforms where a pid cannot be probed safely, interrupted games simply stay ``playing``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from engine.core import Direction, Rules, legal_mask, slide_unchecked
from engine.paths import database_path
from engine.records import GameTrace
from engine.store import codec, exchange, schema
from engine.store.base import columns, one_row
from engine.store.filters import GameFilter
from engine.store.model import (
    DAMAGED,
    GAME_STATUSES,
    SOURCES,
    GameRecord,
    GameSummary,
    Player,
    StoreError,
    source_of,
)
from engine.store.process import pid_alive
from engine.store.reviews import ReviewData, ReviewsMixin, insert_review
from engine.store.runs import RunsMixin
from engine.store.sweeps import SweepsMixin
from engine.store.values import rules_of, seed_text, seed_value, to_json

# The old private name (tests/studio/test_sweeps_survive_kills_and_bad_input.py imports it from here).
_pid_alive = pid_alive

_GAME_COLUMNS = (
    "id, source, agent, checkpoint, run_id, rules, seed, started, ended, status, score, "
    "max_tile, n_moves, origin, players"
)
#: What :meth:`GameStore.list_games` orders by (the Games tab's columns) -> its SQL sort keys.
GAME_ORDERS: dict[str, tuple[str, ...]] = {
    "id": (),
    "source": ("source", "origin IS NOT NULL"),
    "agent": ("coalesce(agent, '')",),
    "board": ("rows", "cols"),
    "score": ("score",),
    "max_tile": ("max_tile",),
    "n_moves": ("n_moves",),
    "status": ("status",),
    "started": ("started",),
}


@dataclasses.dataclass(frozen=True)
class GameStats:
    """What a selection of games adds up to (:meth:`GameStore.game_stats`): how many, the best score,
    the moves, and the games per status and per max tile (tiles > 0 only)."""

    count: int
    best_score: int
    moves: int
    statuses: dict[str, int]
    tiles: dict[int, int]


class GameStore(RunsMixin, ReviewsMixin, SweepsMixin):
    """The studio's database of games and runs (one SQLite file, WAL).

    ``GameStore.open()`` uses the data dir (``--data-dir`` / ``$STUDIO2048_DATA_DIR`` / user data dir).
    One connection guarded by a lock, so threads of one process may share a store; other processes
    open their own (SQLite serialises writers; a busy writer is waited for up to 30 s).
    """

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = False) -> None:
        self._path = Path(path).expanduser()
        self._con: sqlite3.Connection | None = schema.connect(self._path, durable=durable)
        self._con.row_factory = sqlite3.Row
        self._lock = threading.RLock()
        self._host = socket.gethostname()
        self._sweep_interrupted()

    @classmethod
    def open(cls, data_dir: str | os.PathLike[str] | None = None, *, durable: bool = False) -> GameStore:
        """The store in ``data_dir`` (default: the studio's data dir)."""
        return cls(database_path(data_dir), durable=durable)

    @property
    def path(self) -> Path:
        return self._path

    def close(self) -> None:
        with self._lock:
            if self._con is not None:
                self._con.close()
                self._con = None
                schema.release(self._path)

    def __enter__(self) -> GameStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"GameStore({str(self._path)!r})"

    # ------------------------------------------------------------------------------ transactions
    def _conn(self) -> sqlite3.Connection:
        if self._con is None:
            raise StoreError("the store is closed")
        return self._con

    @contextmanager
    def _tx(self, write: bool) -> Iterator[sqlite3.Connection]:
        """One transaction (IMMEDIATE for writes: take the write lock up front, no upgrade deadlocks).

        Reads run in a transaction too, so a game and its moves come from one consistent snapshot.
        SQLite errors become one-line StoreErrors.
        """
        with self._lock:
            con = self._conn()
            try:
                con.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield con
                except BaseException:
                    if con.in_transaction:
                        con.execute("ROLLBACK")
                    raise
                con.execute("COMMIT")
            except sqlite3.Error as e:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise StoreError(f"database error in {self._path.name}: {e}") from e

    def _sweep_interrupted(self) -> None:
        with self._tx(write=False) as con:
            games = con.execute(
                "SELECT id, pid FROM games WHERE status = 'playing' AND host = ?", (self._host,)
            ).fetchall()
            runs = con.execute(
                "SELECT id, pid FROM runs WHERE status IN ('running', 'paused') AND host = ?", (self._host,)
            ).fetchall()
            sweeps = con.execute(
                "SELECT id, pid FROM sweeps WHERE status = 'running' AND host = ?", (self._host,)
            ).fetchall()
        dead_games = [r["id"] for r in games if r["pid"] is not None and not pid_alive(r["pid"])]
        dead_runs = [(r["id"], r["pid"]) for r in runs if r["pid"] is not None and not pid_alive(r["pid"])]
        dead_sweeps = [
            (r["id"], r["pid"]) for r in sweeps if r["pid"] is not None and not pid_alive(r["pid"])
        ]
        if not dead_games and not dead_runs and not dead_sweeps:
            return
        with self._tx(write=True) as con:
            con.executemany(
                "UPDATE games SET status = 'abandoned', ended = updated WHERE id = ? AND status = 'playing'",
                [(g,) for g in dead_games],
            )
            con.executemany(
                "UPDATE runs SET status = 'stopped', updated = ?, "
                "error = 'interrupted: process ' || ? || ' ended without closing the run (killed or crashed)' "
                "WHERE id = ? AND status IN ('running', 'paused')",
                [(time.time(), pid, rid) for rid, pid in dead_runs],
            )
            con.executemany(
                "UPDATE sweeps SET status = 'stopped', updated = ?, "
                "error = 'interrupted: driver ' || ? || ' ended without closing the sweep (killed or crashed)' "
                "WHERE id = ? AND status = 'running'",
                [(time.time(), pid, sid) for sid, pid in dead_sweeps],
            )

    # ===================================================================================== games
    def start_game(
        self,
        *,
        rules: Rules | Mapping[str, Any],
        initial_board: Any,
        player: Player | None = None,
        seed: int | None = None,
        run_id: int | None = None,
        source: str | None = None,
        agent: str | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
    ) -> int:
        """Create a ``playing`` game and return its id (committed).

        ``player`` (or, the same thing spelled out, ``source`` / ``agent`` / ``checkpoint``) is who is
        about to move; others join with :meth:`log_move`'s ``player``. See :class:`GameRecorder`.
        """
        first = _player_of(player, source, agent, checkpoint)
        r = rules_of(rules)
        board = self._checked_board(initial_board, r.shape, "initial board")
        now = time.time()
        with self._tx(write=True) as con:
            cur = con.execute(
                "INSERT INTO games (source, agent, checkpoint, players, run_id, rules, rows, cols, seed, started, "
                "updated, status, score, max_tile, n_moves, initial_board, pid, host) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'playing', 0, ?, 0, ?, ?, ?)",
                (
                    *_identity([first]),
                    run_id,
                    to_json(r, "rules"),
                    r.rows,
                    r.cols,
                    seed_text(seed),
                    now,
                    now,
                    int(board.max()),
                    codec.encode_board(board),
                    os.getpid(),
                    self._host,
                ),
            )
            return int(cur.lastrowid or 0)

    def log_move(
        self,
        game_id: int,
        *,
        index: int,
        board_before: Any,
        direction: Direction | int | str,
        reward: int,
        score_after: int,
        spawns: Iterable[Any],
        board_after: Any = None,
        player: Player | None = None,
    ) -> None:
        """Append move ``index`` (0-based, in order) to a playing game; committed before returning.

        ``spawns``: ``engine.Spawn`` objects or ``(row, col, value)``. ``board_after`` (optional) saves
        recomputing the new max tile. ``player``: who made the move (None: whoever made the previous
        one, or the game's first player); a new player joins the game's players, which makes it
        ``mixed``, except before the first move, where they replace the player who never moved.
        """
        d = Direction.parse(direction)
        triples = codec.spawn_triples(spawns)
        with self._tx(write=True) as con:
            sql = "SELECT rows, cols, status, n_moves, players FROM games WHERE id = ?"
            row = one_row(con, sql, game_id, f"no game {game_id} (deleted?)")
            if row["status"] != "playing":
                raise StoreError(f"game {game_id} is {row['status']}: no more moves can be added")
            if index != row["n_moves"]:
                raise StoreError(
                    f"game {game_id}: move {index} logged out of order (the next is {row['n_moves']})"
                )
            shape = (row["rows"], row["cols"])
            before = self._checked_board(board_before, shape, "board before the move")
            _check_triples(triples, shape)
            if board_after is not None:
                max_tile = int(self._checked_board(board_after, shape, "board after the move").max())
            else:
                slid, _ = slide_unchecked(before, d)
                max_tile = max([int(slid.max())] + [v for _, _, v in triples])
            who = self._player_index(con, game_id, row["players"], row["n_moves"], player)
            con.execute(
                "INSERT INTO moves (game_id, idx, board, direction, reward, score, spawns, player) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    game_id,
                    index,
                    codec.encode_board(before),
                    int(d),
                    int(reward),
                    int(score_after),
                    codec.encode_spawns(triples, shape[1]),
                    who,
                ),
            )
            con.execute(
                "UPDATE games SET n_moves = ?, score = ?, max_tile = max(max_tile, ?), updated = ? WHERE id = ?",
                (index + 1, int(score_after), max_tile, time.time(), game_id),
            )

    @staticmethod
    def _player_index(
        con: sqlite3.Connection, game_id: int, players_json: str, n_moves: int, player: Player | None
    ) -> int:
        """The index of the move's player in the game's players, adding them (and updating the source)."""
        players = _players(players_json)
        if player is None:
            if n_moves == 0:
                return 0
            last = con.execute(
                "SELECT player FROM moves WHERE game_id = ? AND idx = ?", (game_id, n_moves - 1)
            ).fetchone()
            return int(last[0])
        if player in players:
            return players.index(player)
        # Before the first move the listed player has not played: the one who moves first replaces them.
        players = [player] if n_moves == 0 else [*players, player]
        source, agent, checkpoint, text = _identity(players)
        con.execute(
            "UPDATE games SET source = ?, agent = ?, checkpoint = ?, players = ? WHERE id = ?",
            (source, agent, checkpoint, text, game_id),
        )
        return len(players) - 1

    def finish_game(self, game_id: int, status: str = "finished", final_board: Any = None) -> None:
        """Close a playing game as ``finished`` (game over) or ``abandoned`` (left before the end)."""
        if status not in ("finished", "abandoned"):
            raise StoreError(f"a game finishes as 'finished' or 'abandoned', not {status!r}")
        with self._tx(write=True) as con:
            sql = "SELECT rows, cols, status, initial_board FROM games WHERE id = ?"
            row = one_row(con, sql, game_id, f"no game {game_id}")
            if row["status"] != "playing":
                raise StoreError(f"game {game_id} is already {row['status']}")
            shape = (row["rows"], row["cols"])
            if final_board is not None:
                final = self._checked_board(final_board, shape, "final board")
            else:
                final = self._rebuild_final(con, game_id, shape, row["initial_board"])
            con.execute(
                "UPDATE games SET status = ?, ended = ?, final_board = ?, max_tile = max(max_tile, ?) WHERE id = ?",
                (status, time.time(), codec.encode_board(final), int(final.max()), game_id),
            )

    def reopen_game(self, game_id: int) -> None:
        """Make an ``abandoned`` game ``playing`` again, owned by this process, so that more moves append
        to it (:meth:`GameRecorder.resume`); its final board is dropped until it ends again.

        A finished game, one being played (here or by another live process) or no such game: a
        StoreError (a killed player's game is ``abandoned`` once a store is opened again)."""
        with self._tx(write=True) as con:
            row = one_row(con, "SELECT status FROM games WHERE id = ?", game_id, f"no game {game_id}")
            if row["status"] != "abandoned":
                raise StoreError(f"game {game_id} is {row['status']}: it cannot be continued here")
            con.execute(
                "UPDATE games SET status = 'playing', ended = NULL, final_board = NULL, pid = ?, host = ?, "
                "updated = ? WHERE id = ?",
                (os.getpid(), self._host, time.time(), game_id),
            )

    def record_trace(
        self,
        trace: GameTrace,
        source: str,
        agent: str | None = None,
        checkpoint: str | os.PathLike[str] | None = None,
        *,
        run_id: int | None = None,
        status: str | None = None,
        started: float | None = None,
        ended: float | None = None,
    ) -> int:
        """Store a whole in-memory game in one transaction; returns its id.

        ``status`` defaults to ``finished`` when the final board has no legal move, else ``abandoned``
        (e.g. a training game cut off by the budget). Every move is by one player: ``source`` (a
        :data:`PLAYER_KINDS` kind), ``agent`` and ``checkpoint``.
        """
        player = _player_of(None, source, agent, checkpoint)
        rules = trace.rules
        n = trace.n_moves
        layouts = np.stack(trace.layouts) if n else np.zeros((0, *rules.shape), dtype=np.int64)
        final = trace.final_board if trace.final_board is not None else trace.initial_board
        for what, arr in (
            ("layouts", layouts),
            ("initial board", trace.initial_board),
            ("final board", final),
        ):
            problem = codec.tile_problem(arr)
            if problem:
                raise StoreError(f"trace {what}: {problem}")
        if layouts.shape[1:] != rules.shape:
            raise StoreError(f"trace boards are {layouts.shape[1:]}, the rules say {rules.shape}")
        if status is None:
            status = "abandoned" if legal_mask(final).any() else "finished"
        game = exchange.IncomingGame(
            rules=rules,
            meta={},
            initial_board=np.asarray(trace.initial_board),
            layouts=layouts,
            moves=np.asarray(trace.moves, dtype=np.int64),
            rewards=np.asarray(trace.rewards, dtype=np.int64),
            scores=np.asarray(trace.scores, dtype=np.int64),
            spawns=[codec.spawn_triples(s) for s in trace.spawns],
            final_board=np.asarray(final),
            players=[player],
            move_players=np.zeros(n, dtype=np.int64),
        )
        now = time.time()
        started = now if started is None else started
        with self._tx(write=True) as con:
            return self._insert_game(
                con, game, run_id, trace.seed, (started, now if ended is None else ended), status
            )

    def insert_games(self, games: Iterable[exchange.IncomingGame], *, per_transaction: int = 2000) -> int:
        """Store whole, already-checked games in bulk; how many. The fast path of ``bench store`` (a
        library of 10^5 games in seconds): ``per_transaction`` games per commit, not one each.

        Each game's ``meta`` may give ``started``, ``ended`` (default: now / started), ``status``
        (default ``finished``), ``seed`` and ``run_id``; the games are trusted as given (no check)."""
        now = time.time()
        count = 0
        batch: list[exchange.IncomingGame] = []

        def write(chunk: list[exchange.IncomingGame]) -> None:
            with self._tx(write=True) as con:
                for g in chunk:
                    m = g.meta
                    started = float(m.get("started", now))
                    times = (started, float(m.get("ended", started)))
                    status = str(m.get("status", "finished"))
                    self._insert_game(con, g, m.get("run_id"), m.get("seed"), times, status)

        for g in games:
            batch.append(g)
            if len(batch) >= per_transaction:
                write(batch)
                count += len(batch)
                batch = []
        if batch:
            write(batch)
            count += len(batch)
        return count

    def _insert_game(
        self,
        con: sqlite3.Connection,
        g: exchange.IncomingGame,
        run_id: int | None,
        seed: int | None,
        times: tuple[float, float],
        status: str,
        origin: dict[str, Any] | None = None,
    ) -> int:
        """Write a whole game (its ``meta`` is not read: the caller gives seed, start and end times,
        status and where it came from); returns its id."""
        n = len(g.moves)
        if status not in GAME_STATUSES:
            raise StoreError(f"game status must be one of {', '.join(GAME_STATUSES)}, got {status!r}")
        rules, scores, final = g.rules, g.scores, g.final_board
        started, ended = times
        cur = con.execute(
            "INSERT INTO games (source, agent, checkpoint, players, run_id, rules, rows, cols, seed, started, "
            "updated, ended, status, score, max_tile, n_moves, initial_board, final_board, origin) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                *_identity(g.players),
                run_id,
                to_json(rules, "rules"),
                rules.rows,
                rules.cols,
                seed_text(seed),
                started,
                ended,
                ended,
                status,
                int(scores[-1]) if n else 0,
                int(final.max()),
                n,
                codec.encode_board(g.initial_board),
                codec.encode_board(final),
                None if origin is None else to_json(origin, "origin"),
            ),
        )
        game_id = int(cur.lastrowid or 0)
        boards = codec.encode_boards(g.layouts)
        cols = rules.cols
        who = np.asarray(g.move_players, dtype=np.int64)
        con.executemany(
            "INSERT INTO moves (game_id, idx, board, direction, reward, score, spawns, player) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    game_id,
                    i,
                    boards[i],
                    int(g.moves[i]),
                    int(g.rewards[i]),
                    int(scores[i]),
                    codec.encode_spawns(g.spawns[i], cols),
                    int(who[i]),
                )
                for i in range(n)
            ],
        )
        return game_id

    @staticmethod
    def _checked_board(board: Any, shape: tuple[int, int], what: str) -> np.ndarray:
        arr = np.asarray(board)
        problem = codec.tile_problem(arr)
        if problem:
            raise StoreError(f"{what}: {problem}")
        if arr.shape != shape:
            raise StoreError(f"{what} has shape {arr.shape}, the game is {shape[0]}x{shape[1]}")
        return arr.astype(np.int64)

    @staticmethod
    def _rebuild_final(
        con: sqlite3.Connection, game_id: int, shape: tuple[int, int], initial: bytes
    ) -> np.ndarray:
        """The board after the last logged move: its layout slid, plus its spawns."""
        last = con.execute(
            "SELECT board, direction, spawns FROM moves WHERE game_id = ? ORDER BY idx DESC LIMIT 1",
            (game_id,),
        ).fetchone()
        if last is None:
            return codec.decode_board(initial, shape)
        spawns = codec.decode_spawns([last["spawns"]], shape[1]).reshape(-1, 3)
        return _board_after(codec.decode_board(last["board"], shape), int(last["direction"]), spawns)

    # ---------------------------------------------------------------------------------- queries
    def list_games(
        self,
        match: GameFilter | None = None,
        /,
        *,
        limit: int | None = None,
        offset: int = 0,
        order: str = "started",
        descending: bool = True,
        **filters: Any,
    ) -> list[GameSummary]:
        """The games ``match`` lets through (see :class:`GameFilter`), newest first; ``limit`` of them
        from ``offset`` on. :meth:`GameRecord.moves_by` then picks one player's moves of a mixed game.

        ``order``: one of :data:`GAME_ORDERS` (the Games tab's columns; ties go by id), ``descending``
        its direction, so a table pages through a sorted library without reading all of it.
        ``filters``: :class:`GameFilter`'s fields as keywords, laid over ``match`` (an unknown one is
        a TypeError): ``list_games(played_by="human")`` is ``list_games(GameFilter(played_by="human"))``.
        """
        if order not in GAME_ORDERS:
            raise StoreError(f"games are ordered by one of {', '.join(GAME_ORDERS)}, got {order!r}")
        where, params = _game_filter(match, filters).sql()
        way = "DESC" if descending else "ASC"
        keys = ", ".join(f"{expr} {way}" for expr in (*GAME_ORDERS[order], "id"))
        sql = f"SELECT {_GAME_COLUMNS} FROM games{where} ORDER BY {keys}"
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            params += [-1 if limit is None else int(limit), int(offset)]
        with self._tx(write=False) as con:
            return [_summary(r) for r in con.execute(sql, params).fetchall()]

    def count_games(self, match: GameFilter | None = None, /, **filters: Any) -> int:
        """How many games :meth:`list_games` would return without a limit."""
        where, params = _game_filter(match, filters).sql()
        with self._tx(write=False) as con:
            return int(con.execute(f"SELECT count(*) FROM games{where}", params).fetchone()[0])

    def game_stats(self, match: GameFilter | None = None, /, **filters: Any) -> GameStats:
        """What the games ``match`` lets through add up to, in one pass over their rows (the Games
        tab's summary of a library it shows a page of at a time)."""
        where, params = _game_filter(match, filters).sql()
        sql = (
            "SELECT max_tile, status, count(*), max(score), sum(n_moves) "
            f"FROM games{where} GROUP BY max_tile, status"
        )
        with self._tx(write=False) as con:
            rows = con.execute(sql, params).fetchall()
        tiles: Counter[int] = Counter()
        statuses: Counter[str] = Counter()
        best, moves = 0, 0
        for tile, status, n, top, total in rows:
            if isinstance(tile, int) and tile > 0:
                tiles[tile] += n
            statuses[str(status)] += n
            best = max(best, top) if isinstance(top, int) else best
            moves += total if isinstance(total, int) else 0
        return GameStats(sum(statuses.values()), best, moves, dict(statuses), dict(tiles))

    def moves_per_player(self, game_ids: Sequence[int]) -> dict[int, dict[int, int]]:
        """Game id -> {player index: moves made} for ``game_ids``, counted by the database (no move is
        read into Python: the Progress tab counts the person's moves of hundreds of shared games)."""
        out: dict[int, dict[int, int]] = {int(i): {} for i in game_ids}
        with self._tx(write=False) as con:
            for chunk in _chunks(list(out), 500):
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT game_id, player, count(*) FROM moves WHERE game_id IN ({marks}) GROUP BY game_id, player"
                for game_id, player, n in con.execute(sql, chunk):
                    out[game_id][player] = n
        return out

    def get_game(self, game_id: int) -> GameSummary:
        return _summary(
            self._get(f"SELECT {_GAME_COLUMNS} FROM games WHERE id = ?", game_id, f"no game {game_id}")
        )

    def load_game(self, game_id: int) -> GameRecord:
        """A game with its whole trajectory as numpy arrays (see :class:`GameRecord`).

        A game whose rows are damaged (a bad summary field, a board or spawn blob of the wrong size, a
        tile past 2**62, a move row of the wrong type, a gap in the moves) is a one-line StoreError.
        """
        with self._tx(write=False) as con:
            sql = f"SELECT {_GAME_COLUMNS}, rows, cols, initial_board, final_board FROM games WHERE id = ?"
            row = one_row(con, sql, game_id, f"no game {game_id}")
            cur = con.cursor()
            cur.row_factory = None  # plain tuples: the fastest way through 10^4 rows
            moves = cur.execute(
                "SELECT board, direction, reward, score, spawns, player, idx FROM moves "
                "WHERE game_id = ? ORDER BY idx",
                (game_id,),
            ).fetchall()
        summary = _summary(row)
        if summary.problem:
            raise StoreError(f"game {game_id} is damaged: {summary.problem}")
        try:
            return _record(summary, row, moves)
        except (TypeError, ValueError, OverflowError, IndexError) as e:
            why = " ".join(str(e).split()) or type(e).__name__
            raise StoreError(f"game {game_id} is damaged: {why}") from None

    def delete_games(self, ids: Iterable[int]) -> int:
        """Delete games with their moves and reviews; all or none (an unknown id is an error). Returns how many."""
        wanted = sorted({int(i) for i in ids})
        if not wanted:
            return 0
        with self._tx(write=True) as con:
            found: set[int] = set()
            for chunk in _chunks(wanted, 500):
                marks = ",".join("?" * len(chunk))
                found.update(r[0] for r in con.execute(f"SELECT id FROM games WHERE id IN ({marks})", chunk))
            missing = [i for i in wanted if i not in found]
            if missing:
                raise StoreError(f"no game {_id_list(missing)}: nothing deleted")
            for chunk in _chunks(wanted, 500):
                con.execute(f"DELETE FROM games WHERE id IN ({','.join('?' * len(chunk))})", chunk)
        return len(wanted)

    # ---------------------------------------------------------------------------------- files
    def _records(self, ids: Iterable[int]) -> list[GameRecord]:
        ids = list(ids)
        if not ids:
            raise StoreError("no games to export")
        return [self.load_game(int(i)) for i in ids]

    def _reviews_of(self, records: Sequence[GameRecord]) -> list[list[ReviewData]]:
        """Every stored review of each record, for an export (games and reviews travel together)."""
        return [self.review_data(r.summary.id, r.n_moves) for r in records]

    def export_npz(self, ids: Iterable[int], path: str | os.PathLike[str]) -> Path:
        """Write games with their reviews to an ``.npz`` in seed 003's layout (see
        :mod:`engine.store.exchange`); atomic."""
        out = Path(path)
        records = self._records(ids)
        exchange.write_npz(records, out, self._reviews_of(records))
        return out

    def export_jsonl(self, ids: Iterable[int], path: str | os.PathLike[str]) -> Path:
        """Write games with their reviews to a ``.jsonl`` file, one game per line; atomic."""
        out = Path(path)
        records = self._records(ids)
        exchange.write_jsonl(records, out, self._reviews_of(records))
        return out

    def export_file(self, ids: Iterable[int], path: str | os.PathLike[str]) -> Path:
        """:meth:`export_npz` or :meth:`export_jsonl` by the file's suffix."""
        kind = exchange.file_kind(path)
        return self.export_npz(ids, path) if kind == ".npz" else self.export_jsonl(ids, path)

    def import_file(self, path: str | os.PathLike[str]) -> list[int]:
        """Import every game of an ``.npz`` / ``.jsonl`` file, all or nothing; returns the new ids.

        The whole file is read and checked first (see :func:`engine.store.exchange.check_game`), then
        written in one transaction. Imported games keep their players (so their source: ``human``,
        ``mixed`` ...; files without players get one player of the file's source, or ``unknown``);
        that they were imported, and from where (file name, original id and source), is
        ``GameSummary.origin``. A game that was ``playing`` when exported is imported as ``abandoned``
        (no process is playing it here). The reviews a game carries are stored with it, under its new
        id, in the same transaction (a bad review refuses the whole file, like any bad field).
        Every game is added, copies of games already here too: :meth:`import_games` skips those.
        """
        return self._insert_imported(exchange.read_games(path), Path(path).name)

    def import_games(
        self, path: str | os.PathLike[str], progress: Callable[[str], None] | None = None
    ) -> exchange.ImportResult:
        """:meth:`import_file`, less the games the library holds already (the same game: see
        :func:`engine.store.exchange.content_key`; a game twice in the file is added once).

        What the GUI and ``games import`` do: importing one export twice adds nothing the second time.
        The library's games are compared only with the file's games of the same board, moves and
        score, so an import reads back a handful of candidates, not the library. ``progress(text)``
        is told each step ("reading", "comparing 120 games with the library", "adding 80 games").
        """
        say = progress or (lambda _text: None)
        say("reading the file")
        games = exchange.read_games(path)
        say(f"comparing {len(games):,} game{'s' * (len(games) != 1)} with the library")
        keys = [exchange.incoming_key(g) for g in games]
        known = self._known_keys(games, set(keys))
        fresh: list[exchange.IncomingGame] = []
        first: dict[str, int] = {}  # key -> index in fresh of the file's first copy
        skipped: list[tuple[str, int | None]] = []  # (key, library id or None for an in-file copy)
        for g, key in zip(games, keys):
            if key in known:
                skipped.append((key, known[key]))
            elif key in first:
                skipped.append((key, None))
            else:
                first[key] = len(fresh)
                fresh.append(g)
        if fresh:
            say(f"adding {len(fresh):,} new game{'s' * (len(fresh) != 1)}")
        ids = self._insert_imported(fresh, Path(path).name) if fresh else []
        already = [gid if gid is not None else ids[first[key]] for key, gid in skipped]
        return exchange.ImportResult(ids, already)

    def _known_keys(self, games: Sequence[exchange.IncomingGame], keys: set[str]) -> dict[str, int]:
        """Content key -> id of the library's games that are among ``keys`` (the oldest copy)."""
        wanted = {
            (g.rules.rows, g.rules.cols, len(g.moves), int(g.scores[-1]) if len(g.moves) else 0)
            for g in games
        }
        # Only the rows of the file's scores are read (games_score), not the library's every row.
        scores = sorted({score for _, _, _, score in wanted})
        rows: list[sqlite3.Row] = []
        with self._tx(write=False) as con:
            for chunk in _chunks(scores, 500):
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT id, rows, cols, n_moves, score FROM games WHERE score IN ({marks})"
                rows += con.execute(sql, chunk).fetchall()
        rows.sort(key=lambda r: r["id"])
        found: dict[str, int] = {}
        for row in rows:
            if (row["rows"], row["cols"], row["n_moves"], row["score"]) not in wanted:
                continue
            try:
                key = exchange.record_key(self.load_game(int(row["id"])))
            except StoreError:  # a damaged game is nobody's copy
                continue
            if key in keys:
                found.setdefault(key, int(row["id"]))
        return found

    def _insert_imported(self, games: Sequence[exchange.IncomingGame], name: str) -> list[int]:
        """Write checked games read from file ``name`` in one transaction; their new ids."""
        now = time.time()
        ids = []
        with self._tx(write=True) as con:
            for g in games:
                m = g.meta
                started = m["started"] if m["started"] is not None else now
                times = (started, m["ended"] if m["ended"] is not None else started)
                status = "abandoned" if m["status"] == "playing" else m["status"]
                origin = {"file": name, "id": m["id"], "source": m["source"]}
                ids.append(self._insert_game(con, g, None, m["seed"], times, status, origin))
                for review in g.reviews:
                    insert_review(con, ids[-1], review)
        return ids


# -------------------------------------------------------------------------------------- helpers


def _game_filter(match: GameFilter | None, filters: Mapping[str, Any]) -> GameFilter:
    """``match`` (default: every game) with the keyword ``filters`` laid over it."""
    base = GameFilter() if match is None else match
    return dataclasses.replace(base, **filters) if filters else base


def _player_of(
    player: Player | None, source: str | None, agent: str | None, checkpoint: str | os.PathLike[str] | None
) -> Player:
    """``player``, or the one spelled out by source / agent / checkpoint (default: the person)."""
    if player is not None:
        if source is not None or agent is not None or checkpoint is not None:
            raise StoreError("give a player or source / agent / checkpoint, not both")
        return player
    return Player(source or "human", agent, None if checkpoint is None else str(checkpoint))


def _identity(players: Sequence[Player]) -> tuple[str, str | None, str | None, str]:
    """The games columns source, agent, checkpoint and players for a game played by ``players``."""
    first_agent = next((p for p in players if p.agent is not None), None)
    return (
        source_of(players),
        None if first_agent is None else first_agent.agent,
        None if first_agent is None else first_agent.checkpoint,
        json.dumps([p.to_json() for p in players], sort_keys=True, allow_nan=False),
    )


def _players(text: str) -> list[Player]:
    players = json.loads(text)
    if not isinstance(players, list):
        raise StoreError(f"players must be a JSON list, got {type(players).__name__}")
    return [Player.from_json(p) for p in players]


def _check_triples(triples: Sequence[tuple[int, int, int]], shape: tuple[int, int]) -> None:
    for r, c, v in triples:
        if not (0 <= r < shape[0] and 0 <= c < shape[1]) or v < 2 or v & (v - 1):
            raise StoreError(f"bad spawn ({r}, {c}, {v}) on a {shape[0]}x{shape[1]} board")


#: The games columns a GameSummary takes as stored.
_GAME_AS_STORED = (
    "id", "source", "agent", "checkpoint", "started", "ended", "status", "score", "max_tile", "n_moves", "run_id"
)  # fmt: skip


def _summary(row: sqlite3.Row) -> GameSummary:
    """A games row as a GameSummary; a row that is damaged anyway (a field of the wrong type, absurd,
    or unreadable JSON) still gives one, with status :data:`DAMAGED` and ``problem`` saying why, so that
    one bad row never takes a listing down. Times out of any clock's range are not damage: they show as
    ``?`` (see :func:`engine.store.model.format_time`)."""
    try:  # the sound row, as fast as before (a listing reads tens of thousands)
        g = GameSummary(
            **columns(row, _GAME_AS_STORED),
            rules=_rules_json(row["rules"]),
            seed=seed_value(row["seed"]),
            origin=None if row["origin"] is None else json.loads(row["origin"]),
            players=tuple(_players(row["players"])),
        )
    except (TypeError, ValueError, RecursionError, OverflowError, AttributeError):
        return _damaged_summary(row)
    if (
        g.source in SOURCES
        and g.status in GAME_STATUSES
        and _is_text_or_none(g.agent)
        and _is_text_or_none(g.checkpoint)
        and isinstance(g.started, (int, float))
        and (g.ended is None or isinstance(g.ended, (int, float)))
        and _is_count(g.score)
        and _is_count(g.n_moves)
        and (g.run_id is None or _is_count(g.run_id))
        and _is_count(g.max_tile)
        and (
            g.max_tile == 0
            or (2 <= g.max_tile <= 1 << codec.MAX_EXPONENT and g.max_tile & (g.max_tile - 1) == 0)
        )
        and (g.origin is None or isinstance(g.origin, dict))
    ):
        return g
    return _damaged_summary(row)


def _is_text_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _damaged_summary(row: sqlite3.Row) -> GameSummary:
    """The summary of a row :func:`_summary` found damaged: every field checked on its own, stand-ins
    for the bad ones, ``problem`` naming each."""
    problems: list[str] = []

    def field(key: str, check: Any, fallback: Any) -> Any:
        value = row[key]
        try:
            return check(value)
        except (TypeError, ValueError, RecursionError, OverflowError) as e:
            problems.append(
                f"{key} {_row_value(value)} ({' '.join(str(e).split())[:60] or type(e).__name__})"
            )
            return fallback

    summary = GameSummary(
        id=row["id"],
        source=field("source", lambda v: _one_of(v, SOURCES), "unknown"),
        agent=field("agent", _text_or_none, None),
        checkpoint=field("checkpoint", _text_or_none, None),
        rules=field("rules", _rules_json, Rules()),
        seed=field("seed", lambda v: None if v is None else seed_value(_text(v)), None),
        started=field("started", _time, float("nan")),
        ended=field("ended", lambda v: None if v is None else _time(v), None),
        status=field("status", lambda v: _one_of(v, GAME_STATUSES), DAMAGED),
        score=field("score", lambda v: _count(v, "score"), 0),
        max_tile=field("max_tile", _tile, 0),
        n_moves=field("n_moves", lambda v: _count(v, "move count"), 0),
        run_id=field("run_id", lambda v: None if v is None else _count(v, "run id"), None),
        origin=field("origin", lambda v: None if v is None else _json_dict(v), {}),
        players=field("players", lambda v: tuple(_players(_text(v))), ()),
    )
    return dataclasses.replace(summary, status=DAMAGED, problem="; ".join(problems or ["unreadable"]))


def _row_value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"not text but {type(value).__name__}")
    return value


def _text_or_none(value: Any) -> str | None:
    return None if value is None else _text(value)


def _one_of(value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"not one of {', '.join(allowed)}")
    return str(value)


def _count(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"a {what} is a whole number >= 0")
    return value


def _tile(value: Any) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok or (value != 0 and not (2 <= value <= 1 << codec.MAX_EXPONENT and value & (value - 1) == 0)):
        raise ValueError(f"not 0 or a power of two up to 2**{codec.MAX_EXPONENT}")
    return value


def _time(value: Any) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise TypeError(f"not a number but {type(value).__name__}")
    return float(value)


def _json_dict(value: Any) -> dict[str, Any]:
    obj = json.loads(_text(value))
    if not isinstance(obj, dict):
        raise TypeError(f"not a JSON object but {type(obj).__name__}")
    return obj


def _rules_json(value: Any) -> Rules:
    return Rules.from_dict(_json_dict(value))


def _record(summary: GameSummary, row: sqlite3.Row, moves: Sequence[tuple[Any, ...]]) -> GameRecord:
    """The GameRecord of a games row and its move rows, checked; a ValueError / TypeError says what is
    damaged (:meth:`GameStore.load_game` turns it into a StoreError)."""
    shape = summary.rules.shape
    if (row["rows"], row["cols"]) != shape:
        raise ValueError(f"its boards are {row['rows']}x{row['cols']} but its rules {shape[0]}x{shape[1]}")
    n = len(moves)
    if n != summary.n_moves:
        raise ValueError(f"its row says {summary.n_moves} moves, {n} are stored")
    boards, dirs, rewards, scores, spawns, who, idx = zip(*moves) if n else ((),) * 7
    if not np.array_equal(_int_column(idx, "move number", n), np.arange(n)):
        raise ValueError("its moves are not numbered 0, 1, 2, ...")
    layouts = codec.decode_boards(boards, shape)
    directions = _int_column(dirs, "direction", n)
    players = _int_column(who, "player", n)
    if n and (directions.min() < 0 or directions.max() > 3):
        raise ValueError("a move's direction is not 0-3")
    if n and (players.min() < 0 or players.max() >= max(len(summary.players), 1)):
        raise ValueError("a move's player is not one of the game's players")
    spawn_arr = codec.decode_spawns(spawns, shape[1])
    if spawn_arr.size and spawn_arr[:, :, 0].max() >= shape[0]:
        raise ValueError("a spawn lies outside the board")
    initial = codec.decode_board(row["initial_board"], shape)
    if row["final_board"] is not None:
        final = codec.decode_board(row["final_board"], shape)
    elif n:  # a playing game
        final = _board_after(layouts[-1], int(directions[-1]), spawn_arr[-1])
    else:
        final = initial.copy()
    return GameRecord(
        summary=summary,
        initial_board=initial,
        layouts=layouts,
        moves=directions.astype(np.int8),
        rewards=_int_column(rewards, "reward", n),
        scores=_int_column(scores, "score", n),
        spawns=spawn_arr,
        final_board=final,
        move_players=players,
    )


def _board_after(layout: np.ndarray, direction: int, spawns: np.ndarray) -> np.ndarray:
    """The board after a logged move: its layout slid, plus its spawns ((row, col, value) rows; value 0
    is padding)."""
    board, _ = slide_unchecked(layout, Direction(direction))
    for r, c, v in spawns:
        if v:
            board[r, c] = v
    return board


def _int_column(values: Sequence[Any], what: str, n: int) -> np.ndarray:
    """A column of move rows as int64; anything but whole numbers that fit is damage."""
    arr = np.array(values)
    if n and arr.dtype.kind not in "i":
        bad = next((v for v in values if not isinstance(v, int) or isinstance(v, bool)), None)
        if bad is None:  # whole numbers past int64: not a number the store writes
            raise ValueError(f"a move's {what} is too large")
        raise ValueError(f"a move's {what} is {_row_value(bad)}, not a whole number")
    return arr.astype(np.int64).reshape(n)


def _chunks(items: Sequence[int], size: int) -> Iterator[list[int]]:
    for i in range(0, len(items), size):
        yield list(items[i : i + size])


def _id_list(ids: Sequence[int]) -> str:
    shown = ", ".join(map(str, ids[:10]))
    return shown + (f" (and {len(ids) - 10} more)" if len(ids) > 10 else "")
