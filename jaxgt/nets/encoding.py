"""Fixed-size encodings of public belief states for counterfactual value-and-policy networks.

Student of Games (``003``, "Counterfactual Value-and-Policy Networks", Fig. 6
and Table S1): a network query is a public belief state ``beta = (s_pub, r)``,
an encoding of the public state plus both players' ranges over its
information states. This module gives that encoding for *any* compiled game
(no game-specific features), from its :class:`~jaxgt.core.public_tree.PublicTree`.

Shape letters: ``P`` public states, ``K`` (``k_max``) the largest number of
(augmented) information states one player has at one public state, ``A``
actions, ``D`` public-tree depth, ``W`` largest number of children of a
public state, ``M`` largest number of non-terminal histories of a public
state, ``F`` public-state feature size, ``...`` any batch shape.

**Range layout.** At public state ``s`` player ``p``'s information states are
``PublicTree.infostates[p][s]`` (in that order); slot ``k < K`` holds the
``k``-th of them, slots past their count are padding (``mask`` false, range
and value zero). Slot meaning is relative to the public state (the public
features tell states apart). Ranges are ``[..., 2, K]``, values ``[..., 2,
K]``, policies ``[..., 2, K, A]`` (row ``p``: player ``p``'s information
states; only those where ``p`` acts have legal actions, so the acting
player's policy is row ``actor``; both rows exist because in general the two
players' action sets differ, as Fig. 6 notes).

**Public-state features** (:func:`features`, ``[..., F]``, ``F = (D + 1) +
4 + D * W``): one-hot depth; the fraction of the public state's histories
where player 0, player 1, chance act or that are terminal; and the public
path, one one-hot of size ``W`` per public-tree level giving which child
(in index order) of its parent each ancestor is. The path is injective (two
public states never share it) and shares prefixes between related states,
so it works for every compiled game; a learned per-state embedding can be
added in the network (``CVPN(num_public_states=...)``).

**Value scale.** Network values are the counterfactual values of ``003``
(supplement, "Value Functions for Subgames") at *normalised* ranges with
chance conditioned on the public state:

  ``v_p(I) = sum_{h in I} q(h) r_o(I_o(h)) u_p(h)``,  ``q(h) = pi_c(h) / C(s)``

with ``o`` the opponent, ``r`` the PBS ranges, ``u_p(h)`` ``p``'s expected
utility below ``h`` and ``C(s) = sum_{h in s} pi_c(h)`` over the public
state's non-terminal histories (so values stay of the order of the
payoffs). The full-game counterfactual values of
:func:`jaxgt.core.public_tree.counterfactual_values` are ``C(s) * m_o * v_p(I)``
with ``m_o`` the opponent's total own reach of ``s`` (:func:`to_game_scale`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxgt.core.checks import PROB_ATOL, check_distribution
from jaxgt.core.compiler import CompiledGame, ancestor_at_depth
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.core.public_tree import PublicTree, build_public_tree


@struct.dataclass
class PBS:
  """A batch of public belief states in the padded layout."""

  public: jax.Array  # [...] int32 public state ids
  ranges: jax.Array  # [..., 2, K] normalised ranges (zero on padding slots)


@dataclasses.dataclass(frozen=True, eq=False)
class PBSEncoding:
  """Static layout of one game's public belief states (NumPy arrays, host side)."""

  pt: PublicTree  # the :class:`PublicTree`
  k_max: int  # K
  num_actions: int  # A
  max_depth: int  # D
  max_children: int  # W
  max_histories: int  # M
  slots: np.ndarray  # [P, 2, K] int32 augmented information state of each slot (-1 on padding)
  mask: np.ndarray  # [P, 2, K] bool valid slots
  legal: np.ndarray  # [P, 2, K, A] bool legal actions of each slot where its player acts
  # [P, 2, K] int32 the compiled information state of each slot where its player acts (-1 elsewhere)
  policy_infostate: np.ndarray
  # [P, 4] float32 fractions of histories where player 0, player 1, chance act, or that are terminal
  actor: np.ndarray
  depth: np.ndarray  # [P] int32
  path: np.ndarray  # [P, D] int32 child rank of each ancestor level (-1 past the depth)
  hist: np.ndarray  # [P, M] int32 the public state's non-terminal histories (-1 pad)
  # [P, 2, M] int32 slot of each history's information state of each player (0 on padding)
  hist_slot: np.ndarray
  hist_q: np.ndarray  # [P, M] float64 q(h) = pi_c(h) / C(s) (0 on padding)
  chance_mass: np.ndarray  # [P] float64 C(s)
  # per player [K_p] int32 slot of each augmented information state in its public state
  slot_of: tuple

  @property
  def game(self) -> CompiledGame:
    return self.pt.game

  @property
  def num_public_states(self) -> int:
    return self.pt.num_public_states

  @property
  def feature_size(self) -> int:
    return (self.max_depth + 1) + 4 + self.max_depth * self.max_children

  def check_public(self, public) -> np.ndarray:
    """``public`` as an ``int32`` array; ``ValueError`` if out of range."""
    ids = np.asarray(public)
    if not np.issubdtype(ids.dtype, np.integer):
      raise ValueError(f"public state ids must be integers, got dtype {ids.dtype}")
    P = self.num_public_states
    if ids.size and (ids.min() < 0 or ids.max() >= P):
      raise ValueError(f"public state ids must lie in [0, {P}) for {self.game.name}, "
                       f"got {ids.min()}..{ids.max()}")
    return ids.astype(np.int32)

  def check_for(self, game) -> None:
    """``ValueError`` unless ``game`` (compiled game or public tree) is this encoding's game."""
    g = game.game if isinstance(game, PublicTree) else game
    if g is not self.game and getattr(g, "fingerprint", None) != self.game.fingerprint:
      raise ValueError(f"encoding is for {self.game.name}, not {getattr(g, 'name', g)!r}")


def build_encoding(game: CompiledGame | PublicTree) -> PBSEncoding:
  """The :class:`PBSEncoding` of a compiled game (cached on it)."""
  pt = build_public_tree(game)
  return pt.game.cached(("nets.pbs_encoding",), lambda: _assemble_encoding(pt))


def _assemble_encoding(pt: PublicTree) -> PBSEncoding:
  t = pt.game.tree
  P, A = pt.num_public_states, t.num_actions
  player = np.asarray(t.player)
  _check_perfect_recall(pt)
  K = max(1, max(len(x) for p in (0, 1) for x in pt.infostates[p]))
  slots = np.full((P, 2, K), -1, np.int32)
  slot_of = []
  for p in (0, 1):
    so = np.zeros(len(pt.aug_keys[p]), np.int32)
    for s in range(P):
      ids = pt.infostates[p][s]
      slots[s, p, :len(ids)] = ids
      so[ids] = np.arange(len(ids))
    slot_of.append(so)
  mask = slots >= 0
  # Acting information states: the compiled infostate of a history where p acts.
  legal = np.zeros((P, 2, K, A), bool)
  pol_info = np.full((P, 2, K), -1, np.int32)
  info = np.asarray(t.infostate)
  hp = np.asarray(t.history_public)
  for p in (0, 1):
    hs = np.flatnonzero(player == p)
    a = pt.aug[p][hs]
    pol_info[hp[hs], p, slot_of[p][a]] = info[hs]
    legal[hp[hs], p, slot_of[p][a]] = np.asarray(t.players[p].legal)[info[hs]]
  actor = np.zeros((P, 4), np.float32)
  depth = np.asarray(pt.depth, np.int32)
  D = int(depth.max()) if P else 0
  W = max(1, max((len(c) for c in pt.children), default=1))
  path = np.full((P, max(D, 1)), -1, np.int32)
  rank = np.zeros(P, np.int32)
  for s in range(P):
    for i, c in enumerate(pt.children[s]):
      rank[c] = i
  every = np.arange(P)
  for d in range(1, D + 1):  # rank of each public state's ancestor at depth d
    anc = ancestor_at_depth(pt.parent, depth, every, d)
    path[:, d - 1] = np.where(depth >= d, rank[anc], -1)
  M = 1
  nonterm = []
  for s in range(P):
    hs = pt.histories[s]
    pl = player[hs]
    actor[s] = [np.mean(pl == 0), np.mean(pl == 1), np.mean(pl == CHANCE), np.mean(pl == TERMINAL)]
    nt = hs[pl != TERMINAL]
    nonterm.append(nt)
    M = max(M, len(nt))
  hist = np.full((P, M), -1, np.int32)
  hist_slot = np.zeros((P, 2, M), np.int32)
  hist_q = np.zeros((P, M), np.float64)
  mass = np.zeros(P, np.float64)
  for s, nt in enumerate(nonterm):
    n = len(nt)
    hist[s, :n] = nt
    for p in (0, 1):
      hist_slot[s, p, :n] = slot_of[p][pt.aug[p][nt]]
    c = pt.chance_reach[nt]
    mass[s] = c.sum()
    if n:
      hist_q[s, :n] = c / mass[s]
  out = PBSEncoding(pt=pt, k_max=K, num_actions=A, max_depth=D, max_children=W,
                    max_histories=M, slots=slots, mask=mask, legal=legal,
                    policy_infostate=pol_info, actor=actor, depth=depth, path=path[:, :D],
                    hist=hist, hist_slot=hist_slot, hist_q=hist_q, chance_mass=mass,
                    slot_of=tuple(slot_of))
  return out


def _check_perfect_recall(pt: PublicTree) -> None:
  """A range needs one own reach per augmented information state (all its histories share
  the player's own sequence); games whose information-state strings forget the player's own
  earlier actions violate it."""
  last = np.asarray(pt.game.tree.last_seq)
  for p in (0, 1):
    m = pt.aug[p] >= 0
    bad = np.flatnonzero(pt.aug_seq[p][pt.aug[p][m]] != last[p][m])
    if len(bad):
      i = int(pt.aug[p][m][bad[0]])
      raise ValueError(
          f"{pt.game.name}: augmented information state {pt.aug_keys[p][i]!r} of player {p} "
          f"(public state {int(pt.aug_public[p][i])}) holds histories with different own action "
          "sequences (imperfect recall), so its range is undefined; PBS encodings need "
          "perfect-recall information states")


def features(enc: PBSEncoding, public) -> jax.Array:
  """Public-state features ``[..., F]`` (float32) of public state ids ``[...]`` (jittable)."""
  public = jnp.asarray(public)
  D, W = enc.max_depth, enc.max_children
  depth = jax.nn.one_hot(jnp.asarray(enc.depth)[public], D + 1, dtype=jnp.float32)
  actor = jnp.asarray(enc.actor)[public]
  parts = [depth, actor]
  if D:
    path = jax.nn.one_hot(jnp.asarray(enc.path)[public], W, dtype=jnp.float32)  # -1 -> zeros
    parts.append(path.reshape(path.shape[:-2] + (D * W,)))
  return jnp.concatenate(parts, axis=-1)


def masks(enc: PBSEncoding, public):
  """``(mask [..., 2, K] bool, legal [..., 2, K, A] bool)`` of public state ids (jittable)."""
  public = jnp.asarray(public)
  return jnp.asarray(enc.mask)[public], jnp.asarray(enc.legal)[public]


def pad_ranges(enc: PBSEncoding, public_state, range0, range1) -> np.ndarray:
  """One PBS's ranges ``[K0_s]``, ``[K1_s]`` (as :func:`public_tree.public_belief_state`) -> ``[2, K]``.

  Host side; raises ``ValueError`` when a range does not match the public
  state's information-state count, is negative or does not sum to one
  (:meth:`PublicTree.check_range`).
  """
  s = enc.pt.public_id(public_state)
  out = np.zeros((2, enc.k_max), np.float64)
  for p, r in enumerate((range0, range1)):
    r = enc.pt.check_range(s, p, r)
    out[p, :len(r)] = r
  return out


def gather_ranges(enc: PBSEncoding, public, flat_ranges) -> jax.Array:
  """Padded ranges ``[..., 2, K]`` from per-player flat ``([K_0], [K_1])`` (jittable).

  ``flat_ranges`` is indexed like ``PublicTree.aug_keys`` (e.g. the output of
  :func:`jaxgt.core.public_tree.ranges`); raises ``ValueError`` on a length mismatch.
  """
  public = jnp.asarray(public)
  rows = []
  for p in (0, 1):
    r = jnp.asarray(flat_ranges[p])
    want = len(enc.pt.aug_keys[p])
    if r.shape[-1:] != (want,):
      raise ValueError(f"flat range of player {p} must have shape [..., {want}] (one entry per "
                       f"augmented information state of {enc.game.name}), got {r.shape}")
    sl = jnp.asarray(enc.slots[:, p])[public]
    rows.append(jnp.where(sl >= 0, jnp.take(r, jnp.maximum(sl, 0), axis=-1), 0.0))
  return jnp.stack(rows, axis=-2)


def make_pbs(enc: PBSEncoding, public, ranges, *, atol: float = PROB_ATOL) -> PBS:
  """Validated :class:`PBS` from ids ``[...]`` and padded ranges ``[..., 2, K]`` (host side).

  Raises ``ValueError`` for a shape mismatch, mass on padding slots, negative
  entries or a non-terminal public state whose range does not sum to one
  (:func:`jaxgt.core.checks.check_distribution`).
  """
  ids = enc.check_public(public)
  r = np.asarray(ranges, np.float64)
  if r.shape != ids.shape + (2, enc.k_max):
    raise ValueError(f"ranges must have shape {ids.shape + (2, enc.k_max)} (public states x "
                     f"2 players x K={enc.k_max} slots), got {r.shape}")
  m = enc.mask[ids]
  if np.any(r[~m] != 0):
    raise ValueError("ranges put mass on padding slots (past the public state's information "
                     "states)")
  if not np.isfinite(r).all() or np.any(r < 0):
    raise ValueError("ranges have negative or non-finite entries")
  check_distribution("ranges (each player's must sum to one)", r[m.any(-1)], enc.k_max, atol=atol)
  return PBS(public=jnp.asarray(ids), ranges=jnp.asarray(ranges))


def scatter(enc: PBSEncoding, public, values) -> tuple:
  """Per-player flat ``([K_0], [K_1])`` arrays from padded ``values [N, 2, K]`` at ids ``[N]``.

  Entries of public states not in ``public`` are zero (jittable). Public
  states must not repeat in ``public``: with a repeated id, which of the
  values lands is unspecified (XLA scatters do not order duplicates).
  """
  public = jnp.asarray(public)
  values = jnp.asarray(values)
  if values.shape[-2:] != (2, enc.k_max) or values.shape[:-2] != public.shape:
    raise ValueError(f"values must have shape {public.shape + (2, enc.k_max)}, got {values.shape}")
  out = []
  for p in (0, 1):
    sl = jnp.asarray(enc.slots[:, p])[public].reshape(-1)
    v = values[..., p, :].reshape(-1)
    K = len(enc.pt.aug_keys[p])
    idx = jnp.where(sl >= 0, sl, K)  # padding goes to a dropped extra entry
    out.append(jnp.zeros(K + 1, values.dtype).at[idx].set(v)[:K])
  return tuple(out)


def scatter_policy(enc: PBSEncoding, public, probs, base_policy) -> tuple:
  """``base_policy`` (``([I0, A], [I1, A])``) with the acting slots of ``probs [N, 2, K, A]`` set."""
  public = jnp.asarray(public)
  probs = jnp.asarray(probs)
  if probs.shape != public.shape + (2, enc.k_max, enc.num_actions):
    raise ValueError(f"policy must have shape {public.shape + (2, enc.k_max, enc.num_actions)}, "
                     f"got {probs.shape}")
  out = []
  for p in (0, 1):
    base = jnp.asarray(base_policy[p])
    I = base.shape[0]
    if base.shape != (enc.game.tree.num_infostates[p], enc.num_actions):
      raise ValueError(f"base policy of player {p} has shape {base.shape}, expected "
                       f"{(enc.game.tree.num_infostates[p], enc.num_actions)}")
    info = jnp.asarray(enc.policy_infostate[:, p])[public].reshape(-1)
    idx = jnp.where(info >= 0, info, I)
    pad = jnp.concatenate([base, jnp.zeros((1, enc.num_actions), base.dtype)])
    out.append(pad.at[idx].set(probs[..., p, :, :].reshape(-1, enc.num_actions).astype(base.dtype))[:I])
  return tuple(out)


def history_utilities(enc: PBSEncoding, public, hist_values) -> jax.Array:
  """``[..., M]`` player 0's value of each non-terminal history of the public states.

  ``hist_values [H]``: player 0's value of every full-game history (e.g.
  :func:`jaxgt.core.public_tree.history_values`); zero on padding.
  """
  h = jnp.asarray(enc.hist)[jnp.asarray(public)]
  return jnp.where(h >= 0, jnp.asarray(hist_values)[jnp.maximum(h, 0)], 0.0)


def exact_cfvs(enc: PBSEncoding, public, ranges, utilities=None) -> jax.Array:
  """Network-scale counterfactual values ``[..., 2, K]`` (module docstring) of PBSs (jittable).

  ``utilities [..., M]``: player 0's value below each history of the public
  state (:func:`history_utilities`) under the continuation profile; row 1 is
  in player 1's utility. These are the supervised targets of ``003``.
  ``utilities=None`` gives the counterfactual reach ``sum_{h in I} q(h)
  r_o(I_o(h))`` of each slot.
  """
  public = jnp.asarray(public)
  ranges = jnp.asarray(ranges)
  if ranges.shape != public.shape + (2, enc.k_max):
    raise ValueError(f"ranges must have shape {public.shape + (2, enc.k_max)}, got {ranges.shape}")
  return slot_sums(jnp.asarray(enc.hist_slot)[public], jnp.asarray(enc.hist_q)[public],
                   jnp.asarray(enc.mask)[public], ranges, utilities)


def slot_sums(hist_slot, hist_q, mask, ranges, utilities=None) -> jax.Array:
  """``sum_{h in I} q(h) r_o(I_o(h)) [u_p(h)]`` per slot ``[..., 2, K]`` from gathered tables.

  ``hist_slot [..., 2, M]``, ``hist_q [..., M]`` and ``mask [..., 2, K]`` are
  :class:`PBSEncoding` rows of the queried public states (gathered once
  host-side when the states are fixed, as at a subgame's leaves);
  ``utilities [..., M]`` (player 0's, row 1 negated) or ``None`` for the
  counterfactual reach. One segment sum per player, no one-hot.
  """
  ranges = jnp.asarray(ranges)
  hs = jnp.asarray(hist_slot)
  q = jnp.asarray(hist_q, ranges.dtype)
  K = ranges.shape[-1]
  batch = q.shape[:-1]
  n = int(np.prod(batch, dtype=np.int64))
  # Segment ids: slot k of batch entry b is segment b * K + k.
  base = (jnp.arange(n, dtype=jnp.int32) * K).reshape(batch + (1,))
  rows = []
  for p in (0, 1):
    o = 1 - p
    ro = jnp.take_along_axis(ranges[..., o, :], hs[..., o, :], axis=-1)
    c = q * ro
    if utilities is not None:
      c = c * (1.0 if p == 0 else -1.0) * jnp.asarray(utilities, ranges.dtype)
    seg = (base + hs[..., p, :]).reshape(-1)
    rows.append(jax.ops.segment_sum(c.reshape(-1), seg, n * K).reshape(batch + (K,)))
  out = jnp.stack(rows, axis=-2)
  return jnp.where(jnp.asarray(mask), out, 0.0)


def to_game_scale(enc: PBSEncoding, public, values, opponent_mass) -> jax.Array:
  """Full-game counterfactual values ``C(s) * m_o * v`` from network-scale ``values [..., 2, K]``.

  ``opponent_mass [..., 2]``: row ``p`` is the total own reach of ``p``'s
  opponent at the public state (unnormalised ranges summed).
  """
  public = jnp.asarray(public)
  c = jnp.asarray(enc.chance_mass)[public]
  return values * (c[..., None] * jnp.asarray(opponent_mass))[..., None]
