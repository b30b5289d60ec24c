"""When the default reviewer changes after a game was reviewed (a newer, stronger n-tuple run), Replay
and ``review`` say so where the figure is shown: "reviewed by X; the default is now Y — Review again".
Before, the window's review silently stood for the old network while ``python main.py review 1``
graded with the new one."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt

from agents.registry import create_agent
from engine import Rules
from engine.store import GameStore
from studio.cli import main
from studio.services.review import default_reviewer
from tests.studio.gui_helpers import greedy_game

pytest_plugins = ("tests.studio.gui_fixtures",)
LEFT = Qt.MouseButton.LeftButton


def _network_run(store, path, seed: int, score: float) -> int:
    """An n-tuple run whose best checkpoint (a small network) evaluated at ``score``."""
    create_agent("ntuple", {"layout": "4x4"}, seed=seed).save(path)
    run = store.create_run("ntuple", {"layout": "4x4"}, Rules(), {"episodes": 1})
    store.set_checkpoint_eval(store.add_checkpoint(run, path, 1, 1), score)
    return run


def _click_game(qtbot, replay, gid: int) -> None:
    item = replay._find_item(gid)
    rect = replay.replayList.visualItemRect(item)
    qtbot.mouseClick(replay.replayList.viewport(), LEFT, pos=rect.center())
    assert replay.record is not None and replay.record.id == gid


def test_replay_says_the_default_changed_since_the_review_and_reviews_again(
    qtbot, window, data_dir, qsettings, tmp_path
):
    from studio.app import create_window

    first = _network_run(window.store, tmp_path / "a.npz", 1, 30_000.0)
    gid = greedy_game(window.store)
    replay = window.replay
    window.show_tab("Replay")
    replay.refresh()
    _click_game(qtbot, replay, gid)
    qtbot.mouseClick(replay.reviewButton, LEFT)
    assert replay.wait_review()
    qtbot.waitUntil(lambda: replay.review is not None and replay.review.complete)
    old_label = f"n-tuple run {first}, 2-ply"
    text = replay.summaryLabel.text()
    assert f"reviewer {old_label}" in text and "the default is now" not in text
    old_accuracy = replay.review.accuracy
    second = _network_run(window.store, tmp_path / "b.npz", 2, 40_000.0)  # stronger: the default now
    window.close()

    win = create_window(data_dir, settings=qsettings)  # the window opened again, the next day
    qtbot.addWidget(win)
    win.show()
    replay = win.replay
    win.show_tab("Replay")
    _click_game(qtbot, replay, gid)
    new_label = f"n-tuple run {second}, 2-ply"
    assert default_reviewer(win.store).label == new_label
    text = replay.summaryLabel.text()
    assert f"Reviewed by {old_label}; the default is now {new_label} — Review again" in text
    assert f"Accuracy {old_accuracy:.1f} %" in text  # the earlier review's figure, named as its
    assert replay.reviewButton.text() == "Review again"

    qtbot.mouseClick(replay.reviewButton, LEFT)
    assert replay.wait_review()
    qtbot.waitUntil(lambda: replay.review is not None and replay.review.default_now is None)
    text = replay.summaryLabel.text()
    assert f"reviewer {new_label}" in text and "the default is now" not in text
    assert replay.reviewButton.text() == "Review"
    win.close()


def test_review_command_names_the_earlier_default_and_its_figure(data_dir, tmp_path, capsys):
    with GameStore.open(data_dir) as store:
        first = _network_run(store, tmp_path / "a.npz", 1, 30_000.0)
        gid = greedy_game(store)
    assert main(["--data-dir", str(data_dir), "review", str(gid), "--json"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert before["reviewer"]["label"] == f"n-tuple run {first}, 2-ply" and "earlier_default" not in before
    with GameStore.open(data_dir) as store:
        second = _network_run(store, tmp_path / "b.npz", 2, 40_000.0)
    assert main(["--data-dir", str(data_dir), "review", str(gid)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(
        ln.startswith("accuracy (every player): ") and f"reviewer n-tuple run {second}, 2-ply" in ln
        for ln in lines
    )
    note = (
        f"note: reviewed before by n-tuple run {first}, 2-ply (the default then): accuracy "
        f"{before['accuracy']:.1f} %, gave up {100 * before['given_up']:.1f} %; the default is now "
        f"n-tuple run {second}, 2-ply"
    )
    assert note in lines
    assert main(["--data-dir", str(data_dir), "review", str(gid), "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert after["earlier_default"]["reviewer"] == f"n-tuple run {first}, 2-ply"
    assert after["earlier_default"]["accuracy"] == before["accuracy"]
    # a reviewer named on purpose is not the default: no note
    assert main(["--data-dir", str(data_dir), "review", str(gid), "--reviewer", "expectimax", "--json"]) == 0
    assert "earlier_default" not in json.loads(capsys.readouterr().out)
