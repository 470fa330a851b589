"""``jaxgt train GAME``: Student of Games' sound self-play training (Schmid et al. 2023,
Algorithm 2)."""

from __future__ import annotations

import pathlib
import sys
import time

from jaxgt.cli.common import (PAYOFF, add_max_histories, check_positive, check_writable,
                              check_writable_dir, load_playable, print_json, rate_and_eta)
from jaxgt.extras import require


def add_parser(sub) -> None:
  p = sub.add_parser(
      "train", help="train a value-and-policy network by sound self-play (Student of Games)",
      description="Self-play actors (GT-CFR searches with the network at the leaves), a query "
      "solver and the learner interleaved with fixed ratios (Schmid et al. 2023, Algorithm 2); "
      "metrics in DIR/metrics.jsonl, orbax checkpoints in DIR/checkpoints. The trained agent is "
      "sog(checkpoint=DIR,simulations=S,expansions_per_update=c). A game too large to enumerate "
      "whose public states factor (liars_dice(numdice=2)) is played through its rules: "
      "re-solving searches grown from the rules, evaluated exactly only where the game can "
      "still be enumerated (at most 2,000,000 histories).")
  p.add_argument("game")
  group = p.add_mutually_exclusive_group()
  group.add_argument("--preset", help="a named config: tiny, leduc, liars_dice (a game played "
                     "through its rules), scotland_yard (default: leduc)")
  group.add_argument("--config", metavar="FILE", help="a JSON config (TrainConfig's fields; "
                     "unknown keys refused)")
  p.add_argument("--rules", action="store_true",
                 help="play the game through its rules (searches grown from the rules, PBSs of "
                      "game states) even where it can be enumerated; the periodic exact "
                      "evaluation then constructs the re-solving agent's policy from the rules")
  p.add_argument("--steps", type=int, help="stop at N learner steps in total (a resumed run "
                 "counts its earlier steps)")
  p.add_argument("--minutes", type=float, help="stop after M minutes of this invocation")
  p.add_argument("--out", required=True, metavar="DIR", help="run directory")
  p.add_argument("--resume", action="store_true", help="continue from DIR's newest checkpoint")
  p.add_argument("--seed", type=int, default=0, help="the run's seed (default 0)")
  p.add_argument("--devices", type=int, help="devices the actors' games and the learner's batch "
                 "are split over (default: all; 1: no sharding)")
  p.add_argument("--plot", metavar="FILE", help="write exploitability vs learner steps (PNG)")
  p.add_argument("--log-every", type=int, default=1, metavar="N",
                 help="a progress line every N learner steps, and at every evaluation "
                      "(default 1: every iteration)")
  p.add_argument("--json", action="store_true",
                 help="print one JSON object at the end (the progress lines go to stderr)")
  add_max_histories(p)


def _check_out(out: pathlib.Path, resume: bool) -> None:
  from jaxgt.training import loop
  check_writable_dir("--out", out)
  if not out.parent.is_dir():  # a run folder is made, not the folders above it (a typo)
    raise ValueError(f"--out {out}: the directory {out.parent} does not exist")
  holds_run = any((out / name).exists() for name in (loop.CONFIG_FILE, loop.CHECKPOINTS))
  if not resume and holds_run:
    raise ValueError(f"--out {out} already holds a run; pass --resume to continue it or choose "
                     "another directory")
  if resume and not holds_run:
    raise ValueError(f"--resume: {out} holds no run (no {loop.CONFIG_FILE}, no "
                     f"{loop.CHECKPOINTS}/); check the path, or drop --resume to start one")


def run(args) -> int:
  from jaxgt.training import config as config_lib
  from jaxgt.training import loop
  if args.steps is None and args.minutes is None:
    raise ValueError("give --steps N or --minutes M")
  if args.steps is not None and args.steps < 1:
    raise ValueError(f"--steps must be positive, got {args.steps}")
  if args.minutes is not None and not args.minutes > 0:
    raise ValueError(f"--minutes must be positive, got {args.minutes}")
  if args.seed < 0:
    raise ValueError(f"--seed must be >= 0, got {args.seed}")
  check_positive(args, "log_every", "max_histories")
  if args.devices is not None:
    import jax
    if not 1 <= args.devices <= jax.device_count():
      raise ValueError(f"--devices must be between 1 and {jax.device_count()}, got "
                       f"{args.devices}")
  if args.config is not None:
    cfg = config_lib.load_config(args.config)
  else:
    cfg = config_lib.preset(args.preset or "leduc")
  out = pathlib.Path(args.out)
  _check_out(out, args.resume)
  check_writable({"--plot": args.plot})
  require("train", "jaxgt train")
  if args.plot:
    require("plot", "--plot")
  if args.rules:
    from jaxgt.games import make_from_string
    from jaxgt.games.device import DeviceGame
    g = make_from_string(args.game, args.max_histories)
    if not isinstance(g, DeviceGame):
      raise ValueError(f"--rules: {args.game} has no rules to play through (not a device game)")
  else:
    g = load_playable(args.game, args.max_histories)
  label = loop.game_label(g)
  trainer = loop.trainer_for(g, cfg)  # checks the config against the game before any output
  if args.plot and not trainer.evaluates:
    raise ValueError(f"--plot draws exploitability, which {label}, played through its rules, "
                     "has none (too large to enumerate, or eval_every is 0)")
  if args.resume and (out / loop.CONFIG_FILE).exists():
    name, stored = loop.read_config(out)
    if name != label:
      raise ValueError(f"--resume: {out} holds a run of {name}, not {label}")
    if stored != cfg:
      raise ValueError(f"--resume: {out} was trained with another config; pass the same "
                       "--preset/--config")
  if args.resume:
    from jaxgt.training import checkpoint
    if checkpoint.latest_step(out / loop.CHECKPOINTS) is None:
      raise ValueError(f"--resume: {out} holds no checkpoint to resume from (in "
                       f"{out / loop.CHECKPOINTS}); drop --resume and choose a new --out")
  info = sys.stderr if args.json else sys.stdout
  print(f"{label}: training into {out} ({'resuming' if args.resume else 'new run'}, "
        f"seed {args.seed})", file=info, flush=True)
  last = {"line": None, "shown": None, "first": None}
  started = time.perf_counter()
  from jaxgt.cli.compiling import Compiling
  compiled = Compiling("the actors', query solver's and learner's programs (with the first "
                       "iteration)", info)

  def show(line):
    last["line"] = line
    now = time.perf_counter()
    if last["first"] is None:  # the rate is measured from the first line (after compiling)
      compiled.done()
      last["first"] = (line["step"], now)
    shown = last["shown"]
    if ("exploitability" not in line and shown is not None
        and line["step"] // args.log_every == shown // args.log_every):
      return
    last["shown"] = line["step"]
    ex = f"  exploitability {line['exploitability']:.4g}" if "exploitability" in line else ""
    step0, t0 = last["first"]
    rate = rate_and_eta(
        line["step"] - step0, now - t0, "steps",
        None if args.steps is None else args.steps - line["step"],
        None if args.minutes is None else 60.0 * args.minutes - (now - started))
    drawable = line.get("replay_drawable", line["replay_size"])
    drawn = f" ({drawable} drawable)" if drawable < line["replay_size"] else ""
    print(f"step {line['step']}  loss {line['loss']:.4g} (value {line['value_loss']:.4g}, "
          f"policy {line['policy_loss']:.4g})  replay {line['replay_size']}{drawn}  queries "
          f"{line['query_size']}  searches/s {line['searches_per_s']:.3g}  queries/s "
          f"{line['queries_per_s']:.3g}{ex}{rate}", file=info, flush=True)

  state = loop.train(g, cfg, out, steps=args.steps, minutes=args.minutes, seed=args.seed,
                     resume=args.resume, on_metrics=show, devices=args.devices)
  print(f"done: {int(state.learner_steps)} learner steps, checkpoint in {out / loop.CHECKPOINTS}",
        file=info)
  if args.plot:
    loop.plot(out, args.plot)
    print(f"wrote {args.plot}", file=info)
  if args.json:
    evaluated = [m for m in loop.read_metrics(out) if "exploitability" in m]
    print_json({"game": label, "out": str(out), "resumed": bool(args.resume), "seed": args.seed,
                "steps": int(state.learner_steps),
                "checkpoint": str(out / loop.CHECKPOINTS),
                "exploitability": evaluated[-1]["exploitability"] if evaluated else None,
                "exploitability_step": evaluated[-1]["step"] if evaluated else None,
                "metrics": last["line"], "plot": args.plot,
                "units": {"exploitability": PAYOFF, "steps": "learner steps",
                          "metrics": "as in DIR/metrics.jsonl"}})
  return 0
