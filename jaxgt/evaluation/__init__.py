"""Evaluating online agents: head-to-head matches and exact evaluation of composed policies.

* :mod:`jaxgt.evaluation.referee`: the one match walk (traced or a Python
  loop) with a per-decision hook; only the acting agent's ``act`` runs.
* :mod:`jaxgt.evaluation.match`: :func:`play` (many matches as one jitted
  program) and :func:`round_robin` (Lisy et al.'s head-to-head tables).
* :mod:`jaxgt.evaluation.aggregate`: Lisy et al.'s aggregate method, a policy for
  exact exploitability built from an online agent's search statistics.
* :mod:`jaxgt.evaluation.construct`: Schmid et al.'s breadth-first policy construction.
"""

from jaxgt.evaluation.aggregate import AggregateResult, aggregate_policy
from jaxgt.evaluation.construct import construct_policy
from jaxgt.evaluation.match import MatchResult, RoundRobinResult, play, round_robin

__all__ = ["AggregateResult", "MatchResult", "RoundRobinResult", "aggregate_policy",
           "construct_policy", "play", "round_robin"]
