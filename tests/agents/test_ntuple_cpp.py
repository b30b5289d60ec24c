"""The C++ yardstick's pieces that need no C++ compiler: weight export, output parsing, the patch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.ntuple import LAYOUTS
from agents.ntuple import cpp_reference as cpp


def cpp_index(board_cells: list[int], pattern: tuple[int, ...]) -> int:
    """The C++ program's index of a pattern, the slow way: cell T sits in nibble 15 - T of its board,
    and pext packs the mask's nibbles from the lowest up (so the pattern's last cell comes first)."""
    b = sum(e << (4 * (15 - t)) for t, e in enumerate(board_cells))
    out, k = 0, 0
    for nib in range(16):  # lowest nibble first, as pext
        t = 15 - nib
        if t in pattern:
            out |= ((b >> (4 * nib)) & 0xF) << (4 * k)
            k += 1
    return out


def test_exported_weights_are_read_by_the_cpp_index(tmp_path):
    tuples = LAYOUTS["4x6"]
    assert tuple(tuples) == cpp.CPP_4X6
    size = 16**6
    rng = np.random.default_rng(0)
    w = rng.standard_normal(4 * size).astype(np.float32)
    path = tmp_path / "nw4x6" / "weights.bin"
    cpp.export_weights(w, tuples, path)
    theirs = np.fromfile(path, dtype=np.float32)
    assert theirs.shape == (4 * size,)
    for _ in range(200):
        cells = [int(x) for x in rng.integers(0, 16, 16)]
        for t, pattern in enumerate(tuples):
            ours = sum(cells[c] << (4 * i) for i, c in enumerate(pattern))  # the studio's index
            assert theirs[t * size + cpp_index(cells, pattern)] == w[t * size + ours]
    with pytest.raises(ValueError, match="4x6"):
        cpp.export_weights(w, LAYOUTS["5x6"], tmp_path / "x.bin")


def test_parse_eval_reads_the_agent_summary():
    text = (
        "progress: 10/10    thread: #0\navg:    40000    max:   100000\n"
        "avg:    52260    max:    90000\nm/s:    70000    elapsed: 1s\n"
        "   4096   62.50%\n   2048   87.50%\n   1024  100.00%\n\nbest game: (90000)\n"
    )
    got = cpp.parse_eval(text)
    assert got == {"mean_score": 52260.0, "4096": 0.625, "2048": 0.875, "1024": 1.0}


def test_the_patch_fits_a_checkout_shaped_source(tmp_path):
    # every edit needs its anchor: a source without them is refused with a clear error
    src = tmp_path / "repo" / "src" / "network"
    src.mkdir(parents=True)
    (src / "learning.h").write_text("nothing to patch\n")
    assert cpp.is_checkout(tmp_path / "repo")
    (tmp_path / "repo" / "src" / "train.h").write_text("")
    (tmp_path / "repo" / "src" / "agent.h").write_text("")
    with pytest.raises(ValueError, match="not the one the patch knows"):
        cpp.build(tmp_path / "repo", tmp_path / "build")
    with pytest.raises(ValueError, match="not a checkout"):
        cpp.build(tmp_path / "nowhere", tmp_path / "build2")


CPP_REPO = Path("/work/cpp/2048-tdl")


@pytest.mark.skipif(not cpp.is_checkout(CPP_REPO), reason="no checkout of ziap/2048-tdl here")
def test_the_measuring_copy_builds_and_counts(tmp_path):
    binary = cpp.build(CPP_REPO, tmp_path / "build")
    run = cpp.finish(
        cpp.start(binary, list(cpp.TRAIN_ARGS), tmp_path / "run", {"TDL_MAX_MOVES": "20000"}, None)
    )
    assert 20_000 <= run.moves < 60_000 and run.cpu_seconds > 0
    play = cpp.finish(cpp.start(binary, ["agent", "-d", "0", "-e", "2"], tmp_path / "run", {}, None))
    assert play.moves > 0 and "mean_score" in cpp.parse_eval(play.output)
