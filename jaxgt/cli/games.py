"""``jaxgt games``, ``jaxgt info GAME`` and ``jaxgt check GAME``.

``info`` decides from a size estimate, before any enumeration, whether the
game is enumerable here (its histories against ``--max-histories`` and, for
device games, their memory against the available memory); an enumerable game
is compiled and its exact sizes printed, any other gets the estimate in
seconds. ``check`` runs the conformance checks on sampled trajectories of the
game's rules (a device game's own, or a compiled game's through
``compiled.rules()``) and, with ``--openspiel``, replays the same number of
trajectories in OpenSpiel in lockstep (:func:`jaxgt.core.lockstep.lockstep`).
"""

from __future__ import annotations

import math
import sys
import time

from jaxgt.cli.common import (MAX_HISTORIES, add_max_histories, check_positive, device_info,
                              print_json, size_message)
from jaxgt.games.size import format_count

EXAMPLES_SHOWN = 10


def add_parser(sub) -> None:
  p = sub.add_parser("games", help="list registered games")
  p.add_argument("--json", action="store_true", help="print one JSON object")
  p = sub.add_parser("info", help="sizes of a game, or an estimate where it is too large")
  p.add_argument("game", help="a registered game string or openspiel:<pyspiel game string>")
  p.add_argument("--json", action="store_true", help="print one JSON object")
  p.add_argument("--max-histories", type=int, default=MAX_HISTORIES,
                 help=f"the enumeration limit (default {MAX_HISTORIES:,})")
  p = sub.add_parser("check", help="conformance checks on sampled trajectories "
                                   "(and an OpenSpiel lockstep)")
  p.add_argument("game")
  p.add_argument("--trajectories", type=int, default=1000,
                 help="sampled trajectories (default 1000)")
  p.add_argument("--seed", type=int, default=0, help="seed of the sampled trajectories")
  p.add_argument("--openspiel", metavar="OPENSPIEL_GAME", default=None,
                 help="replay the trajectories in this pyspiel game ('auto': the game's own "
                      "OpenSpiel string)")
  p.add_argument("--json", action="store_true", help="print one JSON object")
  add_max_histories(p)


OPENSPIEL_PREFIX = ("openspiel:GAME", "any two-player game of OpenSpiel in pyspiel's game-string "
                    "syntax, e.g. openspiel:goofspiel(num_cards=3) (needs the open_spiel package)")


def cmd_games(args) -> int:
  from jaxgt.games import registry
  games = [{"name": name, "description": spec.description, "parameters": dict(spec.params)}
           for name, spec in sorted(registry().items())]
  if args.json:
    print_json({"games": games, "openspiel": OPENSPIEL_PREFIX[1]})
    return 0
  for g in games:
    params = ", ".join(f"{k}={_show(v)}" for k, v in g["parameters"].items())
    print(f"{g['name']:<16} {g['description']}" + (f"  [{params}]" if params else ""))
  print(f"{OPENSPIEL_PREFIX[0]:<16} {OPENSPIEL_PREFIX[1]}")
  return 0


def _show(value) -> str:
  """A parameter default as a game string writes it (``true``/``false`` for booleans)."""
  return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _estimate(game, max_histories: int):
  """``(estimate dict or None, GameTooLargeError or None)``: the size estimate and, where it
  says the game is too large to enumerate here, why (the same refusal rule as
  :func:`jaxgt.compile_game`'s)."""
  from jaxgt.core.expand import bytes_per_history, check_size
  from jaxgt.core.playout import estimate_size
  from jaxgt.games.device import DeviceGame
  from jaxgt.games.size import REFUSE_FACTOR, GameTooLargeError, SizeEstimate, estimate_histories
  known = getattr(game, "num_histories", None)  # counted already (OpenSpiel imports)
  if isinstance(known, int) and known > 0:
    return {"log10_histories": math.log10(known), "histories": known, "exact": True}, None
  if isinstance(game, DeviceGame):
    t0 = time.perf_counter()
    e = estimate_size(game, paths=4096, seed=0)
    est = SizeEstimate(log10_histories=e["log10_histories"], paths=e["paths"],
                       longest_path=e["longest_path"], truncated=e["truncated"],
                       seconds=time.perf_counter() - t0)
  else:
    est = estimate_histories(game, seconds=5.0)
  out = {"log10_histories": est.log10_histories, "histories": float(f"{est.histories:.4g}"),
         "exact": False, "paths": est.paths, "longest_path": est.longest_path,
         "truncated": est.truncated, "seconds": round(est.seconds, 3)}
  if isinstance(game, DeviceGame):
    out["bytes_per_history"] = bytes_per_history(game)
    try:
      check_size(game, est, max_histories, REFUSE_FACTOR)
    except GameTooLargeError as e:
      return out, e
  elif est.log10_histories > math.log10(REFUSE_FACTOR * max_histories):
    return out, GameTooLargeError(
        f"{game.game_string()}: about {format_count(est.log10_histories)} histories "
        f"(random-path estimate over {est.paths:,} paths), over max_histories={max_histories:,}",
        game=game.game_string(), limit=max_histories, log10_histories=est.log10_histories,
        detail=f"random-path estimate over {est.paths:,} paths")
  return out, None


def info(text: str, max_histories: int = MAX_HISTORIES, *, progress: bool = False) -> dict:
  """What ``jaxgt info`` reports of game string ``text`` (see :func:`cmd_info`)."""
  from jaxgt.core.compiler import compile_game
  from jaxgt.games import make_from_string
  from jaxgt.games.size import GameTooLargeError
  t0 = time.perf_counter()
  doc = {"game": text, "openspiel": None, "enumerable": False, "rules": None,
         "actions": None, "max_histories": max_histories, "over_limit": False, "estimate": None,
         "reason": None, "sizes": None}

  def refused(e):
    doc.update(reason=size_message(e), over_limit=e.memory_bytes is None)

  try:
    game = make_from_string(text, max_histories)
  except GameTooLargeError as e:  # an OpenSpiel import counts its histories first
    refused(e)
    doc.update(rules="openspiel", openspiel=_openspiel_string(text),
               seconds=round(time.perf_counter() - t0, 3))
    if e.counted is not None:
      doc["estimate"] = {"log10_histories": math.log10(e.counted), "histories": e.counted,
                         "exact": False, "at_least": True}
    return doc
  from jaxgt.games.device import DeviceGame
  doc.update(game=game.game_string(), openspiel=game.openspiel_game_string(),
             rules="device" if isinstance(game, DeviceGame) else
             "openspiel" if text.strip().startswith("openspiel:") else "python",
             actions=int(game.num_actions))
  doc["estimate"], error = _estimate(game, max_histories)
  if error is not None:
    refused(error)
  else:
    try:
      g = compile_game(game, max_histories=max_histories, progress=progress)
    except GameTooLargeError as e:
      refused(e)
    else:
      doc.update(enumerable=True, sizes=g.sizes(),
                 enumeration_seconds=round(g.enumeration_seconds, 3), memory_bytes=int(g.nbytes),
                 fingerprint=g.fingerprint)
  doc["seconds"] = round(time.perf_counter() - t0, 3)
  return doc


def _openspiel_string(text: str) -> str:
  """The pyspiel string of an ``openspiel:`` game (its turn-based form if simultaneous)."""
  from jaxgt.games.openspiel_import import load_pyspiel_game, pyspiel_module
  pyspiel = pyspiel_module()
  os_game = load_pyspiel_game(text.strip()[len("openspiel:"):])
  if os_game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
    return f"turn_based_simultaneous_game(game={os_game})"
  return str(os_game)


def cmd_info(args) -> int:
  check_positive(args, "max_histories")
  doc = info(args.game, args.max_histories, progress=not args.json)
  doc["units"] = {"seconds": "seconds", "enumeration_seconds": "seconds", "memory_bytes": "bytes"}
  doc.update(device_info())
  if args.json:
    print_json(doc)
    return 0
  print(f"game            {doc['game']}")
  if doc["enumerable"]:
    s = doc["sizes"]
    for k in ("histories", "terminals", "infostates_p0", "infostates_p1", "public_states",
              "actions"):
      print(f"{k:<15} {s[k]}")
    print(f"enumeration     {doc['enumeration_seconds']:.3f} s")
    print(f"memory          {doc['memory_bytes'] / 2**20:.2f} MiB")
    print(f"fingerprint     {doc['fingerprint']}")
    print("enumerable      yes")
  else:
    est = doc["estimate"]
    if est is not None and est.get("at_least"):
      print(f"histories       more than {est['histories'] - 1:,} (counting stopped at the limit)")
    elif est is not None:
      how = ("counted" if est["exact"] else
             f"random-path estimate over {est['paths']:,} paths, {est['seconds']:.1f} s")
      print(f"histories       ~{format_count(est['log10_histories'])} ({how})")
    if doc["actions"] is not None:
      print(f"actions         {doc['actions']}")
    print(f"enumerable      no: {doc['reason']}")
  print(f"openspiel       {doc['openspiel'] or '-'}")
  print(f"device          {doc['device']} ({doc['backend']} x{doc['device_count']})")
  return 0


def rules_of(game, max_histories: int = MAX_HISTORIES):
  """The device rules of game definition ``game``: a device game itself, any other game
  compiled (with progress on stderr) and read through ``compiled.rules()``."""
  from jaxgt.core.compiler import compile_game
  from jaxgt.games.device import DeviceGame
  if isinstance(game, DeviceGame):
    return game
  return compile_game(game, max_histories=max_histories, progress=True).rules()


def cmd_check(args) -> int:
  from jaxgt.core.lockstep import load_openspiel, lockstep
  from jaxgt.games import make_from_string
  if args.trajectories < 1:
    raise ValueError(f"--trajectories must be positive, got {args.trajectories}")
  check_positive(args, "max_histories")
  game = make_from_string(args.game, args.max_histories)
  os_string = args.openspiel
  if os_string == "auto":
    os_string = game.openspiel_game_string()
    if os_string is None:
      raise ValueError(f"{game.game_string()} mirrors no OpenSpiel game; name one with "
                       "--openspiel OPENSPIEL_GAME")
  if os_string is not None:
    load_openspiel(os_string)  # a bad name is refused before any work
  rules = rules_of(game, args.max_histories)
  from jaxgt.games.rules_check import check_rules
  report = check_rules(rules, trajectories=args.trajectories, seed=args.seed)
  failures = list(report["failures"])
  steps = None
  if os_string is not None:
    steps = lockstep(rules, os_string, trajectories=args.trajectories, seed=args.seed)
  mismatches = None if steps is None else steps["mismatches"]
  if args.json:
    print_json({"game": rules.game_string(), "trajectories": args.trajectories,
                "failures": failures, "openspiel_mismatches": mismatches})
    if steps is not None and mismatches:
      _print_mismatches(steps, sys.stderr)
  else:
    _print_check(rules, args.trajectories, report, failures, steps)
  return 1 if failures or mismatches else 0


def _print_check(rules, n: int, report: dict, failures: list, steps) -> None:
  name = rules.game_string()
  if failures:
    print(f"{name}: {len(failures)} conformance failure(s) on {n} trajectories")
    for f in failures[:EXAMPLES_SHOWN]:
      print(f"  {f['check']}: trajectory {f['trajectory']} actions {list(f['actions'])}: "
            f"{f['message']}")
  else:
    checks = report.get("checks")
    shown = f" ({', '.join(checks)})" if isinstance(checks, (list, tuple)) else ""
    print(f"{name}: all checks passed on {n} trajectories{shown}")
  if steps is not None:
    if steps["mismatches"]:
      print(f"OpenSpiel {steps['openspiel']}: {steps['mismatches']} mismatch(es) in "
            f"{steps['mismatched_trajectories']} of {n} trajectories")
      _print_mismatches(steps, sys.stdout)
    else:
      print(f"OpenSpiel {steps['openspiel']}: {n} trajectories, {steps['states']} states in "
            f"lockstep, no mismatch ({steps['seconds']:.1f} s)")


def _print_mismatches(steps: dict, out) -> None:
  for m in steps["examples"]:
    print(f"  trajectory {m['trajectory']} step {m['step']} after {m['actions']}: {m['what']}: "
          f"ours {m['ours']!r}, OpenSpiel {m['theirs']!r}", file=out)
