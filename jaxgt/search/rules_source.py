"""The device tree's nodes computed from a device game's rules (Schmid et al. 2023, GT-CFR).

:func:`jaxgt.search.device_tree.source_from_game` reads every node of a
Growing-Tree CFR search from tables of an enumerated game. A game too large to
enumerate (Liar's Dice with two dice each, ``liars_dice(numdice=2)``) supplies
the same arrays from its rules instead, when a node is created: where its
hidden information is one private state per player (cards, dice;
:attr:`~jaxgt.games.device.DeviceGame.num_private` ``(K0, K1)``), the
histories of a public state after the deals are exactly the private pairs
``(k0, k1)`` and each player's information states are its ``K_p`` private
states (:mod:`jaxgt.core.factored`). A node is named by the key
:class:`RulesKey`: one representative state of its public state (any deal; the
others come from :meth:`~jaxgt.games.device.DeviceGame.with_private`), the
probability of its public chance events and the chance edges into its
histories. Its slots:

* history slot ``m = k0 * K1 + k1`` (``M = K0 K1``) of the pair ``(k0, k1)``,
  present where the pair has positive chance reach ``Z(s) private_chance(s)``
  (``Z`` the product of the public chance outcomes' marginal probabilities);
* information-state slot ``k`` (``K = max(K0, K1)``) of player ``p``: private
  state ``k``, present where some present pair holds it;
* child ``q`` (``Q = max(A, C)``): the public state after action ``q`` (a
  decision: every pair takes it) or chance outcome ``q`` (its probability is per
  pair, the edge into each child history).

Legal actions and the acting player are read from the representative state:
they are public in every game that factors this way. Chance after the root
state must be public (each outcome its own public state), as in
:func:`jaxgt.core.factored.build_factored_tree`; nothing is tabulated, so a
search's memory is its tree's capacity times the node size ``O(K0 K1 Q)``.

Each node's key stays in the tree (:attr:`~jaxgt.search.device_tree.DeviceTree.keys`), so a
leaf evaluator reads a frontier node's public state from its representative state (e.g. the
game's ``public_features``); :attr:`~jaxgt.search.device_tree.DeviceTree.public` holds the
action or chance outcome into each node, so a branch from the root is grown by giving those
(:func:`~jaxgt.search.device_tree.grow_branch`, ``search(path=...)``).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.core.factored import check_dealt_state, check_factored, dealt_root, private_pairs
from jaxgt.core.game_tree import NO_INDEX, NO_PLAYER
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame
from jaxgt.search.device_tree import PublicStateRows

NUM_PUBLIC_STATES = 2 ** 31 - 1
""":attr:`RulesSource.num_public_states`: the rules source does not count them."""


@struct.dataclass
class RulesKey:
  """A node of a rules source (add ``[...]`` in front of every leaf for several)."""

  state: Any  # a representative state of the public state (the game's state pytree)
  reach: Any  # [] float probability of the public chance events from the root state (Z)
  edge: Any  # [M] float chance probability of the edge into each pair's history (1 after a
  # decision and at the root)
  depth: Any  # [] int32 steps below the root state
  label: Any  # [] int32 action or chance outcome into the public state (0 at the root)


@dataclasses.dataclass(frozen=True, eq=False)
class RulesSource:
  """The device tree's source computed from a device game's rules (module docstring); the
  sizes and methods of :class:`jaxgt.search.device_tree.Source`."""

  rules: DeviceGame  # the device game
  dtype: Any  # the float dtype of the rows
  num_histories: int  # M = K0 K1
  num_infostates: int  # K = max(K0, K1)
  num_actions: int  # A
  num_children: int  # Q = max(A, C)
  branching: int  # C (= Q)
  max_depth: int  # the game's max_length (bounds the steps below any root state)
  max_public_depth: int  # the same bound on public depth
  num_public_states: int  # NUM_PUBLIC_STATES (not counted)
  value_scale: float  # largest |payoff| (the game's max_utility unless given)
  game: Any = None  # no compiled game (evaluators that need one refuse this source)
  history_info: Any = None  # no table of the game's histories
  # class constant: a node's history slots are its private pairs (slot k0 K1 + k1), so the
  # regret phase may run on factored ranges (jaxgt.search.factored_form)
  factored = True

  # ---------------------------------------------------------------- keys
  def padding_key(self) -> RulesKey:
    """The key of an empty node (the game's initial state; never expanded)."""
    return RulesKey(state=self.rules.init(), reach=jnp.zeros((), self.dtype),
                    edge=jnp.zeros(self.num_histories, self.dtype),
                    depth=jnp.zeros((), jnp.int32), label=jnp.asarray(NO_INDEX, jnp.int32))

  def root_key(self, root, shape=()) -> RulesKey:
    """The key of root state ``root`` (a state after the private deals, ``shape`` in front of
    every leaf; or a :class:`RulesKey`, kept as it is). A concrete state is checked first:
    ``ValueError`` if it is not a state of the game, or not after both private deals, or
    terminal."""
    if isinstance(root, RulesKey):
      return root
    shape = tuple(shape)
    self.check_state(root, shape)
    return RulesKey(state=root, reach=jnp.ones(shape, self.dtype),
                    edge=jnp.ones(shape + (self.num_histories,), self.dtype),
                    depth=jnp.zeros(shape, jnp.int32), label=jnp.zeros(shape, jnp.int32))

  def check_state(self, state, shape=()) -> None:
    """Raises ``ValueError`` unless ``state`` is a state of the game (``shape`` in front of
    every leaf) after both private deals and not terminal (traced states: structure only;
    :func:`jaxgt.core.factored.check_dealt_state`)."""
    check_dealt_state(self.rules, state, shape, what="the root of a rules search",
                      terminal=False)

  # ---------------------------------------------------------------- rows
  def rows(self, key: RulesKey) -> PublicStateRows:
    """The arrays of the public state of ``key`` (one key; compiled once per source, also
    when called on the host)."""
    return self._rows(key)

  @functools.cached_property
  def _rows(self):
    return jax.jit(lambda key: self.expansion(key)[0])

  def expansion(self, key: RulesKey) -> tuple:
    """``(rows, child keys [Q])`` of the public state of one ``key`` (module docstring)."""
    game, f = self.rules, self.dtype
    K0, K1 = game.num_private
    M, K, A, Q = self.num_histories, self.num_infostates, self.num_actions, self.num_children
    C = int(game.num_outcomes)
    s = key.state
    pairs = private_pairs(game, s)  # [K0, K1, ...]
    flat = jax.tree_util.tree_map(lambda x: x.reshape((M,) + x.shape[2:]), pairs)
    pc = jnp.asarray(game.private_chance(s), f).reshape(M)
    player = jnp.asarray(game.current_player(s), jnp.int32)
    valid = (pc > 0) & (key.reach > 0)  # [M]
    terminal = player == TERMINAL
    decision = (player == 0) | (player == 1)
    chance = player == CHANCE
    ret = jnp.asarray(jax.vmap(game.returns)(flat)[:, 0], f)
    k0 = jnp.repeat(jnp.arange(K0, dtype=jnp.int32), K1)
    k1 = jnp.tile(jnp.arange(K1, dtype=jnp.int32), K0)
    seat = valid & ~terminal
    info = jnp.stack([jnp.where(seat, k0, NO_INDEX), jnp.where(seat, k1, NO_INDEX)])
    ks = jnp.arange(K, dtype=jnp.int32)
    grid = seat.reshape(K0, K1)
    held = [jnp.zeros(K, bool).at[:K0].set(jnp.any(grid, axis=1)),
            jnp.zeros(K, bool).at[:K1].set(jnp.any(grid, axis=0))]
    info_id = jnp.stack([jnp.where(h, ks, NO_INDEX) for h in held])
    acting = jnp.stack([jnp.where(held[p] & (player == p), ks, NO_INDEX) for p in (0, 1)])
    legal_a = jnp.asarray(game.legal_mask(s), bool)  # [A]
    legal = jnp.stack([(held[p] & (player == p))[:, None] & legal_a[None] for p in (0, 1)])
    if C:
      cp = jnp.asarray(jax.vmap(game.chance_probs)(flat), f)  # [M, C]
      cp = jnp.where(valid[:, None], cp, 0.0)
      joint = pc[:, None] * cp
      marg = jnp.sum(joint, axis=0)  # [C]
      best = jnp.argmax(joint, axis=0)  # [C] a pair that can reach each outcome
      cpQ = jnp.zeros((M, Q), f).at[:, :C].set(cp)
      margQ = jnp.zeros(Q, f).at[:C].set(marg)
    else:
      cpQ, margQ = jnp.zeros((M, Q), f), jnp.zeros(Q, f)
    legalQ = jnp.zeros(Q, bool).at[:A].set(legal_a)
    kid = jnp.where(chance, margQ > 0, decision & legalQ)  # [Q]
    exists = valid[:, None] & jnp.where(chance, cpQ > 0, (decision & legalQ)[None])  # [M, Q]
    m = jnp.arange(M, dtype=jnp.int32)
    q = jnp.arange(Q, dtype=jnp.int32)
    rows = PublicStateRows(
        public=key.label, history=jnp.where(valid, m, NO_INDEX),
        player=jnp.where(valid, player, NO_PLAYER),
        action=jnp.where(valid, key.label, NO_INDEX),
        chance=jnp.where(valid, jnp.asarray(key.edge, f), 0.0),
        chance_reach=jnp.where(valid, key.reach * pc, 0.0),
        payoff=jnp.where(valid & terminal, ret, 0.0),
        parent_local=jnp.where(valid, m, NO_INDEX), parent_same=jnp.zeros(M, bool),
        info=info, depth=jnp.where(valid, key.depth, 0).astype(jnp.int32), info_id=info_id,
        acting_info=acting, legal=legal,
        child_local=jnp.where(exists, m[:, None], NO_INDEX),
        child_of=jnp.where(exists, q[None, :], NO_INDEX),
        children=jnp.where(kid, q, NO_INDEX))

    def child(a):
      own = game.step(s, jnp.minimum(a, A - 1) if A else a)
      if not C:
        return own
      # chance: step a pair that can reach outcome a (the representative's own may not)
      b = best[jnp.minimum(a, C - 1)]
      rep = jax.tree_util.tree_map(lambda x: x[b], flat)
      by_chance = game.step(rep, jnp.minimum(a, C - 1))
      return jax.tree_util.tree_map(lambda x, y: jnp.where(chance, x, y), by_chance, own)

    kids = RulesKey(state=jax.vmap(child)(q),
                    reach=jnp.where(chance, key.reach * margQ, key.reach),
                    edge=jnp.where(chance, cpQ.T, jnp.ones((Q, M), f)),
                    depth=jnp.full(Q, key.depth + 1, jnp.int32), label=q)
    return rows, kids


def rules_source(game: DeviceGame, *, dtype="float64", value_scale: float | None = None
                 ) -> RulesSource:
  """The source of GT-CFR searches on ``game`` grown from its rules (module docstring).

  Args:
    game: a device game whose public states factor (``num_private`` and ``with_private``);
      ``TypeError`` for another kind of game, ``ValueError`` for one that does not factor.
    dtype: the float dtype of the tree.
    value_scale: the largest ``|payoff|`` (PUCT's scale); default the game's
      ``max_utility`` (``ValueError`` where it has none).
  """
  check_factored(game, "a rules source")
  if value_scale is None:
    value_scale = game.max_utility
    if value_scale is None:
      raise ValueError(f"{game.game_string()} states no max_utility; give value_scale (the "
                       "largest |payoff|)")
  value_scale = float(value_scale)
  if not np.isfinite(value_scale) or value_scale <= 0:
    raise ValueError(f"value_scale must be a positive number, got {value_scale!r}")
  K0, K1 = (int(k) for k in game.num_private)
  Q = int(game.num_distinct)
  depth = int(game.max_length)
  return RulesSource(rules=game, dtype=jnp.dtype(dtype), num_histories=K0 * K1,
                     num_infostates=max(K0, K1), num_actions=int(game.num_actions),
                     num_children=Q, branching=Q, max_depth=depth, max_public_depth=depth,
                     num_public_states=NUM_PUBLIC_STATES, value_scale=value_scale)


def post_deal_root(game: DeviceGame):
  """The first state of ``game`` after both private deals (each chance step takes its first
  outcome of positive probability): the root of a search over the whole game after the deals
  (every deal is one of its histories)."""
  check_factored(game, "post_deal_root")
  return dealt_root(game)
