"""Evaluating online agents: head-to-head matches and exact evaluation of composed policies.

* :mod:`jaxgt.evaluation.referee`: the one match walk (traced or a Python
  loop) with a per-decision hook; only the acting agent's ``act`` runs.
* :mod:`jaxgt.evaluation.match`: :func:`play` (many matches as one jitted
  program) and :func:`round_robin` (Lisy et al.'s head-to-head tables).
* :mod:`jaxgt.evaluation.aggregate`: Lisy et al.'s aggregate method, a policy for
  exact exploitability built from an online agent's search statistics.
* :mod:`jaxgt.evaluation.construct`: Schmid et al.'s breadth-first policy construction.
* :mod:`jaxgt.evaluation.device_policy`: device policies, ``policy(states, player) -> [B, A]``
  (a strategy as a batched JAX function), and one made from a tabular policy.
* :mod:`jaxgt.evaluation.local_br`: Lisy and Bowling's local best response, a lower bound on a
  device policy's exploitability in poker games too large for exact best response.
"""

from jaxgt.evaluation.aggregate import AggregateResult, aggregate_policy
from jaxgt.evaluation.construct import construct_policy
from jaxgt.evaluation.device_policy import (DevicePolicy, TabularDevicePolicy,
                                            fixed_action_policy, tabular_device_policy,
                                            uniform_device_policy)
from jaxgt.evaluation.local_br import LocalBRResult, local_best_response
from jaxgt.evaluation.match import MatchResult, RoundRobinResult, play, round_robin

__all__ = ["AggregateResult", "DevicePolicy", "LocalBRResult", "MatchResult", "RoundRobinResult",
           "TabularDevicePolicy", "aggregate_policy", "construct_policy", "fixed_action_policy",
           "local_best_response", "play", "round_robin", "tabular_device_policy",
           "uniform_device_policy"]
