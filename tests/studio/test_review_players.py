"""Issue 32: a review a player can trust. A game the person shared with an agent (you, then Watch, then
you) is reviewed with every move named by its player and only the person's moves counted, the same in
the window and from ``review`` (one code path); a person's game played with real key presses shows in
Progress and in Replay's review; the board keeps its size when the review graph appears (issue 33);
a reviewer is the same for the same checkpoint bytes wherever the file lies; ``review --prepare-reviewer``
trains a network that then reviews as the default reviewer."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
from PySide6.QtCore import Qt

from agents.review import POWER, SPAN
from agents.spec import AgentSpec
from engine import Direction
from engine.store import HUMAN, GameRecorder, GameStore, Player
from studio.cli import main
from studio.services.review import STRONG_SCORE, Reviewer, default_reviewer, review_game

pytest_plugins = ("tests.studio.gui_fixtures",)

LEFT = Qt.MouseButton.LeftButton
EXPECTIMAX_D1 = Reviewer(AgentSpec(name="expectimax"), 1)
WATCHED = Player("agent", "expectimax")
ORDER = (Direction.LEFT, Direction.DOWN, Direction.RIGHT, Direction.UP)


def shared_game(store: GameStore, seed: int = 3) -> tuple[int, np.ndarray]:
    """You play 20 moves corner-first, expectimax plays 15 under Watch, you play 15 more; the game id
    and which moves are the agent's."""
    from agents.registry import create_agent

    agent = create_agent("expectimax", {"depth": 1})
    rec = GameRecorder(store, player=HUMAN, seed=seed)
    agents = []
    for k in range(50):
        if rec.game_over:
            break
        watched = 20 <= k < 35
        if watched:
            rec.play(agent.act(rec.game), WATCHED)
        else:
            rec.play(next(d for d in ORDER if rec.game.legal_mask()[d]), HUMAN)
        agents.append(watched)
    rec.close()
    assert rec.game_id is not None
    return rec.game_id, np.array(agents)


def test_a_shared_game_grades_only_your_moves_as_yours(data_dir, capsys):
    with GameStore.open(data_dir) as store:
        gid, by_agent = shared_game(store)
        assert store.get_game(gid).source == "mixed"
    argv = ["--data-dir", str(data_dir), "review", str(gid), "--reviewer", "expectimax", "--depth", "2"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    moves = out["moves"]
    assert [m["player"] for m in moves] == ["expectimax" if a else "you" for a in by_agent]
    assert [m["counted"] for m in moves] == [not a for a in by_agent]  # no agent move is yours
    assert out["subject"] == "you" and out["players"]["you"]["counted"] is True
    assert out["players"]["expectimax"] == {**out["players"]["expectimax"], "counted": False, "moves": 15}
    # the counts and the accuracy are the person's moves alone (the slow way, from the moves' shares)
    yours = [m for m in moves if m["counted"]]
    assert sum(out["counts"].values()) == len(yours) == int((~by_agent).sum())
    graded = [m for m in yours if m["grade"] != "forced"]
    twin = 100 * math.prod(1 - m["relative"] for m in graded) ** (POWER * SPAN / max(len(graded), SPAN))
    assert out["accuracy"] == pytest.approx(twin, abs=0.02)
    # expectimax at depth 2 grading its own depth-1 moves: they are graded, shown, not counted
    assert out["players"]["expectimax"]["accuracy"] <= 100.0
    # the person's row is the headline figure (one mean, not an arithmetic one beside a geometric one)
    assert out["players"]["you"]["accuracy"] == pytest.approx(out["accuracy"], abs=0.01)
    theirs = [m for m in moves if not m["counted"] and m["grade"] != "forced"]
    twin = 100 * math.prod(1 - m["relative"] for m in theirs) ** (POWER * SPAN / max(len(theirs), SPAN))
    assert out["players"]["expectimax"]["accuracy"] == pytest.approx(twin, abs=0.02)
    assert main(argv) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith(f"Game #{gid} · played by you (35 moves), expectimax (15 moves) · reviewer ")
    header = next(ln for ln in text if ln.lstrip().startswith("move"))
    assert header.split()[:3] == ["move", "who", "played"]
    agent_rows = [ln for ln in text if " expectimax " in ln and ln.strip()[:1].isdigit()]
    assert len(agent_rows) == 15 and all(ln.endswith("(not counted)") for ln in agent_rows)
    assert any(ln.startswith("accuracy (you): ") for ln in text)


def test_window_and_cli_give_the_same_review_of_a_shared_game(qtbot, window, capsys):
    gid, by_agent = shared_game(window.store)
    replay = window.replay
    window.show_tab("Replay")
    replay.open_game(gid)
    replay.board.animation_ms = 0
    replay.reviewerCombo.setCurrentIndex(replay.reviewerCombo.findText("expectimax d2"))
    with qtbot.waitSignal(replay.reviewed, timeout=60_000):
        qtbot.mouseClick(replay.reviewButton, LEFT)
    replay.wait_review()
    shown = replay.review
    assert shown is not None and shown.complete and shown.mixed
    argv = ["--data-dir", str(window.store.path.parent), "review", str(gid), "--reviewer", "expectimax"]
    assert main([*argv, "--depth", "2", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert round(shown.accuracy, 2) == cli["accuracy"] and shown.counts == cli["counts"]
    summary = replay.summaryLabel.text()
    assert f"Accuracy {shown.accuracy:.1f} %</b> (you)" in summary
    assert "expectimax: 15 moves" in summary and "not counted" in summary
    # the agent's moves are greyed on the graph, as one named stretch
    assert replay.graph.shaded == [(20, 35, "expectimax")]
    assert all(not c for c in replay.graph.counted[20:35]) and all(replay.graph.counted[:20])
    # the verdict on an agent's move says whose it was and that it does not count
    replay.step_to(25)
    verdict = replay.verdictLabel.text()
    assert "Next move 26 (expectimax)" in verdict and "not counted: not your move" in verdict
    replay.step_to(5)
    assert "Next move 6 (you)" in replay.verdictLabel.text()
    # mistake navigation stops at the person's moves only
    k = shown.next_mistake(-1)
    while k is not None:
        assert not by_agent[k]
        k = shown.next_mistake(k)
    assert "expected final score" in replay.graph.valuePlot.getAxis("left").labelText
    assert "points" in replay.graph.lossPlot.getAxis("left").labelText


def test_the_board_keeps_its_size_when_the_review_graph_appears(qtbot, window, tmp_path):
    window.resize(1194, 720)
    gid, _ = shared_game(window.store, seed=4)
    replay = window.replay
    window.show_tab("Replay")
    replay.open_game(gid)
    qtbot.wait(50)
    before = replay.board.size()
    assert not replay.graph.isVisible()
    replay.reviewerCombo.setCurrentIndex(replay.reviewerCombo.findText("expectimax d1"))
    with qtbot.waitSignal(replay.reviewed, timeout=60_000):
        assert replay.start_review()
    replay.wait_review()
    qtbot.wait(50)
    after = replay.board.size()
    assert replay.graph.isVisible() and replay.graph.height() >= 200
    side_before = min(before.width(), before.height())
    side_after = min(after.width(), after.height())
    assert side_after >= 0.8 * side_before, (before, after)  # it was a quarter: half the side
    window.grab().save(str(tmp_path / "replay-review.png"))


def test_the_person_plays_then_progress_counts_it_and_replay_reviews_it(qtbot, window):
    play = window.play
    window.show_tab("Play")
    play.new_game(seed=1)  # the 12 keys below are 12 legal moves in this game
    play.board.setFocus()
    keys = (Qt.Key.Key_Left, Qt.Key.Key_Down, Qt.Key.Key_Right, Qt.Key.Key_Down)
    for k in range(12):
        # one move at a time: on a loaded machine keys pressed mid-animation ran ahead of the board
        qtbot.waitUntil(lambda: not play.board.is_animating, timeout=5000)
        qtbot.keyClick(play.board, keys[k % 4])
    gid = play.recorder.game_id
    assert gid is not None and play.recorder.moves >= 6
    window.show_tab("Progress")
    progress = window.tab("Progress")
    progress.refresh()
    assert progress.wait_loaded()
    text = progress.summaryLabel.text()
    assert "No games" not in text and text.startswith("1 game")  # the game in progress counts
    assert [g.game_id for g in progress.data.games] == [gid]
    assert progress.data.games[0].status == "playing" and progress.data.unreviewed == [gid]
    # reviewed by the default reviewer, as Replay and the coach grade
    assert progress.start_review() and progress.wait_review()
    assert progress.data.unreviewed == [] and progress.points("accuracy") == 1
    label = default_reviewer(window.store).label
    assert f"reviewer {label}" in progress.summaryLabel.text()
    replay = window.replay
    replay.open_game(gid)
    window.show_tab("Replay")
    assert replay.review is not None and replay.review.label == label
    assert f"reviewer {label}" in replay.summaryLabel.text()
    assert replay.prepareButton.isVisible()  # a fallback reviewer: the studio offers a better one


def test_a_checkpoint_counts_by_its_bytes_not_its_path(data_dir, tmp_path):
    from agents.registry import create_agent

    path = tmp_path / "a" / "net.npz"
    path.parent.mkdir()
    create_agent("ntuple", {"layout": "4x4"}, seed=3).save(path)
    copy = tmp_path / "b" / "elsewhere.npz"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    first, moved = (
        Reviewer(AgentSpec.from_checkpoint(str(path)), 2),
        Reviewer(AgentSpec.from_checkpoint(str(copy)), 2),
    )
    assert first.key() == moved.key()  # a copied data dir re-reviews nothing
    with GameStore.open(data_dir) as store:
        gid, _ = shared_game(store, seed=5)
        review_game(store, gid, first)
        again = review_game(store, gid, moved)
    assert again.evaluated == 0 and again.complete


def test_prepare_reviewer_trains_a_network_that_becomes_the_default(data_dir, capsys):
    with GameStore.open(data_dir) as store:
        assert default_reviewer(store).spec.name == "expectimax"
    argv = ["--data-dir", str(data_dir), "review", "--prepare-reviewer", "--minutes", "0.05", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    with GameStore.open(data_dir) as store:
        chosen = default_reviewer(store)
        run = store.get_run(out["run"])
        best = store.best_checkpoint(run.id)
        assert run.agent == "ntuple" and best is not None and best.eval_score is not None
    assert chosen.spec.checkpoint is not None and chosen.label == f"n-tuple run {out['run']}, 2-ply"
    assert out["reviewer"]["label"] == chosen.label
    # a few seconds of training make a network that is weak on a slow or busy machine and may pass the
    # bar on a quick one (2 M moves in 3 s): the review says "weak" exactly when it is under the bar
    if best.eval_score < STRONG_SCORE:
        assert chosen.fallback is not None and "weak reviewer" in out["reviewer"]["fallback"]
    else:
        assert chosen.fallback is None and out["reviewer"].get("fallback") is None
    with pytest.raises(SystemExit) as e:
        main(["--data-dir", str(data_dir), "review", "--prepare-reviewer", "--minutes", "0"])
    assert e.value.code == 2


def test_the_prepare_button_trains_a_reviewer_in_the_background(qtbot, window):
    gid, _ = shared_game(window.store, seed=6)
    replay = window.replay
    window.show_tab("Replay")
    replay.open_game(gid)
    assert replay.prepareButton.isVisible()  # no network in the store: the fallback says so
    assert "no n-tuple network" in replay.summaryLabel.text()
    said: list[str] = []
    replay.status.connect(said.append)
    assert replay.prepare_reviewer(minutes=0.05)
    assert replay.preparing and replay.prepareProgress.isVisible() and not replay.prepareButton.isEnabled()
    assert not replay.prepare_reviewer()  # one at a time
    assert replay.wait_prepared(180_000)
    qtbot.waitUntil(lambda: not replay.preparing, timeout=10_000)
    chosen = default_reviewer(window.store)
    assert chosen.spec.checkpoint is not None and chosen.label.startswith("n-tuple run ")
    assert any(f"the default reviewer is now {chosen.label}" in s for s in said)
    assert replay.current_reviewer().label == chosen.label
    assert replay.reviewerCombo.findText(chosen.label) >= 0  # the run's network is offered by name
