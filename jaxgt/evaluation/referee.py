"""The match referee: the one definition of walking matches between two agents.

A match starts at the root of the compiled game. The referee samples chance
outcomes from ``chance_probs`` in an inner loop until the next decision (or
terminal), so chance turns call no agent; at a decision only the acting
agent's ``act`` is called, and the action is drawn from the probabilities it
returns with :func:`jaxgt.core.sampling.sample_index`. A per-decision
``hook`` sees every decision (``(carry, agent index, history, probs [A], the
agent's new state) -> carry``);
:func:`jaxgt.evaluation.aggregate.aggregate_policy` accumulates search
statistics through it.

:class:`Referee` holds the two steps of a match, :meth:`Referee.start` (init
both agents, sample chance to the first decision) and :meth:`Referee.decide`
(one agent's decision, then :func:`advance`: the action draw and the chance
after it, the step self-play takes too), and one match loop over them (until
every match has ended, agent 0 then agent 1 serves the matches waiting on it)
that runs in two ways:

* :meth:`Referee.run` (traceable agents, one jitted program for all ``M``
  matches) keeps every match's position ``[M]`` and alternates a phase per
  agent: agent ``i`` decides, vmapped, for up to ``chunk`` of the matches
  waiting on it (gathered by index, scattered back; padding repeats a waiting
  match), until every match has ended. A phase runs only when some match
  waits on its agent, and an agent's ``act`` only ever sees decisions of its
  own. (Vmapping a whole match instead turns the branch on the acting seat
  into a select that runs *both* agents' ``act`` at every node, chance
  included.) ``chunk`` defaults to ``M``: on CPU a search's cost barely
  depends on its batch width, so serving every waiting match at once (fewest
  sequential phases) measured fastest; a smaller ``chunk`` computes fewer
  padding lanes for wide searches.
* :meth:`Referee.walk` (any agent, e.g. one that reads ``int(history)``) plays
  one match with the same loop in Python.

Both draw the same keys and uniforms, so they play the same matches. Keys:
match key ``k`` splits into agent0's ``init`` key, agent1's ``init`` key and
the walk key; every node (chance or decision) splits the walk key into the
next walk key, the acting agent's ``act`` key and the key of the uniform that
draws the outcome.
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
from jaxgt.core import rng
from jaxgt.core.checks import check_choice, check_positive_int, check_shape
from jaxgt.core.game_tree import NO_INDEX, CompiledGame, GameTree
from jaxgt.core.sampling import sample_index
from jaxgt.games.base import CHANCE, TERMINAL

TRACE_ERRORS = (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
                jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError,
                TypeError)
"""Errors that mean an agent cannot run with a traced history (``TypeError``: a state that is
not a pytree of arrays, e.g. continual re-solving's; a real signature error surfaces again in
the Python loop)."""

Hook = Callable[[Any, int, jax.Array, jax.Array, Any], Any]
"""``hook(carry, agent index (static), history, probs [A], agent state) -> carry``."""


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
  check_shape(f"{type(agent).__name__}.act's probabilities (one per action of {game.name})",
              probs, (game.tree.num_actions,))
  if jax.tree_util.tree_structure(new) != jax.tree_util.tree_structure(state) or any(
      (a.shape, a.dtype) != (b.shape, b.dtype)
      for a, b in zip(jax.tree_util.tree_leaves(new), jax.tree_util.tree_leaves(state))):
    raise ValueError(f"{type(agent).__name__}.act must return a state with the same structure, "
                     "shapes and dtypes as init's (fixed-shape state, see jaxgt.agents.base)")
  return True


def play_mode(game, agents, mode: str, key) -> bool:
  """Whether matches of ``agents`` run traced under ``mode``: ``"auto"`` (when every agent
  traces), ``"jit"`` (``ValueError`` unless they do) or ``"python"`` (never)."""
  check_choice("mode", mode, ("auto", "jit", "python"))
  if mode == "python":
    return False
  ok = all([traceable(a, game, key) for a in agents])
  if not ok and mode == "jit":
    raise ValueError("an agent's act is not traceable with a traced history; use mode='python' "
                     "or make it traceable (see jaxgt.agents.base)")
  return ok


def draw(tree: GameTree, history, probs, key, dtype):
  """Child of ``history`` drawn from ``probs [C]`` (masked to legal), or ``NO_INDEX``
  when they have no finite positive mass on the legal actions."""
  probs = jnp.where(tree.children[history] >= 0, probs, 0.0)
  total = jnp.sum(probs)
  child = tree.children[history, sample_index(probs, rng.uniform(key, (), dtype))]
  return jnp.where(jnp.isfinite(total) & (total > 0), child, NO_INDEX)


def through_chance(tree: GameTree, history, key, dtype):
  """Samples chance from ``history`` until a decision or terminal: ``(history, key)``."""

  def node(carry):
    h, key = carry
    key, _, ku = rng.split(key, 3)
    return draw(tree, h, tree.chance_probs[h], ku, dtype), key

  return lax.while_loop(
      lambda c: (c[0] >= 0) & (tree.player[jnp.maximum(c[0], 0)] == CHANCE), node,
      (jnp.asarray(history, jnp.int32), key))


def live(tree: GameTree, history):
  """Whether ``history`` is a valid non-terminal position (the match goes on)."""
  return (history >= 0) & (tree.player[jnp.maximum(history, 0)] != TERMINAL)


def terminal_payoff(tree: GameTree, history, seat0):
  """Payoff of the agent playing ``seat0`` at terminal ``history`` (0 when ``history < 0``)."""
  u = tree.terminal_payoff[jnp.maximum(tree.history_terminal[jnp.maximum(history, 0)], 0)]
  return jnp.where(history < 0, 0.0, jnp.where(seat0 == 0, u, -u))


def advance(tree: GameTree, history, probs, draw_key, chance_key, dtype):
  """The decision at ``history`` played: the action drawn from ``probs [A]`` with the uniform
  of ``draw_key``, then chance sampled with ``chance_key`` up to the next decision or terminal.

  Returns ``(history, key)`` as :func:`through_chance` (``history < 0`` when ``probs`` has
  no finite positive mass on the legal actions). The one step of a match: the referee's
  drivers and self-play (:mod:`jaxgt.training.selfplay`) move through it.
  """
  probs = jnp.asarray(probs, dtype)
  probs = jnp.pad(probs, (0, tree.children.shape[1] - probs.shape[-1]))
  return through_chance(tree, draw(tree, history, probs, draw_key, dtype), chance_key, dtype)


_advance_jit = jax.jit(advance, static_argnums=5)
_through_chance_jit = jax.jit(through_chance, static_argnums=3)


@dataclasses.dataclass(frozen=True, eq=False)
class Referee:
  """Matches of ``agents = (agent0, agent1)`` on ``tree`` (floats in ``dtype``)."""

  tree: GameTree  # the device :class:`GameTree`
  agents: tuple  # the two agents; agent0 plays player seat0 of each match
  dtype: Any  # dtype of the probabilities and uniforms
  hook: Hook | None = None  # optional per-decision hook (see the module docstring)

  def start(self, key, eager: bool = False):
    """Both agents' states and the first decision: ``(history, (state0, state1), walk key)``."""
    k0, k1, key = rng.split(key, 3)
    states = (self.agents[0].init(k0), self.agents[1].init(k1))
    h, key = (_through_chance_jit if eager else through_chance)(self.tree, 0, key, self.dtype)
    return h, states, key

  def decide(self, i: int, history, state, key, carry, eager: bool = False):
    """Agent ``i`` (static) acts at ``history``; returns ``(next decision, state, key, carry)``.

    The next decision is reached by :func:`advance` (``< 0`` when ``act`` returned no
    finite positive mass); ``key`` splits into the next key, ``act``'s and the draw's.
    """
    key, ka, ku = rng.split(key, 3)
    probs, state = self.agents[i].act(ka, state, int(history) if eager else history)
    probs = jnp.asarray(probs, self.dtype)
    if self.hook is not None:
      carry = self.hook(carry, i, history, probs, state)
    h, key = (_advance_jit if eager else advance)(self.tree, history, probs, ku, key, self.dtype)
    return h, state, key, carry

  def _loop(self, lanes, seats, serve, eager: bool):
    """The match loop over ``lanes = (history, (state0, state1), key, carry)``: until no match
    goes on, agent 0 then agent 1 serves the matches waiting on it (``serve(i, waiting,
    (history, state_i, key, carry))`` returns them after the decision); a phase runs only
    when some match waits. ``eager``: in Python (agents need not trace), else traced."""
    tree = self.tree

    def phase(i, lanes):
      waiting = live(tree, lanes[0]) & ((tree.player[jnp.maximum(lanes[0], 0)] == seats)
                                        == (i == 0))

      def play(lanes):
        h, states, key, carry = lanes
        h, s, key, carry = serve(i, waiting, (h, states[i], key, carry))
        return h, tuple(s if j == i else states[j] for j in range(2)), key, carry

      if eager:
        return play(lanes) if bool(jnp.any(waiting)) else lanes
      return lax.cond(jnp.any(waiting), play, lambda x: x, lanes)

    more, body = lambda c: jnp.any(live(tree, c[0])), lambda c: phase(1, phase(0, c))
    if not eager:
      return lax.while_loop(more, body, lanes)
    while bool(more(lanes)):
      lanes = body(lanes)
    return lanes

  def walk(self, key, seat0, carry=None):
    """One match in a Python loop (agents need not trace): ``(final history, carry)``."""
    h, states, key = self.start(key, eager=True)
    h, _, _, carry = self._loop((h, states, key, carry), int(seat0),
                                lambda i, _, own: self.decide(i, *own, eager=True), eager=True)
    return h, carry

  def run(self, keys, seats, carry, chunk: int):
    """All matches as one traced program: ``(final histories [M], carries [M, ...])``.

    ``keys [M]``, ``seats [M]``; ``carry`` is the hook's initial carry (one
    per match); each agent's phase serves up to ``chunk`` waiting matches.
    """
    M = keys.shape[0]
    h, states, key = jax.vmap(self.start)(keys)
    carry = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (M,) + jnp.shape(x)), carry)

    def serve(i, waiting, own):
      # up to chunk waiting matches; padding repeats the first, its result is dropped
      idx = jnp.nonzero(waiting, size=chunk, fill_value=M)[0]
      take = jnp.where(idx < M, idx, idx[0])
      out = jax.vmap(lambda *x: self.decide(i, *x))(
          *jax.tree_util.tree_map(lambda x: x[take], own))
      return jax.tree_util.tree_map(lambda a, b: a.at[idx].set(b, mode="drop"), own, out)

    h, _, _, carry = self._loop((h, states, key, carry), seats, serve, eager=False)
    return h, carry


def play_matches(game: CompiledGame, agents, keys, seats, *, traced: bool, dtype,
                 hook: Hook | None = None, carry=None, chunk: int | None = None,
                 block: int | None = None, progress: Callable[[int, int], None] | None = None):
  """Plays match ``m`` with ``keys[m]``, agent0 in seat ``seats[m]``: ``(histories [M], carries)``.

  ``histories`` (NumPy int) is the terminal history each match ended in
  (:func:`action_paths` gives its actions from the root; ``terminal_payoff``
  its payoff). ``block``: matches per program run (default all ``M``); the
  traced program is compiled once and reused for every block (the last one
  padded), and ``progress(done, M)`` is called after each block. Blocks do
  not change the matches: match ``m`` always draws from ``keys[m]``.
  ``chunk``: matches each traced agent phase serves (default: the block).
  Raises ``ValueError`` for a match where an agent returned probabilities
  with no finite positive mass on the legal actions.
  """
  tree = game.device_tree(dtype)
  referee = Referee(tree, tuple(agents), dtype, hook)
  seats = jnp.asarray(seats, jnp.int32)
  M = len(keys)
  block = M if block is None else min(check_positive_int("block", block), M)
  if traced:
    lanes = block if chunk is None else min(chunk, block)
    program = jax.jit(lambda k, s, c: referee.run(k, s, c, lanes))
  hs, carries = [], []
  for lo in range(0, M, block):
    n = min(block, M - lo)
    if traced:
      take = jnp.arange(lo, lo + block) % M if n < block else jnp.arange(lo, lo + block)
      h, c = program(keys[take], seats[take], carry)
      h, c = jax.tree_util.tree_map(lambda x: x[:n], (h, c))
    else:
      h, c = zip(*[referee.walk(keys[m], seats[m], carry) for m in range(lo, lo + n)])
      h = jnp.stack(h)
      c = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *c) if carry is not None else None
    hs.append(np.asarray(h))
    carries.append(c)
    if progress is not None:
      progress(lo + n, M)
  h = np.concatenate(hs)
  carries = carries[0] if len(carries) == 1 else jax.tree_util.tree_map(
      lambda *xs: jnp.concatenate(xs), *carries)
  bad = np.flatnonzero(h < 0)
  if len(bad):
    raise ValueError(f"match {int(bad[0])}: an agent returned probabilities with no finite "
                     "positive mass on the legal actions")
  return h, carries


def action_paths(tree: GameTree, histories) -> list[list[int]]:
  """Per history, the action ids from the root to it (chance outcomes included), host-side.

  Action ids are the game's own (``tree.action``), OpenSpiel's numbering for
  the games that mirror OpenSpiel and for ``openspiel:`` imports.
  """
  parent, action = np.asarray(tree.parent), np.asarray(tree.action)
  out = []
  for h in np.asarray(histories, np.int64).reshape(-1):
    path = []
    while h > 0:
      path.append(int(action[h]))
      h = parent[h]
    out.append(path[::-1])
  return out
