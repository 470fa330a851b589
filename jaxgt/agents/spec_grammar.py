"""The agent-spec grammar: ``name`` or ``name(key=value,...)`` with typed parameters.

A spec is written in OpenSpiel's game-string syntax, e.g. ``random``,
``policy(path=leduc.npz)``, ``oos(iterations=1000,delta=0.9,targeting=ist)``.
Values are bare (no quotes): integers, floats, ``true``/``false`` and strings
(a path, a choice such as ``ist``); ``none`` where a parameter is nullable.
Each value is converted to its parameter's type (:class:`Param`), so
``iterations=1.5`` or ``delta=high`` are errors naming the expected type.

A kind's parameters are not written out by hand: :func:`params_from` reads their
names, types and defaults from the constructors and configuration dataclasses that
define them (``inspect.signature``), so each default is stated once, in the code
that uses it; the catalogue (:mod:`jaxgt.agents.specs`) adds one-line help and the
checks made before any game is compiled (:class:`Doc`).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
from typing import Any

from jaxgt.core.checks import check_choice
from jaxgt.games.base import did_you_mean

TYPES = (int, float, bool, str)  # the types a spec value may have
_SPEC_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)
_EMPTY = inspect.Parameter.empty  # no default


@dataclasses.dataclass(frozen=True)
class Param:
  """One parameter of an agent kind: its name, type, default and one-line help.

  ``type`` is ``int``, ``float``, ``bool`` or ``str``; ``choices`` restricts a
  ``str`` parameter; ``minimum`` bounds a number from below (inclusive);
  ``nullable`` lets the value ``none`` stand for ``None`` (``default`` may be
  ``None``); ``required`` parameters have no default.
  """

  name: str
  type: type
  default: Any
  help: str
  choices: tuple | None = None
  minimum: float | None = None
  nullable: bool = False
  required: bool = False

  def usage(self) -> str:
    """``name=default`` (or ``name=a|b`` for choices, ``name=<type>`` when required)."""
    if self.choices:
      return f"{self.name}={'|'.join(self.choices)}"
    if self.required:
      return f"{self.name}=<{self.type.__name__}>"
    return f"{self.name}={show(self.default)}"

  def convert(self, kind: str, text: str):
    """The value of ``text`` (the raw spec text) as this parameter's type; ``ValueError`` else."""
    where = f"agent {kind!r}: parameter {self.name!r}"
    raw = text.strip()
    if self.nullable and raw.lower() == "none":
      return None
    if self.type is bool:
      if raw.lower() not in ("true", "false"):
        raise ValueError(f"{where} expects true or false, got {raw!r}")
      return raw.lower() == "true"
    if self.type is int:
      if not re.fullmatch(r"[+-]?\d+", raw):
        raise ValueError(f"{where} expects an integer, got {raw!r}")
      value = int(raw)
    elif self.type is float:
      try:
        value = float(raw)
      except ValueError:
        raise ValueError(f"{where} expects a number, got {raw!r}") from None
      if not math.isfinite(value):
        raise ValueError(f"{where} expects a finite number, got {raw!r}")
    else:
      if not raw:
        raise ValueError(f"{where} expects a non-empty string")
      if self.choices:
        check_choice(where, raw, self.choices)
      return raw
    if self.minimum is not None and value < self.minimum:
      raise ValueError(f"{where} must be >= {show(self.minimum)}, got {raw!r}")
    return value


@dataclasses.dataclass(frozen=True)
class Doc:
  """What a catalogue adds to a constructor's parameter to expose it in specs.

  ``help`` is the one-line help; ``choices`` and ``minimum`` are checked while
  parsing (before any game); ``default`` replaces the constructor's only where
  the constructor has none or the spec's kind fixes another (say why beside it).
  """

  help: str
  choices: tuple | None = None
  minimum: float | None = None
  default: Any = _EMPTY


def params_from(*sources, **docs: Doc | str) -> tuple:
  """One :class:`Param` per keyword of ``docs``, in that order, read from ``sources``.

  Each name is looked up in the signature of the first source that has it (a
  function, a class's ``__init__``, a dataclass's fields), which gives the
  default (none: required) and the type: the one of ``int``, ``float``,
  ``bool``, ``str`` the annotation names, else the default's; an annotation
  naming ``None`` (or a ``None`` default) makes the parameter nullable. A
  ``docs`` value is a :class:`Doc` or its help text.
  """
  table = {}
  for source in reversed(sources):
    table.update(inspect.signature(source).parameters)
  where = ", ".join(getattr(s, "__qualname__", repr(s)) for s in sources)
  out = []
  for name, doc in docs.items():
    doc = Doc(doc) if isinstance(doc, str) else doc
    if name not in table:
      raise ValueError(f"no parameter {name!r} in {where}")
    default = table[name].default if doc.default is _EMPTY else doc.default
    annotation = table[name].annotation
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__",
                                                                   str(annotation))
    named = set(re.findall(r"\b(int|float|bool|str)\b", text))
    kind = {t.__name__: t for t in TYPES}[named.pop()] if len(named) == 1 else type(default)
    if kind not in TYPES:
      raise ValueError(f"parameter {name!r} of {where}: type {kind.__name__} is not one of int, "
                       f"float, bool, str")
    out.append(Param(name, kind, None if default is _EMPTY else default, doc.help,
                     choices=doc.choices, minimum=doc.minimum, required=default is _EMPTY,
                     nullable=default is None or bool(re.search(r"\bNone\b", text))))
  return tuple(out)


def split_spec(text: str, example: str = "random") -> tuple[str, str | None]:
  """``(name, text inside the parentheses or None)`` of a spec; ``ValueError`` if malformed."""
  if not isinstance(text, str):
    raise ValueError(f"an agent spec is a string, got {type(text).__name__}")
  m = _SPEC_RE.match(text)
  if not m:
    raise ValueError(f"cannot parse agent spec {text!r}; expected name or name(key=value,...), "
                     f"e.g. {example}")
  return m.group(1), m.group(2)


def bind(kind: str, params: tuple, inner: str | None, text: str) -> dict:
  """Every parameter's value (given ones converted, defaults filled in) from ``inner``, the
  ``key=value,...`` text of the spec ``text``; ``ValueError`` naming the problem."""
  declared = {p.name: p for p in params}
  given: dict[str, str] = {}
  if inner is not None and inner.strip():
    for part in inner.split(","):
      if "=" not in part:
        raise ValueError(f"cannot parse {part.strip()!r} in agent spec {text!r}; expected key=value")
      k, v = (x.strip() for x in part.split("=", 1))
      if k not in declared:
        valid = ", ".join(declared) if declared else "none (it takes no parameters)"
        raise ValueError(f"unknown parameter {k!r}{did_you_mean(k, declared)} for agent "
                         f"{kind!r}; valid parameters: {valid}")
      if k in given:
        raise ValueError(f"parameter {k!r} given twice in agent spec {text!r}")
      given[k] = v
  values = {}
  for p in params:
    if p.name in given:
      values[p.name] = p.convert(kind, given[p.name])
    elif p.required:
      raise ValueError(f"agent {kind!r} needs parameter {p.name!r} ({p.help}): "
                       f"{usage(kind, params)}")
    else:
      values[p.name] = p.default
  return values


def usage(kind: str, params: tuple) -> str:
  """``kind(p=default,...)``, or ``kind`` without parameters."""
  return f"{kind}({','.join(p.usage() for p in params)})" if params else kind


def show(value) -> str:
  """A value as a spec writes it: ``none``, ``true``, ``1.0``, ``ist``."""
  if value is None:
    return "none"
  if isinstance(value, bool):
    return "true" if value else "false"
  if isinstance(value, float) and value == int(value) and abs(value) < 1e15:
    return f"{value:.1f}"
  return str(value)
