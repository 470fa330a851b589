"""Public belief states of device games on factored ranges (Schmid et al. 2023, Fig. 6; Brown
et al. 2020, ReBeL, Sec. 4).

Where a device game's hidden information is one private state per player
(:attr:`~jaxgt.games.device.DeviceGame.num_private` ``(K0, K1)``), a public belief
state is a state of the game (any deal: its public part is what counts) and both
players' ranges over their private states, ``[2, K]`` with ``K = max(K0, K1)``
(padding past ``K_p``). No public state is numbered, so nothing about the whole
game is tabulated: a network reads :meth:`FactoredEncoding.features` (the
game's public features and who acts) and :meth:`FactoredEncoding.masks` (the
private states chance can have dealt there, and the acting player's legal
actions) from the state itself.

**Value scale** (as :mod:`jaxgt.nets.encoding`): ``v_p(k) = sum_k' q(k, k') r_o(k')
u_p(k, k')`` with ``q = private_chance(s)`` (the pairs' probability given the
public chance events) and ``r`` the normalised ranges; :func:`exact_cfvs` computes
it on a factored public tree rooted at the PBS's state.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.core.checks import check_shape
from jaxgt.core.factored import FactoredTree, dealt_root
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games.device import DeviceGame


@dataclasses.dataclass(frozen=True, eq=False)
class FactoredEncoding:
  """PBS layout of a device game whose ranges factor (module docstring); the interface of
  :class:`~jaxgt.nets.encoding.PBSEncoding` that networks read."""

  game: DeviceGame

  def __post_init__(self):
    if not isinstance(self.game, DeviceGame):
      raise TypeError(f"FactoredEncoding needs a device game, got {type(self.game).__name__}")
    if self.game.num_private is None:
      raise ValueError(f"{self.game.game_string()} has no public/private factorisation")
    if not self.game.public_feature_size:
      raise ValueError(f"{self.game.game_string()} defines no public features")

  @property
  def k_max(self) -> int:
    return int(max(self.game.num_private))

  @property
  def num_actions(self) -> int:
    return int(self.game.num_actions)

  @property
  def num_public_states(self) -> int:
    return 0  # not numbered

  @property
  def feature_size(self) -> int:
    return int(self.game.public_feature_size) + 4

  def batch_shape(self, public) -> tuple:
    """The leading (batch) axes of a batch of states ``public``."""
    ref = jax.tree.leaves(self.game.init())[0]
    leaf = jax.tree.leaves(public)[0]
    return tuple(jnp.shape(leaf)[:jnp.ndim(leaf) - jnp.ndim(ref)])

  def _per_state(self, fn, public, *per_state):
    """``fn(state, *args)`` mapped over the batch axes of ``public`` (and of the arrays
    ``per_state``, which share them)."""
    batch = self.batch_shape(public)
    flat = jax.tree.map(lambda x: jnp.reshape(x, (-1,) + jnp.shape(x)[len(batch):]),
                        (public, *per_state))
    out = jax.vmap(fn)(*flat)
    return jax.tree.map(lambda x: x.reshape(batch + x.shape[1:]), out)

  def features(self, public) -> jax.Array:
    """``[..., F]`` float32: the game's public features and a one-hot of who acts (player 0,
    player 1, chance, terminal)."""
    g = self.game

    def one(s):
      who = (jnp.array([0, 1, CHANCE, TERMINAL]) == g.current_player(s)).astype(jnp.float32)
      return jnp.concatenate([g.public_features(s).astype(jnp.float32), who])

    return self._per_state(one, public)

  def masks(self, public):
    """``(mask [..., 2, K], legal [..., 2, K, A])``: the private states chance can have dealt
    at each state (positive :meth:`~jaxgt.games.device.DeviceGame.private_chance` marginal),
    and the acting player's legal actions at them."""
    g, K = self.game, self.k_max
    K0, K1 = g.num_private

    def one(s):
      pc = g.private_chance(s)
      m0 = jnp.zeros(K, bool).at[:K0].set(jnp.sum(pc, axis=1) > 0)
      m1 = jnp.zeros(K, bool).at[:K1].set(jnp.sum(pc, axis=0) > 0)
      mask = jnp.stack([m0, m1])
      acting = g.current_player(s) == jnp.arange(2)
      legal = mask[:, :, None] & acting[:, None, None] & g.legal_mask(s)[None, None, :]
      return mask, legal

    return self._per_state(one, public)

  @property
  def value_unit(self) -> float:
    """The game's ``max_utility`` (the unit of expected values, :meth:`counterfactual_mass`)."""
    u = self.game.max_utility
    if u is None:
      raise ValueError(f"{self.game.game_string()} states no max_utility (the unit of a "
                       "network's expected values)")
    return float(u)

  def counterfactual_mass(self, public, ranges) -> jax.Array:
    """``c_p(k) = sum_k' q(k, k') r_o(k')`` ``[..., 2, K]`` of PBSs (``q`` the pairs'
    :meth:`~jaxgt.games.device.DeviceGame.private_chance` at the state): network-scale values
    divided by it are expected values given the private state."""
    g, K = self.game, self.k_max
    K0, K1 = g.num_private

    def one(s, r):
      pc = g.private_chance(s).astype(r.dtype)
      c0 = jnp.zeros(K, r.dtype).at[:K0].set(pc @ r[1, :K1])
      c1 = jnp.zeros(K, r.dtype).at[:K1].set(r[0, :K0] @ pc)
      return jnp.stack([c0, c1])

    return self._per_state(one, public, jnp.asarray(ranges))

  def example(self, batch_size: int):
    """``batch_size`` copies of the first state after the private deals."""
    root = dealt_root(self.game)
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (batch_size,) + jnp.shape(x)), root)

  def pad(self, ranges) -> np.ndarray:
    """``(r0 [K0], r1 [K1])`` -> ``[2, K]`` (host side; zeros past ``K_p``)."""
    out = np.zeros((2, self.k_max))
    for p, r in enumerate(ranges):
      r = np.asarray(r, np.float64)
      check_shape(f"range of player {p}", r, (self.game.num_private[p],))
      out[p, :len(r)] = r
    return out


def exact_cfvs(tree: FactoredTree, policy, ranges) -> np.ndarray:
  """Network-scale counterfactual values ``[2, K]`` (module docstring) of the PBS at
  ``tree``'s root (a factored tree rooted at its state, :func:`~jaxgt.core.factored.
  build_factored_tree` with ``root=``) with normalised ``ranges [2, K]`` when both play
  ``policy`` (``([D0 K0, A], [D1 K1, A])`` on ``tree``) below: the targets a network is
  fitted to, computed on the tree (no history is enumerated)."""
  from jaxgt.solvers import public_cfr
  policy = public_cfr.check_policy(tree, policy)
  K0, K1 = tree.num_private
  K = max(K0, K1)
  r = jnp.asarray(ranges, policy[0].dtype)
  check_shape("ranges", r, (2, K))
  roots = (r[0, :K0], r[1, :K1])
  out = []
  for p in (0, 1):
    o = 1 - p
    x = public_cfr.realization(tree, o, policy[o], roots[o])
    v, _ = public_cfr.values(tree, public_cfr.grouped_payoff(tree, p, x.dtype), p, policy[p], x)
    out.append(jnp.zeros(K, v.dtype).at[:len(v)].set(v))
  return jnp.stack(out)
