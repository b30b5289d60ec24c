"""What an ``.npz`` archive declares about its own sizes, checked before anything in it is read.

``np.load`` trusts an archive: a zip member compressed a thousand to one inflates to a thousand times its
size, and an ``.npy`` header declaring shape ``(2**40,)`` makes numpy allocate that whole array before it
finds the data missing. :func:`check_npz_sizes` reads only the zip directory and each ``.npy`` header (a
few hundred bytes per member, never the data) and refuses, with one line naming the member, an archive

* with more members than ``max_members``, an encrypted member or a compression zipfile cannot read;
* whose members declare more than ``max_total_bytes`` once inflated (all members together), or more
  compressed bytes than the archive holds, or, for a stored member, an inflated size other than its
  stored size;
* whose ``.npy`` headers declare more data (shape x item size) than their member's declared size, or
  a header that does not parse.

The declared sizes bound what is read afterwards: ``zipfile`` stops a member at its declared size (and
checks its CRC there), so after this check ``np.load(..., allow_pickle=False)`` reads and allocates at
most ``max_total_bytes``. Use it on the file ``np.load`` then reads::

    with open(path, "rb") as fh:
        members = check_npz_sizes(fh, max_total_bytes=256 << 20)   # NpzSizeError (a ValueError)
        with np.load(fh, allow_pickle=False) as npz:
            ...

Damage the check does not look for (a broken zip directory, a truncated member) surfaces as
``zipfile.BadZipFile`` / ``OSError`` / ``EOFError`` here or in ``np.load``; the caller handles those as
it handles a damaged file. Used by checkpoints (:mod:`agents.checkpoint`) and may be by any ``.npz``
import.
"""

from __future__ import annotations

import math
import os
import zipfile
from dataclasses import dataclass
from typing import IO, Any

import numpy as np

#: Compressions zipfile reads (anything else raises NotImplementedError deep inside np.load).
READABLE_COMPRESSIONS = frozenset(
    {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}
)
#: ``np.load``'s own bound on an ``.npy`` header's length.
MAX_HEADER_BYTES = 10_000


class NpzSizeError(ValueError):
    """An archive whose declared sizes (or headers) cannot be trusted; one line, naming the member."""


@dataclass(frozen=True)
class NpzMember:
    """One member as its headers declare it: ``key`` is the name ``np.load`` gives it (``weights`` for
    ``weights.npy``). ``shape`` / ``dtype`` are None for a member that is not an ``.npy`` array
    (``np.load`` hands those back as raw bytes)."""

    name: str
    key: str
    size: int  # declared bytes once inflated
    shape: tuple[int, ...] | None
    dtype: np.dtype[Any] | None


def check_npz_sizes(
    source: zipfile.ZipFile | IO[bytes] | str | os.PathLike[str],
    max_total_bytes: int,
    *,
    max_members: int = 4096,
) -> dict[str, NpzMember]:
    """Check an ``.npz`` archive's declared sizes and ``.npy`` headers; its members by ``np.load`` key.

    ``source``: an open :class:`zipfile.ZipFile`, a binary file object (left open, its position
    restored) or a path. Raises :class:`NpzSizeError` (a ValueError) for an archive that declares more
    than it may hold (see the module docstring); zip damage raises what ``zipfile`` raises.
    """
    if isinstance(source, zipfile.ZipFile):
        return _check(source, _archive_bytes(source.fp), max_total_bytes, max_members)
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as fh, zipfile.ZipFile(fh) as zf:
            return _check(zf, _archive_bytes(fh), max_total_bytes, max_members)
    start = source.tell()
    try:
        with zipfile.ZipFile(source) as zf:
            return _check(zf, _archive_bytes(source), max_total_bytes, max_members)
    finally:
        source.seek(start)


def _archive_bytes(fh: Any) -> int | None:
    """Size of the file under a zip archive (None when it cannot be told)."""
    if fh is None:
        return None
    try:
        return os.fstat(fh.fileno()).st_size
    except (AttributeError, OSError, ValueError):
        pass
    try:
        here = fh.tell()
        end = fh.seek(0, os.SEEK_END)
        fh.seek(here)
        return int(end)
    except (AttributeError, OSError, ValueError):
        return None


def _check(
    zf: zipfile.ZipFile, archive: int | None, max_total: int, max_members: int
) -> dict[str, NpzMember]:
    infos = zf.infolist()
    if len(infos) > max_members:
        raise NpzSizeError(f"holds {len(infos):,} entries, more than the {max_members:,} allowed")
    total = 0
    for info in infos:
        what = f"entry {info.filename[:80]!r}"
        if info.flag_bits & 0x1:
            raise NpzSizeError(f"{what} is encrypted")
        if info.compress_type not in READABLE_COMPRESSIONS:
            raise NpzSizeError(f"{what} uses a compression this program cannot read ({info.compress_type})")
        if archive is not None and info.compress_size > archive:
            raise NpzSizeError(
                f"{what} declares {info.compress_size:,} stored bytes in a file of {archive:,}: damaged"
            )
        if info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size:
            raise NpzSizeError(
                f"{what} is stored uncompressed but declares {info.file_size:,} bytes for "
                f"{info.compress_size:,}: damaged"
            )
        total += info.file_size
        if total > max_total:
            raise NpzSizeError(
                f"{what} would take the archive past {max_total:,} bytes once decompressed "
                f"({total:,} declared so far): refused"
            )
    out: dict[str, NpzMember] = {}
    for info in infos:
        key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        if key in out:  # np.load would keep one of the two silently
            raise NpzSizeError(f"entry {key[:80]!r} appears twice")
        shape, dtype = _npy_header(zf, info, max_total)
        out[key] = NpzMember(info.filename, key, info.file_size, shape, dtype)
    return out


def _npy_header(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, max_total: int
) -> tuple[tuple[int, ...] | None, np.dtype[Any] | None]:
    """Shape and dtype of one member's ``.npy`` header, checked against its declared size."""
    what = f"entry {info.filename[:80]!r}"
    fmt = np.lib.format
    with zf.open(info) as fp:
        if fp.read(len(fmt.MAGIC_PREFIX)) != fmt.MAGIC_PREFIX:
            return None, None  # not an array: np.load returns its bytes (bounded by its declared size)
        version = fp.read(2)
        if len(version) != 2:
            raise NpzSizeError(f"{what} is cut off inside its array header")
        try:
            if version == b"\x01\x00":
                shape, _, dtype = fmt.read_array_header_1_0(fp, max_header_size=MAX_HEADER_BYTES)
            elif version in (b"\x02\x00", b"\x03\x00"):  # 3.0 differs from 2.0 only in its text encoding
                shape, _, dtype = fmt.read_array_header_2_0(fp, max_header_size=MAX_HEADER_BYTES)
            else:
                raise NpzSizeError(f"{what} has an array format version this program does not read")
        except NpzSizeError:
            raise
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError, OverflowError) as e:
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise NpzSizeError(f"{what} has an array header that does not parse ({why[:120]})") from None
        header = fp.tell() if hasattr(fp, "tell") else 0
    if not isinstance(shape, tuple) or any(not isinstance(n, int) or n < 0 for n in shape):
        raise NpzSizeError(f"{what} declares an impossible shape {shape!r}"[:200])
    if dtype.hasobject:
        return shape, dtype  # pickled objects: np.load(allow_pickle=False) refuses them before any allocation
    if dtype.itemsize == 0:
        raise NpzSizeError(f"{what} has items of size 0 ({dtype})")
    count = math.prod(shape)
    data = count * dtype.itemsize
    # np.save writes exactly shape x item size after the header: any other size is damage or a lie.
    if count > max_total or data != info.file_size - header:
        raise NpzSizeError(
            f"{what} declares shape {shape} of {dtype.str} ({data:,} bytes) but holds "
            f"{max(0, info.file_size - header):,}: damaged or crafted"[:300]
        )
    return shape, dtype
