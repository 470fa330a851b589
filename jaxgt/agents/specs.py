"""The catalogue of agent kinds (what an agent spec may name) and the parser of specs.

A spec names a kind and its parameters in OpenSpiel's game-string syntax
(:mod:`jaxgt.agents.spec_grammar`): ``random``, ``policy(path=leduc.npz)``,
``oos(iterations=1000,targeting=ist)``. :func:`parse_spec` needs no game, so unknown
kinds or parameters and bad values are refused before a game is compiled. A kind is
one :func:`register_agent` call whose parameters are read from the agent class and
solver that define them (:func:`~jaxgt.agents.spec_grammar.params_from`);
``build(game, **params)`` makes the agent and the optional ``check(**params)``
validates the values without a game. A higher layer registers its own kinds
(``jaxgt.training`` registers ``sog``). :func:`describe_agents` is the listing of
``jaxgt agents`` and ``jaxgt match --help``.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from typing import Callable

import numpy as np

from jaxgt.agents.base import Agent, PolicyAgent, RandomAgent
from jaxgt.agents.device_gtcfr import DeviceGTCFRAgent
from jaxgt.agents.device_search import DeviceSearchAgent
from jaxgt.agents.gtcfr_agent import GTCFRAgent
from jaxgt.agents.ismcts_agent import ISMCTSAgent
from jaxgt.agents.oos_agent import PLAY as OOS_PLAY, OOSAgent
from jaxgt.agents.resolving import ContinualResolvingAgent
from jaxgt.agents.spec_grammar import TYPES, Doc, Param, bind, params_from, show, split_spec, usage
from jaxgt.agents.uct_agent import UCTAgent
from jaxgt.core.sequence_form import uniform
from jaxgt.search import gtcfr_config
from jaxgt.search.gadget import check_alpha
from jaxgt.solvers import ismcts as ismcts_lib
from jaxgt.solvers import oos as oos_lib
from jaxgt.solvers import uct as uct_lib
from jaxgt.solvers.cfr import cfr_plus
from jaxgt.games.base import did_you_mean
from jaxgt.games.device import DeviceGame

__all__ = ["DTYPE", "AgentKind", "AgentSpec", "Doc", "Param", "agent_kinds", "describe_agents",
           "make_agent", "params_from", "parse_spec", "register_agent"]


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
    return usage(self.name, self.params)


@dataclasses.dataclass(frozen=True)
class AgentSpec:
  """A parsed, validated agent spec: the kind and every parameter's value (defaults filled in)."""

  kind: str
  params: dict
  text: str  # the spec as written

  def build(self, game) -> Agent:
    """The agent of this spec for ``game`` (a :class:`~jaxgt.core.game_tree.CompiledGame`, or
    a device game played through its rules by the kinds in :data:`DEVICE_KINDS`).

    A ``ValueError`` of the kind's builder (e.g. a policy file of another game)
    is re-raised with the spec in front.
    """
    if isinstance(game, DeviceGame) and self.kind not in DEVICE_KINDS:
      raise ValueError(f"agent {self.text!r} needs a compiled game; {game.game_string()} is "
                       f"played through its rules, where the agents are "
                       f"{', '.join(DEVICE_KINDS)}")
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
DEVICE_KINDS = ("random", "oos", "ismcts", "gtcfr", "sog")
"""The kinds that play a device game through its rules (a game too large to enumerate)."""


def register_agent(name: str, build: Callable[..., Agent], params=(), description: str = "",
                   check: Callable[..., None] | None = None) -> AgentKind:
  """Registers (or replaces) the agent kind ``name``; returns it.

  ``build(game, **params)`` makes the agent; ``params`` is a sequence of
  :class:`Param` (usually :func:`params_from`); ``check(**params)`` (optional)
  validates the values without a game and raises ``ValueError``.
  """
  if not isinstance(name, str) or not name.isidentifier():
    raise ValueError(f"agent kind names are identifiers, got {name!r}")
  bad = [p.name for p in params if p.type not in TYPES]
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
  name, inner = split_spec(text, "oos(iterations=1000,targeting=ist)")
  kind = _REGISTRY.get(name)
  if kind is None:
    raise ValueError(f"unknown agent {name!r}{did_you_mean(name, _REGISTRY)}; valid agents: "
                     f"{', '.join(sorted(_REGISTRY))}")
  params = bind(name, kind.params, inner, text)
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
      extra = "" if p.required else f" (default {show(p.default)})"
      lines.append(f"      {p.name:<12} {p.type.__name__:<5} {p.help}{extra}")
  return "\n".join(lines)


def _any_dtype(params: dict) -> dict:
  """``params`` with ``dtype`` float32 for game-free checks: the choice is already validated, and
  64-bit JAX is turned on only after parsing (:attr:`AgentSpec.needs_x64`)."""
  return {**params, "dtype": "float32"}


# ----------------------------------------------------------------- built-in kinds
# Each kind's parameter names, types and defaults come from its agent class and solver
# (params_from); the docs below add the one-line help and the checks made before any game.

def random_agent(game) -> Agent:
  """Uniform over the legal actions at every information state (a policy table on a compiled
  game; read from the rules on a device game)."""
  if isinstance(game, DeviceGame):
    return RandomAgent(game)
  return PolicyAgent(game, tuple(uniform(np.asarray(pt.legal), np.float64)
                                 for pt in game.tree.players))


def policy_agent(game, path: str) -> Agent:
  """Plays the tabular policy saved in ``path`` (``jaxgt solve --save``) for ``game``."""
  from jaxgt import policy as policy_lib
  pol, _ = policy_lib.load_policy(path, game)
  return PolicyAgent(game, pol.probs)


def _check_path(path) -> None:
  if not os.path.isfile(path):
    raise ValueError(f"no policy file {path!r}")


def _register_search(name, agent_cls, solver_factory, params, description, check_agent=None):
  """Registers a search kind: the parameters ``agent_cls`` takes go to the agent, the others to
  the solver ``solver_factory`` makes; ``check_agent(agent_params, solver)`` checks the pair
  before any game (ranges are checked while parsing)."""
  own = set(inspect.signature(agent_cls).parameters)

  def split(values):
    return ({k: v for k, v in values.items() if k in own},
            {k: v for k, v in values.items() if k not in own})

  def check(**values):
    mine, hyper = split(values)
    solver = solver_factory(**_any_dtype(hyper))
    if check_agent is not None:
      check_agent(mine, solver)

  def build(game, **values) -> Agent:
    mine, hyper = split(values)
    if isinstance(game, DeviceGame) and agent_cls in DEVICE_SEARCH:
      # Played through the rules: the solver's capacity becomes the rows of each player's
      # information-state table (DeviceSearchAgent), the per-move budget its iterations.
      capacity = hyper.pop("capacity", None) or DEVICE_CAPACITY
      budget = mine.pop(DEVICE_SEARCH[agent_cls])
      return DeviceSearchAgent(game, solver=solver_factory(**hyper), iterations=budget,
                               capacity=capacity, **mine)
    return agent_cls(game, solver=solver_factory(**hyper), **mine)

  register_agent(name, build, params, description, check=check)


DEVICE_SEARCH = {OOSAgent: "iterations", ISMCTSAgent: "simulations"}
"""Search kinds that also play device games (through :class:`DeviceSearchAgent`), with the name
of their per-move budget."""
DEVICE_CAPACITY = 100_000
"""Rows of each player's table when a spec plays a device game without ``capacity``."""


def _check_episodes(agent_params, solver) -> None:
  episodes = agent_params["episodes"]
  if episodes % solver.batch:
    raise ValueError(f"episodes must be a multiple of batch ({solver.batch}), got {episodes}")


def _check_resolving(alpha, chunk, **params):  # the other ranges are checked while parsing
  del params
  if chunk != 1:
    raise ValueError(f"resolving: chunk must be 1 (the device-tree re-solve values its leaves "
                     f"at every iteration), got {chunk}")
  check_alpha(alpha)


def _resolving(game, dtype, **params) -> Agent:
  return ContinualResolvingAgent(game, solver=cfr_plus(dtype=dtype), **params)


_BATCH = "trajectories per step (parallel; 1 is the paper's sequential algorithm)"
_PLAY = ("average", "greedy")  # UCTAgent's play
DTYPE = Doc("float dtype of the search (float64 turns on 64-bit JAX)",  # every search kind's
            choices=("float32", "float64"))
_POSITIVE = dict(minimum=1)
_NONNEGATIVE = dict(minimum=0)

register_agent("random", random_agent, (), "uniform over the legal actions")
register_agent(
    "policy", policy_agent,
    params_from(policy_agent,
                path="a policy file saved by jaxgt solve --save (.npz) for this game"),
    "plays a saved tabular policy", check=_check_path)
_register_search(
    "oos", OOSAgent, oos_lib.OOS,
    params_from(OOSAgent, oos_lib.OOS,
                iterations=Doc("OOS iterations per move", **_POSITIVE),
                delta=Doc("targeting probability", **_NONNEGATIVE),
                targeting=Doc("information-set (ist) or public-subgame (pst) targeting",
                              choices=oos_lib.TARGETING),
                epsilon="exploration of the sampling policy",
                gamma=Doc("uniform mixing of explorative regret matching", **_NONNEGATIVE),
                play=Doc("play the average or the current strategy", choices=OOS_PLAY),
                capacity=Doc("information states in memory (a device game: rows of each player's "
                             "table, default 100000; none: the whole compiled game)", **_POSITIVE),
                batch=Doc(_BATCH, **_POSITIVE), dtype=DTYPE),
    "Online Outcome Sampling (Lisy, Lanctot & Bowling 2015, Sec. 4): tables kept between moves")
_register_search(
    "ismcts", ISMCTSAgent, ismcts_lib.ISMCTS,
    params_from(ISMCTSAgent, ismcts_lib.ISMCTS,
                simulations=Doc("steps of batch simulations per move", **_POSITIVE),
                selection=Doc("selection rule", choices=ismcts_lib.SELECTION),
                c=Doc("UCT exploration constant (none: twice the largest |payoff|)",
                      **_NONNEGATIVE),
                exploration="uniform mixing of regret-matching selection",
                final=Doc("move policy (none: visits for uct, mean for rm)",
                          choices=ismcts_lib.FINAL),
                capacity=Doc("information states in memory (a device game: rows of each player's "
                             "table, default 100000; none: the whole compiled game)", **_POSITIVE),
                batch=Doc("simulations per step", **_POSITIVE), dtype=DTYPE),
    "Information Set MCTS (Lisy, Lanctot & Bowling 2015, Sec. 5.1): fresh statistics every move")


def _uct_params(factory, **solver_docs) -> tuple:
  """The parameters of a (Smooth) UCT kind: the agent's and ``factory``'s (``solver_docs``)."""
  return params_from(UCTAgent, factory, episodes=Doc("self-play episodes per move", **_POSITIVE),
                     **solver_docs,
                     play=Doc("play the average strategy or the greedy action", choices=_PLAY),
                     batch=Doc("episodes per step", **_POSITIVE), dtype=DTYPE)


_register_search(
    "uct", UCTAgent, uct_lib.uct,
    _uct_params(uct_lib.uct, c=Doc("UCB1 exploration constant (Heinrich & Silver: 2 for Kuhn, "
                                   "20 for Leduc)", **_NONNEGATIVE)),
    "extensive-form UCT self-play (Heinrich & Silver 2015, Sec. 3.1), search continued at every "
    "move", _check_episodes)
_register_search(
    "smooth_uct", UCTAgent, uct_lib.smooth_uct,
    _uct_params(uct_lib.smooth_uct,
                c=Doc("UCB1 exploration constant (Heinrich & Silver: 1.75 Kuhn, 18 Leduc)",
                      **_NONNEGATIVE),
                gamma="smallest mixing eta_k (Eq. 2)", eta="mixing schedule numerator (Eq. 2)",
                d=Doc("mixing schedule decay (Heinrich & Silver: 0.001 Kuhn, 0.002 Leduc)",
                      **_NONNEGATIVE)),
    "extensive-form Smooth UCT self-play (Heinrich & Silver 2015, Sec. 3.2)", _check_episodes)
register_agent(
    "resolving", _resolving,
    params_from(ContinualResolvingAgent, cfr_plus,
                depth_limit=Doc("public levels below the current public state", **_POSITIVE),
                iterations=Doc("CFR+ iterations per re-solve", **_NONNEGATIVE),
                alpha="opponent-range mixing of the modified gadget (none: exact)",
                chunk=Doc("must be 1: leaves valued every iteration (kept for old scripts)",
                          **_POSITIVE),
                # the dtype of the agent's CFR+; its default is the agent's default solver's
                dtype=Doc(DTYPE.help, choices=DTYPE.choices, default="float64")),
    "continual re-solving (Schmid et al., Student of Games, 2023) with exact equilibrium leaf "
    "values; deterministic",
    check=_check_resolving)
def gtcfr_agent(game, *, simulations: int = 100, evaluator: str = "auto",
                capacity: int | None = None, **options) -> Agent:
  """``SoG(simulations, c)``: :class:`GTCFRAgent` on a compiled game (``evaluator`` ``"auto"``:
  exact leaves), or on a device game played through its rules :class:`DeviceGTCFRAgent`
  (``"auto"``: zero leaf values); both re-solve continually unless ``resolve=False``;
  ``options`` are the search's choices."""
  if isinstance(game, DeviceGame):
    return DeviceGTCFRAgent(game, simulations=simulations,
                            evaluator="zero" if evaluator == "auto" else evaluator,
                            capacity=capacity, **options)
  return GTCFRAgent(game, simulations=simulations,
                    evaluator="exact" if evaluator == "auto" else evaluator, capacity=capacity,
                    **options)


GTCFR_EVALUATORS = ("auto", "exact", "zero")
GTCFR_CAPACITY = Doc("search tree nodes (none: what simulations can add; a game played through "
                     "its rules needs the longest branch after the deals)", **_POSITIVE)
GTCFR_RESOLVE = ("continual re-solving from the previous search (false: every search from "
                 "the game's root, after the deals on a game played through its rules)")

register_agent(
    "gtcfr", gtcfr_agent,
    params_from(
        gtcfr_agent, GTCFRAgent,
        # GTCFRAgent takes no default budget; specs search SoG(100, 1) unless told
        simulations=Doc("expansion simulations per search, s in SoG(s, c)", default=100,
                        **_POSITIVE),
        expansions_per_update="c: simulations per regret update (may be fractional)",
        evaluator=Doc("leaf values: exact (the remaining game solved), zero (frontier public "
                      "states valued 0), auto (exact; zero on a game played through its rules)",
                      choices=GTCFR_EVALUATORS),
        capacity=GTCFR_CAPACITY,
        puct_constant=Doc("PUCT exploration constant", **_NONNEGATIVE),
        puct_visit_offset=Doc("added to the visit count under PUCT's square root",
                              **_NONNEGATIVE),
        chance=Doc("how simulations cross chance", choices=gtcfr_config.CHANCE_MODES),
        select_policy=Doc("CFR policy mixed into pi_select",
                          choices=gtcfr_config.SELECT_POLICIES),
        value_average=Doc("node values averaged over the node's or the search's iterations",
                          choices=gtcfr_config.VALUE_AVERAGES),
        resolve=GTCFR_RESOLVE,
        dtype=DTYPE),
    "Growing-Tree CFR (Schmid et al., Student of Games, 2023, Algorithm 1) on the "
    "fixed-capacity device public tree; on a game too large to enumerate grown from its rules")
