"""``jaxgt export POLICY --openspiel OUT.json``."""

from __future__ import annotations


def add_parser(sub) -> None:
  p = sub.add_parser("export", help="export a saved policy")
  p.add_argument("policy")
  p.add_argument("--openspiel", metavar="OUT.json", required=True,
                 help="write {game, policy: {info_state_string: [[action, prob], ...]}}")


def run(args) -> int:
  from jaxgt import policy as pol_lib
  from jaxgt.cli.common import check_writable
  check_writable({"--openspiel": args.openspiel})
  pol, g = pol_lib.load_policy(args.policy)
  pol_lib.export_openspiel(pol, g, args.openspiel)
  print(f"wrote {args.openspiel} ({sum(g.tree.num_infostates)} information states, "
        f"game {pol_lib.openspiel_game_string(g)})")
  return 0
