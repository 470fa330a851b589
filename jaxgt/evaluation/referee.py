"""The match referee: the one definition of walking matches between two agents.

A match is played under a game's rules (:mod:`jaxgt.games.device`; a compiled
game's are :meth:`~jaxgt.core.game_tree.CompiledGame.rules`, whose state is a
history index), from a :class:`Position` (the rules' state and whether the
match is still valid). The referee samples chance outcomes (from ``chance_probs``,
or with the game's chance sampler where it has one) in an inner loop until the
next decision (or terminal), so chance turns call no agent; at a decision only the acting
agent's ``act`` is called, and the action is drawn from the probabilities it
returns with :func:`jaxgt.core.sampling.sample_index`. A per-decision
``hook`` sees every decision (``(carry, agent index, position state, probs [A],
the agent's new state) -> carry``);
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
draws the outcome. Duplicate matches (:func:`with_deals`) draw their chance outcomes
from a deal key instead, the k-th chance event of a match from ``fold_in(deal key, k)``.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt import struct
from jaxgt.agents.base import Agent
from jaxgt.core import rng
from jaxgt.core.checks import check_choice, check_positive_int, check_shape
from jaxgt.core.game_tree import CompiledGame, GameTree
from jaxgt.core.sampling import sample_index
from jaxgt.core.tree_rules import rules_of
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame, children_mask, has_chance_sampler

TRACE_ERRORS = (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
                jax.errors.TracerIntegerConversionError, jax.errors.TracerArrayConversionError,
                TypeError)
"""Errors that mean an agent cannot run with a traced history (``TypeError``: a state that is
not a pytree of arrays, e.g. continual re-solving's; a real signature error surfaces again in
the Python loop)."""

Hook = Callable[[Any, int, jax.Array, jax.Array, Any], Any]
"""``hook(carry, agent index (static), position state, probs [A], agent state) -> carry``."""


def check_match_args(game, agents, num_matches) -> int:
  """Raises ``ValueError`` unless ``agents`` (``[(name, agent)]``) are Agents of ``game``."""
  if not isinstance(game, (CompiledGame, DeviceGame)):
    raise ValueError("game must be a CompiledGame (jaxgt.load(...)) or a DeviceGame "
                     f"(jaxgt.games.make(...)), got {type(game).__name__}")
  for name, a in agents:
    if not isinstance(a, Agent):
      raise ValueError(f"{name} must be a jaxgt Agent, got {type(a).__name__}")
    g = getattr(a, "game", None)
    if not _same_game(g, game):
      raise ValueError(f"{name} plays {getattr(g, 'name', g)!r}, not {game_name(game)}")
  return check_positive_int("num_matches", num_matches)


def game_name(game) -> str:
  return game.name if isinstance(game, CompiledGame) else game.game_string()


def _same_game(a, b) -> bool:
  """Whether two games (compiled or device) are one game."""
  if isinstance(a, CompiledGame) and isinstance(b, CompiledGame):
    return a.fingerprint == b.fingerprint
  return (isinstance(a, DeviceGame) and isinstance(b, DeviceGame) and type(a) is type(b)
          and a.game_string() == b.game_string())


def traceable(agent: Agent, game, key) -> bool:
  """Whether ``agent`` traces with a traced position state (else warns); ``ValueError`` for a
  bad signature."""
  rules = rules_of(game, jnp.float32)
  try:
    state = jax.eval_shape(agent.init, key)
    probs, new = jax.eval_shape(agent.act, key, state, jax.eval_shape(
        lambda: _seen_by(agent, root(rules))))
  except TRACE_ERRORS as e:
    warnings.warn(f"{type(agent).__name__}.act is not traceable ({type(e).__name__}); "
                  "playing its matches in a Python loop", stacklevel=3)
    return False
  check_shape(f"{type(agent).__name__}.act's probabilities (one per action of "
              f"{game_name(game)})", probs, (rules.num_actions,))
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


@struct.dataclass
class Position:
  """A match position: the rules' state (a history index for a compiled game's rules) and
  whether the match is still valid."""

  state: Any  # the rules' state pytree
  ok: jax.Array  # [] bool: False once an agent put no finite positive mass on legal actions
  actions: jax.Array  # [L] int32 actions and chance outcomes from the root, -1 after the last
  length: jax.Array  # [] int32 steps taken
  # duplicate deals (:func:`with_deals`): the key of the match's chance outcomes, the k-th
  # chance event drawing with ``fold_in(deal_key, k)``; None: chance draws from the walk key
  deal_key: Any = None
  chance_steps: Any = None  # [] int32 chance events so far (with ``deal_key`` only)


def root(rules: DeviceGame) -> Position:
  """The root position of ``rules`` (``L = rules.max_length``)."""
  return at(rules, rules.init())


def at(rules: DeviceGame, state) -> Position:
  """A valid position at ``state`` with no recorded actions."""
  return Position(state, jnp.ones((), bool), jnp.full(rules.max_length, -1, jnp.int32),
                  jnp.zeros((), jnp.int32))


def draw(rules: DeviceGame, pos: Position, probs, key, dtype) -> Position:
  """The child of ``pos`` drawn from ``probs`` (``[A]`` or ``[C]``, masked to the children)
  with the uniform of ``key``; not ``ok`` when ``probs`` has no finite positive mass there."""
  return _draw(rules, pos, probs, rng.uniform(key, (), dtype), dtype)


def _draw(rules: DeviceGame, pos: Position, probs, u, dtype) -> Position:
  """:func:`draw` with the uniform ``u``."""
  probs = jnp.asarray(probs, dtype)
  probs = jnp.pad(probs, (0, rules.num_distinct - probs.shape[-1]))
  probs = jnp.where(children_mask(rules, pos.state), probs, 0.0)
  total = jnp.sum(probs)
  return _stepped(rules, pos, sample_index(probs, u).astype(jnp.int32),
                  jnp.isfinite(total) & (total > 0))


def _stepped(rules: DeviceGame, pos: Position, action, ok=True) -> Position:
  """``pos`` after ``action`` (recorded), still ``ok`` if it was and ``ok`` holds."""
  return pos.replace(state=rules.step(pos.state, action), ok=pos.ok & ok,
                     actions=pos.actions.at[pos.length].set(action, mode="drop"),
                     length=pos.length + 1)


def with_deals(pos: Position, deal_key) -> Position:
  """``pos`` with its chance outcomes drawn from ``deal_key``: the k-th chance event of the
  match takes the uniform of ``fold_in(deal_key, k)`` whatever the agents did before it. Two
  matches with one deal key and the seats swapped see the same deals from opposite seats
  (duplicate matches: the luck of the deal cancels in the pair's mean)."""
  return pos.replace(deal_key=deal_key, chance_steps=jnp.zeros((), jnp.int32))


def through_chance(rules: DeviceGame, pos: Position, key, dtype):
  """Samples chance from ``pos`` until a decision or terminal: ``(position, key)``; a game with
  a chance sampler (:func:`~jaxgt.games.device.has_chance_sampler`, e.g. hold'em's deals)
  draws each outcome with it from the same uniform, else from ``chance_probs``. The uniforms
  come from the walk key, or from the position's deal key (:func:`with_deals`)."""
  sampled = has_chance_sampler(rules)

  def node(carry):
    pos, key = carry
    key, _, ku = rng.split(key, 3)
    if pos.deal_key is not None:
      ku = jax.random.fold_in(pos.deal_key, pos.chance_steps)
      pos = pos.replace(chance_steps=pos.chance_steps + 1)
    u = rng.uniform(ku, (), dtype)
    if not sampled:
      return _draw(rules, pos, rules.chance_probs(pos.state), u, dtype), key
    return _stepped(rules, pos, rules.sample_chance(pos.state, u).astype(jnp.int32)), key

  return lax.while_loop(
      lambda c: c[0].ok & (rules.current_player(c[0].state) == CHANCE), node, (pos, key))


def live(rules: DeviceGame, pos: Position):
  """Whether ``pos`` is a valid non-terminal position (the match goes on)."""
  return pos.ok & (rules.current_player(pos.state) != TERMINAL)


def terminal_payoff(rules: DeviceGame, pos: Position, seat0):
  """Payoff of the agent playing ``seat0`` at terminal ``pos`` (0 when not ``ok``)."""
  u = rules.returns(pos.state)[0]
  return jnp.where(pos.ok, jnp.where(seat0 == 0, u, -u), 0.0)


def advance(rules: DeviceGame, pos: Position, probs, draw_key, chance_key, dtype):
  """The decision at ``pos`` played: the action drawn from ``probs [A]`` with the uniform
  of ``draw_key``, then chance sampled with ``chance_key`` up to the next decision or terminal.

  Returns ``(position, key)`` as :func:`through_chance` (not ``ok`` when ``probs`` has no
  finite positive mass on the legal actions). The one step of a match: the referee's
  drivers and self-play (:mod:`jaxgt.training.selfplay`) move through it.
  """
  return through_chance(rules, draw(rules, pos, probs, draw_key, dtype), chance_key, dtype)


def _seen_by(agent: Agent, pos: Position):
  """What ``act`` receives: the whole :class:`Position` for an agent that sets
  ``reads_position`` (search on a device game replays the match's actions to learn its own
  observations; never the deal key of duplicate matches, which fixes the chance outcomes to
  come), else the rules' state."""
  if getattr(agent, "reads_position", False):
    return pos.replace(deal_key=None, chance_steps=None)
  return pos.state


def _concrete(state):
  """A scalar state (a history index) as a Python int for agents that read one (a state
  pytree or a :class:`Position` as it is)."""
  if not isinstance(state, (int, np.integer, np.ndarray, jax.Array)):
    return state
  return int(state) if jnp.ndim(state) == 0 and jnp.issubdtype(jnp.asarray(state).dtype,
                                                               jnp.integer) else state


_advance_jit = jax.jit(advance, static_argnums=(0, 5))
_through_chance_jit = jax.jit(through_chance, static_argnums=(0, 3))


@dataclasses.dataclass(frozen=True, eq=False)
class Referee:
  """Matches of ``agents = (agent0, agent1)`` under ``rules`` (floats in ``dtype``)."""

  rules: DeviceGame  # the game's rules (a compiled game's: ``game.rules(dtype)``)
  agents: tuple  # the two agents; agent0 plays player seat0 of each match
  dtype: Any  # dtype of the probabilities and uniforms
  hook: Hook | None = None  # optional per-decision hook (see the module docstring)

  def start(self, key, eager: bool = False, deal_key=None):
    """Both agents' states and the first decision: ``(position, (state0, state1), walk key)``;
    with ``deal_key`` the match's chance outcomes come from it (:func:`with_deals`)."""
    k0, k1, key = rng.split(key, 3)
    states = (self.agents[0].init(k0), self.agents[1].init(k1))
    pos = root(self.rules) if deal_key is None else with_deals(root(self.rules), deal_key)
    pos, key = (_through_chance_jit if eager else through_chance)(self.rules, pos, key, self.dtype)
    return pos, states, key

  def decide(self, i: int, pos: Position, state, key, carry, eager: bool = False):
    """Agent ``i`` (static) acts at ``pos``; returns ``(next decision, state, key, carry)``.

    The next decision is reached by :func:`advance` (not ``ok`` when ``act`` returned no
    finite positive mass); ``key`` splits into the next key, ``act``'s and the draw's.
    """
    key, ka, ku = rng.split(key, 3)
    seen = _seen_by(self.agents[i], pos)
    probs, state = self.agents[i].act(ka, state, _concrete(seen) if eager else seen)
    probs = jnp.asarray(probs, self.dtype)
    if self.hook is not None:
      carry = self.hook(carry, i, pos.state, probs, state)
    pos, key = (_advance_jit if eager else advance)(self.rules, pos, probs, ku, key, self.dtype)
    return pos, state, key, carry

  def _loop(self, lanes, seats, serve, eager: bool):
    """The match loop over ``lanes = (position, (state0, state1), key, carry)``: until no match
    goes on, agent 0 then agent 1 serves the matches waiting on it (``serve(i, waiting,
    (history, state_i, key, carry))`` returns them after the decision); a phase runs only
    when some match waits. ``eager``: in Python (agents need not trace), else traced."""
    rules = self.rules
    # the rules read one state; traced lanes hold a batch of positions
    is_live = (lambda p: live(rules, p)) if eager else jax.vmap(lambda p: live(rules, p))
    player = rules.current_player if eager else jax.vmap(rules.current_player)

    def phase(i, lanes):
      waiting = is_live(lanes[0]) & ((player(lanes[0].state) == seats) == (i == 0))

      def play(lanes):
        h, states, key, carry = lanes
        h, s, key, carry = serve(i, waiting, (h, states[i], key, carry))
        return h, tuple(s if j == i else states[j] for j in range(2)), key, carry

      if eager:
        return play(lanes) if bool(jnp.any(waiting)) else lanes
      return lax.cond(jnp.any(waiting), play, lambda x: x, lanes)

    more, body = lambda c: jnp.any(is_live(c[0])), lambda c: phase(1, phase(0, c))
    if not eager:
      return lax.while_loop(more, body, lanes)
    while bool(more(lanes)):
      lanes = body(lanes)
    return lanes

  def walk(self, key, seat0, carry=None, deal_key=None):
    """One match in a Python loop (agents need not trace): ``(final position, carry)``."""
    h, states, key = self.start(key, eager=True, deal_key=deal_key)
    h, _, _, carry = self._loop((h, states, key, carry), int(seat0),
                                lambda i, _, own: self.decide(i, *own, eager=True), eager=True)
    return h, carry

  def run(self, keys, seats, carry, chunk: int, deal_keys=None):
    """All matches as one traced program: ``(final positions [M], carries [M, ...])``.

    ``keys [M]``, ``seats [M]``; ``carry`` is the hook's initial carry (one
    per match); each agent's phase serves up to ``chunk`` waiting matches; ``deal_keys [M]``
    (optional) the keys of the matches' chance outcomes (:func:`with_deals`).
    """
    M = keys.shape[0]
    if deal_keys is None:
      h, states, key = jax.vmap(self.start)(keys)
    else:
      h, states, key = jax.vmap(lambda k, d: self.start(k, deal_key=d))(keys, deal_keys)
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


def array_fields(agent: Agent) -> dict:
  """The fields ``agent`` names in its ``array_fields`` (a dataclass agent's opt-in, e.g. a
  policy table) whose values are pytrees with only JAX or NumPy array leaves: ``{name:
  value}``. The traced match program takes them as an argument instead of compiling them in
  as constants, so a large table costs no compile time and tables of one shape share a
  compilation; any other value stays closed over."""
  if not dataclasses.is_dataclass(agent):
    return {}
  out = {}
  for name in getattr(agent, "array_fields", ()):
    leaves = jax.tree_util.tree_leaves(getattr(agent, name))
    if leaves and all(isinstance(x, (jax.Array, np.ndarray)) for x in leaves):
      out[name] = getattr(agent, name)
  return out


def match_program(referee: Referee, chunk: int):
  """The jitted :meth:`Referee.run` and its last argument: ``(program, fields)``, ``program(keys
  [M], seats [M], carry, fields, deal_keys=None) -> (final positions [M], carries [M, ...])``.
  ``fields`` holds each agent's :func:`array_fields`; the program rebuilds the agents with
  them."""
  fields = tuple(array_fields(a) for a in referee.agents)

  def run(keys, seats, carry, fields, deal_keys=None):
    agents = tuple(dataclasses.replace(a, **f) if f else a for a, f in zip(referee.agents, fields))
    return dataclasses.replace(referee, agents=agents).run(keys, seats, carry, chunk, deal_keys)

  return jax.jit(run), fields


def play_matches(game, agents, keys, seats, *, traced: bool, dtype,
                 hook: Hook | None = None, carry=None, chunk: int | None = None,
                 deal_keys=None,
                 block: int | None = None, progress: Callable[[int, int], None] | None = None):
  """Plays match ``m`` with ``keys[m]``, agent0 in seat ``seats[m]``: ``(final states, carries,
  positions)``.

  ``game`` is a compiled game (the final states are then the terminal histories, NumPy int
  ``[M]``: :func:`action_paths` gives their actions from the root) or a device game (final
  states ``[M, ...]`` of its state pytree); :func:`payoffs` gives the payoffs. ``block``:
  matches per program run (default all ``M``); the traced program is compiled once and reused
  for every block (the last one padded), and ``progress(done, M)`` is called after each block.
  Blocks do not change the matches: match ``m`` always draws from ``keys[m]`` (its chance
  outcomes from ``deal_keys[m]`` where given: :func:`with_deals`). ``chunk``:
  matches each traced agent phase serves (default: the block). The fields an agent names in
  ``array_fields`` (:func:`array_fields`) are arguments of the traced program, not constants.
  Raises ``ValueError`` for a match where an agent returned probabilities with no finite
  positive mass on the legal actions. The final :class:`Position` s (NumPy leaves,
  ``actions [M, L]`` the episodes) are ``(final states, carries, positions)``'s third item.
  """
  referee = Referee(rules_of(game, dtype), tuple(agents), dtype, hook)
  seats = jnp.asarray(seats, jnp.int32)
  M = len(keys)
  block = M if block is None else min(check_positive_int("block", block), M)
  if traced:
    program, fields = match_program(referee, block if chunk is None else min(chunk, block))
  ends, carries = [], []
  for lo in range(0, M, block):
    n = min(block, M - lo)
    if traced:
      take = jnp.arange(lo, lo + block) % M if n < block else jnp.arange(lo, lo + block)
      pos, c = program(keys[take], seats[take], carry, fields,
                       None if deal_keys is None else deal_keys[take])
      pos, c = jax.tree_util.tree_map(lambda x: x[:n], (pos, c))
    else:
      pos, c = zip(*[referee.walk(keys[m], seats[m], carry,
                                  None if deal_keys is None else deal_keys[m])
                     for m in range(lo, lo + n)])
      pos = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *pos)
      c = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *c) if carry is not None else None
    pos = pos.replace(deal_key=None, chance_steps=None)
    ends.append(jax.tree_util.tree_map(np.asarray, pos))
    carries.append(c)
    if progress is not None:
      progress(lo + n, M)
  pos = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *ends)
  carries = carries[0] if len(carries) == 1 else jax.tree_util.tree_map(
      lambda *xs: jnp.concatenate(xs), *carries)
  bad = np.flatnonzero(~pos.ok)
  if len(bad):
    raise ValueError(f"match {int(bad[0])}: an agent returned probabilities with no finite "
                     "positive mass on the legal actions")
  return pos.state, carries, pos


def payoffs(game, states, seats, dtype):
  """``[M]`` payoffs of the agents in ``seats [M]`` at the final ``states`` of
  :func:`play_matches`."""
  rules = rules_of(game, dtype)
  return jax.vmap(lambda s, seat: terminal_payoff(rules, at(rules, s), seat))(
      states, jnp.asarray(seats, jnp.int32))


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
