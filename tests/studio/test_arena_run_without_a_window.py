"""The Arena's run without its window (:mod:`studio.services.arena`): the job plays every contestant
into the store, a faulty one fails alone, and the lines under the progress bar say what happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.arena import evaluate
from agents.spec import AgentSpec
from engine.store import GameStore
from studio.services.arena import (
    ArenaRun,
    ContestantRow,
    LiveRows,
    contestants_from_json,
    contestants_to_json,
    finished_text,
    play_contestants,
    progress_text,
    run_eta,
    starting_text,
)


def test_the_job_plays_each_contestant_into_the_store_and_a_bad_checkpoint_fails_alone(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a checkpoint")
    specs = [AgentSpec("random"), AgentSpec.from_checkpoint(bad, None), AgentSpec("greedy")]
    live = LiveRows(specs)
    reports: list[tuple[int, int]] = []
    db = tmp_path / "games.db"
    GameStore(db).close()
    results = play_contestants(
        ArenaRun(3, 5, 1, "local", db), live, specs, lambda done, total, text: reports.append((done, total))
    )
    rows = live.snapshot()
    assert [r.status for r in rows] == ["done", "failed", "done"]
    assert (
        rows[1].reason.startswith(f"{specs[1].display}: ")
        and "not a 2048 Studio checkpoint" in rows[1].reason
    )
    assert [r.label for r in results] == ["random", "greedy"]
    # The same games as agents.arena plays them alone with that seed.
    assert results[0].scores.tolist() == evaluate(AgentSpec("random"), 3, 5).scores.tolist()
    assert reports[-1] == (6, 9) and all(total == 9 for _, total in reports)
    with GameStore(db) as store:
        assert len(store.list_games(source="evaluation")) == 6
    assert finished_text(rows, crashed=False, cancelled=False) == (
        f"Done: 6 games in {_duration(rows)} (in the store)\nFailed: {rows[1].reason}"
    )


def _duration(rows: list[ContestantRow]) -> str:
    from studio.text import duration

    return duration(sum(r.elapsed for r in rows))


def test_the_lines_under_the_bar() -> None:
    assert starting_text(200, 1, "local") == "0 / 200 games · ETA …\nStarting 1 process…"
    assert starting_text(200, 4, "ray") == "0 / 200 games · ETA …\nStarting 4 Ray actors…"
    snap = evaluate(AgentSpec("random"), 2, 1)
    rows = [
        ContestantRow(AgentSpec("greedy"), "done", elapsed=2.0),
        ContestantRow(AgentSpec("random"), "playing", snap, int(snap.moves.sum()) + 50, 2.0),
        ContestantRow(AgentSpec("expectimax")),
    ]
    lines = progress_text(rows, 4).splitlines()
    assert lines[0].startswith("2 / 12 games · ETA ")
    rate = (int(snap.moves.sum()) + 50) / 2.0
    assert lines[1:] == [f"Playing random (2 of 3) · {rate:,.0f} moves/s"]
    assert run_eta(rows, 4).seconds_left() > 0
    one = [ContestantRow(AgentSpec("random"), "cancelled", snap)]
    assert finished_text(one, crashed=False, cancelled=True) == "Cancelled after 2 games (in the store)"
    assert finished_text(one, crashed=True, cancelled=False) == "Failed after 2 games"
    assert finished_text(
        [ContestantRow(AgentSpec("random"), "not played")], crashed=False, cancelled=True
    ) == ("Cancelled after 0 games")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("not json", []),
        ('{"spec": {"name": "random"}}', []),  # not a list
        (
            '[3, {"spec": 5}, {"spec": {"name": "random"}, "ticked": false}, {"spec": {"name": "greedy"}}]',
            [("random", False), ("greedy", True)],
        ),
    ],
)
def test_kept_contestants_are_read_forgivingly(text: str, want: list[tuple[str, bool]]) -> None:
    assert [(spec.name, ticked) for spec, ticked in contestants_from_json(text)] == want


def test_kept_contestants_read_back_as_they_were_kept(tmp_path: Path) -> None:
    entries = [(AgentSpec("random"), True), (AgentSpec.from_checkpoint(tmp_path / "a.npz", "ntuple"), False)]
    assert contestants_from_json(contestants_to_json(entries)) == entries
