"""The head-to-head example on a game played through its rules: budgets, pairs and its JSON."""

import json

import pytest

from script_modules import load_script


def _example():
  return load_script("examples/oos_vs_ismcts.py", "oos_vs_ismcts")


def test_trajectories_per_move_are_iterations_times_batch_and_two_update_players_for_oos():
  ex = _example()
  assert ex.iterations_of("oos", 1000, 64) == 7 and ex.samples_per_move("oos", 1000, 64) == 896
  assert ex.iterations_of("uct", 1000, 64) == 15 and ex.samples_per_move("rm", 1000, 64) == 960
  assert ex.samples_per_move("pst", 8, 16) == 32  # at least one iteration
  assert ex.samples_per_move("rnd", 1000, 64) == 0


def test_bad_agent_or_mismatched_pairs_are_refused_before_any_game_is_loaded(tmp_path):
  ex = _example()
  with pytest.raises(SystemExit, match="unknown agent"):
    ex.main(["--games", "ld22", "--rows", "oos,mcts", "--cols", "rnd"])
  with pytest.raises(SystemExit, match="same agents"):
    ex.main(["--games", "ld22", "--rows", "oos", "--cols", "rnd", "--pairs"])
  with pytest.raises(SystemExit, match="positive"):
    ex.main(["--games", "ld22", "--capacity", "0"])


def test_seconds_budgets_are_refused_with_sample_budgets_or_without_a_time_to_meet():
  ex = _example()
  for extra, message in ((["--seconds", "0.1", "--budgets", "512"], "one or the other"),
                         (["--seconds", "0.1", "--ismcts-budget", "512"], "one or the other"),
                         (["--seconds", "fast"], "number of seconds or 'sog'"),
                         (["--seconds", "0"], "positive and finite"),
                         (["--seconds", "nan"], "positive and finite"),
                         (["--seconds", "inf"], "positive and finite"),
                         (["--seconds", "sog"], "needs the sog agent")):
    with pytest.raises(SystemExit, match=message):
      ex.main(["--games", "ld22", "--rows", "uct", "--cols", "rm"] + extra)
  with pytest.raises(SystemExit, match="played through its rules"):  # an enumerated game
    ex.main(["--games", "gs4", "--rows", "uct", "--cols", "rm", "--seconds", "0.1"])


def test_a_calibrated_budget_takes_the_steps_a_linear_cost_gives_the_target_time(monkeypatch):
  """With a move costing 5 ms + 2 ms a solver step, 0.045 s is 20 steps: 20 x 16 trajectories
  for ISMCTS, 20 x 2 x 16 for OOS; a target below one step's cost still takes one step."""
  ex = _example()
  from jaxgt.cli.common import load_playable
  game = load_playable("liars_dice(numdice=2)")
  monkeypatch.setattr(ex, "seconds_per_move",
                      lambda agent, game, key: 0.005 + 0.002 * agent.iterations)
  args = ex.main.__globals__["argparse"].Namespace(batch=16, capacity=64, delta=0.9,
                                                   targeting="ist")
  agent, budget, secs = ex.calibrated_budget("uct", game, 0.045, args, None)
  assert (agent.iterations, budget) == (20, 320) and secs == pytest.approx(0.045)
  agent, budget, _ = ex.calibrated_budget("oos", game, 0.045, args, None)
  assert (agent.iterations, budget) == (20, 640)
  agent, budget, secs = ex.calibrated_budget("rm", game, 0.001, args, None)
  assert (agent.iterations, budget) == (1, 16) and secs == pytest.approx(0.007)


def test_liars_dice_22_through_its_rules_writes_its_cells_to_json(tmp_path):
  """Random against random in LD(2,2) (too large to enumerate: played through its rules):
  the JSON holds the cell, and the two seats' results agree with a fair game."""
  ex = _example()
  path = tmp_path / "cells.json"
  ex.main(["--games", "ld22", "--matches", "40", "--rows", "rnd", "--cols", "rnd", "--pairs",
           "--json", str(path)])
  (table,) = json.loads(path.read_text())["tables"]
  assert table["device"] and table["game"] == "liars_dice" and table["agents"] == {"rnd": {}}
  cell = table["cells"]["rnd"]["rnd"]
  assert cell["matches"] == 40 and cell["memory"] is None and cell["seconds"] > 0
  # no draws in Liar's Dice: win rate and mean payoff (+-1) say the same
  assert cell["mean"] == pytest.approx(2 * cell["win_rate"] / 100 - 1)


@pytest.mark.slow
def test_liars_dice_22_search_agents_write_every_cell_and_mirror_the_pairs(tmp_path):
  """LD(2,2) cannot be enumerated, so its agents search over tables; each unordered pair is
  played once and its mirror cell is 100 minus its win rate."""
  ex = _example()
  path, log = tmp_path / "cells.json", tmp_path / "log.txt"
  report = ex.main(["--games", "ld22", "--budgets", "8", "--batch", "2", "--capacity", "512",
                    "--matches", "2", "--rows", "pst,rnd", "--cols", "pst,rnd", "--pairs",
                    "--json", str(path), "--log", str(log)])
  data = json.loads(path.read_text())
  assert data["tables"] == json.loads(json.dumps(report["tables"]))
  (table,) = data["tables"]
  assert table["device"] and table["key"] == "ld22" and table["budget"] == 8
  pst = table["agents"]["pst"]
  assert (pst["iterations"], pst["batch"], pst["samples_per_move"]) == (2, 2, 8)
  assert pst["seconds_per_move"] > 0 and pst["memory_bytes"] > 0
  cells = table["cells"]
  assert set(cells) == {"pst", "rnd"} and all(set(c) == {"pst", "rnd"} for c in cells.values())
  played = cells["pst"]["rnd"]
  assert played["matches"] == 2 and 0 <= played["win_rate"] <= 100
  assert played["win_rate"] in (0.0, 25.0, 50.0, 75.0, 100.0)  # two matches, draws impossible
  assert cells["rnd"]["pst"]["mirrored"]
  assert cells["rnd"]["pst"]["win_rate"] == pytest.approx(100 - played["win_rate"])
  assert cells["rnd"]["pst"]["mean"] == pytest.approx(-played["mean"])
  # the searcher's tables are reported, seat for seat; the random agent keeps none
  assert played["memory"][0]["rows"][0] > 0 and played["memory"][1] is None
  assert cells["rnd"]["pst"]["memory"][1] == played["memory"][0]
  assert "trajectories per move" in log.read_text()


def test_the_sog_agent_needs_a_run_directory_before_any_game_is_loaded(tmp_path):
  ex = _example()
  with pytest.raises(SystemExit, match="needs --sog DIR"):
    ex.main(["--games", "ld22", "--rows", "sog", "--cols", "rnd"])
  with pytest.raises(SystemExit, match="needs --sog DIR"):
    ex.main(["--games", "ld22", "--rows", "sog", "--cols", "rnd", "--sog", str(tmp_path / "x")])
  with pytest.raises(SystemExit, match="sog-simulations"):
    ex.main(["--games", "ld22", "--rows", "sog", "--cols", "rnd", "--sog", str(tmp_path),
             "--sog-simulations", "0"])


@pytest.mark.slow
def test_sog_with_a_runs_network_plays_liars_dice_22_and_states_its_seconds_per_move(tmp_path):
  """SoG with the network of a run of LD(2,2) (an untrained one here) plays through the rules
  against random; its seconds per move and search state are reported beside the cell."""
  import jax
  import jax.numpy as jnp
  from jaxgt.games import make_from_string
  from jaxgt.nets import cvpn
  from jaxgt.training import checkpoint, device_run
  from jaxgt.training.config import TrainConfig
  game_string = "liars_dice(numdice=2)"
  config = TrainConfig(hidden=(8,))
  model = device_run.network_for(make_from_string(game_string), config)
  run = tmp_path / "run"
  run.mkdir()
  (run / "config.json").write_text(json.dumps({"game": game_string, "config": config.to_json()}))
  meta = {"game": game_string, "network": "cvpn", "hidden": [8], "embed_dim": 0,
          "k_max": model.encoding.k_max, "num_actions": model.encoding.num_actions,
          "feature_size": model.encoding.feature_size}
  params = cvpn.init(model, jax.random.PRNGKey(0))
  checkpoint.save(run / "checkpoints", 1, {"learner": {"params": params, "step": jnp.int32(1)}},
                  meta)
  path = tmp_path / "cells.json"
  ex = _example()
  ex.main(["--games", "ld22", "--matches", "2", "--rows", "sog", "--cols", "rnd", "--sog",
           str(run), "--sog-simulations", "2", "--json", str(path)])
  (table,) = json.loads(path.read_text())["tables"]
  sog = table["agents"]["sog"]
  assert sog["simulations"] == 2 and sog["seconds_per_move"] > 0 and sog["memory_bytes"] > 0
  cell = table["cells"]["sog"]["rnd"]
  assert cell["matches"] == 2 and cell["memory"][0]["rows"][0] > 1  # tree nodes in use
