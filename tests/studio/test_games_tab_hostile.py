"""Issue 17 in the Games tab (and ``games list`` / ``show``): every bad file ends in the tab's error
message, never in an uncaught exception; a bug shows with its exception type; nothing is written; a
damaged row in the store shows as ``damaged`` instead of taking the table down."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path

import numpy as np
from PySide6.QtCore import Qt

from engine import Game, Rules
from engine.records import GameTrace, play_recorded
from engine.store import exchange
from studio.cli import main

# The window / settings fixtures (not a conftest: several people add tests here).
pytest_plugins = ("tests.studio.gui_fixtures",)


def _store_game(store, seed: int, moves: int | None = None) -> int:
    game = Game(rules=Rules(), seed=seed)
    trace = GameTrace.start(game)
    while not game.game_over and (moves is None or trace.n_moves < moves):
        mask = game.legal_mask()
        play_recorded(game, next(d for d in (1, 2, 3, 0) if mask[d]), trace)
    return store.record_trace(trace, source="agent", agent="corner")


def _open_games(window):
    window.show_tab("Games")
    tab = window.games
    tab.refresh()
    return tab


def _rows(store) -> list:
    return [(g.id, g.status, g.score, g.n_moves) for g in store.list_games()]


def _hostile_files(store, ids: list[int], tmp_path: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, what the message must say). Each comes from a real export of ``ids``."""
    good = store.export_jsonl(ids, tmp_path / "good.jsonl")
    lines = [json.loads(ln) for ln in good.read_text().splitlines()]
    files: dict[str, tuple[Path, str]] = {}

    deep = tmp_path / "deep.jsonl"  # json.loads raised RecursionError: no dialog at all
    deep.write_text("[" * 100_000 + "\n")
    files["deep"] = (deep, "nested too deeply")

    huge = copy.deepcopy(lines[0])  # a spawn past 64 bits, placed on the board: an OverflowError escaped
    del huge["final_board"]
    r, c, _ = huge["spawns"][-1][0]
    huge["spawns"][-1] = [[r, c, 2**70]]
    (tmp_path / "huge.jsonl").write_text(json.dumps(huge) + "\n")
    files["huge spawn"] = (tmp_path / "huge.jsonl", "spawns must be a list of [row, col, value]")

    done = copy.deepcopy(lines[1])  # "finished" with moves left
    done["status"] = "finished"
    (tmp_path / "done.jsonl").write_text(json.dumps(lines[0]) + "\n" + json.dumps(done) + "\n")
    files["finished"] = (tmp_path / "done.jsonl", "says finished, but its final board still has a legal move")

    npz = store.export_npz(ids, tmp_path / "good.npz")
    with np.load(npz, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    np.savez_compressed(tmp_path / "minus.npz", **{**arrays, "version": np.array(-1)})
    files["version -1"] = (tmp_path / "minus.npz", "version must be the whole number 1, got -1")
    np.savez_compressed(tmp_path / "bomb.npz", **{**arrays, "layouts": np.zeros((40_000, 16), np.int64)})
    files["zip bomb"] = (
        tmp_path / "bomb.npz",
        "would take the archive past 1,048,576 bytes once decompressed",
    )
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really a zip")
    files["junk"] = (tmp_path / "junk.npz", "not a readable .npz file")
    return files


def test_every_hostile_file_ends_in_the_error_message(qtbot, window, tmp_path: Path, monkeypatch):
    ids = [_store_game(window.store, s, moves=12) for s in (1, 2)]
    tab = _open_games(window)
    files = _hostile_files(window.store, ids, tmp_path)
    monkeypatch.setattr(exchange, "MAX_NPZ_BYTES", 1 << 20)
    before = _rows(window.store)
    for name, (path, says) in files.items():
        assert tab.import_files([path]) == [], name
        assert path.name in tab.last_error and "Nothing was imported" in tab.last_error, name
        assert says in tab.last_error, (name, tab.last_error)
        assert "Traceback" not in tab.last_error
        box = tab.error_box
        assert box is not None and box.isVisible() and says in box.text(), name
        box.close()
        assert _rows(window.store) == before, name
    assert tab.model.rowCount() == len(before)


def test_all_hostile_files_at_once_one_message(qtbot, window, tmp_path: Path, monkeypatch):
    ids = [_store_game(window.store, s, moves=12) for s in (1, 2)]
    tab = _open_games(window)
    files = _hostile_files(window.store, ids, tmp_path)
    monkeypatch.setattr(exchange, "MAX_NPZ_BYTES", 1 << 20)
    good = window.store.export_npz(ids[:1], tmp_path / "one.npz")
    window.store.delete_games(ids[:1])  # else the good file's game is in the library already
    before = window.store.count_games()
    new = tab.import_files([p for p, _ in files.values()] + [good])
    assert len(new) == 1 and window.store.count_games() == before + 1  # the good file still imports
    for path, says in files.values():
        assert path.name in tab.last_error and says in tab.last_error
    assert "Imported 1 game from the other files." in tab.last_error


def test_a_bug_is_shown_with_its_type_not_swallowed(qtbot, window, tmp_path: Path, monkeypatch, caplog):
    ids = [_store_game(window.store, 1, moves=5)]
    tab = _open_games(window)
    path = window.store.export_jsonl(ids, tmp_path / "fine.jsonl")

    def broken(*args, **kwargs):
        raise KeyError("layouts")

    monkeypatch.setattr(type(window.store), "import_games", broken)  # the import's own store too
    assert tab.import_files([path]) == []
    assert "fine.jsonl: unexpected error KeyError: 'layouts'" in tab.last_error
    assert tab.error_box is not None and tab.error_box.isVisible()
    assert any(r.exc_info and r.exc_info[0] is KeyError for r in caplog.records)  # logged with its traceback


def test_a_game_without_moves_imports_through_the_tab(qtbot, window, tmp_path: Path):
    """Issue 17: an exported 0-move game could not be imported back (a bare ValueError from numpy)."""
    gid = window.store.start_game(rules=Rules(), initial_board=Game(seed=5).board, seed=5)
    tab = _open_games(window)
    tab.select_ids([gid])
    for suffix in (".npz", ".jsonl"):
        assert tab.export_selected(tmp_path / f"zero{suffix}")
    window.store.delete_games([gid])
    (new,) = tab.import_files([tmp_path / "zero.npz"])
    assert window.store.get_game(new).n_moves == 0
    assert tab.import_files([tmp_path / "zero.jsonl"]) == []  # the same game: in the library already
    assert tab.last_message == "0 imported, 1 already in the library"


def _damage(path: Path, sql: str) -> None:
    con = sqlite3.connect(path)
    try:
        con.execute(sql)
        con.commit()
    finally:
        con.close()


def test_a_damaged_row_shows_as_damaged_in_the_table(qtbot, window):
    ids = [_store_game(window.store, s, moves=8) for s in (1, 2, 3)]
    _damage(window.store.path, f"UPDATE games SET max_tile = 'huge', rules = '{{oops' WHERE id = {ids[1]}")
    tab = _open_games(window)
    model = tab.model
    assert model.rowCount() == 3
    for row in range(model.rowCount()):  # every cell in every role renders
        for col in range(model.columnCount()):
            for role in (
                Qt.ItemDataRole.DisplayRole,
                Qt.ItemDataRole.UserRole,
                Qt.ItemDataRole.ToolTipRole,
                Qt.ItemDataRole.ForegroundRole,
                Qt.ItemDataRole.TextAlignmentRole,
            ):
                model.data(model.index(row, col), role)
    status = [k for k, _ in model.COLUMNS].index("status")
    row = next(r for r in range(model.rowCount()) if model.game(r).id == ids[1])
    assert model.data(model.index(row, status)) == "damaged"
    tip = model.data(model.index(row, 0), Qt.ItemDataRole.ToolTipRole)
    assert f"game #{ids[1]} is damaged" in tip and "max_tile 'huge'" in tip and "rules" in tip
    for col in range(model.columnCount()):  # sorting by any column copes with the stand-in values
        tab.table.sortByColumn(col, Qt.SortOrder.AscendingOrder)
    tab.select_ids(ids)
    assert "3 selected" in tab.summaryLabel.text()
    tab.table.viewport().repaint()


def test_games_list_and_show_of_a_damaged_row(data_dir: Path, capsys):
    from engine.store import GameStore

    with GameStore.open(data_dir) as store:
        ids = [_store_game(store, s, moves=8) for s in (1, 2)]
        path = store.path
    _damage(path, f"UPDATE games SET score = 'lots', n_moves = -3 WHERE id = {ids[0]}")
    assert main(["--data-dir", str(data_dir), "games", "list"]) == 0
    out = capsys.readouterr().out
    assert "damaged" in out and str(ids[1]) in out
    assert main(["--data-dir", str(data_dir), "games", "show", str(ids[0])]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and f"game {ids[0]} is damaged: score 'lots'" in err and "Traceback" not in err
    )
    assert main(["--data-dir", str(data_dir), "replay", str(ids[0]), "--verify"]) == 2
    assert f"game {ids[0]} is damaged" in capsys.readouterr().err
    assert main(["--data-dir", str(data_dir), "games", "show", str(ids[1])]) == 0
