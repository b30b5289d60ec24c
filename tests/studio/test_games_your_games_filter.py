"""Issue: "human" showed no game after one shared with Watch (mixed); "your games" counts both, as
the Progress tab does, in the Games tab's source filter and in ``games list --source mine``."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

from PySide6.QtCore import Qt

from engine.store import HUMAN, GameRecorder, GameStore, Player
from studio.cli import main

pytest_plugins = ("tests.studio.gui_fixtures",)


def _game(store: GameStore, seed: int, players: tuple[Player, ...]) -> int:
    """A game of one move per player in turn (a person's, shared with Watch's agent, or an agent's)."""
    rec = GameRecorder(store, seed=seed, lazy=True)
    for who in players:
        rec.play(rec.game.legal_moves()[0], who)
    rec.close()
    assert rec.game_id is not None
    return int(rec.game_id)


def _library(store: GameStore) -> dict[str, int]:
    greedy = Player("agent", "greedy")
    ids = {
        "alone": _game(store, 1, (HUMAN, HUMAN)),
        "watched": _game(store, 2, (HUMAN, greedy, greedy, HUMAN)),  # Watch played a part of it
        "agent": _game(store, 3, (greedy, greedy)),
        "agents only": _game(store, 4, (greedy, Player("agent", "random"))),  # mixed, no person
    }
    sources = {g.id: g.source for g in store.list_games()}
    assert [sources[ids[k]] for k in ("alone", "watched", "agent", "agents only")] == [
        "human",
        "mixed",
        "agent",
        "mixed",
    ]
    return ids


def test_your_games_in_the_games_tab_lists_the_shared_ones_too(qtbot, window):
    ids = _library(window.store)
    window.show_tab("Games")
    tab = window.games
    combo = tab.filterBar.source
    assert tab.model.rowCount() == 4
    combo.setFocus()
    qtbot.keyClick(combo, Qt.Key.Key_Down)  # "all sources" -> "your games", right under it
    assert combo.currentText() == "your games"
    listed = sorted(tab.model.game(r).id for r in range(tab.model.rowCount()))
    assert listed == sorted([ids["alone"], ids["watched"]])
    qtbot.keyClick(combo, Qt.Key.Key_Down)  # "human": the games played alone only
    assert combo.currentText() == "human"
    assert [tab.model.game(r).id for r in range(tab.model.rowCount())] == [ids["alone"]]
    qtbot.keyClick(combo, Qt.Key.Key_Up)
    assert tab.model.rowCount() == 2 and "2 listed" in tab.summaryLabel.text()
    tab.grab().save("/tmp/shots/games_your_games.png")


def test_games_list_source_mine(capsys, data_dir: Path):
    with GameStore.open(data_dir) as store:
        ids = _library(store)
    assert main(["--data-dir", str(data_dir), "games", "list", "--source", "mine", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted(r["id"] for r in rows) == sorted([ids["alone"], ids["watched"]])
    assert main(["--data-dir", str(data_dir), "games", "list", "--source", "human", "--json"]) == 0
    assert [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()] == [ids["alone"]]


def test_the_help_names_mine(capsys):
    with contextlib.suppress(SystemExit):  # argparse ends --help with SystemExit(0)
        main(["games", "list", "--help"])
    out = capsys.readouterr().out
    assert "{mine,human,agent,evaluation,training,mixed,unknown,imported}" in out
    assert "mine: your games, alone or shared with" in " ".join(out.split())
