"""Integer fields of the settings form read what a person types: ``1e3`` is 1000 (QSpinBox made it 13),
a number that is not whole stays as typed and is marked, and a refused key is said, never dropped silently."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from tests.studio.train_fakes import fake_learner_form


@pytest.fixture
def form(qtbot, monkeypatch):
    return fake_learner_form(qtbot, monkeypatch)


def _type_into(qtbot, form, name: str, text: str):
    spin = form.field_widget(name)
    spin.setFocus()
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), text)
    return spin


def _leave(qtbot, form, spin) -> None:
    """Tab to the next field, as a person leaves one."""
    qtbot.keyClick(spin, Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: not spin.hasFocus())


def test_scientific_notation_of_a_whole_number_is_that_number(qtbot, form):
    spin = _type_into(qtbot, form, "batch", "1e3")
    assert spin.lineEdit().text() == "1e3"  # as typed while the field has the focus
    assert form.values()["batch"] == 1000
    assert form.errors() == {}
    _leave(qtbot, form, spin)
    assert spin.lineEdit().text() == "1000"  # the number it wrote, never 13
    assert spin.value() == 1000
    assert form.config().batch == 1000
    _type_into(qtbot, form, "batch", "2.5e2")
    assert form.values()["batch"] == 250


def test_a_letter_is_refused_with_a_line_that_says_so(qtbot, form):
    spin = _type_into(qtbot, form, "batch", "12x")
    assert spin.lineEdit().text() == "12"
    error = form.error_label("batch")
    assert error.isVisible()
    assert error.text() == "'x' not taken: a whole number (digits, or 1e3)"
    assert form.values()["batch"] == 12
    qtbot.keyClicks(spin.lineEdit(), "8")  # the next key that makes a number clears the line
    assert spin.lineEdit().text() == "128"
    assert not error.isVisible() and form.errors() == {}
    form.grab().save("/tmp/shots/int_field_refused.png")


def test_a_number_that_is_not_whole_stays_as_typed_and_is_marked(qtbot, form):
    spin = _type_into(qtbot, form, "batch", "2.5")
    error = form.error_label("batch")
    assert error.isVisible() and error.text() == "must be a whole number, got 2.5"
    assert not form.is_valid()
    qtbot.keyClick(spin, Qt.Key.Key_Return)
    assert spin.lineEdit().text() == "2.5"  # not the last value put back without a word
    _leave(qtbot, form, spin)
    assert spin.lineEdit().text() == "2.5"
    assert error.text() == "must be a whole number, got 2.5"
    form.grab().save("/tmp/shots/int_field_not_whole.png")
    _type_into(qtbot, form, "batch", "64")
    assert form.values()["batch"] == 64 and form.is_valid() and not error.isVisible()


def test_a_float_field_says_why_a_letter_was_not_taken(qtbot, form):
    spin = _type_into(qtbot, form, "lr", "0.5q")
    assert spin.lineEdit().text() == "0.5"
    assert form.error_label("lr").text() == "'q' not taken: a number (0.5, 1e-4)"
