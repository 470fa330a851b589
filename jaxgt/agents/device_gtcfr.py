"""The Growing-Tree CFR agent on device games, ``SoG(s, c)`` searched from a game's rules.

A game too large to enumerate (Liar's Dice with two dice each) has no table of public
states to grow a search tree from; :class:`DeviceGTCFRAgent` grows it from the rules
(:func:`jaxgt.search.rules_source.rules_source`, the regret phase on factored ranges,
:mod:`jaxgt.search.factored_form`), as :class:`~jaxgt.agents.gtcfr_agent.GTCFRAgent` grows it
on an enumerated game (Schmid et al. 2023, "Search via Growing-Tree CFR" and "Modified
Continual Re-solving"). The search's root:

* ``resolve=False`` (and the first decision of a re-solving agent): the post-deal public
  state (the first state after both private deals,
  :func:`~jaxgt.search.rules_source.post_deal_root`, one representative deal; the histories
  are the private pairs, their chance probability ``private_chance`` in the tree's chance
  reach) with uniform own reaches over each player's private states;
* ``resolve=True``, later decisions: continual re-solving. The root is the deepest public
  state on the way to the decision that the previous search's tree holds, below the previous
  decision (found by following the match's public steps through that tree's children), as a
  root state of its own (its representative state, the chance of its pairs given the public
  chance events); the search runs the (``alpha``-modified) re-solving gadget with the
  previous search's summary there: the re-solving player's range and the opponent's range
  under the average policy, and the opponent's average self-play counterfactual values
  (divided by the re-solving player's reach and the public chance events' probability, the
  new root's scale).

The path to the current public state is the public actions and public chance outcomes since
the search's root, read from the match's actions (the steps before the deals, which are
private, are never read); the tree starts as that single branch with every off-branch child a
leaf and the decision's children added, and the simulations start there. The agent plays the
search's average policy at its own private state
(:meth:`~jaxgt.games.device.DeviceGame.private_index` of the acting player): the search
depends on public information only (and the summary of earlier searches, public too), so
every private state of the public state reads the same search and the opponent's private
state is never read.

``act`` is traceable: one compiled search per (game, configuration, evaluator) serves every
decision of every match, the path a fixed ``[max_length + 1]`` array; matches run jitted and
vmapped. :meth:`DeviceGTCFRAgent.memory` reports the most tree nodes a search used and how many
searches filled the tree (raise ``capacity``); :meth:`DeviceGTCFRAgent.memory_bytes` estimates a
search's state before any run.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.agents.base import Agent
from jaxgt.agents.gtcfr_agent import resolve_inputs
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_positive_int
from jaxgt.core.factored import check_factored, deal_steps
from jaxgt.games.device import DeviceGame
from jaxgt.search import evaluator as evaluator_lib
from jaxgt.search import gtcfr as gtcfr_search
from jaxgt.search import rules_source
from jaxgt.search.gadget import DEFAULT_ALPHA, check_alpha
from jaxgt.search.gtcfr_program import SearchProgram


@struct.dataclass
class ResolveSummary:
  """What a re-solving agent keeps of its previous search (fixed shapes; ``N`` its tree's
  nodes, ``K`` private-state slots, ``Q`` children per node)."""

  started: jax.Array  # [] bool a decision has been searched
  root_depth: jax.Array  # [] int32 public steps after the deals at the search's root
  decision_depth: jax.Array  # [] int32 public steps after the deals at its decision
  children: jax.Array  # [N, Q] int32 node of each child public state (-1: not in the tree)
  states: Any  # the game state representing each node's public state ([N] in front)
  chance: jax.Array  # [N] probability of the public chance events from the search's root
  held: jax.Array  # [2, N, K] bool the private state is some present pair's at the node
  reach: jax.Array  # [2, N * K] own reaches under the average policy (SearchResult.node_reach)
  values: jax.Array  # [2, N * K] average self-play counterfactual values (node_values)


@struct.dataclass
class DeviceGTCFRState:
  """What the agent keeps between decisions (fixed shapes): its last search's tree fill and,
  re-solving, the previous search's summary (``()`` for a root-anchored agent)."""

  nodes: jax.Array  # [] int32 nodes of the last search's tree
  full: jax.Array  # [] int32 searches so far whose tree filled (no room for a expansion)
  summary: Any = ()  # ResolveSummary when re-solving


class DeviceGTCFRAgent(Agent):
  """``SoG(simulations, expansions_per_update)`` on a device game, root-anchored or continually
  re-solving (module docstring).

  Args:
    game: a :class:`DeviceGame` whose public states factor (``num_private``, ``with_private``).
    simulations: ``s``, expansion simulations per search.
    expansions_per_update: ``c`` (fractional: ``ceil(1/c)`` CFR updates per simulation).
    evaluator: ``"zero"`` (frontier public states valued zero), a
      :class:`~jaxgt.search.evaluator.Evaluator` of the rules tree (e.g. the network's,
      :func:`jaxgt.nets.gtcfr_evaluator.cvpn_evaluator` on ``agent.source``), or a callable
      ``(LeafInput) -> values``.
    evaluator_source: the rules source ``evaluator`` was built on (its tree's layout); default
      a new one.
    capacity: nodes of the search tree (default: what ``simulations`` can add below the
      longest branch); at least the longest branch after the deals with its children.
    resolve: continual re-solving from the previous search's summary (the default, as
      :class:`~jaxgt.agents.gtcfr_agent.GTCFRAgent`'s; ``False``: every search from the
      post-deal root).
    alpha: the modified gadget's opponent-range mixing when re-solving (``None``: the exact
      gadget).
    puct_constant, prior_temperature, virtual_loss, puct_visit_offset, chance, select_policy,
      value_average: the search's open choices (:func:`jaxgt.search.gtcfr.make_config`).
    dtype: float dtype of the search.
  """

  reads_position = True
  memory_kind = "tree"  # memory_array reports tree nodes, not table rows

  def __init__(self, game: DeviceGame, *, simulations: int, expansions_per_update: float = 1.0,
               evaluator: str | Callable | evaluator_lib.Evaluator = "zero",
               evaluator_source=None, capacity: int | None = None,
               puct_constant: float = 1.0, prior_temperature: float = 1.0,
               virtual_loss: float = 1.0, puct_visit_offset: float = 0.0,
               chance: str = "sample", select_policy: str = "average",
               value_average: str = "node", resolve: bool = True,
               alpha: float | None = DEFAULT_ALPHA, dtype="float64"):
    if not isinstance(game, DeviceGame):
      raise TypeError(f"DeviceGTCFRAgent plays a DeviceGame, got {type(game).__name__} (an "
                      "enumerated game: GTCFRAgent)")
    check_factored(game, "GT-CFR grown from a game's rules")
    if not isinstance(resolve, (bool, np.bool_)):
      raise ValueError(f"resolve must be a bool, got {resolve!r}")
    self.resolve = bool(resolve)
    self.alpha = check_alpha(alpha)
    source = evaluator_source if evaluator_source is not None else \
        rules_source.rules_source(game, dtype=dtype)
    if not isinstance(source, rules_source.RulesSource) or source.rules is not game:
      raise ValueError("evaluator_source must be a rules source of this game")
    self.game = game
    self.source = source
    self.deals = deal_steps(game)
    L = int(game.max_length)
    Q = source.num_children
    need = 1 + Q * (L - self.deals + 1)  # the longest branch after the deals, its children
    simulations = check_positive_int("simulations", simulations)
    if capacity is None:
      capacity = need + Q * (simulations + 1)
    elif check_positive_int("capacity", capacity) < need:
      raise ValueError(f"capacity {capacity} cannot hold the longest branch of "
                       f"{game.game_string()} after the deals ({L - self.deals} public steps, "
                       f"{Q} children each): use at least {need} nodes")
    self.config = gtcfr_search.make_config(
        source, simulations=simulations, expansions_per_update=expansions_per_update,
        capacity=capacity, puct_constant=puct_constant, prior_temperature=prior_temperature,
        virtual_loss=virtual_loss, puct_visit_offset=puct_visit_offset, chance=chance,
        select_policy=select_policy, value_average=value_average, tree_form="factored",
        dtype=dtype)
    if isinstance(evaluator, evaluator_lib.Evaluator):
      self.evaluator = evaluator
    elif isinstance(evaluator, str):
      if evaluator != "zero":
        raise ValueError(f"evaluator on a game played through its rules must be 'zero', an "
                         f"Evaluator or a callable, got {evaluator!r} (the 'exact' evaluator "
                         "needs an enumerated game)")
      self.evaluator = evaluator_lib.zero()
    elif callable(evaluator):
      self.evaluator = evaluator_lib.from_callable(evaluator)
    else:
      raise ValueError(f"evaluator must be 'zero', an Evaluator or a callable, got {evaluator!r}")
    self.root = rules_source.post_deal_root(game)
    self.root_key = source.root_key(self.root)  # checked once, here (not while tracing)
    self.ranges = jnp.asarray(gtcfr_search.root_ranges(source, self.root),
                              self.config.solver.dtype)

  @property
  def name(self) -> str:
    c = self.config
    return f"SoG({c.simulations}, {c.expansions_per_update:g})"

  def init(self, key):
    del key
    zero = jnp.zeros((), jnp.int32)
    return DeviceGTCFRState(nodes=zero, full=zero,
                            summary=self.empty_summary() if self.resolve else ())

  def empty_summary(self) -> ResolveSummary:
    """The summary before any search (nothing searched: the first search is root-anchored)."""
    N, K, Q = self.config.capacity, self.source.num_infostates, self.source.num_children
    f = self.config.solver.dtype
    zero = jnp.zeros((), jnp.int32)
    states = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (N,) + jnp.shape(x)),
                                    self.root)
    return ResolveSummary(started=jnp.zeros((), bool), root_depth=zero, decision_depth=zero,
                          children=jnp.full((N, Q), -1, jnp.int32), states=states,
                          chance=jnp.zeros(N, f), held=jnp.zeros((2, N, K), bool),
                          reach=jnp.zeros((2, N * K), f), values=jnp.zeros((2, N * K), f))

  def path(self, actions, length, start=0) -> jax.Array:
    """``[max_length + 1]`` int32: the search's branch from its root, the public state ``start``
    public steps after the deals (``0``, then the public actions and chance outcomes
    ``actions[deals + start:length]``; ``-1`` padding)."""
    L = int(self.game.max_length)
    actions = jnp.asarray(actions, jnp.int32)
    i = jnp.arange(L + 1)
    t = self.deals + start + i - 1  # the match step labelling path entry i
    step = jnp.where((i >= 1) & (t < length), actions[jnp.clip(t, 0, L - 1)], -1)
    return jnp.where(i == 0, 0, step).astype(jnp.int32)

  def search(self, key, actions, length, evaluator_state=None) -> gtcfr_search.SearchResult:
    """The root-anchored search of the decision reached by ``actions [L]`` after ``length``
    steps (traceable; only the public steps after the deals are read); ``evaluator_state``: the
    evaluator's state as data (default ``evaluator.init()``). A re-solving agent's decisions
    search with :meth:`search_decision`."""
    return gtcfr_search.search(self.source, self.config, self.evaluator, self.root_key,
                               self.ranges, key, path=self.path(actions, length),
                               evaluator_state=evaluator_state)

  def search_decision(self, key, summary: ResolveSummary, actions, length, player,
                      evaluator_state=None, config=None) -> tuple:
    """``(search result, next summary)`` of a re-solving agent's decision reached by
    ``actions [L]`` after ``length`` steps, ``player`` acting (traceable; one program for the
    first search, gadget off, and the re-solves); ``config``: the search's configuration
    where it differs from the agent's in what it records (self-play logs leaf queries)."""
    root, ranges, opp_values, start, on = self.resolve_args(summary, actions, length, player)
    config = self.config if config is None else config
    res = gtcfr_search.search(self.source, config, self.evaluator, root, ranges, key,
                              player=player, opp_values=opp_values, alpha=self.alpha,
                              path=self.path(actions, length, start),
                              evaluator_state=evaluator_state, gadget=on)
    return res, self.after_search(res, start, length)

  def resolve_args(self, summary: ResolveSummary, actions, length, player) -> tuple:
    """``(root key, ranges [2, K], opp_values [K], root depth, gadget on)`` of the decision
    reached by ``actions [L]`` after ``length`` steps, from the previous search's ``summary``
    (module docstring; ``player`` may be traced). Before any search, or where the previous
    tree holds no public state below its decision on the way (it always holds the decision's
    children), the post-deal root with the gadget off."""
    src = self.source
    L, K, Q = int(self.game.max_length), src.num_infostates, src.num_children
    actions = jnp.asarray(actions, jnp.int32)
    current = jnp.asarray(length, jnp.int32) - self.deals  # public steps to the decision

    def follow(i, carry):  # node i steps below the previous root on the way to the decision
      node, best, best_depth = carry
      d = summary.root_depth + i
      a = actions[jnp.clip(self.deals + d, 0, L - 1)]
      child = jnp.where((node >= 0) & (d < current),
                        summary.children[jnp.maximum(node, 0), jnp.clip(a, 0, Q - 1)], -1)
      better = (child >= 0) & (d + 1 > summary.decision_depth)
      return (child, jnp.where(better, child, best), jnp.where(better, d + 1, best_depth))

    zero = jnp.zeros((), jnp.int32)
    _, best, depth = jax.lax.fori_loop(0, L, follow, (zero, zero - 1, zero))
    on = summary.started & (best >= 0)
    node = jnp.maximum(best, 0)
    ranges, opp_values = resolve_inputs(summary.reach, summary.values, node * K + jnp.arange(K),
                                        summary.held[:, node], jnp.asarray(player, jnp.int32),
                                        summary.chance[node])
    state = jax.tree_util.tree_map(lambda x: x[node], summary.states)
    M = src.num_histories
    root = rules_source.RulesKey(state=state, reach=jnp.ones((), src.dtype),
                                 edge=jnp.ones(M, src.dtype),
                                 depth=zero, label=zero)
    root = jax.tree_util.tree_map(lambda a, b: jnp.where(on, a, b), root, self.root_key)
    return (root, jnp.where(on, ranges, self.ranges), jnp.where(on, opp_values, 0.0),
            jnp.where(on, depth, 0), on)

  def after_search(self, res: gtcfr_search.SearchResult, start, length) -> ResolveSummary:
    """The summary of search ``res``, rooted ``start`` public steps after the deals, at the
    decision reached after ``length`` steps (the next re-solve starts from it)."""
    tree = res.state.tree
    return ResolveSummary(started=jnp.ones((), bool),
                          root_depth=jnp.asarray(start, jnp.int32),
                          decision_depth=jnp.asarray(length, jnp.int32) - self.deals,
                          children=tree.children, states=tree.keys.state,
                          chance=jnp.asarray(tree.keys.reach, self.config.solver.dtype),
                          held=tree.info_id >= 0, reach=res.node_reach, values=res.node_values)

  def act(self, key, state, position):
    player, private, legal = self.decision(position.state)
    summary = state.summary
    if self.resolve:
      res, summary = self.search_decision(key, summary, position.actions, position.length,
                                          player)
    else:
      res = self.search(key, position.actions, position.length)
    probs = self.read_policy(res, player, private, legal)
    tree = res.state.tree
    full = tree.num_nodes + self.source.num_children > tree.capacity
    return probs, DeviceGTCFRState(nodes=tree.num_nodes.astype(jnp.int32),
                                   full=state.full + full.astype(jnp.int32), summary=summary)

  def decision(self, state) -> tuple:
    """``(player, private, legal [A])`` at a decision ``state``: the acting player (traced), its
    own private state (the other seat's is not read) and the legal mask."""
    g = self.game
    player = jnp.asarray(g.current_player(state), jnp.int32)
    private = jnp.where(player == 1, g.private_index(state, 1), g.private_index(state, 0))
    return player, private, jnp.asarray(g.legal_mask(state), bool)

  def read_policy(self, res, player, private, legal) -> jax.Array:
    """``[A]`` the search's average policy at ``player``'s private state ``private`` of the
    decision (uniform over ``legal [A]`` where it is not a distribution)."""
    K, A = self.source.num_infostates, self.game.num_actions
    row = res.state.focus * K + jnp.asarray(private, jnp.int32)
    probs = jnp.where(player == 1, res.policy[1][row], res.policy[0][row])[..., :A]
    return self.finish(probs, legal)

  @staticmethod
  def finish(probs, legal) -> jax.Array:
    """``[A]`` a policy row ``probs`` restricted to ``legal``, uniform over ``legal`` where it is
    not a distribution (a row the search never updated)."""
    probs = jnp.where(legal, probs, 0.0)
    usable = jnp.all(jnp.isfinite(probs)) & (jnp.sum(probs) > 0)
    return jnp.where(usable, probs, sequence_form.uniform(legal).astype(probs.dtype))

  def memory_array(self, state):
    """int32 ``[2, 2]``: ``(tree nodes, searches that filled the tree)`` for both seats (the
    match referee keeps the largest values, :class:`~jaxgt.evaluation.match.MatchResult`)."""
    row = jnp.stack([state.nodes, state.full]).astype(jnp.int32)
    return jnp.stack([row, row])

  def memory(self, state) -> dict:
    """``{"nodes": n, "capacity": N, "full": f}``: the last search's tree nodes and the searches
    whose tree filled."""
    return {"nodes": int(state.nodes), "capacity": int(self.config.capacity),
            "full": int(state.full)}

  def memory_bytes(self) -> int:
    """Bytes of one search's state (tree, CFR tables, visits; from its shapes, nothing
    computed) and, re-solving, of the summary the agent keeps: a match program holds one per
    match it serves at once."""
    program = SearchProgram(self.source, self.config, self.evaluator, False, None)
    shapes = jax.eval_shape(lambda r: program.init(self.root_key, r, jnp.zeros((), jnp.int32),
                                                   evaluator_state=()), self.ranges)
    kept = jax.eval_shape(self.empty_summary) if self.resolve else ()
    return int(sum(int(np.prod(x.shape)) * x.dtype.itemsize
                   for x in jax.tree_util.tree_leaves((shapes, kept))))
