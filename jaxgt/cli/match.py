"""``jaxgt match GAME AGENT0 AGENT1``: head-to-head matches, half in each seat (Lisý et al. 2015, Sec. 5)."""

from __future__ import annotations

import math
import sys
import warnings

from jaxgt.cli import agents as agents_cli
from jaxgt.cli.common import (PAYOFF, PROBABILITY, add_max_histories, check_positive,
                              check_writable, clipped_interval, load_playable, plural, print_json)
from jaxgt.extras import require


def add_parser(sub) -> None:
  p = agents_cli.add_agent_command(
      sub, "match", "play two agents against each other",
      "Plays AGENT0 against AGENT1, half the matches in each seat, and prints AGENT0's mean payoff "
      "and win rate (a draw counts half) with normal 95% intervals. A game too large to "
      "enumerate is played through its rules by random, oos and ismcts (capacity: table rows "
      "per player), gtcfr and sog (capacity: search tree nodes); agents with "
      "tables report their rows in use and refused inserts, GT-CFR its tree's nodes.")
  p.add_argument("game")
  p.add_argument("agent0", help="agent spec; payoffs are reported from its view")
  p.add_argument("agent1", help="agent spec of the opponent")
  p.add_argument("--matches", type=int, default=1000,
                 help="number of matches, even: half with AGENT0 as player 0 (default 1000)")
  p.add_argument("--duplicate", action="store_true",
                 help="duplicate matches: each pair of matches deals the same chance outcomes "
                      "(cards, dice) with the seats swapped, so the luck of the deal cancels; "
                      "the 95%% intervals are over the pairs")
  p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
  p.add_argument("--block", type=int, default=None,
                 help="matches per run of the compiled match program (compiled once), progress "
                      "after each; the matches do not depend on it (default: a tenth of --matches, fewer "
                      "where the device's free memory holds fewer; a block whose search state "
                      "does not fit is refused before compiling)")
  p.add_argument("--plot", metavar="PNG", help="plot AGENT0's running mean payoff with its 95%% interval")
  p.add_argument("--json", action="store_true",
                 help="print one JSON object: AGENT0's mean payoff and win rate with their 95%% "
                      "intervals, the number of episodes (docs/CLI.md)")
  p.add_argument("--log", metavar="FILE.jsonl",
                 help="write every episode (actions from the root, chance included, OpenSpiel ids; "
                      "returns of player 0 and 1; seats: the player AGENT0 and AGENT1 played; agents: their "
                      "specs) as JSON Lines")
  add_max_histories(p)


def run(args) -> int:
  specs = agents_cli.parse_agents(args.agent0, args.agent1)
  if args.matches < 2 or args.matches % 2:
    raise ValueError(f"--matches must be an even integer >= 2 (half the matches in each seat), "
                     f"got {args.matches}")
  if args.block is not None and args.block < 1:
    raise ValueError(f"--block must be positive, got {args.block}")
  if args.seed < 0:
    raise ValueError(f"--seed must be >= 0, got {args.seed}")
  check_positive(args, "max_histories")
  check_writable({"--log": args.log, "--plot": args.plot})
  if args.plot:
    require("plot", "--plot")
  info = sys.stderr if args.json else sys.stdout
  g = load_playable(args.game, args.max_histories)
  agents = [s.build(g) for s in specs]

  import jax
  from jaxgt.evaluation import match as match_lib
  from jaxgt.evaluation import referee
  n = args.matches
  with warnings.catch_warnings():  # said below, once
    warnings.simplefilter("ignore", UserWarning)
    traced = referee.play_mode(g, agents, "auto", jax.random.key(args.seed))
  tenth = max(1, math.ceil(n / 10))
  block = match_lib.fit_block(agents, n, args.block, default=tenth) if traced else (
      args.block or tenth)
  name = referee.game_name(g)  # a device game's name alone omits its parameters
  print(f"{name}: {specs[0]} vs {specs[1]}, {n} matches ({n // 2} in each seat"
        + (f"; {n // 2} duplicate pairs, each pair's deals the same" if args.duplicate else "")
        + f"), seed {args.seed}" + ("" if traced else " (an agent does not trace: Python loop)"),
        file=info, flush=True)
  for spec, agent in zip(specs, agents):  # what a search holds, before any run
    if hasattr(agent, "memory_bytes"):
      print(f"  {spec}: {agent.memory_bytes() / 2**20:.1f} MiB of search state per match "
            "served at once", file=info)
  if traced and args.block is None and block < tenth:
    print(f"  {plural(block, 'match')} a run of the match program: what the device's free memory "
          "holds", file=info)

  from jaxgt.cli.compiling import Compiling
  compiled = Compiling(f"the match program (with the first {plural(block, 'match')})",
                       sys.stderr) if traced else None

  def progress(done, total):
    if compiled is not None:
      compiled.done()
    print(f"  {done}/{total} matches", file=sys.stderr, flush=True)

  res = match_lib.play(g, agents[0], agents[1], n, jax.random.key(args.seed),
                       mode="auto" if traced else "python", block=block, progress=progress,
                       duplicate=args.duplicate)
  lo, hi = res.mean - res.ci95, res.mean + res.ci95
  win_lo, win_hi = clipped_interval(res.win_rate, res.win_ci95)
  wins, draws = int((res.payoffs > 0).sum()), int((res.payoffs == 0).sum())
  if args.json:
    out = {"game": name, "agents": [str(s) for s in specs], "episodes": res.num_matches,
           "seed": args.seed, "duplicate": args.duplicate, "mean": res.mean, "ci95": [lo, hi], "win_rate": res.win_rate,
           "win_ci95": [win_lo, win_hi], "wins": wins, "draws": draws,
           "losses": n - wins - draws,
           "units": {"mean": PAYOFF + " (agent 0)", "win_rate": PROBABILITY + " (agent 0)"}}
    if res.memory is not None:
      out["memory"] = list(res.memory)
    print_json(out)
  else:
    print(f"mean payoff of {specs[0]}: {res.mean:+.4f}  95% CI [{lo:+.4f}, {hi:+.4f}]")
    print(f"win rate of {specs[0]}: {res.win_rate:.4f}  95% CI [{win_lo:.4f}, {win_hi:.4f}]  "
          f"({plural(wins, 'win')}, {plural(draws, 'draw')}, {plural(n - wins - draws, 'loss')}; "
          "a draw counts half)")
    for seat in (0, 1):
      sat = res.seats == seat
      r = match_lib.MatchResult.from_payoffs(res.payoffs[sat], res.seats[sat])
      print(f"  as player {seat}: {r.mean:+.4f} ± {r.ci95:.4f}")
  for spec, agent, mem in zip(specs, agents, res.memory or ()):
    if mem is not None and getattr(agent, "memory_kind", "tables") == "tree":
      print(f"  {spec}: most search tree nodes in use {mem['rows'][0]} of "
            f"{agent.config.capacity}; searches whose tree filled (most in one match) "
            f"{mem['refused'][0]}" + ("  (raise capacity)" if mem["refused"][0] else ""),
            file=info)
    elif mem is not None:
      print(f"  {spec}: most table rows in use {mem['rows'][0]} (player 0), {mem['rows'][1]} "
            f"(player 1); refused inserts {mem['refused'][0]}, {mem['refused'][1]}"
            + ("  (the table filled: raise capacity)" if any(mem["refused"]) else ""),
            file=info)
  if args.log:
    write_log(args.log, g, res, [str(s) for s in specs])
    print(f"wrote {n} episodes to {args.log}", file=info)
  if args.plot:
    plot_running_mean(res, args.plot, f"{name}: {specs[0]} vs {specs[1]}")
    print(f"saved plot to {args.plot}", file=info)
  return 0


def write_log(path, game, result, specs) -> int:
  """Writes ``result``'s episodes in the episode-log format: the game string, the actions from
  the root, returns of players 0 and 1, ``"seats": [seat of AGENT0, seat of AGENT1]`` (agent 0
  is player ``m % 2`` in line ``m``) and ``"agents": specs`` (the two agent specs).

  The returns are the enumerated tree's terminal payoffs for a compiled game and, for a game
  played through its rules, the rules' ``returns`` at each match's final state (the states
  the match's payoffs were computed from)."""
  from jaxgt.evaluation import referee
  from jaxgt.evaluation.episode_log import write_episodes
  return write_episodes(path, referee.game_name(game), result.episodes(),
                        episode_returns(game, result).tolist(),
                        [(int(s), 1 - int(s)) for s in result.seats], specs)


def episode_returns(game, result):
  """``[M, 2]`` float64 returns of players 0 and 1 in each match of ``result``."""
  import jax
  import numpy as np
  from jaxgt.games.device import DeviceGame
  if isinstance(game, DeviceGame):
    return np.asarray(jax.vmap(game.returns)(result.histories), np.float64)
  tree = game.tree
  u0 = np.asarray(tree.terminal_payoff, np.float64)[
      np.asarray(tree.history_terminal)[result.histories]]
  return np.stack([u0, -u0], axis=1)


def plot_running_mean(result, path, title: str) -> None:
  """Saves the running mean payoff of agent0 with its 95% interval against matches played."""
  require("plot", "--plot").use("Agg")
  import matplotlib.pyplot as plt
  import numpy as np
  mean, ci = result.running()
  k = np.arange(1, len(mean) + 1) * (2 if result.paired else 1)  # matches played
  fig, ax = plt.subplots(figsize=(6, 4))
  ax.plot(k, mean, label="running mean")
  ax.fill_between(k, mean - ci, mean + ci, alpha=0.3, label="95% interval")
  ax.axhline(0.0, color="gray", lw=0.8)
  ax.set_xlabel("matches")
  ax.set_ylabel("mean payoff of agent0")
  ax.set_title(title, fontsize=9)
  ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)
