"""Replay's "Prepare a reviewer" button, clicked the way a person clicks it: clicked(bool) once arrived
as ``minutes=False`` and the training was refused with a ValueError on stderr only, so nothing
happened. A click now starts the training with its progress bar and says so beside the button."""

from __future__ import annotations

from PySide6.QtCore import Qt

from studio.services.review import default_reviewer
from tests.studio.gui_helpers import greedy_game

pytest_plugins = ("tests.studio.gui_fixtures",)


def test_clicking_prepare_a_reviewer_trains_one_with_progress_and_a_message(qtbot, window, monkeypatch):
    import studio.services.review as review_service

    monkeypatch.setattr(review_service, "PREPARE_MINUTES", 0.05)  # 3 seconds of training, not 4 minutes
    gid = greedy_game(window.store)
    replay = window.replay
    window.show_tab("Replay")
    replay.open_game(gid)
    assert replay.prepareButton.isVisible()  # no network in the store: expectimax is a fallback
    said: list[str] = []
    replay.status.connect(said.append)
    qtbot.mouseClick(replay.prepareButton, Qt.MouseButton.LeftButton)
    assert replay.preparing  # the old code refused minutes=False: nothing was preparing
    assert replay.prepareProgress.isVisible() and replay.prepareProgress.format().startswith(
        "preparing a reviewer"
    )
    assert not replay.prepareButton.isEnabled()  # one at a time
    message = (
        "Preparing a reviewer: training an n-tuple network for 3 seconds in the background; "
        "it then reviews as the default"
    )
    assert replay.prepareLabel.isVisible() and replay.prepareLabel.text() == message
    assert said == [message]
    assert replay.wait_prepared(180_000)
    qtbot.waitUntil(lambda: not replay.preparing, timeout=10_000)
    chosen = default_reviewer(window.store)
    assert chosen.spec.checkpoint is not None and chosen.label.startswith("n-tuple run ")
    assert replay.prepareLabel.text().endswith(f"the default reviewer is now {chosen.label}")
    assert not replay.prepareProgress.isVisible()
