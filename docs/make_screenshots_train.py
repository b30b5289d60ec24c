"""Regenerate the Train / compare / Arena / hint screenshots: ``python docs/make_screenshots_train.py``.

Builds the real main window on a throw-away data dir and uses it as a person would: trains a DQN and
an n-tuple network from the Train tab (each with its periodic greedy evaluation), grabs each mid-run,
ticks both runs to compare them on a log-x episode axis, sends the n-tuple checkpoint to the Arena with
"Use in Arena" and grabs the Arena while its games are still being played, then asks expectimax for a
hint in the Play tab.

``--size 1280x800`` (default), ``--size 1194x720`` (the window's size on a fresh profile) or ``--size
1920x1080``; files are ``docs/screenshot-VIEW-WxH.png``, and the 1280x800 ones also as
``docs/screenshot-VIEW.png`` (the README's). ``--views train`` makes only the Train tab's: the form
before a first run (``train-start``), a DQN run, an n-tuple run and the two compared (their x axis goes
log by itself: a DQN run of a few thousand moves beside an n-tuple run of millions). Under Xvfb (``Xvfb :99 &``,
``DISPLAY=:99 QT_QPA_PLATFORM=xcb``) it is a real X11 window; without a display, offscreen. Timings
depend on the machine, so the pictures differ from run to run in their details.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from screenshots_common import ROOT, Shots, open_window, parser, settle

DQN_SECONDS = 45.0
NTUPLE_SECONDS = 60.0
ARENA_AGENTS = ("random", "greedy", "expectimax")
ARENA_GAMES = 50
ARENA_SECONDS = 7.0  # mid-run: the baselines done, expectimax and the n-tuple network still playing


def main(size: tuple[int, int] = (1280, 800), out_dir: Path = ROOT / "docs", views: str = "all") -> None:
    from agents.spec import AgentSpec
    from engine import Direction, Rules

    app, window = open_window(Path(tempfile.mkdtemp(prefix="studio-shots-train-")), size)
    shot = Shots(app, window, size, out_dir)
    window.show_tab("Train")
    train = window.tab("Train")
    settle(app, 0.5)
    # A first run's form as a new user meets it: agent, preset, budget and Start on screen.
    train.launch.select_agent("ntuple")
    settle(app, 0.3)
    shot("train-start")

    def train_for(agent: str, seconds: float, eval_minutes: float) -> int | None:
        train.launch.select_agent(agent)
        train.launch.set_budget(minutes=seconds / 60.0 + 2)
        train.launch.seedSpin.setValue(2048)
        train.launch.evalGamesSpin.setValue(10)
        train.launch.evalEverySpin.setValue(eval_minutes)
        train.start()
        settle(app, seconds)
        run_id = train.focus.run_id if train.focus is not None else None
        if run_id is not None:
            train.select_runs([run_id])
        train.curves.redraw()
        return run_id

    dqn = train_for("dqn", DQN_SECONDS, 0.3)
    shot("train-dqn")
    train.stop_training()
    train.wait_finished(120)

    ntuple = train_for("ntuple", NTUPLE_SECONDS, 0.25)
    shot("train")
    train.stop_training()
    train.wait_finished(120)

    # Compare: tick both runs; the x axis (moves) goes log by itself, a few thousand DQN moves
    # beside millions of the n-tuple network's, and the panel says so.
    ids = [r for r in (dqn, ntuple) if r is not None]
    train.runsPanel.set_checked(ids)
    train.runsPanel.showRuns.emit(ids)
    train.curves.redraw()
    shot("compare")
    if views == "train":
        shot.close()
        return

    # Arena, mid-run: the n-tuple checkpoint against the baselines, through "Use in Arena".
    arena = window.tab("Arena")
    for name in ARENA_AGENTS:
        arena.add_agent(name)
    if ntuple is not None:
        train.select_runs([ntuple])
        train.runsPanel.use_selected_in_arena()
    arena.gamesSpin.setValue(ARENA_GAMES)
    arena.seedSpin.setValue(7)
    arena.workersSpin.setValue(min(2, arena.workersSpin.maximum()))
    window.show_tab("Arena")
    arena.run()
    started = time.monotonic()
    while arena.is_running and time.monotonic() - started < ARENA_SECONDS:
        settle(app, 0.2)
    shot("arena")
    arena.cancel()
    while arena.is_running:
        settle(app, 0.2)

    # A hint: expectimax rates each legal move of a mid-game position.
    window.show_tab("Play")
    play = window.tab("Play")
    play.new_game(Rules(), seed=11)
    for d in (Direction.LEFT, Direction.UP, Direction.LEFT, Direction.DOWN) * 4:
        play.play_move(d)  # an illegal one is refused and changes nothing
    play.set_agent(AgentSpec("expectimax"))
    play.request_hint()
    started = time.monotonic()
    while play.last_hint is None and time.monotonic() - started < 30:
        settle(app, 0.1)
    shot("hint")
    shot.close()


if __name__ == "__main__":
    p = parser(__doc__)
    p.add_argument(
        "--views", choices=("all", "train"), default="all", help="train: only the Train tab's pictures"
    )
    args = p.parse_args()
    main(args.size, args.out, views=args.views)
