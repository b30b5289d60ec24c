"""docs/make_learning_curves.py: a stored run's curves drawn by the studio's curves panel to a PNG."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from PySide6.QtGui import QImage

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "make_learning_curves.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_learning_curves", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def script() -> ModuleType:
    return _script()


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir with one n-tuple run of 20,000 moves on the tiny 4x4 layout (about a second)."""
    from studio.cli import main as cli

    data = tmp_path_factory.mktemp("curves-store")
    flags = ["--agent", "ntuple", "--seed", "1", "--steps", "20000", "--log-every", "0", "--layout", "4x4"]
    flags += ["--eval-games", "0", "--keep-checkpoints", "1"]
    assert cli(["--data-dir", str(data), "train", *flags]) == 0
    return data


def test_renders_the_requested_metrics_at_the_requested_size(
    qapp, script: ModuleType, tiny_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "curves.png"
    argv = ["--data-dir", str(tiny_run), "--run", "1", "--metrics", "mean_score,td_error,steps_per_s,lr"]
    assert script.main([*argv, "--size", "900x600", "--title", "Tiny run", "--out", str(out)]) == 0
    image = QImage(str(out))
    assert not image.isNull() and (image.width(), image.height()) == (900, 600)
    said = capsys.readouterr().out
    assert said.startswith(f"wrote {out} (900x600)")
    # The panels drawn name exactly the metrics asked for (the constant learning rate as a line of text).
    assert "Score (Mean score (last 1,000 games))" in said  # the n-tuple run's window, from its settings
    assert "TD error (TD error)" in said and "Speed (Moves/s)" in said
    assert "Max tile" not in said and "Tile rates" not in said
    assert "Learning rate = 1 (constant)" in said


def test_figure_panels_follow_the_agent_or_the_metrics_named(
    qapp, script: ModuleType, tiny_run: Path
) -> None:
    store = script.open_store(str(tiny_run))
    try:
        runs = script.read_runs(store, [1])
    finally:
        store.close()
    default = script.Figure(runs, script.chosen_infos(runs, None))
    chosen = script.Figure(runs, script.chosen_infos(runs, ["td_error", "games"]), x_axis="episode")
    try:
        # No --metrics: the panels the n-tuple agent declares, as the Train tab draws them.
        assert {"Score", "Max tile", "TD error", "Speed"} <= set(default.panels())
        assert chosen.panels() == {"TD error": ["TD error"], "Games": ["Games"]}  # a counter, asked for
        assert chosen.curves.x_axis == "episode" and "Episode (games)" in chosen.captionLabel.text()
    finally:
        for fig in (default, chosen):
            fig.close()
            fig.deleteLater()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "7"], "no run 7 in"),
        (["--run", "1", "--metrics", "mean_score,nope"], "unknown metric 'nope'"),
        (["--run", "1", "--metrics", "eval_score"], "metric 'eval_score' has no values in run 1"),
    ],
)
def test_bad_run_or_metric_is_a_one_line_error(
    qapp,
    script: ModuleType,
    tiny_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    out = tmp_path / "x.png"
    assert script.main(["--data-dir", str(tiny_run), *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("make_learning_curves.py: error: ") and message in err
    assert not out.exists()


def test_missing_data_dir_is_a_one_line_error_and_creates_nothing(
    qapp, script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-dir"
    assert script.main(["--data-dir", str(missing), "--run", "1", "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
    assert not missing.exists()
