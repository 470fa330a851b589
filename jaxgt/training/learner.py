"""The learner of Student of Games (Schmid et al. 2023, supplement "Network Architecture and
Optimization", Table S2): minibatches from the replay buffer, Huber value loss plus
``w_p`` times the summed KL policy losses, an optax optimiser with the learning rate
``alpha_init * d^(t / T_decay)``, and a bounded number of gradient updates per example.

**Loss** of a minibatch (:func:`loss`), with ``v``, ``pi`` the network's values and
policies and ``v*``, ``pi*`` the targets:

* value: ``huber_delta``'s Huber loss summed over the masked-in slots (``(b, p, k)`` with
  ``valid[b]``, ``PBSEncoding.mask`` and the example's per-slot ``value_mask[b, p, k]``)
  and divided by their number (1 if there is none): the mean over the minibatch's
  masked-in slots, each slot weighing the same. Values are compared in the network's value
  space (:data:`jaxgt.nets.cvpn.VALUE_SPACES`: counterfactual values, or expected values
  given the slot in units of the largest payoff, slots without counterfactual mass masked
  out). A search's example masks in every valid
  slot of its public state; a TD(1) outcome example (:mod:`jaxgt.training.selfplay`,
  ``p_td1``) masks in only the two held information states, so it weighs 2 slots where a
  search's example weighs all of its slots (``2 K_s``);
* policy: for each example with policy targets the sum over its information-state slots
  with a target row of ``KL(pi* || pi) = sum_a pi*(a) (log pi*(a) - log pi(a))`` over the
  legal actions, averaged over those examples;
* total: ``w_v * value + w_p * policy``.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxgt import struct
from jaxgt.core.checks import check_choice, check_positive_int, check_real
from jaxgt.nets.cvpn import CVPN, fitted_values, init as cvpn_init, masked_mean
from jaxgt.training import buffers

OPTIMIZERS = ("adam", "sgd")


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
  """Static learner settings (Schmid et al. 2023, Table S2's names in brackets)."""

  batch_size: int = 256  # examples per gradient step
  huber_delta: float = 1.0  # Huber loss threshold
  value_weight: float = 1.0  # w_v
  policy_weight: float = 1.0  # w_p
  alpha_init: float = 1e-3  # initial learning rate
  decay: float = 0.5  # d: the learning rate falls by d every decay_steps
  decay_steps: int = 100_000  # T_decay
  max_updates: float = 5.0  # max gradient updates per example (uses < max_updates)
  optimizer: str = "adam"  # "adam" or "sgd"
  momentum: float = 0.0  # SGD momentum (0: plain SGD)

  def __post_init__(self):
    check_positive_int("batch_size", self.batch_size)
    check_real("huber_delta", self.huber_delta, 0, lo_open=True)
    check_real("value_weight", self.value_weight, 0)
    check_real("policy_weight", self.policy_weight, 0)
    check_real("alpha_init", self.alpha_init, 0, lo_open=True)
    check_real("decay", self.decay, 0, 1, lo_open=True)
    check_positive_int("decay_steps", self.decay_steps)
    check_real("max_updates", self.max_updates, 0, lo_open=True)
    check_real("momentum", self.momentum, 0, 1, hi_open=True)
    check_choice("optimizer", self.optimizer, OPTIMIZERS)


# Table S2's Scotland Yard column (replay buffer size 1M is the buffer's capacity).
SCOTLAND_YARD_TABLE_S2 = LearnerConfig(batch_size=1024, optimizer="sgd", alpha_init=0.1,
                                       decay_steps=2_000_000, decay=0.5, policy_weight=0.05,
                                       value_weight=1.0, max_updates=5.0)


@struct.dataclass
class LearnerState:
  """The learner's state."""

  params: Any  # the network's flax parameters
  opt_state: Any  # the optax optimiser state
  step: Any  # [] int32 gradient steps taken


def learning_rate(config: LearnerConfig) -> optax.Schedule:
  """``t -> alpha_init * d^(t / T_decay)`` (Schmid et al. 2023, smooth decay)."""
  return optax.exponential_decay(init_value=config.alpha_init,
                                 transition_steps=config.decay_steps, decay_rate=config.decay)


def optimizer(config: LearnerConfig) -> optax.GradientTransformation:
  """The optax optimiser of ``config`` with the :func:`learning_rate` schedule."""
  lr = learning_rate(config)
  if config.optimizer == "adam":
    return optax.adam(lr)
  return optax.sgd(lr, momentum=config.momentum or None)


def loss(model: CVPN, params, batch: buffers.ReplayExample, config: LearnerConfig, valid=None):
  """``(total, (value_loss, policy_loss))`` of a minibatch ``batch [B]`` (module docstring);
  ``valid [B]`` drops examples (e.g. empty draws)."""
  out = model.apply(params, batch.pbs)
  B = batch.values.shape[0]
  valid = jnp.ones(B, bool) if valid is None else jnp.asarray(valid, bool)
  mask, legal = model.encoding.masks(batch.pbs.public)  # public state ids or device states
  dtype = out.values.dtype
  # Value: mean Huber over the masked-in slots (valid example, valid slot, slot has a target).
  vw = mask & batch.value_mask & valid[:, None, None]
  pred, target, vw = fitted_values(model, out, batch.pbs, batch.values, vw)
  per = optax.huber_loss(pred, target, delta=config.huber_delta)
  value_loss = masked_mean(per, vw)
  # Policy: KL(target || network) summed over the target rows, averaged over examples.
  target = jnp.where(legal, jnp.asarray(batch.policy, dtype), 0.0)
  has = valid & batch.policy_mask
  rows = (jnp.sum(target, -1) > 0) & has[:, None, None]
  logp = jax.nn.log_softmax(out.logits, axis=-1)
  log_t = jnp.log(jnp.where(target > 0, target, 1.0))
  kl = jnp.sum(jnp.where(legal & (target > 0), target * (log_t - logp), 0.0), -1)
  policy_loss = masked_mean(kl, rows, count=jnp.sum(has))
  total = config.value_weight * value_loss + config.policy_weight * policy_loss
  return total, (value_loss, policy_loss)


def init_learner(model: CVPN, key, config: LearnerConfig) -> LearnerState:
  """Fresh parameters (from ``key``) and optimiser state."""
  params = cvpn_init(model, key)
  return LearnerState(params=params, opt_state=optimizer(config).init(params),
                      step=jnp.zeros((), jnp.int32))


@functools.partial(jax.jit, static_argnums=(0, 1), static_argnames=("batch_sharding",))
def learner_step(model: CVPN, config: LearnerConfig, state: LearnerState,
                 replay: buffers.ReplayBuffer, key, batch_sharding=None):
  """``(state, replay, metrics)``: one gradient step on ``config.batch_size`` draws from
  ``replay`` (:func:`jaxgt.training.buffers.sample_replay`, bounded by
  ``config.max_updates``). With nothing eligible the state is unchanged. ``metrics``:
  ``loss``, ``value_loss``, ``policy_loss``, ``learning_rate`` (of this step),
  ``examples`` (valid draws) and ``replay_size``. ``batch_sharding``: a
  ``NamedSharding`` splitting the drawn batch over devices (data-parallel: each device's
  gradient on its rows, reduced by the compiler; parameters replicated), or ``None``."""
  replay, batch, valid = buffers.sample_replay(replay, key, config.batch_size, config.max_updates)
  if batch_sharding is not None:
    batch, valid = jax.lax.with_sharding_constraint((batch, valid), batch_sharding)
  (total, (vl, pl)), grads = jax.value_and_grad(loss, argnums=1, has_aux=True)(
      model, state.params, batch, config, valid)
  opt = optimizer(config)
  updates, opt_state = opt.update(grads, state.opt_state, state.params)
  params = optax.apply_updates(state.params, updates)
  go = jnp.any(valid)
  keep = lambda new, old: jax.tree_util.tree_map(lambda a, b: jnp.where(go, a, b), new, old)
  new_state = LearnerState(params=keep(params, state.params),
                           opt_state=keep(opt_state, state.opt_state),
                           step=state.step + go.astype(jnp.int32))
  metrics = {"loss": total, "value_loss": vl, "policy_loss": pl,
             "learning_rate": learning_rate(config)(state.step),
             "examples": jnp.sum(valid, dtype=jnp.int32),
             "replay_size": buffers.replay_size(replay)}
  return new_state, replay, metrics
