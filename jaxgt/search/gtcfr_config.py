"""The static configuration of a Growing-Tree CFR search: :class:`GTCFRConfig` and its checked
constructor :func:`make_config` (``SoG(simulations, expansions_per_update)`` of Schmid et al.
2023, "Student of Games: A unified learning algorithm for both perfect and imperfect
information games", Algorithm 1): the expansion phase's choices that the paper leaves open
(PUCT's constants, the prior's temperature, virtual losses, chance, ``pi_CFR``) and the regret
phase's CFR rule.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from jaxgt.core.checks import check_choice, check_nonnegative_int, check_positive_int, check_real
from jaxgt.search import device_tree
from jaxgt.search.regret_phase import check_tree_form
from jaxgt.solvers import cfr as cfr_lib


@dataclasses.dataclass(frozen=True)
class GTCFRConfig:
  """Static configuration of a GT-CFR search (``SoG(simulations, expansions_per_update)``).

  The choices Student of Games leaves open (see :func:`make_config`): ``puct_constant``
  (``c`` of PUCT, in units of the game's largest payoff), ``puct_visit_offset``
  (added to an information state's visit count under PUCT's square root),
  ``prior_temperature`` (``T_prior`` of Student of Games' Table S2), ``virtual_loss``
  (each visit of the current phase counts as a loss of ``virtual_loss *
  value_scale``), ``chance`` (how a simulation crosses chance), ``select_policy``
  (which CFR policy ``pi_CFR`` of ``pi_select`` is) and ``value_average`` (the normaliser
  of the averaged node values).

  The defaults (``c = 1``, offset 0, ``T_prior = 1``, virtual loss 1, ``"sample"``,
  ``"average"``) were kept by measurement (``value_average`` then ``"search"``): Leduc,
  ``SoG(100, 1)``, exact leaves, continual re-solving, policy construction, seeds 0-4 paired
  (docs/reproductions.md, "The search's open choices, measured"): today's defaults 60.5 / 81.6
  / 126 mbb/h (min / avg / max);
  ``puct_constant`` 0.25: 55.5 / 79.3 / 100, 4: 54.6 / 76.7 / 128; ``puct_visit_offset`` 1:
  58.5 / 72.0 / 87.7 (seeds 0-9: 58.5 / 87.5 / 116, defaults 60.5 / 90.4 / 131);
  ``prior_temperature`` 2: 52.5 / 73.3 / 89.4; ``select_policy="current"``: 56.2 / 82.9 / 131.
  No variant moved the mean by more than the paired seed-to-seed spread (standard deviation
  of the per-seed differences 6-41 mbb/h). ``virtual_loss`` is inert at ``ceil(c) = 1`` (one
  simulation per phase); ``chance="uniform"`` was not measured. ``value_average`` is
  ``"node"`` by default (``"search"`` before git 9900324): the unbiased average of a node's
  own iterates, it removed the one outlier of ``SoG(1000, 1)`` (seed 4: 9.40 against 38.6
  mbb/h) and is better at ``s = 100`` (seeds 0-9: 53.1 / 68.6 / 139 against 60.5 / 90.4 /
  131, 9 of 10 paired seeds better), worse at ``s = 10`` (548 / 596 / 680 against 477 / 544 /
  587, 8 of 10 worse: a late node's values then come from its first few iterates).
  """

  capacity: int
  simulations: int = 100
  expansions_per_update: float = 1.0
  puct_constant: float = 1.0
  prior_temperature: float = 1.0
  virtual_loss: float = 1.0
  puct_visit_offset: float = 0.0
  chance: str = "sample"  # "sample": by the chance probabilities; "uniform": uniformly
  select_policy: str = "average"  # pi_CFR of pi_select: CFR's "average" or "current" policy
  value_average: str = "node"  # node_values: over the "node"'s or the "search"'s iterations
  # the CFRSolver of the regret phase: its rules, update order, tie rule and averaging sums
  # (default simultaneous CFR+ as in Student of Games, plain sums, no tie rule; alternating:
  # player 0's update, then 1's)
  solver: Any = None
  # leaf queries kept in SearchState.queries, a uniform sample of all of them (0: none)
  log_queries: int = 0
  # the regret phase's form (regret_phase.TREE_FORMS): "auto" the factored form on a rules
  # source's tree, the history form elsewhere
  tree_form: str = "auto"

  @property
  def sims_per_phase(self) -> int:
    return int(math.ceil(self.expansions_per_update))

  @property
  def updates_per_phase(self) -> int:
    return int(math.ceil(1.0 / self.expansions_per_update))

  @property
  def num_phases(self) -> int:
    """GT-CFR iterations: ``s / ceil(c)`` (rounded up)."""
    return int(math.ceil(self.simulations / self.sims_per_phase))


CHANCE_MODES = ("sample", "uniform")
SELECT_POLICIES = ("average", "current")
VALUE_AVERAGES = ("search", "node")


def make_config(source: device_tree.Source, *, simulations: int, expansions_per_update: float = 1.0,
                capacity: int | None = None, puct_constant: float = 1.0,
                prior_temperature: float = 1.0, virtual_loss: float = 1.0,
                puct_visit_offset: float = 0.0, chance: str = "sample",
                select_policy: str = "average", value_average: str = "node", solver=None,
                log_queries: int = 0, tree_form: str = "auto",
                dtype="float64") -> GTCFRConfig:
  """A checked :class:`GTCFRConfig`; ``capacity`` defaults to what ``simulations`` can add
  (capped at the source's public states).

  The expansion phase's choices that Student of Games leaves open. At a decision the simulation
  takes ``pi_select = 1/2 one_hot(argmax_a PUCT(a)) + 1/2 pi_CFR`` with ``PUCT(a) = q(a) -
  virtual_loss * value_scale * v(a) / (n(a) + 1) + puct_constant * value_scale * prior(a) *
  sqrt(sum_b n(b) + puct_visit_offset) / (1 + n(a))``: ``q`` the last iterate's
  counterfactual action values normalised by the opponent's (and chance's) reach, ``n`` the
  visits of the search, ``v`` those of the current expansion phase, ``prior`` the evaluator's
  policy at temperature ``prior_temperature`` (uniform without one).

  Args:
    puct_constant: ``c`` of PUCT (``>= 0``), in units of ``value_scale`` (the largest
      ``|payoff|``).
    puct_visit_offset: ``>= 0`` added to the visit count under the square root (0:
      AlphaZero's form, whose exploration term is zero at an information state's first
      visit, so that visit takes the largest ``q``).
    prior_temperature: ``T_prior > 0`` (Student of Games' Table S2): the prior is ``p ** (1 / T)``
      renormalised (a softmax of the logits at temperature ``T``).
    virtual_loss: ``>= 0``, in units of ``value_scale`` per visit of the current phase.
    chance: ``"sample"`` (a chance node's outcome by its probabilities given the sampled
      history) or ``"uniform"`` (uniformly among its outcomes).
    select_policy: ``pi_CFR`` of ``pi_select``: CFR's ``"average"`` policy (Student of Games,
      "Search via Growing-Tree CFR") or its ``"current"`` one (regret matching's iterate).
    value_average: the normaliser of the averaged self-play values of a node
      (:attr:`SearchResult.node_values`, the next re-solve's constraints): ``"node"``
      (default) the weight of the iterations it was in the tree, or ``"search"`` the whole
      search's averaging weight (the iterations before the node was added count as zero
      values; on a tree that does not grow both agree).
    solver: the regret phase's CFR rule: a :class:`~jaxgt.solvers.cfr.CFRSolver` (any
      rule of the family, e.g. ``jaxgt.discounted_cfr(dtype="float64")``, with its update
      order, tie rule and averaging sums), or the name of one
      (:func:`jaxgt.solvers.cfr.make_solver`) with the search's defaults: simultaneous
      updates, plain sums and no tie rule, in ``dtype`` (the searches were measured so;
      the tie rule changes which trees grow); default ``"cfr+"``.
    tree_form: the regret phase's form of the tree: ``"auto"`` (default) the factored form
      (per node ``[K]`` ranges and values, :mod:`jaxgt.search.factored_form`) where the
      source's nodes are private pairs (a rules source), else the history form;
      ``"history"`` or ``"factored"`` to choose (the same iterates, to rounding).
  """
  simulations = check_positive_int("simulations", simulations)
  c = check_real("expansions_per_update", expansions_per_update, 0, math.inf, lo_open=True)
  if capacity is None:
    capacity = min(1 + source.num_children * (simulations + 1 + source.max_public_depth),
                   max(source.num_public_states, 1 + source.num_children))
  capacity = device_tree.check_capacity(source, capacity)
  check_choice("chance", chance, CHANCE_MODES)
  check_choice("select_policy", select_policy, SELECT_POLICIES)
  check_choice("value_average", value_average, VALUE_AVERAGES)
  check_tree_form(source, tree_form)
  if solver is None or isinstance(solver, str):
    solver = cfr_lib.make_solver(solver or "cfr+", alternating=False, dtype=dtype,
                                 compensated=False, exact_ties=False)
  if not isinstance(solver, cfr_lib.CFRSolver):
    raise ValueError(f"solver must be a CFRSolver or the name of one, got {solver!r}")
  return GTCFRConfig(capacity=capacity, simulations=simulations, expansions_per_update=c,
                     puct_constant=check_real("puct_constant", puct_constant, 0),
                     prior_temperature=check_real("prior_temperature", prior_temperature, 0,
                                                  lo_open=True),
                     virtual_loss=check_real("virtual_loss", virtual_loss, 0),
                     puct_visit_offset=check_real("puct_visit_offset", puct_visit_offset, 0),
                     chance=chance, select_policy=select_policy,
                     value_average=value_average, solver=solver,
                     log_queries=check_nonnegative_int("log_queries", log_queries),
                     tree_form=tree_form)

