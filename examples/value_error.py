"""How far a trained network's values are from the subgame values it stands for, on the
belief states it trains on and on those a search asks it about.

  python examples/value_error.py --game leduc_poker --out runs/leduc0 --queries 128
  python examples/value_error.py --game kuhn_poker --out /tmp/sog --searches 4 --json
  python examples/value_error.py --out runs/leduc0 --fit 128x128:20000,512x512:20000:512
  python examples/value_error.py --out runs/leduc0 --fit 512x512:20000:512 --save runs/refit

For a run of ``jaxgt train`` on a game that can be enumerated, three sets of public belief
states (PBSs) are drawn: the newest checkpoint's replay buffer (``replay``: what the learner
fits) and the leaf queries of ``SoG(s, 1)`` searches from the game's root with the network at
their leaves (``sog<s>``: what a search at evaluation time asks). Each PBS is solved with
its ranges fixed by a GT-CFR search whose leaves are valued by solving the rest of the game
(:func:`jaxgt.search.evaluator.exact`; ``--exact-simulations`` simulations at 10 CFR
iterations each, the query solver's ``SoG(s, 0.1)``): its root values are the reference.

Errors are of expected values in game units (chips in poker), per information state of the
PBS, averaged with each state weighted by its own player's range (how likely the player is
to hold it), over the slots the network is trained on. Printed per set: the network against
the reference (``net``), the zero function against it (``zero``: the values' own size), and
for the replay buffer the stored training targets against the reference (``targets``, the
targets' noise) and the network against its targets (``fit``). ``repeat`` solves the first
PBSs again with other keys: the reference's own noise.

``--fit WIDTHS:STEPS[:BATCH[:LR]],...`` asks what another network would make of the same
data: for each spec a fresh network of those trunk widths (``512x512``) is fitted offline to
the replay window (the run's learner step with ``BATCH`` and ``LR`` in place of the run's
and no use bound: uniform draws with replacement), then measured like the run's network at a
quarter, half and all of ``STEPS``; the replay set and a further held-out sample (``held``:
the network against the stored targets, as ``fit``) are left out of its training data. The
run's own network is the first row (it was trained on the held-out sample too). A run's
network far behind a fresh fit to its own window says the learner does not use the data it
holds (docs/reproductions.md, "The learner's draws, measured").

``--save DIR`` (with one ``--fit`` spec) writes the network fitted for all of its steps as a
run directory: the run's config with the spec's widths, batch and learning rate, and one
checkpoint at the fit's step count holding the fitted network and the run's replay window.
``examples/train_sog.py --evaluate-only --out DIR`` plays it like any run's network.
"""

import argparse
import dataclasses
import json
import pathlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from jaxgt.cli.common import check_writable_dir
from jaxgt.core.checks import check_positive_int
from jaxgt.core.compiler import compile_game
from jaxgt.games import make_from_string
from jaxgt.nets import gtcfr_evaluator
from jaxgt.core.sequence_form import safe_div
from jaxgt.nets.cvpn import CVPN, MASS_TOL, fitted_values
from jaxgt.search import evaluator as evaluator_lib
from jaxgt.search import gtcfr as gtcfr_search
from jaxgt.training import learner as learner_lib
from jaxgt.training import loop

CHUNK = 64
"""PBSs solved per batched reference search."""

HELD_OUT = 4096
"""Replay examples left out of ``--fit``'s training data (at most half the window)."""

UNBOUNDED = 1e9
"""``--fit``'s use bound: none in practice (uniform draws over the training slots)."""


def parse_fit(text: str, batch_size: int, alpha_init: float) -> list[dict]:
  """``--fit``'s specs as ``[{hidden, steps, batch, lr}]`` (``ValueError`` naming the bad
  one)."""
  specs = []
  for spec in text.split(","):
    parts = spec.split(":")
    try:
      if not 2 <= len(parts) <= 4:
        raise ValueError
      hidden = tuple(int(w) for w in parts[0].split("x"))
      steps = int(parts[1])
      batch = int(parts[2]) if len(parts) > 2 else batch_size
      lr = float(parts[3]) if len(parts) > 3 else alpha_init
    except ValueError:
      raise ValueError(f"--fit spec {spec!r} is not WIDTHS:STEPS[:BATCH[:LR]] "
                       "(e.g. 512x512:20000:512)") from None
    for w in hidden:
      check_positive_int(f"--fit {spec!r} width", w)
    check_positive_int(f"--fit {spec!r} steps", steps)
    check_positive_int(f"--fit {spec!r} batch", batch)
    if not (np.isfinite(lr) and lr > 0):
      raise ValueError(f"--fit {spec!r}: the learning rate must be a positive number, got {lr}")
    specs.append({"hidden": hidden, "steps": steps, "batch": batch, "lr": lr})
  return specs


def fit_offline(trainer, replay, spec: dict, seed: int, report):
  """Fits a fresh network of ``spec``'s widths to the filled slots of ``replay`` with the
  run's learner step (:func:`jaxgt.training.learner.learner_step`: its loss and optimiser,
  ``spec``'s batch and learning rate, no use bound, so draws are uniform with replacement);
  ``report(model, params, steps, seconds)`` at a quarter, half and all of the steps; returns
  the learner state at the end (:class:`jaxgt.training.learner.LearnerState`)."""
  cfg = trainer.config
  model = CVPN(trainer.model.encoding, hidden=spec["hidden"], embed_dim=cfg.embed_dim,
               value_space=cfg.value_space)
  lc = dataclasses.replace(trainer.learner_config, batch_size=spec["batch"],
                           alpha_init=spec["lr"], max_updates=UNBOUNDED)
  state = learner_lib.init_learner(model, jax.random.PRNGKey(seed), lc)
  replay = replay.replace(uses=jnp.zeros_like(replay.uses))
  key, done, t0 = jax.random.PRNGKey(seed + 1), 0, time.perf_counter()
  for end in sorted({max(1, spec["steps"] // 4), max(1, spec["steps"] // 2), spec["steps"]}):
    for i in range(done, end):
      state, replay, _ = learner_lib.learner_step(model, lc, state, replay,
                                                  jax.random.fold_in(key, i))
    done = end
    jax.block_until_ready(state.params)
    report(model, state.params, end, time.perf_counter() - t0)
  return state


def reference_solver(trainer, simulations: int):
  """``solve(pbs, key) -> ReplayExample``: each PBS's root values under its fixed ranges by
  GT-CFR with exact leaves (the query solver's targets with ``solver_leaves = "exact"``)."""
  sp = trainer.actors
  src, enc = sp.source, trainer.model.encoding
  smap = gtcfr_evaluator.slot_map(src, enc)
  cfg = gtcfr_search.make_config(src, simulations=simulations, expansions_per_update=0.1,
                                 value_average=trainer.config.value_average, dtype="float32")
  exact = evaluator_lib.exact(src)

  def solve(pbs, key):
    parts = []
    for i in range(0, pbs.public.shape[0], CHUNK):
      sl = jax.tree_util.tree_map(lambda x: x[i:i + CHUNK], pbs)
      ranges = gtcfr_evaluator.to_device_order(smap, sl.public, sl.ranges).astype(jnp.float32)
      res = gtcfr_search.search(src, cfg, exact, sl.public, ranges,
                                jax.random.split(jax.random.fold_in(key, i), sl.public.shape[0]))
      parts.append(jax.vmap(sp.examples)(res, ranges))
    return jax.tree_util.tree_map(lambda *x: jnp.concatenate(x), *parts)

  return solve


def expected_values(model, params, examples):
  """``(network, reference, mask)``: expected values in game units of the network and of the
  examples' value targets, and the slots both are defined at (the learner's value mask)."""
  out = model.apply(params, examples.pbs)
  mask, _ = model.encoding.masks(examples.pbs.public)
  pred, target, mask = fitted_values(model, out, examples.pbs, examples.values,
                                     mask & examples.value_mask)
  if model.value_space == "counterfactual":  # values over the counterfactual mass
    mass = model.encoding.counterfactual_mass(examples.pbs.public, examples.pbs.ranges)
    return safe_div(pred, mass), safe_div(target, mass), mask & (mass > MASS_TOL)
  unit = model.encoding.value_unit
  return pred * unit, target * unit, mask


def weighted_error(a, b, mask, ranges) -> float:
  """Mean ``|a - b|`` over masked-in slots, each weighted by its player's range."""
  w = jnp.where(mask, ranges, 0.0)
  return float(jnp.sum(w * jnp.abs(a - b)) / jnp.maximum(jnp.sum(w), 1e-30))


def root_queries(trainer, params, simulations: int, n: int, key):
  """Up to ``n`` leaf queries (PBSs) of ``SoG(simulations, 1)`` searches from the game's root
  with the network at their leaves (uniform over the searches' logged queries)."""
  sp = trainer.actors
  src, enc = sp.source, trainer.model.encoding
  cfg = gtcfr_search.make_config(src, simulations=simulations, expansions_per_update=1.0,
                                 log_queries=64, value_average=trainer.config.value_average,
                                 dtype="float32")
  B = max(1, -(-n // 16))
  ranges = jnp.broadcast_to(sp.agent.ranges, (B,) + sp.agent.ranges.shape)
  res = gtcfr_search.search(src, cfg, sp.evaluator, jnp.zeros(B, jnp.int32), ranges,
                            jax.random.split(key, B), evaluator_state=params)
  pbs, valid = gtcfr_evaluator.query_pbs(enc, src, res.state.queries)
  keep = np.flatnonzero(np.asarray(valid).reshape(-1))
  keep = np.random.default_rng(simulations).permutation(keep)[:n]
  return jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:])[keep], pbs)


def check_save_dir(save, fit) -> pathlib.Path | None:
  """``--save``'s folder, refused (``ValueError``) unless there is exactly one ``--fit`` spec
  and the folder is new or empty and can be written."""
  if save is None:
    return None
  if len(fit) != 1:
    raise ValueError(f"--save needs exactly one --fit spec (got {len(fit)})")
  path = check_writable_dir("--save", save)
  if path.is_dir() and any(path.iterdir()):
    raise ValueError(f"--save {path}: the folder is not empty")
  return path


def save_fit(game, trainer, state, spec: dict, fitted_state, save: pathlib.Path) -> None:
  """Writes ``fitted_state`` (the learner state fitted to ``state``'s window with ``spec``)
  as a run directory in ``save``: the run's config with the spec's network and learner
  settings, one checkpoint at ``spec["steps"]`` learner steps with the run's replay window."""
  cfg = dataclasses.replace(trainer.config, hidden=spec["hidden"], batch_size=spec["batch"],
                            alpha_init=spec["lr"])
  fitted = loop.trainer_for(game, cfg)
  loop.write_config(save, game, cfg)
  loop.save(fitted, save, fitted.init(0).replace(
      learner=fitted_state, replay=state.replay,
      learner_steps=jnp.asarray(spec["steps"], jnp.int32)))


def measure(game, out: pathlib.Path, queries: int = 128, exact_simulations: int = 30,
            searches=(10, 100), seed: int = 0, fit=(), on_fit=None, save=None) -> dict:
  """``{set: {net, zero, ...}}`` (module docstring) for the run in ``out``; with ``fit``
  (:func:`parse_fit`'s specs) also ``"fits"``: one row per network and measurement,
  ``{hidden, steps, batch, lr, seconds, held, <set>: error}`` (the run's network first),
  each also passed to ``on_fit`` as it is made; with ``save`` (a folder, one spec) the fitted
  network is written there by :func:`save_fit`."""
  _, cfg = loop.read_config(out)
  trainer = loop.trainer_for(game, cfg)
  state = loop.restore(trainer, out, 0)
  params, model = state.learner.params, trainer.model
  solve = reference_solver(trainer, exact_simulations)
  key = jax.random.PRNGKey(seed)
  results = {"learner_steps": int(state.learner_steps)}
  refs = {}

  def one(name, pbs, stored=None):
    ref = solve(pbs, jax.random.fold_in(key, 1))
    net, truth, mask = expected_values(model, params, ref)
    r = ref.pbs.ranges
    row = {"pbs": int(pbs.public.shape[0]), "net": weighted_error(net, truth, mask, r),
           "zero": weighted_error(0.0, truth, mask, r)}
    if stored is not None:
      _, target, smask = expected_values(model, params, stored)
      smask = smask & mask
      row["targets"] = weighted_error(target, truth, smask, r)
      row["fit"] = weighted_error(net, target, smask, r)
    m = min(16, pbs.public.shape[0])
    again = solve(jax.tree_util.tree_map(lambda x: x[:m], pbs), jax.random.fold_in(key, 2))
    _, truth2, mask2 = expected_values(model, params, again)
    row["repeat"] = weighted_error(truth[:m], truth2, mask[:m] & mask2, r[:m])
    results[name] = row
    refs[name] = ref

  filled = np.flatnonzero(np.asarray(state.replay.filled))
  order = np.random.default_rng(seed).permutation(filled)
  if filled.size:
    stored = jax.tree_util.tree_map(lambda x: x[order[:queries]], state.replay.data)
    one("replay", stored.pbs, stored)
  for s in searches:
    pbs = root_queries(trainer, params, s, queries, jax.random.fold_in(key, 100 + s))
    if pbs.public.shape[0]:
      one(f"sog{s}", pbs)
  if not fit:
    return results
  n_held = max(min(queries, filled.size), min(HELD_OUT, filled.size // 2))
  held = jax.tree_util.tree_map(lambda x: x[order[:n_held]], state.replay.data)
  train = state.replay.replace(filled=state.replay.filled.at[order[:n_held]].set(False))
  if filled.size == n_held:
    raise ValueError(f"{out}'s replay window holds {filled.size} examples: too few to fit")
  results["fits"] = []

  def report(model_, params_, steps, seconds, spec):
    pred, target, mask = expected_values(model_, params_, held)
    row = dict(spec, hidden="x".join(map(str, spec["hidden"])), steps=steps,
               seconds=round(seconds, 1),
               held=weighted_error(pred, target, mask, held.pbs.ranges))
    for name, ref in refs.items():
      net, truth, m = expected_values(model_, params_, ref)
      row[name] = weighted_error(net, truth, m, ref.pbs.ranges)
    results["fits"].append(row)
    if on_fit is not None:
      on_fit(row)

  own = {"hidden": cfg.hidden, "steps": results["learner_steps"], "batch": cfg.batch_size,
         "lr": cfg.alpha_init}
  report(model, params, own["steps"], 0.0, dict(own, run=True))
  for spec in fit:
    fitted = fit_offline(trainer, train, spec, seed,
                         lambda m, p, steps, seconds, spec=spec: report(m, p, steps, seconds,
                                                                         spec))
    if save is not None:
      save_fit(game, trainer, state, spec, fitted, save)
  return results


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--game", default="leduc_poker")
  ap.add_argument("--out", required=True, help="the run directory of jaxgt train")
  ap.add_argument("--queries", type=int, default=128, help="PBSs per set (default 128)")
  ap.add_argument("--exact-simulations", type=int, default=30,
                  help="simulations of each reference solve, 10 CFR iterations each (default 30)")
  ap.add_argument("--searches", default="10,100",
                  help="comma-separated s of the SoG(s, 1) searches whose leaf queries are "
                       "measured (default 10,100)")
  ap.add_argument("--seed", type=int, default=0)
  ap.add_argument("--fit", metavar="WIDTHS:STEPS[:BATCH[:LR]],...",
                  help="also fit fresh networks offline to the replay window and measure them "
                       "(module docstring), e.g. 128x128:20000,512x512:20000:512")
  ap.add_argument("--save", metavar="DIR",
                  help="with one --fit spec: write the fitted network as a run directory that "
                       "examples/train_sog.py --evaluate-only can play")
  ap.add_argument("--json", action="store_true", help="print one JSON object")
  args = ap.parse_args(argv)
  try:
    check_positive_int("--queries", args.queries)
    check_positive_int("--exact-simulations", args.exact_simulations)
    try:
      searches = tuple(int(s) for s in args.searches.split(","))
    except ValueError:
      raise ValueError(f"--searches must be comma-separated positive integers, got "
                       f"{args.searches!r}") from None
    for s in searches:
      check_positive_int("--searches", s)
    out = pathlib.Path(args.out)
    name, run_cfg = loop.read_config(out)
    fit = parse_fit(args.fit, run_cfg.batch_size, run_cfg.alpha_init) if args.fit else ()
    save = check_save_dir(args.save, fit)
    game = compile_game(make_from_string(args.game))
    if name != game.name:
      raise ValueError(f"{out} holds a run of {name}, not {game.name}")
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  sets = ["replay"] + [f"sog{s}" for s in searches]
  if fit and not args.json:
    print("fits: mean |error| of expected values (game units), range-weighted; held: against "
          "the stored targets, the sets: against their references")
    print(f"{'network':>14} {'batch':>6} {'lr':>8} {'steps':>7} {'s':>7} {'held':>7} "
          + " ".join(f"{k:>7}" for k in sets))

  def on_fit(row):
    if args.json:
      return
    label = row["hidden"] + (" (run)" if row.get("run") else "")
    print(f"{label:>14} {row['batch']:6d} {row['lr']:8.2g} {row['steps']:7d} "
          f"{row['seconds']:7.1f} {row['held']:7.3f} "
          + " ".join(f"{row[k]:7.3f}" if k in row else f"{'':>7}" for k in sets), flush=True)

  try:
    res = measure(game, out, args.queries, args.exact_simulations, searches, args.seed, fit,
                  on_fit, save)
  except ValueError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  if save is not None and not args.json:
    print(f"saved the fitted network as a run directory: {save}")
  if args.json:
    print(json.dumps(res))
    return 0
  print(f"{out}: {res.pop('learner_steps')} learner steps; mean |error| of expected values "
        "(game units), range-weighted")
  print(f"{'set':>8} {'PBSs':>5} {'net':>7} {'zero':>7} {'targets':>8} {'fit':>7} {'repeat':>7}")
  res.pop("fits", None)
  for k, row in res.items():
    cells = [f"{row[c]:7.3f}" if c in row else f"{'':>7}" for c in ("net", "zero")]
    cells += [f"{row[c]:8.3f}" if c in row else f"{'':>8}" for c in ("targets",)]
    cells += [f"{row[c]:7.3f}" if c in row else f"{'':>7}" for c in ("fit", "repeat")]
    print(f"{k:>8} {row['pbs']:5d} " + " ".join(cells))
  return 0


if __name__ == "__main__":
  sys.exit(main())
