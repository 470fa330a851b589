"""``jaxgt exploitability`` and ``jaxgt show`` on policy files written by ``jaxgt solve --save``:
the numbers against the library's sequence-form evaluation and OpenSpiel, the strategy table
against the file's arrays."""

import json
import re

import jax
import jax.numpy as jnp
import pytest

import jaxgt
from jaxgt.cli import main
from jaxgt.policy import load_policy

pyspiel = pytest.importorskip("pyspiel")


def _error_line(capsys) -> str:
  lines = capsys.readouterr().err.strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith("jaxgt: error: "), lines
  return lines[0]


@pytest.fixture(scope="module")
def kuhn_policy(tmp_path_factory):
  """A Kuhn poker policy after 30 DCFR iterations (exploitable, so every number is non-zero)."""
  path = tmp_path_factory.mktemp("policy") / "kuhn.npz"
  assert main(["solve", "kuhn_poker", "--iterations", "30", "--eval-every", "0", "--save",
               str(path)]) == 0
  return str(path)


def test_exploitability_json_matches_the_library_and_openspiel(kuhn_policy, capsys):
  capsys.readouterr()
  assert main(["exploitability", kuhn_policy, "--json"]) == 0
  out = capsys.readouterr().out
  assert len(out.strip().splitlines()) == 1
  doc = json.loads(out)
  pol, g = load_policy(kuhn_policy)
  with jax.enable_x64(True):
    tree = g.device_tree(jnp.float64)
    probs = tuple(jnp.asarray(p) for p in pol.probs)
    expl = float(jaxgt.exploitability(tree, probs))
    value = float(jaxgt.expected_value(tree, probs))
    brs = [float(jaxgt.best_response_value(tree, probs, p)) for p in (0, 1)]
  assert expl > 1e-4
  assert doc["game"] == "kuhn_poker" and doc["policy"] == kuhn_policy
  assert doc["exploitability"] == pytest.approx(expl, abs=1e-12)
  assert doc["nash_conv"] == pytest.approx(2 * expl, abs=1e-12)
  assert doc["value"] == pytest.approx(value, abs=1e-12)
  assert doc["best_response"] == pytest.approx(brs, abs=1e-12)
  assert doc["units"]["exploitability"] == "game payoff per episode"
  from openspiel_reference import exported_exploitability
  assert doc["exploitability"] == pytest.approx(exported_exploitability(g, pol.probs), abs=1e-9)
  assert main(["exploitability", kuhn_policy]) == 0
  text = capsys.readouterr().out
  assert re.search(rf"^exploitability\s+{expl:.9e}", text, re.M), text


def test_exploitability_refuses_a_corrupt_file_and_another_game(kuhn_policy, tmp_path, capsys):
  bad = tmp_path / "bad.npz"
  bad.write_bytes(b"\x00 not a policy")
  assert main(["exploitability", str(bad)]) == 2
  assert "not a jaxgt policy file" in _error_line(capsys)
  assert main(["exploitability", kuhn_policy, "--game", "leduc_poker", "--json"]) == 2
  capfd_err = _error_line(capsys)
  assert "policy is for game kuhn_poker" in capfd_err and "not for leduc_poker" in capfd_err
  assert main(["exploitability", str(tmp_path / "missing.npz")]) == 2
  assert "cannot read policy file" in _error_line(capsys)


def test_show_prints_the_files_probabilities_by_action_name(kuhn_policy, capsys):
  pol, g = load_policy(kuhn_policy)
  capsys.readouterr()
  assert main(["show", kuhn_policy, "--json"]) == 0
  doc = json.loads(capsys.readouterr().out)
  assert doc["game"] == "kuhn_poker" and len(doc["infostates"]) == 12
  for row in doc["infostates"]:
    p = row["player"]
    i = g.infostate_keys[p].index(row["infostate"])
    assert [a["name"] for a in row["actions"]] == ["Pass", "Bet"]
    assert [a["probability"] for a in row["actions"]] == pol.probs[p][i].tolist()
  assert main(["show", kuhn_policy, "--infostates", "b$"]) == 0
  lines = capsys.readouterr().out.splitlines()
  states = [line.split()[1] for line in lines[2:]]
  # the states after a bet: player 0 after pass-bet, player 1 after a bet, three cards each
  assert sorted(states) == sorted(["0pb", "1pb", "2pb", "0b", "1b", "2b"])
  p1 = g.infostate_keys[1].index("2b")
  assert f"Pass: {pol.probs[1][p1, 0]:.4f}  Bet: {pol.probs[1][p1, 1]:.4f}" in "\n".join(lines)
  assert main(["show", kuhn_policy, "--infostates", "?b", "--glob", "--player", "1",
               "--json"]) == 0
  doc = json.loads(capsys.readouterr().out)
  assert sorted(r["infostate"] for r in doc["infostates"]) == ["0b", "1b", "2b"]


def test_show_refuses_a_bad_pattern_before_reading(tmp_path, capsys):
  assert main(["show", str(tmp_path / "never_read.npz"), "--infostates", "(b"]) == 2
  assert "not a regular expression" in _error_line(capsys)
