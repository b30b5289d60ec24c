"""Fuzz: the sweep's doors (grids, points, random ranges, resume flags, kills at random moments of a
trial's life) and exports of stored names.

Properties:

* **grids / points / ranges** (``sweep --grid ... --point ... --random ...`` through the CLI, the run
  itself replaced by a recorder): exit 0 with a plan where no knob given was dropped and every point
  makes a config, or exit 2 with one line and nothing stored. Never a traceback, never a MemoryError
  (a grid is counted before it is built).
* **resume flags** (``sweep --resume ID --workers/--backend/--ray-address``) over a stored sweep of any
  backend: the backend that runs is the one the flags name (``--backend local`` never dials a stored
  address, a new address runs on Ray), or a one-line refusal.
* **kills** (a real sweep's driver and every child killed with SIGKILL after a drawn delay, then
  ``sweep --resume``): every trial finished once, no orphan run, the ranking of an uninterrupted
  sweep. Each case starts processes for some seconds, so this door runs ``FUZZ_EXAMPLES // 400`` cases
  (at least one).
* **stored names** (a run's agent, a game's agent and checkpoint set to hostile text straight in the
  file): ``runs export --tensorboard`` writes only under its destination, ``games list --json`` and
  ``games export`` write strict JSON (no NaN / Infinity), and the studio imports its own export.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.base import MetricEvent
from agents.registry import get_agent_class
from engine import Rules
from engine.store import GameRecorder, GameStore
from studio.cli import main
from studio.commands import sweep as sweep_command
from studio.services import sweep as sweep_service
from studio.services.sweep import SweepFinished, SweepRequest, plan_trials
from tests.fuzz.common import FUZZ, count
from tests.studio import test_sweeps_survive_kills_and_bad_input as kills

NTUPLE = get_agent_class("ntuple").config_cls
KNOBS = [s.name for s in NTUPLE.specs()]
VALUES = ["0.1", "0.5", "1", "2", "0", "-1", "1e-4", "1e9", "nan", "inf", "true", "false", "4x4", "2x6+2x4",
          "8;16", "abc", "", " ", "1,2", "0.1,0.2,0.3", ",".join(str(i / 100) for i in range(1, 60))]  # fmt: skip


def _strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise AssertionError(f"not JSON: a bare {name}")

    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------------ grids, points and ranges


@st.composite
def knob_texts(draw: st.DrawFn, sep: str = "=") -> str:
    name = draw(st.one_of(st.sampled_from(KNOBS), st.sampled_from(["lr", "lam", "nope", "", "lr "])))
    values = draw(st.lists(st.sampled_from(VALUES), min_size=0, max_size=4))
    return f"{name}{sep}{','.join(values)}" if draw(st.integers(0, 9)) else draw(st.text(max_size=10))


@st.composite
def sweep_lines(draw: st.DrawFn) -> list[str]:
    argv = ["sweep", "--agent", "ntuple", "--episodes", draw(st.sampled_from(["5", "0", "-1", "1e9"]))]
    kind = draw(st.integers(0, 2))
    if kind == 0:
        argv += ["--grid", *draw(st.lists(knob_texts(), min_size=1, max_size=14))]
    elif kind == 1:
        for _ in range(draw(st.integers(1, 4))):
            argv += ["--point", " ".join(draw(st.lists(knob_texts(), max_size=3)))]
    else:
        ranges = draw(st.lists(st.sampled_from(["lr=0.01:1:log", "lam=0:0.9", "lr=0.1:0.5", "restart=0:1",
                                                "lr=1:0.1", "tc=0:1", "lr=0:1:log"]), min_size=1, max_size=3))  # fmt: skip
        argv += ["--random", *ranges, "--samples", draw(st.sampled_from(["1", "3", "1000", "1001"]))]
        if draw(st.booleans()):
            argv += ["--grid", draw(knob_texts())]
    if draw(st.booleans()):
        argv += ["--seeds", draw(st.sampled_from(["1", "2", "100", "101", "0"]))]
    return argv


@FUZZ
@given(argv=sweep_lines())
def test_any_grid_point_or_range_is_planned_whole_or_refused_in_one_line(argv, monkeypatch, capsys):
    count("sweep grids")
    planned: list[SweepRequest] = []

    def recorder(request: SweepRequest | None, store: Any, **kw: Any):
        assert request is not None
        trials = plan_trials(request)  # what the real run does first; SweepError refuses
        planned.append(request)
        yield SweepFinished(0, total=len(trials), status="finished")

    monkeypatch.setattr(sweep_command, "run_sweep", recorder)
    monkeypatch.setattr(sweep_command, "rank_sweep", lambda store, sid: ("eval_score", []))
    with tempfile.TemporaryDirectory(prefix="fuzz-sweep-") as tmp:
        try:
            code = main(["--data-dir", tmp, *argv])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        assert code in (0, 2), (argv, code, err)
        if code == 2:
            assert len([ln for ln in err.splitlines() if ln.strip()]) >= 1
            with GameStore.open(tmp) as store:
                assert store.list_sweeps() == [] and store.list_runs() == []
            return
    (request,) = planned
    # no knob given was dropped: every --grid name is in the grid (a repeat was refused above)
    if "--grid" in argv:
        at = argv.index("--grid") + 1
        given_names = []
        for text in argv[at:]:
            if text.startswith("--"):
                break
            given_names.append(text.partition("=")[0].strip().replace("-", "_"))
        assert sorted(request.grid) == sorted(given_names)
    trials = plan_trials(request)
    assert 1 <= len(trials) <= sweep_service.MAX_TRIALS


# -------------------------------------------------------------------------- resume flags


@FUZZ
@given(
    stored_backend=st.sampled_from(["local", "ray"]),
    stored_address=st.sampled_from([None, "10.0.0.1:6379", "127.0.0.1:9"]),
    workers=st.sampled_from([None, "1", "2", "0", "-3", "x", "65"]),
    backend=st.sampled_from([None, "local", "ray", "tune", ""]),
    address=st.sampled_from([None, "10.0.0.2:1", "", " ", "nowhere"]),
)
def test_resume_flags_decide_where_a_sweep_runs(
    stored_backend, stored_address, workers, backend, address, monkeypatch, capsys
):
    count("sweep resume flags")
    pytest.importorskip("ray.tune")
    ran: list[str] = []

    def backend_of(name: str):
        def fake(jobs, store, n, stop):
            ran.append(name)
            return iter(())

        return fake

    request = kills.tiny(grid={"lr": (0.1,)}, seeds=1, backend=stored_backend, ray_address=stored_address)
    monkeypatch.setattr(sweep_service, "_backend", backend_of)
    with tempfile.TemporaryDirectory(prefix="fuzz-resume-") as tmp:
        with GameStore.open(tmp) as store:
            sid = store.create_sweep("ntuple", request.spec(), plan_trials(request))
            store.set_sweep_status(sid, "stopped")
        argv = ["--data-dir", tmp, "sweep", "--resume", str(sid)]
        argv += [] if workers is None else ["--workers", workers]
        argv += [] if backend is None else ["--backend", backend]
        argv += [] if address is None else ["--ray-address", address]
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err and code in (0, 2), (argv, code, err)
        if code == 2:
            assert ran == []
            return
    (name,) = ran
    if backend == "local":
        assert name == "local"
    elif address is not None or backend == "ray" or stored_address or stored_backend == "ray":
        assert name == "ray"
    else:
        assert name == "local"


# ------------------------------------------------------------------------------------ kills


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    return kills.run_uninterrupted(tmp_path_factory.mktemp("whole"))


@settings(FUZZ, max_examples=max(1, FUZZ.max_examples // 400))
@given(after_s=st.floats(0.0, 20.0))
def test_a_kill_at_a_random_moment_then_resume_ends_as_an_uninterrupted_sweep(after_s, uninterrupted):
    count("sweep kills")
    with tempfile.TemporaryDirectory(prefix="fuzz-kill-") as tmp:
        extra = ["--checkpoint-every", "0.3"] if after_s % 2 < 1 else []
        ranking = kills._killed_then_resumed(Path(tmp), float(after_s), extra)
    assert ranking in ([], uninterrupted)


# ---------------------------------------------------------------------------------- stored names

# fmt: off
HOSTILE_NAMES = st.one_of(
    st.sampled_from(
        [
            "../../../../tmp/x",
            "..",
            ".",
            "",
            "/etc/passwd",
            "a/b",
            "C:\\x",
            "~",
            "-rf",
            ".hidden",
            "x" * 400,
            "é✓",
            "run-1",
            "nul\x00x",
            "\n",
            "a\\..\\b",
        ]
    ),
    st.text(max_size=30),
)
# fmt: on
TIMES = st.sampled_from([1.0, 1.7e9, 9e999, -9e999, -1.0, 1e300])  # NaN is stored as NULL: refused


@FUZZ
@given(agent=HOSTILE_NAMES, game_agent=HOSTILE_NAMES, checkpoint=HOSTILE_NAMES, started=TIMES)
def test_exports_of_hostile_stored_names_stay_in_their_folder_and_are_json(
    agent, game_agent, checkpoint, started, capsys, monkeypatch
):
    count("stored names")
    # the working directory goes back before the folder is removed: the next example (and hypothesis,
    # which resolves module paths against it) must not start in a deleted directory
    with tempfile.TemporaryDirectory(prefix="fuzz-names-") as tmp, monkeypatch.context() as mp:
        root = Path(tmp)
        data = root / "data"
        mp.chdir(root)
        with GameStore.open(data) as store:
            rid = store.create_run("ntuple", {}, Rules(), {"episodes": 1})
            store.log_metrics(rid, [MetricEvent("episode", 1, 10, 0.1, {"score": 12.0}, 0.5)])
            rec = GameRecorder(store, rules=Rules(), seed=1)
            for _ in range(3):
                rec.play(rec.game.legal_moves()[0])
            rec.close()
            path = store.path
        con = sqlite3.connect(path)
        con.execute("UPDATE runs SET agent = ? WHERE id = ?", (agent, rid))
        con.execute(
            "UPDATE games SET agent = ?, checkpoint = ?, started = ?, players = ? WHERE id = ?",
            (
                game_agent,
                checkpoint,
                started,
                json.dumps([{"kind": "agent", "agent": game_agent, "checkpoint": checkpoint}]),
                rec.game_id,
            ),
        )
        con.commit()
        con.close()
        before = set(root.rglob("*"))
        dest = root / "out" / "tb"
        if _have_tensorboard():
            code = main(["--data-dir", str(data), "runs", "export", str(rid), str(dest), "--tensorboard"])
            out, err = capsys.readouterr()
            assert code in (0, 2) and "Traceback" not in out + err, err
            new = set(root.rglob("*")) - before
            outside = [p for p in new if not (p.is_relative_to(dest) or p.is_relative_to(data))]
            assert outside == [p for p in outside if p in (root / "out",)], outside
        assert main(["--data-dir", str(data), "games", "list", "--json"]) == 0
        for line in capsys.readouterr().out.splitlines():
            _strict(line)
        export = root / "games.jsonl"
        code = main(["--data-dir", str(data), "games", "export", "--all", "--out", str(export)])
        capsys.readouterr()
        assert code == 0
        for line in export.read_text().splitlines():
            _strict(line)
        code = main(["--data-dir", str(data), "games", "import", str(export)])
        out, err = capsys.readouterr()
        # the studio takes its own export back (a checkpoint name it refuses is refused in one line)
        assert code in (0, 2) and "Traceback" not in out + err, err
        if code == 2:
            assert len(err.strip().splitlines()) == 1
    shutil.rmtree(root, ignore_errors=True)


def _have_tensorboard() -> bool:
    try:
        import tensorboard  # noqa: F401
    except ImportError:
        return False
    return "FUZZ_NO_TENSORBOARD" not in os.environ
