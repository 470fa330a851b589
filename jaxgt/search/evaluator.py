"""Leaf evaluators: the values of a search tree's frontier for the current beliefs.

One protocol serves depth-limited solving, re-solving, Growing-Tree CFR and
training (Brown, Sandholm and Amos, "Depth-Limited Solving for
Imperfect-Information Games", 2018; Schmid et al., "Student of Games", 2023): an
:class:`Evaluator` is a pair of pure functions (optax style):

* ``init() -> state`` (a pytree of arrays: warm-started inner solves, network
  parameters; passed to the jitted search as an argument, so one compilation
  serves every parameter version);
* ``apply(state, LeafInput) -> ((values, prior), state)``, called once per CFR
  iteration with the beliefs at every frontier slot of the device tree
  (:mod:`jaxgt.search.device_tree`). Its output is shape-checked while tracing,
  as mctx checks ``recurrent_fn``.

Provided: :func:`exact` (the remaining game solved for the current ranges), :func:`zero`,
:func:`continuation` (exact values under fixed continuation profiles; several
profiles give the multi-valued states of Brown, Sandholm and Amos, 2018, Sec. 4)
and :func:`from_callable` (any function of the leaves, one batched call), :func:`blend` (two
evaluators' values mixed, a measure of how precise leaf values must be); the
network adapter is :func:`jaxgt.nets.gtcfr_evaluator.pbs_evaluator`.

Shape letters: those of :mod:`jaxgt.search.device_tree` (``N`` nodes, ``M``
history slots of a node, ``K`` information-state slots, ``A`` actions).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxgt import struct
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_index, check_positive_int, check_shape
from jaxgt.core.game_tree import ancestor_at_depth, infostate_histories
from jaxgt.core.public_tree import history_values
from jaxgt.search import device_tree
from jaxgt.solvers import cfr as cfr_lib


@struct.dataclass
class LeafInput:
  """Beliefs at the frontier of a device tree (one batched evaluator call)."""

  tree: device_tree.DeviceTree  # the current tree (public states and histories of every node)
  leaf: Any  # [N, M] bool slots valued by the evaluator (entry histories of frontier nodes)
  reach: Any  # [2, N, M] each player's own reach of each slot (root ranges included)
  chance: Any  # [N, M] chance reach of each slot (from the game's root)
  root_ranges: Any  # [2, K] the root ranges of the search (the opponent's of this iteration)


@dataclasses.dataclass(frozen=True, eq=False)
class Evaluator:
  """``init() -> state`` and ``apply(state, LeafInput) -> ((values, prior), state)``.

  ``values`` is ``[2, N, M]`` (row ``p``: player 0's value of each leaf slot used
  in player ``p``'s update) or ``[N, M]``; ``prior`` is ``[2, N, K, A]`` (a policy
  prior for PUCT at the leaves' information states) or ``None`` (uniform). The
  ``apply`` stored on the evaluator checks these shapes and that the state keeps
  its structure (while tracing: no cost in the compiled search), and casts the
  values to the tree's dtype.
  """

  init: Callable[[], Any]
  apply: Callable[[Any, LeafInput], tuple]
  name: str = "evaluator"

  def __post_init__(self):
    if not getattr(self.apply, "_checked", False):
      object.__setattr__(self, "apply", _checked(self.apply, self.name))


def _checked(apply, name: str):
  """``apply`` with its output checked (:class:`Evaluator`)."""
  def checked(state, leaves: LeafInput):
    out = apply(state, leaves)
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], tuple)
            and len(out[0]) == 2):
      raise ValueError(f"evaluator {name!r} must return ((values, prior), state)")
    (values, prior), new_state = out
    single = tuple(leaves.leaf.shape)
    shape = tuple(jnp.shape(values))
    if shape not in (single, (2,) + single):
      raise ValueError(f"evaluator {name!r} returned values of shape {shape}; expected "
                       f"{single} or {(2,) + single} (player 0's value of each history slot)")
    if prior is not None:
      check_shape(f"evaluator {name!r}'s prior (a policy per information-state slot, or None)",
                  prior, (2,) + tuple(leaves.tree.legal.shape[1:]))
    if jax.tree_util.tree_structure(new_state) != jax.tree_util.tree_structure(state):
      raise ValueError(f"evaluator {name!r} changed the structure of its state")
    return (jnp.asarray(values, leaves.chance.dtype), prior), new_state

  checked._checked = True
  return checked


def from_callable(fn: Callable[[LeafInput], Any], name: str = "callable") -> Evaluator:
  """Any function ``fn(LeafInput) -> values`` (``[N, M]`` or ``[2, N, M]``, player 0's value of
  each leaf slot) or ``-> (values, prior [2, N, K, A])``: one batched call for all leaves."""
  def apply(state, leaves):
    out = fn(leaves)
    return (out if isinstance(out, tuple) else (out, None)), state

  return Evaluator(init=lambda: (), apply=apply, name=name)


def zero() -> Evaluator:
  """Frontier leaves valued zero (terminals are valued exactly by the search itself): leaf
  values for a search without a network on a game too large to solve below its leaves."""
  return from_callable(lambda leaves: jnp.zeros_like(leaves.chance), name="zero")


def blend(base: Evaluator, other: Evaluator, weight: float) -> Evaluator:
  """Leaf values ``(1 - weight) * base + weight * other`` and ``other``'s prior (``base``'s
  where ``other`` gives none); both evaluators run on every query. With ``base`` exact and
  ``other`` a network, ``weight`` scales the network's leaf error linearly: how precise a
  network must be for a search to reach a given exploitability (``weight`` 1 is ``other``
  exactly, 0 is ``base``'s values)."""
  weight = float(weight)
  if not 0.0 <= weight <= 1.0:
    raise ValueError(f"blend weight must be in [0, 1], got {weight!r}")

  def apply(state, leaves: LeafInput):
    (va, pa), sa = base.apply(state[0], leaves)
    (vb, pb), sb = other.apply(state[1], leaves)
    values = (1.0 - weight) * va + weight * vb
    return (values, pb if pb is not None else pa), (sa, sb)

  return Evaluator(init=lambda: (base.init(), other.init()), apply=apply,
                   name=f"blend({base.name}, {other.name}, {weight:g})")


def exact(source: device_tree.Source, solver=None, iterations: int = 1) -> Evaluator:
  """Exact leaf values: the remaining game below the leaves solved for the current ranges.

  All leaf histories root one continuation (the compiled game's histories
  below them); each query runs ``iterations`` CFR iterations of ``solver``
  (default simultaneous CFR+; an alternating solver updates player 0, then player 1) on it
  with counterfactual weights, warm-started from the previous query, and values the leaves
  under its current strategies: CFR on the trunk and the continuation together, the
  decomposition of Schmid et al. (Student of Games, 2023, Sec. 3) with exact continuation
  solving in place of a network. Its current strategy at the leaves' information states is
  the PUCT prior.

  The continuation runs on the CFR engine (:func:`jaxgt.solvers.cfr.iteration`, sequence
  form over the whole compiled game): information states outside it keep zero regrets
  (``update_mask``), hence a uniform strategy whose realization ``U_p(h)`` above each leaf
  ``h`` is a constant; player ``p``'s terminal weights ``chance(z) * own_o(h) / U_o(h)`` for
  each terminal ``z`` below leaf ``h`` (zero elsewhere) turn the engine's counterfactual
  values into those of the continuation rooted at the leaves with the tree's reaches, and a
  leaf's value is ``sum_z u(z) chance(z) x_0(z) x_1(z) / (chance(h) U_0(h) U_1(h))``.
  """
  game = _game_of(source, "exact")
  solver = solver if solver is not None else cfr_lib.cfr_plus(alternating=False,
                                                              dtype=str(source.tables.chance.dtype))
  iterations = check_positive_int("iterations", iterations)
  dtype = source.tables.chance.dtype
  consts = _continuation_tables(game, dtype)
  H = game.tree.num_histories

  # the continuation's average strategy is never read: plain sums
  engine = dataclasses.replace(solver, compensated=False)

  def init():
    return engine.init(consts["tree"]).replace(weights=jnp.zeros((0,), dtype)), consts

  def apply(state, leaves: LeafInput):
    st, c = state
    g = c["tree"]
    hist = leaves.tree.history.reshape(-1)
    leaf = leaves.leaf.reshape(-1)
    target = jnp.where(leaf, hist, H)
    is_leaf = jnp.zeros(H + 1, bool).at[target].set(True)[:H]
    own = jnp.zeros((2, H + 1), dtype).at[:, target].set(leaves.reach.reshape(2, -1))[:, :H]
    hit = is_leaf[c["terminal_ancestors"]]  # [T, D + 1]: the terminal's leaf ancestor, if any
    below = jnp.any(hit, axis=1)
    top = jnp.take_along_axis(c["terminal_ancestors"], jnp.argmax(hit, axis=1)[:, None], 1)[:, 0]
    top = jnp.where(below, top, 0)
    weights = tuple(jnp.where(below, g.terminal_chance * own[1 - p, top]
                              * c["inv_uniform"][1 - p, top], 0.0) for p in (0, 1))
    inside = tuple(jnp.any(is_leaf[a], axis=1) for a in c["infostate_ancestors"])  # ([I0], [I1])

    def restrict(p, x):  # rows of information states outside the continuation zeroed (uniform)
      return jnp.where(inside[p].reshape((-1,) + (1,) * (x.ndim - 1)), x, 0.0)

    st = st.replace(regrets=tuple(restrict(p, st.regrets[p]) for p in (0, 1)),
                    regret_state=tuple(jax.tree_util.tree_map(functools.partial(restrict, p),
                                                              st.regret_state[p]) for p in (0, 1)))
    carry = lax.fori_loop(0, iterations, lambda _, it: cfr_lib.iteration(
        engine, g, it, weights=weights, update_mask=inside), cfr_lib.start(engine, g, st))
    sigma, x = carry.sigma, carry.x
    contrib = jnp.where(below, g.terminal_payoff * g.terminal_chance * x[0][g.terminal_seq[0]]
                        * x[1][g.terminal_seq[1]], 0.0)
    v = jax.ops.segment_sum(contrib, jnp.where(below, top, H), H + 1)[:H] * c["inv_entry"]
    vals = jnp.where(leaf, v[jnp.maximum(hist, 0)], 0.0).reshape(leaves.leaf.shape)
    info = leaves.tree.acting_info
    prior = jnp.stack([jnp.where((info[p] >= 0)[..., None], sigma[p][jnp.maximum(info[p], 0)], 0.0)
                       for p in (0, 1)])
    return (vals, prior), (carry.state, c)

  return Evaluator(init=init, apply=apply, name="exact")


def _game_of(source: device_tree.Source, what: str):
  if source.game is None:
    raise ValueError(f"the {what} evaluator needs a source read from a compiled game")
  return source.game


def _continuation_tables(game, dtype) -> dict:
  """Constants of :func:`exact` (host, once per game and dtype): the device tree, each
  terminal's and each information state's ancestors at every depth ``[., D + 1]``, ``1 / U_p``
  ``[2, H]`` (the uniform strategy's realization of player ``p``'s last sequence before each
  history) and ``1 / (chance(h) U_0(h) U_1(h))`` ``[H]``."""
  return game.derived(_build_continuation_tables, jnp.dtype(dtype).name)


def _build_continuation_tables(game, dtype: str) -> dict:
  t = game.tree
  depths = np.arange(len(t.depth_levels))

  def anc(nodes):
    grid = np.broadcast_to(np.asarray(nodes)[:, None], (len(nodes), len(depths)))
    return ancestor_at_depth(t.parent, t.depth, grid, depths[None, :]).astype(np.int32)

  uniform = []
  for p, pt in enumerate(t.players):
    sigma = sequence_form.uniform(np.asarray(pt.legal), np.float64)
    xu = np.asarray(sequence_form.realization(pt, jnp.asarray(sigma)))
    uniform.append(xu[np.asarray(t.last_seq[p])])
  uniform = np.stack(uniform)
  reps = [anc(infostate_histories(t, p)) for p in (0, 1)]
  den = np.asarray(t.chance_reach, np.float64) * uniform[0] * uniform[1]
  return {"tree": game.device_tree(dtype),
          "terminal_ancestors": jnp.asarray(anc(t.terminal_history)),
          "infostate_ancestors": tuple(jnp.asarray(r) for r in reps),
          "inv_uniform": jnp.asarray(1.0 / uniform, dtype),
          "inv_entry": jnp.asarray(np.where(den > 0, 1.0 / np.where(den > 0, den, 1.0), 0.0),
                                   dtype)}


def continuation(source: device_tree.Source, policies, chooser: int = 1) -> Evaluator:
  """Exact leaf values under fixed continuation profiles (full-game policy arrays).

  One profile ``(sigma0, sigma1)``: each leaf history's value when both players follow it
  below the leaves. A list of ``C`` profiles: multi-valued states (Brown, Sandholm and Amos,
  "Depth-Limited Solving for Imperfect-Information Games", 2018, Sec. 4): at each of its
  (augmented) information states at the leaves, player ``chooser`` picks a mixture of the
  ``C`` continuations by regret matching+ on its counterfactual values, one update per query
  for the query's reaches, and the leaves are valued under the updated mixture (alternating
  updates, the chooser first: with simultaneous ones CFR+ drifted away from RPS+'s
  equilibrium). The state is the chooser's ``[I_aug, C]`` cumulative choice regrets.
  """
  game = _game_of(source, "continuation")
  check_index("chooser", chooser, 2)
  profiles = [policies] if not isinstance(policies, list) else list(policies)
  if not profiles:
    raise ValueError("continuation needs at least one profile")
  dtype = source.tables.chance.dtype
  tree = game.device_tree(dtype)
  cols = []
  for profile in profiles:
    profile = tuple(jnp.asarray(x, dtype) for x in profile)
    sequence_form.check_policy(tree, profile)
    cols.append(history_values(tree, profile))
  values = jnp.stack(cols)  # [C, H]
  C = len(profiles)
  num_aug = int(np.max(np.asarray(source.tables.info_id)[:, chooser])) + 1
  sign = 1.0 if chooser == 0 else -1.0

  def apply(regrets, leaves: LeafInput):
    t = leaves.tree
    hist = jnp.maximum(t.history, 0)
    v = jnp.moveaxis(values[:, hist], 0, -1)  # [N, M, C]
    info = t.info[chooser]  # [N, M] slot of the chooser's information state
    aug = jnp.take_along_axis(t.info_id[chooser], jnp.maximum(info, 0), axis=1)
    ok = leaves.leaf & (info >= 0) & (aug >= 0)
    row = jnp.where(ok, aug, num_aug)
    legal = jnp.ones(C, bool)
    sigma = sequence_form.regret_matching(regrets, legal)  # [I_aug, C]
    cf = (sign * leaves.chance * leaves.reach[1 - chooser])[..., None] * v
    cfv = jax.ops.segment_sum(jnp.where(ok[..., None], cf, 0.0).reshape(-1, C), row.reshape(-1),
                              num_aug + 1)[:num_aug]
    regrets = jnp.maximum(regrets + cfv - jnp.sum(sigma * cfv, -1, keepdims=True), 0.0)
    # the trunk sees the updated choice: alternating updates, the chooser first
    sigma = sequence_form.regret_matching(regrets, legal)
    mixed = jnp.sum(sigma[jnp.minimum(row, num_aug - 1)] * v, -1)
    return (jnp.where(leaves.leaf, mixed, 0.0), None), regrets

  return Evaluator(init=lambda: jnp.zeros((num_aug, C), dtype), apply=apply,
                   name="continuation" if C == 1 else "multi_valued")


def biased_policies(tree, policy, player: int, factor: float = 10.0):
  """The blueprint and its ``A`` biased versions for ``player`` (Brown, Sandholm and Amos,
  2018, Sec. 4.1): bias toward action ``a`` multiplies the probability of ``a`` by ``factor``
  at every information state of ``player`` and renormalises; the other player's policy is
  unchanged. Returns ``A + 1`` profiles, blueprint first."""
  if not factor > 0:
    raise ValueError(f"factor must be positive, got {factor!r}")
  out = [tuple(policy)]
  sig = jnp.asarray(policy[player])
  for a in range(tree.num_actions):
    b = sig.at[:, a].multiply(factor)
    b = b / jnp.maximum(jnp.sum(b, -1, keepdims=True), 1e-300)
    out.append(tuple(b if p == player else policy[p] for p in (0, 1)))
  return out
