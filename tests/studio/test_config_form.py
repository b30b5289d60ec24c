"""The generated config form: editors from specs, ranges, tooltips, marks with reasons, presets."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox

import agents.config
from agents import registry
from agents.config import ConfigError
from studio.widgets.config_form import ConfigForm, _ladder_step
from tests.studio.gui_helpers import load_preset_with_keys
from tests.studio.train_fakes import FakeConfig, fake_learner_form


@pytest.fixture
def form(qtbot, monkeypatch):
    return fake_learner_form(qtbot, monkeypatch)


def test_editor_kinds_ranges_and_tooltips(form):
    assert isinstance(form.field_widget("batch"), QSpinBox)
    assert isinstance(form.field_widget("lr"), QDoubleSpinBox)
    assert isinstance(form.field_widget("network"), QComboBox)
    assert isinstance(form.field_widget("double"), QCheckBox)
    assert isinstance(form.field_widget("depths"), QLineEdit)
    assert isinstance(form.field_widget("tag"), QLineEdit)
    combo = form.field_widget("network")
    assert [combo.itemText(i) for i in range(combo.count())] == ["small", "big"]
    tip = form.field_widget("batch").toolTip()
    assert "batch size" in tip and "range 1 .. 1024" in tip and "default: 32" in tip
    assert "log scale" in form.field_widget("lr").toolTip()
    # defaults are shown, typed
    assert form.values() == {
        "lr": 1e-3,
        "batch": 32,
        "network": "small",
        "double": True,
        "depths": (3, 2, 1),
        "tag": "run",
        "gamma": 0.99,
        "delay_ms": 2.0,
        "eps_start": 1.0,
        "eps_end": 0.1,
    }
    assert form.is_valid() and form.errors() == {}
    assert form.config() == FakeConfig()


def test_set_values_round_trip(form):
    new = {
        "lr": 2e-4,
        "batch": 7,
        "network": "big",
        "double": False,
        "depths": (1, 1),
        "tag": "x",
        "gamma": 0.5,
    }
    form.set_values(new)
    got = form.values()
    for k, v in new.items():
        assert got[k] == v
    cfg = form.config()
    assert cfg.batch == 7 and cfg.depths == (1, 1) and cfg.network == "big" and cfg.lr == pytest.approx(2e-4)
    with pytest.raises(ConfigError) as e:
        form.set_values({"nope": 1})
    assert e.value.field == "nope"


def test_out_of_range_value_is_marked_with_the_reason(form, qtbot):
    spin = form.field_widget("batch")
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "5000")  # typed past the declared high: kept, not clamped
    assert spin.value() == 5000
    label = form.error_label("batch")
    assert label.isVisible()
    assert label.text() == "must be in [1, 1024]; got 5000"
    assert not form.is_valid()
    with pytest.raises(ConfigError) as e:
        form.config()
    assert e.value.field == "batch"
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "64")
    assert not label.isVisible() and form.is_valid()


def test_values_from_a_preset_outside_the_range_are_marked(form):
    form.set_values({"lr": 5.0})
    assert form.error_label("lr").isVisible()
    assert "must be in [1e-06, 1]" in form.error_label("lr").text()
    assert form.field_widget("lr").property("invalid") is True


def test_tuple_field_parse_and_range_errors(form, qtbot):
    edit = form.field_widget("depths")
    edit.setText("3,x")
    assert "cannot read '3,x'" in form.error_label("depths").text()
    edit.setText("3,9")
    assert form.error_label("depths").text() == "must be in [0, 8]; got 9"
    edit.setText("4, 4,2")
    assert form.is_valid() and form.values()["depths"] == (4, 4, 2)


def test_cross_field_rule_marks_the_named_field_and_opens_the_fold(form):
    assert not form.advancedToggle.isChecked()
    assert not form.field_widget("eps_end").isVisible()
    form.set_values({"eps_start": 0.2, "eps_end": 0.5})
    assert form.error_label("eps_end").text() == "must not exceed eps start"
    assert form.advancedToggle.isChecked() and form.field_widget("eps_end").isVisible()


def test_log_field_steps_on_a_1_2_5_ladder_inside_the_range(form):
    spin = form.field_widget("lr")
    spin.setValue(5e-5)
    spin.stepUp()
    assert spin.value() == pytest.approx(1e-4)
    spin.stepUp()
    assert spin.value() == pytest.approx(2e-4)
    spin.stepDown()
    spin.stepDown()
    spin.stepDown()
    assert spin.value() == pytest.approx(2e-5)
    spin.setValue(0.6)
    spin.stepUp()
    assert spin.value() == 1.0  # the declared high, not the ladder's 2
    spin.stepUp()
    assert spin.value() == 1.0
    assert _ladder_step(1e-3, True) == pytest.approx(2e-3)
    assert _ladder_step(1e-3, False) == pytest.approx(5e-4)


def test_int_arrows_stop_at_declared_bounds(form):
    spin = form.field_widget("batch")
    spin.setValue(1023)
    spin.stepBy(5)
    assert spin.value() == 1024
    spin.setValue(1)
    spin.stepDown()
    assert spin.value() == 1


def test_advanced_fold_toggles(form, qtbot):
    gamma = form.field_widget("gamma")
    assert not gamma.isVisible()
    qtbot.mouseClick(form.advancedToggle, Qt.MouseButton.LeftButton)
    assert gamma.isVisible()
    qtbot.mouseClick(form.advancedToggle, Qt.MouseButton.LeftButton)
    assert not gamma.isVisible()


def test_presets_load_into_the_form(form, qtbot, tmp_path, monkeypatch):
    (tmp_path / "fake_fast.json").write_text(
        json.dumps(
            {
                "agent": "fake_learner",
                "description": "d",
                "config": {"batch": 99, "network": "big"},
                "rules": {"rows": 3},
            }
        )
    )
    (tmp_path / "other.json").write_text(json.dumps({"agent": "random", "config": {}}))
    monkeypatch.setattr(agents.config, "presets_dir", lambda: tmp_path)
    form.set_config_class(FakeConfig, agent="fake_learner")
    assert [form.presetCombo.itemText(i) for i in range(form.presetCombo.count())] == ["fake_fast"]
    form.set_values({"tag": "changed"})
    assert not form.presetButton.isEnabled()  # nothing chosen yet: the fields hold the defaults
    with qtbot.waitSignal(form.presetLoaded) as sig:
        load_preset_with_keys(qtbot, form, "fake_fast")
    assert sig.args[0]["rules"] == {"rows": 3}
    v = form.values()
    assert v["batch"] == 99 and v["network"] == "big" and v["tag"] == "run"  # others back to defaults


@pytest.mark.parametrize("name", registry.agent_names())
def test_every_registered_agent_form_builds(qtbot, name):
    cls = registry.get_agent_class(name)
    f = ConfigForm(cls.config_cls, agent=name)
    qtbot.addWidget(f)
    specs = cls.config_cls.specs()
    assert set(f.values()) == {s.name for s in specs}
    assert f.is_valid(), f.errors()
    assert f.config() == cls.config_cls()


def test_the_preset_marker_follows_the_fields(form, qtbot, tmp_path, monkeypatch):
    (tmp_path / "fake_fast.json").write_text(
        json.dumps({"agent": "fake_learner", "description": "quick", "config": {"batch": 99}})
    )
    monkeypatch.setattr(agents.config, "presets_dir", lambda: tmp_path)
    form.set_config_class(FakeConfig, agent="fake_learner")
    assert form.applied_preset is None and not form.presetMarker.isVisible()
    load_preset_with_keys(qtbot, form, "fake_fast")
    assert form.presetMarker.text() == "applied: fake_fast" and not form.preset_modified()
    qtbot.keyClick(form.field_widget("double"), Qt.Key.Key_Space)  # unticked
    assert form.presetMarker.text() == "modified from fake_fast"
    assert form.preset_changes() == ["Double"] and "quick" in form.presetMarker.toolTip()
    qtbot.keyClick(form.field_widget("double"), Qt.Key.Key_Space)  # ticked again: the preset's value
    assert form.presetMarker.text() == "applied: fake_fast"
    form.extra_changes = lambda: ["rules"]  # what the Train tab adds: its rules and budget
    form.refresh_preset_marker()
    assert form.presetMarker.text() == "modified from fake_fast"
    form.extra_changes = None
    qtbot.mouseClick(form.defaultsButton, Qt.MouseButton.LeftButton)
    assert form.applied_preset is None and not form.presetMarker.isVisible()


def test_tab_goes_through_the_fields_in_the_order_shown_after_a_rebuild(form, qtbot):
    from PySide6.QtWidgets import QApplication

    form.set_config_class(FakeConfig, agent="fake_learner")  # rebuilt: new editors, made last
    form.advancedToggle.setChecked(True)
    order = [s.name for s in FakeConfig.specs() if not s.advanced]
    advanced = [s.name for s in FakeConfig.specs() if s.advanced]
    chain = [form.field_widget(n) for n in order] + [form.advancedToggle]
    chain += [form.field_widget(n) for n in advanced]
    form.defaultsButton.setFocus()
    for widget in chain:
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        assert QApplication.focusWidget() is widget
    for widget in reversed(chain[:-1]):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab)
        assert QApplication.focusWidget() is widget
