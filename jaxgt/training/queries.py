"""The query solver of Student of Games (Schmid et al. 2023, Algorithm 2
"Solver", "Training Process").

:class:`QuerySolver`'s :meth:`QuerySolver.step` is one jitted program (network parameters as
data): it takes ``solver_batch`` public belief states from the query buffer (uniformly
without replacement, :func:`jaxgt.training.buffers.sample_queries`), solves each by a
GT-CFR search rooted at its public state with its ranges fixed (both players, no gadget;
``SoG(solver_simulations, c)``, ``c`` the config's ``solver_expansions_per_update`` or else
its ``expansions_per_update``, with the current network at the leaves, or with
``solver_leaves = "exact"`` the remaining game solved below them:
:func:`jaxgt.search.evaluator.exact`), writes (PBS, root
counterfactual values, root policy) to the replay buffer (values where the public state's
values are network leaf values, policies where a slot acts), and pushes each solve's own
leaf queries back to the query buffer, on average ``q_recursive`` per solve (picked from the
solve's uniform sample of all its queries: :func:`jaxgt.training.selfplay.pick_queries`).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxgt.core import rng
from jaxgt.nets import gtcfr_evaluator
from jaxgt.nets.encoding import PBS
from jaxgt.search import evaluator as evaluator_lib
from jaxgt.search import gtcfr as gtcfr_search
from jaxgt.training import buffers
from jaxgt.training.selfplay import DTYPE, SelfPlay, pick_queries


@dataclasses.dataclass(frozen=True, eq=False)
class QuerySolver:
  """Static pieces of the query solver (shares the actors' source, evaluator and targets)."""

  actors: SelfPlay

  def __post_init__(self):
    cfg = self.actors.config
    source = self.actors.source
    search_cfg = gtcfr_search.make_config(
        source, simulations=cfg.solver_simulations,
        expansions_per_update=cfg.solver_expansions_per_update or cfg.expansions_per_update,
        capacity=cfg.capacity or None,
        log_queries=cfg.log_queries, value_average=cfg.value_average, dtype=DTYPE)
    object.__setattr__(self, "search_config", search_cfg)
    exact = cfg.solver_leaves == "exact"
    object.__setattr__(self, "evaluator",
                       evaluator_lib.exact(source) if exact else self.actors.evaluator)
    object.__setattr__(self, "smap", gtcfr_evaluator.slot_map(source, self.actors.model.encoding))
    object.__setattr__(self, "step", jax.jit(self._step))

  def _step(self, params, replay: buffers.ReplayBuffer, queries: buffers.QueryBuffer, key):
    """``(replay, queries, metrics)`` after solving one batch of queries (module docstring);
    with fewer queries waiting, the missing entries are solved as padding and dropped."""
    sp = self.actors
    cfg = sp.config
    src = sp.source
    B = cfg.solver_batch
    k_take, k_search, k_keep = rng.split(key, 3)
    queries, pbs, valid = buffers.sample_queries(queries, k_take, B)
    public = jnp.where(valid, pbs.public, 0)
    ranges = gtcfr_evaluator.to_device_order(self.smap, public, pbs.ranges).astype(DTYPE)
    root = jnp.broadcast_to(sp.agent.ranges, ranges.shape)
    ranges = jnp.where(valid[:, None, None], ranges, root)
    exact = cfg.solver_leaves == "exact"
    res = gtcfr_search.search(src, self.search_config, self.evaluator, public, ranges,
                              rng.split(k_search, B),
                              evaluator_state=None if exact else params)
    replay = buffers.add_replay(replay, jax.vmap(sp.examples)(res, ranges), valid)
    qpbs, qvalid = gtcfr_evaluator.query_pbs(sp.model.encoding, src, res.state.queries)
    keep = pick_queries(qvalid & valid[:, None], cfg.q_recursive, k_keep)
    flat = PBS(public=qpbs.public.reshape(-1),
               ranges=qpbs.ranges.reshape((-1,) + qpbs.ranges.shape[2:]).astype(DTYPE))
    queries = buffers.add_queries(queries, flat, keep.reshape(-1))
    metrics = {"solved": jnp.sum(valid, dtype=jnp.int32),
               "recursive_queries": jnp.sum(keep, dtype=jnp.int32)}
    return replay, queries, metrics
