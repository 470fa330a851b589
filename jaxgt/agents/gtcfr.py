"""The Growing-Tree CFR agent, ``SoG(s, c)`` (``003``, "Search via Growing-Tree CFR").

At a decision in public state ``s`` the agent searches with GT-CFR
(:func:`jaxgt.search.gtcfr.search`) from the game's root public state with
its known root beliefs; the tree starts as the single branch from the root
to ``s`` with every off-branch child a leaf and ``s``'s children added
(``003``, "Modified Continual Re-solving": the initial tree; growth is
constrained below ``s``), and the simulations start at ``s``. It plays the
search's average policy at its information state. The search depends on
public information only (the public state and the agent's key), so every
information state of ``s`` reads the same search.

The agent is traceable (``act`` is a pure function of the key, state and a
traced history; jitted matches): its state is the key it was initialised
with, and the search at ``s`` uses ``fold_in(key, s)``.
:meth:`GTCFRAgent.policy_table` runs the searches of every decision public
state in batched (vmapped) calls and returns the policy
:func:`jaxgt.evaluation.construct.construct_policy` would assemble, for
policy-construction curves.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.agents.base import Agent
from jaxgt.core.checks import check_positive_int
from jaxgt.core.compiler import CompiledGame
from jaxgt.search import device_tree as dt
from jaxgt.search import gtcfr as gt


class GTCFRAgent(Agent):
  """``SoG(simulations, expansions_per_update)`` with a leaf evaluator.

  Args:
    game: a :class:`CompiledGame`.
    simulations: ``s``, expansion simulations per search.
    expansions_per_update: ``c`` (fractional: ``ceil(1/c)`` CFR updates per simulation).
    evaluator: ``"exact"`` (the remaining game solved for the current ranges), a
      :class:`jaxgt.search.gtcfr.Evaluator`, or a callable ``(LeafInput) -> values``.
    capacity: nodes of the search tree (default: what ``simulations`` can add).
    puct_constant, prior_temperature, virtual_loss: see :class:`jaxgt.search.gtcfr.GTCFRConfig`.
  """

  def __init__(self, game: CompiledGame, *, simulations: int, expansions_per_update: float = 1.0,
               evaluator: str | Callable | gt.Evaluator = "exact", capacity: int | None = None,
               puct_constant: float = 1.0, prior_temperature: float = 1.0,
               virtual_loss: float = 1.0, dtype="float64"):
    if not isinstance(game, CompiledGame):
      raise ValueError(f"GTCFRAgent needs a CompiledGame (jaxgt.load(...)), got "
                       f"{type(game).__name__}")
    self.game = game
    self.source = dt.source_from_game(game, dtype)
    self.config = gt.make_config(self.source, simulations=simulations,
                                 expansions_per_update=expansions_per_update, capacity=capacity,
                                 puct_constant=puct_constant, prior_temperature=prior_temperature,
                                 virtual_loss=virtual_loss, dtype=dtype)
    if isinstance(evaluator, gt.Evaluator):
      self.evaluator = evaluator
    elif evaluator == "exact":
      self.evaluator = gt.exact(self.source)
    elif callable(evaluator):
      self.evaluator = gt.from_callable(evaluator)
    else:
      raise ValueError(f"evaluator must be 'exact', an Evaluator or a callable, got {evaluator!r}")
    self.ranges = jnp.asarray(gt.root_ranges(self.source, 0), self.config.solver.dtype)
    self._public = jnp.asarray(game.tree.history_public)
    self._player = jnp.asarray(game.tree.player)

  @property
  def name(self) -> str:
    c = self.config
    return f"SoG({c.simulations}, {c.expansions_per_update:g})"

  def init(self, key):
    return jnp.asarray(key)

  def _search(self, key, public):
    path = dt.public_path(self.source, public)
    return gt.search(self.source, self.config, self.evaluator, jnp.zeros((), jnp.int32),
                     self.ranges, jax.random.fold_in(key, public), path=path)

  def act(self, key, state, history):
    del key
    h = jnp.asarray(history, jnp.int32)
    res = self._search(state, self._public[h])
    return self._read(res, h), state

  def _read(self, res, h):
    K, A = self.source.num_infostates, self.game.tree.num_actions
    p = self._player[h]
    k = jnp.where(p == 0, self.source.history_info[0, h], self.source.history_info[1, h])
    row = res.state.focus * K + k
    return jnp.where(p == 0, res.policy[0][row], res.policy[1][row])[..., :A]

  def policy_table(self, key, batch: int = 64) -> tuple:
    """``(sigma0 [I0, A], sigma1 [I1, A])`` (NumPy): every information state's searched policy,
    with :func:`jaxgt.evaluation.construct.construct_policy`'s keys, searches batched ``batch`` at
    a time (one compiled program)."""
    batch = check_positive_int("batch", batch)
    tree = self.game.tree
    out = []
    for p in (0, 1):
      n = tree.players[p].num_infostates
      kinit = jax.random.fold_in(jax.random.fold_in(key, p), n)
      hs = np.flatnonzero(np.asarray(tree.player) == p)
      info = np.asarray(tree.infostate)[hs]
      ids, first = np.unique(info, return_index=True)
      reps = hs[first]  # one history per information state
      publics = np.asarray(tree.history_public)[reps]
      uniq, inv = np.unique(publics, return_inverse=True)
      sig = np.zeros((n, tree.num_actions))
      for lo in range(0, len(uniq), batch):
        chunk = uniq[lo:lo + batch]
        pad = np.concatenate([chunk, np.full(batch - len(chunk), chunk[-1])])
        res = self._batched(kinit, jnp.asarray(pad, jnp.int32))
        sel = np.flatnonzero((inv >= lo) & (inv < lo + len(chunk)))
        rows = self._read_batch(res, jnp.asarray(inv[sel] - lo), jnp.asarray(reps[sel]))
        sig[ids[sel]] = np.asarray(rows)
      out.append(sig)
    return tuple(out)

  def _batched(self, kinit, publics):
    paths = jax.vmap(lambda s: dt.public_path(self.source, s))(publics)
    keys = jax.vmap(lambda s: jax.random.fold_in(kinit, s))(publics)
    B = publics.shape[0]
    return gt.search(self.source, self.config, self.evaluator, jnp.zeros(B, jnp.int32),
                     jnp.broadcast_to(self.ranges, (B,) + self.ranges.shape), keys, path=paths)

  def _read_batch(self, res, which, hists):
    def one(i, h):
      sub = jax.tree_util.tree_map(lambda x: x[i], res)
      return self._read(sub, h)
    return jax.vmap(one)(which, hists)


def gtcfr(game: CompiledGame, *, simulations: int, expansions_per_update: float = 1.0,
          evaluator: Any = "exact", **kwargs) -> GTCFRAgent:
  """The agent-spec factory ``gtcfr(simulations=S, expansions_per_update=c, evaluator=exact)``."""
  return GTCFRAgent(game, simulations=simulations, expansions_per_update=expansions_per_update,
                    evaluator=evaluator, **kwargs)
