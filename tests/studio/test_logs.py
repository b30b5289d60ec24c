"""The studio's log (studio.logs): DATA/logs/studio.log from the window, the commands and the training
children; tidy warnings on a command's stderr; the tail the Show log dialog reads."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents import registry
from agents.base import Budget
from studio import logs
from studio.cli import main as cli_main
from studio.logs import LOG_NAME, STDERR_REPEATS, log_path, read_tail, setup_logging
from studio.services.runs import RunRequest
from studio.services.training_process import TrainingProcess
from tests.studio.train_fakes import FakeLearner

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _own_handlers_removed() -> Iterator[None]:
    """Each test starts and ends with none of studio.logs' handlers on the root logger."""
    _remove_ours()
    yield
    _remove_ours()


def _remove_ours() -> None:
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_studio_handler", False)]:
        root.removeHandler(handler)
        handler.close()


def _ours() -> list[logging.Handler]:
    return [h for h in logging.getLogger().handlers if getattr(h, "_studio_handler", False)]


def test_records_of_our_packages_from_info_of_other_libraries_from_warning(data_dir: Path) -> None:
    path = setup_logging(data_dir, "gui", stderr=False)
    assert path == data_dir / "logs" / "studio.log"
    logging.getLogger("engine.store.db").info("opened the store")
    logging.getLogger("agents.ntuple").debug("not kept: debug")
    logging.getLogger("numba.core").info("not kept: another library's info")
    logging.getLogger("numba.core").warning("another library's warning")
    lines = path.read_text().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].endswith(f" INFO    [gui {os.getpid()}] engine.store.db: opened the store")
    assert lines[1].endswith("] numba.core: another library's warning")


def test_a_second_setup_replaces_its_handlers_and_leaves_others_alone(tmp_path: Path, caplog) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    setup_logging(first, "cli train")
    setup_logging(second, "gui")
    assert len(_ours()) == 2  # one file, one stderr: the first pair is gone
    assert caplog.handler in logging.getLogger().handlers  # pytest's own stays
    logging.getLogger("studio.x").warning("where does this go")
    assert "where does this go" in log_path(second).read_text()
    assert not log_path(first).exists()  # opened at its first record, which never came
    assert [r.getMessage() for r in caplog.records] == ["where does this go"]


def test_warnings_on_stderr_are_one_tidy_line_each_and_repeats_stop(data_dir: Path, monkeypatch) -> None:
    path = setup_logging(data_dir, "cli eval", stderr=True)
    err = io.StringIO()
    # Set after the setup: the handler writes to the stderr of the moment (rich's progress line swaps it).
    monkeypatch.setattr(sys, "stderr", err)
    log = logging.getLogger("studio.commands.eval")
    log.info("not on stderr: info")
    for i in range(STDERR_REPEATS + 2):
        log.warning("game %d was slow", i)
    try:
        raise OSError(28, "No space left on device")
    except OSError:
        log.exception("cannot write the checkpoint\nof run 3")
    assert err.getvalue().splitlines() == [
        "warning: game 0 was slow",
        "warning: game 1 was slow",
        f"warning: game 2 was slow (further ones only in {path})",
        "error: cannot write the checkpoint of run 3: OSError: [Errno 28] No space left on device "
        f"(traceback in {path})",
    ]
    text = path.read_text()
    assert "game 4 was slow" in text and "info" in text  # the file keeps everything
    assert "Traceback (most recent call last)" in text and 'raise OSError(28, "No space left' in text


def test_a_process_writes_at_most_so_many_lines_to_stderr(data_dir: Path, monkeypatch) -> None:
    setup_logging(data_dir, "cli sweep", stderr=True)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    for i in range(logs.STDERR_MAX + 10):
        logging.getLogger(f"studio.m{i}").warning("trouble")
    lines = err.getvalue().splitlines()
    assert len(lines) == logs.STDERR_MAX
    assert lines[-1].startswith("warning: trouble (further ones only in ")


def test_an_unwritable_logs_folder_leaves_stderr_only_and_says_so(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "logs").write_text("a file where the folder should be")
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    assert setup_logging(tmp_path, "gui") is None
    assert len(_ours()) == 1
    assert err.getvalue().startswith(f"warning: cannot write the log in {tmp_path / 'logs'}: ")


def test_the_tail_is_whole_lines_and_reaches_into_the_rotated_copy(data_dir: Path) -> None:
    assert read_tail(data_dir) == ""
    folder = data_dir / "logs"
    folder.mkdir()
    (folder / f"{LOG_NAME}.1").write_text("".join(f"old {i}\n" for i in range(100)))
    (folder / LOG_NAME).write_text("new 0\nnew 1\n")
    assert read_tail(data_dir, 10_000).splitlines() == [f"old {i}" for i in range(100)] + ["new 0", "new 1"]
    # 30 bytes: the 12 of the new file, then the end of the old one, cut to whole lines
    assert read_tail(data_dir, 30).splitlines() == ["old 98", "old 99", "new 0", "new 1"]
    assert read_tail(data_dir, 8).splitlines() == ["new 1"]


def test_processes_writing_at_once_through_rotations_lose_no_record(tmp_path: Path) -> None:
    """Two processes, 400 records each, into a log rotating every 8 kB: every record is in one of the
    files exactly once, and each line is one whole record."""
    code = textwrap.dedent(
        """
        import logging, sys
        from studio import logs
        logs.MAX_BYTES, logs.BACKUPS = 8_000, 100
        logs.setup_logging(sys.argv[1], sys.argv[2], stderr=False)
        log = logging.getLogger("studio.stress")
        for i in range(400):
            log.info("%s record %d", sys.argv[2], i)
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path), name], cwd=REPO) for name in ("a", "b")
    ]
    assert [p.wait(120) for p in procs] == [0, 0]
    files = sorted((tmp_path / "logs").glob(f"{LOG_NAME}*"))
    assert len(files) > 5  # it did rotate, many times
    records = [line.split(": ", 1)[1] for f in files for line in f.read_text().splitlines()]
    assert sorted(records) == sorted(f"{name} record {i}" for name in ("a", "b") for i in range(400))


def test_a_command_logs_to_its_data_dir_and_its_errors_stay_one_line(
    data_dir: Path, tmp_path, capsys
) -> None:
    assert cli_main(["--data-dir", str(data_dir), "runs", "list"]) == 0
    logging.getLogger("studio.commands.runs").warning("said after the command")
    assert "[cli runs " in log_path(data_dir).read_text()
    # A data dir the command cannot use: the command's own one line, exit 2, no traceback, no log file.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    capsys.readouterr()
    assert cli_main(["--data-dir", str(blocker), "runs", "list"]) == 2
    err = capsys.readouterr().err
    assert err == f"python main.py runs: error: data dir {blocker} is a file, not a directory\n"


def test_the_commands_import_no_qt_for_their_log() -> None:
    code = (
        "import sys; from studio.cli import main; main(['runs', 'list']); "
        "assert 'PySide6' not in sys.modules, 'Qt imported'; import logging; "
        "print(type(logging.getLogger().handlers[0]).__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "ConcurrentRotatingFileHandler"


class LoggingLearner(FakeLearner):
    """The fake learner, saying a word in the log as it is built (in the training child)."""

    name = "logging_learner"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        logging.getLogger("agents.logging_learner").warning("built in the child")


def test_a_training_child_writes_to_the_windows_log(data_dir: Path, monkeypatch) -> None:
    from engine.store import GameStore

    learner = {"logging_learner": f"{__name__}:LoggingLearner"}
    monkeypatch.setattr(registry, "_default", registry.default_registry().with_agents(learner))
    with GameStore.open(data_dir) as store:
        request = RunRequest(
            agent="logging_learner", target=registry.target_of("logging_learner"), budget=Budget(episodes=1)
        )
        proc = TrainingProcess(request, store.path)
        kinds = [type(m).__name__ for m in proc.messages()]
        assert proc.wait(60) == 0, kinds
    lines = [line for line in log_path(data_dir).read_text().splitlines() if "built in the child" in line]
    assert len(lines) == 1, lines
    assert f"WARNING [train child {proc.pid}] agents.logging_learner: built in the child" in lines[0]
