"""Fixed-size encodings of public belief states (PBS) for any compiled game
(Schmid et al. 2023, Fig. 6).

Shape letters: ``P`` public states, ``K`` (``k_max``) most (augmented)
information states of one player at one public state, ``A`` actions, ``D``
public-tree depth, ``W`` most children of a public state, ``M`` most
non-terminal histories of a public state, ``F`` feature size.

**Range layout.** Slot ``k`` of player ``p`` at public state ``s`` holds the
``k``-th of ``PublicTree.infostates[p][s]``; later slots are padding (``mask``
false, zero). Ranges and values are ``[..., 2, K]``, policies ``[..., 2, K,
A]`` (row ``p``: ``p``'s information states, legal actions only where ``p`` acts).

**Features** (``F = (D + 1) + 4 + D * W``): one-hot depth; the fractions of
histories where player 0, player 1, chance act or that are terminal; the
public path, per level a one-hot of which child of its parent each ancestor
is (injective, so it works for every game).

**Value scale** (Schmid et al. 2023, supplement, "Value Functions for Subgames"):
``v_p(I) = sum_{h in I} q(h) r_o(I_o(h)) u_p(h)`` with ``q(h) = pi_c(h) /
C(s)``, ``C(s)`` the chance reach of the public state's non-terminal
histories, ``r`` the normalised ranges and ``u_p(h)`` ``p``'s value below ``h``.
The full-game counterfactual values (:func:`jaxgt.core.public_tree.
counterfactual_values`) are ``C(s) * m_o * v_p(I)``, ``m_o`` the opponent's
total own reach of ``s`` (:func:`to_game_scale`). ``v_p(I) / c_p(I)`` with ``c_p(I) = sum_{h in I}
q(h) r_o(I_o(h))`` (:meth:`PBSEncoding.counterfactual_mass`) is ``p``'s expected value given
``I``, bounded by the game's largest payoff whatever the number of information states: the
space a :class:`~jaxgt.nets.cvpn.CVPN` with ``value_space="expected"`` learns in.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.core.checks import PROB_ATOL, check_distribution, check_index, check_shape
from jaxgt.core.game_tree import CompiledGame, ancestor_at_depth
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.core.public_tree import PublicTree, build_public_tree


@struct.dataclass
class PBS:
  """A batch of public belief states in the padded layout."""

  # [...] int32 public state ids (a compiled game's :class:`PBSEncoding`), or a batch of
  # states of a device game whose ranges factor (:class:`~jaxgt.nets.factored_encoding.
  # FactoredEncoding`: the state pytree with leading axes [...])
  public: Any
  ranges: jax.Array  # [..., 2, K] normalised ranges (zero on padding slots)


@dataclasses.dataclass(frozen=True, eq=False)
class PBSEncoding:
  """Static layout of one game's public belief states (NumPy arrays, host side)."""

  public_tree: PublicTree  # the :class:`PublicTree`
  k_max: int  # K
  num_actions: int  # A
  max_depth: int  # D
  max_children: int  # W
  max_histories: int  # M
  slots: np.ndarray  # [P, 2, K] int32 augmented information state of each slot (-1 on padding)
  mask: np.ndarray  # [P, 2, K] bool valid slots
  legal: np.ndarray  # [P, 2, K, A] bool legal actions of each slot where its player acts
  policy_infostate: np.ndarray  # [P, 2, K] int32 compiled infostate where the slot acts, else -1
  actor: np.ndarray  # [P, 4] float32 fractions of histories of player 0, 1, chance, terminal
  depth: np.ndarray  # [P] int32
  path: np.ndarray  # [P, D] int32 child rank of each ancestor level (-1 past the depth)
  hist: np.ndarray  # [P, M] int32 the public state's non-terminal histories (-1 pad)
  hist_slot: np.ndarray  # [P, 2, M] int32 slot of each history's infostates (0 on padding)
  hist_q: np.ndarray  # [P, M] float64 q(h) = pi_c(h) / C(s) (0 on padding)
  chance_mass: np.ndarray  # [P] float64 C(s)
  slot_of: tuple  # per player [K_p] int32 slot of each augmented infostate in its public state

  @property
  def game(self) -> CompiledGame:
    return self.public_tree.game

  @property
  def num_public_states(self) -> int:
    return self.public_tree.num_public_states

  @property
  def feature_size(self) -> int:
    return (self.max_depth + 1) + 4 + self.max_depth * self.max_children

  # the interface networks read (shared with jaxgt.nets.factored_encoding.FactoredEncoding)
  def features(self, public) -> jax.Array:
    """Public-state features ``[..., F]`` of ids ``[...]`` (:func:`features`)."""
    return features(self, public)

  def masks(self, public):
    """``(mask [..., 2, K], legal [..., 2, K, A])`` of ids ``[...]`` (:func:`masks`)."""
    return masks(self, public)

  def batch_shape(self, public) -> tuple:
    """The batch shape of PBS ids ``public``."""
    return tuple(jnp.shape(public))

  def example(self, batch_size: int):
    """``batch_size`` public states (the root's id) to initialise a network with."""
    return jnp.zeros((batch_size,), jnp.int32)

  @property
  def value_unit(self) -> float:
    """The largest ``|payoff|`` of the game (the unit of expected values,
    :meth:`counterfactual_mass`)."""
    return float(max(np.abs(np.asarray(self.game.tree.terminal_payoff)).max(), 1e-12))

  def counterfactual_mass(self, public, ranges) -> jax.Array:
    """``c_p(I) = sum_{h in I} q(h) r_o(I_o(h))`` ``[..., 2, K]`` of PBSs: network-scale values
    divided by it are expected values given the information state (:func:`slot_sums`)."""
    public = jnp.asarray(public)
    return slot_sums(jnp.asarray(self.hist_slot)[public], jnp.asarray(self.hist_q)[public],
                     jnp.asarray(self.mask)[public], ranges)

  def check_for(self, game) -> None:
    """``ValueError`` unless ``game`` (compiled game or public tree) is this encoding's game."""
    g = game.game if isinstance(game, PublicTree) else game
    if g is not self.game and getattr(g, "fingerprint", None) != self.game.fingerprint:
      raise ValueError(f"encoding is for {self.game.name}, not {getattr(g, 'name', g)!r}")


def build_encoding(game: CompiledGame | PublicTree) -> PBSEncoding:
  """The :class:`PBSEncoding` of a compiled game (cached on it)."""
  ptree = build_public_tree(game)
  return ptree.game.derived(_encoding_of)


def _encoding_of(game: CompiledGame) -> PBSEncoding:
  return _assemble_encoding(build_public_tree(game))


def _assemble_encoding(ptree: PublicTree) -> PBSEncoding:
  t = ptree.game.tree
  P, A = ptree.num_public_states, t.num_actions
  player = np.asarray(t.player)
  _check_perfect_recall(ptree)
  K = max(1, max(len(x) for p in (0, 1) for x in ptree.infostates[p]))
  slots = np.full((P, 2, K), -1, np.int32)
  slot_of = []
  for p in (0, 1):
    so = np.zeros(len(ptree.aug_keys[p]), np.int32)
    for s in range(P):
      ids = ptree.infostates[p][s]
      slots[s, p, :len(ids)] = ids
      so[ids] = np.arange(len(ids))
    slot_of.append(so)
  mask = slots >= 0
  legal = np.zeros((P, 2, K, A), bool)
  pol_info = np.full((P, 2, K), -1, np.int32)
  info = np.asarray(t.infostate)
  hp = np.asarray(t.history_public)
  for p in (0, 1):
    hs = np.flatnonzero(player == p)
    a = ptree.aug[p][hs]
    pol_info[hp[hs], p, slot_of[p][a]] = info[hs]
    legal[hp[hs], p, slot_of[p][a]] = np.asarray(t.players[p].legal)[info[hs]]
  depth = np.asarray(ptree.depth, np.int32)
  D = int(depth.max()) if P else 0
  W = max(1, max((len(c) for c in ptree.children), default=1))
  path = np.full((P, max(D, 1)), -1, np.int32)
  rank = np.zeros(P, np.int32)
  for s in range(P):
    for i, c in enumerate(ptree.children[s]):
      rank[c] = i
  every = np.arange(P)
  for d in range(1, D + 1):  # rank of each public state's ancestor at depth d
    anc = ancestor_at_depth(ptree.parent, depth, every, d)
    path[:, d - 1] = np.where(depth >= d, rank[anc], -1)
  actor = np.stack([np.bincount(hp, player == x, minlength=P) for x in (0, 1, CHANCE, TERMINAL)],
                   -1) / np.bincount(hp, minlength=P)[:, None]
  nonterm = [hs[player[hs] != TERMINAL] for hs in ptree.histories]
  M = max([1] + [len(nt) for nt in nonterm])
  hist = np.full((P, M), -1, np.int32)
  hist_slot = np.zeros((P, 2, M), np.int32)
  hist_q = np.zeros((P, M), np.float64)
  mass = np.zeros(P, np.float64)
  for s, nt in enumerate(nonterm):
    n = len(nt)
    hist[s, :n] = nt
    hist_slot[s, :, :n] = [slot_of[p][ptree.aug[p][nt]] for p in (0, 1)]
    c = ptree.chance_reach[nt]
    mass[s] = c.sum()
    hist_q[s, :n] = c / mass[s]
  return PBSEncoding(public_tree=ptree, k_max=K, num_actions=A, max_depth=D, max_children=W,
                     max_histories=M, slots=slots, mask=mask, legal=legal,
                     policy_infostate=pol_info, actor=actor.astype(np.float32), depth=depth,
                     path=path[:, :D], hist=hist, hist_slot=hist_slot, hist_q=hist_q,
                     chance_mass=mass, slot_of=tuple(slot_of))


def _check_perfect_recall(ptree: PublicTree) -> None:
  """``ValueError`` unless every augmented information state has one own sequence (a range)."""
  last = np.asarray(ptree.game.tree.last_seq)
  for p in (0, 1):
    m = ptree.aug[p] >= 0
    bad = np.flatnonzero(ptree.aug_seq[p][ptree.aug[p][m]] != last[p][m])
    if len(bad):
      i = int(ptree.aug[p][m][bad[0]])
      raise ValueError(
          f"{ptree.game.name}: augmented information state {ptree.aug_keys[p][i]!r} of player {p} "
          f"(public state {int(ptree.aug_public[p][i])}) holds histories with different own action "
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
  """One PBS's ranges ``[K0_s]``, ``[K1_s]`` -> ``[2, K]`` (validated, host side)."""
  s = enc.public_tree.public_id(public_state)
  out = np.zeros((2, enc.k_max), np.float64)
  for p, r in enumerate((range0, range1)):
    r = enc.public_tree.check_range(s, p, r)
    out[p, :len(r)] = r
  return out


def gather_ranges(enc: PBSEncoding, public, flat_ranges) -> jax.Array:
  """Padded ranges ``[..., 2, K]`` from per-player flat ``([K_0], [K_1])`` indexed like
  ``PublicTree.aug_keys`` (e.g. :func:`jaxgt.core.public_tree.ranges`; jittable)."""
  public = jnp.asarray(public)
  rows = []
  for p in (0, 1):
    r = jnp.asarray(flat_ranges[p])
    check_shape(f"flat range of player {p} (one entry per augmented information state of "
                f"{enc.game.name})", r, (..., len(enc.public_tree.aug_keys[p])))
    sl = jnp.asarray(enc.slots[:, p])[public]
    rows.append(jnp.where(sl >= 0, jnp.take(r, jnp.maximum(sl, 0), axis=-1), 0.0))
  return jnp.stack(rows, axis=-2)


def make_pbs(enc: PBSEncoding, public, ranges, *, atol: float = PROB_ATOL) -> PBS:
  """Validated :class:`PBS` from ids ``[...]`` and padded ranges ``[..., 2, K]`` (host side)."""
  ids = np.asarray(check_index("public state id", public, enc.num_public_states,
                              f" for {enc.game.name}"), np.int32)
  r = np.asarray(ranges, np.float64)
  check_shape("ranges (public states x 2 players x K slots)", r, ids.shape + (2, enc.k_max))
  m = enc.mask[ids]
  if np.any(r[~m] != 0):
    raise ValueError("ranges put mass on padding slots (past the public state's information "
                     "states)")
  check_distribution("ranges (each player's must sum to one)", r[m.any(-1)], enc.k_max, atol=atol)
  return PBS(public=jnp.asarray(ids), ranges=jnp.asarray(ranges))


def scatter(enc: PBSEncoding, public, values) -> tuple:
  """Per-player flat ``([K_0], [K_1])`` arrays from padded ``values [N, 2, K]`` at ids ``[N]``.

  Other public states get zero (jittable); ids must not repeat (XLA scatters
  do not order duplicates).
  """
  public = jnp.asarray(public)
  values = jnp.asarray(values)
  check_shape("values", values, public.shape + (2, enc.k_max))
  return tuple(_set_rows(jnp.zeros(len(enc.public_tree.aug_keys[p]), values.dtype),
                         jnp.asarray(enc.slots[:, p])[public].reshape(-1),
                         values[..., p, :].reshape(-1)) for p in (0, 1))


def _set_rows(base, idx, rows):
  """``base`` with rows ``idx`` set to ``rows``; rows at a negative ``idx`` are dropped."""
  n = base.shape[0]
  pad = jnp.concatenate([base, jnp.zeros((1,) + base.shape[1:], base.dtype)])
  return pad.at[jnp.where(idx >= 0, idx, n)].set(rows.astype(base.dtype))[:n]


def scatter_policy(enc: PBSEncoding, public, probs, base_policy) -> tuple:
  """``base_policy`` ``([I0, A], [I1, A])`` with the acting slots of ``probs [N, 2, K, A]`` set."""
  public = jnp.asarray(public)
  probs = jnp.asarray(probs)
  check_shape("policy", probs, public.shape + (2, enc.k_max, enc.num_actions))
  out = []
  for p in (0, 1):
    base = jnp.asarray(base_policy[p])
    check_shape(f"base policy of player {p}", base,
                (enc.game.tree.num_infostates[p], enc.num_actions))
    out.append(_set_rows(base, jnp.asarray(enc.policy_infostate[:, p])[public].reshape(-1),
                         probs[..., p, :, :].reshape(-1, enc.num_actions)))
  return tuple(out)


def history_utilities(enc: PBSEncoding, public, hist_values) -> jax.Array:
  """``[..., M]`` entries of ``hist_values [H]`` (:func:`jaxgt.core.public_tree.history_values`)
  at each non-terminal history of the public states (zero on padding)."""
  h = jnp.asarray(enc.hist)[jnp.asarray(public)]
  return jnp.where(h >= 0, jnp.asarray(hist_values)[jnp.maximum(h, 0)], 0.0)


def exact_cfvs(enc: PBSEncoding, public, ranges, utilities=None) -> jax.Array:
  """Network-scale counterfactual values ``[..., 2, K]`` of PBSs (Schmid et al.'s
  targets; jittable).

  ``utilities [..., M]`` (:func:`history_utilities`) are player 0's; row 1 is
  in player 1's utility. ``None`` gives the counterfactual reach of each slot.
  """
  public = jnp.asarray(public)
  ranges = jnp.asarray(ranges)
  check_shape("ranges", ranges, public.shape + (2, enc.k_max))
  return slot_sums(jnp.asarray(enc.hist_slot)[public], jnp.asarray(enc.hist_q)[public],
                   jnp.asarray(enc.mask)[public], ranges, utilities)


def slot_sums(hist_slot, hist_q, mask, ranges, utilities=None) -> jax.Array:
  """``sum_{h in I} q(h) r_o(I_o(h)) [u_p(h)]`` per slot ``[..., 2, K]`` from gathered
  :class:`PBSEncoding` rows ``hist_slot [..., 2, M]``, ``hist_q [..., M]``, ``mask [..., 2, K]``
  (``utilities`` as :func:`exact_cfvs`)."""
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
    c = q * jnp.take_along_axis(ranges[..., 1 - p, :], hs[..., 1 - p, :], axis=-1)
    if utilities is not None:
      c = c * (1.0 if p == 0 else -1.0) * jnp.asarray(utilities, ranges.dtype)
    seg = (base + hs[..., p, :]).reshape(-1)
    rows.append(jax.ops.segment_sum(c.reshape(-1), seg, n * K).reshape(batch + (K,)))
  return jnp.where(jnp.asarray(mask), jnp.stack(rows, axis=-2), 0.0)


def to_game_scale(enc: PBSEncoding, public, values, opponent_mass) -> jax.Array:
  """Full-game counterfactual values ``C(s) * m_o * v`` from network-scale ``values [..., 2, K]``;
  ``opponent_mass [..., 2]`` row ``p`` is ``p``'s opponent's total own reach."""
  c = jnp.asarray(enc.chance_mass)[jnp.asarray(public)]
  return values * (c[..., None] * jnp.asarray(opponent_mass))[..., None]
