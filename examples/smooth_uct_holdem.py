"""UCT vs Smooth UCT self-play in card-bucketed limit hold'em (Heinrich & Silver 2015, Sec. 4.3).

  python examples/smooth_uct_holdem.py --minutes 2 --out /tmp/holdem             # a smoke test
  python examples/smooth_uct_holdem.py --minutes 40 --snapshots 8 --plot \\
      --out docs/figures/smooth_uct_holdem

Heinrich and Silver, "Smooth UCT Search in Computer Poker" (IJCAI 2015), Sec. 4.3: both
solvers search heads-up limit hold'em through its rules with the E[HS^2] card-bucketing
abstraction of their Table 1 (169 / 1000 / 500 / 200 buckets, imperfect recall,
:class:`~jaxgt.games.abstraction.EHS2Buckets`) and the exploration schedule of their Eq. 3,
``c = min(C, pot + k * remaining betting potential)`` with ``C = 24`` big blinds and
``k = 0.5`` (:func:`~jaxgt.games.holdem_exploration.exploration_constant`, in chips); Smooth UCT
mixes with ``gamma = 0.1, eta = 0.9, d = 1/20000``.

The two runs share the budget ``--minutes`` of training wall time: they train in alternating
slices of ``--slice-steps`` steps (``--batch`` episodes each, the episodes of a step reading
the statistics at its start), the one with less training time so far going next, so both get
the same wall time and their episodes are counted. At ``--snapshots`` points (geometrically
spaced in training time) the GREEDY policies (``argmax_a Q``, the paper's Figure 3) are
evaluated: Smooth UCT against UCT head to head, each against a uniform random and an
always-call player (matches through the rules, seats swapped, in mbb/hand with a 95%
interval), and each one's local best response (Lisy and Bowling 2017; a lower bound on its
exploitability, mbb/hand with a 95% interval). Evaluation time is not training time. Each
snapshot is appended to ``OUT/smooth_uct_holdem.json`` as soon as it is measured (so an
interrupted run keeps what it measured) and ``--plot`` redraws ``OUT/smooth_uct_holdem.png``.

The paper ran 62.1 billion UCT episodes in 14 days on one thread (about 51k episodes/s);
the script prints its own throughput against that.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import pathlib
import sys
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt import struct
from jaxgt.cli.common import check_writable_dir
from jaxgt.evaluation.device_policy import fixed_action_policy, uniform_device_policy
from jaxgt.evaluation.local_br import local_best_response
from jaxgt.games.base import CHANCE, TERMINAL
from jaxgt.games import make
from jaxgt.games.abstraction import EHS2Buckets
from jaxgt.games.holdem_exploration import exploration_constant
from jaxgt.solvers import uct as uct_lib
from jaxgt.solvers.sources import Rules, table_stats

PAPER_EPISODES_PER_S = 62.1e9 / (14 * 24 * 3600)  # Sec. 4.3: 62.1 billion episodes in 14 days
PAPER = {"C": 24.0, "k": 0.5, "gamma": 0.1, "eta": 0.9, "d": 1 / 20000}
SOLVERS = ("uct", "smooth-uct")
LOG_NAME = "smooth_uct_holdem.json"
PLOT_NAME = "smooth_uct_holdem.png"
LBR_BATCH = 8  # local best response games played at once (memory: see evaluate)


@struct.dataclass
class GreedyPolicy:
  """The greedy strategy of a (Smooth) UCT run on hold'em as a device policy ``policy(states,
  player) -> [B, A]`` whose arrays are pytree leaves, so evaluations of one table shape share
  their compiled programs."""

  state: uct_lib.UCTState
  rules: Rules = struct.field(pytree_node=False)

  def __call__(self, states, player):
    return uct_lib.device_policy(self.rules, self.state, "greedy")(states, player)


def make_solvers(batch: int) -> dict:
  """``{"uct": ..., "smooth-uct": ...}`` with the paper's hold'em constants (Sec. 4.3)."""
  explore = functools.partial(exploration_constant, C=PAPER["C"], k=PAPER["k"], in_chips=True)
  c = PAPER["C"] * 10.0  # unused by the schedule; C big blinds in chips
  return {"uct": uct_lib.uct(c, batch=batch, exploration=explore),
          "smooth-uct": uct_lib.smooth_uct(c, PAPER["gamma"], PAPER["eta"], PAPER["d"],
                                           batch=batch, exploration=explore)}


def snapshot_times(total_s: float, k: int) -> list[float]:
  """``k`` training times, geometrically spaced (each twice the last), the last ``total_s``."""
  return [total_s / 2 ** (k - 1 - i) for i in range(k)]


def mbb(x) -> float:
  """Chips per hand to thousandths of a big blind (10 chips) per hand."""
  return float(x) / 10.0 * 1000.0


@struct.dataclass
class Baseline:
  """A device policy without arrays (a scripted player) as a pytree with no leaves."""

  policy: Any = struct.field(pytree_node=False)

  def __call__(self, states, player):
    return self.policy(states, player)


@functools.partial(jax.jit, static_argnums=(0, 4))
def duel(game, policy0, policy1, key, num: int):
  """Player 0's returns ``[num]`` (chips) in ``num`` hands through the rules, ``policy0``
  playing player 0 and ``policy1`` player 1 (device policies, pytrees: their arrays are
  arguments, so one compiled program serves every snapshot; :func:`jaxgt.evaluation.match.play`
  would close over the tables and compile them in as constants at every snapshot)."""
  states = jax.vmap(lambda _: game.init())(jnp.arange(num))

  def live(carry):
    s, _ = carry
    return jnp.any(jax.vmap(game.current_player)(s) != TERMINAL)

  def body(carry):
    s, key = carry
    key, kc, kd = jax.random.split(key, 3)
    pl = jax.vmap(game.current_player)(s)
    chance = jax.vmap(game.chance_probs)(s)
    probs = jnp.where((pl == 0)[:, None], policy0(s, 0), policy1(s, 1))
    probs = jnp.where(jax.vmap(game.legal_mask)(s), probs, 0.0)
    c = jax.random.categorical(kc, jnp.log(chance))
    a = jax.random.categorical(kd, jnp.log(probs))
    act = jnp.where(pl == CHANCE, c, a)
    nxt = jax.vmap(game.step)(s, act)
    done = pl == TERMINAL
    s = jax.tree_util.tree_map(
        lambda x, y: jnp.where(done.reshape(done.shape + (1,) * (x.ndim - 1)), x, y), s, nxt)
    return s, key

  states, _ = jax.lax.while_loop(live, body, (states, key))
  return jax.vmap(game.returns)(states)[:, 0]


def match_mbb(game, policy_a, policy_b, n: int, key) -> dict:
  """``policy_a`` against ``policy_b`` over ``n`` hands, seats swapped (half each): policy_a's
  mean and 95% half-width in mbb/hand."""
  k0, k1 = jax.random.split(key)
  half = n // 2
  pay = np.concatenate([np.asarray(duel(game, policy_a, policy_b, k0, n - half)),
                        -np.asarray(duel(game, policy_b, policy_a, k1, half))]).astype(np.float64)
  hw = 1.959963984540054 * np.std(pay, ddof=1) / math.sqrt(len(pay))
  return {"mean": mbb(np.mean(pay)), "ci95": mbb(hw), "matches": int(len(pay))}


@functools.lru_cache(maxsize=None)
def baselines(game) -> dict:
  """The fixed opponents, built once so their matches compile once."""
  return {"random": Baseline(uniform_device_policy(game)),
          "always-call": Baseline(fixed_action_policy(game, (1,)))}


def evaluate(game, rules, states: dict, args, key, lbr: bool = True) -> dict:
  """The snapshot's measures of the greedy policies (mbb/hand, 95% half-widths)."""
  pols = {name: GreedyPolicy(state=states[name], rules=rules) for name in SOLVERS}
  base = baselines(game)
  out = {}
  k = iter(jax.random.split(key, 16))
  t = time.perf_counter()
  out["smooth_vs_uct"] = match_mbb(game, pols["smooth-uct"], pols["uct"], args.eval_matches,
                                   next(k))
  for name in SOLVERS:
    for b, bp in base.items():
      out[f"{name}_vs_{b}"] = match_mbb(game, pols[name], bp, args.eval_matches, next(k))
  out["matches_s"] = time.perf_counter() - t
  if lbr and args.lbr_games > 0:
    t = time.perf_counter()
    for name in SOLVERS:
      # a game's policy evaluation takes the E[HS^2] key of each of the 1,326 opponent hands
      # (1,288 hand evaluations each): 8 games at a time hold about 2 GB, 128 asked for 28 GB
      r = local_best_response(game, pols[name], next(k), args.lbr_games,
                              batch_size=min(args.lbr_games, LBR_BATCH),
                              num_boards=args.lbr_boards)
      out[f"{name}_lbr"] = {"mean": r.mbb_per_game, "ci95": 1000.0 * r.half_width / 10.0,
                            "games": 2 * r.num_games}
    out["lbr_s"] = time.perf_counter() - t
  return out


def plot(log: dict, path: pathlib.Path) -> None:
  """Learning curves of the snapshots in ``log`` against episodes."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  snaps = log["snapshots"]
  if not snaps:
    return
  fig, axes = plt.subplots(1, 2, figsize=(11, 4))
  ax = axes[0]
  for name, label in (("uct", "UCT"), ("smooth-uct", "Smooth UCT")):
    ep = [s["episodes"][name] for s in snaps]
    for b, style in (("random", "-"), ("always-call", "--")):
      m = np.array([s["eval"][f"{name}_vs_{b}"]["mean"] for s in snaps])
      h = np.array([s["eval"][f"{name}_vs_{b}"]["ci95"] for s in snaps])
      ax.errorbar(ep, m, yerr=h, ls=style, marker="o", ms=3, capsize=2,
                  label=f"{label} vs {b}")
  ep = [0.5 * (s["episodes"]["uct"] + s["episodes"]["smooth-uct"]) for s in snaps]
  m = np.array([s["eval"]["smooth_vs_uct"]["mean"] for s in snaps])
  h = np.array([s["eval"]["smooth_vs_uct"]["ci95"] for s in snaps])
  ax.errorbar(ep, m, yerr=h, color="k", marker="s", ms=3, capsize=2, label="Smooth UCT vs UCT")
  ax.axhline(0, color="grey", lw=0.5)
  ax.set_xscale("log")
  ax.set_xlabel("episodes (each solver)")
  ax.set_ylabel("mbb/hand (greedy policies)")
  ax.set_title("head to head")
  ax.legend(fontsize=7)
  ax = axes[1]
  lbr = [s for s in snaps if "uct_lbr" in s["eval"]]
  if lbr:
    for name, label in (("uct", "UCT"), ("smooth-uct", "Smooth UCT")):
      e = [s["episodes"][name] for s in lbr]
      m = np.array([s["eval"][f"{name}_lbr"]["mean"] for s in lbr])
      h = np.array([s["eval"][f"{name}_lbr"]["ci95"] for s in lbr])
      ax.errorbar(e, m, yerr=h, marker="o", ms=3, capsize=2, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("episodes (each solver)")
    ax.set_ylabel("LBR value, mbb/hand (lower bound)")
    ax.set_title("local best response of the greedy policy")
    ax.legend(fontsize=7)
  else:  # --lbr-last-only before the last snapshot, or --lbr-games 0
    ax.axis("off")
    ax.text(0.5, 0.5, "local best response: not measured yet", ha="center", va="center",
            fontsize=9, transform=ax.transAxes)
  fig.suptitle(f"limit hold'em, E[HS^2] buckets {tuple(log['config']['grid'])}, "
               f"batch {log['config']['batch']}", fontsize=9)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)


def parse(argv):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--minutes", type=float, default=2.0,
                  help="training wall time of both solvers together (evaluation excluded)")
  ap.add_argument("--batch", type=int, default=256, help="episodes per step")
  ap.add_argument("--slice-steps", type=int, default=4, help="steps per training slice")
  ap.add_argument("--capacity", type=int, default=500_000,
                  help="rows of each player's table, per solver")
  ap.add_argument("--snapshots", type=int, default=6, help="evaluation points")
  ap.add_argument("--eval-matches", type=int, default=2000, help="matches per pairing")
  ap.add_argument("--lbr-games", type=int, default=200,
                  help="local best response games per seat (0: skip)")
  ap.add_argument("--lbr-boards", type=int, default=16, help="boards per LBR equity estimate")
  ap.add_argument("--lbr-last-only", action="store_true",
                  help="local best response at the last snapshot only (it is slow: the policy's "
                  "E[HS^2] buckets are computed for every opponent hand)")
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--out", required=True, help="folder for the JSON log and the plot")
  ap.add_argument("--plot", action="store_true", help=f"draw OUT/{PLOT_NAME}")
  args = ap.parse_args(argv)
  for name in ("batch", "slice_steps", "capacity", "snapshots", "eval_matches", "lbr_boards"):
    if getattr(args, name) < 1:
      raise ValueError(f"--{name.replace('_', '-')} must be a positive integer, got "
                       f"{getattr(args, name)}")
  if args.eval_matches < 2:
    raise ValueError(f"--eval-matches must be at least 2 (one per seat), got {args.eval_matches}")
  if args.lbr_games < 0:
    raise ValueError(f"--lbr-games must be >= 0, got {args.lbr_games}")
  if not (math.isfinite(args.minutes) and args.minutes > 0):
    raise ValueError(f"--minutes must be a positive number, got {args.minutes}")
  return args


def main(argv=None) -> dict:
  """Runs the experiment; returns the log (also written to ``OUT/smooth_uct_holdem.json``)."""
  args = parse(argv)
  out = check_writable_dir("--out", args.out)
  out.mkdir(parents=True, exist_ok=True)
  log_path, plot_path = out / LOG_NAME, out / PLOT_NAME
  game = make("limit_holdem")
  abstraction = EHS2Buckets()
  rules = Rules(game, abstraction)
  solvers = make_solvers(args.batch)
  mem = solvers["uct"].memory_bytes(rules, args.capacity)
  print(f"limit hold'em, E[HS^2] buckets {abstraction.grid} (imperfect recall), Eq. 3 "
        f"exploration C={PAPER['C']:g} k={PAPER['k']:g}; Smooth UCT gamma={PAPER['gamma']} "
        f"eta={PAPER['eta']} d={PAPER['d']:g}")
  print(f"batch {args.batch}, {args.capacity} rows per player: {mem / 2**20:.1f} MiB per "
        f"solver (memory_bytes), {args.minutes:g} min of training shared by both", flush=True)
  log = {"config": {"minutes": args.minutes, "batch": args.batch,
                    "slice_steps": args.slice_steps, "capacity": args.capacity,
                    "grid": list(abstraction.grid), "eval_matches": args.eval_matches,
                    "lbr_games": args.lbr_games, "lbr_boards": args.lbr_boards,
                    "lbr_last_only": args.lbr_last_only,
                    "seed": args.seed, **PAPER, "memory_bytes_per_solver": int(mem),
                    "paper_episodes_per_s": PAPER_EPISODES_PER_S},
         "snapshots": []}

  key = jax.random.key(args.seed)
  keys = {name: jax.random.fold_in(key, i) for i, name in enumerate(SOLVERS)}
  states = {name: solvers[name].init(rules, capacity=args.capacity) for name in SOLVERS}
  steps = {name: jax.jit(functools.partial(solvers[name].run, rules), static_argnums=(1,))
           for name in SOLVERS}
  t0 = time.perf_counter()
  for name in SOLVERS:  # compile outside the budget
    jax.block_until_ready(steps[name](states[name], args.slice_steps, keys[name]))
  print(f"compiled the training steps in {time.perf_counter() - t0:.1f}s", flush=True)

  total = args.minutes * 60.0
  marks = snapshot_times(total, args.snapshots)
  train = {name: 0.0 for name in SOLVERS}
  for i, mark in enumerate(marks):
    while sum(train.values()) < mark:
      name = min(SOLVERS, key=lambda n: train[n])
      t = time.perf_counter()
      states[name] = jax.block_until_ready(
          steps[name](states[name], args.slice_steps, keys[name]))
      train[name] += time.perf_counter() - t
    episodes = {n: int(states[n].iteration) * args.batch for n in SOLVERS}
    rate = {n: episodes[n] / max(train[n], 1e-9) for n in SOLVERS}
    stats = {n: table_stats(states[n].tables) for n in SOLVERS}
    t = time.perf_counter()
    ev = evaluate(game, rules, states, args, jax.random.fold_in(key, 1000 + i),
                  lbr=not args.lbr_last_only or i == len(marks) - 1)
    eval_s = time.perf_counter() - t
    snap = {"snapshot": i + 1, "train_s": dict(train), "episodes": episodes,
            "episodes_per_s": rate, "rows": {n: stats[n]["rows"] for n in SOLVERS},
            "refused": {n: stats[n]["refused"] for n in SOLVERS}, "eval": ev,
            "eval_s": eval_s}
    log["snapshots"].append(snap)
    log_path.write_text(json.dumps(log, indent=1))
    if args.plot:
      plot(log, plot_path)
    print(f"[{i + 1}/{args.snapshots}] train {sum(train.values()):.0f}s, eval {eval_s:.0f}s",
          flush=True)
    for n in SOLVERS:
      e = ev
      lbr = f", LBR {e[n + '_lbr']['mean']:+.0f} ± {e[n + '_lbr']['ci95']:.0f}" \
          if n + "_lbr" in e else ""
      print(f"  {n:>10}: {episodes[n]:>9d} episodes, {rate[n]:7.1f}/s, rows "
            f"{stats[n]['rows']}, refused {stats[n]['refused']}; vs random "
            f"{e[n + '_vs_random']['mean']:+.0f} ± {e[n + '_vs_random']['ci95']:.0f}, vs call "
            f"{e[n + '_vs_always-call']['mean']:+.0f} ± "
            f"{e[n + '_vs_always-call']['ci95']:.0f}{lbr} mbb/hand", flush=True)
    print(f"  Smooth UCT vs UCT: {ev['smooth_vs_uct']['mean']:+.0f} ± "
          f"{ev['smooth_vs_uct']['ci95']:.0f} mbb/hand", flush=True)
  both = sum(int(states[n].iteration) * args.batch for n in SOLVERS) / max(sum(train.values()),
                                                                          1e-9)
  log["throughput"] = {"episodes_per_s": both, "paper_episodes_per_s": PAPER_EPISODES_PER_S,
                       "ratio_to_paper": both / PAPER_EPISODES_PER_S}
  log_path.write_text(json.dumps(log, indent=1))
  print(f"throughput {both:.1f} episodes/s (both solvers, {jax.device_count()} "
        f"{jax.devices()[0].platform} device) vs the paper's {PAPER_EPISODES_PER_S:,.0f}/s on "
        f"one thread: {both / PAPER_EPISODES_PER_S:.2%}")
  print(f"table memory: {mem / 2**20:.1f} MiB per solver at {args.capacity} rows per player")
  print(f"log: {log_path}" + (f", plot: {plot_path}" if args.plot else ""))
  return log


if __name__ == "__main__":
  try:
    main()
  except ValueError as e:
    sys.exit(f"error: {e}")
