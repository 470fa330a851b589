"""The device-game rows of benchmarks/sampling_speed.py and search_speed.py: the OpenSpiel peer
plays the same game from the same position, and the rows record their figures."""

import inspect

import jax
import numpy as np
import pytest

from jaxgt import bench_report
from jaxgt.core.lockstep import replay
from jaxgt.core import playout
from jaxgt.games import make_from_string
from jaxgt.solvers import mccfr
from script_modules import load_script

pyspiel = pytest.importorskip("pyspiel")


def _load(name):
  return load_script(f"benchmarks/{name}.py", f"_bench_{name}")


search_speed = _load("search_speed")
sampling_speed = _load("sampling_speed")


@pytest.mark.parametrize("text", ["limit_holdem", "liars_dice(numdice=2)"])
def test_the_peer_searches_the_same_information_state(text):
  game = make_from_string(text)
  path, actions = search_speed.match_position(game, search_speed.DECISIONS[game.name])
  os_game, note = sampling_speed.openspiel_peer(pyspiel, game)
  assert note == ""
  state = os_game.new_initial_state()
  for a in actions:
    state.apply_action(a)
  player = int(path.player)
  assert state.current_player() == player and int(path.length) == len(actions)
  key = np.asarray(path.keys)[len(actions)]
  assert game.info_string(key, player) == state.information_state_string(player)


def test_ii_goofspiel_peer_is_the_same_tree_with_other_payoffs():
  game = make_from_string("ii_goofspiel(num_cards=5)")
  os_game, note = sampling_speed.openspiel_peer(pyspiel, game)
  assert "same tree" in note
  actions = np.asarray(jax.device_get(playout.trajectories(game, jax.random.PRNGKey(0), 200)[1]))
  report = replay(game, str(os_game), actions)
  # a mismatch of player, legal actions or chance stops a trajectory: every state compared
  # means the same tree; the strings and returns name other point values
  assert report["states"] == int(np.sum(actions >= 0)) + len(actions)
  assert {m["what"] for m in report["examples"]} <= {"info_string_p0", "info_string_p1",
                                                      "returns"}
  assert report["mismatches"] > 0
  _, missing = sampling_speed.openspiel_peer(None, game)
  assert "not installed" in missing


def test_a_capped_meter_stops_at_the_cap():
  calls = []
  meter = sampling_speed.call_meter(lambda: calls.append(1), 2, start=16, cap=8)
  assert meter(seconds=60.0) > 0 and len(calls) == 8


def test_device_search_rows_record_a_ratio_to_ismctsbot(capsys):
  before = len(bench_report.RECORDED)
  search_speed.main(["--games", "", "--no-liars-dice", "--solvers", "ismcts",
                     "--device-games", "limit_holdem", "--device-batches", "16",
                     "--capacity", "4096", "--device-peer-simulations", "20", "--seconds", "0.05",
                     "--repeats", "1"])
  out = capsys.readouterr().out
  figs = {f["name"]: f for f in bench_report.RECORDED[before:] if "name" in f}
  row = figs["ismcts"]
  assert row["params"]["game"] == "limit_holdem" and row["peer"] == "OpenSpiel C++ ISMCTSBot"
  assert row["ratio"] > 0 and "ismcts-uct through the rules" in out
  # a row holds the key (W int32 words), its hash slots and visits and values [A] float32
  per_row = figs["ismcts table bytes per information state"]["value"]
  game = make_from_string("limit_holdem")
  assert per_row >= 4 * game.info_key_width + 2 * 4 * game.num_actions


def test_device_sampling_rows_run_or_say_why_not(capsys):
  before = len(bench_report.RECORDED)
  sampling_speed.main(["--games", "", "--no-liars-dice", "--device-games",
                       "liars_dice(numdice=2)", "--device-batches", "16", "--capacity", "4096",
                       "--peer-iterations", "200", "--seconds", "0.05", "--repeats", "1"])
  out = capsys.readouterr().out
  figs = [f for f in bench_report.RECORDED[before:] if f.get("name") == "mccfr-os"]
  if "capacity" not in inspect.signature(mccfr.OutcomeSampling.init).parameters:
    assert "device games: skipped" in out and not figs
  else:
    assert figs[0]["peer"] == "OpenSpiel C++ OutcomeSamplingMCCFRSolver" and figs[0]["ratio"] > 0
