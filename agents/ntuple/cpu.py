"""Which feature extraction this CPU runs fastest: BMI2 ``pext`` or rotate-and-mask.

``pext`` gathers a tuple's nibbles off a board in one instruction, where rotate-and-mask takes one
rotation, one mask and one OR per run of neighbouring cells. It is fast (3 cycles, one per cycle) on
Intel since Haswell and on AMD since Zen 3, but microcoded on AMD Zen 1/2 (and on the older AMD cores
that have BMI2 at all): there it costs up to hundreds of cycles, depending on the mask, so those CPUs
take the rotate-and-mask path, as does any CPU without BMI2.

The decision is made from what LLVM (numba's compiler) sees of the host, the CPU numba compiles for:
numba's on-disk cache keys every compiled kernel by that CPU name and feature list, so a cache
written on a BMI2 machine is never loaded on one without it (it compiles afresh there).
``STUDIO2048_NO_PEXT=1`` forces the fallback (tests, or to compare the two paths).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

#: LLVM CPU names of the cores whose BMI2 is microcoded (AMD Excavator, Zen 1, Zen+, Zen 2, Hygon Dhyana).
SLOW_PEXT_CPUS = frozenset({"bdver4", "znver1", "znver2"})
#: Setting this environment variable to 1 makes :func:`use_pext` say no whatever the CPU.
NO_PEXT_ENV = "STUDIO2048_NO_PEXT"


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields from ``/proc/cpuinfo`` (empty off Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            out[key.strip()] = value.strip()
    return out


def pext_verdict(
    cpu_name: str, features: str, vendor: str = "", family: int | None = None
) -> tuple[bool, str]:
    """``(use pext, why)`` for a CPU described by LLVM's host name and feature string (``+bmi2,...``)
    and, where known, the vendor and family from ``/proc/cpuinfo``. Pure, so every branch is testable."""
    if "+bmi2" not in features.split(","):
        return False, f"{cpu_name}: no BMI2"
    if cpu_name in SLOW_PEXT_CPUS:
        return False, f"{cpu_name}: BMI2 pext is microcoded (slow) on this core"
    if vendor in ("AuthenticAMD", "HygonGenuine") and family is not None and family < 0x19:
        return False, f"AMD family {family:#x} (before Zen 3): BMI2 pext is microcoded (slow)"
    if vendor not in ("", "GenuineIntel", "AuthenticAMD"):
        return False, f"{vendor}: pext speed unknown"
    return True, f"{cpu_name}: BMI2 pext"


def host_verdict() -> tuple[bool, str]:
    """:func:`pext_verdict` of this machine, or no when the environment forces the fallback or has
    numba compile for a CPU other than the host (``NUMBA_CPU_NAME``: pext may not exist there)."""
    if os.environ.get(NO_PEXT_ENV, "") not in ("", "0"):
        return False, f"{NO_PEXT_ENV} is set"
    target = os.environ.get("NUMBA_CPU_NAME", "")
    if target not in ("", "host"):
        return False, f"numba compiles for NUMBA_CPU_NAME={target}, not this CPU"
    return _host_cpu_verdict()


@lru_cache(maxsize=1)
def _host_cpu_verdict() -> tuple[bool, str]:
    import llvmlite.binding as llvm

    name = llvm.get_host_cpu_name()
    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:  # LLVM cannot list them on this platform
        return False, f"{name}: CPU features unknown"
    info = _cpuinfo()
    try:
        family = int(info.get("cpu family", ""))
    except ValueError:
        family = None
    return pext_verdict(name, features, info.get("vendor_id", ""), family)


def use_pext() -> bool:
    """Whether the kernels should read features with ``pext`` on this machine (see the module doc)."""
    return host_verdict()[0]
