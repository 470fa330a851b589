"""Modified continual re-solving as an agent (``003``, "Modified Continual Re-solving").

:class:`ContinualResolvingAgent`: a player's first decision solves the game
from the root public state with both (known) root ranges; every later
decision at public state ``s`` re-solves from the previous search's summary
at ``s_prev``, the deepest public state on the way to ``s`` that the previous
search covered (``s`` itself when it lay inside that tree; always below the
previous decision, so our range there is the one we actually played). The
subgame is ``s_prev``'s single branch down to ``s`` (off-branch public states
are leaves) plus ``depth_limit`` public levels below ``s``; the modified
gadget mixes in the opponent's previous range. Summaries (our range, the
opponent's range under the average policy, and the opponent's average
self-play counterfactual values, ``003`` "Self-play Values as Re-solving
Constraints") are read off the search lazily at whichever public state the
next decision needs (:func:`jaxgt.search.resolving.child_summaries`).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any, Callable

import jax.numpy as jnp
import numpy as np

from jaxgt.agents.base import Agent
from jaxgt.core import sequence_form
from jaxgt.core.checks import check_nonnegative_int, check_positive_int
from jaxgt.core.compiler import CompiledGame
from jaxgt.core.public_tree import build_public_tree, public_belief_state
from jaxgt.games.base import TERMINAL
from jaxgt.search.gadget import check_alpha
from jaxgt.search.resolving import (DEFAULT_ALPHA, Summary, branch_leaves, child_summaries,
                                    default_evaluator, resolve)
from jaxgt.search.subgame import Subgame, extract
from jaxgt.solvers import cfr as cfr_lib


# ------------------------------------------------------------------ the agent
@dataclasses.dataclass(frozen=True, eq=False)
class _Start:
  """Agent state before the player's first decision of a match."""

  key: Any = None


@dataclasses.dataclass(frozen=True, eq=False)
class _After:
  """Agent state after a decision at ``public_state``: its re-solve, from which
  the summary at any later public state inside the searched tree is read."""

  player: int
  public_state: int
  subgame: Subgame
  result: Any
  _cache: dict = dataclasses.field(default_factory=dict)

  def summary(self, u: int) -> Summary:
    if u not in self._cache:
      self._cache[u] = child_summaries(self.subgame, self.player, self.result, [u])[u]
    return self._cache[u]

  def covers(self) -> set:
    """Non-terminal public states strictly below ``public_state`` in the searched tree."""
    if "covers" not in self._cache:
      sub = self.subgame
      pt = sub.full
      hof = sub.history_of[sub.history_of >= 0]
      hof = hof[np.asarray(pt.game.tree.player)[hof] != TERMINAL]
      inside = set(int(u) for u in np.unique(np.asarray(pt.game.tree.history_public)[hof]))
      below = set()
      stack = list(pt.children[self.public_state])
      while stack:
        u = stack.pop()
        if u in inside:
          below.add(int(u))
          stack.extend(pt.children[u])
      self._cache["covers"] = below
    return self._cache["covers"]


@dataclasses.dataclass(frozen=True, eq=False)
class Search:
  """One re-solve at a public state."""

  public_state: int  # where we act
  player: int  # who acts
  root: int  # the subgame's root
  # {full infostate index: [A] probabilities} for every information state of player at public_state
  policy: dict
  state: Any  # the agent state after acting there (holds this re-solve)
  subgame: Subgame  # the re-solved :class:`Subgame`


class ContinualResolvingAgent(Agent):
  """Modified continual re-solving (``003``) with exact or user leaf values.

  Args:
    game: a :class:`CompiledGame`.
    depth_limit: public levels below the current public state before the leaves.
    iterations: CFR iterations per re-solve.
    solver: CFR-family solver (default CFR+ in float64).
    evaluator: ``"equilibrium"`` (exact equilibrium leaf values, default) or a
      callable ``(subgame, solver) -> LeafEvaluator``.
    alpha: opponent-range mixing of the modified gadget (``None``: exact gadget).
    chunk: leaf evaluator queried every ``chunk`` iterations.

  Deterministic: ``key`` is unused. ``act`` re-solves once per public state
  and previous search; searches are memoised on the agent, so calling ``act``
  for every information state of a public state with the same state costs one
  re-solve (:func:`jaxgt.evaluation.construct.construct_policy`).
  """

  def __init__(self, game: CompiledGame, *, depth_limit: int = 2, iterations: int = 1000,
               solver=None, evaluator: str | Callable = "equilibrium",
               alpha: float | None = DEFAULT_ALPHA, chunk: int = 1, cache_size: int = 4096):
    if evaluator != "equilibrium" and not callable(evaluator):
      raise ValueError(f"evaluator must be 'equilibrium' or a callable (subgame, solver) -> "
                       f"LeafEvaluator, got {evaluator!r}")
    self.game = game
    self.pt = build_public_tree(game)
    self.depth_limit = check_positive_int("depth_limit", depth_limit)
    self.iterations = check_nonnegative_int("iterations", iterations)
    self.solver = solver if solver is not None else cfr_lib.cfr_plus(dtype="float64")
    self.evaluator = evaluator
    self.alpha = check_alpha(alpha)
    self.chunk = check_positive_int("chunk", chunk)
    self.num_searches = 0
    self._memo: OrderedDict = OrderedDict()
    self._cache_size = check_positive_int("cache_size", cache_size)
    self._subgames: dict = {}
    self._start_ranges = None

  def init(self, key):
    return _Start(key)

  def act(self, key, state, history):
    tree = self.game.tree
    history = int(history)
    if not 0 <= history < tree.num_histories:
      raise ValueError(f"history {history} out of range for {self.game.name}")
    p = int(tree.player[history])
    if p not in (0, 1):
      raise ValueError(f"history {history} is not a decision node (player {p})")
    s = self.search(state, int(tree.history_public[history]), p)
    return jnp.asarray(s.policy[int(tree.infostate[history])]), s.state

  def search(self, state, public_state: int, player: int) -> Search:
    """The (memoised) re-solve at ``public_state`` for ``player`` from ``state``."""
    key = (id(state), int(public_state), int(player))
    hit = self._memo.get(key)
    if hit is not None and hit[0] is state:
      self._memo.move_to_end(key)
      return hit[1]
    out = self._search(state, int(public_state), int(player))
    self._memo[key] = (state, out)
    if len(self._memo) > self._cache_size:
      self._memo.popitem(last=False)
    return out

  def _search(self, state, s: int, p: int) -> Search:
    pt = self.pt
    if isinstance(state, _Start) or state is None:
      root, summ = 0, None
    elif isinstance(state, _After):
      if state.player != p:
        raise ValueError(f"agent state belongs to player {state.player}, not {p}")
      # Root: the deepest public state on the way to ``s`` that the previous
      # search covered (``s`` itself when it lay inside that search's tree).
      covered = state.covers()
      root = s
      while root >= 0 and root not in covered:
        root = int(pt.parent[root])
      if root < 0:
        raise ValueError(f"public state {s} does not follow the agent's previous decision "
                         f"at {state.public_state}")
      summ = state.summary(root)
    else:
      raise ValueError(f"not a state of this agent: {type(state).__name__}")
    sub, ev = self._subgame(root, s)
    if summ is None:  # first decision: the root public state with its known ranges
      ranges = self._root_ranges()
      ours, opp_values, opp = ranges[p], None, ranges[1 - p]
    else:  # opp_values None: we never reach the root, any policy is as good (no gadget)
      ours, opp_values, opp = summ.our_range, summ.opp_values, summ.opp_range
    # Without opponent values there is no gadget, so alpha is unused.
    res = resolve(sub, self.solver, p, ours, opp_values, opp, evaluator=ev,
                  iterations=self.iterations, chunk=self.chunk, alpha=self.alpha)
    self.num_searches += 1
    avg = np.asarray(res.policy[p], np.float64)
    A = self.game.tree.num_actions
    full_of_sub = sub.full_infostate[p]
    mine = np.flatnonzero(np.asarray(self.game.tree.players[p].public_state) == s)
    pos = {int(f): k for k, f in enumerate(full_of_sub) if f >= 0}
    policy = {int(I): avg[pos[int(I)], :A] for I in mine}
    return Search(s, p, root, policy, _After(p, s, sub, res), sub)

  def _root_ranges(self):
    """Both players' ranges ``([K0], [K1])`` at the root public state (computed once;
    they do not depend on the policy there, so the uniform policy gives them)."""
    if self._start_ranges is None:
      tree = self.game.device_tree("float64")
      self._start_ranges = tuple(np.asarray(r) for r in public_belief_state(
          self.pt, 0, sequence_form.uniform_policy(tree, jnp.float64)))
    return self._start_ranges

  def _subgame(self, root: int, s: int):
    """``(Subgame, LeafEvaluator)`` of the re-solve at ``s`` from ``root``, built once: the
    same evaluator object lets :func:`resolve` reuse its compiled program."""
    key = (root, s)
    if key not in self._subgames:
      sub = extract(self.pt, root, leaves=branch_leaves(self.pt, root, s, self.depth_limit))
      ev = (default_evaluator(sub, self.solver) if self.evaluator == "equilibrium"
            else self.evaluator(sub, self.solver))
      self._subgames[key] = (sub, ev)
    return self._subgames[key]

