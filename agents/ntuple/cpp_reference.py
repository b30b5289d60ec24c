"""The C++ trainer ziap/2048-tdl as a yardstick: build a measuring copy of it, train and play with it.

Used by ``python main.py bench ntuple -o vs_cpp=PATH`` (speed, side by side) and
``scripts/ab_cpp_ntuple.py`` (strength at equal moves). Nothing here prints.

Why a patched copy: the C++ trainer's progress lines count only the first game of every restart
chain (``stat.add`` runs before the restarts from mid-game), so "moves" and "m/s" there leave out most
of the moves it actually learns from (3x or more once games are long). The copy has measurement-only
changes: a counter of every move trained, printed at the end; an optional stop once
``TDL_MAX_MOVES`` moves are made or ``TDL_MAX_CPU_SECONDS`` of process CPU time are spent (both
checked between games, so a run overshoots by at most one restart chain); and a counter of the moves
its ``agent`` command plays. The learning and search code is untouched. Needs g++ with BMI2 (any
x86-64 from 2013 on); it is built with ``-march=native``, as its makefile does.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents.threads import cpu_model  # noqa: F401  (named with the figures: cpp_reference.cpu_model)

#: (file, [(text to find, text to put instead)]) of the measuring copy
PATCHES: dict[str, list[tuple[str, str]]] = {
    "src/network/learning.h": [
        (
            '#include "tuplenet.h"\n',
            '#include "tuplenet.h"\n#include <atomic>\n#include <cstdlib>\n#include <ctime>\n'
            "inline std::atomic<unsigned long long> g_all_moves{0};\n",
        ),
        (
            "    for (auto i = 1u; i <= n; i++) {\n",
            '    static const unsigned long long limit = getenv("TDL_MAX_MOVES") '
            '? std::stoull(getenv("TDL_MAX_MOVES")) : 0ull;\n'
            '    static const double cpu_limit = getenv("TDL_MAX_CPU_SECONDS") '
            '? std::stod(getenv("TDL_MAX_CPU_SECONDS")) : 0.0;\n'
            "    for (auto i = 1u; i <= n; i++) {\n"
            "      if (limit && g_all_moves >= limit) break;\n"
            "      if (cpu_limit > 0 && double(std::clock()) >= cpu_limit * CLOCKS_PER_SEC) break;\n",
        ),
        (
            "          update_stat = false;\n        }\n      }\n",
            "          update_stat = false;\n        }\n      }\n      g_all_moves += moves;\n",
        ),
    ],
    "src/train.h": [
        (
            "  result.print();\n",
            '  result.print();\n  std::cout << "all moves (restart segments included): " '
            '<< g_all_moves.load() << "\\n";\n'
            '  std::cout << "training cpu seconds: " << std::setprecision(6) << double(std::clock()) / CLOCKS_PER_SEC << "\\n";\n',
        )
    ],
    "src/agent.h": [
        (
            "  STRUCTURE::load(FILE_NAME);\n",
            "  STRUCTURE::load(FILE_NAME);\n  const double t_loaded = double(std::clock()) / CLOCKS_PER_SEC;\n",
        ),
        (
            "namespace agent {\n",
            "#include <atomic>\n#include <ctime>\n#include <fstream>\n#include <vector>\n"
            "inline std::atomic<unsigned long long> g_play_moves{0};\n\nnamespace agent {\n",
        ),
        (
            # TDL_POSITIONS: search these boards (uint64, its packing) once each with one searcher, as a
            # game's moves are searched; write the chosen afterstates to TDL_POSITIONS_OUT
            "\n  if (gui) {\n",
            '\n  if (getenv("TDL_POSITIONS")) {\n'
            '    std::ifstream fin(getenv("TDL_POSITIONS"), std::ios::binary);\n'
            "    std::vector<board::t> pos;\n"
            "    board::t x;\n"
            "    while (fin.read((char *)&x, sizeof x)) pos.push_back(x);\n"
            "    std::vector<board::t> chosen(pos.size());\n"
            "    search<STRUCTURE> model(depth);\n"
            "    const double t0 = double(std::clock()) / CLOCKS_PER_SEC;\n"
            "    for (size_t i = 0; i < pos.size(); i++) chosen[i] = model.suggest_move(pos[i]).board;\n"
            "    const double t1 = double(std::clock()) / CLOCKS_PER_SEC;\n"
            '    std::ofstream fout(getenv("TDL_POSITIONS_OUT"), std::ios::binary);\n'
            "    fout.write((const char *)chosen.data(), sizeof(board::t) * chosen.size());\n"
            '    std::cout << "positions searched: " << pos.size() << "\\n";\n'
            '    std::cout << "search cpu seconds: " << std::setprecision(6) << t1 - t0 << "\\n";\n'
            "    return 0;\n"
            "  }\n\n  if (gui) {\n",
        ),
        (
            "        result.add(b, score, move_cnt);\n",
            "        result.add(b, score, move_cnt);\n        g_play_moves += move_cnt;\n",
        ),
        (
            "  delete[] results;\n",
            '  delete[] results;\n  std::cout << "all moves played: " << g_play_moves.load() << "\\n";\n'
            '  std::cout << "play cpu seconds: " << std::setprecision(6) << double(std::clock()) / CLOCKS_PER_SEC - t_loaded << "\\n";\n',
        ),
    ],
}

#: the C++ README's training settings (alpha 1.0 with TC, lambda 0.5, restarts), as the studio's defaults
TRAIN_ARGS = ("train", "-e", "100000", "-a", "1.0", "-l", "0.5", "-c", "-r", "-o")


def is_checkout(repo: Path) -> bool:
    return (Path(repo) / "src" / "network" / "learning.h").exists()


def build(repo: Path, work: Path) -> Path:
    """Copy ``repo``'s sources to ``work``, apply :data:`PATCHES`, compile (4x6 network); the binary.

    ValueError when ``repo`` is not a checkout of the version the patches know; CalledProcessError
    (with g++'s output) when it does not compile."""
    repo, work = Path(repo), Path(work)
    if not is_checkout(repo):
        raise ValueError(f"{repo} is not a checkout of ziap/2048-tdl (no src/network/learning.h)")
    src = work / "src"
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(repo / "src", src)
    for name, edits in PATCHES.items():
        path = work / name
        text = path.read_text()
        for old, new in edits:
            if old not in text:
                raise ValueError(f"{name}: this version of the C++ trainer is not the one the patch knows")
            text = text.replace(old, new, 1)
        path.write_text(text)
    binary = work / "2048"
    flags = ["-O3", "-march=native", "-std=c++17", "-mbmi", "-mbmi2", "-pthread"]
    defines = ["-DSTRUCTURE=nw4x6", '-DFILE_NAME="nw4x6/weights.bin"', "-DGUI=false"]
    subprocess.run(
        ["g++", *defines, *flags, "-o", str(binary), str(src / "2048.cpp")],
        check=True,
        capture_output=True,
        text=True,
    )
    return binary


@dataclass
class CppRun:
    """What one run of the measuring copy did: moves (all of them) and its CPU seconds."""

    moves: int
    cpu_seconds: float
    output: str

    @property
    def moves_per_cpu_s(self) -> float:
        return self.moves / self.cpu_seconds if self.cpu_seconds > 0 else 0.0


def pinned(cmd: list[str], core: int | None) -> list[str]:
    """``cmd`` on CPU ``core`` alone (``taskset``), or as it is when ``core`` is None or there is no taskset."""
    if core is None or shutil.which("taskset") is None:
        return cmd
    return ["taskset", "-c", str(core), *cmd]


def start(
    binary: Path, args: list[str], cwd: Path, env: dict[str, str], core: int | None
) -> subprocess.Popen[str]:
    """Start the binary (``train`` or ``agent``) in ``cwd``, whose ``nw4x6/`` holds its weights."""
    (Path(cwd) / "nw4x6").mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        pinned([str(binary), *args], core),
        cwd=cwd,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(proc: subprocess.Popen[str]) -> CppRun:
    """Wait for a run started by :func:`start`; its moves and CPU time (RuntimeError if it failed)."""
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)  # reaped here for its CPU time
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise RuntimeError(f"the C++ program failed (exit {proc.returncode}): {out[-300:]}")
    m = re.search(r"all moves \(restart segments included\): (\d+)", out) or re.search(
        r"all moves played: (\d+)", out
    )
    if m is None:
        raise RuntimeError(f"the C++ program printed no move count: {out[-300:]}")
    # the CPU time of the training or the play alone: before the weights are written out (training),
    # after they are read in (play)
    t = re.search(r"(?:training|play) cpu seconds: ([\d.e+-]+)", out)
    return CppRun(int(m.group(1)), float(t.group(1)) if t else usage.ru_utime + usage.ru_stime, out)


def parse_eval(text: str) -> dict[str, float]:
    """Mean score and tile rates from the ``agent`` command's final summary."""
    final = text[text.rindex("avg:") :]
    m = re.search(r"avg:\s+(\d+)", final)
    if m is None:
        raise ValueError("no mean score in the C++ agent's output")
    out: dict[str, float] = {"mean_score": float(m.group(1))}
    for tile, pct in re.findall(r"^\s+(\d+)\s+([\d.]+)%$", final, flags=re.M):
        out[tile] = float(pct) / 100.0
    return out


def swap_packing(boards: np.ndarray) -> np.ndarray:
    """Packed boards from the studio's packing to the C++ program's, or back: the studio keeps cell
    ``T`` (row-major) in nibble ``T``, the C++ program in nibble ``15 - T``, so the 16 nibbles reversed."""
    b = np.ascontiguousarray(boards, dtype=np.uint64).byteswap()  # bytes reversed: 8 nibble pairs
    lo, hi = b & np.uint64(0x0F0F0F0F0F0F0F0F), (b >> np.uint64(4)) & np.uint64(0x0F0F0F0F0F0F0F0F)
    out: np.ndarray = (lo << np.uint64(4)) | hi  # and the two nibbles of each byte swapped
    return out


def search_positions(
    binary: Path, cwd: Path, boards: np.ndarray, depth: int, core: int | None
) -> tuple[float, np.ndarray]:
    """The C++ ``agent -d depth`` searching ``boards`` (studio packing) one after another with one
    searcher (the measuring copy's ``TDL_POSITIONS`` mode): its CPU seconds for the searches alone,
    and the afterstate it chose from each (studio packing)."""
    cwd = Path(cwd)
    cwd.mkdir(parents=True, exist_ok=True)
    swap_packing(boards).tofile(cwd / "positions.bin")
    env = {"TDL_POSITIONS": str(cwd / "positions.bin"), "TDL_POSITIONS_OUT": str(cwd / "chosen.bin")}
    proc = start(binary, ["agent", "-d", str(depth)], cwd, env, core)
    assert proc.stdout is not None
    out = proc.stdout.read()
    if proc.wait():
        raise RuntimeError(f"the C++ program failed (exit {proc.returncode}): {out[-300:]}")
    m = re.search(r"positions searched: (\d+)", out)
    t = re.search(r"search cpu seconds: ([\d.e+-]+)", out)
    if m is None or t is None or int(m.group(1)) != len(boards):
        raise RuntimeError(f"the C++ program did not search the positions: {out[-300:]}")
    return float(t.group(1)), swap_packing(np.fromfile(cwd / "chosen.bin", dtype=np.uint64))


#: the C++ trainer's 4x6 network (``nw4x6`` in its tuplenet.h): the studio's "4x6" tuples, same order
CPP_4X6 = ((0, 1, 2, 3, 4, 5), (4, 5, 6, 7, 8, 9), (0, 1, 2, 4, 5, 6), (4, 5, 6, 8, 9, 10))


def cpp_index_order(n: int) -> np.ndarray:
    """``perm`` with ``cpp_table[perm] = studio_table`` for a tuple of ``n`` cells: the C++ program keeps
    cell ``T`` in nibble ``15 - T`` and ``pext`` packs the highest nibble last, so its index holds the
    tuple's last cell in the lowest nibble, the studio's its first: the nibbles reversed."""
    idx = np.arange(16**n, dtype=np.int64)
    out = np.zeros_like(idx)
    for k in range(n):
        out |= ((idx >> (4 * k)) & 0xF) << (4 * (n - 1 - k))
    return out


def export_weights(weights: np.ndarray, tuples: tuple[tuple[int, ...], ...], path: Path) -> None:
    """Write the studio's 4x6 weights (one stage) as the C++ program's ``nw4x6/weights.bin``, so its
    ``agent`` command plays the studio's network: the same values, the same moves (up to float
    rounding: it sums in float32), the same boards, which makes its search time comparable."""
    if tuple(tuple(t) for t in tuples) != CPP_4X6:
        raise ValueError("only the 4x6 layout has a C++ twin (nw4x6)")
    size = 16**6
    if weights.shape[0] < 4 * size:
        raise ValueError(f"4x6 weights need {4 * size:,} entries, got {weights.shape[0]:,}")
    perm = cpp_index_order(6)
    out = np.empty(4 * size, dtype=np.float32)
    for t in range(4):
        out[t * size + perm] = weights[t * size : (t + 1) * size]
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    out.tofile(path)
