"""``jaxgt agents``: the agent kinds a spec may name, with their parameters and defaults.

Also the pieces shared by the commands that take agent specs (``match``, ``construct``).
"""

from __future__ import annotations

import argparse

SPEC_HELP = ("AGENT is a spec: name or name(key=value,...) with OpenSpiel-style values, "
             "e.g. random, policy(path=P.npz), oos(iterations=1000,targeting=pst); "
             "`jaxgt agents` lists every kind with its parameters and defaults.")


def add_parser(sub) -> None:
  p = sub.add_parser("agents", help="list agent kinds and their parameters",
                     description=SPEC_HELP)
  p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
  from jaxgt.cli.common import print_json
  specs = catalogue()
  if not args.json:
    print(specs.describe_agents())
    return 0
  print_json({"agents": [
      {"name": name, "usage": kind.usage(), "description": kind.description,
       "parameters": [{"name": p.name, "type": p.type.__name__, "default": p.default,
                       "required": p.required, "choices": list(p.choices) if p.choices else None,
                       "help": p.help} for p in kind.params]}
      for name, kind in sorted(specs.agent_kinds().items())]})
  return 0


def catalogue():
  """:mod:`jaxgt.agents.specs` with every kind registered, the training run's ``sog`` too
  (:mod:`jaxgt.training` registers it)."""
  from jaxgt.agents import specs
  from jaxgt.training import agent_kind
  agent_kind.register()
  return specs


def add_agent_command(sub, name: str, help: str, description: str):
  """A subcommand taking agent specs: its ``--help`` explains specs and lists the agent kinds
  (the listing imports every agent module, so it is built only when the help is printed)."""
  import textwrap
  p = sub.add_parser(name, help=help, description=textwrap.fill(f"{description} {SPEC_HELP}", 80),
                     formatter_class=argparse.RawDescriptionHelpFormatter)
  format_help = p.format_help

  def with_listing() -> str:
    if p.epilog is None:
      listing = "\n".join("  " + line for line in catalogue().describe_agents().splitlines())
      p.epilog = f"agents:\n{listing}"
    return format_help()

  p.format_help = with_listing
  return p


def parse_agents(*texts):
  """The parsed :class:`~jaxgt.agents.specs.AgentSpec` of each text (errors before any game is
  loaded); turns on 64-bit JAX when one of them computes in float64."""
  specs = [catalogue().parse_spec(t) for t in texts]
  if any(s.needs_x64 for s in specs):
    import jax
    jax.config.update("jax_enable_x64", True)
  return specs
