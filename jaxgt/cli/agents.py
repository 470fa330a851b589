"""``jaxgt agents``: the agent kinds a spec may name, with their parameters and defaults.

Also the pieces shared by the commands that take agent specs (``match``, ``construct``).
"""

from __future__ import annotations

import argparse

SPEC_HELP = ("AGENT is a spec: name or name(key=value,...) with OpenSpiel-style values, "
             "e.g. random, policy(path=P.npz), oos(iterations=1000,targeting=pst); "
             "`jaxgt agents` lists every kind with its parameters and defaults.")


def add_parser(sub) -> None:
  sub.add_parser("agents", help="list agent kinds and their parameters",
                 description=SPEC_HELP)


def run(args) -> int:
  del args
  print(catalogue().describe_agents())
  return 0


def catalogue():
  """:mod:`jaxgt.agents.specs` with every kind registered, the training run's ``sog`` too
  (:mod:`jaxgt.training` registers it)."""
  from jaxgt.agents import specs
  from jaxgt.training import agent_kind
  agent_kind.register()
  return specs


def add_agent_command(sub, name: str, help: str, description: str):
  """A subcommand taking agent specs: its ``--help`` explains specs and lists the agent kinds."""
  import textwrap
  listing = "\n".join("  " + line for line in catalogue().describe_agents().splitlines())
  return sub.add_parser(name, help=help, description=textwrap.fill(f"{description} {SPEC_HELP}", 80),
                        epilog=f"agents:\n{listing}",
                        formatter_class=argparse.RawDescriptionHelpFormatter)


def parse_agents(*texts):
  """The parsed :class:`~jaxgt.agents.specs.AgentSpec` of each text (errors before any game is
  loaded); turns on 64-bit JAX when one of them computes in float64."""
  specs = [catalogue().parse_spec(t) for t in texts]
  if any(s.needs_x64 for s in specs):
    import jax
    jax.config.update("jax_enable_x64", True)
  return specs
