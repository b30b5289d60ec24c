"""Whether a writer's process still exists: the store's test for "interrupted" games, runs and sweeps.

Its own module because :class:`~engine.store.db.GameStore` and its runs / sweeps mixins all need it,
and the mixins are imported by ``db`` (importing it back from there made a circle).
"""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """True unless the process certainly does not exist (unknown counts as alive: never abandon a live game)."""
    if pid == os.getpid():
        return True
    if os.name != "posix":
        return True  # os.kill(pid, 0) would *terminate* the process on Windows
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # EPERM: exists, belongs to someone else
    return not _zombie(pid)


def owner_gone(pid: int | None, host: str | None, this_host: str) -> bool:
    """True when a row's writer (its ``pid`` on ``host``) certainly no longer runs: a process of this
    machine (``this_host``) that has ended. Another machine's process is never taken for gone."""
    return pid is not None and host == this_host and not pid_alive(pid)


def _zombie(pid: int) -> bool:
    """True for a process that has ended and waits only to be reaped (Linux; False where unknown).
    kill -9 of a driver leaves its killed trial children so until someone reaps them, and a container
    whose first process never reaps keeps them for good: their runs were never to be resumed."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    # pid (comm) state ...: the name may hold spaces and parentheses, the state follows the last ")"
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"Z"
