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

``ISMCTS(...).run(tree, state, n, key, history=history)`` runs ``n`` steps of
``batch`` simulations (``n x batch`` in all) in one jitted ``lax.fori_loop``
(the sampled-solver driver of :mod:`jaxgt.solvers.sampled`; the simulations of a step
are walked together by :func:`jaxgt.solvers.walk.walk`, read the same
statistics and are written with one scatter-add).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from jaxgt.core import rng, sequence_form
from jaxgt.core.checks import check_choice, check_real
from jaxgt.core.game_tree import GameTree
from jaxgt.core.sampling import mix_uniform, sample_index
from jaxgt.core.tables import infostate_rows
from jaxgt.core.targets import ancestor_chains, chain_reach, member_row, search_position
from jaxgt.solvers.sampled import SampledSolver, check_memory_config, grow_tree, memory_step
from jaxgt.solvers.walk import Draw, walk

SELECTION = ("uct", "rm")
FINAL = ("visits", "frequency", "mean")


@struct.dataclass
class ISMCTSState:
  """ISMCTS statistics over the compiled information states (fixed capacity)."""

  visits: tuple  # ([I0, A], [I1, A]) visit counts N(I, a)
  values: tuple  # ([I0, A], [I1, A]) summed payoffs of the acting player ("uct"; None for "rm")
  regrets: tuple  # ([I0, A], [I1, A]) cumulative regrets ("rm"; else None)
  cum_policy: tuple  # ([I0, A], [I1, A]) summed selection strategies ("rm"; else None)
  in_tree: tuple  # ([I0] bool, [I1] bool) information states in memory
  size: jax.Array  # [] int32 information states in memory
  iteration: jax.Array  # [] int32 steps run (batch simulations each)


@dataclasses.dataclass(frozen=True)
class ISMCTS(SampledSolver):
  """Hyperparameters of ISMCTS (Sec. 5.1); methods are pure (:mod:`.base`)."""

  selection: str = "uct"  # "uct" or "rm"
  c: float | None = None  # UCT exploration constant; None: twice the largest absolute payoff
  exploration: float = 0.2  # uniform mixing of regret-matching selection
  # move policy: "visits" (most visited action), "frequency" (visit frequencies) or "mean" (mean
  # selection strategy); None: "visits" for UCT, "mean" for RM
  final: str | None = None
  capacity: int | None = None  # most information states in memory; None: all
  batch: int = 1  # simulations per step
  dtype: str = "float32"  # float dtype of the statistics

  name = "ismcts"

  @property
  def samples_per_step(self) -> int:
    return self.batch

  def __post_init__(self):
    check_choice("selection", self.selection, SELECTION)
    if self.c is not None:
      check_real("c", self.c, 0, hi_open=True)
    check_real("exploration", self.exploration, 0, 1, lo_open=True)
    if self.final is None:
      object.__setattr__(self, "final", "visits" if self.selection == "uct" else "mean")
    check_choice("final", self.final, FINAL)
    if self.final == "mean" and self.selection == "uct":
      raise ValueError("final='mean' needs selection='rm' (UCT keeps no mean strategy)")
    check_memory_config(self)

  def init(self, tree: GameTree, *, weights=None) -> ISMCTSState:
    """Empty statistics and memory (root beliefs, ``weights``, are not supported)."""
    dtype = self.init_dtype(tree, weights)
    zeros = tuple(jnp.zeros((k, tree.num_actions), dtype) for k in tree.num_infostates)
    uct = self.selection == "uct"
    return ISMCTSState(visits=zeros, values=zeros if uct else None,
                       regrets=None if uct else zeros, cum_policy=None if uct else zeros,
                       in_tree=tuple(jnp.zeros(k, bool) for k in tree.num_infostates),
                       size=jnp.zeros((), jnp.int32), iteration=jnp.zeros((), jnp.int32))

  def exploration_constant(self, tree: GameTree) -> jax.Array:
    """``c``, or twice the largest absolute payoff when ``c`` is ``None`` (traceable)."""
    if self.c is not None:
      return jnp.asarray(self.c, tree.terminal_payoff.dtype)
    return 2.0 * jnp.max(jnp.abs(tree.terminal_payoff), initial=0.0)

  def position(self, tree: GameTree, *, history=None, members=None) -> tuple:
    """``run``'s keywords: ``history``, ``None`` (the root) or a history index (may be traced)
    where player 0 or 1 acts, of which only the acting player's information state is used;
    ``members``, ``target_members(tree, "ist")`` (computed when ``None``)."""
    return search_position(tree, "ist", history, members)

  def prepare(self, tree: GameTree, state: ISMCTSState, history, members):
    """The histories of ``history``'s information state, their chance reach (the
    determinization's weights) and the UCT constant, once per run."""
    del state
    row = member_row(tree, "ist", members, history)
    reach = chain_reach(tree, ancestor_chains(tree, tree.max_depth, row))
    weights = jnp.where(row >= 0, reach, 0.0)
    weights = jnp.where(jnp.sum(weights) > 0, weights, 1.0)  # the root: any slot
    return row, weights, self.exploration_constant(tree)

  def sample_step(self, tree: GameTree, state: ISMCTSState, context, key) -> ISMCTSState:
    """``batch`` simulations reading ``state`` (:func:`_step`)."""
    row, weights, c_uct = context
    return _step(self, c_uct, tree, state, row, weights, key)

  def policy(self, tree: GameTree, state: ISMCTSState):
    """Move policy of every information state (``final``): ``([I0, A], [I1, A])``."""
    return tuple(self.move_policy(state.visits[p], None if state.cum_policy is None else
                                  state.cum_policy[p], jnp.asarray(tree.players[p].legal))
                 for p in (0, 1))

  def move_policy(self, n, cum, legal):
    """Move policy ``[..., A]`` (``final``) from visit counts / mean-strategy sums of the same rows."""
    if self.final == "mean":
      return sequence_form.normalize(cum, legal)
    if self.final == "frequency":
      return sequence_form.normalize(n, legal)
    best = jnp.argmax(jnp.where(legal, n, -1.0), axis=-1)
    return jnp.where(jnp.any(n > 0, axis=-1, keepdims=True),
                     jax.nn.one_hot(best, n.shape[-1], dtype=n.dtype), sequence_form.normalize(n, legal))


def ismcts_node_policy(cfg: ISMCTS, c_uct, state: ISMCTSState):
  """The ISMCTS node policy (a :func:`~jaxgt.solvers.walk.walk` callback; sampling = target).

  Carry ``head [B]``: the simulation is still inside memory. In memory:
  UCT (``Q + C sqrt(ln N / N(a))``, untried first, ties uniform) or regret
  matching mixed with ``exploration`` uniform; at the first state outside
  memory and in the playout: uniform. Records ``(sigma [B, A], legal [B, A],
  tree_node [B], new_node [B])``.
  """

  def node_policy(t, node, head):
    del t
    pl, info, legal = node.player, node.infostate, node.legal
    if cfg.selection == "uct":
      n = infostate_rows(state.visits, pl, info)
      q = infostate_rows(state.values, pl, info) / jnp.maximum(n, 1.0)
      ntot = jnp.sum(n, axis=-1, keepdims=True)
      score = q + c_uct * jnp.sqrt(jnp.log(jnp.maximum(ntot, 1.0)) / jnp.maximum(n, 1.0))
      score = jnp.where(n > 0, score, jnp.inf)
      score = jnp.where(legal, score, -jnp.inf)
      best = legal & (score >= jnp.max(score, axis=-1, keepdims=True))
      sig = sequence_form.uniform(best)
    else:
      rm = sequence_form.regret_matching(infostate_rows(state.regrets, pl, info), legal)
      sig = mix_uniform(rm, legal, cfg.exploration)
    sig, tree_node, new_node, head = memory_step(state.in_tree, node, head,
                                                 sig.astype(state.visits[0].dtype))
    return Draw(sample=sig, target=sig, record=(sig, legal, tree_node, new_node)), head

  return node_policy


def _step(cfg: ISMCTS, c_uct, tree: GameTree, state: ISMCTSState, row, weights, key):
  """``batch`` simulations reading ``state``; their updates in one scatter-add."""
  A = tree.num_actions
  B = cfg.batch
  dtype = state.visits[0].dtype
  # One draw per step: the walk's uniforms (rows 0..D-1) and the determinization's (row D).
  uni = rng.uniform(key, (tree.max_depth + 1, B), dtype)
  # Determinization: a history of the information state, by chance reach.
  k = sample_index(weights, uni[-1].astype(weights.dtype))
  uni = uni[:-1]
  h0 = jnp.maximum(row[k], 0).astype(jnp.int32)  # the root when there is no match history
  traj, _ = walk(tree, ismcts_node_policy(cfg, c_uct, state), uni, start=h0,
                 carry=jnp.ones(B, bool))
  sig, legal, tree_node, new_node = traj.record
  u0 = traj.payoff(tree)  # [B]
  plt, info = traj.player, traj.infostate
  in_tree, size, admitted = grow_tree(state.in_tree, state.size, cfg.capacity, plt, info, new_node)
  upd = tree_node | admitted
  u = jnp.where(plt == 0, u0, -u0)[..., None]  # [D, B, 1] acting player's payoff
  onehot = jax.nn.one_hot(traj.action, A, dtype=dtype)
  sig_a = traj.sample_prob[..., None]
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
  return state.replace(in_tree=in_tree, size=size, **out)
