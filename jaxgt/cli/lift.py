"""``jaxgt lift P.npz GAME --save OUT.npz``: a saved policy of a quotient game (e.g.
``leduc_poker(suit_isomorphism=true)``) lifted to the full game through the registered quotient
map (:func:`jaxgt.games.quotient_map`, :func:`jaxgt.policy.lift`), with the exploitability of
both policies, which a quotient map keeps."""

from __future__ import annotations

import sys

from jaxgt.cli.common import (PAYOFF, add_max_histories, check_positive, check_writable,
                              load_game, print_json)

EQUAL_ATOL = 1e-9
"""The largest difference of the two exploitabilities (float64) the command reports as equal."""


def add_parser(sub) -> None:
  from jaxgt.games import quotients
  known = "; ".join(f"{q.source} -> {q.target}" for q in quotients())
  p = sub.add_parser("lift", help="lift a quotient game's policy to the full game",
                     description="Plays a policy saved by jaxgt solve --save for a quotient game "
                     "at every information state of the full game GAME that the quotient's state "
                     "stands for, saves that policy, and prints the exploitability of both (equal "
                     f"for a quotient by a symmetry). Known quotient maps: {known}.")
  p.add_argument("policy", metavar="P.npz", help="a policy file of the quotient game")
  p.add_argument("game", metavar="GAME", help="the full game, e.g. leduc_poker")
  p.add_argument("--save", required=True, metavar="OUT.npz", help="write the lifted policy here")
  p.add_argument("--json", action="store_true", help="print one JSON object")
  add_max_histories(p)


def run(args) -> int:
  import jax

  from jaxgt import policy as policy_lib
  from jaxgt.core.evaluate import evaluate
  from jaxgt.games import quotient_map
  from jaxgt.solving import format_mbb, mbb
  check_positive(args, "max_histories")
  check_writable({"--save": args.save})
  header = policy_lib.read_header(args.policy)
  q = quotient_map(header["game"], args.game)
  source = load_game(header["game"], args.max_histories)
  target = load_game(args.game, args.max_histories)
  pol, source = policy_lib.load_policy(args.policy, source)
  lifted = policy_lib.lift(pol, source, target, q.key_map)
  lifted.save(args.save)
  with jax.enable_x64(True):
    r_source = evaluate(source, pol, dtype=jax.numpy.float64)
    r_lifted = evaluate(target, lifted, dtype=jax.numpy.float64)
  diff = r_lifted.exploitability - r_source.exploitability
  if abs(diff) > EQUAL_ATOL:
    print(f"jaxgt: warning: the lifted policy's exploitability differs from the source's by "
          f"{diff:.3e}: {q.description} does not keep it", file=sys.stderr)
  m = mbb(target, r_lifted.exploitability)
  sizes = [len(k) for k in source.infostate_keys], [len(k) for k in target.infostate_keys]
  if args.json:
    print_json({"game": target.name, "source_game": source.name, "policy": args.policy,
                "save": args.save, "map": q.description,
                "exploitability": r_lifted.exploitability,
                "source_exploitability": r_source.exploitability, "mbb_per_hand": m,
                "value": r_lifted.value, "source_value": r_source.value,
                "infostates": sizes[1], "source_infostates": sizes[0],
                "units": {"exploitability": PAYOFF, "source_exploitability": PAYOFF,
                          "value": PAYOFF + " (player 0)", "source_value": PAYOFF + " (player 0)",
                          "mbb_per_hand": "milli-big-blinds per hand"}})
    return 0
  mtxt = f" ({format_mbb(m)} mbb/h)" if m is not None else ""
  print(f"source          {source.name}  {args.policy}  ({sizes[0][0]} + {sizes[0][1]} "
        "information states)")
  print(f"game            {target.name}  {args.save}  ({sizes[1][0]} + {sizes[1][1]} "
        "information states)")
  print(f"map             {q.description}")
  print(f"exploitability  {r_source.exploitability:.9e} (source)  "
        f"{r_lifted.exploitability:.9e} (lifted){mtxt}")
  print(f"value(p0)       {r_source.value:.9f} (source)  {r_lifted.value:.9f} (lifted)")
  return 0
