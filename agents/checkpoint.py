"""Checkpoint files: weights + the config and rules that made them, never a pickle.

Layout: an uncompressed ``.npz`` (zip) archive. Every entry is a plain numeric array; ``__meta__`` is the
UTF-8 JSON metadata as a uint8 array::

    {"format": "2048-studio-checkpoint", "version": 1, "agent": "dqn", "class": "DQNAgent",
     "config": {...}, "rules": {...}, "counters": {...}, "seed": 3, "state": {...agent metadata...},
     "created": "..."}

``class`` (the saving agent's class name) must be the class ``agent`` names when it is loaded: two
agents may share their arrays' names and shapes (``sb3-ppo`` and ``sb3-maskppo``), so a checkpoint
relabelled from one to the other would load, and play by another algorithm than it says.

Loading uses ``np.load(allow_pickle=False)``, so a crafted object array is refused without being
unpickled, and no code from the file ever runs. Writes are atomic (temporary file + fsync + rename):
a crash or a kill mid-write leaves the previous checkpoint intact.

A checkpoint is hostile input until proven otherwise (it may come from anywhere), and every way it
can be wrong ends in one :class:`CheckpointError` (a ValueError) of one line, never a traceback:

* the archive: its declared sizes and array headers are checked before anything is read
  (:func:`engine.npzcheck.check_npz_sizes`: no zip bomb, no header declaring a terabyte), the
  metadata is at most :data:`MAX_META_BYTES` of UTF-8 JSON, nested at most :data:`MAX_META_DEPTH`
  deep, with no NaN / Infinity, and every array holds plain numbers (bool, int, uint, float);
* the metadata's schema (:func:`check_meta`): format, version, agent, config, rules, counters, seed
  and state, each of its type and range;
* the arrays' values: a float array holding NaN or an infinity is the mark of a run that diverged,
  and is refused by :func:`load_checkpoint` (``allow_nonfinite=True`` reads it anyway, for tools);
* what only the agent knows (its arrays' names, shapes and ranges, its own metadata): each
  ``set_state`` raises ValueError / KeyError / TypeError ... with what is wrong, and
  :func:`load_checkpoint` turns it into a CheckpointError naming the file.

The ``state_*`` helpers below are what agents' ``set_state`` use to read their part of the metadata.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import logging
import math
import os
import zipfile
from collections.abc import Collection, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.config import ConfigError

# Counters: the agent contract's (agents.base re-exports them), which this format saves
from agents.counters import Counters as Counters
from agents.registry import get_agent_class
from engine import Rules
from engine.fsutil import atomic_write
from engine.npzcheck import check_npz_sizes

if TYPE_CHECKING:
    from agents.base import Agent

log = logging.getLogger(__name__)

FORMAT = "2048-studio-checkpoint"
VERSION = 1
META_KEY = "__meta__"

#: The metadata is a few kilobytes of JSON; more than this is not a checkpoint's.
MAX_META_BYTES = 16 << 20
#: Real metadata nests about 6 deep (state / optimizers / opt/ / param_groups / [0] / betas).
MAX_META_DEPTH = 64
#: Checkpoints are written uncompressed, so their arrays are in the file; a compressed member (an
#: archive re-packed by hand) may inflate to at most this much more than the file's size.
MAX_INFLATION_BYTES = 64 << 20
#: Counters and whole numbers of agent state: what an int64 (numpy, SQLite) holds.
MAX_COUNT = 2**63 - 1
#: Seeds: a 64-bit unsigned number (the engine's generators keep 64 bits of it).
MAX_SEED = 2**64 - 1
#: Longest class name in the metadata (a dotted Python qualified name; real ones are ~20 characters).
MAX_CLASS_NAME = 200
#: Longest message of a CheckpointError (a crafted value could make it megabytes).
MAX_MESSAGE = 400


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message (one line) says why (other agent, other rules,
    damaged, newer, diverged)."""

    def __init__(self, message: object = "") -> None:
        super().__init__(one_line(str(message)))


class NonFiniteWeights(CheckpointError):
    """The weights (or other float arrays) hold NaN or an infinity: the run that made them diverged.
    ``entry``: the array's name."""

    def __init__(self, message: object = "", entry: str | None = None) -> None:
        super().__init__(message)
        self.entry = entry


class CheckpointTooLarge(CheckpointError):
    """A checkpoint past the size limit it was saved under (nothing written). ``size``: its bytes."""

    def __init__(self, message: object = "", size: int = 0) -> None:
        super().__init__(message)
        self.size = size


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line (runs of white space, newlines included, become one space), at most ``limit``."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# ------------------------------------------------------------------------------------------- writing


def save_checkpoint(
    agent: Agent, path: str | Path, *, require_finite: bool = False, max_bytes: int | None = None
) -> Path:
    """Write ``agent`` to ``path`` (``.npz`` added when missing), atomically.

    ``max_bytes``: refuse (:class:`CheckpointTooLarge`, nothing written) a file that would be larger;
    its size is known from the arrays before a byte is written (:func:`npz_size`), so a runaway
    network never fills the disk on its way to being refused.

    ``require_finite``: refuse (:class:`NonFiniteWeights`, nothing written) when a float array of its
    state holds NaN or an infinity; training runs save this way, so a diverged network never replaces
    the last good checkpoint. Metadata that JSON cannot hold exactly (NaN) is refused too: a file
    that is written must load.
    """
    path = Path(path)
    if path.suffix != ".npz":
        path = path.with_name(path.name + ".npz")
    arrays, state_meta = agent.get_state()
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "agent": agent.name,
        "class": type(agent).__qualname__,
        "config": agent.config.to_dict(),
        "rules": agent.rules.to_dict(),
        "counters": asdict(agent.counters),
        "seed": agent.seed,
        "state": state_meta,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
    if agent.reviews_in_points:
        # Said in the file: a window lists such checkpoints as reviewers from their metadata, without
        # importing the agent's class (an SB3 agent's import takes seconds).
        meta["reviews_in_points"] = True
    payload = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    for k, v in payload.items():
        if k == META_KEY or v.dtype == object:
            raise ValueError(f"checkpoint array {k!r} must be a plain numeric array")
    if require_finite:
        bad = first_nonfinite(payload)
        if bad is not None:
            raise NonFiniteWeights(f"{agent.name}'s {bad!r} holds NaN or infinite values: not saved", bad)
    try:
        text = json.dumps(meta, allow_nan=False)
    except ValueError as e:
        raise CheckpointError(f"{agent.name}'s metadata cannot be saved: {e}") from None
    payload[META_KEY] = np.frombuffer(text.encode(), dtype=np.uint8)
    if max_bytes is not None:
        size = npz_size(payload)
        if size > max_bytes:
            raise CheckpointTooLarge(
                f"{agent.name}'s checkpoint would be {mb(size)}, past the {mb(max_bytes)} limit: not saved",
                size,
            )
    atomic_write(path, lambda fh: _write_npz(fh, payload))
    return path


def _write_npz(fh: Any, arrays: dict[str, np.ndarray]) -> None:
    """What ``np.savez`` does, minus its keyword clash (an array named ``allow_pickle``) and with
    pickling refused on the writing side too."""
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, arr in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, arr, allow_pickle=False)


#: Bytes a member of the archive takes besides its data: the .npy header (padded to 64 or 128 bytes),
#: a zip local header and a central directory entry with their zip64 extras (the name counted apart).
_MEMBER_OVERHEAD = 128 + 30 + 46 + 2 * 32
#: The end of the archive: end-of-central-directory records, zip64 included.
_ARCHIVE_OVERHEAD = 22 + 56 + 20


def npz_size(arrays: Mapping[str, np.ndarray]) -> int:
    """Bytes of the uncompressed archive :func:`save_checkpoint` writes of ``arrays``: their data, plus
    at most a few hundred bytes a member (a header larger than 128 bytes, for an array of very many
    axes, is the only excess), an upper bound within a kilobyte of the file's size."""
    total = _ARCHIVE_OVERHEAD
    for name, arr in arrays.items():
        total += int(arr.nbytes) + _MEMBER_OVERHEAD + 2 * len(f"{name}.npy".encode())
    return total


def mb(size: int) -> str:
    """``size`` bytes in MB (2**20 bytes) for a message: "839.2 MB", "0.01 MB"."""
    value = size / (1 << 20)
    return f"{value:,.1f} MB" if value >= 10 else f"{value:,.3g} MB"


def first_nonfinite(arrays: Mapping[str, np.ndarray]) -> str | None:
    """Name of the first float array holding NaN or an infinity (None when all are finite).

    One float64 sum per array (NaN and infinities survive a sum; float32 values cannot overflow a
    float64 one), so a 256 MB network costs a few tens of milliseconds and no copy.
    """
    with np.errstate(all="ignore"):
        for key, arr in arrays.items():
            a = np.asarray(arr)
            if a.dtype.kind != "f" or a.size == 0:
                continue
            if not math.isfinite(float(np.sum(a, dtype=np.float64))) and not np.isfinite(a).all():
                return key
    return None


# ------------------------------------------------------------------------------------------- reading


def read_checkpoint(
    path: str | Path, *, arrays: bool = True, skip: Collection[str] = ()
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Metadata (checked by :func:`check_meta`, defaults filled in) and arrays of a checkpoint file;
    nothing executed, nothing read before the archive's sizes are checked. ``arrays=False``: the
    metadata only (the arrays, hundreds of MB for an n-tuple network, are not inflated); ``skip``:
    arrays left unread."""
    path = Path(path)
    name = path.name
    if not path.exists():
        raise CheckpointError(f"no checkpoint at {path}")
    if not path.is_file():
        raise CheckpointError(f"{name} is not a file")
    try:
        with open(path, "rb") as fh:
            # np.load decides by the first bytes: a file that only ends like a zip would be read as
            # something else
            if not zipfile.is_zipfile(fh) or (fh.seek(0) or fh.read(4)) != b"PK\x03\x04":
                raise CheckpointError(f"{name} is not a 2048 Studio checkpoint (not an .npz archive)")
            fh.seek(0)
            members = check_npz_sizes(fh, os.fstat(fh.fileno()).st_size + MAX_INFLATION_BYTES)
            info = members.get(META_KEY)
            if info is None:
                raise CheckpointError(f"{name} is not a 2048 Studio checkpoint (no metadata)")
            if info.dtype != np.uint8 or info.shape is None or len(info.shape) != 1:
                raise CheckpointError(f"{name} is not a 2048 Studio checkpoint (its metadata is not text)")
            if info.size > MAX_META_BYTES:
                raise CheckpointError(
                    f"{name} has {info.size:,} bytes of metadata, more than the {MAX_META_BYTES:,} a "
                    "checkpoint has: refused"
                )
            fh.seek(0)
            with np.load(fh, allow_pickle=False) as npz:
                raw = npz[META_KEY]
                data = {k: npz[k] for k in npz.files if k != META_KEY and arrays and k not in skip}
    except CheckpointError:
        raise
    except ValueError as e:  # NpzSizeError included
        if "pickle" in str(e).lower():
            raise CheckpointError(
                f"{name} holds pickled objects; refused (checkpoints are data only)"
            ) from None
        raise CheckpointError(f"{name} is damaged or truncated: {e}") from None
    except Exception as e:  # zip, zlib, bz2, lzma, EOF, OS: all mean the same to the user
        # Not narrowed: a crafted archive reaches corners of zipfile / numpy that raise whatever they
        # raise, and every one of them must end as this one line. The caller reports that line; INFO
        # keeps the traceback in the log without a second line on a command's stderr.
        log.info("checkpoint %s unreadable", path, exc_info=True)
        raise CheckpointError(f"{name} is damaged or truncated: {e or type(e).__name__}") from None
    meta = check_meta(_decode_meta(raw, name), name)
    return meta, {k: _plain_array(k, v, name) for k, v in data.items()}


def _no_constant(text: str) -> Any:
    raise ValueError(f"{text} is not a number a checkpoint holds")


def _decode_meta(raw: np.ndarray, name: str) -> Any:
    try:
        text = raw.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        raise CheckpointError(f"{name} is damaged: its metadata is not UTF-8 text") from None
    try:
        meta = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise CheckpointError(f"{name} is damaged or crafted: its metadata is nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, NaN / Infinity, an integer of thousands of digits
        raise CheckpointError(f"{name} is damaged: its metadata is not valid JSON ({e})") from None
    _check_depth(meta, name)
    return meta


def _check_depth(value: Any, name: str) -> None:
    """Refuse metadata nested deeper than :data:`MAX_META_DEPTH` (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, dict):
            items: Any = v.values()
        elif isinstance(v, list):
            items = v
        else:
            continue
        if depth > MAX_META_DEPTH:
            raise CheckpointError(
                f"{name} is damaged or crafted: its metadata nests deeper than {MAX_META_DEPTH} levels"
            )
        stack.extend((x, depth + 1) for x in items)


def _plain_array(key: str, value: Any, name: str) -> np.ndarray:
    """A numeric array in native byte order; CheckpointError for anything else (text, bytes, records)."""
    if not isinstance(value, np.ndarray):
        raise CheckpointError(f"{name}: entry {key!r} is not an array")
    if value.dtype.kind not in "biuf" or value.dtype.itemsize > 8:
        raise CheckpointError(
            f"{name}: entry {key!r} has type {value.dtype.str}; checkpoints hold numbers only"
        )
    if not value.dtype.isnative:
        value = value.astype(value.dtype.newbyteorder("="))
    return value


def _whole(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def check_meta(meta: Any, name: str = "checkpoint") -> dict[str, Any]:
    """The checkpoint metadata's schema; the metadata with its defaults filled in, or CheckpointError.

    ``format`` (this format), ``version`` (a whole number, at most :data:`VERSION`), ``agent`` (text),
    ``class`` (text, when present), ``config`` / ``rules`` / ``state`` (objects), ``counters`` (an
    object of the known counters, whole numbers in [0, 2^63) and seconds a finite number >= 0),
    ``seed`` (a whole number in [0, 2^64) or null). Other keys (``created``) are kept as they are and
    never used.
    """
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{name} is not a 2048 Studio checkpoint")
    version = meta.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        raise CheckpointError(
            f"{name} has checkpoint format version {version}, newer than this studio's {VERSION}: upgrade"
        )
    if not _whole(version, 1, VERSION):
        raise CheckpointError(f"{name} has checkpoint format version {version!r}, which no studio wrote")
    out = dict(meta)
    agent = meta.get("agent")
    if not isinstance(agent, str) or not agent:
        raise CheckpointError(f"{name} names no agent (agent {agent!r})")
    for key in ("config", "rules", "counters", "state"):
        value = out.setdefault(key, {})
        if not isinstance(value, dict):
            raise CheckpointError(f"{name} is damaged: its {key} is a {type(value).__name__}, not an object")
    out["counters"] = _check_counters(out["counters"], name)
    recorded = out.get("class")
    if recorded is not None and (not isinstance(recorded, str) or not 0 < len(recorded) <= MAX_CLASS_NAME):
        raise CheckpointError(f"{name} is damaged: its class {recorded!r} is not a class name")
    seed = out.setdefault("seed", None)
    if seed is not None and not _whole(seed, 0, MAX_SEED):
        raise CheckpointError(f"{name} is damaged: its seed {seed!r} is not a whole number in [0, 2^64)")
    return out


def _check_counters(counters: dict[str, Any], name: str) -> dict[str, Any]:
    fields = {f.name: f.default for f in dataclasses.fields(Counters)}
    unknown = sorted(set(counters) - set(fields))
    if unknown:
        raise CheckpointError(
            f"{name} is damaged: it has a counter {unknown[0]!r} (known: {', '.join(fields)})"
        )
    for key, value in counters.items():
        if isinstance(fields[key], float):
            ok = (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and math.isfinite(value)
                and 0 <= value <= MAX_COUNT
            )
            kind = "a finite number >= 0"
        else:
            ok = _whole(value, 0, MAX_COUNT)
            kind = "a whole number in [0, 2^63)"
        if not ok:
            raise CheckpointError(f"{name} is damaged: its counter {key} is {value!r}, not {kind}")
    return {k: float(v) if isinstance(fields[k], float) else v for k, v in counters.items()}


def load_checkpoint(
    path: str | Path,
    *,
    expect_agent: str | None = None,
    expect_rules: Rules | None = None,
    allow_nonfinite: bool = False,
    device: str | None = None,
    play: bool = False,
) -> Agent:
    """Rebuild the agent a checkpoint was made from (its registered class, config, rules and state).

    ``play``: to play, never to train on: the arrays its class names ``resume_only_arrays`` (an
    n-tuple network's temporal-coherence sums, twice its weights) are not read.

    CheckpointError (one line, naming the file) for any checkpoint that cannot be used, including one
    whose float arrays hold NaN or an infinity (:class:`NonFiniteWeights`: the run diverged) unless
    ``allow_nonfinite``.

    ``device`` (torch learners): where the rebuilt agent's networks go. Weights are stored as CPU arrays,
    so any checkpoint loads on any device; without ``device`` the saved ``device`` knob is kept where
    this machine has that device, else ``auto`` is used (a run trained on a GPU resumes on a laptop).
    """
    path = Path(path)
    skip: tuple[str, ...] = ()
    if play:
        with contextlib.suppress(KeyError):  # an unknown agent is refused below, with the reason
            cls = get_agent_class(read_checkpoint(path, arrays=False)[0]["agent"])
            skip = tuple(getattr(cls, "resume_only_arrays", ()))
    meta, arrays = read_checkpoint(path, skip=skip)
    name = meta["agent"]
    if expect_agent is not None and name != expect_agent:
        raise CheckpointError(f"{path.name} is a checkpoint of agent {name!r}, not {expect_agent!r}")
    cls = _saving_class(path, meta)
    if not allow_nonfinite:
        bad = first_nonfinite(arrays)
        if bad is not None:
            raise NonFiniteWeights(
                f"{path.name} holds non-finite weights (NaN or infinity in {bad!r}): the run that "
                "saved it diverged",
                bad,
            )
    try:
        rules = Rules.from_dict(meta["rules"])
        config = cls.config_cls.from_dict(meta["config"])
        config = _on_device(config, device)
    except (ConfigError, ValueError, TypeError, OverflowError) as e:
        raise CheckpointError(f"{path.name} has settings this version cannot use: {e}") from None
    if expect_rules is not None and rules != expect_rules:
        raise CheckpointError(
            f"{path.name} was trained on {rules.rows}x{rules.cols} (p4={rules.p4}), "
            f"not {expect_rules.rows}x{expect_rules.cols} (p4={expect_rules.p4})"
        )
    try:
        agent = cls(config, rules, seed=meta["seed"])
    except (ValueError, TypeError, OverflowError, MemoryError) as e:
        raise CheckpointError(f"{path.name} cannot be rebuilt as agent {name!r}: {_reason(e)}") from None
    agent.counters = type(agent.counters)(**meta["counters"])
    try:
        agent.set_state(arrays, meta["state"])
    except (
        KeyError,
        ValueError,
        TypeError,
        IndexError,
        RuntimeError,
        OverflowError,
        AttributeError,
        MemoryError,
    ) as e:
        # RuntimeError: torch's load_state_dict; the others: whatever an agent's set_state meets in a
        # crafted file that it did not check itself
        raise CheckpointError(f"{path.name} does not fit agent {name!r}: {_reason(e)}") from None
    return agent


def _saving_class(path: Path, meta: Mapping[str, Any]) -> type[Agent]:
    """The registered class of the checkpoint's agent, refused when the file names a class other than
    the one registered under its agent's name (a relabelled file)."""
    name = meta["agent"]
    try:
        cls = get_agent_class(name)
    except KeyError:
        raise CheckpointError(f"{path.name} is a checkpoint of unknown agent {name!r}") from None
    recorded = meta.get("class")  # absent in checkpoints written before it was recorded
    if recorded is not None and recorded != cls.__qualname__:
        raise CheckpointError(
            f"{path.name} was saved by class {recorded}, not by {cls.__qualname__} of agent {name!r}: "
            "relabelled, refused"
        )
    return cls


def _on_device(config: Any, device: str | None) -> Any:
    """``config`` with its ``device`` knob set to ``device``, or to ``auto`` where the saved one is missing."""
    if not hasattr(config, "device"):
        return config
    from agents.nn.device import resolve_device  # torch: only for configs that have the knob

    if device is None:
        try:
            resolve_device(config.device)
            return config
        except ValueError:
            device = "auto"
    return config.replace(device=device)


def _reason(error: BaseException) -> str:
    if isinstance(error, KeyError):
        return f"it lacks {error.args[0]!r}" if error.args else "an entry is missing"
    return str(error) or type(error).__name__


# ------------------------------------------------------------------------------- state helpers


def state_int(meta: Mapping[str, Any], key: str, default: int, low: int = 0, high: int = MAX_COUNT) -> int:
    """``meta[key]`` (``default`` when absent): a whole number in ``[low, high]``, else ValueError."""
    value = meta.get(key, default)
    if not _whole(value, low, high):
        raise ValueError(f"{key} is {value!r}, not a whole number in [{low}, {high}]")
    return int(value)


def state_uint64(value: Any, what: str) -> np.uint64:
    """A 64-bit generator state saved as a decimal string (JSON has no uint64) or a whole number."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 20:
        number: Any = int(value)
    else:
        number = value
    if not _whole(number, 0, 2**64 - 1):
        raise ValueError(f"{what} is {value!r}, not a 64-bit generator state")
    return np.uint64(number)


def state_array(
    arrays: Mapping[str, np.ndarray],
    key: str,
    *,
    kinds: str = "biuf",
    shape: tuple[int | None, ...] | None = None,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    """``arrays[key]`` (KeyError when absent) checked for its dtype kind (numpy's ``kind`` letters),
    its shape (None = any length on that axis) and its value range; ValueError saying what differs.
    ``kinds="f"`` (a network's weights): float32 or float64 only."""
    arr = np.asarray(arrays[key])
    if kinds == "f" and arr.dtype not in (np.float32, np.float64):
        # weights: a bool or int8 table would load and play as if it were a network
        raise ValueError(f"{key} has type {arr.dtype}, not float32 or float64 as a network's weights")
    if arr.dtype.kind not in kinds:
        raise ValueError(f"{key} has type {arr.dtype}, not one of the kinds {kinds!r}")
    if shape is not None and (
        arr.ndim != len(shape) or any(want is not None and n != want for n, want in zip(arr.shape, shape))
    ):
        want_text = "(" + ", ".join("n" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{key} has shape {arr.shape}, not {want_text}")
    if arr.size and (low is not None or high is not None):
        with np.errstate(all="ignore"):
            lo, hi = arr.min(), arr.max()
        if (low is not None and not lo >= low) or (high is not None and not hi <= high):
            raise ValueError(f"{key} holds values from {lo} to {hi}, outside [{low}, {high}]")
    return arr


def state_ints(meta: Mapping[str, Any], key: str, low: int = 0, high: int = MAX_COUNT) -> list[int] | None:
    """``meta[key]``: a list of whole numbers in ``[low, high]`` (None when absent or null), else ValueError."""
    value = meta.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(_whole(v, low, high) for v in value):
        raise ValueError(f"{key} is not a list of whole numbers in [{low}, {high}]")
    return [int(v) for v in value]
