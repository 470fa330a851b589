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

from jaxgt import lazy

# Names resolve on first use (PEP 562): importing one submodule (the estimator names the
# command line's parser lists) does not import every evaluation module.
_EXPORTS = {"AggregateResult": "aggregate", "aggregate_policy": "aggregate",
            "construct_policy": "construct",
            **{name: "device_policy" for name in ("DevicePolicy", "TabularDevicePolicy",
                                                  "fixed_action_policy", "tabular_device_policy",
                                                  "uniform_device_policy")},
            "LocalBRResult": "local_br", "local_best_response": "local_br",
            **{name: "match" for name in ("MatchResult", "RoundRobinResult", "play",
                                          "round_robin")}}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS, globals())
