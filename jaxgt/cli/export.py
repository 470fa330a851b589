"""``jaxgt export POLICY --openspiel OUT.json``."""

from __future__ import annotations


def add_parser(sub) -> None:
  p = sub.add_parser("export", help="export a saved policy")
  p.add_argument("policy")
  p.add_argument("--openspiel", metavar="OUT.json", required=True,
                 help="write {game, policy: {info_state_string: [[action, prob], ...]}}")
  p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args) -> int:
  from jaxgt import policy as pol_lib
  from jaxgt.cli.common import check_writable, print_json
  check_writable({"--openspiel": args.openspiel})
  pol, g = pol_lib.load_policy(args.policy)
  pol_lib.export_openspiel(pol, g, args.openspiel)
  infostates = int(sum(g.tree.num_infostates))
  openspiel = pol_lib.openspiel_game_string(g)
  if args.json:
    print_json({"game": g.name, "openspiel": openspiel, "path": args.openspiel,
                "infostates": infostates})
  else:
    print(f"wrote {args.openspiel} ({infostates} information states, game {openspiel})")
  return 0
