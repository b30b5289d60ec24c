"""Regenerate the game-review screenshots: ``python docs/make_screenshots_review.py``.

Builds the real main window on a throw-away data dir and uses it as a person would:

- **review**: a game a person shared with an agent (the person plays, then lets greedy play on under
  Watch for a stretch, then takes over again) reviewed by expectimax at depth 2 through the Replay
  tab's own Review action (in the background, with its progress bar), then stepped with "Mistake ▶" to
  one of the person's mistakes past the middle of the game, so the board shows the played and the best
  move as arrows, the evaluation graph beside it its marker, and greedy's stretch greyed (not counted);
- **coach**: the Play tab with "Coach: grade my moves" on, after a person's moves the last of which
  the coach grades worse than the best (the badge under the score names the better move);
- **progress**: the Progress tab over twenty games a person played (seeded moves: expectimax at depth
  1 with a share of random moves that shrinks as the person learns), most reviewed by expectimax at
  depth 2 through :func:`studio.services.review.review_game`, the newest three not yet (the button
  offers to review them).

``--size 1280x800`` (default) or ``--size 1920x1080``; files are ``docs/screenshot-VIEW-WxH.png``, and
the 1280x800 review also as ``docs/screenshot-review.png`` (the README's). Fixed seeds: reruns give the
same pictures while the agents and fonts stay the same. Under Xvfb (``Xvfb :99 &``,
``DISPLAY=:99 QT_QPA_PLATFORM=xcb``) it is a real X11 window; without a display, offscreen.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
from PySide6.QtWidgets import QApplication
from screenshots_common import ROOT, Shots, open_window, parser, settle

#: The replayed game: a person's (seeded moves, see shared_game), seed 1; greedy plays the moves in
#: AGENT_STRETCH under Watch.
REVIEW_SEED = 1
AGENT_STRETCH = range(120, 200)
#: The person's games in the Progress tab, oldest first; the newest UNREVIEWED of them are not reviewed.
PROGRESS_GAMES = 20
UNREVIEWED = 3
PROGRESS_SEED = 2026  # games reaching 512, 1024 and 2048 among the reviewed ones
#: The Play tab's game for the coach: seed, and the moves played before the graded one.
COACH_SEED = 11
COACH_MOVES = 150


def wait_for(app: QApplication, done, timeout: float, what: str) -> None:
    """Process events until ``done()``; a RuntimeError after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while not done():
        if time.monotonic() > end:
            raise RuntimeError(f"timed out waiting for {what}")
        settle(app, 0.05)


def shared_game(store, seed: int) -> int:
    """A game a person shares with greedy (one record, source "mixed"): the person's moves are
    expectimax depth 1's choice or, one time in six, a random legal move; greedy plays the moves in
    ``AGENT_STRETCH`` (Watch); its id."""
    from agents.registry import create_agent
    from agents.spec import AgentSpec
    from engine import Rules
    from engine.store import HUMAN, GameRecorder, Player
    from studio.services.review import Reviewer

    rng = np.random.default_rng(seed)
    person = Reviewer(AgentSpec(name="expectimax"), 1).build(Rules())
    greedy = create_agent("greedy", seed=seed)
    watched = Player("agent", "greedy")
    rec = GameRecorder(store, rules=Rules(), seed=seed, lazy=True)
    while not rec.game_over:
        if rec.moves in AGENT_STRETCH:
            rec.play(greedy.act(rec.game), watched)
            continue
        legal = rec.game.legal_moves()
        move = legal[int(rng.integers(len(legal)))] if rng.random() < 1 / 6 else person.act(rec.game)
        rec.play(move, HUMAN)
    rec.close()
    assert rec.game_id is not None  # the game has moves, so its record exists
    return rec.game_id


def human_games(store) -> list[int]:
    """``PROGRESS_GAMES`` games a person played (GameRecorder, HUMAN), getting better: each move is
    expectimax depth 1's choice, or a random legal move with a probability that falls from about 45 %
    to none over the games (with some noise, so the trend is not a straight line)."""
    from agents.spec import AgentSpec
    from engine import Rules
    from engine.store import HUMAN, GameRecorder
    from studio.services.review import Reviewer

    rng = np.random.default_rng(PROGRESS_SEED)
    strong = Reviewer(AgentSpec(name="expectimax"), 1).build(Rules())
    ids = []
    for k in range(PROGRESS_GAMES):
        trend = 0.45 * (1 - k / (PROGRESS_GAMES - 1)) ** 2
        careless = float(np.clip(trend + rng.normal(0, 0.03), 0.0, 0.6))
        rec = GameRecorder(store, rules=Rules(), seed=int(rng.integers(1 << 30)), lazy=True)
        while not rec.game_over:
            legal = rec.game.legal_moves()
            move = legal[int(rng.integers(len(legal)))] if rng.random() < careless else strong.act(rec.game)
            rec.play(move, HUMAN)
        rec.close()
        ids.append(rec.game_id)
    return ids


def coach_position(play, seed: int, moves: int):
    """Play ``moves`` moves of expectimax depth 1 as the person (coach off), then on until a position
    where a legal move is a "mistake" for the coach (expectimax at its own depth); return that move (a
    blunder or an inaccuracy when no mistake turns up within 100 moves)."""
    from agents.review import BLUNDER, INACCURACY, MISTAKE
    from agents.spec import AgentSpec
    from engine import Rules
    from studio.services.review import Reviewer, grade_played

    play.new_game(Rules(), seed=seed)
    d1 = Reviewer(AgentSpec(name="expectimax"), 1).build(Rules())
    coach = Reviewer(AgentSpec(name="expectimax")).build(Rules())
    for _ in range(moves):
        play.play_move(d1.act(play.recorder.game))
    for _ in range(100):
        game = play.recorder.game
        grades = {
            d: grade_played(coach, Rules(), game.board, d, game.score).grade for d in game.legal_moves()
        }
        found = [d for d, g in grades.items() if g == MISTAKE]
        if found:
            return found[0]
        play.play_move(d1.act(game))
    game = play.recorder.game
    for d in game.legal_moves():
        if grade_played(coach, Rules(), game.board, d, game.score).grade in (BLUNDER, INACCURACY):
            return d
    raise RuntimeError("no position with a mistake to make")


def main(size: tuple[int, int] = (1280, 800), out_dir: Path = ROOT / "docs") -> None:
    from agents.review import BLUNDER, MISTAKE
    from agents.spec import AgentSpec
    from engine.store import GameStore
    from studio.services.review import Reviewer, review_game

    started = time.monotonic()
    # The store first, as a person's data dir: their games (most of them reviewed), then the greedy
    # game to review in Replay; the window opens on it afterwards (its status bar counts the games).
    # The throw-away dir has a fixed name: the status bar shows its path, the same on every run.
    tmp = Path(tempfile.gettempdir()) / f"2048-studio-shots-review-{size[0]}x{size[1]}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    reviewer = Reviewer(AgentSpec(name="expectimax"), 2)
    with GameStore.open(tmp / "data") as store:
        mine = human_games(store)
        for game_id in mine[: len(mine) - UNREVIEWED]:
            review_game(store, game_id, reviewer)
        replay_id = shared_game(store, REVIEW_SEED)
    print(f"games played and reviewed in {time.monotonic() - started:.0f} s")

    app, window = open_window(tmp, size)
    settle(app, 0.5)
    shot = Shots(app, window, size, out_dir, readme=("review",))

    # Review: the shared game, reviewed by expectimax d2 with the tab's Review button.
    window.show_tab("Replay")
    replay = window.replay
    replay.open_game(replay_id)
    replay.board.animation_ms = 0
    replay.reviewerCombo.setCurrentIndex(replay.reviewerCombo.findText("expectimax d2"))
    done: list[object] = []
    replay.reviewed.connect(done.append)
    replay.reviewButton.click()
    wait_for(app, lambda: bool(done), 120, "the Replay review")
    replay.wait_review()
    if not done[0].complete:  # type: ignore[attr-defined]
        raise RuntimeError(f"the review did not finish: {replay.summaryLabel.text()}")
    settle(app, 0.3)
    # Past the middle, "Mistake ▶" until a mistake or a blunder (inaccuracies are stepped over).
    replay.step_to(int(replay.record.n_moves * 0.55))
    for _ in range(50):
        before = replay.position
        replay.nextMistakeButton.click()
        g = replay.grade_at(replay.position)
        if replay.position == before or (g is not None and g.grade in (MISTAKE, BLUNDER)):
            break
    replay.board.finish_animations()
    shot("review")

    # Coach: the Play tab, Coach on, the person's last move graded worse than the best.
    window.show_tab("Play")
    play = window.play
    play.board.animation_ms = 0  # no move half-drawn: the same picture on every run
    play.set_agent(AgentSpec("expectimax"))
    if play.coachCheck.isChecked():
        play.coachCheck.setChecked(False)
    move = coach_position(play, COACH_SEED, COACH_MOVES)
    play.coachCheck.setChecked(True)
    play.play_move(move)
    wait_for(app, lambda: play.last_grade is not None, 60, "the coach's grade")
    if play.last_grade.grade is None:
        raise RuntimeError(f"the coach gave no grade: {play.coachBadge.text()}")
    play.board.finish_animations()
    shot("coach")

    # Progress: the person's games; the newest ones not reviewed yet.
    window.show_tab("Progress")
    progress = window.tab("Progress")
    progress.refresh()
    if not progress.wait_loaded(60):
        raise RuntimeError("the Progress tab did not load")
    shot("progress")

    shot.close(f" in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    args = parser(__doc__).parse_args()
    main(args.size, args.out)
