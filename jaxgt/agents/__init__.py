"""Online agents (search / re-solving) sharing one interface."""

from jaxgt.agents.base import Agent, PolicyAgent

__all__ = ["Agent", "PolicyAgent"]
