"""Time to epsilon: every jaxgt full-width solver against OpenSpiel C++ CFR+ and LiteEFG.

For each game, each solver runs in jitted chunks on a geometric grid of
iteration counts (x1.1 by default, ``--grid``) until it reaches the smallest target, its iteration
cap or its time budget; exploitability (NashConv / 2, game units) is
evaluated exactly between chunks and not timed. A jaxgt solver's time to a
target is then that of one fresh jitted call of the iterations that reached
it (what ``solve(iterations=n)`` pays), compilation (``run(.., 0)``) reported
separately, with the milliseconds per iteration of that call (time = iterations
x ms/iteration: where the seconds go). HS-PCFR+ and HS-DCFR plan for
``--planned`` iterations (default: their factories' 1000). The same run times OpenSpiel's C++ ``CFRPlusSolver``
(``pyspiel``; ``evaluate_and_update_policy`` timed, ``exploitability`` not) and
LiteEFG's CFR+, DCFR and PCFR+ (linear averaging) (``LiteEFG.OpenSpielEnv``,
enumerated traversal; its evaluation untimed), where the game exists in
OpenSpiel. A peer runs until ``--peer-target`` (default 1e-5), its
``--peer-budget`` or ``--peer-cap``; a LiteEFG solver also stops once its
seconds pass the fastest LiteEFG solver's time to 1e-4 without reaching it
(it cannot be LiteEFG's best there), and the report says when LiteEFG's best
is unproven (a solver stopped by the budget or cap before that time).
Prints, per game, each solver's seconds and iterations to 1e-3, 1e-4 and
1e-5, and at 1e-4 the ratio of the best jaxgt solver's time to
OpenSpiel C++ CFR+ and to LiteEFG's best; writes a Markdown table and PNG
plots (exploitability against iterations and against seconds).

  python benchmarks/convergence.py --quick                 # Kuhn and Leduc, short budgets
  python benchmarks/convergence.py --out results/conv      # all six games and Leduc's quotient
  python benchmarks/convergence.py --games leduc_poker --solvers pdcfr+,cfr+ --budget 30
"""

from __future__ import annotations

import argparse
import math
import os
import time

import jax

import jaxgt
from jaxgt.bench_report import PEER_INSTALL, figure, missing_peer
from jaxgt.core.evaluate import policy_evaluation_jit
from jaxgt.solving import SOLVERS, make_full_width_solver

TARGETS = (1e-3, 1e-4, 1e-5)
HEADLINE = 1e-4  # the exploitability at which the headline ratios are taken
ISO_LEDUC = "leduc_poker(suit_isomorphism=true)"
OPENSPIEL = "OpenSpiel C++ CFR+"  # the label of the headline ratio's peer
# jaxgt game string -> (label, OpenSpiel game string or None, turn-based conversion)
GAMES = {
    "kuhn_poker": ("Kuhn", "kuhn_poker", False),
    "leduc_poker": ("Leduc", "leduc_poker", False),
    # Leduc's quotient by the suits: its exploitability is that of the strategy lifted to Leduc
    # (jaxgt.policy.lift; tests/test_leduc_isomorphism.py); the peers run OpenSpiel's same game
    ISO_LEDUC: ("Leduc, suit-isomorphic", ISO_LEDUC, False),
    "liars_dice(numdice=1)": ("LD(1,1)", "liars_dice(numdice=1)", False),
    "goofspiel(num_cards=5)": ("II-GS(5)", "goofspiel(imp_info=True,points_order=ascending,"
                               "num_cards=5,returns_type=win_loss)", True),
    "generic_poker(T=3,C=3,R=2,B=2)": ("GP(3,3,2,2)", None, False),
    "scotland_yard": ("glasses map", None, False),
}
QUICK_GAMES = ("kuhn_poker", "leduc_poker")
# games where OpenSpiel C++ CFR+'s iterates equal jaxgt cfr+'s (tests/test_cfr.py): its time to a
# target the budget did not reach is estimated from jaxgt's iterations there
SAME_ITERATES = ("kuhn_poker", "leduc_poker")
# quick: the peers stop at 1e-4 (the headline), each LiteEFG solver once slower than the fastest
# one there; the 30 s budget only bounds a peer that has not passed that time yet
BENCH_QUICK = ["--games", "leduc_poker", "--solvers", "cfr+,dcfr,dcfr+,pcfr+", "--budget", "5",
               "--peer-budget", "30", "--peer-target", "1e-4", "--out", "convergence_quick"]
# MMD's defaults reach only its regularised equilibrium; a small temperature for the table
SOLVER_KWARGS = {"mmd": {"alpha": 1e-3}}


def grid(cap: int, factor: float = 1.1):
  """Checkpoints 1, 2, ... growing by ``factor`` up to ``cap``."""
  out, n = [], 1
  while n < cap:
    out.append(n)
    n = max(n + 1, int(n * factor))
  return out + [cap]


class Curve:
  """Exploitability against iterations and solve seconds of one solver on one game."""

  def __init__(self, name):
    self.name, self.iterations, self.seconds, self.values = name, [], [], []
    self.cut = None  # why a peer's run stopped (run_peer)
    self.compile_s = 0.0
    self.single_call = {}  # iterations -> seconds of one fresh call running them (jaxgt)

  def add(self, it, sec, value):
    self.iterations.append(it)
    self.seconds.append(sec)
    self.values.append(value)

  def reach(self, eps):
    """``(seconds, iterations)`` at the first checkpoint at or below ``eps`` (None if never);
    for jaxgt the seconds of one fresh jitted call of that many iterations."""
    for it, sec, v in zip(self.iterations, self.seconds, self.values):
      if v <= eps:
        return self.single_call.get(it, sec), it
    return None

  def ms_per_iteration(self):
    """Milliseconds per iteration: of the longest single call (jaxgt), else of the whole run."""
    if self.single_call:
      it = max(self.single_call)
      return 1e3 * self.single_call[it] / it
    return 1e3 * self.seconds[-1] / self.iterations[-1] if self.values else math.nan

  def done(self, eps_min, budget, cap):
    return bool(self.values) and (self.values[-1] <= eps_min or self.seconds[-1] > budget or
                                  self.iterations[-1] >= cap)


def repeats(seconds: float) -> int:
  """How many single calls of a jaxgt solver to time (the best counts): one from 1 s, 5 from
  10 ms, 25 below (a call of a few tenths of a millisecond varies by 30-50% between runs)."""
  return 1 if seconds >= 1.0 else 5 if seconds >= 0.01 else 25


def run_jaxgt(game, name, dtype, cap, budget, eps_min, factor=1.1, planned=None):
  tree = game.device_tree(dtype)
  solver = make_full_width_solver(name, iterations=planned, dtype=dtype,
                                  **SOLVER_KWARGS.get(name, {}))
  curve = Curve(name)
  state = solver.init(tree)
  t0 = time.perf_counter()
  jax.block_until_ready(solver.run(tree, state, 0))
  policy_evaluation_jit(tree, solver.policy(tree, state)).exploitability.block_until_ready()
  curve.compile_s = time.perf_counter() - t0
  done, sec = 0, 0.0
  for c in grid(cap, factor):
    t0 = time.perf_counter()
    state = jax.block_until_ready(solver.run(tree, state, c - done))
    sec += time.perf_counter() - t0
    done = c
    curve.add(c, sec, float(policy_evaluation_jit(tree, solver.policy(tree, state)).exploitability))
    if curve.done(eps_min, budget, cap):
      break
  # the chunked run above pays a dispatch and an evaluation per checkpoint: time what a
  # user pays, one call of the iterations that reach each target (best of repeats(seconds))
  for eps in TARGETS:
    r = curve.reach(eps)
    if r is not None and r[1] not in curve.single_call:
      best, fresh = math.inf, jax.block_until_ready(solver.init(tree))
      for _ in range(repeats(r[0])):
        t0 = time.perf_counter()
        jax.block_until_ready(solver.run(tree, fresh, r[1]))
        best = min(best, time.perf_counter() - t0)
      curve.single_call[r[1]] = best
  return curve


def load_openspiel(spec):
  import pyspiel
  game = pyspiel.load_game(spec[1])
  return pyspiel.convert_to_turn_based(game) if spec[2] else game


def run_peer(label, step, evaluate, cap, budget, stop_eps, factor=1.1, beat=None,
             clock=time.perf_counter):
  """A peer's curve on the checkpoint grid: ``step(n)`` runs ``n`` iterations (timed),
  ``evaluate()`` returns the exploitability (untimed).

  Runs until ``stop_eps`` is reached, or the iteration ``cap`` or the ``budget`` seconds; and
  where ``beat`` (the best time to :data:`HEADLINE` among the peers run so far) is given, also
  once this peer's seconds pass ``beat`` without reaching the headline target: it can no longer
  be the fastest peer there. ``curve.cut`` says why it stopped (``"target"``, ``"slower"``,
  ``"budget"``, ``"cap"``): a peer cut by the budget or cap before reaching the headline target
  and before passing ``beat`` leaves the fastest peer unproven (:func:`best_peer`).
  """
  curve, done, sec = Curve(label), 0, 0.0
  for c in grid(cap, factor):
    t0 = clock()
    step(c - done)
    sec += clock() - t0
    done = c
    curve.add(c, sec, evaluate())
    reached = curve.reach(HEADLINE) is not None
    if curve.values[-1] <= stop_eps:
      curve.cut = "target"
    elif beat is not None and not reached and sec > beat:
      curve.cut = "slower"
    elif sec > budget:
      curve.cut = "budget"
    elif c >= cap:
      curve.cut = "cap"
    if curve.cut:
      break
  return curve


def run_openspiel_cfr_plus(spec, cap, budget, stop_eps, factor=1.1):
  import pyspiel
  game = load_openspiel(spec)
  solver = pyspiel.CFRPlusSolver(game)

  def step(n):
    for _ in range(n):
      solver.evaluate_and_update_policy()
  return run_peer(OPENSPIEL, step,
                  lambda: pyspiel.exploitability(game, solver.average_policy()),
                  cap, budget, stop_eps, factor)


def liteefg_solvers():
  """LiteEFG's full-width CFR family as ``(label, graph factory, convergence type, strategy
  arguments)``, its usually fastest first (so the others can stop once slower).

  LiteEFG 1.0.0 also offers vanilla CFR and the last-iterate methods (MMD, QFR, DOMD, CMD,
  Reg-CFR, Reg-DOMD); with their defaults none comes near 1e-4 in Leduc in 25 s (CFR 1.3e-2,
  Reg-CFR 2.3e-2, the others 3.6e-2 or worse; docs/PERFORMANCE.md), so they are not run here.
  """
  from LiteEFG.baselines import CFRplus, DCFR, PCFR
  return [("LiteEFG CFR+", CFRplus.graph, "linear-avg-iterate", ()),
          ("LiteEFG DCFR", DCFR.graph, "last-iterate", ("average-iterate",)),
          ("LiteEFG PCFR+", PCFR.graph, "linear-avg-iterate", ())]


def run_liteefg(spec, label, factory, convergence, strategy_args, cap, budget, stop_eps,
                factor=1.1, beat=None):
  import contextlib
  import io

  import LiteEFG
  game = load_openspiel(spec)
  with contextlib.redirect_stdout(io.StringIO()):  # its graphs print a banner
    graph = factory()
  env = LiteEFG.OpenSpielEnv(game, traverse_type="Enumerate", regenerate=False)
  env.set_graph(graph)

  def step(n):
    for _ in range(n):
      graph.update_graph(env)
      env.update_strategy(graph.current_strategy(*strategy_args), update_best=False)

  # LiteEFG reports each player's best-response gain; their sum is NashConv
  return run_peer(label, step, lambda: 0.5 * sum(env.exploitability(
      graph.current_strategy(*strategy_args), convergence)), cap, budget, stop_eps, factor, beat)


def best_peer(peers, eps=None):
  """``(seconds, name, proven)``: the fastest of ``peers`` to ``eps`` (default the headline
  target), or ``None`` if none reached it. ``proven`` is False when another peer stopped
  (budget or cap) before reaching it and before passing that time: it might have been faster."""
  eps = HEADLINE if eps is None else eps
  best = best_at(peers, eps)
  if best is None:
    return None
  open_ = [c.name for c in peers if c.reach(eps) is None and c.cut in ("budget", "cap")
           and c.seconds[-1] < best[0]]
  return best[0], best[1], not open_


def openspiel_curve(peers):
  """OpenSpiel C++ CFR+'s curve among ``peers`` (``None`` if it did not run)."""
  return next((c for c in peers if c.name == OPENSPIEL), None)


def lifted_leduc_line(results):
  """The suit-isomorphic solve against OpenSpiel C++ CFR+ on full Leduc (both games run), or
  ``None``: the quotient's exploitability is the lifted strategy's in Leduc, so its time to
  1e-4 is a time to solve Leduc to 1e-4."""
  if "leduc_poker" not in results or ISO_LEDUC not in results:
    return None
  def openspiel(gs):  # OpenSpiel C++ CFR+'s (seconds, iterations) to 1e-4 in game gs
    peer = openspiel_curve(results[gs][1])
    return peer.reach(HEADLINE) if peer else None

  ours, peer = results[ISO_LEDUC][0], openspiel("leduc_poker")
  if not ours or not peer:
    return None
  line = (f"1e-4, Leduc solved through its suit-isomorphic quotient (the strategy lifted to "
          f"Leduc): jaxgt {ours[1]} {ours[0]:.3g}s; OpenSpiel C++ CFR+ on Leduc {peer[0]:.3g}s: "
          f"{peer[0] / ours[0]:.0f}x")
  same = openspiel(ISO_LEDUC)
  if same:
    line += f"; on the same quotient {same[0]:.3g}s: {same[0] / ours[0]:.0f}x"
  return line


def fmt_reach(r):
  return "-" if r is None else f"{r[0]:.3g}s/{r[1]}"


def table(label, curves, ours):
  lines = [f"### {label}", "",
           "| solver | compile s | ms/iter | " + " | ".join(f"to {e:g} (s/iter)" for e in TARGETS)
           + " |", "|---|---|---|" + "---|" * len(TARGETS)]
  for c in curves:
    comp = f"{c.compile_s:.2f}" if c.name in ours else "-"
    lines.append(f"| {c.name} | {comp} | {c.ms_per_iteration():.4g} | "
                 + " | ".join(fmt_reach(c.reach(e)) for e in TARGETS) + " |")
  return lines


def best_at(curves, eps):
  got = [(c.reach(eps)[0], c.name) for c in curves if c.reach(eps) is not None]
  return min(got) if got else None


def plot(label, curves, path, ours=()):
  """Exploitability against iterations and against seconds; the solvers not in ``ours`` (the
  peers) dashed, every curve its own colour."""
  import matplotlib
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt
  fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
  tab20 = plt.get_cmap("tab20").colors
  colours = tab20[::2] + tab20[1::2]  # ten strong colours, then their light shades
  for i, c in enumerate(curves):
    ys = [max(v, 1e-12) for v in c.values]
    style = dict(label=c.name, color=colours[i % len(colours)],
                 linestyle="-" if c.name in ours else "--")
    axes[0].loglog(c.iterations, ys, **style)
    axes[1].loglog([max(s, 1e-6) for s in c.seconds], ys, **style)
  for ax, xl in zip(axes, ("iterations", "solve seconds (compilation excluded)")):
    ax.set_xlabel(xl)
    ax.set_ylabel("exploitability")
    ax.grid(True, which="both", alpha=0.3)
  axes[1].legend(fontsize=7)
  fig.suptitle(label)
  fig.tight_layout()
  fig.savefig(path, dpi=110)
  plt.close(fig)


def reach_text(c):
  """A curve's times to each target, for the per-solver lines."""
  return "  ".join(f"{e:g}: {fmt_reach(c.reach(e))}" for e in TARGETS)


def run_peers(spec, label, args, peer_budget):
  """OpenSpiel C++ CFR+ and LiteEFG's solvers on the OpenSpiel game ``spec[1]``, each
  LiteEFG solver stopped once slower than the fastest one before it; a missing peer is
  reported (:func:`~jaxgt.bench_report.missing_peer`) and skipped."""
  peers = []
  try:
    peers.append(run_openspiel_cfr_plus(spec, args.peer_cap, peer_budget, args.peer_target,
                                        args.grid))
  except ImportError:
    print(f"  OpenSpiel C++ CFR+: missing (pyspiel not installed: {PEER_INSTALL['OpenSpiel C++']})")
    missing_peer("OpenSpiel C++", "pyspiel not installed", game=label)
  try:
    for lbl, factory, conv, sargs in liteefg_solvers():
      fastest = best_at([c for c in peers if c.name.startswith("LiteEFG")], HEADLINE)
      peers.append(run_liteefg(spec, lbl, factory, conv, sargs, args.peer_cap, peer_budget,
                               args.peer_target, args.grid, beat=fastest[0] if fastest else None))
  except ImportError:
    print(f"  LiteEFG: missing ({PEER_INSTALL['LiteEFG']})")
    missing_peer("LiteEFG", f"not installed ({PEER_INSTALL['LiteEFG']})", game=label)
  for c in peers:
    print(f"  {c.name:20s} {c.ms_per_iteration():.4f} ms/it  {reach_text(c)}"
          f"  last {c.values[-1]:.2e} at {c.iterations[-1]} ({c.cut})", flush=True)
  return peers


def openspiel_line(gs, label, curves, peers, ours, peer_best):
  """The line comparing the best jaxgt time to 1e-4 with OpenSpiel C++ CFR+'s (the headline
  target peer; its figure recorded when it is not the fastest peer), or an estimate from
  jaxgt cfr+'s iterations where OpenSpiel's iterates are the same (:data:`SAME_ITERATES`);
  ``None`` without both."""
  peer = openspiel_curve(peers)
  if not ours or not peer:
    return None
  r = peer.reach(HEADLINE)
  if r:
    if peer_best is None or peer_best[1] != OPENSPIEL:  # the headline peer, its own row
      figure("seconds to 1e-4", ours[0], "s", higher_is_better=False, game=label,
             solver=ours[1], peer=OPENSPIEL, peer_value=r[0])
    return (f"1e-4: best jaxgt {ours[1]} {ours[0]:.3g}s; {OPENSPIEL} {r[0]:.3g}s: "
            f"{r[0] / ours[0]:.0f}x")
  line = (f"1e-4: best jaxgt {ours[1]} {ours[0]:.3g}s; {OPENSPIEL} did not reach it in "
          f"{peer.seconds[-1]:.3g}s (>= {peer.seconds[-1] / ours[0]:.0f}x)")
  same = [c for c in curves if c.name == "cfr+" and c.reach(HEADLINE)]
  if same and gs in SAME_ITERATES:
    its, ms = same[0].reach(HEADLINE)[1], peer.ms_per_iteration()
    est = its * ms / 1e3
    line += (f"; estimated from jaxgt cfr+'s {its} iterations (the same iterates) at its "
             f"{ms:.3g} ms/iteration: {est:.3g}s, {est / ours[0]:.0f}x")
  return line


def liteefg_line(peers, ours):
  """The line comparing the best jaxgt time to 1e-4 with LiteEFG's best (:func:`best_peer`),
  saying which solvers stopped once slower and whether the best is unproven; ``None``
  without both."""
  lite_peers = [c for c in peers if c.name.startswith("LiteEFG")]
  lite = best_peer(lite_peers)
  if not ours or not lite_peers:
    return None
  if not lite:
    longest = max(c.seconds[-1] for c in lite_peers)
    return f"1e-4: no LiteEFG solver reached it in {longest:.3g}s (>= {longest / ours[0]:.0f}x)"
  line = f"1e-4: LiteEFG's best {lite[1]} {lite[0]:.3g}s: {lite[0] / ours[0]:.0f}x"
  slower = [c.name for c in lite_peers if c.cut == "slower"]
  if slower:
    line += f" ({', '.join(slower)} stopped once slower)"
  if not lite[2]:
    line += (" (unproven: a LiteEFG solver stopped by the peer budget or cap before that "
             "time; raise --peer-budget)")
  return line


def parse_args(argv):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument("--games", default=";".join(GAMES), help="';'-separated jaxgt game strings")
  ap.add_argument("--solvers", default=",".join(SOLVERS), help="','-separated jaxgt solvers")
  ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
  ap.add_argument("--budget", type=float, default=60.0, help="solve seconds per solver and game")
  ap.add_argument("--cap", type=int, default=200000, help="iteration cap per jaxgt solver")
  ap.add_argument("--peer-cap", type=int, default=200000,
                  help="iteration cap for OpenSpiel/LiteEFG")
  ap.add_argument("--peer-budget", type=float, default=None,
                  help="solve seconds per peer solver and game (default: --budget); a LiteEFG "
                       "solver also stops once slower to 1e-4 than the fastest LiteEFG one")
  ap.add_argument("--peer-target", type=float, default=min(TARGETS),
                  help="exploitability at which a peer stops (default the smallest target)")
  ap.add_argument("--no-peers", action="store_true", help="skip OpenSpiel and LiteEFG")
  ap.add_argument("--grid", type=float, default=1.1,
                  help="growth factor of the checkpoint grid (the time to a target overshoots by "
                       "at most this factor)")
  ap.add_argument("--planned", type=int, default=None,
                  help="iterations HS-PCFR+ / HS-DCFR plan for (default: their factories')")
  ap.add_argument("--quick", action="store_true", help="Kuhn and Leduc, 10 s budgets")
  ap.add_argument("--out", default="convergence_out", help="folder for the table and plots")
  return ap.parse_args(argv)


def main(argv=None):
  args = parse_args(argv)
  if args.dtype == "float64":
    jax.config.update("jax_enable_x64", True)
  games = QUICK_GAMES if args.quick else tuple(g for g in args.games.split(";") if g)
  budget = 10.0 if args.quick else args.budget
  peer_budget = budget if args.peer_budget is None else args.peer_budget
  names = [s for s in args.solvers.split(",") if s]
  for s in names:
    if s not in SOLVERS:
      raise SystemExit(f"unknown solver {s!r}; choose from {', '.join(SOLVERS)}")
  os.makedirs(args.out, exist_ok=True)
  results = {}  # game string -> (best jaxgt (seconds, solver) at 1e-4, peer curves)
  report = [f"jax {jax.__version__}, {jax.devices()[0].platform}, dtype {args.dtype}, "
            f"budget {budget:g} s per solver, {os.cpu_count()} CPU cores", ""]
  for gs in games:
    spec = GAMES.get(gs, (gs, None, False))
    label = spec[0]
    game = jaxgt.load(gs)
    print(f"== {label} ({gs}): {game.tree.num_histories} histories", flush=True)
    curves = []
    for s in names:
      c = run_jaxgt(game, s, args.dtype, args.cap, budget, min(TARGETS), args.grid, args.planned)
      curves.append(c)
      print(f"  {s:10s} compile {c.compile_s:6.2f}s  {c.ms_per_iteration():.4f} ms/it  "
            f"{reach_text(c)}  last {c.values[-1]:.2e} at {c.iterations[-1]}", flush=True)
    peers = run_peers(spec, label, args, peer_budget) if not args.no_peers and spec[1] else []
    report += table(label, curves + peers, set(names))
    ours, peer_best = best_at(curves, HEADLINE), best_at(peers, HEADLINE)
    results[gs] = (ours, peers)
    if ours:
      figure("seconds to 1e-4", ours[0], "s", higher_is_better=False, game=label, solver=ours[1],
             **({"peer": peer_best[1], "peer_value": peer_best[0]} if peer_best else {}))
    lines = [line for line in (openspiel_line(gs, label, curves, peers, ours, peer_best),
                               liteefg_line(peers, ours)) if line]
    for line in lines:
      print("  " + line)
    report += [""] * bool(lines) + lines + [""]  # a blank line ends the table
    png = os.path.join(args.out, f"convergence_{label.replace(' ', '_').replace(',', '_')}.png")
    plot(label, curves + peers, png, ours=set(names))
  line = lifted_leduc_line(results)
  if line:
    print(line)
    report += [line, ""]
  with open(os.path.join(args.out, "convergence.md"), "w") as f:
    f.write("\n".join(report) + "\n")
  print("\n".join(report))
  print(f"wrote {args.out}/convergence.md and plots")


if __name__ == "__main__":
  main()
