"""Tables 1-4 of Bowling et al. 2008 on Leduc: bias, std and RMSE of each estimator at 1000 hands.

  python examples/importance_sampling.py             # 200 matches of 1000 hands per record
  python examples/importance_sampling.py --quick     # 20 matches (a smoke run)

Player 0 is the agent whose strategies are known; player 1 (a CFR+ average
after 30 iterations) is the opponent whose strategy the estimators never see.
Each *record* is ``matches x hands`` hands played by one full-support strategy
of player 0; from it every candidate strategy is evaluated: the one that
played (on-policy) and the others (off-policy). The exact value of every
pairing comes from the compiled tree (``jaxgt.core.evaluate``), so the bias,
the standard deviation per hand and the root-mean-squared error of a
1000-hand match are measured, not estimated. Values are in milli-big-blinds
per hand (Leduc's ante is the big blind). ``0*`` marks a provably unbiased
estimator (Theorem 1: the logging strategy has full support); the others
show their empirical bias with a 95% interval. With partial information only
Basic, and on-policy All Cards, without a baseline keep the guarantee.

Next to the sampled figures (the paper's, from one record) every row has the
*exact* bias, standard deviation and 1000-hand RMSE: each estimator is a
function of the terminal reached (with partial information, of what the log
shows of it), so its moments under the logging profile are sums over the
tree's terminals (``importance.exact_moments``). They carry no sampling
noise, which matters off-policy: importance weights are heavy-tailed, and a
sample standard deviation from 200,000 hands can be far from the true one
(it can even put All Cards above Basic, which the exact figures never do:
All Cards is Basic's conditional expectation given what the opponent saw,
so by Rao-Blackwell its variance is never larger).

Rows: Basic (importance sampling; on-policy the Monte Carlo mean), BC-DIVAT
(Basic with the bet-call baseline), Early Folds, All Cards, AC+BC-DIVAT,
AC+EF+BC-DIVAT (the paper's best), and AIVAT (Burch et al. 2018) with the
bet-call values and with the exact values of the CFR+ 1000 profile. The
partial-information tables hide the opponent's card whenever the payoff does
not depend on it (folds), as the paper's logs did; there AIVAT appears twice:
its unbiased partial-information variant (player 0's own view only, what
``jaxgt evaluate`` uses on such logs) and the full-information control
variates averaged over the hidden cards (biased).
"""

import argparse
import math
import time

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxgt  # noqa: E402
from jaxgt.core.evaluate import evaluate  # noqa: E402
from jaxgt.evaluation import importance  # noqa: E402

ROWS = [  # (label, estimator, baseline)
    ("Basic", "basic", "none"),
    ("BC-DIVAT", "basic", "bc"),
    ("Early Folds", "early-folds", "none"),
    ("All Cards", "all-cards", "none"),
    ("AC+BC-DIVAT", "all-cards", "bc"),
    ("AC+EF+BC-DIVAT", "combined", "bc"),
    ("AIVAT (bet-call v)", "aivat", "bc"),
    ("AIVAT (CFR+ v)", "aivat", "exact"),
]
PARTIAL_ROWS = ROWS[:5] + [("AIVAT (CFR+ v), own view", "aivat", "exact"),
                           ("AIVAT (CFR+ v), full-info CVs", "aivat", "exact")]
VIEW_ONLY = "AIVAT (CFR+ v), own view"
"""The partial-information AIVAT (player 0's view only: unbiased); the row below it averages the
full-information control variates over the hidden cards (biased)."""


def mix(compiled, parts):
  """sum_k w_k * profile_k (per player) for ``parts = [(w, profile), ...]``."""
  return tuple(sum(w * np.asarray(prof[p]) for w, prof in parts) for p in (0, 1))


def uniform(compiled):
  return tuple(np.asarray(pt.legal, np.float64) / np.asarray(pt.legal).sum(1, keepdims=True)
               for pt in compiled.tree.players)


def strategies(game, explore):
  """Candidate strategies of player 0, the opponent and the value-function profile.

  The two logging strategies mix ``explore`` of the uniform strategy in (full support).
  """
  cfr = {n: jaxgt.solve(game, "cfr+", iterations=n, eval_every=0, dtype="float64").policy.probs
         for n in (10, 30, 100, 1000)}
  uni, bc = uniform(game), importance.bet_call_profile(game)
  cand = {
      "CFR+100 (smoothed)": mix(game, [(1 - explore, cfr[100]), (explore, uni)]),
      "Aggressive (biased)": mix(game, [(0.7 - explore, cfr[1000]), (0.3, bc), (explore, uni)]),
      "CFR+10": cfr[10],
      "CFR+1000": cfr[1000],
  }
  return cand, cfr[30], cfr[1000]


def run_record(game, played, cand, opponent, reference, matches, hands, key, partial):
  profile = (cand[played][0], opponent[1])
  n = matches * hands
  actions, returns = importance.sample_episodes(game, profile, n, key)
  reach = importance.terminal_reach(game, profile)  # [T] the record's terminal distribution
  every = importance.terminal_episodes(game)  # [T] one episode per terminal, for exact moments
  if partial:
    actions = importance.partial_view(game, actions, 0)
    every = importance.partial_view(game, every, 0)
  located = importance.locate_episodes(game, actions, returns)
  u0 = np.asarray(game.tree.terminal_payoff, np.float64)
  located_every = importance.locate_episodes(game, every, np.stack([u0, -u0], 1))
  rows = PARTIAL_ROWS if partial else ROWS
  out = []
  for name, strat in cand.items():
    true = evaluate(game, (strat[0], opponent[1])).value
    for label, est, base in rows:
      table = importance.estimator_table(game, strat, player=0, logged_policy=cand[played],
                                         estimator=est, baseline=base, baseline_policy=reference,
                                         partial_information=label == VIEW_ONLY)
      v = importance.episode_values(game, table, located, player=0, logged=cand[played][0])
      exact_v = importance.episode_values(game, table, located_every, player=0)
      exact_mean, exact_std = importance.exact_moments(exact_v, reach)
      per_match = v.reshape(matches, hands).mean(1)
      # partial information: Basic without a baseline keeps its guarantee (every completion of
      # a hidden outcome has the same payoff and pi_i), and so does on-policy All Cards without
      # one (at a fold the opponent-indistinguishable terminals all pay the same)
      unbiased = not partial or label == VIEW_ONLY or (base == "none" and (
          est == "basic" or (est == "all-cards" and name == played)))
      out.append(dict(record=played, strategy=name, on=name == played, row=label, true=true,
                      bias=v.mean() - true, ci=importance.Z95 * v.std(ddof=1) / math.sqrt(n),
                      std=v.std(ddof=1), rmse=math.sqrt(np.mean((per_match - true) ** 2)),
                      unbiased=unbiased, exact_bias=exact_mean - true, exact_std=exact_std,
                      exact_rmse=math.sqrt((exact_mean - true) ** 2 + exact_std ** 2 / hands)))
  return out


def print_record(results, title):
  print(f"\n{title}")
  print(f"{'strategy / estimator':<40} {'bias':>16} {'StdDev':>9} {'RMSE':>8}   "
        f"{'exact: bias':>11} {'StdDev':>9} {'RMSE':>8}")
  last = None
  for r in results:
    if r["strategy"] != last:
      last = r["strategy"]
      tag = "on-policy" if r["on"] else "off-policy"
      print(f"{last} ({tag}, exact value {1000 * r['true']:.1f})")
    bias = "0*" if r["unbiased"] else f"{1000 * r['bias']:.1f} +- {1000 * r['ci']:.1f}"
    exact = "0*" if r["unbiased"] else f"{1000 * r['exact_bias']:.1f}"
    print(f"  {r['row']:<38} {bias:>16} {1000 * r['std']:9.1f} {1000 * r['rmse']:8.1f}   "
          f"{exact:>11} {1000 * r['exact_std']:9.1f} {1000 * r['exact_rmse']:8.1f}")


def print_summary(results, title, rows):
  print(f"\n{title}: min-max over the pairings, sampled (exact)")
  print(f"{'':<32} {'|bias|':>22} {'StdDev':>26} {'RMSE':>22}")
  for on in (True, False):
    print("On policy" if on else "Off policy")
    for label, _, _ in rows:
      sel = [r for r in results if r["on"] == on and r["row"] == label]

      def span(key, digits=0):
        x = [abs(1000 * r[key]) for r in sel]
        return f"{min(x):.{digits}f}-{max(x):.{digits}f}"
      bias = ("0*" if all(r["unbiased"] for r in sel)
              else f"{span('bias')} ({span('exact_bias')})")
      print(f"  {label:<30} {bias:>22} {span('std') + ' (' + span('exact_std') + ')':>26} "
            f"{span('rmse') + ' (' + span('exact_rmse') + ')':>22}")


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--matches", type=int, default=200, help="1000-hand matches per record")
  ap.add_argument("--hands", type=int, default=1000)
  ap.add_argument("--quick", action="store_true", help="20 matches per record")
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--explore", type=float, default=0.02,
                  help="weight of the uniform strategy in the logging strategies")
  args = ap.parse_args()
  matches = 20 if args.quick else args.matches
  game = jaxgt.load("leduc_poker")
  t0 = time.time()
  cand, opponent, reference = strategies(game, args.explore)
  print(f"{game.name}: player 0's strategies known, player 1 = CFR+ 30 iterations (unknown); "
        f"{matches} matches x {args.hands} hands per record; mbb/hand")
  key = jax.random.key(args.seed)
  full, part = [], []
  for k, played in enumerate(["CFR+100 (smoothed)", "Aggressive (biased)"]):
    for partial in (False, True):
      res = run_record(game, played, cand, opponent, reference, matches, args.hands,
                       jax.random.fold_in(key, k), partial)
      (part if partial else full).extend(res)
      kind = "Partial" if partial else "Full"
      print_record(res, f"{kind} information, record played by {played} "
                        f"(Table {'3' if partial else '1'} pattern)")
  print_summary(full, "Summary, full information (Table 2 pattern)", ROWS)
  print_summary(part, "Summary, partial information (Table 4 pattern)", PARTIAL_ROWS)

  def pair(rows, label):
    return {(r["record"], r["strategy"]): r for r in rows if r["row"] == label}
  basic, ac = pair(full, "Basic"), pair(full, "All Cards")
  best, aivat = pair(full, "AC+EF+BC-DIVAT"), pair(full, "AIVAT (CFR+ v)")
  for key, what in (("std", "sampled"), ("exact_std", "exact")):
    r_ac = [basic[k][key] / ac[k][key] for k in basic if not basic[k]["on"]]
    r_best = [basic[k][key] / best[k][key] for k in basic if not basic[k]["on"]]
    r_aivat = [best[k][key] / aivat[k][key] for k in basic]
    print(f"\n{what} StdDev, off-policy pairings: Basic / All Cards {min(r_ac):.2f}-"
          f"{max(r_ac):.2f}x, Basic / AC+EF+BC-DIVAT {min(r_best):.2f}-{max(r_best):.2f}x; "
          f"all pairings: AC+EF+BC-DIVAT / AIVAT (CFR+ v) {min(r_aivat):.2f}-"
          f"{max(r_aivat):.2f}x (AIVAT lower in {sum(x > 1 for x in r_aivat)} of {len(r_aivat)})")
  unbiased = [r for r in full + part if r["unbiased"]]
  within = sum(abs(r["bias"]) < 3 * r["ci"] / importance.Z95 for r in unbiased)
  worst = max(abs(r["bias"]) / (r["ci"] / importance.Z95) for r in unbiased)
  print(f"provably unbiased rows (0*): sampled bias within 3 standard errors in {within} of "
        f"{len(unbiased)} (largest {worst:.2f} standard errors)")
  print(f"{time.time() - t0:.0f}s")


if __name__ == "__main__":
  main()
