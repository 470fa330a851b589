"""``jaxgt lift``: a policy of Leduc's suit-isomorphic quotient, solved briefly, lifted to Leduc
through the command line keeps the exploitability the library's sequence-form evaluation gives
the quotient policy; bad input is refused before any work."""

import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxgt
from jaxgt.cli import main
from jaxgt.policy import load_policy

QUOTIENT = "leduc_poker(suit_isomorphism=true)"


def _error_line(capsys) -> str:
  lines = [line for line in capsys.readouterr().err.strip().splitlines()
           if not line.startswith("enumerating: ")]
  assert len(lines) == 1 and lines[0].startswith("jaxgt: error: "), lines
  return lines[0]


def _exploitability(compiled, probs) -> float:
  with jax.enable_x64(True):
    tree = compiled.device_tree(jnp.float64)
    return float(jaxgt.exploitability(tree, tuple(jnp.asarray(p, jnp.float64) for p in probs)))


@pytest.fixture(scope="module")
def quotient_policy(tmp_path_factory):
  """The quotient's policy after 20 DCFR iterations (exploitable, far from uniform)."""
  path = tmp_path_factory.mktemp("lift") / "quotient.npz"
  assert main(["solve", QUOTIENT, "--iterations", "20", "--eval-every", "0", "--save",
               str(path)]) == 0
  return str(path)


def test_lifted_policy_has_the_quotient_policys_exploitability(quotient_policy, tmp_path,
                                                                capsys):
  out = tmp_path / "leduc.npz"
  capsys.readouterr()
  assert main(["lift", quotient_policy, "leduc_poker", "--save", str(out), "--json"]) == 0
  text = capsys.readouterr().out
  assert len(text.strip().splitlines()) == 1
  doc = json.loads(text)

  qpol, qgame = load_policy(quotient_policy)
  lpol, lgame = load_policy(out)
  assert qgame.name == QUOTIENT and lgame.name == "leduc_poker"
  expected = _exploitability(qgame, qpol.probs)
  uniform = tuple(np.asarray(lgame.tree.players[p].legal, np.float64) for p in (0, 1))
  uniform = tuple(u / u.sum(-1, keepdims=True) for u in uniform)
  assert abs(expected - _exploitability(lgame, uniform)) > 0.1  # the test can tell them apart
  assert _exploitability(lgame, lpol.probs) == pytest.approx(expected, abs=1e-10)

  assert doc["game"] == "leduc_poker" and doc["source_game"] == QUOTIENT
  assert doc["policy"] == quotient_policy and doc["save"] == str(out)
  assert doc["source_exploitability"] == pytest.approx(expected, abs=1e-10)
  assert doc["exploitability"] == pytest.approx(expected, abs=1e-10)
  assert doc["infostates"] == [468, 468] and doc["source_infostates"] == [144, 144]
  assert doc["units"]["exploitability"] == "game payoff per episode"

  # A state with the second card of each rank plays the quotient's state of that rank.
  index = qgame.infostate_index(0)
  for i, key in enumerate(lgame.infostate_keys[0]):
    m = re.search(r"\[Private: (\d)\]", key)
    if m and "[Public:" not in key:
      qkey = key.replace(m.group(0), f"[Private: {int(m.group(1)) // 2}]")
      np.testing.assert_array_equal(lpol.probs[0][i], qpol.probs[0][index[qkey]])

  assert main(["lift", quotient_policy, "leduc_poker", "--save", str(out)]) == 0
  text = capsys.readouterr().out
  shown = re.search(r"^exploitability\s+(\S+) \(source\)\s+(\S+) \(lifted\)", text, re.M)
  assert shown, text
  assert float(shown.group(1)) == pytest.approx(expected, rel=1e-8)
  assert float(shown.group(2)) == pytest.approx(expected, rel=1e-8)


def test_a_pair_without_a_known_map_is_refused(quotient_policy, tmp_path, no_work, capsys):
  out = tmp_path / "x.npz"
  for game in ("kuhn_poker", QUOTIENT):
    assert main(["lift", quotient_policy, game, "--save", str(out)]) == 2
    err = _error_line(capsys)
    assert "no known map" in err and f"{QUOTIENT} -> leduc_poker" in err
  assert main(["lift", quotient_policy, "leduc_pokr", "--save", str(out)]) == 2
  assert "did you mean 'leduc_poker'" in _error_line(capsys)
  assert not out.exists()


def test_corrupt_file_and_unwritable_save_are_refused(quotient_policy, tmp_path, no_work,
                                                      capsys):
  bad = tmp_path / "bad.npz"
  bad.write_bytes(b"\x00 not a policy")
  out = tmp_path / "x.npz"
  assert main(["lift", str(bad), "leduc_poker", "--save", str(out)]) == 2
  err = _error_line(capsys)
  assert "not a jaxgt policy file" in err and "pickle" not in err
  for save in (tmp_path / "missing" / "x.npz", tmp_path):
    assert main(["lift", quotient_policy, "leduc_poker", "--save", str(save), "--json"]) == 2
    assert "--save" in _error_line(capsys)
  assert not out.exists() and not (tmp_path / "missing").exists()


def test_quotient_map_finds_the_pair_by_its_game_strings():
  from jaxgt.games import quotient_map
  from jaxgt.games.leduc import suit_isomorphic_key
  q = quotient_map("leduc_poker(suit_isomorphism=True)", "leduc_poker(players=2)")
  assert q.key_map is suit_isomorphic_key and (q.source, q.target) == (QUOTIENT, "leduc_poker")
  with pytest.raises(ValueError, match=r"no known map .* leduc_poker\(suit_isomorphism=true\) "
                     r"-> leduc_poker"):
    quotient_map("leduc_poker", QUOTIENT)
