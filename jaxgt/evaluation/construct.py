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
from typing import Callable

import jax
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
             on_state: Callable[[int, int], None] | None = None) -> ConstructionResult:
  """Constructs the policy for every seed and computes its exact exploitability.

  ``make_agent`` is an agent or a factory (a fresh agent per seed, for agents
  whose memoisation should not be shared between seeds). ``progress(i, seed,
  exploitability)`` is called after the ``i``-th seed, ``on_state`` as in
  :func:`construct_policy` within each seed.
  """
  seeds = tuple(int(s) for s in seeds)
  if not seeds:
    raise ValueError("need at least one seed")
  expl, pols = [], []
  for s in seeds:
    agent = make_agent() if callable(make_agent) and not isinstance(make_agent, Agent) \
        else make_agent
    pol = construct_policy(agent, jax.random.PRNGKey(s), on_state=on_state)
    expl.append(evaluate_policy(agent.game, pol).exploitability)
    pols.append(pol)
    if progress is not None:
      progress(len(expl) - 1, s, float(expl[-1]))
  return ConstructionResult(seeds, np.asarray(expl), tuple(pols))

