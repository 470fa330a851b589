"""Modified continual re-solving as an agent, on the device public tree (Schmid et al. 2023).

:class:`ContinualResolvingAgent` (Schmid et al. 2023, "Modified Continual Re-solving"):
a player's first decision at public state ``s`` solves the game's root public
state with both (known) root ranges on the single branch from the root to
``s`` (off-branch public states are leaves) plus ``depth_limit`` public
levels below ``s``; every later decision re-solves from ``s_prev``, the
deepest public state on the way to ``s`` that the previous search's tree
holds (below the previous decision, so our range there is the one we
actually played), with the (``alpha``-modified) safe re-solving gadget and
the previous search's summary there: our range, the opponent's range under
the average policy and the opponent's average self-play counterfactual
values (Schmid et al. 2023, "Self-play Values as Re-solving Constraints").

Every re-solve is ``iterations`` public-tree CFR+ iterations (simultaneous
updates, the regret phase of GT-CFR alone: :func:`jaxgt.search.gtcfr.solve_tree`)
on a :class:`jaxgt.search.device_tree.DeviceTree` built by
:func:`~jaxgt.search.device_tree.grow_branch` and
:func:`~jaxgt.search.device_tree.expand_below`; the leaves are valued by
the exact evaluator (:func:`jaxgt.search.evaluator.exact`: the remaining game
solved for the current ranges, warm-started across iterations) or a given
one. Nothing is extracted on the host: one compiled program serves every
public state, root and range, and the agent is traceable (jitted matches
through :mod:`jaxgt.evaluation.referee`). It is the search of
:class:`jaxgt.agents.gtcfr_agent.GTCFRAgent` with a fixed depth-limited tree in
place of a grown one, so it shares that agent's state, re-solving summaries
and memoisation (one search per previous state and public state, what
:func:`jaxgt.evaluation.construct.construct_policy` needs).
"""

from __future__ import annotations

import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.agents.gtcfr_agent import GTCFRAgent
from jaxgt.core.checks import (check_decision_history, check_key, check_nonnegative_int,
                               check_positive_int)
from jaxgt.core.game_tree import CompiledGame, infostate_histories
from jaxgt.core.public_tree import build_public_tree
from jaxgt.search import device_tree
from jaxgt.search import evaluator as evaluator_lib
from jaxgt.search import gtcfr as gtcfr_search
from jaxgt.search.gadget import DEFAULT_ALPHA
from jaxgt.solvers import cfr as cfr_lib


def resolving_capacity(game: CompiledGame, depth_limit: int) -> int:
  """Nodes of the largest re-solving tree of ``game``: over every public state ``s``, the
  game's root, the children of every public state on the branch to ``s`` and the public
  states at most ``depth_limit`` levels below ``s`` (a re-solve rooted lower holds fewer)."""
  ptree = build_public_tree(game)
  best = 0
  for s in range(ptree.num_public_states):
    n, u = 1, s
    while int(ptree.parent[u]) >= 0:
      u = int(ptree.parent[u])
      n += len(ptree.children[u])
    level = [s]
    for _ in range(depth_limit):
      level = [c for v in level for c in ptree.children[v]]
      n += len(level)
    best = max(best, n)
  return best


class ContinualResolvingAgent(GTCFRAgent):
  """Modified continual re-solving (Schmid et al. 2023) with exact or user leaf values, on the
  device tree.

  Args:
    game: a :class:`CompiledGame`.
    depth_limit: public levels below the current public state before the leaves.
    iterations: CFR iterations per re-solve.
    solver: CFR-family solver (default alternating CFR+ in float64; simultaneous updates
      with ``alternating=False``).
    evaluator: ``"equilibrium"`` (exact leaf values, the continuation solved by ``solver``
      warm-started one iteration per query; default), a
      :class:`jaxgt.search.evaluator.Evaluator` or a callable ``(LeafInput) -> values``.
    alpha: opponent-range mixing of the modified gadget (``None``: exact gadget).
    chunk: must be 1 (the leaves are valued at every iteration); kept for the agent specs.
    capacity: nodes of the re-solving trees (default :func:`resolving_capacity`).

  Deterministic: ``key`` only names the searches. ``act`` re-solves once per public state
  and previous search (memoised on concrete arguments).
  """

  def __init__(self, game: CompiledGame, *, depth_limit: int = 2, iterations: int = 1000,
               solver=None, evaluator: str | Callable | evaluator_lib.Evaluator = "equilibrium",
               alpha: float | None = DEFAULT_ALPHA, chunk: int = 1, cache_size: int = 4096,
               capacity: int | None = None):
    if not isinstance(game, CompiledGame):
      raise ValueError(f"ContinualResolvingAgent needs a CompiledGame (jaxgt.load(...)), got "
                       f"{type(game).__name__}")
    if not (evaluator == "equilibrium" or callable(evaluator)
            or isinstance(evaluator, evaluator_lib.Evaluator)):
      raise ValueError(f"evaluator must be 'equilibrium', an Evaluator or a callable "
                       f"(LeafInput) -> values, got {evaluator!r}")
    self.depth_limit = check_positive_int("depth_limit", depth_limit)
    self.iterations = check_nonnegative_int("iterations", iterations)
    self.chunk = check_positive_int("chunk", chunk)
    if self.chunk != 1:
      raise ValueError(f"chunk must be 1 on the device tree (leaves valued every iteration), "
                       f"got {chunk}")
    solver = solver if solver is not None else cfr_lib.cfr_plus(dtype="float64")
    self.solver = solver
    dtype = str(jnp.dtype(solver.dtype))
    source = device_tree.source_from_game(game, dtype)
    if capacity is None:
      capacity = resolving_capacity(game, self.depth_limit)
    # the re-solving tree does not grow, so both value normalisers agree; "search" skips the
    # per-iteration node weights
    config = gtcfr_search.make_config(source, simulations=1, capacity=capacity, solver=solver,
                                      value_average="search", dtype=dtype)
    if evaluator == "equilibrium":  # the continuation solved with the re-solving solver
      evaluator = evaluator_lib.exact(source, solver=solver)
    self._setup(game, source, config, evaluator, True, alpha, cache_size)
    self.public_tree = build_public_tree(game)
    self._build_fn = jax.jit(functools.partial(_resolving_tree, source, capacity,
                                               self.depth_limit))
    tables = source.tables
    acting = np.asarray(tables.player)  # [P, M]
    self._acting = np.where(np.any(acting == 0, 1), 0, np.where(np.any(acting == 1, 1), 1, -1))

  @property
  def name(self) -> str:
    return f"continual_resolving(depth_limit={self.depth_limit}, iterations={self.iterations})"

  def _run_search(self, root, ranges, key, path, player=None, opp_values=None, gadget=True):
    """``iterations`` CFR+ iterations on the re-solving tree from ``root`` along ``path``."""
    del key  # deterministic
    tree, focus = self._build_fn(root, path)
    res = gtcfr_search.solve_tree(self.source, self.config, self.evaluator, tree, ranges,
                                  self.iterations, player=player, opp_values=opp_values,
                                  alpha=self.alpha if player is not None else None,
                                  gadget=gadget)
    return res.replace(state=res.state.replace(focus=focus))

  def policy_table(self, key, batch: int = 64) -> tuple:
    """``(sigma0 [I0, A], sigma1 [I1, A])`` (NumPy): the policy construction of
    :func:`jaxgt.evaluation.construct.construct_policy` with the re-solves of one public
    depth batched ``batch`` at a time (one vmapped call; every search still conditioned on
    the player's previous search). ``key`` names the searches."""
    batch = check_positive_int("batch", batch)
    key = check_key(key)
    tree = self.game.tree
    A = tree.num_actions
    public = np.asarray(tree.history_public)
    parent = np.asarray(self.source.public_parent)
    depth = np.asarray(self.source.public_depth)
    slot = np.asarray(self.source.history_info)
    out = []
    for p in (0, 1):
      reps = infostate_histories(tree, p)  # one history per information state
      acting = sorted(set(public[reps].tolist()), key=lambda u: (depth[u], u))
      on = set(acting)
      prev = {}
      for u in acting:  # the player's previous decision on the way to u
        v = int(parent[u])
        while v >= 0 and v not in on:
          v = int(parent[v])
        prev[u] = v
      start = self.init(jax.random.fold_in(key, p))
      after, rows = {}, {}
      for d in sorted(set(int(depth[u]) for u in acting)):
        group = [u for u in acting if depth[u] == d]
        for lo in range(0, len(group), batch):
          chunk = group[lo:lo + batch]
          pad = chunk + [chunk[-1]] * (batch - len(chunk))
          states = jax.tree_util.tree_map(
              lambda *x: jnp.stack(x), *[start if prev[u] < 0 else after[prev[u]] for u in pad])
          r, st = self._batch_fn()(states, jnp.asarray(pad, jnp.int32),
                                   jnp.full(batch, p, jnp.int32))
          r = np.asarray(r)
          for b, u in enumerate(chunk):
            rows[u] = r[b]
            after[u] = jax.tree_util.tree_map(lambda x, b=b: x[b], st)
          self.num_searches += len(chunk)
      sig = np.zeros((tree.players[p].num_infostates, A))
      for I, h in enumerate(reps):
        sig[I] = rows[int(public[h])][slot[p, h], :A]
      out.append(sig)
    return tuple(out)

  def _batch_fn(self):
    """Jitted, vmapped ``(states [B], publics [B], players [B]) -> (rows [B, K, A], states
    after [B])``: the searches of ``players`` at ``publics`` (first decisions and re-solves in
    one program)."""
    if "_batch" not in self.__dict__:
      K = self.source.num_infostates

      def one(state, public, player):
        res = self._decision_search(state, public, player)
        policy = jnp.where(player == 0, res.policy[0], res.policy[1])
        rows = jax.lax.dynamic_slice_in_dim(policy, res.state.focus * K, K)
        return rows, self.after_search(state, res, public)

      self.__dict__["_batch"] = jax.jit(jax.vmap(one))
    return self.__dict__["_batch"]

  def act(self, key, state, history):
    hc = None if isinstance(history, jax.core.Tracer) else int(np.asarray(history))
    if hc is not None:  # argument checks on concrete histories
      check_decision_history(self.game.tree, hc)
      p = int(self.game.tree.player[hc])
      if not isinstance(state.public, jax.core.Tracer) and bool(state.started):
        prev = int(self._acting[int(state.public)])
        if prev != p:
          raise ValueError(f"agent state belongs to player {prev}, not {p}")
    return super().act(key, state, history)


def _resolving_tree(source, capacity, depth_limit, root, path):
  """``(tree, decision node)``: the branch ``path`` from ``root`` with its off-branch leaves and
  ``depth_limit`` levels below the decision (:func:`device_tree.expand_below`)."""
  tree = device_tree.init_tree(source, capacity, root)
  tree, focus = device_tree.grow_branch(source, tree, path)
  return device_tree.expand_below(source, tree, focus, depth_limit), focus
