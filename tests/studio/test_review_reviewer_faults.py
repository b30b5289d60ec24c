"""A reviewer's bad values are its fault (issue 47): named, in one line, and no review is stored.

Before, a plug-in reviewer in points that returned NaN or 1e308 for every move graded all 300 moves
"best", accuracy 100.0 % (all tied, or all past any score), and the review was stored; a reviewer that
failed at its first move (an SB3 checkpoint) left an empty 0-move review in the store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.registry import create_agent
from agents.spec import AgentSpec
from engine.store import GameStore
from studio.cli import main
from studio.services.review import Reviewer, review_game
from tests.agents.test_plugins import GOOD, MakePlugin, make_plugin  # noqa: F401  (the fixture)

#: a plug-in reviewer in points whose every value is ``{value}``
CONSTANT = (
    GOOD.format(name="{name}")
    .replace('description = "', 'value_kind = "points"\n    description = "')
    .replace(
        "out[d] = float((after == 0).sum()) + self.config.gain_weight * gain",
        "out[d] = float({value!r})",
    )
)


def run(capsys: pytest.CaptureFixture[str], data_dir: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data_dir), *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("name", "value", "shown"), [("nanny", "nan", "nan"), ("huge", "1e308", "1e+308")])
def test_a_plugin_reviewer_with_absurd_values_is_named_and_stores_nothing(
    capsys: pytest.CaptureFixture[str],
    data_dir: Path,
    make_plugin: MakePlugin,  # noqa: F811  (the imported fixture)
    name: str,
    value: str,
    shown: str,
) -> None:
    source = CONSTANT.replace("{name}", name).replace("{value!r}", f"float({value!r})")
    make_plugin(f"{name}-pkg", {name: f"{name}_mod:EmptiestAgent"}, {f"{name}_mod": source})
    assert run(capsys, data_dir, "eval", "--agent", "greedy", "--games", "1", "--seed", "3")[0] == 0
    code, out, err = run(capsys, data_dir, "review", "1", "--reviewer", name)
    lines = [line for line in err.splitlines() if line.strip() and "reviewing game" not in line]
    assert code == 2 and "best" not in out and "100.0 %" not in out
    assert len(lines) == 1 and "Traceback" not in err, err
    assert (
        f"reviewer {name} rated up at move 1 as {shown}: not a finite value within ±1e+12 points" in lines[0]
    )
    assert "the reviewer's fault (nothing stored)" in lines[0]
    with GameStore.open(data_dir) as store:
        assert store.list_reviews(1) == []


def test_a_reviewer_that_fails_at_its_first_move_leaves_no_empty_review(
    store: GameStore, tmp_path: Path
) -> None:
    from engine import Game
    from engine.records import GameTrace, play_recorded

    greedy = create_agent("greedy", seed=1)
    game = Game(seed=1)
    trace = GameTrace.start(game)
    while not game.game_over and game.moves < 40:
        play_recorded(game, greedy.act(game), trace)
    trace.final_board = game.board
    gid = store.record_trace(trace, source="agent", agent="greedy")

    # a checkpoint reviewer (an n-tuple file) whose values cannot be computed (a broken SB3 model, say)
    path = create_agent("ntuple", seed=0).save(tmp_path / "net.npz")
    reviewer = Reviewer(AgentSpec.from_checkpoint(str(path), "ntuple"), 1)
    agent = reviewer.build()

    def broken(_game: object) -> dict[object, float]:
        raise RuntimeError("the model does not run")

    agent.review_values = broken  # type: ignore[method-assign,assignment]
    with pytest.raises(RuntimeError, match="the model does not run"):
        review_game(store, gid, reviewer, agent=agent)
    assert store.list_reviews(gid) == []  # before: a review of 0 moves, listed as begun
