"""``review --calibrate`` (issues 45 and 47): a calibration is the data dir's, never the package's.

Before, ``review --calibrate`` rewrote ``resources/review_calibration.json`` inside the installed package
whatever ``--data-dir`` said, ignored ``--reviewer`` and ``--depth`` (always expectimax at depths 1-3),
and a calibration holding ``1e400`` / ``1e999`` ended ``review`` and ``train --agent imitation
--skip-graded`` in an OverflowError traceback. Now the shipped file is a read-only default: a fit is
written to ``DATA/calibrations/<agent>-<hash>.json`` and read before it, for the reviewer named.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from engine.store import GameStore
from studio.cli import main
from studio.services import review as svc
from studio.services.review import CALIBRATION_FILE, resolve_reviewer, review_by_key

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_DIRS = ("engine", "agents", "studio", "resources")


def run(capsys: pytest.CaptureFixture[str], data_dir: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(data_dir), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _calibration_files(data_dir: Path) -> list[Path]:
    return sorted((data_dir / "calibrations").glob("*.json"))


def _package_hashes() -> dict[str, str]:
    """SHA-256 of every file under the package dirs (bytecode caches aside: Python writes those)."""
    out = {}
    for top in PACKAGE_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                out[str(path.relative_to(ROOT))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_calibrate_fits_the_named_reviewer_into_the_data_dir_and_review_then_grades_with_it(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    shipped = CALIBRATION_FILE.read_bytes()
    assert run(capsys, data_dir, "eval", "--agent", "random", "--games", "1", "--seed", "4")[0] == 0
    # greedy's values are not points and nothing ships a calibration for it: refused, saying how
    code, _, err = run(capsys, data_dir, "review", "1", "--reviewer", "greedy")
    assert code == 2 and "review --calibrate --reviewer greedy fits one" in _one_line_error(err)

    code, out, _ = run(
        capsys, data_dir, "review", "--calibrate", "--reviewer", "greedy", "--games", "2", "--json"
    )
    assert code == 0
    written = json.loads(out)
    [path] = _calibration_files(data_dir)
    assert written["path"] == str(path) and path.name.startswith("greedy-")
    saved = json.loads(path.read_text())
    assert saved["name"] == "greedy" and list(saved["depths"]) == ["1"]  # greedy has no depth: 1
    assert saved["depths"]["1"]["games"] == 2 and saved["depths"]["1"]["positions"] >= 48
    assert written["fitted"] == [1]
    assert CALIBRATION_FILE.read_bytes() == shipped  # the shipped default is never written

    code, out, _ = run(capsys, data_dir, "review", "1", "--reviewer", "greedy", "--json")
    assert code == 0
    review = json.loads(out)
    assert review["reviewed"] == review["n_moves"] > 0 and 0.0 <= review["accuracy"] <= 100.0
    with GameStore.open(data_dir) as store:
        stored = store.list_reviews(1)[0].reviewer
        assert json.loads(stored["calibration"]) == saved["depths"]["1"]


def test_calibrate_at_a_depth_fits_that_depth_and_it_wins_over_the_shipped_one(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    code, out, _ = run(
        capsys, data_dir, "review", "--calibrate", "--reviewer", "expectimax", "--depth", "1", "--games", "2"
    )
    assert code == 0 and "expectimax depth 1: " in out and "depth 2" not in out
    [path] = _calibration_files(data_dir)
    assert f"written to {path}" in out
    mine = json.loads(path.read_text())["depths"]
    assert list(mine) == ["1"] and mine["1"]["games"] == 2  # the shipped fit used 10 games a depth
    shipped = svc.load_calibrations()["expectimax"]["depths"]
    with GameStore.open(data_dir) as store:
        at1 = resolve_reviewer(store, "expectimax", 1)
        at2 = resolve_reviewer(store, "expectimax", 2)
        agent1, agent2 = at1.build(), at2.build()
        assert json.loads(svc.grading_info(agent1)["calibration"]) == mine["1"]  # the data dir's first
        assert json.loads(svc.grading_info(agent2)["calibration"]) == shipped["2"]  # else the shipped one
    # a new calibration is another reviewer: its reviews are not mixed with the shipped one's
    assert at1.key() != svc.Reviewer(at1.spec, 1).key()
    assert at2.key() == svc.Reviewer(at2.spec, 2).key()


@pytest.mark.parametrize(
    ("agent", "why"),
    [
        ("ntuple", "ntuple's move values are points already: it grades without a calibration"),
        ("policy", "policy's move values are a policy's shares of 1 per position"),
    ],
)
def test_calibrating_an_agent_without_values_to_map_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], data_dir: Path, agent: str, why: str
) -> None:
    code, _, err = run(capsys, data_dir, "review", "--calibrate", "--reviewer", agent, "--games", "2")
    assert code == 2 and why in _one_line_error(err)
    assert _calibration_files(data_dir) == []


def test_a_hostile_calibration_in_the_data_dir_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    assert run(capsys, data_dir, "eval", "--agent", "random", "--games", "1", "--seed", "4")[0] == 0
    with GameStore.open(data_dir) as store:
        path = resolve_reviewer(store, "expectimax", 2).calibration_file()
    assert path is not None
    path.parent.mkdir(parents=True)
    good = svc.load_calibrations()["expectimax"]["depths"]["2"]
    text = json.dumps({"depths": {"2": {**good, "games": 1}}}).replace('"games": 1', '"games": 1e400')
    path.write_text(text)
    code, _, err = run(capsys, data_dir, "review", "1", "--reviewer", "expectimax", "--depth", "2")
    line = _one_line_error(err)
    assert code == 2 and str(path) in line and "depth 2: calibration games must be a finite number" in line
    path.write_text(json.dumps({"depths": {"²": good}}))
    code, _, err = run(capsys, data_dir, "review", "1", "--reviewer", "expectimax", "--depth", "2")
    assert code == 2 and "depth '²' must be a whole number 1..20" in _one_line_error(err)
    with GameStore.open(data_dir) as store:
        assert store.list_reviews(1) == []  # nothing stored for a refused reviewer


def test_an_imported_review_with_games_1e999_grades_nothing_and_says_why(
    capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path
) -> None:
    assert run(capsys, data_dir, "eval", "--agent", "greedy", "--games", "1", "--seed", "2")[0] == 0
    assert run(capsys, data_dir, "review", "1", "--reviewer", "expectimax", "--depth", "1")[0] == 0
    exported = tmp_path / "games.jsonl"
    assert run(capsys, data_dir, "games", "export", "1", "--out", str(exported))[0] == 0
    text = exported.read_text()
    assert '\\"games\\":10' in text
    exported.write_text(text.replace('\\"games\\":10', '\\"games\\":1e999'))
    other = tmp_path / "other"
    code, _, err = run(capsys, other, "games", "import", str(exported))
    assert code == 0, err  # the file is sound; its reviewer's calibration is that reviewer's business
    with GameStore.open(other) as store:
        [info] = store.list_reviews(1)
        with pytest.raises(ValueError, match="calibration games must be a finite number") as e:
            review_by_key(store, 1, info.key)
        assert "\n" not in str(e.value) and "cannot be graded" in str(e.value)
    # imitation's filter reads the review: its grades are unknown, so it keeps every move (no crash)
    code, _, err = run(
        capsys, other, "train", "--agent", "imitation", "--skip-graded", "mistake", "--episodes", "1"
    )
    assert code == 0, err
    assert "OverflowError" not in err


def test_cli_commands_that_write_leave_the_package_untouched(
    capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path
) -> None:
    before = _package_hashes()
    assert len(before) > 100 and "resources/review_calibration.json" in before
    steps = [
        ("train", "--agent", "td-afterstate", "--episodes", "3", "--seed", "1"),
        ("eval", "--agent", "greedy", "--games", "2", "--seed", "5"),
        ("review", "--calibrate", "--reviewer", "greedy", "--games", "2"),
        ("review", "--calibrate", "--reviewer", "expectimax", "--depth", "1", "--games", "2"),
        ("review", "1", "--reviewer", "expectimax", "--depth", "1"),
        ("review", "--source", "evaluation", "--reviewer", "greedy"),
        ("games", "export", "1", "2", "--out", str(tmp_path / "out.jsonl")),
        ("progress",),
    ]
    for argv in steps:
        code, _, err = run(capsys, data_dir, *argv)
        assert code == 0, (argv, err)
    with GameStore.open(data_dir) as store:
        checkpoint = store.last_checkpoint(store.list_runs()[0].id)
    assert checkpoint is not None
    # a checkpoint calibrates too (its file in the data dir, named by the agent and the file's content)
    code, _, err = run(
        capsys, data_dir, "review", "--calibrate", "--reviewer", str(checkpoint), "--games", "2"
    )
    assert code == 0, err
    assert any(p.name.startswith("td-afterstate-") for p in _calibration_files(data_dir))
    code, _, err = run(capsys, data_dir, "review", "2", "--reviewer", str(checkpoint))
    assert code == 0, err
    assert run(capsys, tmp_path / "other", "games", "import", str(tmp_path / "out.jsonl"))[0] == 0
    assert _package_hashes() == before
