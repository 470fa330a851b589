"""Agent specs: the grammar, and the catalogue of agent kinds whose parameters are read from the
agents' and solvers' constructors."""

import numpy as np
import pytest

import jaxgt
from jaxgt.agents import specs
from jaxgt.agents.ismcts_agent import ISMCTSAgent
from jaxgt.agents.oos_agent import OOSAgent
from jaxgt.agents.resolving import ContinualResolvingAgent
from jaxgt.agents.uct_agent import UCTAgent
from jaxgt.cli import main

BUILTIN = ("random", "policy", "oos", "ismcts", "uct", "smooth_uct", "resolving")


def test_defaults_and_typed_values():
  s = specs.parse_spec(" oos( iterations = 50 , delta=0.5,targeting=pst, epsilon=1 ) ")
  assert s.kind == "oos"
  assert s.params == {"iterations": 50, "delta": 0.5, "targeting": "pst", "epsilon": 1.0,
                      "gamma": 0.01, "play": "average", "capacity": None, "batch": 1,
                      "dtype": "float32"}
  assert isinstance(s.params["epsilon"], float) and isinstance(s.params["iterations"], int)
  assert specs.parse_spec("random").params == {} and specs.parse_spec("random()").params == {}
  assert specs.parse_spec("ismcts(c=none,selection=rm)").params["c"] is None
  assert specs.parse_spec("ismcts(c=3)").params["c"] == 3.0
  assert specs.parse_spec("resolving(alpha=none)").params["alpha"] is None
  assert specs.parse_spec("smooth_uct(episodes=20,batch=4)").params["episodes"] == 20


def test_policy_path_is_a_bare_string(tmp_path):
  f = tmp_path / "p(1).npz"
  f.write_bytes(b"")
  assert specs.parse_spec(f"policy(path={f})").params == {"path": str(f)}
  with pytest.raises(ValueError, match="no policy file"):
    specs.parse_spec(f"policy(path={tmp_path / 'missing.npz'})")
  with pytest.raises(ValueError, match="needs parameter 'path'"):
    specs.parse_spec("policy")


@pytest.mark.parametrize("text, message", [
    ("alphazero", "unknown agent 'alphazero'; valid agents: "),
    ("oos(iters=3)", "unknown parameter 'iters' for agent 'oos'; valid parameters: iterations, "
                     "delta, targeting, epsilon"),
    ("random(k=1)", "valid parameters: none"),
    ("oos(iterations=1.5)", "'iterations' expects an integer, got '1.5'"),
    ("oos(iterations=0)", "'iterations' must be >= 1"),
    ("oos(delta=high)", "'delta' expects a number, got 'high'"),
    ("oos(delta=nan)", "'delta' expects a finite number"),
    ("oos(delta=1.5)", "delta must be in [0, 1]"),
    ("oos(targeting=xyz)", "'targeting' must be one of ist, pst"),
    ("oos(play=greedy)", "'play' must be one of average, current"),
    ("ismcts(selection=ucb)", "'selection' must be one of uct, rm"),
    ("ismcts(c=none,final=mean)", "final='mean' needs selection='rm'"),
    ("uct(episodes=10,batch=3)", "episodes must be a multiple of batch"),
    ("smooth_uct(play=best)", "'play' must be one of average, greedy"),
    ("resolving(alpha=2)", "alpha must be in [0, 1]"),
    ("resolving(chunk=2)", "chunk must be 1"),
    ("oos(dtype=float16)", "'dtype' must be one of float32, float64"),
    ("oos(iterations=5,iterations=6)", "given twice"),
    ("oos(iterations)", "expected key=value"),
    ("oos(", "cannot parse agent spec"),
])
def test_bad_specs_name_the_valid_choices(text, message):
  with pytest.raises(ValueError) as e:
    specs.parse_spec(text)
  assert message in str(e.value)
  if text == "alphazero":
    assert all(k in str(e.value) for k in BUILTIN)


def test_builtins_build_with_their_parameters(tmp_path):
  g = jaxgt.load("kuhn_poker")
  a = specs.make_agent(g, "oos(iterations=7,delta=0.4,targeting=pst,epsilon=0.3)")
  assert isinstance(a, OOSAgent) and a.iterations == 7
  assert (a.solver.delta, a.solver.targeting, a.solver.epsilon) == (0.4, "pst", 0.3)
  assert a.play == "average"
  assert specs.make_agent(g, "oos(play=current)").play == "current"
  a = specs.make_agent(g, "ismcts(simulations=9,selection=rm)")
  assert isinstance(a, ISMCTSAgent) and a.simulations == 9 and a.solver.selection == "rm"
  a = specs.make_agent(g, "smooth_uct(episodes=8,c=3,d=0.002)")
  assert isinstance(a, UCTAgent) and a.solver.smooth and (a.solver.c, a.solver.d) == (3.0, 0.002)
  a = specs.make_agent(g, "uct(play=greedy)")
  assert not a.solver.smooth and a.play == "greedy" and a.episodes == 1000
  a = specs.make_agent(g, "resolving(depth_limit=1,iterations=10,alpha=none,dtype=float32)")
  assert isinstance(a, ContinualResolvingAgent) and (a.depth_limit, a.iterations, a.alpha) == \
      (1, 10, None)
  # random: uniform over the legal actions at every information state
  r = specs.make_agent(g, "random")
  for p in (0, 1):
    legal = np.asarray(g.tree.players[p].legal)
    np.testing.assert_allclose(np.asarray(r.policy[p]), legal / legal.sum(-1, keepdims=True))
  # policy: a saved policy of this game; a policy of another game is refused with the spec named
  pol = jaxgt.solve(g, "cfr+", iterations=10, eval_every=0).policy
  path = tmp_path / "kuhn.npz"
  pol.save(path)
  a = specs.make_agent(g, f"policy(path={path})")
  for p in (0, 1):
    np.testing.assert_allclose(np.asarray(a.policy[p]), pol.probs[p])
  with pytest.raises(ValueError, match=r"agent 'policy\(path=.*\)': policy is for game kuhn_poker"):
    specs.make_agent(jaxgt.load("leduc_poker"), f"policy(path={path})")


def test_a_new_kind_registers_with_one_call(monkeypatch, capsys):
  monkeypatch.setattr(specs, "_REGISTRY", dict(specs.agent_kinds()))
  built = []

  def build(game, budget, greedy, mode):
    built.append((budget, greedy, mode))
    return specs.make_agent(game, "random")

  specs.register_agent("gtcfr", build, (
      specs.Param("budget", int, 100, "expansions per move", minimum=1),
      specs.Param("greedy", bool, False, "play greedily"),
      specs.Param("mode", str, "a", "a mode", choices=("a", "b"))), "Growing-Tree CFR")
  s = specs.parse_spec("gtcfr(greedy=true,mode=b)")
  assert s.params == {"budget": 100, "greedy": True, "mode": "b"}
  with pytest.raises(ValueError, match="'greedy' expects true or false, got '1'"):
    specs.parse_spec("gtcfr(greedy=1)")
  s.build(jaxgt.load("kuhn_poker"))
  assert built == [(100, True, "b")]
  assert main(["agents"]) == 0
  out = capsys.readouterr().out
  assert "gtcfr(budget=100,greedy=false,mode=a|b)" in out and "Growing-Tree CFR" in out
  for kind in BUILTIN:
    assert kind in out
  assert "iterations   int   OOS iterations per move (default 1000)" in out
  with pytest.raises(ValueError, match="identifiers"):
    specs.register_agent("my-kind", build)
  with pytest.raises(ValueError, match="type int, float, bool or str"):
    specs.register_agent("listy", build, (specs.Param("xs", list, [], "a list"),))


def test_spec_errors_come_before_the_game(capsys):
  # the game name is bad too: the spec is checked first, so no game is looked up or compiled
  assert main(["match", "no_such_game", "oos(iters=1)", "random"]) == 2
  assert "unknown parameter 'iters' for agent 'oos'" in capsys.readouterr().err
  assert main(["construct", "no_such_game", "mcts"]) == 2
  assert "unknown agent 'mcts' (did you mean 'ismcts'?); valid agents:" in capsys.readouterr().err


def test_match_help_lists_the_agents(capsys):
  with pytest.raises(SystemExit):
    main(["match", "--help"])
  out = capsys.readouterr().out
  assert "oos(iterations=1000,delta=0.9,targeting=ist|pst,epsilon=0.6" in out
  assert "resolving(depth_limit=2,iterations=1000" in out


def test_gtcfr_spec_builds_the_growing_tree_agent():
  from jaxgt.agents.gtcfr_agent import GTCFRAgent
  spec = specs.parse_spec("gtcfr(simulations=12,expansions_per_update=0.5,resolve=false)")
  agent = spec.build(jaxgt.load("kuhn_poker"))
  assert isinstance(agent, GTCFRAgent) and not agent.resolve
  assert agent.config.simulations == 12 and agent.config.expansions_per_update == 0.5
  with pytest.raises(ValueError, match="evaluator"):
    specs.parse_spec("gtcfr(evaluator=network)")


@pytest.mark.parametrize("kind, sources", [
    ("oos", ("jaxgt.agents.oos_agent:OOSAgent", "jaxgt.solvers.oos:OOS")),
    ("ismcts", ("jaxgt.agents.ismcts_agent:ISMCTSAgent", "jaxgt.solvers.ismcts:ISMCTS")),
    ("uct", ("jaxgt.agents.uct_agent:UCTAgent", "jaxgt.solvers.uct:uct")),
    ("smooth_uct", ("jaxgt.agents.uct_agent:UCTAgent", "jaxgt.solvers.uct:smooth_uct")),
    ("resolving", ("jaxgt.agents.resolving:ContinualResolvingAgent",)),
    ("gtcfr", ("jaxgt.agents.specs:gtcfr_agent", "jaxgt.agents.gtcfr_agent:GTCFRAgent"))])
def test_kind_defaults_are_the_constructors(kind, sources):
  """Each parameter's default is the one its agent class or solver states (the exceptions are
  the spec's own: GT-CFR's budget, which the agent leaves to its caller, and the dtype of
  re-solving's default CFR+)."""
  import importlib
  import inspect
  defaults = {}
  for source in reversed(sources):
    module, name = source.split(":")
    obj = getattr(importlib.import_module(module), name)
    defaults.update({n: p.default for n, p in inspect.signature(obj).parameters.items()})
  own = {"gtcfr": {"simulations": 100}, "resolving": {"dtype": "float64"}}.get(kind, {})
  params = specs.agent_kinds()[kind].params
  assert {p.name: p.default for p in params} == {p.name: own.get(p.name, defaults.get(p.name))
                                                 for p in params}
  assert all(p.name in defaults or p.name in own for p in params)


def test_params_from_reads_names_types_and_defaults():
  def factory(game, *, path: str, n: int = 3, x: float | None = None, flag=True):
    del game, path, n, x, flag
  path, n, x, flag = specs.params_from(factory, path="p", n=specs.Doc("n", minimum=1), x="x",
                                       flag="f")
  assert (path.type, path.required) == (str, True)
  assert (n.type, n.default, n.minimum) == (int, 3, 1)
  assert (x.type, x.default, x.nullable) == (float, None, True)
  assert (flag.type, flag.default) == (bool, True)
  with pytest.raises(ValueError, match="no parameter 'm'"):
    specs.params_from(factory, m="m")
  with pytest.raises(ValueError, match="is not one of int, float, bool, str"):
    specs.params_from(lambda xs=(): None, xs="a tuple")


def test_training_registers_the_sog_kind(tmp_path, capsys):
  # agents never import training: the command line has training register its kind
  assert main(["agents"]) == 0
  assert "sog(checkpoint=<str>,simulations=100,expansions_per_update=1.0" in capsys.readouterr().out
  from jaxgt.training import agent_kind
  agent_kind.register()
  s = specs.parse_spec(f"sog(checkpoint={tmp_path},simulations=3)")
  assert s.params == {"checkpoint": str(tmp_path), "simulations": 3,
                      "expansions_per_update": 1.0, "value_average": None, "capacity": None,
                      "alpha": None, "dtype": "float32"}
