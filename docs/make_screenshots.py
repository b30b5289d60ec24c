"""Regenerate docs/screenshot-{play,replay,games}.png: ``python docs/make_screenshots.py``.

Builds the real main window on a throw-away data dir filled with games played by the registered
agents, and grabs each tab offscreen (no display needed). Fixed seeds: reruns give the same pictures
while the agents and fonts stay the same.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QSettings  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from agents.registry import agent_names, create_agent  # noqa: E402
from engine import Game, Rules  # noqa: E402
from engine.records import GameTrace, play_recorded  # noqa: E402
from engine.store import HUMAN, GameRecorder, Player  # noqa: E402

SIZE = (1180, 760)


def play_agent_game(store, name: str, rules: Rules, seed: int, source: str, max_moves: int = 100_000) -> int:
    agent = create_agent(name, rules=rules, seed=seed)
    game = Game(rules=rules, seed=seed)
    trace = GameTrace.start(game)
    while not game.game_over and trace.n_moves < max_moves:
        play_recorded(game, agent.act(game), trace)
    return store.record_trace(trace, source=source, agent=name)


def settle(app: QApplication, ms: int = 400) -> None:
    from PySide6.QtTest import QTest

    QTest.qWait(ms)
    app.processEvents()


def main(out_dir: Path = ROOT / "docs") -> None:
    from studio.app import create_window

    app = QApplication.instance() or QApplication(sys.argv[:1])
    tmp = Path(tempfile.mkdtemp(prefix="studio-shots-"))
    settings = QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat)
    window = create_window(tmp / "data", settings=settings)
    store = window.store
    strong = "expectimax" if "expectimax" in agent_names() else "greedy"

    # A library with a bit of everything: strong and weak agents, other board sizes, a human game.
    replay_id = play_agent_game(store, strong, Rules(), seed=2, source="agent", max_moves=900)
    for seed in range(3):
        play_agent_game(store, "greedy", Rules(), seed=10 + seed, source="evaluation")
    for seed in range(6):
        play_agent_game(store, "random", Rules(), seed=20 + seed, source="evaluation")
    play_agent_game(store, "greedy", Rules(rows=5, cols=5), seed=31, source="agent")
    play_agent_game(store, "random", Rules(rows=3, cols=3), seed=32, source="training")
    human = GameRecorder(store, rules=Rules(), seed=40, lazy=True)
    for i in range(60):
        human.play((1, 2, 3, 2)[i % 4], HUMAN)
    human.close()

    window.resize(*SIZE)
    window.show()
    settle(app)

    # Play: a game well under way (a strong agent played it on, the person has just taken over),
    # with the strong agent's hint on screen.
    play = window.play
    play.new_game(Rules(), seed=7)
    agent = create_agent(strong, rules=Rules(), seed=7)
    while play.recorder.moves < 420 and not play.recorder.closed:
        play.play_move(agent.act(play.recorder.game), Player("agent", strong))
    for d in (1, 2):  # two human moves
        if play.recorder.game.legal_mask()[d]:
            play.play_move(d, HUMAN)
    play.board.finish_animations()
    index = play.agentCombo.findText(strong)
    play.agentCombo.setCurrentIndex(index)
    play._agent_index = index
    play.request_hint()
    for _ in range(100):
        if play.last_hint is not None:
            break
        settle(app, 50)
    window.show_tab("Play")
    settle(app)
    window.grab().save(str(out_dir / "screenshot-play.png"))

    # Replay: the strong agent's game, two thirds in.
    window.open_in_replay(replay_id)
    replay = window.replay
    replay.step_to(int(replay.n_positions * 0.66))
    replay.step(1)
    replay.board.finish_animations()
    settle(app)
    window.grab().save(str(out_dir / "screenshot-replay.png"))

    # Games: the library, the evaluation games selected (summary and histogram of the selection).
    window.show_tab("Games")
    settle(app)
    games = window.games
    games.select_ids([g.id for g in store.list_games() if g.source in ("evaluation", "agent")])
    settle(app)
    window.grab().save(str(out_dir / "screenshot-games.png"))
    window.close()
    print(f"wrote {', '.join(f'screenshot-{n}.png' for n in ('play', 'replay', 'games'))} to {out_dir}")


if __name__ == "__main__":
    main()
