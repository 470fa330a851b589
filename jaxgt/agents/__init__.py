"""Online agents sharing one interface (:class:`~jaxgt.agents.base.Agent`).

* :class:`PolicyAgent` plays a fixed tabular policy;
* :class:`~jaxgt.agents.oos.OOSAgent`, :class:`~jaxgt.agents.ismcts.ISMCTSAgent`
  and :class:`~jaxgt.agents.uct.UCTAgent` search with the solvers of
  :mod:`jaxgt.solvers`;
* :class:`~jaxgt.agents.resolving.ContinualResolvingAgent` re-solves with
  :mod:`jaxgt.search`.

:mod:`jaxgt.agents.specs` parses agent specs (``"oos(iterations=1000)"``) and
holds the registry of agent kinds (:func:`register_agent`).
"""

from jaxgt.agents.base import Agent, PolicyAgent
from jaxgt.agents.specs import (AgentSpec, Param, agent_kinds, describe_agents, make_agent,
                                parse_spec, register_agent)

__all__ = ["Agent", "AgentSpec", "Param", "PolicyAgent", "agent_kinds", "describe_agents",
           "make_agent", "parse_spec", "register_agent"]
