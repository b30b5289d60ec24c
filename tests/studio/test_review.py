"""Game review: forced positions graded as expected by every reviewer, self-review at 100 %, resume
after an interrupted review, the default reviewer, and the ``review`` command."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.base import Budget
from agents.registry import create_agent
from agents.review import (
    BEST,
    BLUNDER,
    FLOOR,
    FORCED,
    GRADES,
    INACCURACY,
    MISTAKE,
    POWER,
    accuracy,
    death_chance,
    grade_move,
    move_accuracy,
)
from agents.spec import AgentSpec
from engine import Direction, Game, Rules
from engine.records import GameTrace, play_recorded
from engine.store import GameStore
from studio.cli import main
from studio.services import review as svc
from studio.services.review import (
    Reviewer,
    default_reviewer,
    grade_played,
    review_game,
    review_games,
    reviewing,
)

RULES = Rules()
# Checkerboard of 2s and 4s (no merge anywhere) over a bottom row: only left and right are legal.
# Left leaves the one empty cell at (3, 3) between a 4 and a 16: a 2 there (90 %) ends the game.
# Right leaves it at (3, 0) between a 2 and a 4: every tile spawned there can merge. Right survives.
SURVIVE = np.array([[2, 4, 2, 4], [4, 2, 4, 2], [2, 4, 2, 4], [4, 2, 8, 8]])
# A corner chain 1024-512-256-256: left merges it in the corner, up pulls it out of the corner.
CHAIN = np.array([[0, 0, 0, 0], [0, 0, 0, 0], [2, 0, 0, 0], [1024, 512, 256, 256]])
# Right leaves the one empty cell at (3, 1) between 32, 4, 64... where neither a 2 nor a 4 merges: the
# game ends for sure; down keeps it alive.
DEATH = np.array([[8, 4, 16, 2], [4, 64, 32, 128], [64, 128, 8, 16], [32, 4, 0, 2]])
# Only one legal move (left): the first column is empty, the rest is a checkerboard without a merge.
FORCED_BOARD = np.array([[0, 2, 4, 2], [0, 4, 2, 4], [0, 2, 4, 2], [0, 4, 2, 4]])


@pytest.fixture(scope="module")
def small_checkpoint(tmp_path_factory):
    """A small n-tuple network (4x4 tuples) trained for 2,000 games (about a second), saved."""
    agent = create_agent("ntuple", {"layout": "4x4"}, seed=5)
    for _ in agent.train(Budget(episodes=2000)):
        pass
    return str(agent.save(tmp_path_factory.mktemp("ckpt") / "small.npz"))


def reviewers(checkpoint: str | None = None) -> list[Reviewer]:
    out = [
        Reviewer(AgentSpec(name="expectimax"), 1),
        Reviewer(AgentSpec(name="expectimax"), 2),
        Reviewer(AgentSpec(name="ntuple", config={"layout": "4x4"}), 1),
        Reviewer(AgentSpec(name="ntuple", config={"layout": "4x4"}), 2),
    ]
    if checkpoint:
        out.append(Reviewer(AgentSpec.from_checkpoint(checkpoint), 2))
    return out


def play(agent, seed: int, moves: int) -> GameTrace:
    game = Game(seed=seed)
    trace = GameTrace.start(game)
    while not game.game_over and game.moves < moves:
        play_recorded(game, agent.act(game), trace)
    trace.final_board = game.board
    return trace


# ------------------------------------------------------------------------------ grading positions
def graders(checkpoint: str) -> list[Reviewer]:
    """Expectimax at depths 1 and 2 (calibrated) and a trained network at 1-ply and 2-ply."""
    net = AgentSpec.from_checkpoint(checkpoint)
    return [*reviewers()[:2], Reviewer(net, 1), Reviewer(net, 2)]


def test_the_move_that_keeps_the_game_alive_is_best_and_the_other_a_blunder(small_checkpoint):
    # Left dies with the 2 (90 %): every reviewer, the 1-ply network too (its values are corrected for
    # a game's end it cannot see), grades it a blunder that gives up most of the position's worth.
    for reviewer in graders(small_checkpoint):
        agent = reviewer.build(RULES)
        right = grade_played(agent, RULES, SURVIVE, Direction.RIGHT, score=1000)
        left = grade_played(agent, RULES, SURVIVE, Direction.LEFT, score=1000)
        assert right.grade == BEST and right.best == Direction.RIGHT and right.score == 100.0, reviewer.label
        assert left.grade == BLUNDER and left.best == Direction.RIGHT and left.risky, reviewer.label
        # the loss, in points, is most of what the position was still worth (all but the 4's 10 %)
        assert left.loss >= 0.8 * (right.remaining - 16), reviewer.label
        assert left.score < 1.0


def test_a_move_that_ends_the_game_loses_the_whole_remaining_expected_score(small_checkpoint):
    # Right leaves one empty cell that no tile can merge from: the game ends, whichever tile comes.
    # Down keeps it alive. Right gives up everything the position was still worth (its reward is 0).
    assert death_chance(DEATH, Direction.RIGHT) == 1.0 and death_chance(DEATH, Direction.DOWN) == 0.0
    for reviewer in graders(small_checkpoint):
        agent = reviewer.build(RULES)
        right = grade_played(agent, RULES, DEATH, Direction.RIGHT, score=3000)
        assert right.grade == BLUNDER and right.risky, reviewer.label
        assert right.values[Direction.RIGHT] == pytest.approx(0.0, abs=1e-6), reviewer.label
        assert right.loss == pytest.approx(right.remaining), reviewer.label
        assert right.value == pytest.approx(3000 + right.remaining)
        down = grade_played(agent, RULES, DEATH, Direction.DOWN, score=3000)
        assert down.loss < right.loss and not down.risky


def test_merging_the_corner_chain_is_best_and_pulling_it_out_a_blunder(small_checkpoint):
    for reviewer in [*reviewers(small_checkpoint)[:2], reviewers(small_checkpoint)[-1]]:
        agent = reviewer.build(RULES)
        left = grade_played(agent, RULES, CHAIN, Direction.LEFT, score=5000)
        up = grade_played(agent, RULES, CHAIN, Direction.UP, score=5000)
        assert left.grade == BEST and left.rank == 1, reviewer.label
        assert up.grade in (MISTAKE, BLUNDER) and up.rank > 1, reviewer.label
        assert up.best in (Direction.LEFT, Direction.RIGHT)
        # the loss is expected points, the position's value the expected final score
        assert up.loss == pytest.approx(left.values[Direction.LEFT] - up.values[Direction.UP])
        assert left.value == pytest.approx(5000 + left.values[Direction.LEFT])
        assert up.relative == pytest.approx(up.loss / (up.value + FLOOR))


def test_a_lone_legal_move_is_forced_and_left_out_of_the_accuracy():
    for depth in (1, 2):
        agent = create_agent("expectimax", {"depth": depth})
        g = grade_played(agent, RULES, FORCED_BOARD, Direction.LEFT)
        assert g.grade == FORCED and g.forced and list(g.values) == [Direction.LEFT]
        assert accuracy([g]) == 100.0
    blunder = grade_move([10_000.0, 1.0, np.nan, np.nan], 1, index=1)
    assert blunder.grade == BLUNDER and accuracy([g, blunder]) == pytest.approx(
        100 * (1 - blunder.relative) ** POWER
    )


def test_points_thresholds_and_accuracy_follow_the_module_docstring():
    # expected final score 10,000 - FLOOR... : 500 before the move + 9,000 still to come (+ FLOOR 500)
    cases = {0: (BEST, 100.0), 20: ("good", None), 90: ("good", None), 300: (INACCURACY, None),
             800: (MISTAKE, None), 1500: (BLUNDER, None)}  # fmt: skip
    for loss, (grade, score) in cases.items():
        g = grade_move([9_000.0, 9_000.0 - loss, np.nan, np.nan], 1, score_before=500)
        assert g.grade == grade, loss
        assert g.value == 9_500.0
        delta = 100 * loss / (9_500 + FLOOR)
        assert g.relative == pytest.approx(delta / 100)
        assert g.score == pytest.approx(score if score is not None else 100 * (1 - delta / 100) ** POWER)
    assert grade_move([100.0, 81.0, np.nan, np.nan], 1).grade == "good"  # <= 20 pts
    # the figures the docstring quotes: 1 % -> 97, 5 % -> 86, 15 % -> 61, 26 % -> 41, 50 % -> 12.5
    for delta, figure in ((1, 97), (5, 86), (15, 61), (26, 41), (50, 12.5)):
        assert round(move_accuracy(delta), 1 if figure % 1 else 0) == figure
    # a short game's accuracy is the product of its graded moves' accuracies (losses compound)
    moves = [
        grade_move([9_000.0, 9_000.0 - loss, np.nan, np.nan], 1, score_before=500) for loss in (0, 300, 800)
    ]
    assert accuracy(moves) == pytest.approx(100 * np.prod([m.score / 100 for m in moves]))


# ----------------------------------------------------------------------------------- whole games
@pytest.mark.parametrize(
    "name, config, knob",
    [("expectimax", {"depth": 2}, "depth"), ("ntuple", {"layout": "4x4", "search_depth": 2}, "search_depth")],
)
def test_a_game_of_the_reviewers_own_choices_reviews_at_100_percent(name, config, knob, data_dir):
    trace = play(create_agent(name, config), seed=4, moves=150)
    with GameStore.open(data_dir) as store:
        gid = store.record_trace(trace, "agent", name)
        spec_config = {k: v for k, v in config.items() if k != knob}
        review = review_game(store, gid, Reviewer(AgentSpec(name=name, config=spec_config), config[knob]))
    assert review.complete and len(review.moves) == trace.n_moves == review.evaluated
    assert review.accuracy == 100.0
    assert set(review.counts) == set(GRADES)
    assert review.counts["best"] + review.counts["forced"] == trace.n_moves
    assert review.next_mistake() is None
    assert len(review.curve()) == trace.n_moves


def test_a_stored_review_is_reused_and_another_reviewer_keeps_both(data_dir):
    trace = play(create_agent("expectimax", {"depth": 1}), seed=2, moves=80)
    ex2 = Reviewer(AgentSpec(name="expectimax"), 2)
    ex1 = Reviewer(AgentSpec(name="expectimax"), 1)
    with GameStore.open(data_dir) as store:
        gid = store.record_trace(trace, "human")
        first = review_game(store, gid, ex2)
        again = review_game(store, gid, ex2)
        assert first.evaluated == 80 and again.evaluated == 0
        assert [m.grade for m in again.moves] == [m.grade for m in first.moves]
        assert again.accuracy == first.accuracy
        other = review_game(store, gid, ex1)
        assert other.evaluated == 80 and other.accuracy == 100.0
        assert {r.key for r in store.list_reviews(gid)} == {ex1.key(), ex2.key()}
        assert svc.stored_review(store, gid, ex2) is not None
        mistakes = [m.index for m in first.moves if m.is_mistake]
        if mistakes:
            assert first.next_mistake() == mistakes[0]
            assert first.previous_mistake(mistakes[-1] + 1) == mistakes[-1]


def test_an_interrupted_review_keeps_its_finished_part_and_resumes(data_dir, monkeypatch):
    monkeypatch.setattr(reviewing, "CHUNK_MOVES", 8)  # where the walk reads it
    trace = play(create_agent("expectimax", {"depth": 1}), seed=6, moves=100)
    reviewer = Reviewer(AgentSpec(name="expectimax"), 2)
    with GameStore.open(data_dir) as store:
        gid = store.record_trace(trace, "human")
        asked = iter(range(1000))
        part = review_game(store, gid, reviewer, should_stop=lambda: next(asked) >= 30)
        assert not part.complete and part.evaluated == 30 and len(part.moves) == 30
        assert store.get_review(gid, reviewer.key()).reviewed == 30

        # a crash in the middle (an exception from the reviewer) keeps every position evaluated so far
        agent = reviewer.build(RULES)
        calls = {"n": 0}
        real = agent.move_values

        def failing(game):
            calls["n"] += 1
            if calls["n"] > 25:
                raise RuntimeError("killed")
            return real(game)

        monkeypatch.setattr(agent, "move_values", failing)
        with pytest.raises(RuntimeError):
            review_game(store, gid, reviewer, agent=agent)
        assert store.get_review(gid, reviewer.key()).reviewed == 55

        evaluated = {"n": 0}
        fresh = reviewer.build(RULES)
        counted = fresh.move_values

        def counting(game):
            evaluated["n"] += 1
            return counted(game)

        monkeypatch.setattr(fresh, "move_values", counting)
        done = review_game(store, gid, reviewer, agent=fresh)
        assert done.complete and done.evaluated == 45 == evaluated["n"]
        whole = review_game(store, gid, Reviewer(AgentSpec(name="expectimax", label="again"), 2))
    # the resumed review equals one made in one go (the label is not part of the reviewer's identity)
    assert whole.evaluated == 0
    straight = GameStore.open(data_dir)
    try:
        store_values = straight.review_values(straight.get_review(gid, reviewer.key()).id)
    finally:
        straight.close()
    agent = reviewer.build(RULES)
    direct = np.stack([svc.position_values(agent, RULES, trace.layouts[i]) for i in range(100)])
    np.testing.assert_allclose(store_values, direct)


def test_a_review_survives_sigkill_and_the_rerun_resumes(data_dir, tmp_path):
    import subprocess
    import sys
    import time

    trace = play(create_agent("expectimax", {"depth": 2}), seed=1, moves=400)
    with GameStore.open(data_dir) as store:
        gid = store.record_trace(trace, "human")
    script = tmp_path / "slow_review.py"
    script.write_text(
        "import sys, time\n"
        "from agents.spec import AgentSpec\n"
        "from engine.store import GameStore\n"
        "from studio.services import review as svc\n"
        "svc.reviewing.CHUNK_MOVES = 10\n"
        "store = GameStore.open(sys.argv[1])\n"
        "r = svc.Reviewer(AgentSpec(name='expectimax'), 2)\n"
        "agent = r.build()\n"
        "real = agent.move_values\n"
        "def slow(game):\n"
        "    time.sleep(0.01)\n"
        "    return real(game)\n"
        "agent.move_values = slow\n"
        "svc.review_game(store, int(sys.argv[2]), r, agent=agent)\n"
    )
    import os
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])  # this checkout's code, not an installed copy
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, str(script), str(data_dir), str(gid)], env=env)
    reviewer = Reviewer(AgentSpec(name="expectimax"), 2)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with GameStore.open(data_dir) as store:
                info = store.get_review(gid, reviewer.key())
            if info is not None and info.reviewed >= 30:
                break
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    with GameStore.open(data_dir) as store:
        kept = store.get_review(gid, reviewer.key()).reviewed
        assert 30 <= kept < 400
        rest = review_game(store, gid, reviewer)
    assert rest.complete and rest.evaluated == 400 - kept


def test_review_many_games_builds_the_reviewer_once(data_dir, monkeypatch):
    builds = []
    real_build = Reviewer.build

    def counting(self, rules=None):
        builds.append(rules)
        return real_build(self, rules)

    monkeypatch.setattr(Reviewer, "build", counting)
    ex = create_agent("expectimax", {"depth": 1})
    with GameStore.open(data_dir) as store:
        ids = [store.record_trace(play(ex, seed=s, moves=20), "human") for s in range(3)]
        reviews = review_games(store, ids, Reviewer(AgentSpec(name="expectimax"), 1))
    assert [r.game_id for r in reviews] == ids and all(r.accuracy == 100.0 for r in reviews)
    assert len(builds) == 1


def test_a_game_the_reviewer_cannot_review_is_passed_by_and_the_batch_goes_on(data_dir, capsys):
    small = Rules(rows=3, cols=3)
    ex = create_agent("expectimax", {"depth": 1})
    with GameStore.open(data_dir) as store:
        first = store.record_trace(play(ex, seed=1, moves=15), "human")
        game = Game(rules=small, seed=2)  # a 3x3 game: an n-tuple network plays 4x4 only
        trace = GameTrace.start(game)
        for _ in range(5):
            play_recorded(game, game.legal_moves()[0], trace)
        trace.final_board = game.board
        odd = store.record_trace(trace, "human")
        last = store.record_trace(play(ex, seed=3, moves=15), "human")
        ntuple = Reviewer(AgentSpec(name="ntuple", config={"layout": "4x4"}), 1)
        skipped: list[tuple[int, str]] = []
        reviews = review_games(store, [first, odd, last], ntuple, on_skip=lambda g, w: skipped.append((g, w)))
        assert [r.game_id for r in reviews] == [first, last] and all(r.complete for r in reviews)
        assert [g for g, _ in skipped] == [odd] and skipped[0][1].startswith("ntuple cannot play these rules")
        with pytest.raises(ValueError, match="cannot play these rules"):  # no on_skip: as before, it raises
            review_games(store, [odd], ntuple)
    argv = ["--data-dir", str(data_dir), "review", "--source", "human", "--since", "2000-01-01"]
    assert main([*argv, "--reviewer", "ntuple", "--depth", "1", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert [g["game"] for g in out["games"]] == [first, last]
    assert [s["game"] for s in out["skipped"]] == [odd]
    assert f"game {odd} not reviewed: ntuple cannot play these rules" in captured.err


def test_a_checkpoint_overwritten_in_place_is_another_reviewer(small_checkpoint, tmp_path):
    import os
    import shutil

    path = tmp_path / "net.npz"
    shutil.copyfile(small_checkpoint, path)
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    reviewer = Reviewer(AgentSpec.from_checkpoint(str(path)), 2)
    before = reviewer.key()
    assert reviewer.key() == before  # stable while the file stays
    create_agent("ntuple", {"layout": "4x4"}, seed=9).save(path)  # the same name, other weights
    after = reviewer.key()
    assert after != before
    assert after.split(":")[0] == before.split(":")[0] == "checkpoint@d2"


def test_deleting_a_game_deletes_its_reviews(data_dir):
    with GameStore.open(data_dir) as store:
        gid = store.record_trace(play(create_agent("greedy"), seed=1, moves=10), "human")
        review_game(store, gid, Reviewer(AgentSpec(name="expectimax"), 1))
        assert store.list_reviews(gid)
        store.delete_games([gid])
        assert store.list_reviews(gid) == []


# -------------------------------------------------------------------------------- default reviewer
def test_the_default_reviewer_is_the_best_ntuple_checkpoint_else_expectimax(data_dir, tmp_path):
    with GameStore.open(data_dir) as store:
        fallback = default_reviewer(store)
        assert fallback.spec.name == "expectimax" and fallback.depth == 2 and fallback.spec.checkpoint is None
        assert fallback.fallback and "no n-tuple network" in fallback.fallback
        assert fallback.label == "expectimax (calibrated) depth 2"
        paths = []
        for k, score in enumerate((1000.0, 3000.0)):
            agent = create_agent("ntuple", {"layout": "4x4"})
            paths.append(agent.save(tmp_path / f"net{k}.npz"))
            run = store.create_run("ntuple", {"layout": "4x4"}, RULES, {"episodes": 1})
            cp = store.add_checkpoint(run, paths[-1], 1, 1)
            store.set_checkpoint_eval(cp, score)
        chosen = default_reviewer(store)
        assert chosen.depth == 2 and chosen.spec.checkpoint == str(paths[1].resolve())
        assert chosen.label == f"n-tuple run {run}, 2-ply"
        assert chosen.fallback and "weak reviewer" in chosen.fallback  # 3,000 < STRONG_SCORE
        store.set_checkpoint_eval(cp, svc.STRONG_SCORE + 1)
        assert default_reviewer(store).fallback is None
        other = default_reviewer(store, Rules(rows=3, cols=3))
        assert other.spec.name == "expectimax" and "4x4" in (other.fallback or "")


def test_one_network_is_one_reviewer_however_it_is_chosen(data_dir, tmp_path, capsys):
    """The default, the reviewer box's entry for the network and ``--reviewer FILE --depth 2`` are one
    reviewer (one key): a review stored from the command line is the one Replay and Progress show.
    Another depth, the network's own depth, or a file that is no run's, are other reviewers."""
    with GameStore.open(data_dir) as store:
        path = create_agent("ntuple", {"layout": "4x4"}, seed=3).save(tmp_path / "net.npz")
        run = store.create_run("ntuple", {"layout": "4x4"}, RULES, {"episodes": 1})
        store.set_checkpoint_eval(store.add_checkpoint(run, path, 1, 1), svc.STRONG_SCORE + 1)
        gid = store.record_trace(play(create_agent("greedy"), seed=4, moves=6), "human")
        default = default_reviewer(store)
        entry = dict(svc.reviewer_choices(store))[f"n-tuple run {run}, 2-ply"]
        assert entry is not None
        chosen = [
            svc.resolve_reviewer(store, None),
            svc.resolve_reviewer(store, None, 2, RULES),
            svc.resolve_reviewer(store, *entry),
            svc.resolve_reviewer(store, str(path), 2),
            svc.resolve_reviewer(store, str(tmp_path / "." / "net.npz"), 2, RULES),
        ]
        assert {r.key() for r in chosen} == {default.key()}
        assert {r.label for r in chosen} == {f"n-tuple run {run}, 2-ply"}
        others = [
            svc.resolve_reviewer(store, str(path), 1),
            svc.resolve_reviewer(store, str(path)),
            svc.resolve_reviewer(store, None, 3),
        ]
        assert len({default.key(), *(r.key() for r in others)}) == 4
        copy = tmp_path / "copy.npz"  # the same bytes outside the store's runs: a plain checkpoint
        copy.write_bytes(path.read_bytes())
        assert svc.resolve_reviewer(store, str(copy), 2).key().startswith("checkpoint@d2:")
        with pytest.raises(ValueError, match="unknown reviewer 'nobody'"):
            svc.resolve_reviewer(store, "nobody")
    argv = [
        "--data-dir",
        str(data_dir),
        "review",
        str(gid),
        "--reviewer",
        str(path),
        "--depth",
        "2",
        "--json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["reviewer"]["key"] == default.key() and out["complete"]
    with GameStore.open(data_dir) as store:
        shown = svc.stored_review(store, gid, default_reviewer(store))
        assert shown is not None and shown.complete and shown.reviewer["key"] == default.key()


def test_a_damaged_best_checkpoint_is_passed_over_not_a_refusal(data_dir, tmp_path):
    """#34 minor: the strongest run's checkpoint truncated on disk: the default reviewer is the next
    network that reads (then expectimax), and the review goes on."""
    with GameStore.open(data_dir) as store:
        paths = []
        for k, score in enumerate((30_000.0, 60_000.0)):
            paths.append(create_agent("ntuple", {"layout": "4x4"}).save(tmp_path / f"net{k}.npz"))
            run = store.create_run("ntuple", {"layout": "4x4"}, RULES, {"episodes": 1})
            store.set_checkpoint_eval(store.add_checkpoint(run, paths[-1], 1, 1), score)
        assert default_reviewer(store).spec.checkpoint == str(paths[1].resolve())
        data = paths[1].read_bytes()
        paths[1].write_bytes(data[: len(data) // 2])  # truncated: the zip's directory is gone
        assert default_reviewer(store).spec.checkpoint == str(paths[0].resolve())
        paths[0].write_bytes(b"not a checkpoint at all")
        chosen = default_reviewer(store)
        assert chosen.spec.name == "expectimax" and chosen.fallback
        gid = store.record_trace(play(create_agent("greedy"), seed=2, moves=6), "human")
        assert review_game(store, gid, chosen).complete


# ------------------------------------------------------------------------------------------ CLI
def test_cli_json_shape_and_values(data_dir, capsys):
    trace = play(create_agent("expectimax", {"depth": 1}), seed=8, moves=40)
    with GameStore.open(data_dir) as store:
        gid = store.record_trace(trace, "human")
    argv = ["--data-dir", str(data_dir), "review", str(gid), "--reviewer", "expectimax", "--depth", "1"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accuracy"] == 100.0 and out["complete"] and out["reviewed"] == 40
    assert out["reviewer"]["name"] == "expectimax" and out["reviewer"]["depth"] == 1
    assert len(out["moves"]) == 40
    names = ["up", "left", "down", "right"]
    for i, m in enumerate(out["moves"]):
        assert m["played"] == names[int(trace.moves[i])] == m["best"]
        legal = [names[d] for d in range(4) if Game(board=trace.layouts[i]).legal_mask()[d]]
        assert sorted(m["values"]) == sorted(legal)
        assert m["loss"] == 0 and m["grade"] in ("best", "forced")
    assert out["reviewer"]["label"] == "expectimax depth 1" and out["unit"] == svc.UNIT
    assert out["subject"] == "you" and out["players"]["you"]["moves"] == 40
    agent = create_agent("expectimax", {"depth": 1})
    first = svc.to_points(svc.position_values(agent, RULES, trace.layouts[0]), svc.grading_info(agent))
    assert out["moves"][0]["values"] == {
        names[d]: pytest.approx(first[d], abs=0.01) for d in range(4) if first[d] == first[d]
    }
    # the calibration keeps apart moves that expectimax values apart (the opening's too)
    assert all(len(set(m["values"].values())) > 1 for m in out["moves"][1:10] if len(m["values"]) > 1)
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert (
        text.splitlines()[0]
        == f"Game #{gid} · played by you (40 moves) · reviewer expectimax depth 1 · 40/40 moves reviewed"
    )
    assert "who" in text.splitlines()[2] and "accuracy (you): 100.0 %" in text
    assert "reviewer: expectimax depth 1" in text
    assert len([ln for ln in text.splitlines() if ln.strip().endswith("best")]) >= 30
    assert main(["--data-dir", str(data_dir), "review", "--source", "human", "--since", "2000-01-01",
                 "--reviewer", "expectimax", "--depth", "1", "--json"]) == 0  # fmt: skip
    many = json.loads(capsys.readouterr().out)
    assert [g["game"] for g in many["games"]] == [gid] and many["games"][0]["accuracy"] == 100.0


@pytest.mark.parametrize(
    "args, message",
    [
        (["review", "999"], "no game 999"),
        (["review", "1", "--reviewer", "nope"], "unknown reviewer 'nope'"),
        (["review", "1", "--reviewer", "greedy", "--depth", "2"], "greedy has no search depth"),
        (["review"], "give a game id"),
        (["review", "1", "--source", "human"], "not both"),
        (["review", "--since", "yesterday"], "is not a date"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(args, message, data_dir, capsys):
    with GameStore.open(data_dir) as store:
        store.record_trace(play(create_agent("greedy"), seed=1, moves=5), "human")
    assert main(["--data-dir", str(data_dir), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


@pytest.mark.parametrize("args", [["review", "0"], ["review", "x"], ["review", "1", "--depth", "9"]])
def test_cli_bad_numbers_exit_2(args, data_dir, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--data-dir", str(data_dir), *args])
    assert e.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_bench_review_reports_both_reviewers(capsys):
    import io

    from studio.commands.bench import BenchOptions
    from studio.commands.bench_review import review_benchmark
    from studio.progress import ProgressLine

    options = BenchOptions(rounds=1, extra={"moves": "60"})
    report = review_benchmark(options, ProgressLine("bench review", stream=io.StringIO()))
    assert [m.key for m in report.measurements] == ["expectimax_d2", "ntuple_2ply"]
    assert all(m.value > 0 and m.detail["seconds_per_game"] > 0 for m in report.measurements)
    assert "s per 60-move game" in report.render_text()
    with pytest.raises(ValueError, match="no option 'nope'"):
        review_benchmark(BenchOptions(extra={"nope": "1"}), ProgressLine("x", stream=io.StringIO()))


# -------------------------------------------------------------------------------------- calibration
def test_the_calibration_fit_is_monotone_and_maps_as_documented():
    from agents.review import Calibration, fit_calibration

    # raw values 0..99 with remaining scores that dip at 40-59: pooling makes them one level
    raw = np.repeat(np.arange(100.0), 2)
    remaining = np.where((raw >= 40) & (raw < 60), 100.0, raw * 10)
    cal = fit_calibration(raw, remaining, bins=10, floor=-1000.0, games=3)
    assert list(cal.ys) == sorted(cal.ys) and list(cal.xs) == sorted(set(cal.xs))
    assert cal.positions == 200 and cal.games == 3
    assert cal.points([cal.xs[0]])[0] == pytest.approx(cal.ys[0])
    assert cal.points([-1000.0, -5000.0])[0] == 0.0 == cal.points([-5000.0])[0]  # at or below the floor
    assert cal.points([(cal.xs[0] - 1000) / 2])[0] == pytest.approx(cal.ys[0] / 2)  # half-way to 0
    above = cal.points([cal.xs[-1] + 10, cal.xs[-1] + 20])
    assert cal.ys[-1] < above[0] < above[1]  # moves valued past every fitted one still differ
    assert np.isnan(cal.points([np.nan])[0])
    assert Calibration.from_json(cal.to_json()) == cal
    with pytest.raises(ValueError, match="2\\+ knots"):
        Calibration.from_json({"xs": [1.0], "ys": [2.0]})


def test_calibrate_fits_expectimax_on_games_it_plays_out(tmp_path):
    path = tmp_path / "cal.json"
    out = svc.calibrate(depths=(1,), games=2, path=path)
    saved = json.loads(path.read_text())
    assert saved == {k: v for k, v in json.loads(json.dumps(out)).items() if k not in ("path", "fitted")}
    knots = saved["depths"]["1"]
    assert knots["games"] == 2 and knots["positions"] > 100
    assert knots["ys"] == sorted(knots["ys"]) and knots["ys"][-1] > knots["ys"][0] > 0
    # the shipped calibration covers the depths the window offers
    shipped = svc.load_calibrations()["expectimax"]["depths"]
    assert {"1", "2", "3"} <= set(shipped)
    assert svc.calibration_for("expectimax", 2) is not None
    assert svc.calibration_for("expectimax", 2, {"heuristic": "seed004"}) is None  # other weights
    with pytest.raises(ValueError, match="not points and it has no calibration"):
        Reviewer(AgentSpec(name="greedy")).build(RULES)
