"""Student of Games' training loop (Schmid et al. 2023, Algorithm 2) on one host: self-play actors
(:mod:`jaxgt.training.selfplay`), the query solver (:mod:`jaxgt.training.queries`) and the
learner (:mod:`jaxgt.training.learner`) interleaved with the config's fixed ratios.

One loop iteration ``i`` runs ``actor_steps`` actor programs (each: every one of the ``G``
games makes one decision), ``solver_steps`` query-solver programs and ``learner_steps``
gradient steps, each part one jitted program with the network parameters passed as data
(compiled once per run). Iteration ``i``'s keys are ``fold_in(key, i)`` of the run's key,
so the run is a function of its seed and config alone: a run resumed from a checkpoint
continues exactly as the uninterrupted run (checkpoints hold the whole
:class:`TrainState`: network, optimiser, both buffers, actors with their games' TD(1)
pending records, counters, key).

Run directory ``DIR``: ``config.json`` (game and :class:`TrainConfig`), ``metrics.jsonl``
(one JSON object per iteration: ``step`` = learner steps, losses, buffer sizes, searches/s,
queries/s, the share of time per part, the TD(1) counts ``td1_sampled`` (decisions held
back for an outcome target) and ``td1_added`` (rows written at their game's end), and
``exploitability`` of the current SoG policy every ``eval_every`` learner steps, exact:
:func:`jaxgt.evaluation.construct.evaluate` of
``SoG(eval_simulations, 1)``; a device game played through its rules is evaluated exactly where
it can be enumerated (at most :data:`EVAL_MAX_HISTORIES` histories; the re-solving agent's
policy grown from the rules, :func:`jaxgt.evaluation.construct.construct_rules_policy`),
otherwise its lines say ``"evaluation": "skipped"``, :class:`DeviceTrainer`),
``checkpoints/<step>`` (orbax, every ``checkpoint_every``
learner steps and at the end).

A device game too large to enumerate whose public states factor (``liars_dice(numdice=2)``)
trains through its rules (:class:`DeviceTrainer`): the actors and query solver of
:mod:`jaxgt.training.device_selfplay` (searches grown from the rules, PBSs of game states),
the same buffers, learner, iteration and checkpoints; ``config.json`` names the game by its
game string and the checkpoint metadata names the network (:func:`device_metadata`), which
:func:`jaxgt.training.device_run.load_network` and ``sog(checkpoint=DIR)`` read.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import pathlib
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp

from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxgt import sharding
from jaxgt import struct
from jaxgt.agents.device_gtcfr import DeviceGTCFRAgent
from jaxgt.core.game_tree import CompiledGame
from jaxgt.evaluation import construct
from jaxgt.core.factored import check_factored
from jaxgt.extras import require
from jaxgt.games.device import DeviceGame
from jaxgt.games.size import GameTooLargeError
from jaxgt.nets.cvpn import CVPN
from jaxgt.nets.encoding import build_encoding
from jaxgt.nets.factored_encoding import FactoredEncoding
from jaxgt.training import buffers, checkpoint, learner
from jaxgt.training.agent import ParamsHolder, params_evaluator, sog_agent
from jaxgt.training.config import TrainConfig, from_saved
from jaxgt.training.device_selfplay import DeviceQuerySolver, DeviceSelfPlay
from jaxgt.training.queries import QuerySolver
from jaxgt.training.selfplay import DTYPE, Actors, SelfPlay

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"
CHECKPOINTS = "checkpoints"


@struct.dataclass
class TrainState:
  """Everything a run carries between iterations (what a checkpoint holds)."""

  learner: learner.LearnerState  # params, optimiser state, step (gradient steps taken)
  replay: buffers.ReplayBuffer  # [C_r] examples
  queries: buffers.QueryBuffer  # [C_q] belief states
  actors: Actors  # [G] games (positions, search summaries, TD(1) pending records)
  key: Any  # [2] uint32 the run's key (iteration i uses fold_in(key, i))
  iteration: Any  # [] int32 loop iterations done
  learner_steps: Any  # [] int32 learner steps attempted (the --steps counter)
  searches: Any  # [] int32 self-play searches
  solved: Any  # [] int32 queries solved


@dataclasses.dataclass(frozen=True, eq=False)
class Trainer:
  """The static parts of a run: game, network, config and the three compiled programs."""

  game: CompiledGame
  config: TrainConfig
  evaluates = True  # the periodic evaluation computes the exact exploitability

  def __post_init__(self):
    model = CVPN(build_encoding(self.game), hidden=self.config.hidden,
                 embed_dim=self.config.embed_dim, value_space=self.config.value_space)
    actors = SelfPlay(self.game, model, self.config)
    set_ = object.__setattr__
    set_(self, "model", model)
    set_(self, "actors", actors)
    set_(self, "solver", QuerySolver(actors))
    set_(self, "learner_config", self.config.learner())
    set_(self, "holder", ParamsHolder())
    set_(self, "eval_evaluator", params_evaluator(actors.source, model, self.holder))

  def metadata(self) -> dict:
    """Checkpoint metadata: game, architecture and config (a resume must match all)."""
    return dict(checkpoint.network_metadata(self.model), config=self.config.to_json())

  def init(self, seed: int) -> TrainState:
    """A fresh run from ``seed``."""
    key = jax.random.PRNGKey(seed)
    k_net, k_actors = jax.random.split(jax.random.fold_in(key, 1 << 30))
    enc, cfg = self.model.encoding, self.config
    zero = jnp.zeros((), jnp.int32)
    return TrainState(learner=learner.init_learner(self.model, k_net, self.learner_config),
                      replay=buffers.replay_buffer(enc, cfg.replay_capacity, DTYPE),
                      queries=buffers.query_buffer(enc, cfg.query_capacity, DTYPE),
                      actors=self.actors.init(k_actors), key=key, iteration=zero,
                      learner_steps=zero, searches=zero, solved=zero)

  def check_mesh(self, mesh: Mesh) -> None:
    """Raises unless the games and the learner's batch split evenly over ``mesh``."""
    n = int(mesh.devices.size)
    for name, size in (("num_actors", self.config.num_actors),
                       ("batch_size", self.learner_config.batch_size)):
      if size % n:
        raise ValueError(f"{name} ({size}) must be a multiple of the device count ({n}) to "
                         f"shard the actors and the learner over the devices")

  def place(self, state: TrainState, mesh: Mesh | None) -> TrainState:
    """``state`` laid out over ``mesh``: the actors' games split over its devices,
    everything else replicated, so the actor program runs each device's games and the
    learner (with :meth:`iterate`'s ``mesh``) is data-parallel. ``None``: unchanged."""
    if mesh is None:
      return state
    self.check_mesh(mesh)
    rows = NamedSharding(mesh, PartitionSpec(mesh.axis_names[0]))
    whole = NamedSharding(mesh, PartitionSpec())
    G = self.config.num_actors
    actors = jax.tree_util.tree_map(  # per-game arrays split, counters replicated
        lambda x: sharding.place(x, rows if x.ndim and x.shape[0] == G else whole),
        sharding.to_host(state.actors))
    rest = sharding.replicate(sharding.to_host(state.replace(actors=())), mesh)
    return rest.replace(actors=actors)

  def programs(self) -> tuple:
    """The jitted programs (for compile counting): actors, solver, learner."""
    return (self.actors.step, self.solver.step, learner.learner_step)

  def iterate(self, state: TrainState, mesh: Mesh | None = None) -> tuple[TrainState, dict]:
    """One loop iteration (module docstring): ``(state, metrics)`` with per-part wall times;
    ``mesh``: the learner's batch split over its devices (``state`` laid out by
    :meth:`place`)."""
    batch_sharding = None if mesh is None else NamedSharding(mesh,
                                                             PartitionSpec(mesh.axis_names[0]))
    cfg = self.config
    key = jax.random.fold_in(state.key, state.iteration)
    k_act, k_solve, k_learn = jax.random.split(key, 3)
    params = state.learner.params
    replay, queries, actors = state.replay, state.queries, state.actors
    times = {}
    t0 = time.perf_counter()
    td1 = {"td1_sampled": 0, "td1_added": 0}  # TD(1) counts of this iteration's actor steps
    for j in range(cfg.actor_steps):
      actors, replay, queries, am = self.actors.step(params, actors, replay, queries,
                                                     jax.random.fold_in(k_act, j))
      td1 = {k: v + am[k] for k, v in td1.items()}
    jax.block_until_ready((replay, queries, actors))
    t1 = time.perf_counter()
    solved = state.solved
    for j in range(cfg.solver_steps):
      replay, queries, m = self.solver.step(params, replay, queries,
                                            jax.random.fold_in(k_solve, j))
      solved = solved + m["solved"]
    jax.block_until_ready(replay)
    t2 = time.perf_counter()
    lstate = state.learner
    lm = {}
    for j in range(cfg.learner_steps):
      lstate, replay, lm = learner.learner_step(self.model, self.learner_config, lstate, replay,
                                                jax.random.fold_in(k_learn, j),
                                                batch_sharding=batch_sharding)
    jax.block_until_ready(lstate)
    t3 = time.perf_counter()
    times = {"time_actors": t1 - t0, "time_solver": t2 - t1, "time_learner": t3 - t2}
    new = TrainState(learner=lstate, replay=replay, queries=queries, actors=actors,
                     key=state.key, iteration=state.iteration + 1,
                     learner_steps=state.learner_steps + cfg.learner_steps,
                     searches=state.searches + cfg.actor_steps * cfg.num_actors, solved=solved)
    metrics = {k: float(v) for k, v in lm.items()}
    metrics.update({k: int(v) for k, v in td1.items()})
    metrics.update(times)
    return new, metrics

  def exploitability(self, params, seed: int = 0) -> float:
    """Exact exploitability (game units) of ``SoG(eval_simulations, 1)`` with ``params``
    (one compilation for all parameter versions: the shared evaluator reads them)."""
    self.holder.params = params
    agent = sog_agent(self.game, self.model, params, simulations=self.config.eval_simulations,
                      evaluator=self.eval_evaluator,
                      value_average=self.config.value_average, alpha=self.config.alpha,
                      dtype=DTYPE)
    return float(construct.evaluate(agent, seeds=(seed,)).avg)


# ------------------------------------------------------------------ device games
EVALUATION = "skipped"
"""The metrics' ``evaluation`` entry of a device game's run too large to enumerate (no exact
exploitability)."""
EVAL_MAX_HISTORIES = 2_000_000
"""A device game with at most this many histories is enumerated for the periodic exact
evaluation of a run through its rules (:meth:`DeviceTrainer.exploitability`)."""


def device_metadata(model, game: DeviceGame) -> dict:
  """Checkpoint metadata of a device game's network: the game string and the architecture
  (the entries :func:`jaxgt.training.device_run.load_network` checks)."""
  enc = model.encoding
  return {"game": game.game_string(), "network": "cvpn",
          "hidden": [int(h) for h in model.hidden], "embed_dim": int(model.embed_dim),
          "k_max": int(enc.k_max), "num_actions": int(enc.num_actions),
          "feature_size": int(enc.feature_size)}


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceTrainer(Trainer):
  """The static parts of a run on a device game (module docstring). ``TypeError`` or
  ``ValueError`` before anything is compiled for a game whose public states do not factor, a
  public-state embedding (``embed_dim > 0``: device games number no public states) or a
  ``capacity`` too small for a decision's branch."""

  game: DeviceGame
  config: TrainConfig
  evaluates = False  # set when the game can be enumerated (__post_init__)

  def __post_init__(self):
    check_factored(self.game, "training through a game's rules")
    if self.config.p_td1 > 0:
      raise ValueError(f"p_td1 must be 0 on {self.game.game_string()}, played through its "
                       "rules: TD(1) outcome targets are written by the enumerated game's "
                       "actors only")
    if self.config.solver_leaves != "network":
      raise ValueError(f"solver_leaves must be 'network' on {self.game.game_string()}, played "
                       "through its rules: exact leaf values need the enumerated game")
    if self.config.embed_dim:
      raise ValueError(f"embed_dim must be 0 on {self.game.game_string()}, played through its "
                       "rules: a public-state embedding needs numbered public states")
    # the network jaxgt.training.device_run.network_for reads back
    model = CVPN(FactoredEncoding(self.game), hidden=self.config.hidden,
                 embed_dim=self.config.embed_dim, value_space=self.config.value_space)
    actors = DeviceSelfPlay(self.game, model, self.config)
    set_ = object.__setattr__
    set_(self, "model", model)
    set_(self, "actors", actors)
    set_(self, "solver", DeviceQuerySolver(actors))
    set_(self, "learner_config", self.config.learner())
    set_(self, "holder", ParamsHolder())
    set_(self, "enumerated", self._enumerated() if self.config.eval_every else None)
    set_(self, "evaluates", self.enumerated is not None)

  def _enumerated(self):
    """The game enumerated from its rules, or ``None`` above :data:`EVAL_MAX_HISTORIES`
    histories (the size estimate refuses a game clearly over it before enumerating)."""
    from jaxgt.core.compiler import compile_game
    try:
      return compile_game(self.game, max_histories=EVAL_MAX_HISTORIES)
    except GameTooLargeError:
      return None

  def metadata(self) -> dict:
    """Checkpoint metadata: game string, architecture and config (a resume must match all)."""
    return dict(device_metadata(self.model, self.game), config=self.config.to_json())

  def exploitability(self, params, seed: int = 0) -> float:
    """Exact exploitability (game units) of the re-solving ``SoG(eval_simulations, 1)`` with
    ``params`` on a game small enough to enumerate (the searches grown from the rules, one per
    public state: :func:`jaxgt.evaluation.construct.construct_rules_policy`; one compilation
    for all parameter versions), the agent the enumerated game's run evaluates."""
    if self.enumerated is None:
      object.__setattr__(self, "enumerated", self._enumerated())
    if self.enumerated is None:
      raise ValueError(f"{self.game.game_string()} is played through its rules and is too "
                       f"large to enumerate (over {EVAL_MAX_HISTORIES:,} histories): its "
                       "exploitability cannot be computed exactly")
    self.holder.params = params
    if getattr(self, "eval_agent", None) is None:
      a = self.actors
      object.__setattr__(self, "eval_agent", DeviceGTCFRAgent(
          self.game, simulations=self.config.eval_simulations,
          evaluator=params_evaluator(a.source, self.model, self.holder),
          evaluator_source=a.source, value_average=self.config.value_average, resolve=True,
          alpha=self.config.alpha, dtype=DTYPE))
    return float(construct.evaluate(self.eval_agent, seeds=(seed,), game=self.enumerated).avg)


@functools.lru_cache(maxsize=4)
def trainer_for(game, config: TrainConfig) -> Trainer:
  """The cached :class:`Trainer` of ``(game, config)`` (runs in one process share compilations):
  a compiled game's, or a device game's played through its rules
  (:class:`DeviceTrainer`)."""
  if isinstance(game, DeviceGame):
    return DeviceTrainer(game, config)
  return Trainer(game, config)


def game_label(game) -> str:
  """The name a run directory gives its game: a compiled game's name, a device game's game
  string."""
  return game.game_string() if isinstance(game, DeviceGame) else game.name


# ------------------------------------------------------------------ run directories
def write_config(out: pathlib.Path, game: CompiledGame, config: TrainConfig) -> None:
  out.mkdir(parents=True, exist_ok=True)
  (out / CONFIG_FILE).write_text(json.dumps({"game": game_label(game),
                                             "config": config.to_json()}, indent=1))


def read_config(out: pathlib.Path) -> tuple[str, TrainConfig]:
  """``(game name, config)`` of the run directory ``out`` (``ValueError`` if unreadable)."""
  path = pathlib.Path(out) / CONFIG_FILE
  try:
    data = json.loads(path.read_text())
    return str(data["game"]), from_saved(data["config"])
  except (OSError, json.JSONDecodeError, KeyError, TypeError) as e:
    raise ValueError(f"{out} is not a jaxgt train run directory ({path}: {e})") from e


def save(trainer: Trainer, out: pathlib.Path, state: TrainState) -> None:
  """Checkpoint ``state`` at its learner step (skipped if that step is already saved), then
  delete the checkpoints the config's retention (``keep_checkpoints``,
  ``keep_checkpoint_every``) does not keep."""
  step = int(state.learner_steps)
  if checkpoint.latest_step(out / CHECKPOINTS) == step:
    return
  checkpoint.save(out / CHECKPOINTS, step, state, trainer.metadata())
  checkpoint.prune(out / CHECKPOINTS, trainer.config.keep_checkpoints,
                   trainer.config.keep_checkpoint_every)


def restore(trainer: Trainer, out: pathlib.Path, seed: int, step: int | None = None) -> TrainState:
  """The checkpoint of ``out`` at learner step ``step`` (default the newest;
  ``CheckpointError`` for another game/architecture or a step not saved)."""
  # a run's config is compared as a TrainConfig: a checkpoint written before a config field
  # existed holds that field's value of its time (config.from_saved)
  return checkpoint.restore(out / CHECKPOINTS, trainer.init(seed), trainer.metadata(), step,
                            normalise={"config": lambda c: from_saved(c).to_json()})


@dataclasses.dataclass
class LoadedRun:
  """A trained network: ``model`` and ``params`` of a run directory's newest checkpoint."""

  model: CVPN
  params: Any
  step: int
  config: TrainConfig


def load_run(out: pathlib.Path, game: CompiledGame) -> LoadedRun:
  """The newest checkpoint of the run in ``out`` for ``game`` (``ValueError`` otherwise)."""
  name, config = read_config(out)
  if name != game.name:
    raise ValueError(f"{out} holds a run of {name}, not {game.name}")
  trainer = trainer_for(game, config)
  state = restore(trainer, pathlib.Path(out), 0)
  return LoadedRun(model=trainer.model, params=state.learner.params,
                   step=int(state.learner_steps), config=config)


def train(game: CompiledGame, config: TrainConfig, out, *, steps: int | None = None,
          minutes: float | None = None, seed: int = 0, resume: bool = False,
          on_metrics: Callable[[dict], None] | None = None,
          devices: int | None = None) -> TrainState:
  """Runs (or with ``resume`` continues) a training run of ``game`` (compiled, or a device game
  played through its rules: :class:`DeviceTrainer`) in ``out`` until ``steps`` learner
  steps in total or ``minutes`` of wall time in this call, whichever comes first (module
  docstring); ``on_metrics(line)`` sees every metrics line (the progress display).
  ``devices``: how many devices the actors and the learner shard over (default all; 1: no
  sharding; :meth:`Trainer.place`)."""
  require("train", "training (its checkpoints)")
  out = pathlib.Path(out)
  n = jax.device_count() if devices is None else devices
  if not 1 <= n <= jax.device_count():
    raise ValueError(f"devices must be between 1 and {jax.device_count()}, got {devices}")
  mesh = sharding.mesh(jax.devices()[:n]) if n > 1 else None
  trainer = trainer_for(game, config)
  if mesh is not None:  # before any compilation
    trainer.check_mesh(mesh)
  if resume and checkpoint.latest_step(out / CHECKPOINTS) is not None:
    state = restore(trainer, out, seed)
  else:
    state = trainer.init(seed)
  state = trainer.place(state, mesh)
  write_config(out, game, config)
  start = time.perf_counter()
  last_eval = None
  with open(out / METRICS_FILE, "a") as log:
    while True:
      if steps is not None and int(state.learner_steps) >= steps:
        break
      if minutes is not None and time.perf_counter() - start >= 60.0 * minutes:
        break
      prev = int(state.learner_steps)
      state, metrics = trainer.iterate(state, mesh)
      step = int(state.learner_steps)
      part = sum(metrics[k] for k in ("time_actors", "time_solver", "time_learner"))
      line = {"step": step, "iteration": int(state.iteration), **metrics,
              "replay_size": int(buffers.replay_size(state.replay)),
              # the examples the learner may still draw (fewer uses than max_updates)
              "replay_drawable": int(jnp.sum(buffers.eligible(state.replay,
                                                              config.max_updates))),
              "query_size": int(jnp.sum(state.queries.filled)),
              "searches": int(state.searches), "queries_solved": int(state.solved),
              "games": int(state.actors.games),
              "searches_per_s": config.actor_steps * config.num_actors
              / max(metrics["time_actors"], 1e-9),
              "queries_per_s": (config.solver_steps * config.solver_batch
                                / max(metrics["time_solver"], 1e-9)) if config.solver_steps
              else 0.0,
              "learner_steps_per_s": config.learner_steps / max(metrics["time_learner"], 1e-9),
              "elapsed_s": time.perf_counter() - start}
      for k in ("time_actors", "time_solver", "time_learner"):
        line["share_" + k[5:]] = metrics[k] / max(part, 1e-9)
      every = config.eval_every
      if not trainer.evaluates:
        line["evaluation"] = EVALUATION
      elif every and (step // every != prev // every or last_eval is None):
        line["exploitability"] = trainer.exploitability(state.learner.params, seed)
        last_eval = step
      if step // config.checkpoint_every != prev // config.checkpoint_every:
        save(trainer, out, state)
      log.write(json.dumps(line) + "\n")
      log.flush()
      if on_metrics is not None:
        on_metrics(line)
  save(trainer, out, state)
  return state


def read_metrics(out) -> list[dict]:
  """The metrics lines of a run directory."""
  path = pathlib.Path(out) / METRICS_FILE
  if not path.exists():
    return []
  return [json.loads(s) for s in path.read_text().splitlines() if s.strip()]


def plot(out, path) -> None:
  """Exploitability vs learner steps of the run in ``out`` as an image ``path``."""
  require("plot", "plotting").use("Agg")
  import matplotlib.pyplot as plt
  rows = [r for r in read_metrics(out) if "exploitability" in r]
  fig, ax = plt.subplots(figsize=(5, 3.5))
  ax.plot([r["step"] for r in rows], [r["exploitability"] for r in rows], marker="o")
  ax.set_xlabel("learner steps")
  ax.set_ylabel("exploitability of SoG (game units)")
  ax.set_yscale("log")
  ax.grid(True, alpha=0.3)
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)
