"""``jaxgt agents``: the agent kinds a spec may name, with their parameters and defaults."""

from __future__ import annotations

SPEC_HELP = ("AGENT is a spec: name or name(key=value,...) with OpenSpiel-style values, "
             "e.g. random, policy(path=P.npz), oos(iterations=1000,targeting=pst); "
             "`jaxgt agents` lists every kind with its parameters and defaults.")


def add_parser(sub) -> None:
  sub.add_parser("agents", help="list agent kinds and their parameters",
                 description=SPEC_HELP)


def run(args) -> int:
  del args
  from jaxgt.agents.specs import describe_agents
  print(describe_agents())
  return 0


def wrap(text: str) -> str:
  """``text`` filled to 80 columns (descriptions under ``RawDescriptionHelpFormatter``)."""
  import textwrap
  return textwrap.fill(text, 80)


def epilog() -> str:
  """The agent listing for a command's ``--help``."""
  from jaxgt.agents.specs import describe_agents
  return "agents:\n" + "\n".join("  " + line for line in describe_agents().splitlines())
