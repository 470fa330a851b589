"""Device policies: a strategy of a device game as a batched JAX function.

A **device policy** of a device game (:mod:`jaxgt.games.device`) is a callable

    ``policy(states, player) -> probs``

``states`` a batch of the game's states (its state pytree with a leading axis ``B`` on every
leaf), ``player`` a Python ``int`` (0 or 1, the seat whose strategy is asked), ``probs`` a
float ``[B, A]`` array (``A = game.num_actions``): at each state where ``player`` acts, the
probabilities of its actions (zero on illegal actions, summing to one). It must be a pure,
traceable JAX function that reads only what ``player`` observes (its information state,
e.g. :meth:`~jaxgt.games.device.DeviceGame.info_key` ``(s, player)``), since evaluators call
it inside ``jax.jit`` at states of their choosing, with any ``B``; rows at states where
``player`` does not act are ignored (they must still be finite or are read as zeros).
Network policies, solver lookups and scripted strategies all fit; the evaluators of large
games (:func:`jaxgt.evaluation.local_br.local_best_response`) take one. A policy that is a
pytree of arrays (:class:`TabularDevicePolicy`; a network's parameters closed over by a
``jaxgt.struct`` dataclass) enters their jitted programs as an argument, so policies of one
shape share a compilation; any other callable is compiled into the program.

:func:`tabular_device_policy` makes one from a tabular policy of a compiled game (so
estimates can be checked against exact best responses); :func:`uniform_device_policy` and
:func:`fixed_action_policy` are simple reference strategies.
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.games.device import DeviceGame


class DevicePolicy(Protocol):
  """``policy(states, player) -> probs [B, A]`` (see the module docstring)."""

  def __call__(self, states: Any, player: int) -> jax.Array:
    ...


def batch_of(game: DeviceGame, size: int):
  """``size`` copies of ``game``'s root state as one batch (leading axis ``size``)."""
  return jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (size,) + jnp.shape(x)),
                                game.init())


def check_device_policy(game: DeviceGame, policy) -> None:
  """Raises ``TypeError`` unless ``policy`` is callable and, traced abstractly (nothing is
  compiled) on a batch of two root states for each player, returns a float ``[2, A]``."""
  if not callable(policy):
    raise TypeError(f"a device policy is a function policy(states, player) -> [B, A], got "
                    f"{type(policy).__name__}")
  own = getattr(policy, "game", None)
  if isinstance(policy, TabularDevicePolicy) and own is not game and \
     own.game_string() != game.game_string():
    raise TypeError(f"the tabular device policy is for {own.game_string()}, not for "
                    f"{game.game_string()}")
  A = int(game.num_actions)
  for player in (0, 1):
    try:
      out = jax.eval_shape(lambda s, p=player: policy(s, p), batch_of(game, 2))
    except Exception as e:  # the policy's own failure, reported with what was asked
      raise TypeError(f"device policy failed on a batch of 2 {game.name} states for player "
                      f"{player}: {type(e).__name__}: {e}") from e
    shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
    if shape != (2, A) or dtype is None or not jnp.issubdtype(dtype, jnp.floating):
      raise TypeError(f"device policy must return float [B, A] = [2, {A}] for a batch of 2 "
                      f"{game.name} states; for player {player} it returned "
                      f"{'a ' + type(out).__name__ if shape is None else f'{dtype} {shape}'}")


def uniform_device_policy(game: DeviceGame) -> DevicePolicy:
  """Uniform over the legal actions."""

  def policy(states, player):
    del player
    legal = jax.vmap(game.legal_mask)(states).astype(jnp.zeros(()).dtype)
    return legal / jnp.maximum(jnp.sum(legal, axis=-1, keepdims=True), 1)

  return policy


def fixed_action_policy(game: DeviceGame, preference) -> DevicePolicy:
  """Plays the first legal action of ``preference`` (action ids, most preferred first), e.g.
  ``(1,)`` always check/call in poker, ``(0, 1)`` fold to every bet and check otherwise;
  uniform where none of them is legal."""
  order = tuple(int(a) for a in preference)
  if not order or any(not 0 <= a < game.num_actions for a in order):
    raise ValueError(f"preference must name actions in [0, {game.num_actions}), got "
                     f"{preference!r}")

  def policy(states, player):
    del player
    legal = jax.vmap(game.legal_mask)(states)
    out = jnp.zeros(legal.shape)
    chosen = jnp.zeros(legal.shape[:1], bool)
    for a in order:
      take = legal[:, a] & ~chosen
      out = out.at[:, a].set(jnp.where(take, 1.0, 0.0))
      chosen = chosen | take
    uniform = legal / jnp.maximum(jnp.sum(legal, axis=-1, keepdims=True), 1)
    return jnp.where(chosen[:, None], out, uniform)

  return policy


@struct.dataclass
class TabularDevicePolicy:
  """A tabular policy of a compiled device game as a device policy (:func:`tabular_device_policy`).

  Per player ``p``: ``keys[p] [I_p, W]`` the information-state keys
  (:meth:`~jaxgt.games.device.DeviceGame.info_key`) of the compiled game's information states
  in index order, ``probs[p] [I_p, A]`` the policy; a query's key is found by a mixed-radix
  code (``codes[p]`` sorted, ``order[p]`` their rows) or, when codes would not fit in 31 bits,
  by comparing whole keys. A key the game never reaches gets the uniform policy over the
  state's legal actions. A pytree (the tables are its leaves), so evaluators can take it as an
  argument of a jitted program: tables of one shape share a compilation."""

  game: DeviceGame = struct.field(pytree_node=False)
  keys: tuple  # per player, int32 [I_p, W]
  probs: tuple  # per player, float [I_p, A]
  low: tuple  # per player, int32 [W] smallest value of each key word
  span: tuple  # per player, int32 [W] range of each key word
  codes: tuple  # per player, int32 [I_p] sorted codes, or None
  order: tuple  # per player, int32 [I_p] the row of each sorted code, or None

  def __call__(self, states, player: int):
    p = int(player)
    keys = jax.vmap(lambda s: self.game.info_key(s, p))(states).astype(jnp.int32)  # [B, W]
    if self.codes[p] is not None:
      low, span = jnp.asarray(self.low[p]), jnp.asarray(self.span[p])
      inside = jnp.all((keys >= low) & (keys < low + span), axis=-1)
      code = _codes(jnp.clip(keys - low, 0, span - 1), span)
      codes = jnp.asarray(self.codes[p])
      at = jnp.clip(jnp.searchsorted(codes, code), 0, len(self.codes[p]) - 1)
      found = inside & (codes[at] == code)
      row = jnp.asarray(self.order[p])[at]
    else:
      eq = jnp.all(keys[:, None, :] == jnp.asarray(self.keys[p])[None], axis=-1)  # [B, I]
      found, row = jnp.any(eq, axis=-1), jnp.argmax(eq, axis=-1)
    table = jnp.asarray(self.probs[p])[row]
    legal = jax.vmap(self.game.legal_mask)(states).astype(table.dtype)
    uniform = legal / jnp.maximum(jnp.sum(legal, axis=-1, keepdims=True), 1)
    return jnp.where(found[:, None], table, uniform)


def _codes(digits, span):
  """Mixed-radix codes ``[...]`` of ``digits [..., W]`` (each in ``[0, span)``)."""
  code = jnp.zeros(digits.shape[:-1], jnp.int32) if isinstance(digits, jax.Array) else \
      np.zeros(digits.shape[:-1], np.int64)
  for c in range(digits.shape[-1]):
    code = code * span[c] + digits[..., c]
  return code


def tabular_device_policy(compiled, policy) -> TabularDevicePolicy:
  """The device policy of a tabular policy of ``compiled`` (a
  :class:`~jaxgt.core.game_tree.CompiledGame` compiled from a device game).

  ``policy``: a :class:`~jaxgt.policy.Policy` of ``compiled``, its arrays ``(sigma0 [I0, A],
  sigma1 [I1, A])``, or ``{information-state string: probabilities [A]}`` covering every
  information state of the game (OpenSpiel's strings where the game mirrors one). Each
  history of the compiled tree is replayed through the device rules to read the device key of
  its information state. Raises ``TypeError`` for a game without device rules and
  :class:`~jaxgt.policy.PolicyError` for a policy that does not fit."""
  from jaxgt.core.game_tree import CompiledGame
  from jaxgt.policy import Policy, PolicyError
  if not isinstance(compiled, CompiledGame) or not isinstance(compiled.game, DeviceGame):
    raise TypeError(f"tabular_device_policy needs a game compiled from device rules "
                    f"(jaxgt.compile_game(jaxgt.games.make(...))), got "
                    f"{type(compiled).__name__}")
  A = compiled.tree.num_actions
  if isinstance(policy, dict):
    arrays = []
    for p in (0, 1):
      sig = np.zeros((compiled.tree.num_infostates[p], A))
      for i, key in enumerate(compiled.infostate_keys[p]):
        if key not in policy:
          raise PolicyError(f"the policy has no entry for information state {key!r}")
        row = np.asarray(policy[key], np.float64).reshape(-1)
        if row.shape != (A,):
          raise PolicyError(f"information state {key!r}: {row.size} probabilities, the game "
                            f"has {A} actions")
        sig[i] = row
      arrays.append(sig)
    policy = Policy.from_arrays(compiled, arrays)
  elif not isinstance(policy, Policy):
    policy = Policy.from_arrays(compiled, policy)
  policy.check_game(compiled)
  rows = _infostate_rows(compiled)
  keys, low, span, codes, order = [], [], [], [], []
  for p in (0, 1):
    k = rows[p]
    lo, hi = k.min(axis=0), k.max(axis=0)
    sp = (hi - lo + 1).astype(np.int64)
    keys.append(k.astype(np.int32)), low.append(lo.astype(np.int32))
    span.append(sp.astype(np.int32))
    if np.sum(np.log2(sp.astype(np.float64))) < 31:
      c = _codes(k - lo, sp)
      o = np.argsort(c, kind="stable")
      codes.append(c[o].astype(np.int32)), order.append(o.astype(np.int32))
    else:
      codes.append(None), order.append(None)
  return TabularDevicePolicy(compiled.game, tuple(keys), tuple(np.asarray(q) for q in
                                                               policy.probs),
                             tuple(low), tuple(span), tuple(codes), tuple(order))


_CHUNK = 1 << 14  # states per replay call (levels padded or cut to this size)
_REPLAY: dict = {}  # (game class, game string) -> jitted (step, key of player 0, of player 1)


def _replay_functions(game: DeviceGame):
  key = (type(game), game.game_string())
  if key not in _REPLAY:
    _REPLAY[key] = (jax.jit(jax.vmap(game.step)),) + tuple(
        jax.jit(jax.vmap(lambda s, p=p: game.info_key(s, p))) for p in (0, 1))
  return _REPLAY[key]


def _infostate_rows(compiled) -> tuple:
  """Per player ``[I_p, W]`` int64: the device key of each information state, read by
  replaying the compiled tree's histories (breadth first) through the device rules."""
  game, tree = compiled.game, compiled.tree
  parent, action = np.asarray(tree.parent), np.asarray(tree.action)
  players, infostate = np.asarray(tree.player), np.asarray(tree.infostate)
  missing = np.iinfo(np.int64).min
  out = [np.full((tree.num_infostates[p], game.info_key_width), missing, np.int64)
         for p in (0, 1)]
  step, *keys = _replay_functions(game)
  widest = max(hi - lo for lo, hi in tree.depth_levels)
  chunk = min(_CHUNK, 1 << int(np.ceil(np.log2(max(widest, 1)))))
  level = jax.tree_util.tree_map(np.asarray, batch_of(game, 1))
  prev_lo = 0
  for d, (lo, hi) in enumerate(tree.depth_levels):
    if d:  # the level's states from its parents', in chunks of one size (one compilation)
      parts = []
      for a in range(lo, hi, chunk):
        idx = np.minimum(np.arange(a, a + chunk), hi - 1)
        states = jax.tree_util.tree_map(lambda x: x[parent[idx] - prev_lo], level)
        out_states = step(states, jnp.asarray(action[idx], jnp.int32))
        parts.append(jax.tree_util.tree_map(lambda x, n=min(chunk, hi - a): np.asarray(x)[:n],
                                            out_states))
      level = jax.tree_util.tree_map(lambda *xs: np.concatenate(xs), *parts)
    prev_lo = lo
    for p in (0, 1):
      at = np.flatnonzero(players[lo:hi] == p)
      for a in range(0, len(at), chunk):
        sel = at[a:a + chunk]
        idx = np.concatenate([sel, np.full(chunk - len(sel), sel[-1])])
        rows = np.asarray(keys[p](jax.tree_util.tree_map(lambda x: x[idx], level)))
        out[p][infostate[lo + sel]] = rows[:len(sel)]
  for p in (0, 1):
    if np.any(out[p] == missing):
      raise ValueError(f"{compiled.name}: some information states of player {p} were not met "
                       f"replaying the tree")
  return tuple(out)


__all__ = ["DevicePolicy", "TabularDevicePolicy", "batch_of", "check_device_policy",
           "fixed_action_policy", "tabular_device_policy", "uniform_device_policy"]
