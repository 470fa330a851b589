"""``jaxgt evaluate``: the estimate, --json, off-policy, and bad input with line numbers."""

import json
import re

import jax
import numpy as np
import pytest

import jaxgt
from jaxgt.cli import main
from jaxgt.evaluation import importance
from jaxgt.evaluation.episode_log import read_episodes, write_episodes
from jaxgt.policy import Policy
from jaxgt.policy import load_policy


def _policy(compiled, seed):
  return Policy.from_arrays(compiled, importance.random_profile(compiled, seed))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
  d = tmp_path_factory.mktemp("evaluate")
  kuhn = jaxgt.load("kuhn_poker")
  played, evaluated = _policy(kuhn, 1), _policy(kuhn, 2)
  played.save(d / "played.npz")
  evaluated.save(d / "evaluated.npz")
  _policy(jaxgt.load("leduc_poker"), 3).save(d / "leduc.npz")
  actions, returns = importance.sample_episodes(kuhn, played.probs, 400, jax.random.key(0))
  hist = [[int(a) for a in row if a != importance.PADDING] for row in actions]
  write_episodes(d / "log.jsonl", "kuhn_poker", hist, returns)
  return d, returns


def test_json_is_exactly_the_contract(files, capsys):
  d, returns = files
  assert main(["evaluate", str(d / "log.jsonl"), "--policy", str(d / "played.npz"),
               "--player", "1", "--json"]) == 0
  out = json.loads(capsys.readouterr().out)
  assert set(out) == {"game", "estimate", "stderr", "ci95", "episodes", "estimator", "baseline",
                      "setting", "evaluated", "units"}
  assert out["episodes"] == 400 and out["estimator"] == "basic" and out["game"] == "kuhn_poker"
  assert out["setting"] == "on-policy" and out["evaluated"] == "player 1"
  assert set(out["units"]) == {"estimate"}
  assert out["estimate"] == pytest.approx(returns[:, 1].mean(), abs=1e-12)  # on-policy Monte Carlo
  lo, hi = out["ci95"]
  assert lo < out["estimate"] < hi and hi - lo == pytest.approx(2 * 1.959963984540054 * out["stderr"])


def test_off_policy_text_output(files, capsys):
  d, _ = files
  for est in importance.ESTIMATORS:
    assert main(["evaluate", str(d / "log.jsonl"), "--policy", str(d / "evaluated.npz"),
                 "--logged-policy", str(d / "played.npz"), "--estimator", est,
                 "--baseline", "bc"]) == 0
    text = capsys.readouterr().out
    assert f"{est} estimator" in text and "off-policy" in text and "episodes 400" in text


@pytest.mark.parametrize("line, message", [
    ('{"game": "kuhn_poker", "history": [0, 1, 0, 7], "returns": [-1, 1]}', "line 3: step 3"),
    ('{"game": "kuhn_poker", "history": [0, 1', "log.jsonl:3: not a JSON object"),
    ('{"game": "kuhn_poker", "history": [0, 1, 0], "returns": [-1, 1]}', "line 3: .*truncated"),
])
def test_bad_log_lines_are_named(files, tmp_path, capsys, line, message):
  d, _ = files
  good = (d / "log.jsonl").read_text().splitlines()[:2]
  path = tmp_path / "log.jsonl"
  path.write_text("\n".join(good + [line]) + "\n")
  assert main(["evaluate", str(path), "--policy", str(d / "played.npz")]) == 2
  assert re.search(message, capsys.readouterr().err)


def test_other_game_policy_and_log(files, tmp_path, capsys):
  d, _ = files
  assert main(["evaluate", str(d / "log.jsonl"), "--policy", str(d / "leduc.npz")]) == 2
  assert "log is for game kuhn_poker, the policy for leduc_poker" in capsys.readouterr().err
  assert main(["evaluate", str(d / "log.jsonl"), "--policy", str(d / "played.npz"),
               "--logged-policy", str(d / "leduc.npz")]) == 2
  assert "policy is for game leduc_poker" in capsys.readouterr().err


# ------------------------------------------------------------------ match logs: seats
def _exact(compiled, x, y):
  """Exact value to player 0 of x as player 0 against y as player 1."""
  from jaxgt.core.evaluate import evaluate
  return evaluate(compiled, (x.probs[0], y.probs[1]), dtype="float64").value


@pytest.fixture(scope="module")
def match_log(files):
  """A 2000-match Kuhn log of ``jaxgt match`` (agent 0 = played.npz, agent 1 = evaluated.npz)."""
  d, _ = files
  log = d / "match.jsonl"
  with pytest.MonkeyPatch.context() as mp:  # the match's --json line, away from the tests' capsys
    import io
    import sys
    mp.setattr(sys, "stdout", io.StringIO())
    assert main(["match", "kuhn_poker", f"policy(path={d / 'played.npz'})",
                 f"policy(path={d / 'evaluated.npz'})", "--matches", "2000", "--seed", "4",
                 "--json", "--log", str(log)]) == 0
    doc = json.loads(sys.stdout.getvalue())
  return d, log, doc


def _evaluate(capsys, *argv):
  assert main(["evaluate", *map(str, argv), "--json"]) == 0, capsys.readouterr().err
  return json.loads(capsys.readouterr().out)


def test_agent_over_a_match_log_is_unbiased_for_its_match_value(match_log, capsys):
  """``--agent 0`` evaluates AGENT0 in the seat each line records: on-policy Basic is the match's
  own mean, and every estimator is within 3 standard errors of the exact value of a match played
  half in each seat (from the tree, not from the log)."""
  d, log, doc = match_log
  kuhn = jaxgt.load("kuhn_poker")
  a, b = (load_policy(d / f, kuhn)[0] for f in ("played.npz", "evaluated.npz"))
  want_a = 0.5 * (_exact(kuhn, a, b) - _exact(kuhn, b, a))  # AGENT0 half as player 0, half as 1
  out = _evaluate(capsys, log, "--policy", d / "played.npz", "--agent", 0)
  assert out["episodes"] == 2000 and out["estimate"] == pytest.approx(doc["mean"], abs=1e-12)
  basic_se = out["stderr"]
  for est in ("all-cards", "combined", "aivat"):
    out = _evaluate(capsys, log, "--policy", d / "played.npz", "--agent", 0, "--estimator", est,
                    "--baseline", "exact", "--baseline-policy", d / "evaluated.npz")
    assert abs(out["estimate"] - want_a) < 3 * out["stderr"], (est, out, want_a)
  assert out["stderr"] < basic_se  # AIVAT with exact values of the opponent's profile
  # AGENT1 from the same log: the negation of the match mean
  out = _evaluate(capsys, log, "--policy", d / "evaluated.npz", "--agent", 1)
  assert out["estimate"] == pytest.approx(-doc["mean"], abs=1e-12)
  # off-policy: AGENT1's policy (b) evaluated in AGENT0's seats against AGENT1 (self-play, value
  # 0.5 * (v(b, b) - v(b, b)) = 0), from AGENT0's play
  want_c = 0.5 * (_exact(kuhn, b, b) - _exact(kuhn, b, b))
  out = _evaluate(capsys, log, "--policy", d / "evaluated.npz", "--logged-policy",
                  d / "played.npz", "--agent", 0, "--estimator", "all-cards")
  assert abs(out["estimate"] - want_c) < 3 * out["stderr"], (out, want_c)
  # one seat only: the lines where agent 0 was player 1
  out = _evaluate(capsys, log, "--policy", d / "played.npz", "--agent", 0, "--player", 1,
                  "--estimator", "all-cards")
  assert out["episodes"] == 1000
  assert abs(out["estimate"] + _exact(kuhn, b, a)) < 3 * out["stderr"]


def test_ambiguous_seat_requests_are_refused(files, match_log, capsys):
  d, log, _ = match_log
  for extra in ([], ["--player", "0"]):  # both agents sat as player 0: whose policy is this?
    assert main(["evaluate", str(log), "--policy", str(d / "played.npz"), *extra]) == 2
    assert "both agents as player 0" in capsys.readouterr().err
  # a log without the seats field: --agent cannot know the seats
  assert main(["evaluate", str(d / "log.jsonl"), "--policy", str(d / "played.npz"),
               "--agent", "0"]) == 2
  assert "line 1: no 'seats' field" in capsys.readouterr().err


def test_partial_information_log_notes(files, tmp_path, capsys):
  """A log that hides the opponent's card after folds: biased choices are noted on stderr, aivat
  switches to its partial-information variant (unbiased; the same estimate as on the full log)."""
  d, _ = files
  kuhn = jaxgt.load("kuhn_poker")
  played = load_policy(d / "played.npz", kuhn)[0]
  actions, returns = importance.sample_episodes(kuhn, played.probs, 400, jax.random.key(0))
  hidden = importance.partial_view(kuhn, actions, 0)
  hist = [[None if a == importance.UNOBSERVED else int(a) for a in row if a != importance.PADDING]
          for row in hidden]
  write_episodes(tmp_path / "partial.jsonl", "kuhn_poker", hist, returns)
  base = ["evaluate", str(tmp_path / "partial.jsonl"), "--policy", str(d / "played.npz"), "--json"]
  assert main(base + ["--baseline", "bc"]) == 0
  assert "biased with partial information" in capsys.readouterr().err
  assert main(base) == 0  # on-policy basic without a baseline: no note
  assert "note" not in capsys.readouterr().err
  assert main(base + ["--estimator", "aivat"]) == 0
  captured = capsys.readouterr()
  assert "partial-information variant" in captured.err
  partial = json.loads(captured.out)
  table = importance.estimator_table(kuhn, played, player=0, estimator="aivat", baseline="exact",
                                     partial_information=True)
  full = importance.episode_values(kuhn, table, actions, returns, player=0)
  assert partial["estimate"] == pytest.approx(full.mean(), abs=1e-12)


# ------------------------------------------------------------------ match logs: agent specs
def test_match_log_records_the_agent_specs(match_log):
  d, log, _ = match_log
  eps = read_episodes(log)
  want = (f"policy(path={d / 'played.npz'})", f"policy(path={d / 'evaluated.npz'})")
  assert {e.agents for e in eps} == {want}


def test_a_policy_the_logged_agent_did_not_play_is_refused(match_log, capsys):
  """The played policy (``--policy``, or ``--logged-policy`` when given) must be the evaluated
  agent's, as the log's specs record: another agent's is refused with exit 2 and one line."""
  d, log, _ = match_log
  for argv in (["--policy", d / "evaluated.npz", "--agent", 0],
               ["--policy", d / "played.npz", "--agent", 1],
               ["--policy", d / "played.npz", "--agent", 1, "--player", 0],
               ["--policy", d / "played.npz", "--logged-policy", d / "evaluated.npz", "--agent", 0]):
    assert main(["evaluate", str(log), *map(str, argv)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert re.search(r"jaxgt: error: --(logged-)?policy .* is not the policy agent \d played", err)
  # the right policy passes (each agent's own, and off-policy with the played one as logged)
  _evaluate(capsys, log, "--policy", d / "played.npz", "--agent", 0)
  _evaluate(capsys, log, "--policy", d / "evaluated.npz", "--agent", 1, "--player", 0)
  _evaluate(capsys, log, "--policy", d / "evaluated.npz", "--logged-policy", d / "played.npz",
            "--agent", 0)


def test_random_and_search_agents_in_a_match_log(files, tmp_path, capsys):
  """``random`` is the uniform policy; a search agent's lines have no policy file to match."""
  d, _ = files
  kuhn = jaxgt.load("kuhn_poker")
  Policy.from_arrays(kuhn, tuple(np.asarray(pt.legal, np.float64) / pt.legal.sum(-1, keepdims=True)
                                 for pt in kuhn.tree.players)).save(tmp_path / "uniform.npz")
  log = tmp_path / "search.jsonl"
  assert main(["match", "kuhn_poker", "random", "oos(iterations=10)", "--matches", "4",
               "--json", "--log", str(log)]) == 0
  capsys.readouterr()
  _evaluate(capsys, log, "--policy", tmp_path / "uniform.npz", "--agent", 0)
  assert main(["evaluate", str(log), "--policy", str(d / "played.npz"), "--agent", "0"]) == 2
  assert "is not the policy agent 0 played" in capsys.readouterr().err
  assert main(["evaluate", str(log), "--policy", str(tmp_path / "uniform.npz"), "--agent", "1"]) == 2
  assert "agent 1 of this log is 'oos(iterations=10)', not a tabular policy" in (
      capsys.readouterr().err)


def test_a_log_without_agent_specs_warns(match_log, tmp_path, capsys):
  """An older match log (seats, no specs) still evaluates, with a warning that nothing checks
  the policy against the agent that played."""
  d, log, _ = match_log
  old = tmp_path / "old.jsonl"
  lines = []
  for line in log.read_text().splitlines():
    record = json.loads(line)
    del record["agents"]
    lines.append(json.dumps(record))
  old.write_text("\n".join(lines) + "\n")
  assert main(["evaluate", str(old), "--policy", str(d / "evaluated.npz"), "--agent", "0",
               "--json"]) == 0
  assert "WARNING: the log does not record which agent played" in capsys.readouterr().err
