"""``jaxgt games``, ``jaxgt info GAME`` and ``jaxgt check GAME``."""

from __future__ import annotations

from jaxgt.cli.common import load_game


def add_parser(sub) -> None:
  sub.add_parser("games", help="list registered games")
  p = sub.add_parser("info", help="print the sizes of a game")
  p.add_argument("game")
  p = sub.add_parser("check", help="run the conformance checks on a game")
  p.add_argument("game")


def cmd_games(args) -> int:
  from jaxgt.games import registry
  for name, spec in sorted(registry().items()):
    params = ", ".join(f"{k}={v}" for k, v in spec.params.items())
    print(f"{name:<16} {spec.description}" + (f"  [{params}]" if params else ""))
  return 0


def cmd_info(args) -> int:
  g = load_game(args.game)
  s = g.sizes()
  print(f"game            {g.name}")
  for k in ("histories", "terminals", "infostates_p0", "infostates_p1", "public_states", "actions"):
    print(f"{k:<15} {s[k]}")
  print(f"enumeration     {g.enumeration_seconds:.3f} s")
  print(f"memory          {g.nbytes / 2**20:.2f} MiB")
  print(f"fingerprint     {g.fingerprint}")
  return 0


def cmd_check(args) -> int:
  from jaxgt import games
  g = load_game(args.game)
  report = games.check(g)
  print(f"{g.name}: all checks passed")
  for k, v in report.items():
    print(f"  {k}: {v}")
  return 0
