"""The match referee: the one definition of walking a match between two agents.

A match starts at the root of the compiled game. The referee samples chance
outcomes from ``chance_probs`` in an inner loop until the next decision (or
terminal); at a decision only the acting agent's ``act`` is called, and the
action is drawn from the probabilities it returns with
:func:`jaxgt.core.sampling.sample_index`. A per-decision ``hook`` sees every
decision (``(carry, agent index, history, probs [A], the agent's new
state) -> carry``); :func:`jaxgt.evaluation.aggregate.aggregate_policy`
accumulates search statistics through it.

The walk is written once with ``jnp`` and a :class:`Control` (how to loop and
branch): :data:`TRACED` runs it under ``lax.while_loop``/``lax.cond`` inside
``jit`` (traceable agents), :data:`EAGER` in a Python loop with Python
branches (agents that cannot be traced, e.g. continual re-solving). Both draw
the same keys and uniforms, so they play the same matches.

Over many matches (:func:`run_matches`) the traced walk is either vmapped
(``lax.cond`` on the acting seat becomes a select, so *both* agents' ``act``
run at every decision: right for cheap agents such as
:class:`~jaxgt.agents.base.PolicyAgent`) or mapped with ``lax.map`` (one match
after another, a real branch per decision: only the acting agent searches,
while each agent's search stays batched internally). ``Agent.cheap``
chooses: matches are vmapped only when both agents are cheap.

Keys: match key ``k`` splits into agent0's ``init`` key, agent1's ``init``
key and the walk key; every node (chance or decision) splits the walk key
into the next walk key, the acting agent's ``act`` key and the key of the
uniform that draws the outcome.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt.agents.base import Agent
from jaxgt.core.checks import check_positive_int
from jaxgt.core.compiler import NO_INDEX, CompiledGame, GameTree
from jaxgt.core.sampling import sample_index
from jaxgt.games.base import CHANCE, TERMINAL

TRACE_ERRORS = (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
                jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError)
"""Errors that mean an agent cannot run with a traced history."""

Hook = Callable[[Any, int, jax.Array, jax.Array, Any], Any]
"""``hook(carry, agent index (static), history, probs [A], agent state) -> carry``."""


def _eager_while(cond_fun, body_fun, carry):
  while bool(cond_fun(carry)):
    carry = body_fun(carry)
  return carry


def _eager_cond(pred, true_fun, false_fun, *operands):
  return true_fun(*operands) if bool(pred) else false_fun(*operands)


@dataclasses.dataclass(frozen=True)
class Control:
  """How a walk loops and branches.

  Attributes:
    while_loop, cond: ``lax.while_loop``/``lax.cond`` or their Python equivalents.
    history: what agents receive as ``history`` (the traced scalar, or a Python int).
    traced: whether this is the traced control.
  """

  while_loop: Callable
  cond: Callable
  history: Callable
  traced: bool


TRACED = Control(lax.while_loop, lax.cond, lambda h: h, True)
EAGER = Control(_eager_while, _eager_cond, int, False)


def check_match_args(game, agents, num_matches) -> int:
  """Raises ``ValueError`` unless ``agents`` (``[(name, agent)]``) are Agents of ``game``."""
  if not isinstance(game, CompiledGame):
    raise ValueError(f"game must be a CompiledGame (jaxgt.load(...)), got {type(game).__name__}")
  for name, a in agents:
    if not isinstance(a, Agent):
      raise ValueError(f"{name} must be a jaxgt Agent, got {type(a).__name__}")
    g = getattr(a, "game", None)
    if not isinstance(g, CompiledGame) or g.fingerprint != game.fingerprint:
      raise ValueError(f"{name} plays {getattr(g, 'name', g)!r}, not {game.name}")
  return check_positive_int("num_matches", num_matches)


def traceable(agent: Agent, game: CompiledGame, key) -> bool:
  """Whether ``agent`` traces with a traced history (else warns); ``ValueError`` for a bad signature."""
  try:
    state = jax.eval_shape(agent.init, key)
    probs, new = jax.eval_shape(agent.act, key, state, jax.ShapeDtypeStruct((), jnp.int32))
  except TRACE_ERRORS as e:
    warnings.warn(f"{type(agent).__name__}.act is not traceable ({type(e).__name__}); "
                  "playing its matches in a Python loop", stacklevel=3)
    return False
  A = game.tree.num_actions
  if tuple(probs.shape) != (A,):
    raise ValueError(f"{type(agent).__name__}.act returned probabilities of shape "
                     f"{tuple(probs.shape)}; this game needs ({A},)")
  if jax.tree_util.tree_structure(new) != jax.tree_util.tree_structure(state) or any(
      (a.shape, a.dtype) != (b.shape, b.dtype)
      for a, b in zip(jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(state))):
    raise ValueError(f"{type(agent).__name__}.act must return a state with the same structure, "
                     "shapes and dtypes as init's (fixed-shape state, see jaxgt.agents.base)")
  return True


def draw(tree: GameTree, history, probs, key, dtype):
  """Child of ``history`` drawn from ``probs [C]`` (masked to legal), or ``NO_INDEX``
  when they have no finite positive mass on the legal actions."""
  probs = jnp.where(tree.children[history] >= 0, probs, 0.0)
  total = jnp.sum(probs)
  child = tree.children[history, sample_index(probs, jax.random.uniform(key, (), dtype))]
  return jnp.where(jnp.isfinite(total) & (total > 0), child, NO_INDEX)


def through_chance(tree: GameTree, history, key, dtype):
  """Samples chance from ``history`` until a decision or terminal: ``(history, key)``."""

  def node(carry):
    h, key = carry
    key, _, ku = jax.random.split(key, 3)
    return draw(tree, h, tree.chance_probs[h], ku, dtype), key

  return lax.while_loop(
      lambda c: (c[0] >= 0) & (tree.player[jnp.maximum(c[0], 0)] == CHANCE), node,
      (jnp.asarray(history, jnp.int32), key))


_through_chance_jit = jax.jit(through_chance, static_argnums=3)


def walk(tree: GameTree, agents, key, seat0, *, dtype, control: Control = TRACED,
         hook: Hook | None = None, carry=None):
  """One match of ``agents = (agent0, agent1)``, agent0 playing player ``seat0``.

  Returns ``(history, carry)``: the terminal reached (``< 0`` if an agent
  returned probabilities with no finite positive mass on the legal
  actions) and the hook's carry.
  """
  A = tree.num_actions
  C = tree.children.shape[1]
  chance = through_chance if control.traced else _through_chance_jit
  k0, k1, key = jax.random.split(key, 3)
  states = (agents[0].init(k0), agents[1].init(k1))
  h, key = chance(tree, 0, key, dtype)

  def decision(c):
    h, states, key, carry = c
    key, ka, ku = jax.random.split(key, 3)

    def by(i):
      def act(states, carry):
        probs, state = agents[i].act(ka, states[i], control.history(h))
        probs = jnp.asarray(probs, dtype)
        if hook is not None:
          carry = hook(carry, i, h, probs, state)
        states = tuple(state if j == i else states[j] for j in range(2))
        return jnp.pad(probs, (0, C - A)), states, carry
      return act

    probs, states, carry = control.cond(tree.player[h] == seat0, by(0), by(1), states, carry)
    h, key = chance(tree, draw(tree, h, probs, ku, dtype), key, dtype)
    return h, states, key, carry

  h, _, _, carry = control.while_loop(
      lambda c: (c[0] >= 0) & (tree.player[jnp.maximum(c[0], 0)] != TERMINAL), decision,
      (h, states, key, carry))
  return h, carry


def terminal_payoff(tree: GameTree, history, seat0):
  """Payoff of the agent playing ``seat0`` at terminal ``history`` (0 when ``history < 0``)."""
  u = tree.terminal_payoff[jnp.maximum(tree.history_terminal[jnp.maximum(history, 0)], 0)]
  return jnp.where(history < 0, 0.0, jnp.where(seat0 == 0, u, -u))


def run_matches(game: CompiledGame, agents, keys, seats, *, traced: bool, dtype,
                hook: Hook | None = None, carry=None):
  """Plays match ``m`` with ``keys[m]``, agent0 in seat ``seats[m]``.

  Returns ``(payoffs [M] (agent0's view), invalid [M] bool, carries)`` with
  the hook carries stacked ``[M, ...]``.
  """
  tree = game.device_tree(dtype)
  seats = jnp.asarray(seats, jnp.int32)
  if traced:
    def one(key, seat0):
      h, c = walk(tree, agents, key, seat0, dtype=dtype, hook=hook, carry=carry)
      return terminal_payoff(tree, h, seat0), h < 0, c

    if all(getattr(a, "cheap", False) for a in agents):
      run = jax.vmap(one)
    else:
      run = lambda ks, ss: lax.map(lambda x: one(*x), (ks, ss))
    pay, bad, carries = jax.jit(run)(keys, seats)
    return np.asarray(pay), np.asarray(bad), carries
  pay, bad, carries = [], [], []
  for key, seat0 in zip(keys, seats):
    h, c = walk(tree, agents, key, seat0, dtype=dtype, control=EAGER, hook=hook, carry=carry)
    pay.append(float(terminal_payoff(tree, h, seat0)))
    bad.append(int(h) < 0)
    carries.append(c)
  carries = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *carries) if carry is not None \
      else None
  return np.asarray(pay, np.float64), np.asarray(bad, bool), carries
