"""Counterfactual value-and-policy network (CVPN), its fit, and its use as a leaf evaluator.

Student of Games (``003``): Fig. 6, "Training Process" and Table S2 (Huber
and cross-entropy losses), "Search via Growing-Tree CFR". Layout and value
scale: :mod:`jaxgt.nets.encoding` (``N`` leaf public states, ``L`` leaf
histories, ``B`` a batch of PBSs).

**Leaf adapter.** CFR only sees, for player ``p``, the sums ``sum_{h in I}
w(h) pi_o(h) value(h)``, so row ``p`` of the leaf values gives every history
of ``I`` the value ``v_p(I) / c_p(I)``, ``c_p(I) = sum_{h in I} q(h)
r_o(I_o(h))`` (a positive multiple of ``sum_{h in I} w(h) pi_o(h)``; zero
where ``c_p(I) = 0``). With :func:`continuation_cfvs` this reproduces
:func:`jaxgt.search.leaf.continuation` under simultaneous updates. A subgame
whose root has several information states of a player needs ``root_ranges``.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import struct

from jaxgt.core.checks import check_key
from jaxgt.search import leaf as leaf_lib
from jaxgt.nets.encoding import (PBS, PBSEncoding, build_encoding, exact_cfvs, features,
                                 history_utilities, masks, slot_sums)
from jaxgt.core.public_tree import history_values
from jaxgt.core import sequence_form
from jaxgt.search.subgame import Subgame

_NEG = -1e9  # logit of an illegal action


@struct.dataclass
class CVPNOutput:
  """Network outputs for ``[B]`` PBSs."""

  values: Any  # [B, 2, K] network-scale counterfactual values (row p in p's utility)
  logits: Any  # [B, 2, K, A] policy logits, -1e9 at illegal actions
  policy: Any  # [B, 2, K, A] softmax over legal actions (zero where the slot does not act)


@struct.dataclass
class CVPNTargets:
  """Supervised targets for ``[B]`` PBSs."""

  values: Any  # [B, 2, K] network-scale counterfactual values
  policy: Any = None  # [B, 2, K, A] target policies or None; all-zero rows are ignored


class CVPN(nn.Module):
  """MLP counterfactual value-and-policy network over one game's PBSs (``003``, Fig. 6).

  Input: public features, both padded ranges and slot masks (and a learned
  public-state embedding when ``embed_dim > 0``); a ReLU trunk ``hidden``;
  masked value ``[2, K]`` and policy ``[2, K, A]`` heads.
  """

  encoding: PBSEncoding
  hidden: Sequence[int] = (128, 128)
  embed_dim: int = 0

  @nn.compact
  def __call__(self, pbs: PBS) -> CVPNOutput:
    enc = self.encoding
    K, A = enc.k_max, enc.num_actions
    public = jnp.asarray(pbs.public)
    ranges = jnp.asarray(pbs.ranges)
    if ranges.shape != public.shape + (2, K):
      raise ValueError(f"PBS ranges must have shape {public.shape + (2, K)} for "
                       f"{enc.game.name} (K={K} slots per player), got {ranges.shape}")
    batch = public.shape
    mask, legal = masks(enc, public)
    x = [features(enc, public), ranges.astype(jnp.float32).reshape(batch + (2 * K,)),
         mask.astype(jnp.float32).reshape(batch + (2 * K,))]
    if self.embed_dim:
      x.append(nn.Embed(enc.num_public_states, self.embed_dim, name="public_embed")(public))
    x = jnp.concatenate(x, axis=-1)
    for i, width in enumerate(self.hidden):
      x = nn.relu(nn.Dense(width, name=f"trunk_{i}")(x))
    values = jnp.where(mask, nn.Dense(2 * K, name="value_head")(x).reshape(batch + (2, K)), 0.0)
    logits = jnp.where(legal, nn.Dense(2 * K * A, name="policy_head")(x).reshape(batch + (2, K, A)),
                       _NEG)
    policy = jnp.where(legal, jax.nn.softmax(logits, axis=-1), 0.0)
    return CVPNOutput(values=values, logits=logits, policy=policy)


def init(model: CVPN, key, batch_size: int = 1):
  """Parameters of ``model`` (a dummy batch of root PBSs)."""
  enc = model.encoding
  pbs = PBS(public=jnp.zeros((batch_size,), jnp.int32),
            ranges=jnp.zeros((batch_size, 2, enc.k_max), jnp.float32))
  return model.init(key, pbs)


def losses(model: CVPN, params, pbs: PBS, targets: CVPNTargets, *, huber_delta: float = 1.0):
  """``(value_loss, policy_loss)``: mean Huber over valid slots, mean cross entropy over
  targeted rows (0 without policy targets)."""
  out = model.apply(params, pbs)
  tv = jnp.asarray(targets.values, out.values.dtype)
  if tv.shape != out.values.shape:
    raise ValueError(f"value targets must have shape {out.values.shape}, got {tv.shape}")
  mask, legal = masks(model.encoding, pbs.public)
  per = optax.huber_loss(out.values, tv, delta=huber_delta)
  value_loss = jnp.sum(jnp.where(mask, per, 0.0)) / jnp.maximum(jnp.sum(mask), 1)
  if targets.policy is None:
    return value_loss, jnp.zeros((), value_loss.dtype)
  tp = jnp.asarray(targets.policy, out.logits.dtype)
  if tp.shape != out.logits.shape:
    raise ValueError(f"policy targets must have shape {out.logits.shape}, got {tp.shape}")
  tp = jnp.where(legal, tp, 0.0)
  rows = jnp.sum(tp, -1) > 0
  logp = jax.nn.log_softmax(out.logits, axis=-1)
  ce = -jnp.sum(jnp.where(legal, tp * logp, 0.0), -1)
  policy_loss = jnp.sum(jnp.where(rows, ce, 0.0)) / jnp.maximum(jnp.sum(rows), 1)
  return value_loss, policy_loss


def fit(model: CVPN, params, pbs: PBS, targets: CVPNTargets, *, key, steps: int = 500,
        learning_rate: float = 1e-3, batch_size: int | None = None, value_weight: float = 1.0,
        policy_weight: float = 1.0, huber_delta: float = 1.0, optimizer=None):
  """``(params, loss [steps])`` after supervised training on ``[B]`` PBSs (one jitted scan).

  Loss ``value_weight * Huber + policy_weight * cross entropy``; Adam unless
  ``optimizer`` is given; minibatches of ``batch_size`` drawn with ``key``.
  """
  public = jnp.asarray(pbs.public)
  if public.ndim != 1:
    raise ValueError(f"fit needs a flat batch of PBSs (public [B]), got shape {public.shape}")
  B = public.shape[0]
  if jnp.shape(targets.values)[:1] != (B,):
    raise ValueError(f"targets must have a leading batch of {B}, got {jnp.shape(targets.values)}")
  opt = optimizer if optimizer is not None else optax.adam(learning_rate)
  key = check_key(key)
  mb = B if batch_size is None else int(min(batch_size, B))

  def loss_fn(p, b, t):
    v, c = losses(model, p, b, t, huber_delta=huber_delta)
    return value_weight * v + policy_weight * c

  def step(carry, k):
    p, s = carry
    if mb < B:
      idx = jax.random.choice(k, B, (mb,), replace=False)
      b, t = jax.tree_util.tree_map(lambda a: a[idx], (pbs, targets))
    else:
      b, t = pbs, targets
    loss, g = jax.value_and_grad(loss_fn)(p, b, t)
    upd, s = opt.update(g, s, p)
    return (optax.apply_updates(p, upd), s), loss

  @jax.jit
  def run(params, key):
    (p, _), trace = jax.lax.scan(step, (params, opt.init(params)), jax.random.split(key, steps))
    return p, trace

  return run(params, key)


@dataclasses.dataclass(frozen=True, eq=False)
class LeafLayout:
  """Static map from a subgame's leaf histories to PBS slots (with the leaves' encoding rows)."""

  sub: Subgame
  enc: PBSEncoding  # the full game's encoding
  public: np.ndarray  # [N] leaf public states (sub.leaf_public)
  leaf_public: np.ndarray  # [L] index 0..N-1 of each leaf history's public state
  leaf_slot: np.ndarray  # [2, L] slot of each leaf history's information state
  root_pos: np.ndarray  # [2, L] position of each leaf history's root infostate in the root ranges
  mask: np.ndarray  # [N, 2, K] bool
  hist_slot: np.ndarray  # [N, 2, M] int32
  hist_q: np.ndarray  # [N, M] float64


def leaf_layout(sub: Subgame, enc: PBSEncoding | None = None) -> LeafLayout:
  """The :class:`LeafLayout` of ``sub`` (``ValueError`` for multi-valued leaves or another game)."""
  enc = build_encoding(sub.full) if enc is None else enc
  enc.check_for(sub.full)
  if sub.leaf_choices:
    raise ValueError("CVPN leaves are single-valued; the subgame has leaf_choices="
                     f"{sub.leaf_choices}")
  if not sub.leaf_public:
    raise ValueError("the subgame has no leaves")
  pt = sub.full
  public = np.asarray(sub.leaf_public, np.int32)
  pos = np.full(pt.num_public_states, -1, np.int32)
  pos[public] = np.arange(len(public))
  hp = np.asarray(pt.game.tree.history_public)
  lh = np.asarray(sub.leaf_histories)
  leaf_public = pos[hp[lh]]
  for j, s in enumerate(public):
    mine = np.sort(lh[leaf_public == j])
    if not np.array_equal(mine, np.sort(enc.hist[s][enc.hist[s] >= 0])):
      raise ValueError(f"leaf public state {s} is only partly inside the subgame")
  slot = np.stack([enc.slot_of[p][pt.aug[p][lh]] for p in (0, 1)]).astype(np.int32)
  root_pos = np.asarray(sub.root_aug)[:, sub.root_of(sub.leaf_nodes)].astype(np.int32)
  return LeafLayout(sub=sub, enc=enc, public=public, leaf_public=leaf_public, leaf_slot=slot,
                    root_pos=root_pos, mask=enc.mask[public], hist_slot=enc.hist_slot[public],
                    hist_q=enc.hist_q[public])


def _root_factors(layout: LeafLayout, root_ranges):
  """``[2, L]`` validated root range at each leaf history, or ``None`` without root ranges."""
  sub = layout.sub
  sizes = sub.range_sizes()
  if root_ranges is None:
    if sizes != (len(sub.root_public),) * 2:
      raise ValueError(
          f"the subgame's root has {sizes} information states per player; LeafInput does not "
          "carry the root ranges, so pass root_ranges=(range0, range1) (concatenated over the "
          "root public states, as Subgame.root_weights takes them)")
    return None
  out = []
  for p, r in enumerate(root_ranges):
    if np.ndim(r) != 1:
      raise ValueError(f"root range of player {p} must have shape ({sizes[p]},), "
                       f"got {np.shape(r)}")
    out.append(sub.check_ranges(p, r)[layout.root_pos[p]])
  return np.stack(out)


def leaf_pbs(layout: LeafLayout, leaves: leaf_lib.LeafInput, root_ranges=None) -> PBS:
  """The PBS ``[N]`` of every leaf public state from a :class:`LeafInput` (jittable).

  Ranges are own reaches (times ``root_ranges``) normalised per public state,
  uniform where none is reached (as :func:`jaxgt.core.public_tree.ranges`).
  """
  return _leaf_pbs(layout, leaves, _root_factors(layout, root_ranges))


def _leaf_pbs(layout: LeafLayout, leaves: leaf_lib.LeafInput, factors) -> PBS:
  """:func:`leaf_pbs` with the root factors (:func:`_root_factors`) already computed."""
  N, K = len(layout.public), layout.enc.k_max
  reach = jnp.asarray(leaves.reach)
  L = len(layout.leaf_public)
  if reach.shape != (2, L):
    raise ValueError(f"LeafInput.reach must have shape (2, {L}), got {reach.shape}")
  if factors is not None:
    reach = reach * jnp.asarray(factors, reach.dtype)
  mask = jnp.asarray(layout.mask)  # [N, 2, K]
  x = jnp.stack([jnp.zeros((N, K), reach.dtype).at[layout.leaf_public, layout.leaf_slot[p]]
                 .set(reach[p]) for p in (0, 1)], axis=1)
  tot = jnp.sum(x, -1, keepdims=True)
  cnt = jnp.maximum(jnp.sum(mask, -1, keepdims=True), 1)
  r = jnp.where(tot > 0, x / jnp.where(tot > 0, tot, 1.0), mask / cnt)
  return PBS(public=jnp.asarray(layout.public), ranges=jnp.where(mask, r, 0.0))


def leaf_values(layout: LeafLayout, pbs: PBS, cfvs) -> jax.Array:
  """Leaf-history values ``[2, L]`` (player 0's utility): row ``p`` is ``v_p(I) / c_p(I)``
  (module docstring) from network-scale ``cfvs [N, 2, K]``."""
  N, K = len(layout.public), layout.enc.k_max
  cfvs = jnp.asarray(cfvs)
  if cfvs.shape != (N, 2, K):
    raise ValueError(f"leaf counterfactual values must have shape ({N}, 2, {K}) (leaf public "
                     f"states x players x slots), got {cfvs.shape}")
  c = slot_sums(layout.hist_slot, layout.hist_q, layout.mask, jnp.asarray(pbs.ranges, cfvs.dtype))
  ratio = jnp.where(c > 0, cfvs / jnp.where(c > 0, c, 1.0), 0.0)
  rows = [ratio[layout.leaf_public, p, layout.leaf_slot[p]] for p in (0, 1)]
  return jnp.stack([rows[0], -rows[1]])


def leaf_evaluator(sub: Subgame, cfv_fn: Callable[[PBS], jax.Array], *,
                   enc: PBSEncoding | None = None, root_ranges=None) -> leaf_lib.LeafEvaluator:
  """A :class:`~jaxgt.search.leaf.LeafEvaluator` from ``cfv_fn(PBS [N]) -> cfvs [N, 2, K]``
  (:func:`network_cfvs`, :func:`continuation_cfvs`), one batched call per query."""
  layout = leaf_layout(sub, enc)
  factors = _root_factors(layout, root_ranges)  # validated once, not on every trace

  def fn(leaves):
    pbs = _leaf_pbs(layout, leaves, factors)
    return leaf_values(layout, pbs, cfv_fn(pbs))

  ev = leaf_lib.from_callable(sub, fn)
  return dataclasses.replace(ev, name="cvpn")


def network_cfvs(model: CVPN, params) -> Callable[[PBS], jax.Array]:
  """``cfv_fn`` of a trained :class:`CVPN` (its value head)."""
  return lambda pbs: model.apply(params, pbs).values


def continuation_cfvs(enc: PBSEncoding, policy) -> Callable[[PBS], jax.Array]:
  """``cfv_fn`` of exact network-scale values when both follow ``policy`` below (oracle/targets)."""
  tree = enc.game.device_tree(policy[0].dtype)
  sequence_form.check_policy(tree, policy)
  hv = history_values(tree, policy)

  def fn(pbs):
    u = history_utilities(enc, pbs.public, hv)
    return exact_cfvs(enc, pbs.public, jnp.asarray(pbs.ranges, hv.dtype), u)

  return fn
