"""Agent specs: the one parser of agent strings and the registry of agent kinds.

An agent spec names an agent kind and its parameters in OpenSpiel's game-string
syntax: ``name`` or ``name(key=value,...)``, e.g. ``random``,
``policy(path=leduc.npz)``, ``oos(iterations=1000,delta=0.9,targeting=ist)``.
Values are written bare (no quotes): integers, floats, ``true``/``false`` and
strings (a path, a choice such as ``ist``); ``none`` where a parameter
documents it. Each value is converted to the type the kind declares for the
parameter (:class:`Param`), so ``iterations=1.5`` or ``delta=high`` are errors
naming the expected type; unknown kinds and unknown parameters are errors
naming the valid ones. :func:`parse_spec` needs no game, so every such error
comes before a game is compiled.

A kind is registered with one call::

  register_agent("mykind", build, params=(Param("iterations", int, 1000, "per move", minimum=1),),
                 description="one line", check=None)

``build(game, **params) -> Agent`` receives every declared parameter (the
defaults filled in); the optional ``check(**params)`` validates them without
a game (e.g. by constructing the solver's hyperparameter dataclass), so range
errors also come before compilation. Built-in kinds: ``random``, ``policy``,
``oos``, ``ismcts``, ``uct``, ``smooth_uct``, ``resolving``; later agents
(Growing-Tree CFR, trained networks) add a ``register_agent`` call at the end
of this module. :func:`describe_agents` lists every kind with its parameters
and defaults (``jaxgt agents``, ``jaxgt match --help``).
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import os
import re
from typing import Any, Callable

import numpy as np

from jaxgt.agents.base import Agent, PolicyAgent
from jaxgt.core.checks import check_choice, check_nonnegative_int, check_positive_int


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
    return f"{self.name}={_show(self.default)}"

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
      raise ValueError(f"{where} must be >= {_show(self.minimum)}, got {raw!r}")
    return value


@dataclasses.dataclass(frozen=True)
class AgentKind:
  """A registered agent kind (see :func:`register_agent`)."""

  name: str
  build: Callable[..., Agent]  # build(game, **params) -> Agent
  params: tuple  # of :class:`Param`
  description: str
  check: Callable[..., None] | None = None  # check(**params): game-independent validation

  def usage(self) -> str:
    """``name(p=default,...)``, or ``name`` without parameters."""
    if not self.params:
      return self.name
    return f"{self.name}({','.join(p.usage() for p in self.params)})"


@dataclasses.dataclass(frozen=True)
class AgentSpec:
  """A parsed, validated agent spec: the kind and every parameter's value (defaults filled in)."""

  kind: str
  params: dict
  text: str  # the spec as written

  def build(self, game) -> Agent:
    """The agent of this spec for ``game`` (a :class:`~jaxgt.core.compiler.CompiledGame`).

    A ``ValueError`` of the kind's builder (e.g. a policy file of another game)
    is re-raised with the spec in front.
    """
    try:
      return _REGISTRY[self.kind].build(game, **self.params)
    except ValueError as e:
      raise type(e)(f"agent {self.text!r}: {e}") from e

  @property
  def needs_x64(self) -> bool:
    """Whether the agent computes in float64 (its ``dtype`` parameter), so 64-bit JAX must be on."""
    return self.params.get("dtype") == "float64"

  def __str__(self) -> str:
    return self.text


_REGISTRY: dict[str, AgentKind] = {}
_SPEC_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*$", re.S)


def register_agent(name: str, build: Callable[..., Agent], params=(), description: str = "",
                   check: Callable[..., None] | None = None) -> AgentKind:
  """Registers (or replaces) the agent kind ``name``; returns it.

  ``build(game, **params)`` makes the agent; ``params`` is a sequence of
  :class:`Param`; ``check(**params)`` (optional) validates the values without
  a game and raises ``ValueError``.
  """
  if not isinstance(name, str) or not name.isidentifier():
    raise ValueError(f"agent kind names are identifiers, got {name!r}")
  bad = [p.name for p in params if p.type not in (int, float, bool, str)]
  if bad:
    raise ValueError(f"agent kind {name!r}: parameters {bad} must have type int, float, bool or str")
  names = [p.name for p in params]
  if len(set(names)) != len(names):
    raise ValueError(f"agent kind {name!r} declares a parameter twice: {names}")
  kind = AgentKind(name, build, tuple(params), description, check)
  _REGISTRY[name] = kind
  return kind


def agent_kinds() -> dict[str, AgentKind]:
  """The registered agent kinds by name."""
  return dict(_REGISTRY)


def parse_spec(text: str) -> AgentSpec:
  """Parses and validates an agent spec (no game needed); raises ``ValueError`` naming the problem.

  ``"oos(iterations=100,targeting=pst)"`` gives ``AgentSpec("oos", {"iterations": 100,
  "delta": 0.9, "targeting": "pst", ...})``.
  """
  if not isinstance(text, str):
    raise ValueError(f"an agent spec is a string, got {type(text).__name__}")
  m = _SPEC_RE.match(text)
  if not m:
    raise ValueError(f"cannot parse agent spec {text!r}; expected name or name(key=value,...), "
                     f"e.g. {_example()}")
  name, inner = m.group(1), m.group(2)
  kind = _REGISTRY.get(name)
  if kind is None:
    raise ValueError(f"unknown agent {name!r}; valid agents: {', '.join(sorted(_REGISTRY))}")
  declared = {p.name: p for p in kind.params}
  given: dict[str, str] = {}
  if inner is not None and inner.strip():
    for part in inner.split(","):
      if "=" not in part:
        raise ValueError(f"cannot parse {part.strip()!r} in agent spec {text!r}; expected key=value")
      k, v = (x.strip() for x in part.split("=", 1))
      if k not in declared:
        valid = ", ".join(declared) if declared else "none (it takes no parameters)"
        raise ValueError(f"unknown parameter {k!r} for agent {name!r}; valid parameters: {valid}")
      if k in given:
        raise ValueError(f"parameter {k!r} given twice in agent spec {text!r}")
      given[k] = v
  params = {}
  for p in kind.params:
    if p.name in given:
      params[p.name] = p.convert(name, given[p.name])
    elif p.required:
      raise ValueError(f"agent {name!r} needs parameter {p.name!r} ({p.help}): "
                       f"{kind.usage()}")
    else:
      params[p.name] = p.default
  if kind.check is not None:
    try:
      kind.check(**params)
    except ValueError as e:
      raise ValueError(f"agent {name!r}: {e}") from None
  return AgentSpec(name, params, text.strip())


def make_agent(game, spec: str | AgentSpec) -> Agent:
  """The agent of ``spec`` (a string or a parsed :class:`AgentSpec`) for ``game``."""
  if not isinstance(spec, AgentSpec):
    spec = parse_spec(spec)
  return spec.build(game)


def describe_agents() -> str:
  """Every registered kind with its parameters, defaults and help (the ``jaxgt agents`` listing)."""
  lines = []
  for name in sorted(_REGISTRY):
    kind = _REGISTRY[name]
    lines.append(f"{kind.usage()}")
    if kind.description:
      lines.append(f"    {kind.description}")
    for p in kind.params:
      extra = "" if p.required else f" (default {_show(p.default)})"
      lines.append(f"      {p.name:<12} {p.type.__name__:<5} {p.help}{extra}")
  return "\n".join(lines)


def _show(value) -> str:
  if value is None:
    return "none"
  if isinstance(value, bool):
    return "true" if value else "false"
  if isinstance(value, float) and value == int(value) and abs(value) < 1e15:
    return f"{value:.1f}"
  return str(value)


def _example() -> str:
  return "oos(iterations=1000,targeting=ist)" if "oos" in _REGISTRY else "random"


def _any_dtype(params: dict) -> dict:
  """``params`` with ``dtype`` float32 for game-free checks: the choice is already validated, and
  64-bit JAX is turned on only after parsing (:attr:`AgentSpec.needs_x64`)."""
  return {**params, "dtype": "float32"}


# ----------------------------------------------------------------- built-in kinds
# Agent modules are imported inside the builders, so listing kinds (``--help``)
# stays cheap; every builder receives all declared parameters.

def _random(game) -> Agent:
  legal = [np.asarray(pt.legal, np.float64) for pt in game.tree.players]
  return PolicyAgent(game, tuple(x / np.maximum(x.sum(-1, keepdims=True), 1.0) for x in legal))


def _check_path(path) -> None:
  if not os.path.isfile(path):
    raise ValueError(f"no policy file {path!r}")


def _policy(game, path) -> Agent:
  from jaxgt import policy as policy_lib
  pol, _ = policy_lib.load(path, game)
  return PolicyAgent(game, pol.probs)


def _table_search_kind(budget: str, classes: Callable[[], tuple]):
  """``check`` and ``build`` of a search kind whose agent takes a per-move ``budget`` and a solver
  dataclass made from the other parameters; ``classes()`` imports ``(agent class, solver class)``."""

  def check(**params):
    check_positive_int(budget, params.pop(budget))
    classes()[1](**_any_dtype(params))

  def build(game, **params) -> Agent:
    agent_cls, solver_cls = classes()
    n = params.pop(budget)
    return agent_cls(game, solver=solver_cls(**params), **{budget: n})

  return check, build


def _oos_classes():
  from jaxgt.agents.oos import OOSAgent
  from jaxgt.solvers.oos import OOS
  return OOSAgent, OOS


def _ismcts_classes():
  from jaxgt.agents.ismcts import ISMCTSAgent
  from jaxgt.solvers.ismcts import ISMCTS
  return ISMCTSAgent, ISMCTS


def _uct_solver(smooth: bool, **hyper):
  from jaxgt.solvers import uct as uct_lib
  return (uct_lib.smooth_uct if smooth else uct_lib.uct)(**hyper)


def _check_episodes(episodes, batch):
  if episodes % batch:
    raise ValueError(f"episodes must be a multiple of batch ({batch}), got {episodes}")


def _uct_kind(smooth: bool):
  """``check`` and ``build`` of the ``uct`` (``smooth=False``) or ``smooth_uct`` kind."""

  def check(episodes, play, **hyper):
    del play
    _check_episodes(episodes, hyper["batch"])
    _uct_solver(smooth, **_any_dtype(hyper))

  def build(game, episodes, play, **hyper) -> Agent:
    from jaxgt.agents.uct import UCTAgent
    return UCTAgent(game, solver=_uct_solver(smooth, **hyper), episodes=episodes, play=play)

  return check, build


def _check_resolving(depth_limit, iterations, alpha, chunk, dtype):
  del dtype
  from jaxgt.search.gadget import check_alpha
  check_positive_int("depth_limit", depth_limit)
  check_nonnegative_int("iterations", iterations)
  if check_positive_int("chunk", chunk) != 1:
    raise ValueError(f"resolving: chunk must be 1 (the device-tree re-solve values its leaves "
                     f"at every iteration), got {chunk}")
  check_alpha(alpha)


def _resolving(game, dtype, **params) -> Agent:
  from jaxgt.agents.resolving import ContinualResolvingAgent
  from jaxgt.solvers.cfr import cfr_plus
  return ContinualResolvingAgent(game, solver=cfr_plus(dtype=dtype), **params)


_BATCH = "trajectories per step (parallel; 1 is the paper's sequential algorithm)"
_PLAY = ("average", "greedy")
_DTYPES = ("float32", "float64")


def _gtcfr(game, **params) -> Agent:
  from jaxgt.agents.gtcfr import gtcfr
  return gtcfr(game, **params)


def _dtype(default: str = "float32") -> Param:
  return Param("dtype", str, default, "float dtype of the search (float64 turns on 64-bit JAX)",
               choices=_DTYPES)


register_agent("random", _random, (), "uniform over the legal actions")
register_agent(
    "policy", _policy,
    (Param("path", str, None, "a policy file saved by jaxgt solve --save (.npz) for this game",
           required=True),),
    "plays a saved tabular policy", check=_check_path)
_check_oos, _build_oos = _table_search_kind("iterations", _oos_classes)
register_agent(
    "oos", _build_oos,
    (Param("iterations", int, 1000, "OOS iterations per move", minimum=1),
     Param("delta", float, 0.9, "targeting probability", minimum=0),
     Param("targeting", str, "ist", "information-set (ist) or public-subgame (pst) targeting",
           choices=("ist", "pst")),
     Param("epsilon", float, 0.6, "exploration of the sampling policy"),
     Param("gamma", float, 0.01, "uniform mixing of explorative regret matching", minimum=0),
     Param("batch", int, 1, _BATCH, minimum=1), _dtype()),
    "Online Outcome Sampling (001, Sec. 4): tables kept between moves", check=_check_oos)
_check_ismcts, _build_ismcts = _table_search_kind("simulations", _ismcts_classes)
register_agent(
    "ismcts", _build_ismcts,
    (Param("simulations", int, 1000, "steps of batch simulations per move", minimum=1),
     Param("selection", str, "uct", "selection rule", choices=("uct", "rm")),
     Param("c", float, None, "UCT exploration constant (none: twice the largest |payoff|)",
           nullable=True, minimum=0),
     Param("exploration", float, 0.2, "uniform mixing of regret-matching selection"),
     Param("final", str, None, "move policy (none: visits for uct, mean for rm)",
           nullable=True, choices=("visits", "frequency", "mean")),
     Param("batch", int, 1, "simulations per step", minimum=1), _dtype()),
    "Information Set MCTS (001, Sec. 5.1): fresh statistics every move", check=_check_ismcts)
_check_uct, _build_uct = _uct_kind(False)
register_agent(
    "uct", _build_uct,
    (Param("episodes", int, 1000, "self-play episodes per move", minimum=1),
     Param("c", float, 2.0, "UCB1 exploration constant (002: 2 for Kuhn, 20 for Leduc)",
           minimum=0),
     Param("play", str, "average", "play the average strategy or the greedy action",
           choices=_PLAY),
     Param("batch", int, 1, "episodes per step", minimum=1), _dtype()),
    "extensive-form UCT self-play (002, Sec. 3.1), search continued at every move",
    check=_check_uct)
_check_smooth, _build_smooth = _uct_kind(True)
register_agent(
    "smooth_uct", _build_smooth,
    (Param("episodes", int, 1000, "self-play episodes per move", minimum=1),
     Param("c", float, 1.75, "UCB1 exploration constant (002: 1.75 Kuhn, 18 Leduc)", minimum=0),
     Param("gamma", float, 0.1, "smallest mixing eta_k (Eq. 2)"),
     Param("eta", float, 0.9, "mixing schedule numerator (Eq. 2)"),
     Param("d", float, 0.001, "mixing schedule decay (002: 0.001 Kuhn, 0.002 Leduc)", minimum=0),
     Param("play", str, "average", "play the average strategy or the greedy action",
           choices=_PLAY),
     Param("batch", int, 1, "episodes per step", minimum=1), _dtype()),
    "extensive-form Smooth UCT self-play (002, Sec. 3.2)", check=_check_smooth)
register_agent(
    "resolving", _resolving,
    (Param("depth_limit", int, 2, "public levels below the current public state", minimum=1),
     Param("iterations", int, 1000, "CFR+ iterations per re-solve", minimum=0),
     Param("alpha", float, 0.5, "opponent-range mixing of the modified gadget (none: exact)",
           nullable=True),
     Param("chunk", int, 1, "must be 1: leaves valued every iteration (kept for old scripts)",
           minimum=1),
     _dtype("float64")),
    "continual re-solving (003) with exact equilibrium leaf values; deterministic",
    check=_check_resolving)
register_agent(
    "gtcfr", _gtcfr,
    (Param("simulations", int, 100, "expansion simulations per search, s in SoG(s, c)", minimum=1),
     Param("expansions_per_update", float, 1.0, "c: simulations per regret update (may be fractional)"),
     Param("evaluator", str, "exact", "leaf values: the remaining game solved exactly", choices=("exact",)),
     Param("puct_constant", float, 1.0, "PUCT exploration constant", minimum=0),
     Param("puct_visit_offset", float, 0.0, "added to the visit count under PUCT's square root",
           minimum=0),
     Param("chance", str, "sample", "how simulations cross chance", choices=("sample", "uniform")),
     Param("select_policy", str, "average", "CFR policy mixed into pi_select",
           choices=("average", "current")),
     Param("value_average", str, "node", "node values averaged over the node's or the search's "
           "iterations", choices=("node", "search")),
     Param("resolve", bool, True, "continual re-solving from the previous search (false: root-anchored)"),
     _dtype("float64")),
    "Growing-Tree CFR (003, Algorithm 1) on the fixed-capacity device public tree")


def _check_run_dir(path) -> None:
  if not os.path.isdir(path):
    raise ValueError(f"no training run directory {path!r} (jaxgt train --out)")


def _sog(game, **params) -> Agent:
  # jaxgt.training loads checkpoints; agents may not import it (layering), so by name.
  return importlib.import_module("jaxgt.training.agent").sog(game, **params)


register_agent(
    "sog", _sog,
    (Param("checkpoint", str, None, "a jaxgt train --out directory (its newest checkpoint)",
           required=True),
     Param("simulations", int, 100, "expansion simulations per search, s in SoG(s, c)", minimum=1),
     Param("expansions_per_update", float, 1.0, "c: simulations per regret update"),
     _dtype("float32")),
    "Student of Games (003): GT-CFR with a trained CVPN as leaf evaluator, continual re-solving",
    check=lambda checkpoint, **_: _check_run_dir(checkpoint))
