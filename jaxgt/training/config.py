"""Training configuration of Student of Games' sound self-play (Schmid et al. 2023, Algorithm 2 and
Table S2): :class:`TrainConfig`, the named presets and ``--config FILE`` (JSON).

A config fixes every static size of the training programs (actors ``G``, search
simulations, buffer capacities, batch sizes), so one config compiles each part once.

Presets:

* ``scotland_yard``: Table S2's Scotland Yard column where jaxgt has the setting
  (learner: SGD, batch 1024, alpha_init 0.1, d 0.5, T_decay 2M, w_p 0.05, w_v 1, 5 updates
  per example, replay 1M; q_search 0.3, q_recursive 0.1, p_td1 0, epsilon 0, greedy
  never, T_prior 1). Not from the table (it gives none): the network widths (Table S1's
  6 x 512 MLP is for the full map; 4 x 512 here), SoG(400, 1) searches and the actor and
  solver batch widths (the paper's distributed run does not transfer to one host).
* ``leduc``: small settings for a 2-core CPU budget: per iteration 16 actors with SoG(10, 1)
  searches, 16 query solves of SoG(10, 0.1) (100 CFR iterations on a tree grown by 10
  simulations: the CFR iterations of the paper's SoG(100, 1) training solves) and 16 learner
  steps (batch 128); on average 1 query per search and 0.2 per solve go to the query buffer
  (Table S2's chess column), a little more than is solved. The learner's window holds
  131,072 examples (about the hour's last 55 minutes of data, 39 new examples an iteration),
  drawn uniformly: ``max_updates`` is 1e9, no bound in practice, because a bound of 64 left
  fewer than 1% of the window drawable by the hour's end (the newest few hundred examples:
  the window had become a queue); the learning rate halves every 160,000 steps. A learner
  step costs about 1 ms, so the hour is the actors' and solver's (87,552 learner steps on the
  quiet 2-core machine); against a window of 8,192 with 2 steps an iteration and a bound of
  64, SoG(100, 1) with the hour's network went from 174 to 129 mbb/h (exact leaves 57.1) and
  SoG(1000, 1) from 90 to 67 (exact 9.4); with uniform draws the hour reaches 122 and 44.
  Measured on the shared 2-core machine (load 3 to 5; about 20 s of compilation, then 15 to
  30 iterations): 0.56 to 0.89 s per iteration (solver 85%),
  against 0.23 s with SoG(10, 1) solves, 0.45 s with SoG(10, 0.25), 0.73 s with SoG(30, 1),
  4.4 s with SoG(100, 1) and 8.0 s with SoG(100, 1) searches and solves. Policy weight
  ``w_p = 0.01`` (Table S2's HUNL value): with ``w_p = 1`` the policy term (KL about 0.3-1)
  outweighs the value term (Huber in units of the largest payoff, about 0.001-0.005) and the
  network fits its own value targets to about 0.9 chips; with 0.01, about 0.4
  (``examples/value_error.py``).
* ``tiny``: the smallest useful run (tests, Kuhn).
* ``liars_dice``: a device game too large to enumerate played through its rules
  (``liars_dice(numdice=2)``, :class:`jaxgt.training.loop.DeviceTrainer`): per iteration 4
  actors with re-solving SoG(4, 1) searches (each writing its root's example) sending on
  average 2 leaf queries each, 8 query solves of SoG(4, 0.25) and 2 learner steps (batch 32,
  each example drawn at most 10 times). Measured on the shared 2-core machine (load about 5)
  on LD(2,2), 8 minutes: 55 s of compilation in the first iteration, then 4.7 s per iteration
  (solver 77%, actors 22%): 3.8 searches/s and 2.2 query solves/s in their parts, 0.42
  learner steps/s over the wall clock; 182 learner steps, the loss falling from 30 to 6.9
  (value 0.016 to 0.003), 32 of every batch of 32 drawable. ``w_p = 0.01``, as for
  ``leduc``: on an LD(2,2) run's replay buffer, 3,000 more steps with ``w_p = 1`` left the
  network's held-out expected-value error at 0.21 (payoffs +-1), with 0.01 it fell to 0.14.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib

from jaxgt.core.checks import (check_choice, check_nonnegative_int, check_positive_int,
                               check_real)
from jaxgt.nets.cvpn import VALUE_SPACES
from jaxgt.search.gtcfr_config import VALUE_AVERAGES
from jaxgt.training.learner import OPTIMIZERS, LearnerConfig

SOLVER_LEAVES = ("network", "exact")
"""What the query solves value their leaves with (:attr:`TrainConfig.solver_leaves`)."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
  """Static settings of a training run (Schmid et al. 2023, Table S2's names in comments)."""

  # network
  hidden: tuple = (128, 128)  # CVPN trunk widths
  embed_dim: int = 0  # learned public-state embedding size (0: none)
  # what the value head fits (jaxgt.nets.cvpn.VALUE_SPACES): "expected" values given the
  # information state in units of the largest payoff, or the "counterfactual" values themselves
  # (before; a saved run without this entry is read with "counterfactual", from_saved)
  value_space: str = "expected"
  # self-play actors (Algorithm 2, "Actor")
  num_actors: int = 8  # G self-play games advancing together (a batch axis)
  simulations: int = 10  # s of SoG(s, c) for self-play searches
  expansions_per_update: float = 1.0  # c of SoG(s, c)
  capacity: int = 0  # search-tree nodes (0: what the simulations can add)
  alpha: float = 0.5  # modified re-solving gadget's mixing
  # normaliser of a node's averaged values (jaxgt.search.gtcfr.make_config), in self-play, the
  # query solves and the trained agent: "node", the search's default ("search" before; a saved
  # run without this entry is read with "search", from_saved)
  value_average: str = "node"
  epsilon: float = 0.1  # exploration: (1 - epsilon) pi + epsilon uniform
  greedy_after: int = 1_000_000  # decisions of a game after which the move is pi's argmax
  q_search: float = 0.1  # leaf queries per self-play search sent to the query buffer, on average
  # size of each search's uniform sample of its leaf queries (the candidates for q_search and
  # q_recursive, which cannot exceed it)
  log_queries: int = 8
  # query solver (Algorithm 2, "Solver")
  solver_batch: int = 8  # queries solved per solver call
  solver_simulations: int = 10  # s of the query solves
  # c of the query solves' SoG(solver_simulations, c) (0: expansions_per_update); below 1 a
  # solve runs ceil(1 / c) CFR iterations per simulation on a tree grown by fewer simulations
  solver_expansions_per_update: float = 0.0
  q_recursive: float = 0.1  # a query solve's own leaf queries pushed back, on average
  # what the query solves value their leaves with: "network" (Algorithm 2) or "exact" (the
  # remaining game solved for the current ranges, jaxgt.search.evaluator.exact; compiled games
  # only): targets that do not bootstrap from the network, a diagnostic that separates the
  # targets' quality from the network's fit
  solver_leaves: str = "network"
  p_td1: float = 0.0  # p_td1: probability a main-line example gets the game's outcome as its
  # value target (TD(1), held slots only) instead of its search's values (selfplay docstring)
  # buffers
  replay_capacity: int = 4096  # replay buffer (sliding window)
  query_capacity: int = 1024  # query buffer
  # learner (Table S2)
  batch_size: int = 64
  huber_delta: float = 1.0
  policy_weight: float = 1.0  # w_p
  alpha_init: float = 1e-3
  decay: float = 0.5  # d
  decay_steps: int = 100_000  # T_decay
  max_updates: float = 5.0  # max gradient updates per example
  optimizer: str = "adam"
  # the loop's fixed ratios: per loop iteration
  actor_steps: int = 1  # actor decisions (each: G searches)
  solver_steps: int = 1  # query-solver calls (each: solver_batch solves)
  learner_steps: int = 1  # gradient steps
  # bookkeeping
  checkpoint_every: int = 100  # learner steps between checkpoints
  keep_checkpoints: int = 0  # the newest checkpoints kept, older ones deleted (0: all kept)
  # with keep_checkpoints: also keep the first checkpoint in every window of this many learner
  # steps (milestones to evaluate later; 0: none)
  keep_checkpoint_every: int = 0
  eval_every: int = 100  # learner steps between exact exploitability evaluations (0: never)
  eval_simulations: int = 10  # s of the evaluated SoG(s, 1) policy

  def __post_init__(self):
    hidden = tuple(self.hidden)
    if not hidden:
      raise ValueError("hidden must list at least one layer width")
    for h in hidden:
      check_positive_int("hidden layer width", h)
    object.__setattr__(self, "hidden", tuple(int(h) for h in hidden))
    check_nonnegative_int("embed_dim", self.embed_dim)
    for name in ("num_actors", "simulations", "log_queries", "solver_batch",
                 "solver_simulations", "replay_capacity", "query_capacity", "batch_size",
                 "decay_steps", "actor_steps", "learner_steps", "checkpoint_every",
                 "eval_simulations"):
      check_positive_int(name, getattr(self, name))
    for name in ("capacity", "solver_steps", "greedy_after", "eval_every", "keep_checkpoints",
                 "keep_checkpoint_every"):
      check_nonnegative_int(name, getattr(self, name))
    if self.keep_checkpoint_every and not self.keep_checkpoints:
      raise ValueError("keep_checkpoint_every needs keep_checkpoints > 0 (with 0 every "
                       "checkpoint is kept)")
    check_real("expansions_per_update", self.expansions_per_update, 0, math.inf, lo_open=True)
    check_real("solver_expansions_per_update", self.solver_expansions_per_update, 0, math.inf)
    for name in ("alpha", "epsilon", "p_td1"):
      check_real(name, getattr(self, name), 0, 1)
    for name in ("q_search", "q_recursive"):  # expected counts out of log_queries candidates
      check_real(name, getattr(self, name), 0, self.log_queries)
    if self.solver_batch > self.query_capacity:
      raise ValueError(f"solver_batch {self.solver_batch} exceeds query_capacity "
                       f"{self.query_capacity}")
    check_choice("value_average", self.value_average, VALUE_AVERAGES)
    check_choice("value_space", self.value_space, VALUE_SPACES)
    check_choice("solver_leaves", self.solver_leaves, SOLVER_LEAVES)
    check_choice("optimizer", self.optimizer, OPTIMIZERS)
    self.learner()  # its own checks

  def learner(self) -> LearnerConfig:
    """The :class:`jaxgt.training.learner.LearnerConfig` of this run."""
    return LearnerConfig(batch_size=self.batch_size, huber_delta=self.huber_delta,
                         policy_weight=self.policy_weight, alpha_init=self.alpha_init,
                         decay=self.decay, decay_steps=self.decay_steps,
                         max_updates=self.max_updates, optimizer=self.optimizer)

  def to_json(self) -> dict:
    out = dataclasses.asdict(self)
    out["hidden"] = list(self.hidden)
    return out


PRESETS = {
    "tiny": TrainConfig(hidden=(16,), num_actors=2, simulations=2, log_queries=2,
                        solver_batch=2, solver_simulations=2, q_search=1.0, replay_capacity=64,
                        query_capacity=16, batch_size=8, checkpoint_every=2, eval_every=0,
                        eval_simulations=2),
    "leduc": TrainConfig(hidden=(128, 128), num_actors=16, simulations=10, log_queries=8,
                         q_search=1.0, solver_batch=16, solver_simulations=10,
                         solver_expansions_per_update=0.1, q_recursive=0.2,
                         replay_capacity=131_072, query_capacity=2048,
                         batch_size=128, alpha_init=1e-3, decay_steps=160_000, max_updates=1e9,
                         policy_weight=0.01, actor_steps=1, solver_steps=1, learner_steps=16,
                         checkpoint_every=800, eval_every=1600, eval_simulations=10),
    "liars_dice": TrainConfig(hidden=(128, 128), num_actors=4, simulations=4, log_queries=4,
                              q_search=2.0, solver_batch=8, solver_simulations=4,
                              solver_expansions_per_update=0.25, q_recursive=0.2,
                              replay_capacity=4096, query_capacity=512, batch_size=32,
                              policy_weight=0.01, learner_steps=2, max_updates=10.0, checkpoint_every=50,
                              eval_every=0),
    "scotland_yard": TrainConfig(hidden=(512, 512, 512, 512), simulations=400, log_queries=32,
                                 q_search=0.3, q_recursive=0.1, p_td1=0.0, epsilon=0.0,
                                 alpha=0.5, solver_simulations=400, replay_capacity=1_000_000,
                                 query_capacity=100_000, batch_size=1024, optimizer="sgd",
                                 alpha_init=0.1, decay=0.5, decay_steps=2_000_000,
                                 policy_weight=0.05, max_updates=5.0, eval_every=0),
}
"""The named presets (module docstring)."""


def preset(name: str) -> TrainConfig:
  """The preset ``name`` (``ValueError`` naming the choices otherwise)."""
  if name not in PRESETS:
    raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
  return PRESETS[name]


def from_dict(values: dict, base: TrainConfig | None = None) -> TrainConfig:
  """``base`` (default :class:`TrainConfig()`) with the entries of ``values`` replaced;
  unknown keys are refused."""
  if not isinstance(values, dict):
    raise ValueError(f"a training config is a JSON object, got {type(values).__name__}")
  names = {f.name for f in dataclasses.fields(TrainConfig)}
  unknown = sorted(set(values) - names)
  if unknown:
    raise ValueError(f"unknown training config keys {unknown}; known: {sorted(names)}")
  return dataclasses.replace(base if base is not None else TrainConfig(), **values)


SAVED_DEFAULTS = {"value_average": "search", "value_space": "counterfactual"}
"""Entries a saved run's config may lack, at the values such a run was trained with (the
defaults of its time)."""


def from_saved(values: dict) -> TrainConfig:
  """The :class:`TrainConfig` of a saved run's config dict (``config.json``, checkpoint
  metadata): :func:`from_dict` with an entry the run's version did not write at the value it
  then had (:data:`SAVED_DEFAULTS`), not today's default."""
  if not isinstance(values, dict):
    raise ValueError(f"a training config is a JSON object, got {type(values).__name__}")
  return from_dict({**SAVED_DEFAULTS, **values})


def load_config(path) -> TrainConfig:
  """The :class:`TrainConfig` of the JSON file ``path`` (``ValueError`` if unreadable)."""
  path = pathlib.Path(path)
  try:
    values = json.loads(path.read_text())
  except (OSError, json.JSONDecodeError) as e:
    raise ValueError(f"cannot read training config {str(path)!r}: {e}") from e
  return from_dict(values)
