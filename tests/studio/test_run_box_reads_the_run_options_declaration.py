"""The Train form's Run box is made from the run options' declaration (labels, ranges, tooltips, units)
and what a person types there reaches the request in the options' own units."""

from __future__ import annotations

from PySide6.QtWidgets import QFormLayout, QLabel

from agents.run.options import RunOptions, option_spec
from studio.tabs.train.launch_run import SPINS
from tests.studio.gui_helpers import type_over

pytest_plugins = ("tests.studio.gui_fixtures", "tests.studio.tab_fixtures")


def test_each_spin_has_its_options_label_range_and_tooltip(qtbot, tab):
    box = tab.launch.runBox
    layout = box.layout()
    assert isinstance(layout, QFormLayout)
    for name, (object_name, _decimals) in SPINS.items():
        spec, spin = option_spec(name), box.spins[name]
        assert spin.objectName() == object_name and spin.toolTip() == spec.tip
        assert (spin.minimum(), spin.maximum()) == spec.form_range
    label = layout.labelForField(box.checkpointSpin)
    assert isinstance(label, QLabel) and label.text() == "Checkpoint every"
    assert box.checkpointSpin.suffix() == " min" and box.maxCheckpointSpin.suffix() == " MB"
    assert (box.evalGamesSpin.specialValueText(), box.keepSpin.specialValueText()) == ("off", "all")


def test_what_is_typed_in_the_run_box_reaches_the_request_in_seconds(qtbot, tab):
    launch = tab.launch
    launch.select_agent("fake_learner")
    launch.set_budget(episodes=3)
    type_over(qtbot, launch.checkpointSpin.lineEdit(), "1.5")
    type_over(qtbot, launch.evalEverySpin.lineEdit(), "3")
    type_over(qtbot, launch.maxCheckpointSpin.lineEdit(), "200")
    type_over(qtbot, launch.logEverySpin.lineEdit(), "0")
    type_over(qtbot, launch.keepSpin.lineEdit(), "5")
    request = launch.request()
    assert request.options() == RunOptions(
        checkpoint_every_s=90.0, eval_every_s=180.0, max_checkpoint_mb=200.0, log_every=0, keep_checkpoints=5
    )
