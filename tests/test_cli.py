"""The jaxgt command line contract."""

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from jaxgt.cli import main

pyspiel = pytest.importorskip("pyspiel")


def test_games_lists_registry(capsys):
  assert main(["games"]) == 0
  out = capsys.readouterr().out
  for name in ["kuhn_poker", "leduc_poker", "rps_plus", "nonlocality"]:
    assert name in out


def test_info_prints_sizes(capsys):
  assert main(["info", "leduc_poker"]) == 0
  out = capsys.readouterr().out
  assert "histories       9457" in out and "terminals       5520" in out
  assert "infostates_p0   468" in out and "enumeration" in out and "memory" in out


def test_solve_save_export_plot(tmp_path, capsys):
  pol = tmp_path / "leduc.npz"
  png = tmp_path / "curve.png"
  rc = main(["solve", "leduc_poker", "--iterations", "200", "--eval-every", "50", "--dtype", "float64",
             "--save", str(pol), "--plot", str(png)])
  assert rc == 0
  out = capsys.readouterr().out
  lines = [l for l in out.splitlines() if l.startswith("iter")]
  assert [int(l.split()[1]) for l in lines] == [50, 100, 150, 200]
  values = [float(l.split()[3]) for l in lines]
  assert values[-1] < values[0]
  assert "final:" in out and png.stat().st_size > 1000
  js = tmp_path / "leduc.json"
  assert main(["export", str(pol), "--openspiel", str(js)]) == 0
  doc = json.loads(js.read_text())
  from openspiel_reference import exported_file_exploitability
  assert exported_file_exploitability(doc) == pytest.approx(values[-1], rel=1e-5)


def test_eval_every_zero_evaluates_only_at_end(capsys):
  assert main(["solve", "kuhn_poker", "--iterations", "30", "--eval-every", "0"]) == 0
  lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("iter")]
  assert len(lines) == 1 and int(lines[0].split()[1]) == 30


def test_bad_input_errors(capsys):
  assert main(["solve", "no_such_game"]) == 2
  assert "unknown game 'no_such_game'" in capsys.readouterr().err
  assert main(["solve", "kuhn_poker(cards=4)"]) == 2
  assert "valid parameters" in capsys.readouterr().err
  assert main(["solve", "kuhn_poker", "--iterations", "0"]) == 2
  assert "--iterations must be positive" in capsys.readouterr().err
  with pytest.raises(SystemExit):
    main(["solve", "kuhn_poker", "--solver", "nope"])


def test_python_dash_m_entry_point():
  out = subprocess.run([sys.executable, "-m", "jaxgt", "games"], capture_output=True, text=True,
                       check=True).stdout
  assert "leduc_poker" in out


def test_check_and_openspiel_prefix(capsys):
  assert main(["check", "kuhn_poker"]) == 0
  assert "all checks passed" in capsys.readouterr().out
  assert main(["solve", "openspiel:goofspiel(imp_info=True,num_cards=3)", "--iterations", "50",
               "--eval-every", "25"]) == 0
  out = capsys.readouterr().out
  assert "iter       50" in out and "final:" in out


@pytest.mark.parametrize("solver", ["mccfr-os", "mccfr-es"])
def test_sampling_solvers_count_trajectories_and_reproduce_with_seed(solver, capsys):
  args = ["solve", "kuhn_poker", "--solver", solver, "--iterations", "300", "--eval-every", "100",
          "--batch", "32", "--seed", "7"]
  assert main(args) == 0
  out = capsys.readouterr().out
  lines = [l.split() for l in out.splitlines() if l.startswith("iter")]
  # --iterations counts steps of --batch trajectories each.
  assert [int(l[3]) for l in lines] == [3200, 6400, 9600]
  expl = [float(l[5]) for l in lines]
  assert expl[-1] < 0.25 < 11 / 24  # far below the uniform policy's 0.4583
  assert main(args) == 0
  again = [l.split() for l in capsys.readouterr().out.splitlines() if l.startswith("iter")]
  assert [l[5] for l in again] == [l[5] for l in lines]  # same seed, same numbers
  assert main(args[:-1] + ["8"]) == 0
  other = [l.split() for l in capsys.readouterr().out.splitlines() if l.startswith("iter")]
  assert [l[5] for l in other] != [l[5] for l in lines]


def test_sampling_batch_must_be_even(capsys):
  assert main(["solve", "kuhn_poker", "--solver", "mccfr-os", "--batch", "3"]) == 2
  assert "--batch must be an even integer" in capsys.readouterr().err


@pytest.mark.parametrize("solver,flags", [("pcfr+", ["--gamma", "2"]),
                                          ("dcfr+", ["--alpha", "1.5", "--gamma", "4"]),
                                          ("pdcfr+", []), ("hs-pcfr+", ["--gamma0", "30"]),
                                          ("hs-dcfr", ["--planned-iterations", "60"]),
                                          ("mmd", ["--alpha", "0.1", "--alternating"])])
def test_solve_new_solvers_with_their_flags(solver, flags, capsys):
  """Every new solver runs from the command line with its flags; the figures equal a
  direct run of the same solver (and the last iterate is printed on request)."""
  import jax
  import jaxgt
  from jaxgt.core.evaluate import policy_evaluation_jit
  from jaxgt.solving import make_full_width_solver
  assert main(["solve", "kuhn_poker", "--solver", solver, "--iterations", "60", "--eval-every",
               "30", "--dtype", "float64", "--last-iterate"] + flags) == 0
  lines = [l.split() for l in capsys.readouterr().out.splitlines() if l.startswith("iter")]
  assert [int(l[1]) for l in lines] == [30, 60] and all("last-iterate" in l for l in lines)
  kw = {k.lstrip("-").replace("-", "_"): float(v) for k, v in zip(flags[::2], flags[1::2])
        if k != "--alternating"}
  kw = {k: int(v) if k == "planned_iterations" else v for k, v in kw.items()}
  if "--alternating" in flags:
    kw["alternating"] = True
  direct = make_full_width_solver(solver, iterations=60, dtype="float64", **kw)
  tree = jaxgt.load("kuhn_poker").device_tree("float64")
  state = direct.run(tree, direct.init(tree), 60)
  want = float(policy_evaluation_jit(tree, direct.policy(tree, state)).exploitability)
  assert float(lines[-1][3]) == pytest.approx(want, rel=1e-6)
  del jax


def test_solve_flag_that_does_not_apply(capsys):
  assert main(["solve", "kuhn_poker", "--solver", "pcfr+", "--alpha", "1"]) == 2
  assert "--alpha does not apply to --solver pcfr+ (it takes: --gamma)" in capsys.readouterr().err
  assert main(["solve", "kuhn_poker", "--solver", "mmd", "--no-compensation"]) == 2
  assert "CFR family only" in capsys.readouterr().err
  assert main(["solve", "kuhn_poker", "--solver", "mmd", "--no-exact-ties"]) == 2
  assert "--no-exact-ties applies to the CFR family only" in capsys.readouterr().err


def test_no_exact_ties_turns_the_tie_rule_off():
  from jaxgt.cli import _parser as build_parser
  from jaxgt.cli.solve import solver_kwargs
  args = build_parser().parse_args(["solve", "kuhn_poker", "--solver", "dcfr", "--no-exact-ties"])
  assert solver_kwargs(args) == {"exact_ties": False}
  args = build_parser().parse_args(["solve", "kuhn_poker", "--solver", "dcfr"])
  assert solver_kwargs(args) == {}


def test_solver_flags_are_the_factories_hyperparameters(capsys):
  """Each solver's flags, their types and defaults are its factory's hyperparameters."""
  import inspect
  import jaxgt
  from jaxgt.cli import solve as solve_cli
  from jaxgt.solvers.mccfr import SAMPLING_SOLVERS
  from jaxgt.solving import SOLVERS, hyperparameters
  for name, factory in {**SOLVERS, **SAMPLING_SOLVERS}.items():
    signature = inspect.signature(factory).parameters
    flags = solve_cli.SOLVER_FLAGS[name]
    assert [p.name for p in flags] == list(hyperparameters(factory))
    assert [p.default for p in flags] == [signature[p.name].default for p in flags]
  assert [p.name for p in solve_cli.SOLVER_FLAGS["dcfr"]] == ["alpha", "beta", "gamma"]
  assert [p.name for p in solve_cli.SOLVER_FLAGS["mmd"]] == ["alpha", "stepsize"]
  assert {p.type for p in solve_cli.SOLVER_FLAGS["hs-dcfr"]} == {int, float}
  # shared options and **keywords are not hyperparameters; a boolean one is a true|false flag
  assert hyperparameters(lambda a=1, *, dtype="float32", batch=1, flag=True, **rules: 0) == (
      "a", "flag")
  assert solve_cli._true_false("False") is False and solve_cli._true_false("true") is True
  with pytest.raises(SystemExit):
    main(["solve", "--help"])
  assert "averaging exponent: dcfr (2.0), pcfr+ (2.0), dcfr+ (4.0), pdcfr+ (5.0)" in " ".join(
      capsys.readouterr().out.split())
  # a hyperparameter of a sampling solver is a flag too, refused where it does not apply
  assert main(["solve", "kuhn_poker", "--solver", "mccfr-es", "--epsilon", "0.5"]) == 2
  assert "--epsilon does not apply to --solver mccfr-es (it takes: none)" in capsys.readouterr().err
  assert main(["solve", "kuhn_poker", "--solver", "mccfr-os", "--epsilon", "0.3", "--iterations",
               "20", "--eval-every", "0", "--batch", "8", "--seed", "3"]) == 0
  line = [l.split() for l in capsys.readouterr().out.splitlines() if l.startswith("iter")][-1]
  direct = jaxgt.solve("kuhn_poker", "mccfr-os", iterations=20, eval_every=0, batch=8, seed=3,
                       epsilon=0.3)
  assert float(line[5]) == pytest.approx(direct.exploitability, rel=1e-6)


def test_small_exploitability_prints_readably():
  from jaxgt.solving import format_mbb
  assert format_mbb(1.1e-07 * 1000) == "1.10e-04"
  assert format_mbb(0.0571) == "0.057" and format_mbb(12.3456) == "12.346"
  assert format_mbb(0.0) == "0.000"


INFO_KEYS = {"game", "openspiel", "enumerable", "rules", "actions", "max_histories", "estimate",
             "reason", "sizes", "seconds"}


def _info_json(capsys, *args):
  assert main(["info", *args, "--json"]) == 0
  return json.loads(capsys.readouterr().out)


def test_info_json_of_an_enumerable_game(capsys):
  doc = _info_json(capsys, "kuhn_poker")
  assert INFO_KEYS <= set(doc) and doc["enumerable"] is True and doc["reason"] is None
  assert doc["game"] == "kuhn_poker" and doc["openspiel"] == "kuhn_poker"
  assert doc["sizes"] == {"histories": 58, "terminals": 30, "infostates_p0": 6,
                          "infostates_p1": 6, "public_states": 11, "actions": 2}
  assert doc["estimate"]["log10_histories"] == pytest.approx(np.log10(58), abs=0.3)
  assert {"enumeration_seconds", "memory_bytes", "fingerprint"} <= set(doc)
  doc = _info_json(capsys, "goofspiel(num_cards=4)")
  assert doc["enumerable"] is True and doc["openspiel"].startswith(
      "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=4,")


@pytest.mark.parametrize("text,openspiel", [
    ("ii_goofspiel(num_cards=9)", None),
    ("liars_dice(numdice=2)", "liars_dice(bidding_rule=reset-face,dice_sides=6,numdice=2)"),
    ("goofspiel(num_cards=13)", "turn_based_simultaneous_game(game=goofspiel(imp_info=True,"
                                "num_cards=13,points_order=ascending,returns_type=win_loss))")])
def test_info_json_refuses_a_large_game_from_its_estimate_in_seconds(text, openspiel, capsys):
  t0 = time.perf_counter()
  doc = _info_json(capsys, text)
  assert time.perf_counter() - t0 < 10
  assert doc["enumerable"] is False and doc["sizes"] is None and doc["openspiel"] == openspiel
  assert doc["estimate"]["log10_histories"] > 7 and "--max-histories" in doc["reason"]
  assert "max_histories" not in doc["reason"]  # the advice names the flag, not the argument


def test_info_json_of_openspiel_imports(capsys):
  doc = _info_json(capsys, "openspiel:goofspiel(imp_info=True,num_cards=8)")
  assert doc["enumerable"] is False and "refused before enumerating" in doc["reason"]
  assert doc["openspiel"] == ("turn_based_simultaneous_game(game=goofspiel(imp_info=True,"
                              "num_cards=8))")
  doc = _info_json(capsys, "openspiel:kuhn_poker")
  assert doc["enumerable"] is True and doc["sizes"]["histories"] == 58
  assert doc["estimate"]["exact"] is True and doc["openspiel"] == "kuhn_poker()"


def test_info_limit_and_text_form(capsys):
  doc = _info_json(capsys, "ii_goofspiel", "--max-histories", "200000")
  assert doc["enumerable"] is False and doc["max_histories"] == 200000
  assert main(["info", "ii_goofspiel(num_cards=9)"]) == 0
  out = capsys.readouterr().out
  assert "histories       ~10^" in out and "enumerable      no" in out
  assert "openspiel       -" in out
  assert main(["info", "kuhn_poker"]) == 0
  out = capsys.readouterr().out
  assert "histories       58" in out and "enumerable      yes" in out
  assert "openspiel       kuhn_poker" in out


def test_info_bad_input(capsys):
  assert main(["info", "no_such_game"]) == 2
  assert "unknown game 'no_such_game'" in capsys.readouterr().err
  assert main(["info", "liars_dice(numdice=0)"]) == 2
  assert capsys.readouterr().err.startswith("jaxgt: error: ")
  assert main(["info", "kuhn_poker", "--max-histories", "0"]) == 2
  assert "--max-histories must be positive" in capsys.readouterr().err


def test_check_json_with_openspiel_lockstep(capsys):
  assert main(["check", "kuhn_poker", "--trajectories", "300", "--openspiel", "auto",
               "--json"]) == 0
  doc = json.loads(capsys.readouterr().out)
  assert doc == {"game": "kuhn_poker", "trajectories": 300, "failures": [],
                 "openspiel_mismatches": 0}
  assert main(["check", "leduc_poker", "--trajectories", "200", "--json"]) == 0
  doc = json.loads(capsys.readouterr().out)
  assert doc["failures"] == [] and doc["openspiel_mismatches"] is None


def test_check_reports_openspiel_mismatches(capsys):
  assert main(["check", "kuhn_poker", "--trajectories", "50", "--openspiel", "leduc_poker",
               "--json"]) == 1
  captured = capsys.readouterr()
  assert json.loads(captured.out)["openspiel_mismatches"] == 50
  assert "chance_outcomes: ours [0, 1, 2], OpenSpiel [0, 1, 2, 3, 4, 5]" in captured.err
  assert main(["check", "kuhn_poker", "--trajectories", "50", "--openspiel",
               "leduc_poker"]) == 1
  out = capsys.readouterr().out
  assert "all checks passed" in out and "50 mismatch(es) in 50 of 50 trajectories" in out


def test_check_bad_input(capsys):
  assert main(["check", "no_such_game"]) == 2
  assert "unknown game 'no_such_game'" in capsys.readouterr().err
  assert main(["check", "kuhn_poker(cards=4)"]) == 2
  assert "valid parameters" in capsys.readouterr().err
  assert main(["check", "kuhn_poker", "--trajectories", "0"]) == 2
  assert "--trajectories must be positive" in capsys.readouterr().err
  assert main(["check", "kuhn_poker", "--openspiel", "no_such_game"]) == 2
  assert "OpenSpiel cannot load 'no_such_game'" in capsys.readouterr().err
  assert main(["check", "ii_goofspiel", "--openspiel", "auto"]) == 2
  assert "mirrors no OpenSpiel game" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("text", ["liars_dice(numdice=2)", "goofspiel(num_cards=13)",
                                  "limit_holdem"])
def test_large_games_agree_with_openspiel_on_ten_thousand_trajectories(text, capsys):
  """LD(2,2), II-GS(13) and Limit Hold'em: conformance and OpenSpiel lockstep, 10,000 each."""
  from jaxgt.games import make_from_string, registry
  from jaxgt.games.device import DeviceGame
  if text.split("(")[0] not in registry() or not isinstance(make_from_string(text), DeviceGame):
    pytest.skip(f"{text} is not a device game here")
  assert main(["check", text, "--trajectories", "10000", "--openspiel", "auto", "--json"]) == 0
  doc = json.loads(capsys.readouterr().out)
  assert doc["failures"] == [] and doc["openspiel_mismatches"] == 0
  t0 = time.perf_counter()
  assert _info_json(capsys, text)["enumerable"] is False
  assert time.perf_counter() - t0 < 10


def test_check_exits_non_zero_on_a_conformance_failure(capsys, monkeypatch):
  from jaxgt.games import rules_check
  failure = {"check": "zero_sum", "trajectory": 3, "actions": [0, 1], "message": "returns"}
  monkeypatch.setattr(rules_check, "check_rules", lambda game, *, trajectories, seed: {
      "game": game.game_string(), "trajectories": trajectories, "checks": ["zero_sum"],
      "failures": [failure]})
  assert main(["check", "kuhn_poker", "--trajectories", "5", "--json"]) == 1
  assert json.loads(capsys.readouterr().out) == {
      "game": "kuhn_poker", "trajectories": 5, "failures": [failure],
      "openspiel_mismatches": None}
  assert main(["check", "kuhn_poker", "--trajectories", "5"]) == 1
  out = capsys.readouterr().out
  assert "1 conformance failure(s) on 5 trajectories" in out
  assert "zero_sum: trajectory 3 actions [0, 1]: returns" in out


def test_export_checks_its_output_path_before_reading_the_policy(capsys):
  assert main(["export", "/nonexistent/p.npz", "--openspiel", "/nonexistent/o.json"]) == 2
  assert "--openspiel /nonexistent/o.json" in capsys.readouterr().err
