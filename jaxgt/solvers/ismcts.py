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

**Device games** (:class:`~jaxgt.solvers.sources.Rules`, for games too large to
enumerate): ``state = solver.init(Rules(game), capacity=N)`` keeps ``N`` rows
``[N, A]`` of each statistic per player and each player's
:class:`~jaxgt.core.info_table.InfoTable` of information-state keys
(``state.tables``); memory is the tables: an information state is in memory
once it has a row (``state.in_tree`` is ``None``). ``solver.run(Rules(game),
state, n, key, path=path)`` searches from the match position
``path = consistent.search_path(game, actions, length)`` (``None``: the root).
Each simulation starts at a state of the searcher's information state drawn by
:func:`~jaxgt.solvers.consistent.sample_information_state` (chance reach
weighted where the players' actions are public, as on a tree) and walks
``max_length`` steps from it (steps past a terminal are padding). After a step's
walk the first state outside memory of each simulation is inserted into its
player's table; an insert refused because the table is full (counted in
``tables[p].refused``) leaves the state outside memory: it was played by the
playout policy and gets no update, now and whenever it is reached again. A
simulation whose determinization found no state (:data:`~jaxgt.solvers.consistent.REJECTION_ROUNDS`
walks, all rejected) is not updated and is counted in ``state.skipped``. Any
``capacity >= 1`` runs (each simulation adds at most one row). UCT's default
``C`` is twice the game's ``max_utility`` (a device game has no tree to read the
payoffs off); a game without one needs an explicit ``c``. On an enumerable
game a run from the root on ``Rules(game)`` with enough capacity equals the
run on ``compiled.device_tree()`` with the same key, row for row
(:func:`~jaxgt.solvers.sources.tree_rows`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jaxgt import struct
from jaxgt.core import rng, sequence_form
from jaxgt.core.checks import check_choice, check_positive_int, check_real
from jaxgt.core.dtypes import resolve_dtype
from jaxgt.core.game_tree import GameTree
from jaxgt.core.sampling import mix_uniform, sample_index
from jaxgt.core.tables import infostate_rows
from jaxgt.core.targets import ancestor_chains, chain_reach, member_row, search_position
from jaxgt.solvers.consistent import (check_search_path, information_state_bound,
                                      sample_information_state)
from jaxgt.solvers.sampled import (SampledSolver, check_memory_config, check_state_fits, grow_tree,
                                   memory_step)
from jaxgt.solvers.sources import Rules, insert_rows, memory_estimate, source_of
from jaxgt.solvers.walk import Draw, walk

SELECTION = ("uct", "rm")
FINAL = ("visits", "frequency", "mean")


@struct.dataclass
class ISMCTSState:
  """ISMCTS statistics: rows are a compiled tree's information states (``I_p``) or, on a device
  game, the rows of the players' tables (``N = capacity`` each; rows past ``tables[p].size``
  unused)."""

  visits: tuple  # ([I0, A], [I1, A]) visit counts N(I, a)
  values: tuple  # ([I0, A], [I1, A]) summed payoffs of the acting player ("uct"; None for "rm")
  regrets: tuple  # ([I0, A], [I1, A]) cumulative regrets ("rm"; else None)
  cum_policy: tuple  # ([I0, A], [I1, A]) summed selection strategies ("rm"; else None)
  in_tree: tuple  # ([I0] bool, [I1] bool) information states in memory (None: device games)
  size: jax.Array  # [] int32 information states in memory
  iteration: jax.Array  # [] int32 steps run (batch simulations each)
  tables: Any = None  # (InfoTable, InfoTable) each row's information-state key (device games)
  skipped: Any = None  # [] int32 simulations with no determinization, not updated (device games)


@dataclasses.dataclass(frozen=True)
class ISMCTS(SampledSolver):
  """Hyperparameters of ISMCTS (Sec. 5.1); methods are pure (:mod:`.base`)."""

  selection: str = "uct"  # "uct" or "rm"
  # UCT exploration constant; None: twice the largest absolute payoff (a compiled tree's, or the
  # device game's max_utility)
  c: float | None = None
  exploration: float = 0.2  # uniform mixing of regret-matching selection
  # move policy: "visits" (most visited action), "frequency" (visit frequencies) or "mean" (mean
  # selection strategy); None: "visits" for UCT, "mean" for RM
  final: str | None = None
  # most information states in memory on a compiled tree; None: all (device games: init's
  # capacity)
  capacity: int | None = None
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

  @property
  def _statistics(self) -> tuple:
    """The statistics the selection rule keeps."""
    return ("visits", "values") if self.selection == "uct" else ("visits", "regrets",
                                                                 "cum_policy")

  def init(self, tree, *, weights=None, capacity=None) -> ISMCTSState:
    """Empty statistics and memory (root beliefs, ``weights``, are not supported).

    ``tree``: a compiled :class:`GameTree` (rows ``[I_p, A]``, memory bounded by the
    config's ``capacity``), or :class:`Rules` with ``capacity`` rows ``[capacity, A]`` per
    player (required, a positive integer; see :meth:`memory_bytes`) and empty tables.
    """
    if isinstance(tree, Rules):
      if weights is not None:
        raise ValueError(f"{self.name} does not support root beliefs (weights)")
      if self.capacity is not None:
        raise ValueError(f"ISMCTS(capacity={self.capacity}) bounds a compiled tree's memory; on "
                         f"a device game pass init(Rules(game), capacity=N), the rows of each "
                         f"player's table")
      if capacity is None:
        raise ValueError(f"{self.name} on a device game needs capacity=N, the rows of each "
                         f"player's table (estimate the memory with memory_bytes)")
      capacity = check_positive_int("capacity", capacity)
      self._rules_constant(tree)
      zeros = (jnp.zeros((capacity, tree.num_actions), resolve_dtype(self.dtype)),) * 2
      kept = {name: zeros if name in self._statistics else None
              for name in ("visits", "values", "regrets", "cum_policy")}
      return ISMCTSState(**kept, in_tree=None, size=jnp.zeros((), jnp.int32),
                         iteration=jnp.zeros((), jnp.int32), tables=tree.empty_tables(capacity),
                         skipped=jnp.zeros((), jnp.int32))
    if not isinstance(tree, GameTree):
      raise TypeError(f"{self.name} runs on a compiled GameTree or Rules(game), got "
                      f"{type(tree).__name__}")
    if capacity is not None:
      raise ValueError("init's capacity applies to a device game (Rules); a compiled tree's "
                       "memory is bounded by ISMCTS(capacity=...)")
    dtype = self.init_dtype(tree, weights)
    zeros = tuple(jnp.zeros((k, tree.num_actions), dtype) for k in tree.num_infostates)
    uct = self.selection == "uct"
    return ISMCTSState(visits=zeros, values=zeros if uct else None,
                       regrets=None if uct else zeros, cum_policy=None if uct else zeros,
                       in_tree=tuple(jnp.zeros(k, bool) for k in tree.num_infostates),
                       size=jnp.zeros((), jnp.int32), iteration=jnp.zeros((), jnp.int32))

  def memory_bytes(self, rules: Rules, capacity: int) -> int:
    """Bytes of a device-game state of ``capacity`` rows per player: the tables' keys and
    slots and the kept statistics ``[capacity, A]`` (``dtype``)."""
    if not isinstance(rules, Rules):
      raise TypeError(f"memory_bytes takes Rules(game), got {type(rules).__name__}")
    capacity = check_positive_int("capacity", capacity)
    row = len(self._statistics) * rules.num_actions * jnp.dtype(resolve_dtype(self.dtype)).itemsize
    return memory_estimate(rules, capacity, row)

  def _rules_constant(self, rules: Rules) -> float | None:
    """UCT's ``C`` on a device game (``None`` for RM): ``c``, else twice ``max_utility``;
    raises where the game has none."""
    if self.selection != "uct":
      return None
    if self.c is not None:
      return float(self.c)
    top = getattr(rules.game, "max_utility", None)
    if top is None:
      raise ValueError(f"{rules.game.name} has no max_utility (the largest absolute payoff "
                       f"in closed form) for UCT's default constant: pass ISMCTS(c=...)")
    return 2.0 * float(top)

  def exploration_constant(self, tree) -> jax.Array:
    """``c``, or twice the largest absolute payoff when ``c`` is ``None`` (traceable): read off
    a compiled tree's payoffs, or a device game's ``max_utility``."""
    if isinstance(tree, Rules):
      return jnp.asarray(self._rules_constant(tree) or 0.0, resolve_dtype(self.dtype))
    if self.c is not None:
      return jnp.asarray(self.c, tree.terminal_payoff.dtype)
    return 2.0 * jnp.max(jnp.abs(tree.terminal_payoff), initial=0.0)

  def run(self, tree, state, num_steps, key=None, **position):
    """``num_steps`` steps of ``batch`` simulations (see :meth:`SampledSolver.run`); the
    position is ``history=`` on a compiled tree, ``path=`` on a device game
    (:meth:`position`)."""
    check_state_fits(tree, state, state.visits[0])
    if isinstance(tree, Rules):
      self._rules_constant(tree)
    return super().run(tree, state, num_steps, key, **position)

  def position(self, tree, *, history=None, members=None, path=None) -> tuple:
    """``run``'s keywords. On a compiled tree: ``history``, ``None`` (the root) or a history
    index (may be traced) where player 0 or 1 acts, of which only the acting player's
    information state is used; ``members``, ``target_members(tree, "ist")`` (computed when
    ``None``). On a device game: ``path``, ``None`` (the root) or the
    :class:`~jaxgt.solvers.consistent.SearchPath` of the match position (the searcher acts
    there)."""
    if isinstance(tree, Rules):
      if history is not None or members is not None:
        raise ValueError("a device game's search position is path=search_path(game, actions, "
                         "length) (jaxgt.solvers.consistent), not history/members")
      if path is not None:
        check_search_path(tree.game, path)
      return (path,)
    if path is not None:
      raise ValueError("path= is a device game's search position; a compiled tree takes "
                       "history=")
    return search_position(tree, "ist", history, members)

  def prepare(self, tree, state: ISMCTSState, *position):
    """What every step reads. A compiled tree: the histories of ``history``'s information
    state, their chance reach (the determinization's weights) and the UCT constant. A device
    game: the search path, the bound of its determinization's rejection step
    (:func:`~jaxgt.solvers.consistent.information_state_bound`) and the UCT constant."""
    del state
    if isinstance(tree, Rules):
      (path,) = position
      bound = None if path is None else information_state_bound(tree.game, path)
      return path, bound, self.exploration_constant(tree)
    history, members = position
    row = member_row(tree, "ist", members, history)
    reach = chain_reach(tree, ancestor_chains(tree, tree.max_depth, row))
    weights = jnp.where(row >= 0, reach, 0.0)
    weights = jnp.where(jnp.sum(weights) > 0, weights, 1.0)  # the root: any slot
    return row, weights, self.exploration_constant(tree)

  def sample_step(self, tree, state: ISMCTSState, context, key) -> ISMCTSState:
    """``batch`` simulations reading ``state`` (:func:`_step`, :func:`_rules_step`)."""
    if isinstance(tree, Rules):
      path, bound, c_uct = context
      return _rules_step(self, c_uct, tree, state, path, bound, key)
    row, weights, c_uct = context
    return _step(self, c_uct, tree, state, row, weights, key)

  def policy(self, tree, state: ISMCTSState):
    """Move policy of every information state (``final``): ``([I0, A], [I1, A])``; on a
    device game ``([N, A], [N, A])`` by table row, over the actions with statistics (rows
    without any are zero; :meth:`state_policy` gives the policy at game states)."""
    if state.tables is not None:
      return tuple(self._row_policy(state, p) for p in (0, 1))
    return tuple(self.move_policy(state.visits[p], None if state.cum_policy is None else
                                  state.cum_policy[p], jnp.asarray(tree.players[p].legal))
                 for p in (0, 1))

  def _row_policy(self, state: ISMCTSState, p: int):
    n = state.visits[p]
    seen = n > 0 if state.cum_policy is None else (n > 0) | (state.cum_policy[p] > 0)
    probs = self.move_policy(n, None if state.cum_policy is None else state.cum_policy[p], seen)
    return jnp.where(jnp.any(seen, axis=-1, keepdims=True), probs, 0.0)

  def state_policy(self, rules: Rules, state: ISMCTSState, states):
    """``[B, A]`` move policy (``final``) at device game states ``[B]`` where player 0 or 1
    acts, from the acting player's table row; uniform over the legal actions where the
    information state has no row."""
    src = source_of(rules, state.tables)
    node = src.node(states)
    cum = None if state.cum_policy is None else infostate_rows(state.cum_policy, node.player,
                                                               node.infostate)
    n = infostate_rows(state.visits, node.player, node.infostate)
    has = (node.infostate >= 0)[:, None]
    n = jnp.where(has, n, 0.0)
    cum = None if cum is None else jnp.where(has, cum, 0.0)
    return self.move_policy(n, cum, node.legal)

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
  memory and in the playout: uniform. Memory is ``state.in_tree`` on a
  compiled tree, a table row on a device game. Records ``(sigma [B, A],
  legal [B, A], tree_node [B], new_node [B])``.
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
    sig = sig.astype(state.visits[0].dtype)
    if state.tables is None:
      sig, tree_node, new_node, head = memory_step(state.in_tree, node, head, sig)
    else:  # a table row is memory (NO_INDEX: none)
      tree_node = node.decision & head & (info >= 0)
      new_node = node.decision & head & (info < 0)
      sig = jnp.where(tree_node[:, None], sig, mix_uniform(jnp.zeros_like(sig), legal, 1.0))
      head = head & ~new_node
    return Draw(sample=sig, target=sig, record=(sig, legal, tree_node, new_node)), head

  return node_policy


def _increments(cfg: ISMCTS, traj, dtype):
  """Each step's statistics increments ``{name: [D, B, A]}`` (the kept statistics only)."""
  sig, legal, _, _ = traj.record
  A = sig.shape[-1]
  u0 = traj.payoff()  # [B]
  u = jnp.where(traj.player == 0, u0, -u0)[..., None]  # [D, B, 1] acting player's payoff
  onehot = jax.nn.one_hot(traj.action, A, dtype=dtype)  # zero at chance outcomes >= A
  sig_a = traj.sample_prob[..., None]
  stats = {"visits": onehot, "values": onehot * u,
           "regrets": jnp.where(legal, onehot * u / jnp.maximum(sig_a, 1e-30) - u, 0.0),
           "cum_policy": sig}
  return {name: stats[name] for name in cfg._statistics}


def _scatter(state: ISMCTSState, incs, plt, rows, upd) -> dict:
  """The statistics with ``incs [D, B, A]`` added at ``(plt, rows) [D, B]`` where ``upd``."""
  out = {}
  for name, inc in incs.items():
    tabs = list(getattr(state, name))
    A = inc.shape[-1]
    for p in (0, 1):
      m = upd & (plt == p)
      tabs[p] = tabs[p].at[jnp.where(m, rows, 0).reshape(-1)].add(
          jnp.where(m[..., None], inc, 0.0).reshape(-1, A))
    out[name] = tuple(tabs)
  return out


def _step(cfg: ISMCTS, c_uct, tree: GameTree, state: ISMCTSState, row, weights, key):
  """``batch`` simulations reading ``state``; their updates in one scatter-add."""
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
  _, _, tree_node, new_node = traj.record
  plt, info = traj.player, traj.infostate
  in_tree, size, admitted = grow_tree(state.in_tree, state.size, cfg.capacity, plt, info, new_node)
  out = _scatter(state, _increments(cfg, traj, dtype), plt, info, tree_node | admitted)
  return state.replace(in_tree=in_tree, size=size, **out)


def _rules_step(cfg: ISMCTS, c_uct, rules: Rules, state: ISMCTSState, path, bound, key):
  """``batch`` simulations on a device game reading ``state``: determinize, walk, insert each
  simulation's first state outside memory (refused: no update), one scatter-add."""
  B = cfg.batch
  dtype = state.visits[0].dtype
  src = source_of(rules, state.tables, dtype)
  # The walk's uniforms as on a compiled tree (rows 0..D-1; row D is the tree's
  # determinization draw); the determinization draws from its own key.
  uni = rng.uniform(key, (src.max_depth + 1, B), dtype)[:-1]
  if path is None:
    start, ok = None, jnp.ones(B, bool)
  else:
    start, ok = sample_information_state(rules.game, path, rng.fold_in(key, 1), B, bound)
  traj, _ = walk(src, ismcts_node_policy(cfg, c_uct, state), uni, start=start,
                 carry=jnp.ones(B, bool))
  _, _, tree_node, new_node = traj.record
  plt = traj.player
  new = new_node & ok[None, :]
  tables, new_rows = insert_rows(state.tables, plt, traj.key, new)
  rows = jnp.where(new, new_rows, traj.infostate)
  upd = (tree_node & ok[None, :]) | (new & (new_rows >= 0))
  out = _scatter(state, _increments(cfg, traj, dtype), plt, rows, upd)
  return state.replace(tables=tables, size=tables[0].size + tables[1].size,
                       skipped=state.skipped + jnp.sum(~ok).astype(jnp.int32), **out)
