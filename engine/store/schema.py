"""The database file: its schema, and opening it safely.

Identity: SQLite's header field ``application_id`` is set to ``0x32303438`` (ASCII "2048") and
``user_version`` to the schema version. A file is used only when it is empty, a brand-new SQLite file
with no tables, or carries our application_id; anything else (another program's database, a text
file, a newer schema) is refused with a one-line :class:`StoreError` before a single byte is written.

Durability: WAL journal with ``synchronous=NORMAL``. In WAL mode a COMMIT has written the
transaction to the ``-wal`` file (through the OS page cache) before it returns; SIGKILL ends the
process, not the kernel, so every committed move survives a kill and the next open replays the WAL.
What NORMAL gives up is the fsync per commit, i.e. the last commits before a *power cut or OS
crash* (never consistency). ``durable=True`` selects ``synchronous=FULL`` (an fsync per commit) for
callers who want that too; human play is slow enough for either.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

from engine.store.model import StoreError

APPLICATION_ID = 0x32303438  # "2048"
#: 2: one record per game, with the player of each move (see _migrate_1_to_2); 3: checkpoints carry
#: their evaluation score and the run's best one is marked (see _migrate_2_to_3); 4: game reviews
#: (see _migrate_3_to_4); 5: sweeps and their trials (see _migrate_4_to_5); 6: indexes for listing a
#: library of 10^5 games by start time (see _migrate_5_to_6)
SCHEMA_VERSION = 6
SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000  # eval workers in several processes write to the same file

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    config TEXT NOT NULL,              -- JSON
    rules TEXT NOT NULL,               -- JSON of engine.Rules
    budget TEXT NOT NULL,              -- JSON
    seed TEXT,                         -- decimal text: seeds may exceed SQLite's 64-bit integers
    status TEXT NOT NULL,              -- running / paused / stopped / finished / failed
    error TEXT,
    created REAL NOT NULL,             -- Unix seconds
    updated REAL NOT NULL,
    pid INTEGER, host TEXT,            -- process driving the run: tells a live run from a killed one
    n_events INTEGER NOT NULL DEFAULT 0,
    episodes INTEGER NOT NULL DEFAULT 0,   -- counters of the last logged event
    steps INTEGER NOT NULL DEFAULT 0,
    elapsed REAL NOT NULL DEFAULT 0,
    last_metrics TEXT NOT NULL DEFAULT '{}'  -- JSON: last value of every metric name
);

-- Metric history, columnar: each row holds a block of consecutive events, one numpy blob per column.
-- Blocks are merged log-structured (16 blocks of one level -> one of the next), so a run of a million
-- events is a few dozen rows and loads with a few frombuffer calls instead of a million row fetches.
CREATE TABLE run_metric_blocks (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    first INTEGER NOT NULL,            -- sequence number (0-based, per run) of the block's first event
    n INTEGER NOT NULL,                -- events in the block
    level INTEGER NOT NULL,
    kinds TEXT NOT NULL,               -- JSON list of event kinds (kind indexes it)
    kind BLOB NOT NULL,                -- uint8[n]
    episode BLOB NOT NULL,             -- int64[n]
    step BLOB NOT NULL,                -- int64[n]
    elapsed BLOB NOT NULL,             -- float64[n]
    progress BLOB NOT NULL,            -- float64[n]
    names TEXT NOT NULL,               -- JSON list of metric names
    vals BLOB NOT NULL                 -- float64[len(names), n], NaN where an event lacks the metric
);
CREATE UNIQUE INDEX run_metric_blocks_order ON run_metric_blocks(run_id, first);
CREATE INDEX run_metric_blocks_level ON run_metric_blocks(run_id, level);

CREATE TABLE run_messages (
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    kind TEXT NOT NULL,
    episode INTEGER NOT NULL,
    step INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE run_checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    path TEXT NOT NULL,                -- relative to the data dir when inside it (the dir may move)
    episode INTEGER NOT NULL,
    step INTEGER NOT NULL,
    final INTEGER NOT NULL,
    created REAL NOT NULL,
    eval_score REAL,                   -- mean score of the run's periodic greedy evaluation (NULL: none)
    best INTEGER NOT NULL DEFAULT 0    -- 1 on the run's checkpoint with the highest eval_score so far
);
CREATE INDEX run_checkpoints_run ON run_checkpoints(run_id, id);

CREATE TABLE games (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused, so an id in an export stays unambiguous
    source TEXT NOT NULL,              -- the one player's kind (human / agent / evaluation / training /
                                       -- unknown), or mixed when several players moved
    agent TEXT,                        -- the first agent among the players (NULL: none), and its checkpoint
    checkpoint TEXT,
    run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    rules TEXT NOT NULL,               -- JSON of engine.Rules
    rows INTEGER NOT NULL,             -- the rules' shape, needed to decode board blobs
    cols INTEGER NOT NULL,
    seed TEXT,
    started REAL NOT NULL,
    updated REAL NOT NULL,             -- last move (or start)
    ended REAL,
    status TEXT NOT NULL CHECK (status IN ('playing', 'finished', 'abandoned')),
    score INTEGER NOT NULL,
    max_tile INTEGER NOT NULL,
    n_moves INTEGER NOT NULL,
    initial_board BLOB NOT NULL,       -- exponent bytes, see engine.store.codec
    final_board BLOB,                  -- NULL while playing: rebuilt from the last move
    pid INTEGER, host TEXT,            -- process writing a 'playing' game
    origin TEXT,                       -- imported games: JSON {file, id, source}; NULL = played here
    players TEXT NOT NULL DEFAULT '[]' -- JSON list of {kind, agent, checkpoint}: who moved, in order of
                                       -- their first move (moves.player indexes it)
);
CREATE INDEX games_source ON games(source, started);
CREATE INDEX games_agent ON games(agent, started);
CREATE INDEX games_score ON games(score);
CREATE INDEX games_run ON games(run_id);

-- One row per move, inserted and committed the moment the move is made.
CREATE TABLE moves (
    game_id INTEGER NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,              -- 0-based move number
    board BLOB NOT NULL,               -- layout before the move: exponent bytes, row-major
    direction INTEGER NOT NULL CHECK (direction BETWEEN 0 AND 3),  -- up, left, down, right
    reward INTEGER NOT NULL,
    score INTEGER NOT NULL,            -- score after the move
    spawns BLOB NOT NULL,              -- 5 bytes per spawned tile: uint32 cell + uint8 exponent
    player INTEGER NOT NULL DEFAULT 0, -- who made the move: index into games.players
    PRIMARY KEY (game_id, idx)
) WITHOUT ROWID;
"""

REVIEWS_SCHEMA = """
-- Game reviews (engine.store.reviews): one row per (game, reviewer), its values in chunks of moves.
CREATE TABLE IF NOT EXISTS reviews (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    game_id INTEGER NOT NULL REFERENCES games(id) ON DELETE CASCADE,
    reviewer_key TEXT NOT NULL,        -- stable identity of the reviewer (agent, checkpoint, depth)
    reviewer TEXT NOT NULL,            -- JSON: name, checkpoint, depth, label, value_kind
    reviewed INTEGER NOT NULL DEFAULT 0,   -- moves reviewed so far (0 .. the game's moves)
    created REAL NOT NULL,
    updated REAL NOT NULL,
    UNIQUE (game_id, reviewer_key)
);

-- The reviewer's value of each move of moves first .. first + n - 1, written as they are reviewed (a
-- kill keeps the chunks done): float64[n, 4] in action order, NaN for an illegal move.
CREATE TABLE IF NOT EXISTS review_chunks (
    review_id INTEGER NOT NULL REFERENCES reviews(id) ON DELETE CASCADE,
    first INTEGER NOT NULL,
    n INTEGER NOT NULL,
    vals BLOB NOT NULL,
    PRIMARY KEY (review_id, first)
) WITHOUT ROWID;
"""
SCHEMA += REVIEWS_SCHEMA

SWEEPS_SCHEMA = """
-- Sweeps (engine.store.sweeps): many runs of one agent over a grid or a random search. The spec is the
-- whole request (JSON) so a killed sweep resumes from the store alone.
CREATE TABLE IF NOT EXISTS sweeps (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    agent TEXT NOT NULL,
    spec TEXT NOT NULL,                -- JSON: base config, knobs, seeds, budget, metric, backend
    status TEXT NOT NULL,              -- running / stopped / finished / failed
    error TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    pid INTEGER, host TEXT             -- the driver: tells a live sweep from a killed one
);

-- The planned trials of a sweep, one row each from the start; run_id is set when its run is made.
CREATE TABLE IF NOT EXISTS sweep_trials (
    sweep_id INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    trial INTEGER NOT NULL,            -- 0-based, in the order the sweep plans them
    params TEXT NOT NULL,              -- JSON: this trial's knob values (over the sweep's base config)
    seed TEXT,                         -- decimal text, as runs.seed
    run_id INTEGER UNIQUE REFERENCES runs(id) ON DELETE SET NULL,
    PRIMARY KEY (sweep_id, trial)
) WITHOUT ROWID;
"""
SCHEMA += SWEEPS_SCHEMA

LISTING_SCHEMA = """
-- Every listing is newest first (ORDER BY started DESC, id DESC, LIMIT a page): without this index a
-- listing of 10^5 games sorted them all to show 50, and a filter on time (--since) read every row.
CREATE INDEX IF NOT EXISTS games_started ON games(started);
-- A status filter, and every open's search for 'playing' games whose process is gone, read this
-- index, not the whole table.
CREATE INDEX IF NOT EXISTS games_status ON games(status, started);
-- The imported games (--source imported): a partial index holds only them, in start order.
CREATE INDEX IF NOT EXISTS games_imported ON games(started) WHERE origin IS NOT NULL;
"""
SCHEMA += LISTING_SCHEMA


def _refuse(path: Path, why: str) -> StoreError:
    return StoreError(
        f"{path} {why}; 2048 Studio will not open or change it (move it away or use another --data-dir)"
    )


#: Database files this process has open through :func:`connect` (resolved path -> connections). Their
#: headers are never read again with a plain ``open()``: closing *any* descriptor of a file drops every
#: POSIX lock the process holds on it, including the SHARED lock of its open SQLite connection, and
#: another process may then checkpoint and delete the WAL under that connection (SQLite's "how to
#: corrupt" 2.2.1). Seen: a second store opened in the window's process while ``train`` ran in a
#: terminal, then "database disk image is malformed".
_OPEN_HERE: dict[Path, int] = {}
_OPEN_LOCK = threading.Lock()


def release(path: Path) -> None:
    """A connection made by :func:`connect` to ``path`` was closed."""
    key = path.resolve()
    with _OPEN_LOCK:
        left = _OPEN_HERE.get(key, 0) - 1
        if left > 0:
            _OPEN_HERE[key] = left
        else:
            _OPEN_HERE.pop(key, None)


def _inspect(path: Path) -> str:
    """``"new"`` (absent, empty or a table-less SQLite file) or ``"ours"``; anything else raises.

    Reads the 100-byte header directly, so a foreign file is judged without SQLite writing anything
    (not even a -wal/-shm file or a checkpoint on close).
    """
    if path.is_dir():
        raise _refuse(path, "is a directory, not a database file")
    if path.resolve() in _OPEN_HERE:
        return "ours"  # checked when it was first opened; a raw read now would drop its locks
    if not path.exists() or path.stat().st_size == 0:
        return "new"
    try:
        with open(path, "rb") as fh:
            header = fh.read(100)
    except OSError as e:
        raise StoreError(f"cannot read {path}: {e.strerror or e}") from e
    if not header.startswith(SQLITE_MAGIC) or len(header) < 100:
        raise _refuse(path, "is not an SQLite database")
    app_id = int.from_bytes(header[68:72], "big")
    if app_id == APPLICATION_ID:
        return "ours"
    if app_id == 0 and _sqlite_is_empty(path):
        return "new"
    label = f"application_id {app_id:#010x}" if app_id else "no application_id"
    raise _refuse(path, f"is an SQLite database of another program ({label})")


def _sqlite_is_empty(path: Path) -> bool:
    """True for an SQLite file with no tables at all (opened read-only: nothing is written)."""
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        finally:
            con.close()
    except sqlite3.Error:
        return False


def connect(path: Path, *, durable: bool = False) -> sqlite3.Connection:
    """Open (creating if needed) the studio database at ``path``, checked, migrated and in WAL mode."""
    state = _inspect(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as e:
        raise StoreError(f"cannot open the database {path}: {e}") from e
    try:
        con.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if state == "new":
            _create(con, path)
        elif path.resolve() not in _OPEN_HERE:
            _quick_check(con, path)
        _check_version(con, path)
        # WAL is set after the identity is written, so even the first header the file ever has is ours.
        mode = con.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"cannot switch {path} to WAL mode (got {mode!r})")
        con.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
        con.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as e:
        con.close()
        raise StoreError(f"cannot use the database {path}: {e}") from e
    except BaseException:
        con.close()
        raise
    with _OPEN_LOCK:
        key = path.resolve()
        _OPEN_HERE[key] = _OPEN_HERE.get(key, 0) + 1
    return con


#: Seconds :func:`_quick_check` may take at open; a larger store is checked as far as it gets.
QUICK_CHECK_S = 0.25


def _quick_check(con: sqlite3.Connection, path: Path) -> None:
    """Refuse a damaged file at open (StoreError saying what to do), where that is cheap.

    SQLite reads a page only when a query needs it, so a file with a damaged page accepts writes (to
    other pages) until the damaged one is read, and then every query that touches it fails. ``PRAGMA
    quick_check`` reads every page once; it is stopped after :data:`QUICK_CHECK_S` seconds (a store of
    tens of MB is checked whole, a huge one as far as it gets) so opening never waits on it.
    """
    import time

    deadline = time.monotonic() + QUICK_CHECK_S
    con.set_progress_handler(lambda: 1 if time.monotonic() > deadline else 0, 10_000)
    try:
        rows = con.execute("PRAGMA quick_check(20)").fetchall()
    except sqlite3.OperationalError as e:
        if "interrupt" in str(e).lower():
            return  # out of time: not damaged as far as it read
        rows = [(str(e),)]
    except sqlite3.DatabaseError as e:
        rows = [(str(e),)]
    finally:
        con.set_progress_handler(None, 0)
    # A row whose values break a constraint (written straight into the file) is the rows' business:
    # it lists as "damaged" and the rest of the library is used as before (issue 17). Only damage to
    # the file's structure (pages, b-trees, indexes) refuses the store.
    problems = [
        str(r[0])
        for r in rows
        if str(r[0]) != "ok" and not str(r[0]).startswith(("CHECK constraint failed", "NULL value in"))
    ]
    if problems:
        problem = " ".join(problems[0].replace("*** in database main ***", "").split())  # one line
        raise StoreError(
            f"{path} is damaged ({problem}); copy it away, then recover what it holds with "
            f"`sqlite3 {path.name} .recover | sqlite3 recovered.sqlite3` and use that file (or restore a backup)"
        )


def _create(con: sqlite3.Connection, path: Path) -> None:
    # EXCLUSIVE: two processes creating the file at once must not both build the schema.
    con.execute("BEGIN EXCLUSIVE")
    try:
        app_id = con.execute("PRAGMA application_id").fetchone()[0]
        n_tables = con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if app_id == APPLICATION_ID:  # someone else created it meanwhile
            con.execute("ROLLBACK")
            return
        if n_tables:
            raise _refuse(path, "is an SQLite database of another program")
        con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        for statement in _statements(SCHEMA):
            con.execute(statement)
        con.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?)",
            [("created_by", "2048 Studio"), ("schema_version", str(SCHEMA_VERSION))],
        )
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """Split a script into statements (executescript would COMMIT the open transaction)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip() and not all(ln.strip().startswith("--") for ln in buf.strip().splitlines()):
        raise ValueError(f"incomplete SQL statement: {buf.strip()[:60]}")
    return out


def _check_version(con: sqlite3.Connection, path: Path) -> None:
    app_id = con.execute("PRAGMA application_id").fetchone()[0]
    if app_id != APPLICATION_ID:
        raise _refuse(path, "is not a 2048 Studio database")
    version = con.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer 2048 Studio (schema {version}, this one knows up to "
            f"{SCHEMA_VERSION}); upgrade the studio to open it"
        )
    if version < SCHEMA_VERSION:
        _migrate(con, path)


def _migrate(con: sqlite3.Connection, path: Path) -> None:
    """Bring an older store up to :data:`SCHEMA_VERSION` in place, all in one transaction.

    EXCLUSIVE, and the version is read again inside it: two processes opening an old store at once
    migrate it once (the second finds it done). A failure rolls everything back, leaving the old store
    as it was. Every step is safe to run again on data it has converted (a version lowered by hand, a
    copy restored over a newer file): each adds only what is missing and rewrites nothing converted. Future migrations go here: ``if version < 7: _migrate_6_to_7(con)``.
    """
    con.execute("BEGIN EXCLUSIVE")
    try:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version < 2:
            _migrate_1_to_2(con)
        if version < 3:
            _migrate_2_to_3(con)
        if version < 4:
            _migrate_3_to_4(con)
        if version < 5:
            _migrate_4_to_5(con)
        if version < 6:
            _migrate_5_to_6(con)
        con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        con.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )
        con.execute("COMMIT")
    except BaseException as e:
        if con.in_transaction:
            con.execute("ROLLBACK")
        if isinstance(e, sqlite3.Error):
            raise StoreError(f"cannot upgrade {path} to schema {SCHEMA_VERSION}: {e}") from e
        raise


def _migrate_1_to_2(con: sqlite3.Connection) -> None:
    """Schema 1 -> 2: every game gets its player list and every move its player.

    Schema 1 stored one player per record, so each game gets that one player (its source, agent and
    checkpoint) and all its moves point at it. An imported game (schema 1 source ``imported``) takes
    back its original source from ``origin`` (``unknown`` when the file did not say or said something
    that is not a player kind); ``origin`` stays, so it is still known to be imported. Hand-overs that
    schema 1 split into several records stay several records: which records belonged to one game was
    never stored, and guessing could glue two unrelated games together.
    """
    columns = {r[1] for r in con.execute("PRAGMA table_info(games)")}
    if "players" not in columns:
        con.execute("ALTER TABLE games ADD COLUMN players TEXT NOT NULL DEFAULT '[]'")
    if "player" not in {r[1] for r in con.execute("PRAGMA table_info(moves)")}:
        con.execute("ALTER TABLE moves ADD COLUMN player INTEGER NOT NULL DEFAULT 0")
    kinds = ("human", "agent", "evaluation", "training")
    updates = []
    # Only games without a player list: a game that has one was converted already (or written by
    # schema 2+), and converting it again would make a mixed game's one player "unknown" and then
    # every move by its second player point past the list ("damaged"). Safe to re-run.
    for game_id, source, agent, checkpoint, origin in con.execute(
        "SELECT id, source, agent, checkpoint, origin FROM games WHERE players = '[]' OR players IS NULL"
    ).fetchall():
        if source == "imported":
            original = json.loads(origin).get("source") if origin else None
            source = original if original in kinds else "unknown"
        elif source not in kinds:
            source = "unknown"
        player = {"kind": source, "agent": agent, "checkpoint": checkpoint}
        updates.append((source, json.dumps([player], sort_keys=True, allow_nan=False), game_id))
    con.executemany("UPDATE games SET source = ?, players = ? WHERE id = ?", updates)


def _migrate_2_to_3(con: sqlite3.Connection) -> None:
    """Schema 2 -> 3: checkpoints get ``eval_score`` (NULL: never evaluated, as every older one) and
    ``best`` (0: older runs had no evaluation, so none of their checkpoints is marked best)."""
    columns = {r[1] for r in con.execute("PRAGMA table_info(run_checkpoints)")}
    if "eval_score" not in columns:
        con.execute("ALTER TABLE run_checkpoints ADD COLUMN eval_score REAL")
    if "best" not in columns:
        con.execute("ALTER TABLE run_checkpoints ADD COLUMN best INTEGER NOT NULL DEFAULT 0")


def _migrate_3_to_4(con: sqlite3.Connection) -> None:
    """Schema 3 -> 4: the game-review tables (empty: no game of an older store was reviewed)."""
    for statement in _statements(REVIEWS_SCHEMA):
        con.execute(statement)


def _migrate_4_to_5(con: sqlite3.Connection) -> None:
    """Schema 4 -> 5: the sweep tables (empty: no run of an older store belongs to a sweep)."""
    for statement in _statements(SWEEPS_SCHEMA):
        con.execute(statement)


def _migrate_5_to_6(con: sqlite3.Connection) -> None:
    """Schema 5 -> 6: the listing indexes (:data:`LISTING_SCHEMA`); no row changes. Building them reads
    the games table once (about a second for 10^5 games), the first time a newer studio opens it."""
    for statement in _statements(LISTING_SCHEMA):
        con.execute(statement)
