"""Search agents and matches on device games: OOS and ISMCTS through the rules, memory reported."""

import json

import jax
import numpy as np
import pytest

from jaxgt.agents.base import DevicePolicyAgent, RandomAgent
from jaxgt.agents.device_search import DeviceSearchAgent
from jaxgt.agents.specs import make_agent, parse_spec
from jaxgt.evaluation.device_policy import fixed_action_policy
from jaxgt.evaluation.match import play
from jaxgt.games import make
from jaxgt.solvers.ismcts import ISMCTS
from jaxgt.solvers.oos import OOS


@pytest.mark.parametrize("solver", [
    pytest.param(ISMCTS(selection="uct", batch=16), marks=pytest.mark.slow),
    OOS(delta=0.9, targeting="ist", batch=16)], ids=["ismcts", "oos"])
def test_search_through_the_rules_beats_random_in_liars_dice(solver):
  # LD(1,1) played through its rules (no enumeration); Lisy et al. 2015 report 83-87% against
  # random at 0.1 s per move.
  game = make("liars_dice", numdice=1)
  agent = DeviceSearchAgent(game, solver, iterations=16, capacity=5000)
  res = play(game, agent, RandomAgent(game), 60, jax.random.key(0))
  assert res.win_rate - res.win_ci95 > 0.55
  mem = res.memory[0]
  assert min(mem["rows"]) > 0 and mem["refused"] == [0, 0] and res.memory[1] is None


def test_a_full_table_is_reported_by_the_match():
  game = make("kuhn_poker")
  agent = DeviceSearchAgent(game, OOS(batch=8), iterations=8, capacity=2)
  res = play(game, agent, RandomAgent(game), 4, jax.random.key(1))
  assert res.memory[0]["rows"] == [2, 2] and min(res.memory[0]["refused"]) > 0
  assert np.isfinite(res.payoffs).all()


def test_specs_build_device_search_agents_with_capacity_per_player():
  game = make("limit_holdem")
  agent = make_agent(game, "ismcts(simulations=2,batch=4,capacity=1000)")
  assert isinstance(agent, DeviceSearchAgent) and agent.capacity == 1000 and agent.iterations == 2
  agent = make_agent(game, "oos(iterations=3)")
  assert isinstance(agent, DeviceSearchAgent) and agent.capacity == 100_000
  with pytest.raises(ValueError, match="capacity"):
    parse_spec("oos(capacity=0)")


def test_device_search_agent_refuses_bad_input_before_compiling():
  game = make("liars_dice", numdice=1)
  with pytest.raises(ValueError, match="iterations"):
    DeviceSearchAgent(game, ISMCTS(), iterations=0, capacity=10)
  with pytest.raises(ValueError, match="capacity"):
    DeviceSearchAgent(game, ISMCTS(), iterations=1, capacity=0)
  with pytest.raises(ValueError, match="OOS or ISMCTS"):
    DeviceSearchAgent(game, object(), iterations=1, capacity=10)
  with pytest.raises(TypeError, match="DeviceGame"):
    import jaxgt
    DeviceSearchAgent(jaxgt.compile_game(game), ISMCTS(), iterations=1, capacity=10)


@pytest.mark.slow
def test_a_device_policy_agent_plays_holdem_through_the_rules():
  game = make("limit_holdem")
  caller = DevicePolicyAgent(game, fixed_action_policy(game, (1,)))  # always call / check
  res = play(game, caller, RandomAgent(game), 20, jax.random.key(2))
  assert len(res.payoffs) == 20 and np.isfinite(res.payoffs).all()
  # Always calling never folds: every match reaches a showdown or the opponent folds.
  for path in res.episodes():
    assert len(path) >= 4


@pytest.mark.slow
def test_jaxgt_match_reports_memory_in_json(capsys):
  from jaxgt.cli import main
  code = main(["match", "liars_dice(numdice=2)", "ismcts(simulations=2,batch=8,capacity=300)",
               "random", "--matches", "4", "--json"])
  assert code == 0
  out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
  assert out["episodes"] == 4 and out["memory"][1] is None
  assert max(out["memory"][0]["rows"]) > 0


def test_kinds_that_need_a_compiled_game_are_refused_on_a_device_game():
  with pytest.raises(ValueError, match="needs a compiled game"):
    make_agent(make("limit_holdem"), "uct(episodes=10)")
