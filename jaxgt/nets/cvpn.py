"""Counterfactual value-and-policy network (CVPN) and its fit.

Student of Games (Schmid et al. 2023): Fig. 6, "Training Process" and Table S2 (Huber
and cross-entropy losses), "Search via Growing-Tree CFR". Layout and value
scale: :mod:`jaxgt.nets.encoding` (``B`` a batch of PBSs).

The network values a search's leaves through :mod:`jaxgt.nets.gtcfr_evaluator`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from jaxgt import struct
from jaxgt.core.checks import check_choice, check_key, check_shape
from jaxgt.nets.encoding import PBS, PBSEncoding, exact_cfvs, history_utilities
from jaxgt.core.public_tree import history_values
from jaxgt.core import sequence_form

_NEG = -1e9  # logit of an illegal action

VALUE_SPACES = ("counterfactual", "expected")
"""What a :class:`CVPN`'s value head predicts (its ``value_space``): ``"counterfactual"``, the
network-scale counterfactual values ``v_p(I)`` themselves (:mod:`jaxgt.nets.encoding`), or
``"expected"``, ``v_p(I) / (c_p(I) U)``: the expected value given the information state in
units of the game's largest payoff ``U`` (``encoding.value_unit``), ``c_p(I)`` the
counterfactual mass of the PBS (``encoding.counterfactual_mass``). Both give the same
``CVPNOutput.values``; they differ in what is fitted: counterfactual values shrink with the
number of private states (``|v_p| <= c_p(I) U``, about ``U / K``: a twentieth of a payoff in
Liar's Dice with two dice), expected values do not."""

MASS_TOL = 1e-9
"""An information state whose counterfactual mass is at most this has no expected-value target
(the opponent's range gives it no weight)."""


@struct.dataclass
class CVPNOutput:
  """Network outputs for ``[B]`` PBSs."""

  values: Any  # [B, 2, K] network-scale counterfactual values (row p in p's utility)
  head: Any  # [B, 2, K] the value head's output, in the network's value space (VALUE_SPACES)
  logits: Any  # [B, 2, K, A] policy logits, -1e9 at illegal actions
  policy: Any  # [B, 2, K, A] softmax over legal actions (zero where the slot does not act)


@struct.dataclass
class CVPNTargets:
  """Supervised targets for ``[B]`` PBSs."""

  values: Any  # [B, 2, K] network-scale counterfactual values
  policy: Any = None  # [B, 2, K, A] target policies or None; all-zero rows are ignored


class CVPN(nn.Module):
  """MLP counterfactual value-and-policy network over one game's PBSs (Schmid et al. 2023, Fig. 6).

  Input: public features, both padded ranges and slot masks (and a learned
  public-state embedding when ``embed_dim > 0``, compiled games only); a ReLU
  trunk ``hidden``; masked value ``[2, K]`` and policy ``[2, K, A]`` heads. The
  encoding is a compiled game's :class:`PBSEncoding` (PBSs by public-state id) or
  a device game's :class:`~jaxgt.nets.factored_encoding.FactoredEncoding` (PBSs
  by state, ranges over the private states). ``value_space`` (:data:`VALUE_SPACES`) says
  what the value head predicts; ``values`` are network-scale counterfactual values in both.
  """

  encoding: Any  # PBSEncoding or FactoredEncoding
  hidden: Sequence[int] = (128, 128)
  embed_dim: int = 0
  value_space: str = "counterfactual"

  @nn.compact
  def __call__(self, pbs: PBS) -> CVPNOutput:
    check_choice("value_space", self.value_space, VALUE_SPACES)
    enc = self.encoding
    K, A = enc.k_max, enc.num_actions
    public = pbs.public
    ranges = jnp.asarray(pbs.ranges)
    batch = enc.batch_shape(public)
    check_shape("PBS ranges", ranges, batch + (2, K))  # K slots per player
    mask, legal = enc.masks(public)
    x = [enc.features(public), ranges.astype(jnp.float32).reshape(batch + (2 * K,)),
         mask.astype(jnp.float32).reshape(batch + (2 * K,))]
    if self.embed_dim:
      if not enc.num_public_states:
        raise ValueError("a public-state embedding (embed_dim > 0) needs a compiled game's "
                         "encoding (numbered public states)")
      x.append(nn.Embed(enc.num_public_states, self.embed_dim, name="public_embed")(
          jnp.asarray(public)))
    x = jnp.concatenate(x, axis=-1)
    for i, width in enumerate(self.hidden):
      x = nn.relu(nn.Dense(width, name=f"trunk_{i}")(x))
    head = jnp.where(mask, nn.Dense(2 * K, name="value_head")(x).reshape(batch + (2, K)), 0.0)
    values = head
    if self.value_space == "expected":
      mass = enc.counterfactual_mass(public, ranges.astype(head.dtype))
      values = head * mass * jnp.asarray(enc.value_unit, head.dtype)
    logits = jnp.where(legal, nn.Dense(2 * K * A, name="policy_head")(x).reshape(batch + (2, K, A)),
                       _NEG)
    policy = jnp.where(legal, jax.nn.softmax(logits, axis=-1), 0.0)
    return CVPNOutput(values=values, head=head, logits=logits, policy=policy)


def fitted_values(model: CVPN, out: CVPNOutput, pbs: PBS, values, mask):
  """``(prediction, target, mask)`` of network-scale value targets ``values [..., 2, K]`` in
  the space ``model`` fits (:data:`VALUE_SPACES`): in ``"expected"``, ``values / (c U)``
  against the head, slots whose mass ``c`` is at most :data:`MASS_TOL` masked out."""
  values = jnp.asarray(values, out.head.dtype)
  if model.value_space == "counterfactual":
    return out.values, values, mask
  enc = model.encoding
  mass = enc.counterfactual_mass(pbs.public, jnp.asarray(pbs.ranges, values.dtype))
  ok = mass > MASS_TOL
  unit = jnp.asarray(enc.value_unit, values.dtype)
  return out.head, jnp.where(ok, values / jnp.where(ok, mass, 1.0) / unit, 0.0), mask & ok


def init(model: CVPN, key, batch_size: int = 1):
  """Parameters of ``model`` (a dummy batch of root PBSs)."""
  enc = model.encoding
  pbs = PBS(public=enc.example(batch_size),
            ranges=jnp.zeros((batch_size, 2, enc.k_max), jnp.float32))
  return model.init(key, pbs)


def losses(model: CVPN, params, pbs: PBS, targets: CVPNTargets, *, huber_delta: float = 1.0):
  """``(value_loss, policy_loss)``: mean Huber over valid slots (in the model's value space,
  :func:`fitted_values`), mean cross entropy over targeted rows (0 without policy targets)."""
  out = model.apply(params, pbs)
  tv = jnp.asarray(targets.values, out.values.dtype)
  check_shape("value targets", tv, out.values.shape)
  mask, legal = model.encoding.masks(pbs.public)
  pred, tv, mask = fitted_values(model, out, pbs, tv, mask)
  per = optax.huber_loss(pred, tv, delta=huber_delta)
  value_loss = masked_mean(per, mask)
  if targets.policy is None:
    return value_loss, jnp.zeros((), value_loss.dtype)
  tp = jnp.asarray(targets.policy, out.logits.dtype)
  check_shape("policy targets", tp, out.logits.shape)
  tp = jnp.where(legal, tp, 0.0)
  rows = jnp.sum(tp, -1) > 0
  logp = jax.nn.log_softmax(out.logits, axis=-1)
  ce = -jnp.sum(jnp.where(legal, tp * logp, 0.0), -1)
  return value_loss, masked_mean(ce, rows)


def masked_mean(x, mask, count=None):
  """Mean of ``x`` over ``mask``'s true entries (``count`` of them, by default ``sum(mask)``;
  zero without any): the losses' average over valid slots."""
  count = jnp.sum(mask) if count is None else count
  return jnp.sum(jnp.where(mask, x, 0.0)) / jnp.maximum(count, 1)


def fit(model: CVPN, params, pbs: PBS, targets: CVPNTargets, *, key, steps: int = 500,
        learning_rate: float = 1e-3, batch_size: int | None = None, value_weight: float = 1.0,
        policy_weight: float = 1.0, huber_delta: float = 1.0, optimizer=None):
  """``(params, loss [steps])`` after supervised training on ``[B]`` PBSs (one jitted scan).

  Loss ``value_weight * Huber + policy_weight * cross entropy``; Adam unless
  ``optimizer`` is given; minibatches of ``batch_size`` drawn with ``key``.
  """
  batch = model.encoding.batch_shape(pbs.public)
  if len(batch) != 1:
    raise ValueError(f"fit needs a flat batch of PBSs, got batch shape {batch}")
  B = batch[0]
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
