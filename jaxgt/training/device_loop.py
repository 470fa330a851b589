"""Student of Games' training loop (Schmid et al. 2023, Algorithm 2) on a device game played
through its rules: :class:`DeviceTrainer`, the :class:`~jaxgt.training.loop.Trainer` whose
actors and query solver are :mod:`jaxgt.training.device_selfplay`'s, with the same replay and
query buffers, learner, loop iteration, run directory and checkpoints
(:func:`jaxgt.training.loop.train` picks it for a :class:`~jaxgt.games.device.DeviceGame`).

A device game's run directory names the game by its game string, and its checkpoint metadata
names the network (:func:`device_metadata`), which is what
:func:`jaxgt.training.device_run.load_network` and ``sog(checkpoint=DIR)`` read. Exploitability
cannot be computed without enumerating the game, so such a run makes no periodic evaluation
(its metrics lines say ``"evaluation": "skipped"``).
"""

from __future__ import annotations

import dataclasses

from jaxgt.core.factored import check_factored
from jaxgt.games.device import DeviceGame
from jaxgt.training.agent import ParamsHolder
from jaxgt.training.config import TrainConfig
from jaxgt.training.device_run import network_for
from jaxgt.training.device_selfplay import DeviceQuerySolver, DeviceSelfPlay
from jaxgt.training.loop import Trainer

EVALUATION = "skipped"
"""The metrics' ``evaluation`` entry of a device game's run (no exact exploitability)."""


def device_metadata(model, game: DeviceGame) -> dict:
  """Checkpoint metadata of a device game's network: the game string and the architecture
  (the entries :func:`jaxgt.training.device_run.load_network` checks)."""
  enc = model.encoding
  return {"game": game.game_string(), "network": "cvpn", "hidden": [int(h) for h in model.hidden],
          "embed_dim": int(model.embed_dim), "k_max": int(enc.k_max),
          "num_actions": int(enc.num_actions), "feature_size": int(enc.feature_size)}


@dataclasses.dataclass(frozen=True, eq=False)
class DeviceTrainer(Trainer):
  """The static parts of a run on a device game (module docstring). ``TypeError`` or
  ``ValueError`` before anything is compiled for a game whose public states do not factor, a
  public-state embedding (``embed_dim > 0``: device games number no public states) or a
  ``capacity`` too small for a decision's branch."""

  game: DeviceGame
  config: TrainConfig
  evaluates = False  # no exact exploitability through the rules

  def __post_init__(self):
    check_factored(self.game, "training through a game's rules")
    if self.config.embed_dim:
      raise ValueError(f"embed_dim must be 0 on {self.game.game_string()}, played through its "
                       "rules: a public-state embedding needs numbered public states")
    model = network_for(self.game, self.config)
    actors = DeviceSelfPlay(self.game, model, self.config)
    set_ = object.__setattr__
    set_(self, "model", model)
    set_(self, "actors", actors)
    set_(self, "solver", DeviceQuerySolver(actors))
    set_(self, "learner_config", self.config.learner())
    set_(self, "holder", ParamsHolder())

  def metadata(self) -> dict:
    """Checkpoint metadata: game string, architecture and config (a resume must match all)."""
    return dict(device_metadata(self.model, self.game), config=self.config.to_json())

  def exploitability(self, params, seed: int = 0) -> float:
    raise ValueError(f"{self.game.game_string()} is played through its rules: its "
                     "exploitability cannot be computed exactly")
