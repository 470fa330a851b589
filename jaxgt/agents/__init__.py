"""Online agents sharing one interface (:class:`~jaxgt.agents.base.Agent`).

* :class:`PolicyAgent` plays a fixed tabular policy;
* :class:`~jaxgt.agents.oos.OOSAgent`, :class:`~jaxgt.agents.ismcts.ISMCTSAgent`
  and :class:`~jaxgt.agents.uct.UCTAgent` search with the solvers of
  :mod:`jaxgt.solvers`;
* :class:`~jaxgt.agents.resolving.ContinualResolvingAgent` re-solves with
  :mod:`jaxgt.search`.
"""

from jaxgt.agents.base import Agent, PolicyAgent

__all__ = ["Agent", "PolicyAgent"]
