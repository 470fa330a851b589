"""Information-set MCTS, the baselines of Lisy, Lanctot, Bowling (2015), Sec. 5.1.

Each simulation determinizes: it samples a history of the searcher's
information state ``I(m)`` (Cowling et al. 2012; the paper samples the states
of the information set uniformly; here in proportion to their chance reach,
which is uniform whenever chance outcomes are, as in Liar's Dice and
II-Goofspiel), walks down selecting actions from statistics shared by every
history of an information state, adds the first information state outside
memory (fixed-capacity tables over the compiled information states, with an
``in_tree`` mask and a counter) and finishes with a uniform playout. Each
in-memory information state on the path is updated with the payoff of its
acting player.

Selection (Sec. 5.1):

* ``"uct"``: ``Q(I, a) + C sqrt(ln N(I) / N(I, a))``, untried actions first,
  ties broken at random, ``C`` twice the largest absolute payoff by default;
  the move played is the most visited action (``final="visits"``) or the
  visit frequencies (``final="frequency"``, the paper's choice for measuring
  convergence).
* ``"rm"``: regret matching mixed with ``exploration`` (0.2) uniform, regrets
  updated from the importance-sampled reward ``u 1[a' = a] / sigma(a) - u``
  (Lanctot et al. 2013); the move played is the mean strategy.

``ISMCTS(...).search(tree, state, key, history, n)`` runs ``n`` steps of
``batch`` simulations (``n x batch`` in all) in one jitted ``lax.fori_loop``
(the simulations of a step read the same statistics and are written with one
scatter-add).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import lax

from jaxgt.core.dtypes import resolve_dtype
from jaxgt.core.compiler import GameTree
from jaxgt.games.base import CHANCE
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_decision_history, check_key, check_positive_int, max_depth
from jaxgt.core.dtypes import cast_tree
from jaxgt.solvers.oos import (ancestor_chains, chain_reach, grow_tree, member_row,
                               target_members)

SELECTION = ("uct", "rm")
FINAL = ("visits", "frequency", "mean")


@struct.dataclass
class ISMCTSState:
  """ISMCTS statistics over the compiled information states (fixed capacity).

  Attributes:
    visits: ``([I0, A], [I1, A])`` visit counts ``N(I, a)``.
    values: ``([I0, A], [I1, A])`` summed payoffs of the acting player
      (``"uct"``; ``None`` for ``"rm"``).
    regrets: ``([I0, A], [I1, A])`` cumulative regrets (``"rm"``; else ``None``).
    cum_policy: ``([I0, A], [I1, A])`` summed selection strategies (``"rm"``;
      else ``None``).
    in_tree: ``([I0] bool, [I1] bool)`` information states in memory.
    size: ``[] int32`` information states in memory.
    simulations: ``[] int32`` simulations run.
    depth: static largest history depth (trajectory length).
  """

  visits: tuple
  values: tuple
  regrets: tuple
  cum_policy: tuple
  in_tree: tuple
  size: jax.Array
  simulations: jax.Array
  depth: int = struct.field(pytree_node=False)


@dataclasses.dataclass(frozen=True)
class ISMCTS:
  """Hyperparameters of ISMCTS (Sec. 5.1); methods are pure.

  Attributes:
    selection: ``"uct"`` or ``"rm"``.
    c: UCT exploration constant; ``None``: twice the largest absolute payoff.
    exploration: uniform mixing of regret-matching selection.
    final: move policy: ``"visits"`` (most visited action), ``"frequency"``
      (visit frequencies) or ``"mean"`` (mean selection strategy);
      ``None``: ``"visits"`` for UCT, ``"mean"`` for RM.
    capacity: most information states in memory; ``None``: all.
    batch: simulations per step.
    dtype: float dtype of the statistics.
  """

  selection: str = "uct"
  c: float | None = None
  exploration: float = 0.2
  final: str | None = None
  capacity: int | None = None
  batch: int = 1
  dtype: str = "float32"

  def __post_init__(self):
    if self.selection not in SELECTION:
      raise ValueError(f"selection must be one of {SELECTION}, got {self.selection!r}")
    if self.c is not None and (isinstance(self.c, bool) or not isinstance(self.c, (int, float))
                               or not self.c >= 0):
      raise ValueError(f"c must be a non-negative number, got {self.c!r}")
    e = self.exploration
    if isinstance(e, bool) or not isinstance(e, (int, float)) or not 0.0 < e <= 1.0:
      raise ValueError(f"exploration must be in (0, 1], got {e!r}")
    if self.final is None:
      object.__setattr__(self, "final", "visits" if self.selection == "uct" else "mean")
    if self.final not in FINAL:
      raise ValueError(f"final must be one of {FINAL}, got {self.final!r}")
    if self.final == "mean" and self.selection == "uct":
      raise ValueError("final='mean' needs selection='rm' (UCT keeps no mean strategy)")
    if self.capacity is not None:
      check_positive_int("capacity", self.capacity)
    check_positive_int("batch", self.batch)
    object.__setattr__(self, "dtype", jnp.dtype(resolve_dtype(self.dtype)).name)

  def init(self, tree: GameTree) -> ISMCTSState:
    """Empty statistics and memory."""
    dtype = resolve_dtype(self.dtype)
    zeros = tuple(jnp.zeros((k, tree.num_actions), dtype) for k in tree.num_infostates)
    uct = self.selection == "uct"
    return ISMCTSState(visits=zeros, values=zeros if uct else None,
                       regrets=None if uct else zeros, cum_policy=None if uct else zeros,
                       in_tree=tuple(jnp.zeros(k, bool) for k in tree.num_infostates),
                       size=jnp.zeros((), jnp.int32), simulations=jnp.zeros((), jnp.int32),
                       depth=max_depth(tree))

  def exploration_constant(self, tree: GameTree) -> float:
    if self.c is not None:
      return float(self.c)
    return 2.0 * float(np.max(np.abs(np.asarray(tree.terminal_payoff)), initial=0.0))

  def search(self, tree: GameTree, state: ISMCTSState, key, history, num_simulations: int, *,
             members=None):
    """``num_simulations`` steps of ``batch`` simulations each (``num_simulations x batch``
    in all), determinized from ``history``'s information state.

    ``history``: ``None`` (the root) or a history index (may be traced) where
    player 0 or 1 acts; only its acting player's information state is used.
    ``members``: ``target_members(tree, "ist")`` (computed here when ``None``).
    """
    num_simulations = check_positive_int("num_simulations", num_simulations)
    key = check_key(key)
    if history is None:
      history = -1
    else:
      check_decision_history(tree, history)
    if members is None:
      members = target_members(tree, "ist")
    return _search(self, self.exploration_constant(tree), tree, state, key,
                   jnp.asarray(history, jnp.int32), jnp.asarray(num_simulations, jnp.int32),
                   jnp.asarray(members))

  def policy(self, tree: GameTree, state: ISMCTSState):
    """Move policy of every information state (``final``): ``([I0, A], [I1, A])``."""
    return tuple(self._final(state.visits[p], None if state.cum_policy is None else
                             state.cum_policy[p], jnp.asarray(tree.players[p].legal))
                 for p in (0, 1))

  def _final(self, n, cum, legal):
    """Move policy ``[..., A]`` from visit counts / mean-strategy sums of the same rows."""
    if self.final == "mean":
      return sequence_form.normalize(cum, legal)
    if self.final == "frequency":
      return sequence_form.normalize(n, legal)
    best = jnp.argmax(jnp.where(legal, n, -1.0), axis=-1)
    return jnp.where(jnp.any(n > 0, axis=-1, keepdims=True),
                     jax.nn.one_hot(best, n.shape[-1], dtype=n.dtype), sequence_form.normalize(n, legal))


def _rows(table, pl, info):
  n0, n1 = table[0].shape[0], table[1].shape[0]
  sel = (pl == 0).reshape(pl.shape + (1,) * (table[0].ndim - 1))
  return jnp.where(sel, table[0][jnp.clip(info, 0, n0 - 1)], table[1][jnp.clip(info, 0, n1 - 1)])


def _step(cfg: ISMCTS, c_uct, tree: GameTree, state: ISMCTSState, row, cdf, key):
  """``batch`` simulations reading ``state``; their updates in one scatter-add."""
  A = tree.num_actions
  C = tree.children.shape[1]
  D = state.depth
  B = cfg.batch
  dtype = state.visits[0].dtype
  kd, ks = jax.random.split(key)
  uni = jax.random.uniform(ks, (D, B), dtype)
  # Determinization: a history of the information state, by chance reach.
  ud = jax.random.uniform(kd, (B,), cdf.dtype) * cdf[-1]
  k = jnp.minimum(jnp.searchsorted(cdf, ud, side="right"), cdf.shape[0] - 1)
  h0 = jnp.maximum(row[k], 0).astype(jnp.int32)  # the root when there is no match history
  legal_tab = tuple(pt.legal for pt in tree.players)

  def body(t, carry):
    hs, head, rec = carry
    pl = tree.player[hs]
    info = tree.infostate[hs]
    dec = pl >= 0
    live = dec | (pl == CHANCE)
    legal = _rows(legal_tab, pl, info) & dec[:, None]
    mem = _rows(state.in_tree, pl, info) & dec
    tree_node = dec & head & mem
    new_node = dec & head & ~mem
    nleg = jnp.maximum(jnp.sum(legal, axis=-1, keepdims=True), 1)
    unif = (legal / nleg).astype(dtype)
    if cfg.selection == "uct":
      n = _rows(state.visits, pl, info)
      q = _rows(state.values, pl, info) / jnp.maximum(n, 1.0)
      ntot = jnp.sum(n, axis=-1, keepdims=True)
      score = q + c_uct * jnp.sqrt(jnp.log(jnp.maximum(ntot, 1.0)) / jnp.maximum(n, 1.0))
      score = jnp.where(n > 0, score, jnp.inf)
      score = jnp.where(legal, score, -jnp.inf)
      best = legal & (score >= jnp.max(score, axis=-1, keepdims=True))
      sig = best / jnp.maximum(jnp.sum(best, axis=-1, keepdims=True), 1)
    else:
      rm = jnp.where(legal, sequence_form.regret_matching(_rows(state.regrets, pl, info), legal), 0.0)
      sig = cfg.exploration * unif + (1.0 - cfg.exploration) * rm
    sig = jnp.where(tree_node[:, None], sig, unif).astype(dtype)
    probs = jnp.where((pl == CHANCE)[:, None], tree.chance_probs[hs],
                      jnp.pad(sig, ((0, 0), (0, C - A))))
    cdf_a = jnp.cumsum(probs, axis=-1)
    a = jnp.minimum(jnp.sum(cdf_a <= (uni[t] * cdf_a[:, -1])[:, None], axis=-1), C - 1)
    a = a.astype(jnp.int32)
    ac = jnp.minimum(a, A - 1)
    new = (jnp.where(live, hs, -1), ac, sig, legal, tree_node, new_node)
    rec = tuple(x.at[t].set(v) for x, v in zip(rec, new))
    return jnp.where(live, tree.children[hs, a], hs), head & ~new_node, rec

  rec = (jnp.full((D, B), -1, jnp.int32), jnp.zeros((D, B), jnp.int32),
         jnp.zeros((D, B, A), dtype), jnp.zeros((D, B, A), bool),
         jnp.zeros((D, B), bool), jnp.zeros((D, B), bool))
  hs, _, (path, acts, sig, legal, tree_node, new_node) = lax.fori_loop(
      0, D, body, (h0, jnp.ones(B, bool), rec))
  u0 = tree.terminal_payoff[tree.history_terminal[hs]]  # [B]
  hp = jnp.maximum(path, 0)
  plt = jnp.where(path >= 0, tree.player[hp], -9)
  info = tree.infostate[hp]
  in_tree, size, admitted = grow_tree(state.in_tree, state.size, cfg.capacity, plt, info, new_node)
  upd = tree_node | admitted
  u = jnp.where(plt == 0, u0, -u0)[..., None]  # [D, B, 1] acting player's payoff
  onehot = jax.nn.one_hot(acts, A, dtype=dtype)
  sig_a = jnp.sum(sig * onehot, axis=-1, keepdims=True)
  stats = {"visits": onehot, "values": onehot * u,
           "regrets": jnp.where(legal, onehot * u / jnp.maximum(sig_a, 1e-30) - u, 0.0),
           "cum_policy": sig}
  for name in (("regrets", "cum_policy") if cfg.selection == "uct" else ("values",)):
    stats.pop(name)  # statistics the selection rule does not keep
  out = {}
  for name, inc in stats.items():
    tabs = list(getattr(state, name))
    for p in (0, 1):
      m = upd & (plt == p)
      tabs[p] = tabs[p].at[jnp.where(m, info, 0).reshape(-1)].add(
          jnp.where(m[..., None], inc, 0.0).reshape(-1, A))
    out[name] = tuple(tabs)
  return state.replace(in_tree=in_tree, size=size,
                       simulations=state.simulations + B, **out)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _search(cfg: ISMCTS, c_uct: float, tree: GameTree, state: ISMCTSState, key, history,
            num_simulations, members):
  tree = cast_tree(tree, state.visits[0].dtype)
  row = member_row(tree, "ist", members, history)
  reach = chain_reach(tree, ancestor_chains(tree, state.depth, row))
  cdf = jnp.cumsum(jnp.where(row >= 0, reach, 0.0))
  cdf = jnp.where(cdf[-1] > 0, cdf, jnp.arange(1, cdf.shape[0] + 1, dtype=cdf.dtype))

  def body(_, carry):
    s, key = carry
    key, k = jax.random.split(key)
    return _step(cfg, c_uct, tree, s, row, cdf, k), key

  state, _ = lax.fori_loop(0, num_simulations, body, (state, key))
  return state
