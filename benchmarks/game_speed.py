"""Random playouts per second of the device games against OpenSpiel C++ and pgx.

A playout is one complete game from the root to a terminal: players pick
uniformly among their legal actions, chance by its probabilities. For each
game and batch size:

* **jaxgt**: :func:`jaxgt.core.playout.random_playouts` (``batch`` games per
  jitted call, vmapped rules inside a ``lax.while_loop`` that stops when every
  game has ended); compile time is the first call's and is not in the rate. A
  game that is not a device game yet runs through its compiled tree read as
  rules (:meth:`CompiledGame.rules`, state = history index), labelled so.
* **OpenSpiel C++**: ``pyspiel.evaluate_bots`` with two
  ``pyspiel.make_uniform_random_bot`` bots, the game's OpenSpiel mirror: the
  whole playout (chance sampled from ``ChanceOutcomes``) runs in C++, one
  Python call per playout (plus ``new_initial_state``). Where that fails, a
  Python loop over ``pyspiel`` states, labelled as such.
* **pgx** (Kuhn and Leduc): its own ``init`` / ``step`` vmapped over ``batch``
  games, uniform legal actions, in a ``lax.while_loop`` until every game has
  terminated (pgx deals chance inside ``init``/``step``).

Timings alternate (``--repeats`` rounds of jaxgt, OpenSpiel, pgx, each at
least ``--seconds``; the machine may be shared): the medians of each and of
the per-round ratios (> 1: jaxgt ahead). Bytes per state: the sum of a single
state pytree's leaf ``nbytes``, jaxgt's and pgx's.

  python benchmarks/game_speed.py [--games kuhn_poker,liars_dice(numdice=2)]
      [--batches 1,16,256,4096,65536] [--seconds 0.5] [--repeats 3] [--json PATH]
      [--no-openspiel] [--no-pgx] [--pin CORE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

import jax
import numpy as np

import jaxgt
from jaxgt import bench_report
from jaxgt.bench_report import add_pin_option, figure, missing_peer, pin_from_args
from jaxgt.cli.common import check_writable
from jaxgt.core import playout
from jaxgt.games.device import DeviceGame

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sampling_speed import call_meter  # noqa: E402

BENCH_QUICK = ["--games", "kuhn_poker,leduc_poker", "--batches", "16,4096", "--seconds", "0.2",
               "--repeats", "1"]
LARGE = ("liars_dice(numdice=2)", "goofspiel(num_cards=13)", "limit_holdem")
"""Large instances measured beside every registered device game (where registered)."""
PGX = {"kuhn_poker": "kuhn_poker", "leduc_poker": "leduc_holdem"}
"""jaxgt game string -> pgx environment id."""
OPENSPIEL_BOTS = "OpenSpiel C++ evaluate_bots (uniform random bots)"
OPENSPIEL_LOOP = "Python loop over pyspiel states"


def split_games(text: str) -> list:
  """``"a,b(x=1,y=2)"`` -> ``["a", "b(x=1,y=2)"]`` (commas inside parentheses stay)."""
  out, depth, cur = [], 0, ""
  for ch in text:
    depth += (ch == "(") - (ch == ")")
    if ch == "," and depth == 0:
      out.append(cur.strip())
      cur = ""
    else:
      cur += ch
  out.append(cur.strip())
  return [g for g in out if g]


def default_games() -> list:
  """Every registered game that is a device game (default parameters), then :data:`LARGE`."""
  games = [name for name, spec in jaxgt.games.registry().items()
           if isinstance(spec.factory(), DeviceGame)]
  for text in LARGE:
    name, _ = jaxgt.games.parse_game_string(text)
    spec = jaxgt.games.registry().get(name)
    if spec is not None and isinstance(jaxgt.games.make_from_string(text), DeviceGame):
      games.append(text)
  return games


def device_rules(text: str):
  """``(rules, label)``: the game's device rules, or its compiled tree's (enumerated here)."""
  game = jaxgt.games.make_from_string(text)
  if isinstance(game, DeviceGame):
    return game, "device game"
  return jaxgt.load(text).rules(), "compiled tree"


def state_bytes(state) -> int:
  """Sum of the leaves' ``nbytes`` of one state pytree."""
  return int(sum(np.asarray(x).nbytes for x in jax.tree_util.tree_leaves(state)))


def jaxgt_meter(rules, batch: int):
  """``(compile s, meter)``: ``meter(seconds) -> playouts/s`` of ``random_playouts``."""
  key = jax.random.key(0)
  t0 = time.perf_counter()
  jax.block_until_ready(playout.random_playouts(rules, key, batch))
  compile_s = time.perf_counter() - t0
  return compile_s, call_meter(
      lambda: jax.block_until_ready(playout.random_playouts(rules, key, batch)), batch)


def openspiel_meter(pyspiel, os_string: str):
  """``(label, meter)``: ``meter(seconds) -> playouts/s`` of OpenSpiel uniform random play."""
  game = pyspiel.load_game(os_string)
  bots = [pyspiel.make_uniform_random_bot(p, 1 + p) for p in range(2)]
  seed = [0]

  def bots_playout():
    seed[0] += 1
    pyspiel.evaluate_bots(game.new_initial_state(), bots, seed[0])

  rng = random.Random(0)

  def loop_playout():
    s = game.new_initial_state()
    while not s.is_terminal():
      if s.is_chance_node():
        outcomes, probs = zip(*s.chance_outcomes())
        s.apply_action(rng.choices(outcomes, probs)[0])
      else:
        s.apply_action(rng.choice(s.legal_actions()))
    s.returns()

  try:
    bots_playout()
    label, call = OPENSPIEL_BOTS, bots_playout
  except Exception:  # noqa: BLE001  (a game evaluate_bots does not take: the Python loop)
    label, call = OPENSPIEL_LOOP, loop_playout
  meter = call_meter(call, 1, start=64)
  meter(0.02)  # warm
  return label, meter


def pgx_playouts(env, batch: int):
  """A jitted ``key -> rewards [B, 2]`` of ``batch`` pgx games played to their terminals."""
  import jax.numpy as jnp

  @jax.jit
  def run(key):
    k0, k1 = jax.random.split(key)
    s = jax.vmap(env.init)(jax.random.split(k0, batch))

    def body(c):
      s, k = c
      k, ka, ks = jax.random.split(k, 3)
      a = jax.random.categorical(ka, jnp.where(s.legal_action_mask, 0.0, -jnp.inf), axis=-1)
      return jax.vmap(env.step)(s, a, jax.random.split(ks, batch)), k

    s, _ = jax.lax.while_loop(lambda c: ~jnp.all(c[0].terminated), body, (s, k1))
    return s.rewards

  return run


def pgx_meter(env, batch: int):
  """``meter(seconds) -> playouts/s`` of :func:`pgx_playouts` (compiled here)."""
  run, key = pgx_playouts(env, batch), jax.random.key(0)
  jax.block_until_ready(run(key))
  return call_meter(lambda: jax.block_until_ready(run(key)), batch)


def rounds(meters: dict, seconds: float, repeats: int) -> dict:
  """``{name: [rate per round]}``: ``repeats`` rounds timing each meter in turn."""
  out = {name: [] for name in meters}
  for _ in range(repeats):
    for name, meter in meters.items():
      out[name].append(meter(seconds))
  return out


def _cell(x, width: int, spec: str, suffix: str = "") -> str:
  """``x`` formatted by ``spec`` (plus ``suffix``) right-aligned in ``width``; ``n/a`` for None."""
  return f"{'n/a' if x is None else format(x, spec) + suffix:>{width}}"


def _ratio(rates: dict, peer: str):
  if peer not in rates:
    return None
  return statistics.median(o / p for o, p in zip(rates["jaxgt"], rates[peer]))


def _load_pgx(wanted: bool):
  """``(pgx module or None, why not)``."""
  if not wanted:
    return None, "--no-pgx"
  try:
    import pgx
  except ImportError as e:
    return None, f"pgx is not installed ({e}; {bench_report.PEER_INSTALL['pgx']})"
  return pgx, None


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--games", default=None,
                  help="comma-separated game strings (default: every registered device game, "
                       "then " + ", ".join(LARGE) + " where registered)")
  ap.add_argument("--batches", default="1,16,256,4096,65536")
  ap.add_argument("--seconds", type=float, default=0.5, help="minimum timed interval")
  ap.add_argument("--repeats", type=int, default=3,
                  help="alternating rounds of jaxgt and its peers per batch (medians reported)")
  ap.add_argument("--json", metavar="PATH", help="write every figure to this JSON file")
  ap.add_argument("--no-openspiel", dest="openspiel", action="store_false")
  ap.add_argument("--no-pgx", dest="pgx", action="store_false")
  add_pin_option(ap)
  args = ap.parse_args(argv)
  pinned = pin_from_args(ap, args)  # before JAX starts its CPU runtime
  try:
    check_writable({"--json": args.json})
    batches = [int(b) for b in args.batches.split(",") if b.strip()]
    if not batches or min(batches) < 1:
      raise ValueError(f"--batches must be positive integers, got {args.batches!r}")
    if args.seconds <= 0 or args.repeats < 1:
      raise ValueError("--seconds must be positive and --repeats at least 1")
    games = split_games(args.games) if args.games else default_games()
    for g in games:
      jaxgt.games.make_from_string(g)  # unknown games and bad parameters: refused now
  except ValueError as e:
    ap.error(str(e))
  pyspiel = None
  if args.openspiel:
    try:
      import pyspiel
    except ImportError as e:
      missing_peer("OpenSpiel C++", f"pyspiel is not installed ({e})")
  pgx, no_pgx = _load_pgx(args.pgx)
  if no_pgx and args.pgx:
    missing_peer("pgx", no_pgx)

  env = bench_report.environment()
  print(f"jax {jax.__version__} on {jax.devices()[0].platform} ({env['cpu_count']} CPUs); "
        f"random playouts/s (players uniform over legal actions, chance by its probabilities); "
        f"{args.repeats} alternating rounds of at least {args.seconds} s each, medians; "
        f"pgx {getattr(pgx, '__version__', None) or 'n/a (' + str(no_pgx) + ')'}")
  results = []
  for text in games:
    rules, impl = device_rules(text)
    os_string = rules.openspiel_game_string() if pyspiel else None
    os_label, os_meter = openspiel_meter(pyspiel, os_string) if os_string else (None, None)
    pgx_env = pgx.make(PGX[text]) if pgx and text in PGX else None
    row = {"game": text, "implementation": impl, "bytes_per_state": state_bytes(rules.init()),
           "max_length": int(rules.max_length), "openspiel": os_string,
           "openspiel_method": os_label,
           "pgx": PGX.get(text) if pgx_env else None,
           "pgx_bytes_per_state": state_bytes(pgx_env.init(jax.random.key(0))) if pgx_env else None,
           "batches": []}
    if pyspiel and not os_string:
      missing_peer("OpenSpiel C++", "no OpenSpiel game mirrors it", game=text)
    pgx_txt = f", pgx {row['pgx_bytes_per_state']} B" if pgx_env else ""
    print(f"\n{text} ({impl}; {row['bytes_per_state']} bytes per state{pgx_txt}; "
          f"OpenSpiel: {os_string or 'none'}{' via ' + os_label if os_label else ''})")
    figure("bytes per state", row["bytes_per_state"], "bytes", higher_is_better=False, game=text,
           peer="pgx" if pgx_env else None, peer_value=row["pgx_bytes_per_state"])
    print(f"{'batch':>6} {'compile s':>9} {'jaxgt':>12} {'OpenSpiel':>10} {'pgx':>11} "
          f"{'/OpenSpiel':>10} {'/pgx':>7}")
    for b in batches:
      compile_s, ours = jaxgt_meter(rules, b)
      meters = {"jaxgt": ours}
      if os_meter:
        meters["openspiel"] = os_meter
      if pgx_env:
        meters["pgx"] = pgx_meter(pgx_env, b)
      rates = rounds(meters, args.seconds, args.repeats)
      med = {k: statistics.median(v) for k, v in rates.items()}
      r_os, r_pgx = _ratio(rates, "openspiel"), _ratio(rates, "pgx")
      row["batches"].append({"batch": b, "compile_s": compile_s, "jaxgt": med["jaxgt"],
                             "openspiel": med.get("openspiel"), "pgx": med.get("pgx"),
                             "ratio_openspiel": r_os, "ratio_pgx": r_pgx})
      print(f"{b:>6} {compile_s:>9.2f} {med['jaxgt']:>12,.0f} "
            f"{_cell(med.get('openspiel'), 10, ',.0f')} {_cell(med.get('pgx'), 11, ',.0f')} "
            f"{_cell(r_os, 10, '.1f', 'x')} {_cell(r_pgx, 7, '.2f', 'x')}", flush=True)
      # ratio: the median of the per-round ratios, so the peer value is ours over it
      figure("random playouts", med["jaxgt"], "playouts/s", game=text, batch=b, **pinned,
             peer=os_label, peer_value=med["jaxgt"] / r_os if r_os else None)
      if pgx_env:
        figure("random playouts vs pgx", med["jaxgt"], "playouts/s", game=text, batch=b,
               **pinned, peer="pgx", peer_value=med["jaxgt"] / r_pgx)
    results.append(row)
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"environment": env, "pgx": getattr(pgx, "__version__", None),
                 "pgx_missing": no_pgx, "seconds": args.seconds, "repeats": args.repeats,
                 "pinned_core": args.pin,
                 "games": results}, f, indent=1)
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
  main()
