"""A settings form generated from an agent's config dataclass (``AgentConfig.specs()``).

Nothing here knows any particular agent: every editor, range, tooltip and error message comes from
the :class:`~agents.config.FieldSpec` of a field, so a new agent (or a new knob) gets its form for free.

Editors by field kind:

* ``int`` -> :class:`IntSpin` (a ``QSpinBox``), ``float`` -> :class:`FloatSpin` (a ``QDoubleSpinBox``).
  The arrows step inside the declared ``[low, high]`` (geometrically on a 1-2-5 ladder for ``log``
  fields such as learning rates); typed values are *not* clamped silently: a value outside the range
  stays in the box and is marked, with the reason from :meth:`FieldSpec.check`, under the field.
  An integer field reads a whole number in scientific notation (``1e3`` is 1000); a number that is not
  whole (``2.5``) stays as typed and is marked. A key that cannot be part of a number (a letter) is
  refused, and the line under the field says so: nothing typed changes without a word.
* ``choices`` -> ``QComboBox``; ``bool`` -> ``QCheckBox``; ``str`` -> ``QLineEdit``;
  tuples -> ``QLineEdit`` holding ``3,3,2,2``.
* ``advanced`` fields sit in a fold that opens by itself when one of them is invalid.

Presets: the box reads "choose a preset" until one is picked (Load is off until then) and shows the
preset loaded, or the placeholder again after Defaults. It is as wide as its longest name allows (a
name that does not fit the panel is cut in the middle, never at its end, and is whole in the
tooltip); after Load a marker says "applied: NAME", and "modified from NAME" as soon as a field (or what :attr:`ConfigForm.extra_changes` reports:
the Train tab's rules and budget) differs from the preset's values. Tab / Shift-Tab go through the
fields in the order they are shown, whatever agent the form was rebuilt for.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QFocusEvent, QKeyEvent, QPaintEvent, QPalette, QValidator
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from agents.config import AgentConfig, ConfigError, FieldSpec, list_presets, load_preset

INT32_MAX = 2**31 - 1
#: QDoubleSpinBox rounds its value to ``decimals`` places; enough for learning rates like 1e-9.
FLOAT_DECIMALS = 15
#: The unbounded side of a float field (QDoubleSpinBox needs a finite range).
FLOAT_LIMIT = 1e300
ERROR_STYLE = "color: #c62828;"
INVALID_EDITOR_STYLE = "border: 1px solid #c62828; background: #ffebee;"
APPLIED_STYLE = "color: #2e7d32;"
MODIFIED_STYLE = "color: #a15c00;"
#: The narrowest the preset box gets (in characters) before the panel must be widened instead.
PRESET_MIN_CHARS = 10
#: what the preset box shows while no preset is chosen (the fields hold the agent's defaults)
PRESET_PLACEHOLDER = "choose a preset"


def _ladder_step(value: float, up: bool, steps: int = 1) -> float:
    """Next value of the 1-2-5 ladder (..., 1e-4, 2e-4, 5e-4, 1e-3, ...) above / below ``value``.

    Log-scale knobs (learning rates) span decades; a linear step of 1e-5 would take thousands of clicks.
    """
    v = value
    for _ in range(abs(steps)):
        if v <= 0:
            v = 1e-6 if up else v
            continue
        exp = math.floor(math.log10(v))
        candidates = [m * 10.0**e for e in (exp - 1, exp, exp + 1) for m in (1.0, 2.0, 5.0)]
        if up:
            v = min(c for c in candidates if c > v * (1 + 1e-9))
        else:
            v = max(c for c in candidates if c < v * (1 - 1e-9))
    return float(f"{v:.12g}")


class _RangedStep:
    """Mixin for spin boxes: the hard range is wide (so nothing typed is clamped silently), while the
    arrows and PageUp/PageDown stay inside the field's declared range."""

    spec: FieldSpec

    def _declared_clamp(self, v: float) -> float:
        if self.spec.low is not None:
            v = max(v, self.spec.low)
        if self.spec.high is not None:
            v = min(v, self.spec.high)
        return v

    def _step_flags(self, value: float) -> QAbstractSpinBox.StepEnabledFlag:
        flags = QAbstractSpinBox.StepEnabledFlag.StepNone
        if self.spec.high is None or value < self.spec.high:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepUpEnabled
        if self.spec.low is None or value > self.spec.low:
            flags |= QAbstractSpinBox.StepEnabledFlag.StepDownEnabled
        return flags


#: What a number may be typed with (digits, a point, an exponent and its signs).
NUMBER_CHARS = "0123456789.eE+-"


def whole_number(text: str) -> int | None:
    """``"1000"``, ``"1e3"``, ``"1.5e3"`` -> the whole number they write; None for anything else
    (``"2.5"``, ``"1e"``, ``"x"``, an infinity)."""
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        pass
    if not t or any(ch not in NUMBER_CHARS for ch in t):
        return None  # float() would also read "inf", "nan" and "1_000"
    try:
        v = float(t)
    except ValueError:
        return None
    if not math.isfinite(v) or not v.is_integer():
        return None
    return int(v)


def _refusal(text: str, whole: bool) -> str:
    """The line under a number field whose key was refused."""
    bad = next((ch for ch in text.strip() if ch not in NUMBER_CHARS), "")
    what = "a whole number (digits, or 1e3)" if whole else "a number (0.5, 1e-4)"
    return f"'{bad}' not taken: {what}"  # one short line: it sits under a narrow field


class IntSpin(_RangedStep, QSpinBox):
    """Integer knob. Hard range: int32; arrows: the declared range.

    QSpinBox alone read "1e3" as "13" (it drops the "e") and dropped letters without a word. Here
    :func:`whole_number` reads what is typed, a number on its way ("1e", "-", "2.5") stays in the box
    as typed (the form marks it: :meth:`_Field.raw` reads the text, not the last value), and a key that
    cannot be part of a number is refused with :attr:`refused` saying so.
    """

    #: a key was refused: the one line to show under the field
    refused = Signal(str)

    def __init__(self, spec: FieldSpec, parent: QWidget | None = None) -> None:
        QSpinBox.__init__(self, parent)
        self.spec = spec
        self.setRange(-INT32_MAX - 1, INT32_MAX)
        self.setSingleStep(int(spec.step) if spec.step else 1)
        self.setKeyboardTracking(True)

    def textFromValue(self, value: int) -> str:
        return str(value)  # no group separators: what is shown reads back as typed

    def valueFromText(self, text: str) -> int:
        v = whole_number(text)
        return self.value() if v is None else v

    def validate(self, text: str, pos: int) -> tuple[QValidator.State, str, int]:
        v = whole_number(text)
        if v is not None and self.minimum() <= v <= self.maximum():
            return QValidator.State.Acceptable, text, pos
        if all(ch in NUMBER_CHARS for ch in text.strip()):
            return QValidator.State.Intermediate, text, pos  # "1e", "-", "2.5", or too large: marked
        self.refused.emit(_refusal(text, whole=True))
        return QValidator.State.Invalid, text, pos

    def fixup(self, text: str) -> str:
        return text  # never replace what was typed: the form marks it instead

    def _typed_is_number(self) -> bool:
        return self.validate(self.lineEdit().text(), 0)[0] == QValidator.State.Acceptable

    def focusOutEvent(self, event: QFocusEvent) -> None:
        if self._typed_is_number():
            super().focusOutEvent(event)
            return
        # QAbstractSpinBox would put the last value back over "2.5": keep it, marked, instead.
        QApplication.sendEvent(self.lineEdit(), event)
        QWidget.focusOutEvent(self, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not self._typed_is_number():
            event.ignore()  # Enter would put the last value back over what was typed
            return
        super().keyPressEvent(event)

    def stepBy(self, steps: int) -> None:
        if self.spec.log:
            v = _ladder_step(max(1, self.value()), steps > 0, abs(steps))
            target = round(v)
        else:
            target = self.value() + steps * self.singleStep()
        self.setValue(int(self._declared_clamp(target)))
        self.selectAll()

    def stepEnabled(self) -> QAbstractSpinBox.StepEnabledFlag:
        return self._step_flags(self.value())


class FloatSpin(_RangedStep, QDoubleSpinBox):
    """Float knob shown in ``%g`` (so 5e-05 reads as such, not 0.00); accepts ``1e-4`` typed in. A key
    that cannot be part of a number is refused with :attr:`refused` saying so."""

    #: a key was refused: the one line to show under the field
    refused = Signal(str)

    def __init__(self, spec: FieldSpec, parent: QWidget | None = None) -> None:
        QDoubleSpinBox.__init__(self, parent)
        self.spec = spec
        self.setDecimals(FLOAT_DECIMALS)
        self.setRange(-FLOAT_LIMIT, FLOAT_LIMIT)
        if spec.step:
            self.setSingleStep(spec.step)
        elif spec.low is not None and spec.high is not None and not spec.log:
            # About a hundred clicks from one end to the other, rounded to a readable step.
            span = float(spec.high) - float(spec.low)
            self.setSingleStep(10.0 ** math.floor(math.log10(span / 100)) if span > 0 else 0.1)
        else:
            self.setSingleStep(0.1)
        self.setKeyboardTracking(True)

    def textFromValue(self, value: float) -> str:
        return f"{value:.10g}"

    def valueFromText(self, text: str) -> float:
        try:
            return float(text.strip())
        except ValueError:
            return self.value()

    def validate(self, text: str, pos: int) -> tuple[QValidator.State, str, int]:
        t = text.strip()
        try:
            float(t)
            return QValidator.State.Acceptable, text, pos
        except ValueError:
            # "1e-", "-", "" are on their way to a number; anything with letters other than e is not.
            if all(ch in NUMBER_CHARS for ch in t):
                return QValidator.State.Intermediate, text, pos
            self.refused.emit(_refusal(text, whole=self.decimals() == 0))
            return QValidator.State.Invalid, text, pos

    def fixup(self, text: str) -> str:
        return self.textFromValue(self.value())

    def stepBy(self, steps: int) -> None:
        if self.spec.log:
            target = _ladder_step(self.value(), steps > 0, abs(steps))
        else:
            target = round(self.value() + steps * self.singleStep(), 12)
        self.setValue(self._declared_clamp(target))
        self.selectAll()

    def stepEnabled(self) -> QAbstractSpinBox.StepEnabledFlag:
        return self._step_flags(self.value())


def _tooltip(spec: FieldSpec) -> str:
    lines = [spec.help or spec.label]
    if spec.choices:
        lines.append("one of: " + ", ".join(map(str, spec.choices)))
    elif spec.low is not None or spec.high is not None:
        lo = "-∞" if spec.low is None else f"{spec.low:g}"
        hi = "∞" if spec.high is None else f"{spec.high:g}"
        each = " (each value)" if spec.kind.endswith("_tuple") else ""
        lines.append(f"range {lo} .. {hi}{each}" + (" — log scale" if spec.log else ""))
    if spec.kind.endswith("_tuple"):
        lines.append("comma-separated, e.g. " + (spec.format(spec.default) or "1,2,3"))
    lines.append(f"default: {spec.format(spec.default)}")
    lines.append(f"setting {spec.name} (command line: --{spec.name.replace('_', '-')})")
    return "\n".join(lines)


class _Field:
    """One knob's editor, its error label and the glue to read / write typed values."""

    def __init__(self, spec: FieldSpec, on_change: Any) -> None:
        self.spec = spec
        self.editor: QWidget
        if spec.choices is not None:
            combo = QComboBox()
            for c in spec.choices:
                combo.addItem(str(c), c)
            # As narrow as the panel needs (its longest choice made the form wider than the panel).
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(6)
            combo.currentIndexChanged.connect(on_change)
            self.editor = combo
        elif spec.kind == "bool":
            box = QCheckBox()
            box.toggled.connect(on_change)
            self.editor = box
        elif spec.kind == "int" and _fits_int32(spec):
            spin = IntSpin(spec)
            spin.valueChanged.connect(on_change)
            # "2.5" or "1e" is no value yet: the form must still mark it as it is typed
            spin.lineEdit().textChanged.connect(on_change)
            spin.refused.connect(self.say_refused)
            self.editor = spin
        elif spec.kind in ("int", "float"):
            fspin = FloatSpin(spec)
            if spec.kind == "int":
                fspin.setDecimals(0)
                fspin.setSingleStep(spec.step or 1)
            fspin.valueChanged.connect(on_change)
            fspin.refused.connect(self.say_refused)
            self.editor = fspin
        else:
            edit = QLineEdit()
            edit.textChanged.connect(on_change)
            self.editor = edit
        self.editor.setObjectName(f"field_{spec.name}")
        self.editor.setToolTip(_tooltip(spec))
        self.error = QLabel()
        self.error.setObjectName(f"error_{spec.name}")
        self.error.setStyleSheet(ERROR_STYLE)
        self.error.setWordWrap(True)
        self.error.hide()
        self.container = QWidget()
        box_layout = QVBoxLayout(self.container)
        box_layout.setContentsMargins(0, 0, 0, 0)
        box_layout.setSpacing(1)
        box_layout.addWidget(self.editor)
        box_layout.addWidget(self.error)
        self.label = QLabel(spec.label[:1].upper() + spec.label[1:])
        self.label.setToolTip(self.editor.toolTip())
        self.label.setBuddy(self.editor)

    def raw(self) -> Any:
        """The editor's value, typed; ConfigError when the text does not parse."""
        e = self.editor
        if isinstance(e, QComboBox):
            return e.currentData()
        if isinstance(e, QCheckBox):
            return e.isChecked()
        if isinstance(e, QSpinBox):
            # The line edit may hold text the box has not taken ("2.5", "1e" while typing): read it.
            text = e.lineEdit().text()
            whole = whole_number(text)
            if whole is None:
                try:
                    x = float(text.strip())
                except ValueError:
                    raise ConfigError(
                        self.spec.name, f"cannot read {text.strip()!r} as a whole number"
                    ) from None
                raise ConfigError(self.spec.name, f"must be a whole number, got {x:g}")
            return whole
        if isinstance(e, QDoubleSpinBox):
            # The line edit may hold text that the box has not taken yet ("1e-" while typing).
            try:
                v = float(e.lineEdit().text().strip())
            except ValueError:
                raise ConfigError(
                    self.spec.name, f"cannot read {e.lineEdit().text()!r} as a number"
                ) from None
            if self.spec.kind == "int":
                if not v.is_integer():
                    raise ConfigError(self.spec.name, f"must be a whole number, got {v:g}")
                return int(v)
            return v
        assert isinstance(e, QLineEdit)
        return self.spec.parse(e.text())

    def set(self, value: Any) -> None:
        e = self.editor
        if isinstance(e, QComboBox):
            idx = e.findData(value)
            if idx < 0:
                # A value outside the choices (an old preset): show it, so the error can point at it.
                e.addItem(f"{value} (not allowed)", value)
                idx = e.count() - 1
            e.setCurrentIndex(idx)
        elif isinstance(e, QCheckBox):
            e.setChecked(bool(value))
        elif isinstance(e, QSpinBox):
            e.setValue(int(value))
        elif isinstance(e, QDoubleSpinBox):
            e.setValue(float(value))
        else:
            assert isinstance(e, QLineEdit)
            e.setText(self.spec.format(value) if isinstance(value, (tuple, list)) else str(value))

    def say_refused(self, message: str) -> None:
        """A key was refused: say so on the field's error line (the next edit's validation replaces it)."""
        self.error.setText(message)
        self.error.show()

    def mark(self, reason: str | None) -> None:
        if reason:
            self.error.setText(reason)
            self.error.show()
            self.editor.setStyleSheet(INVALID_EDITOR_STYLE)
            self.editor.setProperty("invalid", True)
        else:
            self.error.clear()
            self.error.hide()
            self.editor.setStyleSheet("")
            self.editor.setProperty("invalid", False)


def _fits_int32(spec: FieldSpec) -> bool:
    return (
        all(b is None or abs(b) <= INT32_MAX for b in (spec.low, spec.high))
        and abs(int(spec.default)) <= INT32_MAX
    )


class PresetCombo(QComboBox):
    """The preset picker: asks for the width of its longest name, may be given less (down to
    :data:`PRESET_MIN_CHARS` characters), and then shows the name cut in the middle ("dqn-s…00-conv"),
    so that both its agent and its variant stay readable; the tooltip always holds the whole name."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        # Not AdjustToContents: that resizes the box itself on every change, fighting its layout.
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setPlaceholderText(PRESET_PLACEHOLDER)
        self.currentIndexChanged.connect(self._update_tooltip)

    def set_names(self, names: list[str], empty: str = "(none)") -> None:
        """The presets to offer (``empty``, with no data, when there is none), none of them chosen.

        The box shows "choose a preset" until one is picked: showing the first name read as if that
        preset were in the fields, which hold the agent's defaults until Load."""
        self.blockSignals(True)
        try:
            self.clear()
            for name in names:
                self.addItem(name, name)
            if not names:
                self.addItem(empty, None)
            self.setCurrentIndex(-1 if names else 0)
        finally:
            self.blockSignals(False)
        self._update_tooltip()
        self.currentIndexChanged.emit(self.currentIndex())
        self.updateGeometry()

    def choose(self, name: str | None) -> None:
        """Show ``name`` as the chosen preset (None: none chosen, the placeholder)."""
        self.setCurrentIndex(self.findData(name) if name is not None else -1)

    def _hint_for(self, text_width: int) -> QSize:
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        inner = QSize(text_width, self.fontMetrics().height())
        width = self.style().sizeFromContents(QStyle.ContentsType.CT_ComboBox, opt, inner, self).width()
        return QSize(width, super().sizeHint().height())

    def sizeHint(self) -> QSize:
        fm = self.fontMetrics()
        texts = [self.itemText(i) for i in range(self.count())] + [self.placeholderText()]
        widest = max(fm.horizontalAdvance(t) for t in texts)
        return self._hint_for(widest + fm.horizontalAdvance("x"))

    def minimumSizeHint(self) -> QSize:
        return self._hint_for(self.fontMetrics().horizontalAdvance("x" * PRESET_MIN_CHARS))

    def _text_rect_width(self) -> int:
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        rect = self.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, opt, QStyle.SubControl.SC_ComboBoxEditField, self
        )
        return rect.width()

    def shown_text(self) -> str:
        """The current name as it is drawn: whole, or cut in the middle when the box is too narrow."""
        return self.fontMetrics().elidedText(
            self._label(), Qt.TextElideMode.ElideMiddle, self._text_rect_width()
        )

    def _label(self) -> str:
        """The whole text the box stands for: the chosen name, or the placeholder."""
        return self.currentText() if self.currentIndex() >= 0 else self.placeholderText()

    def is_elided(self) -> bool:
        return self.shown_text() != self._label()

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QStylePainter(self)
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, opt)
        if self.currentIndex() < 0:
            # the placeholder in the style's placeholder colour, as Qt draws it: it must not read as a name
            opt.palette.setBrush(
                QPalette.ColorRole.ButtonText, opt.palette.brush(QPalette.ColorRole.PlaceholderText)
            )
        opt.currentText = self.shown_text()
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, opt)

    def _update_tooltip(self, *_: Any) -> None:
        name = self.currentData()
        self.setToolTip(
            f"Preset {name} (resources/presets/{name}.json): Load puts its settings in the form"
            if name
            else "Settings of a seed experiment (resources/presets): choose one, then Load"
        )


def _fields_layout(widget: QWidget, indent: int) -> QFormLayout:
    """The form's label / field rows in ``widget``, ``indent`` pixels from the left (the advanced
    fields sit a step in). Fields take the width; a narrow panel puts a long label above its field
    rather than cutting the field at the edge."""
    form = QFormLayout(widget)
    form.setContentsMargins(indent, 0, 0, 0)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
    return form


class ConfigForm(QWidget):
    """The form of one config class; ``set_config_class`` rebuilds it for another agent.

    ``values()`` -> dict of typed values (what the fields hold, valid or not); ``set_values(dict)``;
    ``config()`` -> a validated config or ConfigError, with the guilty field marked; ``errors()``.
    """

    #: a field changed (after validation ran)
    changed = Signal()
    #: the whole form became valid (True) or invalid (False)
    validityChanged = Signal(bool)
    #: a preset was loaded: the whole preset dict (config, and maybe rules and budget for the caller)
    presetLoaded = Signal(dict)

    def __init__(
        self,
        config_cls: type[AgentConfig] | None = None,
        agent: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("configForm")
        self._fields: dict[str, _Field] = {}
        self._config_cls: type[AgentConfig] | None = None
        self._agent: str | None = None
        self._valid = True
        self._building = False
        #: the preset last loaded and the values it put in the fields (None: defaults or hand-made)
        self._applied: tuple[str, dict[str, Any]] | None = None
        self._applied_description = ""
        #: what else a preset set and now differs (the Train tab's rules, budget): labels, or none
        self.extra_changes: Callable[[], list[str]] | None = None
        #: the widget Tab leaves for the first field (None: Defaults); the Train tab puts its budget
        #: between the preset rows and the fields, and chains it in after Defaults
        self.chain_start: QWidget | None = None

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self._build_preset_header())

        self._body = QWidget()
        self._form = _fields_layout(self._body, indent=0)
        outer.addWidget(self._body)

        self.advancedToggle = QToolButton()
        self.advancedToggle.setObjectName("advancedToggle")
        self.advancedToggle.setCheckable(True)
        self.advancedToggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.advancedToggle.setArrowType(Qt.ArrowType.RightArrow)
        self.advancedToggle.setText("Advanced")
        self.advancedToggle.setAutoRaise(True)
        self.advancedToggle.toggled.connect(self._fold)
        outer.addWidget(self.advancedToggle)
        self._advanced = QWidget()
        self._advanced_form = _fields_layout(self._advanced, indent=12)
        self._advanced.hide()
        outer.addWidget(self._advanced)

        self._empty = QLabel("This agent has no settings.")
        self._empty.setEnabled(False)
        outer.addWidget(self._empty)

        if config_cls is not None:
            self.set_config_class(config_cls, agent)

    def _build_preset_header(self) -> QWidget:
        # The box has the row to itself but for Load (it was cut to "dqn-seec" beside two buttons);
        # Defaults sits under it, beside the marker that says which preset the fields hold. The three
        # rows are one widget, ``presetHeader``, that a caller may place elsewhere (the Train tab
        # keeps it on screen above its scrolled settings).
        self.presetHeader = QWidget()
        self.presetHeader.setObjectName("presetHeader")
        header = QVBoxLayout(self.presetHeader)
        header.setContentsMargins(0, 0, 0, 0)
        preset_row = QHBoxLayout()
        preset_row.addWidget(QLabel("Preset"))
        self.presetCombo = PresetCombo()
        self.presetCombo.setObjectName("presetCombo")
        preset_row.addWidget(self.presetCombo, 1)
        self.presetButton = QPushButton("Load")
        self.presetButton.setObjectName("presetButton")
        self.presetButton.setToolTip("Put the chosen preset's settings in the form")
        self.presetButton.clicked.connect(self._load_selected_preset)
        self.presetCombo.currentIndexChanged.connect(self._enable_load)
        preset_row.addWidget(self.presetButton)
        header.addLayout(preset_row)
        marker_row = QHBoxLayout()
        self.presetMarker = QLabel()
        self.presetMarker.setObjectName("presetMarker")
        self.presetMarker.setWordWrap(True)
        marker_row.addWidget(self.presetMarker, 1)
        self.defaultsButton = QPushButton("Defaults")
        self.defaultsButton.setObjectName("defaultsButton")
        self.defaultsButton.setToolTip("Reset every field to the agent's default")
        self.defaultsButton.clicked.connect(self.reset_defaults)
        marker_row.addWidget(self.defaultsButton, 0, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop)
        header.addLayout(marker_row)
        self._notes = QVBoxLayout()
        self._notes.setContentsMargins(0, 0, 0, 0)
        header.addLayout(self._notes)
        return self.presetHeader

    # ------------------------------------------------------------------ building
    @property
    def config_cls(self) -> type[AgentConfig] | None:
        return self._config_cls

    def field_widget(self, name: str) -> QWidget:
        """The editor of field ``name`` (for tests and for focusing an invalid field)."""
        return self._fields[name].editor

    def error_label(self, name: str) -> QLabel:
        return self._fields[name].error

    def set_config_class(self, config_cls: type[AgentConfig], agent: str | None = None) -> None:
        """Rebuild the form for ``config_cls`` with its defaults; ``agent`` selects its presets."""
        self._building = True
        try:
            for form in (self._form, self._advanced_form):
                while form.rowCount():
                    form.removeRow(0)
            self._fields.clear()
            self._config_cls = config_cls
            self._agent = agent
            specs = config_cls.specs()
            for spec in specs:
                f = _Field(spec, self._on_change)
                (self._advanced_form if spec.advanced else self._form).addRow(f.label, f.container)
                # Shown now, not when the layout next activates (a queued show): callers and tests
                # look at the fields right after switching agents.
                f.label.show()
                f.container.show()
                self._fields[spec.name] = f
                f.set(spec.default)
            n_adv = sum(1 for s in specs if s.advanced)
            self.advancedToggle.setVisible(n_adv > 0)
            self.advancedToggle.setText(f"Advanced ({n_adv})")
            self._fold(self.advancedToggle.isChecked())
            self._empty.setVisible(not specs)
            self._refresh_presets()
            self._chain_focus()
        finally:
            self._building = False
        self._applied = None
        self.validate()
        self.refresh_preset_marker()

    def _chain_focus(self) -> None:
        """Tab order: Defaults, the shown fields, the fold, its fields, then what followed the form.

        Fields built for an agent chosen later were created after every other widget of the window,
        so Qt's default order sent Tab from the last field back to the window's first widget (the
        scroll area jumped to the top) and Tab from Defaults past all the fields."""
        previous: QWidget = self.chain_start or self.defaultsButton
        basic = [f.editor for f in self._fields.values() if not f.spec.advanced]
        advanced = [f.editor for f in self._fields.values() if f.spec.advanced]
        for widget in [*basic, self.advancedToggle, *advanced]:
            QWidget.setTabOrder(previous, widget)
            previous = widget

    def _refresh_presets(self) -> None:
        names: list[str] = []
        if self._agent is not None:
            try:
                names = list_presets(self._agent)
            except ValueError:
                names = []  # a broken preset file must not break the form; loading it says why
        self.presetCombo.set_names(names)
        self.presetCombo.setEnabled(bool(names))
        self._enable_load()

    def _enable_load(self, *_: Any) -> None:
        self.presetButton.setEnabled(bool(self.presetCombo.currentData()))

    def add_note(self, widget: QWidget) -> None:
        """Show ``widget`` under the preset marker (the Train tab's word on what a preset set besides)."""
        self._notes.addWidget(widget)

    def _fold(self, open_: bool) -> None:
        self._advanced.setVisible(open_ and bool(self._advanced_form.rowCount()))
        self.advancedToggle.setArrowType(Qt.ArrowType.DownArrow if open_ else Qt.ArrowType.RightArrow)

    # ------------------------------------------------------------------ values
    def values(self) -> dict[str, Any]:
        """Field name -> typed value as the form holds it (valid or not; unparseable text stays a string)."""
        out: dict[str, Any] = {}
        for name, f in self._fields.items():
            try:
                out[name] = f.raw()
            except ConfigError:
                out[name] = f.editor.text() if isinstance(f.editor, QLineEdit) else None
        return out

    def set_values(self, values: dict[str, Any]) -> None:
        """Put ``values`` in their fields (others keep theirs); unknown names raise ConfigError."""
        unknown = sorted(set(values) - set(self._fields))
        if unknown:
            raise ConfigError(
                unknown[0], f"is not a setting of this agent (known: {', '.join(self._fields)})"
            )
        self._building = True
        try:
            for name, v in values.items():
                self._fields[name].set(v)
        finally:
            self._building = False
        self.validate()
        self.refresh_preset_marker()

    def reset_defaults(self) -> None:
        """Every field to the agent's default (no preset applied any more)."""
        self._applied = None
        self.presetCombo.choose(None)
        if self._config_cls is not None:
            self.set_values({s.name: s.default for s in self._config_cls.specs()})
        self.refresh_preset_marker()

    def load_preset(self, name: str) -> dict[str, Any]:
        """Load preset ``name`` into the form; returns the preset (its rules / budget are the caller's)."""
        preset = load_preset(name)
        if self._agent is not None and preset.get("agent") != self._agent:
            raise ValueError(f"preset {name!r} is for agent {preset.get('agent')!r}, not {self._agent!r}")
        if self._config_cls is not None:
            self.reset_defaults()
        self.set_values(dict(preset.get("config", {})))
        self._applied = (name, self.values())
        self.presetCombo.choose(name)
        self._applied_description = str(preset.get("description", ""))
        self.refresh_preset_marker()
        self.presetLoaded.emit(preset)
        self.refresh_preset_marker()  # the caller may have set more from it (rules, budget)
        return preset

    # ------------------------------------------------------------------ the applied preset
    @property
    def applied_preset(self) -> str | None:
        """The preset last loaded (modified since or not); None after Defaults or another agent."""
        return self._applied[0] if self._applied is not None else None

    def preset_changes(self) -> list[str]:
        """The labels of what differs from the applied preset's values (empty: none, or no preset)."""
        if self._applied is None:
            return []
        now = self.values()
        changed = [
            f.label.text() for name, f in self._fields.items() if now[name] != self._applied[1].get(name)
        ]
        if self.extra_changes is not None:
            changed += self.extra_changes()
        return changed

    def preset_modified(self) -> bool:
        return bool(self.preset_changes())

    def refresh_preset_marker(self) -> None:
        """Say which preset the fields hold: "applied: NAME", "modified from NAME", or nothing."""
        if self._applied is None:
            self.presetMarker.clear()
            self.presetMarker.setToolTip("")
            self.presetMarker.hide()
            return
        name = self._applied[0]
        changes = self.preset_changes()
        if changes:
            self.presetMarker.setText(f"modified from {name}")
            self.presetMarker.setStyleSheet(MODIFIED_STYLE)
            tip = f"Differs from preset {name} in: {', '.join(changes)} (Load it again to go back)"
        else:
            self.presetMarker.setText(f"applied: {name}")
            self.presetMarker.setStyleSheet(APPLIED_STYLE)
            tip = f"The fields hold preset {name}'s values"
        about = self._applied_description
        self.presetMarker.setToolTip(f"{tip}\n\n{about}" if about else tip)
        self.presetMarker.show()

    def _load_selected_preset(self) -> None:
        name = self.presetCombo.currentData()
        if not name:
            return
        try:
            self.load_preset(str(name))
        except (ValueError, ConfigError) as e:
            from PySide6.QtWidgets import QMessageBox

            QMessageBox.warning(self, "Preset", str(e))

    # ------------------------------------------------------------------ validation
    def errors(self) -> dict[str, str]:
        """Field -> reason for every invalid field right now (the same marks the form shows)."""
        errs: dict[str, str] = {}
        typed: dict[str, Any] = {}
        for name, f in self._fields.items():
            try:
                typed[name] = f.spec.check(f.raw())
            except ConfigError as e:
                errs[name] = e.reason
        if not errs and self._config_cls is not None:
            # Cross-field rules live in the config's validate(): build it to run them.
            try:
                self._config_cls.from_dict(typed)
            except ConfigError as e:
                errs[e.field if e.field in self._fields else next(iter(self._fields), "")] = e.reason
            except (TypeError, ValueError) as e:
                errs[next(iter(self._fields), "")] = str(e)
        return errs

    def validate(self) -> bool:
        """Mark every invalid field with its reason; True when the form is valid."""
        errs = self.errors()
        for name, f in self._fields.items():
            f.mark(errs.get(name))
        if any(self._fields[n].spec.advanced for n in errs if n in self._fields):
            self.advancedToggle.setChecked(True)  # never hide an error in a folded section
        valid = not errs
        if valid != self._valid:
            self._valid = valid
            self.validityChanged.emit(valid)
        return valid

    def is_valid(self) -> bool:
        return self._valid

    def config(self) -> AgentConfig:
        """The validated config; raises ConfigError (field marked, focused) when a value is wrong."""
        if self._config_cls is None:
            raise RuntimeError("the form has no config class")
        errs = self.errors()
        self.validate()
        if errs:
            name, reason = next(iter(errs.items()))
            if name in self._fields:
                self._fields[name].editor.setFocus()
            raise ConfigError(name, reason)
        return self._config_cls.from_dict({n: f.spec.check(f.raw()) for n, f in self._fields.items()})

    def _on_change(self, *_: Any) -> None:
        if self._building:
            return
        self.validate()
        self.refresh_preset_marker()
        self.changed.emit()
