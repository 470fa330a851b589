"""Monte Carlo CFR by name: outcome and external sampling, and the registry the CLI reads.

``from jaxgt.solvers import mccfr``; ``mccfr.outcome_sampling(epsilon=0.6,
batch=256)`` (:mod:`jaxgt.solvers.mccfr_outcome`) or
``mccfr.external_sampling(batch=256)`` (:mod:`jaxgt.solvers.mccfr_external`)
return frozen :class:`MCCFRSolver` s following the solver protocol
(:mod:`jaxgt.solvers.base`); their policy is the average strategy and their
regret and averaging rules are the CFR engine's
(:mod:`jaxgt.solvers.mccfr_base`).
"""

from __future__ import annotations

from jaxgt.solvers.mccfr_base import MCCFRSolver, MCCFRState
from jaxgt.solvers.mccfr_external import ExternalSampling, external_sampling
from jaxgt.solvers.mccfr_outcome import OutcomeSampling, outcome_sampling

__all__ = ["MCCFRSolver", "MCCFRState", "ExternalSampling", "OutcomeSampling",
           "external_sampling", "outcome_sampling", "SAMPLING_SOLVERS", "make_sampling_solver"]

SAMPLING_SOLVERS = {"mccfr-os": outcome_sampling, "mccfr-es": external_sampling}


def make_sampling_solver(name: str, batch: int = 1, **kwargs) -> MCCFRSolver:
  """A sampling solver by name (``mccfr-os``, ``mccfr-es``) for the CLI."""
  if name not in SAMPLING_SOLVERS:
    raise ValueError(f"unknown sampling solver {name!r}; choose one of {', '.join(SAMPLING_SOLVERS)}")
  if name == "mccfr-es" and "epsilon" in kwargs:
    raise ValueError("epsilon applies to outcome sampling (mccfr-os) only")
  return SAMPLING_SOLVERS[name](batch=batch, **kwargs)
