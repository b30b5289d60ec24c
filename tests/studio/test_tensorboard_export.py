"""A run's metrics as TensorBoard event files: the service function the Train tab's "Export
TensorBoard…" calls, and ``python main.py runs export ID DIR --tensorboard``; read back with
TensorBoard's own EventAccumulator. Without the optional extra: one clear line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from engine.store import GameStore
from studio.cli import main
from studio.services.runs import TensorBoardMissing, export_run_tensorboard, write_tensorboard
from tests.agents.fake_learner import registered, train_argv


def _read(directory: Path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(directory), size_guidance={"scalars": 0})
    acc.Reload()
    return acc


def test_scalars_read_back_with_steps_and_training_time(tmp_path: Path) -> None:
    pytest.importorskip("tensorboard")
    cols = {
        "episode": np.array([1, 1, 2, 3]),
        "step": np.array([10, 15, 20, 30]),
        "elapsed": np.array([0.5, 0.75, 1.0, 2.0]),
        "score": np.array([100.0, np.nan, 300.0, 200.0]),
        "loss": np.array([np.nan, 0.5, 0.25, np.nan]),
    }
    path = write_tensorboard(cols, tmp_path / "tb", start_time=1000.0)
    assert path.parent == tmp_path / "tb" and path.name.startswith("events.out.tfevents.")
    acc = _read(tmp_path / "tb")
    assert set(acc.Tags()["scalars"]) == {"episode", "score", "loss"}
    score = acc.Scalars("score")
    assert [(e.step, e.value) for e in score] == [(10, 100.0), (20, 300.0), (30, 200.0)]  # NaN left out
    assert [e.wall_time for e in score] == [1000.5, 1001.0, 1002.0]
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == [(15, 0.5), (20, 0.25)]
    assert [e.value for e in acc.Scalars("episode")] == [1, 1, 2, 3]

    # Exported again: the old file is replaced, not drawn twice.
    again = write_tensorboard(cols, tmp_path / "tb", start_time=1000.0)
    assert list((tmp_path / "tb").iterdir()) == [again]
    assert len(_read(tmp_path / "tb").Scalars("score")) == 3


def _trained_run(data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> int:
    registered(monkeypatch)
    assert main(train_argv(5)) == 0
    capsys.readouterr()
    return 1


def test_a_stored_run_exports_every_metric(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    pytest.importorskip("tensorboard")
    run_id = _trained_run(data_dir, monkeypatch, capsys)
    with GameStore.open(data_dir) as store:
        cols = store.run_metrics(run_id)
        run = store.get_run(run_id)
        path = export_run_tensorboard(store, run_id, tmp_path / "logs")
    assert path.parent == tmp_path / "logs" / f"run-{run_id}-fake-learner"
    acc = _read(path.parent)
    metrics = [k for k in cols if k not in ("step", "elapsed")]
    assert set(acc.Tags()["scalars"]) == {k for k in metrics if np.any(~np.isnan(cols[k]))}
    for k in acc.Tags()["scalars"]:
        keep = ~np.isnan(cols[k].astype(float))
        got = acc.Scalars(k)
        assert [e.step for e in got] == cols["step"][keep].tolist()
        assert np.allclose([e.value for e in got], cols[k][keep].astype(float))
        assert np.allclose([e.wall_time for e in got], run.created + cols["elapsed"][keep], atol=1e-3)


def test_runs_export_tensorboard_on_the_command_line(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    pytest.importorskip("tensorboard")
    run_id = _trained_run(data_dir, monkeypatch, capsys)
    out_dir = tmp_path / "tb"
    assert main(["runs", "export", str(run_id), str(out_dir), "--tensorboard"]) == 0
    out = capsys.readouterr().out
    with GameStore.open(data_dir) as store:
        n = store.get_run(run_id).n_events
    assert out.strip() == (
        f"run {run_id}: {n:,} events written to {out_dir / f'run-{run_id}-fake-learner'} "
        f"(tensorboard --logdir {out_dir})"
    )
    assert "score" in _read(out_dir / f"run-{run_id}-fake-learner").Tags()["scalars"]
    # CSV stays the default
    assert main(["runs", "export", str(run_id), str(tmp_path / "m.csv")]) == 0
    assert (tmp_path / "m.csv").read_text().startswith("episode,step,elapsed")
    # a missing run is one line, exit 2
    assert main(["runs", "export", "99", str(out_dir), "--tensorboard"]) == 2
    assert "99" in capsys.readouterr().err


def test_without_the_extra_one_clear_line(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    run_id = _trained_run(data_dir, monkeypatch, capsys)
    for name in [m for m in sys.modules if m == "tensorboard" or m.startswith("tensorboard.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tensorboard", None)  # import tensorboard -> ImportError
    with pytest.raises(TensorBoardMissing, match=r"pip install -e '\.\[tensorboard\]'"):
        write_tensorboard({"step": np.array([1])}, tmp_path / "x")
    assert main(["runs", "export", str(run_id), str(tmp_path / "tb"), "--tensorboard"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.endswith(
        "error: TensorBoard export needs the optional tensorboard extra: "
        "pip install -e '.[tensorboard]' (or pip install tensorboard)"
    )
    assert not (tmp_path / "tb").exists()  # nothing made before the check
