"""The one driver of the sampled solvers (MCCFR, OOS, ISMCTS, UCT) and their fixed-capacity memory.

A :class:`SampledSolver` supplies ``prepare`` (what a run computes once) and
``sample_step`` (one step from one key); :func:`_run` runs the steps in one
jitted ``lax.fori_loop`` on the tree cast to the state's float dtype, step
``t = state.iteration`` with ``step_key(key, t)``, so ``run(n1)`` then
``run(n2)`` equals ``run(n1 + n2)`` bit for bit. OOS and ISMCTS keep tables
with a capacity (Lisy, Lanctot, Bowling, "Online Monte Carlo Counterfactual
Regret Minimization for Search in Imperfect Information Games", 2015, Sec. 4):
:func:`memory_step` walks them, :func:`grow_tree` grows them.
"""

from __future__ import annotations

import abc
import functools
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxgt.core.checks import check_positive_int, max_depth
from jaxgt.core.dtypes import cast_tree, dtype_name, resolve_dtype
from jaxgt.core.sampling import mix_uniform
from jaxgt.core.tables import infostate_rows
from jaxgt.solvers.base import Solver, check_num_steps, require_key, step_key


class SampledSolver(Solver):
  """A solver driven by keys: ``prepare`` once per run, then ``sample_step`` per step.

  Subclasses are frozen dataclasses with a ``dtype`` field (the float dtype of
  their state); a search solver overrides :meth:`position` to take keyword
  arguments of ``run`` (e.g. the match ``history``) as traced arrays.
  """

  dtype: str

  def prepare(self, tree, state, *position) -> Any:
    """What every step of a run reads (traceable; ``tree`` already in the state's dtype)."""
    del tree, state, position
    return ()

  @abc.abstractmethod
  def sample_step(self, tree, state, context, key) -> Any:
    """One step from ``state`` driven by ``key``; ``state.iteration`` is advanced by the driver."""

  def position(self, tree) -> tuple:
    """The traced arguments of a run after its key (none by default); takes ``run``'s keywords."""
    del tree
    return ()

  def run(self, tree, state, num_steps, key=None, **position) -> Any:
    """``num_steps`` steps inside one jitted call; step ``t`` uses ``step_key(key, t)``.

    ``num_steps`` may be traced (e.g. inside an agent's ``act``); keywords
    are the solver's search position (:meth:`position`).
    """
    return _run(self, tree, state, check_num_steps(num_steps, traced_ok=True),
                require_key(self.name, key), *self.position(tree, **position))

  @property
  def jitted_run(self):
    return _run

  def init_dtype(self, tree, weights):
    """The float dtype of a root-walking solver's state; raises for ``weights`` (root beliefs)
    and for a tree not in breadth-first order."""
    if weights is not None:
      raise ValueError(f"{self.name} does not support root beliefs (weights)")
    max_depth(tree)
    return resolve_dtype(self.dtype)


def state_dtype(state):
  """The float dtype of a state: that of its first floating-point leaf."""
  return next(x.dtype for x in jax.tree_util.tree_leaves(state)
              if jnp.issubdtype(x.dtype, jnp.floating))


@functools.partial(jax.jit, static_argnums=(0,))
def _run(solver: SampledSolver, tree, state, num_steps, key, *position):
  tree = cast_tree(tree, state_dtype(state))
  context = solver.prepare(tree, state, *position)

  def body(_, s):
    s = solver.sample_step(tree, s, context, step_key(key, s.iteration))
    return s.replace(iteration=s.iteration + 1)

  return lax.fori_loop(0, num_steps, body, state)


def check_memory_config(cfg) -> None:
  """Checks ``capacity`` and ``batch`` of a fixed-capacity search config (OOS, ISMCTS) and
  stores its ``dtype`` by name."""
  if cfg.capacity is not None:
    check_positive_int("capacity", cfg.capacity)
  check_positive_int("batch", cfg.batch)
  object.__setattr__(cfg, "dtype", dtype_name(cfg.dtype))


def grow_tree(in_tree, size, capacity, plt, info, new_node):
  """Incremental tree building (Sec. 4): each trajectory's first state outside memory enters it.

  ``plt, info, new_node [D, B]``: acting player, information state and the
  flag of the (at most one per column) state reached outside memory. Distinct
  new states are admitted in index order (player 0's first) while
  ``capacity`` lasts. Returns ``(in_tree, size, admitted [D, B])``,
  ``admitted`` marking the new states that entered memory (they are updated
  like states in memory).
  """
  n0, n1 = in_tree[0].shape[0], in_tree[1].shape[0]
  B = plt.shape[1]
  gid = jnp.where(plt == 0, info, n0 + info)
  prop = jnp.max(jnp.where(new_node, gid, -1), axis=0)  # [B], -1: none
  order = jnp.argsort(prop, stable=True)
  sp = prop[order]
  first = (sp >= 0) & jnp.concatenate([jnp.ones(1, bool), sp[1:] != sp[:-1]])
  group = jnp.cumsum(first) - 1
  room = (n0 + n1 if capacity is None else capacity) - size
  enter = first & (group < room)
  group_in = jnp.zeros(B, bool).at[jnp.where(enter, group, B)].set(True, mode="drop")
  entered = jnp.zeros(B, bool).at[order].set((sp >= 0) & group_in[jnp.maximum(group, 0)])
  in_tree = (in_tree[0].at[jnp.where(enter & (sp < n0), sp, n0)].set(True, mode="drop"),
             in_tree[1].at[jnp.where(enter & (sp >= n0), sp - n0, n1)].set(True, mode="drop"))
  return in_tree, size + jnp.sum(enter).astype(jnp.int32), new_node & entered[None, :]


def memory_step(in_tree, node, head, sigma):
  """Incremental tree building at one walk step (Sec. 4): ``(sigma, tree_node, new_node, head)``.

  ``tree_node [B]``: a decision in memory (``in_tree``) reached without
  leaving it (``head [B]``); ``new_node [B]``: the first decision outside
  memory; ``sigma [B, A]`` kept at tree nodes, uniform over the legal actions
  elsewhere (the playout); ``head`` false from the new node on.
  """
  mem = infostate_rows(in_tree, node.player, node.infostate) & node.decision
  tree_node = node.decision & head & mem
  new_node = node.decision & head & ~mem
  uniform = mix_uniform(jnp.zeros_like(sigma), node.legal, 1.0)
  return jnp.where(tree_node[:, None], sigma, uniform), tree_node, new_node, head & ~new_node


def check_state_fits(tree, state, rows) -> None:
  """``ValueError`` unless ``state`` was made for ``tree``: a device game (``Rules``) runs on a
  state with tables whose keys have the rules' width, a compiled tree on one without; ``rows``
  is one of the state's ``[N, A]`` statistics, whose ``A`` must be the game's."""
  from jaxgt.solvers.sources import Rules
  rules = isinstance(tree, Rules)
  if rules != (getattr(state, "tables", None) is not None):
    raise ValueError("the state does not fit the game: a device game (Rules) runs on a state "
                     "with tables from init(Rules(...), capacity=...), a compiled tree on "
                     "one from init(tree)")
  if rules:
    width = state.tables[0].width
    if width != tree.key_width:
      raise ValueError(f"the state's tables hold keys of {width} words, {tree.game.name} "
                       f"has {tree.key_width}-word keys (another game or abstraction?)")
    if rows.shape[-1] != tree.num_actions:
      raise ValueError(f"the state has {rows.shape[-1]} actions per row, {tree.game.name} "
                       f"has {tree.num_actions}")
