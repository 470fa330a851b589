"""``jaxgt evaluate``: the estimate, --json, off-policy, and bad input with line numbers."""

import json
import re

import jax
import pytest

import jaxgt
from jaxgt.cli import main
from jaxgt.evaluation import importance
from jaxgt.evaluation.episode_log import write_episodes
from jaxgt.policy import Policy


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
  assert set(out) == {"estimate", "stderr", "ci95", "episodes", "estimator"}
  assert out["episodes"] == 400 and out["estimator"] == "basic"
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
