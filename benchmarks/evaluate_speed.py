"""Episodes estimated per second: the vectorized estimators against a plain Python loop.

One Leduc log (``--episodes`` hands of a full-support profile, written and
read back through the JSON Lines contract) is estimated off-policy two ways,
with the Basic and the All Cards estimator:

* **jaxgt**: the estimator as a per-terminal table on the compiled tree
  (built once per strategy: "table"), then every episode located through the
  transition arrays and gathered ("episodes/s", jitted over the whole log);
* **loop**: a plain Python loop over the same episodes that replays each one
  in OpenSpiel (``pyspiel``, C++ states), looks the two strategies up by
  information-state string and forms the paper's weight (Bowling et al. 2008,
  Examples 1 and 3; All Cards replays the history once per possible private
  card of the evaluated player). It runs on ``--loop-episodes`` of them.

Both give the same per-episode values (the largest difference is printed);
the ratio is the same-run speed-up. Parsing the JSON log is common to both
and timed separately.

  python benchmarks/evaluate_speed.py [--episodes 200000] [--loop-episodes 2000] [--quick]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxgt  # noqa: E402
from jaxgt.evaluation import importance  # noqa: E402
from jaxgt.bench_report import figure  # noqa: E402
from jaxgt.evaluation.episode_log import read_episodes, write_episodes  # noqa: E402

PLAYER = 0
BENCH_QUICK = ["--quick"]


def loop_estimates(compiled, episodes, target, logged, estimator):
  """Per-episode Basic / All Cards values, one episode at a time through pyspiel states."""
  import pyspiel
  game = pyspiel.load_game(compiled.game.openspiel_game_string())
  index = compiled.infostate_index(PLAYER)

  def replay(history):
    """(pi_c, pi_i, pi-hat_i, payoff) of a full history, or None if it is not legal."""
    state = game.new_initial_state()
    pc = pi = ph = 1.0
    for a in history:
      if state.is_chance_node():
        probs = dict(state.chance_outcomes())
        if a not in probs:
          return None
        pc *= probs[a]
      else:
        if a not in state.legal_actions():
          return None
        if state.current_player() == PLAYER:
          row = index[state.information_state_string(PLAYER)]
          pi *= target[row, a]
          ph *= logged[row, a]
      state.apply_action(a)
    return pc, pi, ph, state.returns()[PLAYER]

  out = np.empty(len(episodes))
  for b, ep in enumerate(episodes):
    hist = list(ep.history)
    if estimator == "basic":
      _, pi, ph, u = replay(hist)
      out[b] = u * pi / ph
      continue
    # All Cards: every private card of the evaluated player (history step PLAYER) instead
    num = den = 0.0
    for card in range(6):
      alt = replay(hist[:PLAYER] + [card] + hist[PLAYER + 1:])
      if alt is not None:
        pc, pi, ph, u = alt
        num += pc * pi * u
        den += pc * ph
    out[b] = num / den
  return out


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--episodes", type=int, default=200_000)
  ap.add_argument("--loop-episodes", type=int, default=2000)
  ap.add_argument("--quick", action="store_true", help="20000 episodes, 300 in the loop")
  args = ap.parse_args(argv)
  n, n_loop = (20_000, 300) if args.quick else (args.episodes, args.loop_episodes)
  compiled = jaxgt.load("leduc_poker")
  target, logged, opponent = (importance.random_profile(compiled, s) for s in (1, 2, 3))
  actions, returns = importance.sample_episodes(compiled, (logged[0], opponent[1]), n,
                                                jax.random.key(0))
  with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "log.jsonl")
    write_episodes(path, compiled.name,
                   ([int(a) for a in row if a != importance.PADDING] for row in actions), returns)
    t0 = time.perf_counter()
    episodes = read_episodes(path)
    parse_s = time.perf_counter() - t0
  print(f"{compiled.name}: {n} logged episodes, off-policy, player {PLAYER}; parsing the log "
        f"{parse_s:.2f}s ({n / parse_s:,.0f} lines/s, common to both)")
  print(f"{'estimator':<10} {'table s':>8} {'locate s':>9} {'jaxgt ep/s':>12} "
        f"{'loop ep/s':>10} {'ratio':>8} {'max |diff|':>11}")
  for estimator in ("basic", "all-cards"):
    hist = [e.history for e in episodes]
    rets = [e.returns for e in episodes]
    # warm (compile) once, then time a second run on the same log
    table = importance.estimator_table(compiled, target, player=PLAYER, logged_policy=logged,
                                       estimator=estimator)
    importance.episode_values(compiled, table, hist, rets, player=PLAYER)
    t0 = time.perf_counter()
    table = jax.block_until_ready(importance.estimator_table(
        compiled, target, player=PLAYER, logged_policy=logged, estimator=estimator))
    table_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = importance.episode_values(compiled, table, hist, rets, player=PLAYER)
    locate_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = loop_estimates(compiled, episodes[:n_loop], target[PLAYER], logged[PLAYER], estimator)
    loop_s = time.perf_counter() - t0
    rate, loop_rate = n / (table_s + locate_s), n_loop / loop_s
    diff = float(np.max(np.abs(ref - ours[:n_loop])))
    figure(estimator, rate, "episodes/s", peer="Python loop over pyspiel states", peer_value=loop_rate,
           game=compiled.name, episodes=n)
    print(f"{estimator:<10} {table_s:8.3f} {locate_s:9.3f} {rate:12,.0f} {loop_rate:10,.0f} "
          f"{rate / loop_rate:7.0f}x {diff:11.2e}")


if __name__ == "__main__":
  main()
