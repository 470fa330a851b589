"""The Growing-Tree CFR agent, ``SoG(s, c)`` (Schmid et al. 2023, "Search via Growing-Tree CFR").

At a decision in public state ``s`` the agent searches with GT-CFR
(:func:`jaxgt.search.gtcfr.search`) on a tree that starts as the single
branch from the search's root to ``s`` with every off-branch child a leaf and
``s``'s children added; growth is constrained below ``s`` (simulations start
there) and it plays the search's average policy at its information state
(Schmid et al. 2023, "Modified Continual Re-solving"). The search's root:

* ``resolve=False`` (or the player's first decision): the game's root public
  state with its known beliefs;
* ``resolve=True``, later decisions: continual re-solving. The root is
  ``s_prev``, the deepest public state on the way to ``s`` that the previous
  search's tree holds (below the previous decision); the search runs the
  (``alpha``-modified) safe re-solving gadget with the previous search's
  summary there: our range and the opponent's range under its average
  policy, and the opponent's average self-play counterfactual values
  (Schmid et al. 2023, "Self-play Values as Re-solving Constraints").

The search depends on public information only (public states and the key),
so every information state of ``s`` reads the same search. The agent is
traceable (jitted matches): its state is a fixed-shape pytree (the key and
the previous search's per-node summaries); on concrete arguments it runs
one search per (previous state, public state) and memoises it, which is what
:func:`jaxgt.evaluation.construct.construct_policy` needs.
:meth:`GTCFRAgent.policy_table` runs the root-anchored searches
(``resolve=False``) of every decision public state in batched calls.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.agents.base import Agent
from jaxgt.core import rng, sequence_form
from jaxgt.core.checks import check_positive_int, concrete_int
from jaxgt.core.game_tree import NO_INDEX, CompiledGame, infostate_histories
from jaxgt.search import device_tree
from jaxgt.search import gtcfr as gtcfr_search
from jaxgt.search import evaluator as evaluator_lib
from jaxgt.search.gadget import DEFAULT_ALPHA, check_alpha


def resolve_inputs(reach, values, rows, valid, player, scale=1.0) -> tuple:
  """``(ranges [2, K], opp_values [K])`` of a re-solve at a node of the previous search
  (Schmid et al. 2023, "Self-play Values as Re-solving Constraints"): both players' own
  reaches ``reach [2, R]`` at the node's slots ``rows [K]`` normalised (uniform over ``valid
  [2, K]`` where a reach is zero everywhere), and the opponent's self-play values ``values
  [2, R]`` there divided by the re-solving ``player``'s total reach times ``scale`` (the
  new root's chance scale; ``player`` may be traced)."""
  o = 1 - player
  ours, opp, vals = reach[player, rows], reach[o, rows], values[o, rows]
  z, uniform = jnp.sum(ours), sequence_form.uniform(valid, ours.dtype)
  our_range = sequence_form.safe_div(ours, z, uniform[player])
  opp_range = sequence_form.safe_div(opp, jnp.sum(opp), uniform[o])
  ranges = jnp.zeros((2, rows.shape[0]), ours.dtype).at[player].set(our_range).at[o].set(
      opp_range)
  return ranges, sequence_form.safe_div(vals, z * scale)


@struct.dataclass
class GTCFRAgentState:
  """What the agent carries between its decisions of one match (fixed shapes)."""

  key: Any  # the key of init; the search at public state s uses fold_in(key, s)
  started: Any  # [] bool a decision has been searched
  public: Any  # [] int32 public state of the previous decision
  tree_public: Any  # [N] int32 public state of each node of the previous search's tree
  reach: Any  # [2, N * K] own reaches under its average policy (GTCFR SearchResult.node_reach)
  values: Any  # [2, N * K] its average self-play counterfactual values (node_values)


class GTCFRAgent(Agent):
  """``SoG(simulations, expansions_per_update)`` with a leaf evaluator.

  Args:
    game: a :class:`CompiledGame`.
    simulations: ``s``, expansion simulations per search.
    expansions_per_update: ``c`` (fractional: ``ceil(1/c)`` CFR updates per simulation).
    evaluator: ``"exact"`` (the remaining game solved for the current ranges), ``"zero"``
      (frontier leaves valued zero, :func:`jaxgt.search.evaluator.zero`), a
      :class:`jaxgt.search.evaluator.Evaluator`, or a callable ``(LeafInput) -> values``.
    capacity: nodes of the search tree (default: what ``simulations`` can add).

  ``puct_constant``, ``prior_temperature``, ``virtual_loss``, ``puct_visit_offset``, ``chance``,
  ``select_policy`` and ``value_average`` are the search's open choices
  (:func:`jaxgt.search.gtcfr.make_config`).
  """

  def __init__(self, game: CompiledGame, *, simulations: int, expansions_per_update: float = 1.0,
               evaluator: str | Callable | evaluator_lib.Evaluator = "exact",
               capacity: int | None = None,
               puct_constant: float = 1.0, prior_temperature: float = 1.0,
               virtual_loss: float = 1.0, puct_visit_offset: float = 0.0,
               chance: str = "sample", select_policy: str = "average",
               value_average: str = "node", resolve: bool = True,
               alpha: float | None = DEFAULT_ALPHA, cache_size: int = 4096, dtype="float64"):
    if not isinstance(game, CompiledGame):
      raise ValueError(f"GTCFRAgent needs a CompiledGame (jaxgt.load(...)), got "
                       f"{type(game).__name__}")
    source = device_tree.source_from_game(game, dtype)
    config = gtcfr_search.make_config(source, simulations=simulations,
                                      expansions_per_update=expansions_per_update,
                                      capacity=capacity, puct_constant=puct_constant,
                                      prior_temperature=prior_temperature,
                                      virtual_loss=virtual_loss,
                                      puct_visit_offset=puct_visit_offset, chance=chance,
                                      select_policy=select_policy,
                                      value_average=value_average, dtype=dtype)
    self._setup(game, source, config, evaluator, resolve, alpha, cache_size)

  def _setup(self, game, source, config, evaluator, resolve, alpha, cache_size):
    """The attributes every device-tree search agent has (``evaluator``: ``"exact"``, an
    :class:`Evaluator` or a callable ``(LeafInput) -> values``)."""
    self.game = game
    self.source = source
    self.config = config
    if isinstance(evaluator, evaluator_lib.Evaluator):
      self.evaluator = evaluator
    elif evaluator == "exact":
      self.evaluator = evaluator_lib.exact(self.source)
    elif evaluator == "zero":
      self.evaluator = evaluator_lib.zero()
    elif callable(evaluator):
      self.evaluator = evaluator_lib.from_callable(evaluator)
    else:
      raise ValueError(f"evaluator must be 'exact', 'zero', an Evaluator or a callable, got "
                       f"{evaluator!r}")
    self.ranges = jnp.asarray(gtcfr_search.root_ranges(self.source, 0), self.config.solver.dtype)
    self.resolve = bool(resolve)
    self.alpha = check_alpha(alpha)
    self._public = jnp.asarray(game.tree.history_public)
    self._player = jnp.asarray(game.tree.player)
    self._memo: OrderedDict = OrderedDict()
    # Host-side acts call small jitted helpers (eager ops would be re-traced per search).
    self._path_fn = jax.jit(lambda public: device_tree.public_path(self.source, public))
    self._args_fn = jax.jit(self.resolve_args)
    self._rows_fn = jax.jit(self.focus_rows)
    self._read_rows_fn = jax.jit(self.read_rows)
    self._cache_size = check_positive_int("cache_size", cache_size)
    self.num_searches = 0

  @property
  def name(self) -> str:
    c = self.config
    return f"SoG({c.simulations}, {c.expansions_per_update:g})"

  def init(self, key):
    N, K = self.config.capacity, self.source.num_infostates
    zeros = jnp.zeros((2, N * K), self.config.solver.dtype)
    return GTCFRAgentState(key=jnp.asarray(key), started=jnp.zeros((), bool),
                           public=jnp.asarray(NO_INDEX, jnp.int32),
                           tree_public=jnp.full(N, NO_INDEX, jnp.int32), reach=zeros,
                           values=zeros)

  def _run_search(self, root, ranges, key, path, player=None, opp_values=None, gadget=True):
    """The search of one decision: GT-CFR from ``root`` along ``path`` (root first) with the
    gadget for ``player`` when given and ``gadget`` is on (subclasses search differently)."""
    if player is None:
      return gtcfr_search.search(self.source, self.config, self.evaluator, root, ranges, key,
                                 path=path)
    return gtcfr_search.search(self.source, self.config, self.evaluator, root, ranges, key,
                               player=player, opp_values=opp_values, alpha=self.alpha, path=path,
                               gadget=gadget)

  def _search(self, key, public):
    """The root-anchored search at ``public`` (no re-solving)."""
    path = device_tree.public_path(self.source, public)
    return self._run_search(jnp.zeros((), jnp.int32), self.ranges,
                            rng.fold_in(key, public), path)

  def resolve_args(self, state, public, player):
    """``(root, ranges [2, K], opp_values [K], path)`` of the re-solve at ``public`` from the
    previous search's summary at ``s_prev`` (module docstring); ``player`` may be traced."""
    src = self.source
    K = src.num_infostates
    path = device_tree.public_path(src, public)
    depth = src.public_depth
    in_prev = jax.vmap(lambda u: jnp.any(state.tree_public == u))(path)
    below = depth[jnp.maximum(path, 0)] > depth[jnp.maximum(state.public, 0)]
    ok = in_prev & below & (path >= 0)
    j = path.shape[0] - 1 - jnp.argmax(ok[::-1])  # the deepest such public state
    root = path[j]
    node = jnp.argmax(state.tree_public == root)
    valid = src.tables.info_id[root] >= 0  # [2, K]
    ranges, opp_values = resolve_inputs(state.reach, state.values, node * K + jnp.arange(K),
                                        valid, player)
    shifted = jnp.where(jnp.arange(path.shape[0]) + j < path.shape[0], jnp.roll(path, -j),
                        NO_INDEX)
    return root, ranges, opp_values, shifted

  def decision_args(self, state, public, player):
    """``(root, ranges [2, K], opp_values [K], path, gadget)`` of the one search of a decision
    (traceable): the re-solve from the previous search's summary, or before any search the
    root-anchored search of :meth:`_search` with the gadget off (the same program)."""
    root, ranges, opp_values, path = self.resolve_args(state, public, player)
    on = state.started
    first = device_tree.public_path(self.source, public)
    return (jnp.where(on, root, 0), jnp.where(on, ranges, self.ranges),
            jnp.where(on, opp_values, 0.0), jnp.where(on, path, first), on)

  def _decision_search(self, state, public, player):
    root, ranges, opp_values, path, on = self.decision_args(state, public, player)
    return self._run_search(root, ranges, rng.fold_in(state.key, public), path, player,
                            opp_values, on)

  def after_search(self, state, res, public):
    """``state`` summarising search ``res`` at ``public`` (the next re-solve starts from it)."""
    return state.replace(started=jnp.ones((), bool), public=jnp.asarray(public, jnp.int32),
                         tree_public=res.state.tree.public, reach=res.node_reach,
                         values=res.node_values)

  def act(self, key, state, history):
    del key
    h = jnp.asarray(history, jnp.int32)
    public = self._public[h]
    hc, started = concrete_int(history), concrete_int(state.started)
    if hc is not None and started is not None and not isinstance(state.key, jax.core.Tracer):
      return self._act_concrete(state, hc, bool(started))
    player = self._player[h]

    if not self.resolve:
      res = self._search(state.key, public)
    else:  # one search for both players, before and after the first (no branches)
      res = self._decision_search(state, public, player)
    return self.read_policy(res, h), self.after_search(state, res, public)

  def _act_concrete(self, state, h: int, started: bool):
    """``act`` on concrete arguments: one memoised search per (state, public state); the memo
    keeps the policy rows of the searched public state (:meth:`focus_rows`) and the next
    state, not the whole search (a search's tables are megabytes, the memo holds thousands)."""
    public = int(self.game.tree.history_public[h])
    player = int(self.game.tree.player[h])
    key = (id(state), public)
    hit = self._memo.get(key)
    if hit is None or hit[0] is not state:
      key_s = jax.random.fold_in(state.key, public)
      if started and self.resolve:
        root, ranges, opp_values, path = self._args_fn(state, public, player)
        res = self._run_search(root, ranges, key_s, path, player, opp_values)
      else:
        res = self._run_search(jnp.zeros((), jnp.int32), self.ranges, key_s,
                               self._path_fn(public))
      self.num_searches += 1
      hit = (state, self._rows_fn(res), self.after_search(state, res, public))
      self._memo[key] = hit
      if len(self._memo) > self._cache_size:
        self._memo.popitem(last=False)
    else:
      self._memo.move_to_end(key)
    return self._read_rows_fn(hit[1], jnp.asarray(h, jnp.int32)), hit[2]

  def read_policy(self, res, h):
    """``[A]`` the searched policy of ``res`` at decision history ``h`` (traceable)."""
    return self.read_rows(self.focus_rows(res), h)

  def focus_rows(self, res) -> jax.Array:
    """``[2, K, A]`` the average policy of search ``res`` at the information-state slots of the
    public state it searched for (its focus node)."""
    K = self.source.num_infostates
    rows = res.state.focus * K + jnp.arange(K)
    return jnp.stack([res.policy[0][rows], res.policy[1][rows]])

  def read_rows(self, rows, h):
    """``[A]`` the policy at decision history ``h`` from its public state's rows ``[2, K, A]``
    (:meth:`focus_rows`; traceable)."""
    A = self.game.tree.num_actions
    p = self._player[h]
    k = jnp.where(p == 0, self.source.history_info[0, h], self.source.history_info[1, h])
    return jnp.where(p == 0, rows[0, k], rows[1, k])[..., :A]

  def policy_table(self, key, batch: int = 64) -> tuple:
    """``(sigma0 [I0, A], sigma1 [I1, A])`` (NumPy): every information state's searched policy,
    with :func:`jaxgt.evaluation.construct.construct_policy`'s keys, searches batched ``batch`` at
    a time (one compiled program). Root-anchored searches only (``resolve=False``)."""
    batch = check_positive_int("batch", batch)
    if self.resolve:
      raise ValueError("policy_table batches independent root-anchored searches; construct a "
                       "re-solving agent's policy with jaxgt.evaluation.construct")
    tree = self.game.tree
    out = []
    for p in (0, 1):
      n = tree.players[p].num_infostates
      kinit = jax.random.fold_in(jax.random.fold_in(key, p), n)
      reps = infostate_histories(tree, p)  # one history per information state
      publics = np.asarray(tree.history_public)[reps]
      uniq, inv = np.unique(publics, return_inverse=True)
      sig = np.zeros((n, tree.num_actions))
      for lo in range(0, len(uniq), batch):
        chunk = uniq[lo:lo + batch]
        pad = np.concatenate([chunk, np.full(batch - len(chunk), chunk[-1])])
        res = self._batched(kinit, jnp.asarray(pad, jnp.int32))
        sel = np.flatnonzero((inv >= lo) & (inv < lo + len(chunk)))
        rows = self._read_batch(res, jnp.asarray(inv[sel] - lo), jnp.asarray(reps[sel]))
        sig[sel] = np.asarray(rows)
      out.append(sig)
    return tuple(out)

  def _batched(self, kinit, publics):
    paths = jax.vmap(lambda s: device_tree.public_path(self.source, s))(publics)
    keys = jax.vmap(lambda s: rng.fold_in(kinit, s))(publics)
    B = publics.shape[0]
    return gtcfr_search.search(self.source, self.config, self.evaluator, jnp.zeros(B, jnp.int32),
                     jnp.broadcast_to(self.ranges, (B,) + self.ranges.shape), keys, path=paths)

  def _read_batch(self, res, which, hists):
    def one(i, h):
      sub = jax.tree_util.tree_map(lambda x: x[i], res)
      return self.read_policy(sub, h)
    return jax.vmap(one)(which, hists)

