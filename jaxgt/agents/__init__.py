"""Online agents sharing one interface (:class:`~jaxgt.agents.base.Agent`).

* :class:`PolicyAgent` plays a fixed tabular policy; :class:`~jaxgt.agents.explore.Explore`
  wraps an agent with epsilon-uniform exploration;
* :class:`~jaxgt.agents.oos_agent.OOSAgent`, :class:`~jaxgt.agents.ismcts_agent.ISMCTSAgent`
  and :class:`~jaxgt.agents.uct_agent.UCTAgent` search with the solvers of
  :mod:`jaxgt.solvers`;
* :class:`~jaxgt.agents.resolving.ContinualResolvingAgent` re-solves with
  :mod:`jaxgt.search`; :class:`~jaxgt.agents.gtcfr_agent.GTCFRAgent` searches with Growing-Tree
  CFR, on a game too large to enumerate :class:`~jaxgt.agents.device_gtcfr.DeviceGTCFRAgent`
  (the tree grown from the rules) as :class:`~jaxgt.agents.device_search.DeviceSearchAgent`
  plays OOS and ISMCTS there.

:mod:`jaxgt.agents.specs` is the catalogue of agent kinds (:func:`register_agent`)
and parses agent specs (``"oos(iterations=1000)"``) written in the grammar of
:mod:`jaxgt.agents.spec_grammar`, whose :func:`params_from` reads a kind's parameters
from its agent class and solver.
"""

from jaxgt import lazy

# Names resolve on first use (PEP 562): importing one submodule, e.g. the spec
# grammar the command line reads, does not import every agent and search module.
_EXPORTS = {"Agent": "base", "PolicyAgent": "base", "Explore": "explore",
            **{name: "specs" for name in ("AgentSpec", "Doc", "Param", "agent_kinds",
                                          "describe_agents", "make_agent", "params_from",
                                          "parse_spec", "register_agent")}}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy.exports(__name__, _EXPORTS, globals())
