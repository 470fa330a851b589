"""Exact evaluation of search agents by policy construction (Schmid et al. 2023, supplement).

A search agent's play at a state can depend on its earlier searches in the
same match, so it has no fixed policy to evaluate. Schmid et al. 2023 ("Exploitability
in Leduc Poker and Small Scotland Yard Map") constructs one: pick a seed, run
the search at every public state breadth-first so that every search is
conditioned on the searches at its predecessors, compose the policies the
searches return, and compute the exploitability of the composition exactly;
repeat over seeds and report min/avg/max.

:func:`construct_policy` does this for any :class:`~jaxgt.agents.base.Agent`:
for each player ``p`` it calls ``agent.act`` at every information state of
``p`` in breadth-first order (the compiled order: by number of own earlier
decisions), at one of its histories, with the agent state returned by the
act at ``p``'s own parent information state (``parent_seq // A``; the
information states of ``p``'s first decisions start from one
``agent.init(key)`` per player and seed), and writes the returned ``[A]``
probabilities into that information state's row. An information state's
search thus sees exactly the searches of the decisions that led to it. Keys:
``fold_in(fold_in(key, p), I)`` for information state ``I`` of ``p``.

For the continual re-solving agent (:class:`jaxgt.agents.resolving.ContinualResolvingAgent`)
the searches depend on public information only and the agent memoises them,
so the same loop costs one re-solve per public state (every information state
of the public state reuses it); ``agent.num_searches`` counts them.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import policy as policy_lib
from jaxgt.agents.base import Agent
from jaxgt.core import sequence_form
from jaxgt.core.checks import PROB_ATOL, check_shape
from jaxgt.core.game_tree import CompiledGame, infostate_histories
from jaxgt.core.evaluate import evaluate as evaluate_policy


def construct_policy(agent: Agent, key: jax.Array, *, atol: float = PROB_ATOL,
                     on_state: Callable[[int, int], None] | None = None):
  """The composed policy ``(sigma0 [I0, A], sigma1 [I1, A])`` (NumPy float64) of ``agent``.

  ``on_state(done, total)`` is called after each information state's search
  (progress; ``total = I0 + I1``).

  Raises ``ValueError`` if the agent returns probabilities of the wrong
  shape, or (:func:`jaxgt.policy.validate` within ``atol``) non-finite or
  negative, on illegal actions, or not summing to one. The rows are then
  renormalised exactly (negatives and illegal actions within ``atol`` set to
  zero).
  """
  game: CompiledGame = agent.game
  tree = game.tree
  A = tree.num_actions
  out = []
  total = sum(tree.num_infostates)
  for p in (0, 1):
    pt = tree.players[p]
    n = pt.num_infostates
    parent_seq = np.asarray(pt.parent_seq)
    hist = infostate_histories(tree, p)
    kp = jax.random.fold_in(key, p)
    start = agent.init(jax.random.fold_in(kp, n))
    after = [None] * n
    sig = np.zeros((n, A))
    for I in range(n):  # compiled order is breadth-first over own decisions
      par = int(parent_seq[I])
      st = start if par == n * A else after[par // A]
      probs, after[I] = agent.act(jax.random.fold_in(kp, I), st, int(hist[I]))
      check_shape(f"the agent's probabilities at {game.infostate_keys[p][I]!r}", probs, (A,))
      sig[I] = np.asarray(probs, np.float64)
      if on_state is not None:
        on_state(I + 1 + (tree.num_infostates[0] if p else 0), total)
    out.append(sig)
  policy_lib.validate(game, out, atol=atol)
  out = [np.where(pt.legal, np.maximum(sig, 0.0), 0.0) for pt, sig in zip(tree.players, out)]
  return tuple(sequence_form.safe_div(sig, sig.sum(-1, keepdims=True)) for sig in out)


@dataclasses.dataclass(frozen=True)
class ConstructionResult:
  """Exploitabilities (game units) of the policies constructed for each seed."""

  seeds: tuple  # the seeds
  exploitability: np.ndarray  # [S] exact exploitability (NashConv / 2) per seed
  policies: tuple  # per seed, the composed (sigma0, sigma1)

  @property
  def min(self) -> float:
    return float(np.min(self.exploitability))

  @property
  def avg(self) -> float:
    return float(np.mean(self.exploitability))

  @property
  def max(self) -> float:
    return float(np.max(self.exploitability))


def evaluate(make_agent: Callable[[], Agent] | Agent, seeds=(0,),
             progress: Callable[[int, int, float], None] | None = None,
             on_state: Callable[[int, int], None] | None = None, *,
             game: CompiledGame | None = None) -> ConstructionResult:
  """Constructs the policy for every seed and computes its exact exploitability.

  ``make_agent`` is an agent or a factory (a fresh agent per seed, for agents
  whose memoisation should not be shared between seeds). ``progress(i, seed,
  exploitability)`` is called after the ``i``-th seed, ``on_state`` as in
  :func:`construct_policy` within each seed. An agent playing a device game through its rules
  (:class:`~jaxgt.agents.device_gtcfr.DeviceGTCFRAgent`) is constructed by
  :func:`construct_rules_policy` on ``game``, the same rules enumerated (default: enumerated
  here, once).
  """
  from jaxgt.agents.device_gtcfr import DeviceGTCFRAgent
  seeds = tuple(int(s) for s in seeds)
  if not seeds:
    raise ValueError("need at least one seed")
  expl, pols = [], []
  for s in seeds:
    agent = make_agent() if callable(make_agent) and not isinstance(make_agent, Agent) \
        else make_agent
    if isinstance(agent, DeviceGTCFRAgent):
      if game is None:
        from jaxgt.core.compiler import compile_game
        game = compile_game(agent.game)
      pol = construct_rules_policy(agent, jax.random.PRNGKey(s), game=game, on_state=on_state)
      expl.append(evaluate_policy(game, pol).exploitability)
    else:
      pol = construct_policy(agent, jax.random.PRNGKey(s), on_state=on_state)
      expl.append(evaluate_policy(agent.game, pol).exploitability)
    pols.append(pol)
    if progress is not None:
      progress(len(expl) - 1, s, float(expl[-1]))
  return ConstructionResult(seeds, np.asarray(expl), tuple(pols))


def construct_rules_policy(agent, key: jax.Array, *, game: CompiledGame | None = None,
                           batch: int = 64, on_state: Callable[[int, int], None] | None = None):
  """The policy ``(sigma0 [I0, A], sigma1 [I1, A])`` (NumPy float64) that a search agent playing
  a device game through its rules (:class:`~jaxgt.agents.device_gtcfr.DeviceGTCFRAgent`) plays,
  as a policy of ``game``, the same rules enumerated (default
  :func:`jaxgt.core.compiler.compile_game` of ``agent.game``): Schmid et al. 2023's policy
  construction for an agent whose search depends on public information only.

  Such an agent reads the acting player's private state from a search that depends on the
  public steps since the deals (and, re-solving, on the summaries of its own earlier
  searches, public too), so every information state of a public state reads one search: the
  construction runs one search per public state where a player acts (key ``fold_in(key,
  public state)``, ``batch`` public states per vmapped call) and reads each information
  state's row at its first history's private state. A root-anchored agent's searches are
  independent; a re-solving agent's search at a public state of player ``p`` starts from the
  summary of ``p``'s search at ``p``'s previous decision on the way there (from an empty one
  at ``p``'s first decisions), so each player's public states are searched breadth-first, by
  the number of ``p``'s earlier decisions, as :func:`construct_policy` does. Exact
  exploitability of a device-game agent on every game small enough to enumerate
  (``jaxgt.core.evaluate.evaluate(game, policy)``). ``on_state(done, total)`` after each batch
  (public states). ``ValueError`` for an agent of another kind or a ``game`` enumerated from
  other rules.
  """
  from jaxgt.agents.device_gtcfr import DeviceGTCFRAgent
  from jaxgt.core.compiler import compile_game
  if not isinstance(agent, DeviceGTCFRAgent):
    raise ValueError(f"construct_rules_policy reads the searches of an agent of a device game "
                     f"(DeviceGTCFRAgent), got {type(agent).__name__}: construct_policy for "
                     "agents of an enumerated game")
  rules = agent.game
  if game is None:
    game = compile_game(rules)
  elif not isinstance(game, CompiledGame) or getattr(game.game, "game_string", None) is None \
      or game.game.game_string() != rules.game_string():
    raise ValueError(f"game must be {rules.game_string()} enumerated from its rules, got "
                     f"{getattr(game, 'name', type(game).__name__)}")
  batch = int(batch)
  if batch < 1:
    raise ValueError(f"batch must be positive, got {batch}")
  tree = game.tree
  L = int(rules.max_length)
  A = tree.num_actions
  parent, action = np.asarray(tree.parent), np.asarray(tree.action)

  def paths(hs):  # [n, L] actions from the root to each history (-1 after it), [n] lengths
    depth = np.asarray(tree.depth)[hs]
    out = np.full((len(hs), L), -1, np.int32)
    h = np.array(hs, np.int64)
    for d in range(int(depth.max(initial=0)) - 1, -1, -1):
      at = depth > d
      out[at, d] = action[h[at]]
      h = np.where(at, parent[h], h)
    return out, depth.astype(np.int32)

  # first history of each information state, and the public state it lies in
  firsts = [infostate_histories(tree, p) for p in (0, 1)]
  public_of = [np.asarray(tree.history_public)[f] for f in firsts]
  searched, slot = np.unique(np.concatenate(public_of), return_inverse=True)
  rep = np.empty(len(searched), np.int64)  # one history per searched public state
  rep[slot] = np.concatenate(firsts)
  rep_actions, rep_length = paths(rep)

  if agent.resolve:
    batches = _resolving_searches(agent, key, tree, searched, rep, rep_actions, rep_length,
                                  batch)
  else:
    batches = _anchored_searches(agent, key, searched, rep_actions, rep_length, batch)
  focus, policies = _collect(len(searched), batches, on_state)
  _, private_rows = _rules_programs(agent)
  K = agent.source.num_infostates
  out = []
  for p in (0, 1):
    hs = firsts[p]
    acts, length = paths(hs)
    priv, legal = [], []
    for lo in range(0, len(hs), 4096):
      idx = np.minimum(np.arange(lo, lo + 4096), len(hs) - 1)
      a, b = jax.device_get(private_rows(jnp.asarray(acts[idx]), jnp.asarray(length[idx])))
      m = min(4096, len(hs) - lo)
      priv.append(np.asarray(a)[:m])
      legal.append(np.asarray(b)[:m])
    priv, legal = np.concatenate(priv), np.concatenate(legal)
    s = np.searchsorted(searched, public_of[p])
    probs = policies[p][s, focus[s] * K + priv][:, :A]
    out.append(np.asarray(jax.vmap(agent.finish)(probs, legal), np.float64))
  policy_lib.validate(game, out)
  return tuple(sequence_form.safe_div(sig, sig.sum(-1, keepdims=True)) for sig in out)


@functools.lru_cache(maxsize=8)
def _rules_programs(agent):
  """The jitted programs :func:`construct_rules_policy` runs for ``agent`` (compiled once per
  agent): a batch of searches read as ``(focus [B], policies)``, and the acting player's private
  state and the legal mask at decision histories given by their actions."""
  rules = agent.game

  @jax.jit
  def search_rows(keys, acts, length, evaluator_state):
    res = jax.vmap(agent.search, in_axes=(0, 0, 0, None))(keys, acts, length, evaluator_state)
    return res.state.focus, res.policy

  @jax.jit
  def private_rows(acts, length):  # [B] the acting player's private state, [B, A] legal mask
    def one(a, n):
      _, private, legal = agent.decision(
          jax.lax.fori_loop(0, n, lambda t, s: rules.step(s, a[t]), rules.init()))
      return private, legal
    return jax.vmap(one)(acts, length)

  return search_rows, private_rows


def _collect(n: int, batches, on_state) -> tuple:
  """``(focus [n], (policy0, policy1))`` (NumPy) from ``batches`` of ``(positions [m], focus
  [B], policies [B, ...])``, the first ``m`` rows of each batch at those positions among the
  ``n`` searched public states (:func:`construct_rules_policy`; ``on_state`` after each)."""
  focus, policies, done = np.zeros(n, np.int64), None, 0
  for idx, f, pol in batches:
    f, pol = jax.device_get((f, pol))
    if policies is None:
      policies = [np.zeros((n,) + np.shape(x)[1:], np.asarray(x).dtype) for x in pol]
    m = len(idx)
    focus[idx] = np.asarray(f)[:m]
    for p in (0, 1):
      policies[p][idx] = np.asarray(pol[p])[:m]
    done += m
    if on_state is not None:
      on_state(done, n)
  return focus, policies


def _anchored_searches(agent, key, searched, rep_actions, rep_length, batch):
  """The batches (:func:`_collect`) of the root-anchored searches at the public states
  ``searched``, ``batch`` at a time (the last padded: one program)."""
  search_rows, _ = _rules_programs(agent)
  evaluator_state = agent.evaluator.init()  # data: one compilation for every state
  n = len(searched)
  keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.asarray(searched, jnp.int32))
  for lo in range(0, n, batch):
    idx = np.minimum(np.arange(lo, lo + batch), n - 1)
    f, pol = search_rows(keys[idx], jnp.asarray(rep_actions[idx]), jnp.asarray(rep_length[idx]),
                         evaluator_state)
    yield idx[:min(batch, n - lo)], f, pol


def _resolving_searches(agent, key, tree, searched, rep, rep_actions, rep_length, batch):
  """The batches (:func:`_collect`) of a re-solving agent's searches at the public states
  ``searched``: each is player ``p``'s, where ``p`` acts, from the summary of ``p``'s search at
  its previous decision, level by level (``p``'s earlier decisions), ``batch`` at a time."""
  resolve_rows = _resolving_program(agent)
  evaluator_state = agent.evaluator.init()
  n = len(searched)
  players = np.asarray(tree.player)
  player = players[rep]
  parent, public = np.asarray(tree.parent), np.asarray(tree.history_public)
  position = {int(u): i for i, u in enumerate(searched)}
  prev = np.full(n, -1, np.int64)  # the position of the acting player's previous decision
  for i, h in enumerate(rep):
    a = int(parent[h])
    while a >= 0 and players[a] != player[i]:
      a = int(parent[a])
    prev[i] = -1 if a < 0 else position[int(public[a])]
  level = np.zeros(n, np.int64)  # the acting player's earlier decisions
  for i in range(n):
    j = prev[i]
    while j >= 0:
      level[i], j = level[i] + 1, prev[j]
  keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(jnp.asarray(searched, jnp.int32))
  row_of = np.full(n, -1, np.int64)  # each searched state's row in its level's summaries
  first = agent.empty_summary()
  previous = None  # the summaries after the last level's searches, stacked
  for lv in range(int(level.max(initial=-1)) + 1):
    at = np.flatnonzero(level == lv)
    outs = []
    for lo in range(0, len(at), batch):
      idx = at[np.minimum(np.arange(lo, lo + batch), len(at) - 1)]  # padded: one program
      if previous is None:
        start = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (len(idx),) + x.shape),
                                       first)
      else:
        rows = jnp.asarray(row_of[prev[idx]])
        start = jax.tree_util.tree_map(lambda x: x[rows], previous)
      f, pol, after = resolve_rows(keys[idx], start, jnp.asarray(rep_actions[idx]),
                                   jnp.asarray(rep_length[idx]),
                                   jnp.asarray(player[idx], jnp.int32), evaluator_state)
      m = min(batch, len(at) - lo)
      outs.append(jax.tree_util.tree_map(lambda x, m=m: x[:m], after))
      yield idx[:m], f, pol
    row_of[at] = np.arange(len(at))
    previous = jax.tree_util.tree_map(lambda *xs: jnp.concatenate(xs), *outs)


@functools.lru_cache(maxsize=8)
def _resolving_program(agent):
  """A re-solving agent's batch of decisions for :func:`_resolving_searches`: ``(focus [B],
  policies, next summaries [B])``."""

  @jax.jit
  def resolve_rows(keys, summaries, acts, length, players, evaluator_state):
    def one(k, summ, a, n, p):
      res, after = agent.search_decision(k, summ, a, n, p, evaluator_state)
      return res.state.focus, res.policy, after
    return jax.vmap(one)(keys, summaries, acts, length, players)

  return resolve_rows
