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


class _Held:
  """An agent stand-in holding ``n`` bytes of search state a match."""

  def __init__(self, n):
    self.n = n

  def memory_bytes(self):
    return self.n


def test_match_blocks_are_lowered_to_what_the_free_memory_holds():
  from jaxgt.evaluation.match import MEMORY_HEADROOM, fit_block
  agents = (_Held(100), _Held(50), object())  # 150 bytes a match; the third holds none
  free = int(150 * MEMORY_HEADROOM * 7)  # seven matches with headroom
  assert fit_block(agents, 200, available=free) == 7
  assert fit_block(agents, 200, default=20, available=free) == 7
  assert fit_block(agents, 200, default=5, available=free) == 5
  assert fit_block(agents, 4, available=free) == 4
  assert fit_block(agents, 200, 9, available=free) == 9  # asked for, and its state fits
  with pytest.raises(ValueError, match="block of 100 matches.*at most 7 fits"):
    fit_block(agents, 200, 100, available=free)
  with pytest.raises(ValueError, match="one match holds.*lower the agents' capacity"):
    fit_block(agents, 200, available=149)
  assert fit_block((object(),), 200, available=1) == 200  # no search state: nothing to size
  with pytest.raises(ValueError, match="block"):
    fit_block(agents, 200, 0, available=free)


def test_a_match_too_large_for_the_free_memory_is_refused_before_compiling(monkeypatch):
  from jaxgt.evaluation import match, referee
  game = make("kuhn_poker")
  agent = DeviceSearchAgent(game, OOS(batch=8), iterations=2, capacity=64)
  per = agent.memory_bytes()

  def no_program(*a, **k):
    raise AssertionError("compiled a match program")

  monkeypatch.setattr(referee, "match_program", no_program)
  monkeypatch.setattr(match, "available_device_memory", lambda: per - 1)
  with pytest.raises(ValueError, match="one match holds"):
    play(game, agent, RandomAgent(game), 8, jax.random.key(0))
  monkeypatch.setattr(match, "available_device_memory", lambda: 3 * per)
  with pytest.raises(ValueError, match="a block of 8 matches"):
    play(game, agent, RandomAgent(game), 8, jax.random.key(0), block=8)


def test_jaxgt_match_plays_in_the_blocks_the_free_memory_holds(monkeypatch, capsys):
  from jaxgt.cli import main
  from jaxgt.evaluation import match, referee
  seen = []
  play_matches = referee.play_matches

  def spy(*a, block=None, **k):
    seen.append(block)
    return play_matches(*a, block=block, **k)

  monkeypatch.setattr(referee, "play_matches", spy)
  spec = "oos(iterations=2,batch=4,capacity=50)"
  per = make_agent(make("kuhn_poker"), spec).memory_bytes()
  monkeypatch.setattr(match, "available_device_memory",
                      lambda: int(3 * per * match.MEMORY_HEADROOM))
  over = ["--max-histories", "10"]  # Kuhn played through its rules, as a large game is
  assert main(["match", "kuhn_poker", spec, "random", "--matches", "40", *over]) == 0
  assert seen == [3]
  assert "3 matches a run of the match program" in capsys.readouterr().out
  assert main(["match", "kuhn_poker", spec, "random", "--matches", "40", "--block", "10",
               *over]) == 2
  assert "a block of 10 matches" in capsys.readouterr().err


def test_lowered_blocks_split_the_matches_evenly():
  from jaxgt.evaluation.match import MEMORY_HEADROOM, fit_block
  per = 1000
  # 193 of 200 matches fit: two runs of 100, not 193 and a padded run for the last 7
  assert fit_block((_Held(per),), 200, available=int(193 * per * MEMORY_HEADROOM)) == 100


def test_a_capacity_beyond_the_free_memory_is_refused_before_the_tables_exist(monkeypatch):
  from jaxgt.agents import device_search
  game = make("liars_dice", numdice=1)
  agent = DeviceSearchAgent(game, OOS(batch=4), iterations=2, capacity=1000)
  tables = agent.init(jax.random.key(0)).tables  # memory_bytes is read from shapes alone
  keys_slots = sum(t.keys.nbytes + t.slots.nbytes for t in tables)
  assert agent.memory_bytes() > keys_slots
  monkeypatch.setattr(device_search, "available_device_memory", lambda: agent.memory_bytes() - 1)
  with pytest.raises(ValueError, match="capacity 1,000 rows per player needs .* lower the capacity"):
    DeviceSearchAgent(game, OOS(batch=4), iterations=2, capacity=1000)
