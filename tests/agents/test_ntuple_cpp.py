"""The C++ yardstick's pieces that need no C++ compiler (weight export, board packing, output parsing, the
patch), and the measuring copy itself where a checkout of it is here."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.ntuple import LAYOUTS, NTupleAgent, NTupleConfig
from agents.ntuple import cpp_reference as cpp
from engine import Game, slide
from engine.fast import pack, unpack


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


def test_boards_are_swapped_into_the_cpp_packing_and_back():
    # the studio keeps the top-left cell in the lowest nibble, the C++ program in the highest
    studio = np.array([0x1, 0x2000000000000000, 0x0123456789ABCDEF], dtype=np.uint64)
    theirs = cpp.swap_packing(studio)
    assert theirs.tolist() == [0x1000000000000000, 0x2, 0xFEDCBA9876543210]
    np.testing.assert_array_equal(cpp.swap_packing(theirs), studio)
    rng = np.random.default_rng(1)
    for _ in range(50):
        cells = [int(x) for x in rng.integers(0, 16, 16)]
        ours = sum(e << (4 * t) for t, e in enumerate(cells))
        assert int(cpp.swap_packing(np.array([ours], dtype=np.uint64))[0]) == sum(
            e << (4 * (15 - t)) for t, e in enumerate(cells)
        )


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
    # the same boards searched by both programs: the same moves (random weights, so no ties; positive,
    # as a trained network's values are: the C++ search counts a max node as worth at least 0)
    agent = NTupleAgent(NTupleConfig(search_depth=2), seed=0)
    agent.weights[:] = np.random.default_rng(2).random(agent.weights.shape[0], dtype=np.float32)
    cpp.export_weights(agent.weights, agent.layout.tuples, tmp_path / "run" / "nw4x6" / "weights.bin")
    game, boards = Game(seed=3), []
    while not game.game_over and len(boards) < 40:
        boards.append(pack(game.board))
        game.step(agent.act(game))
    packed = np.array(boards, dtype=np.uint64)
    seconds, chosen = cpp.search_positions(binary, tmp_path / "run", packed, 1, None)
    assert seconds > 0
    mine = agent.search_positions(packed)
    # where they differ, the two moves tie (a board and its mirror image are worth the same to a
    # network read under all 8 symmetries; the C++ program sums in float32 and breaks ties its way)
    for k in np.nonzero(mine != chosen)[0]:
        values = agent.move_values(Game(board=unpack(int(packed[k]))))
        by_after = {pack(slide(unpack(int(packed[k])), d)[0]): v for d, v in values.items()}
        assert by_after[int(chosen[k])] == pytest.approx(by_after[int(mine[k])], rel=1e-5)
    assert np.mean(mine == chosen) > 0.7
