"""``jaxgt solve --checkpoint DIR --checkpoint-every N [--resume]``: a solve stopped at a
checkpoint and continued ends in exactly the arrays of the uninterrupted run, and the folder is
checked before any work."""

import json

import numpy as np
import pytest

from jaxgt.solvers import saved_state as solve_checkpoint
from jaxgt.cli import main


def _error_line(capsys) -> str:
  lines = [line for line in capsys.readouterr().err.strip().splitlines()
           if not line.startswith("enumerating: ")]
  assert len(lines) == 1 and lines[0].startswith("jaxgt: error: "), lines
  return lines[0]


def _arrays(path) -> dict:
  with np.load(path) as z:
    return {k: z[k] for k in z.files if k != "header"}


@pytest.mark.parametrize("solver", [["--solver", "dcfr"],
                                    ["--solver", "mccfr-os", "--seed", "3", "--batch", "4"]])
def test_resumed_solve_equals_the_uninterrupted_run(solver, tmp_path, capsys):
  """2N iterations in one run equal N, then --resume to 2N: the policy file and every array of
  the solver state are identical (DCFR sums its average in blocks of 16, which the chunks cut;
  outcome sampling draws step t's trajectories from the seed and t)."""
  flags = ["kuhn_poker", *solver, "--eval-every", "10", "--checkpoint-every", "20"]
  whole, part = tmp_path / "whole", tmp_path / "part"
  assert main(["solve", *flags, "--iterations", "40", "--checkpoint", str(whole), "--save",
               str(tmp_path / "whole.npz")]) == 0
  assert main(["solve", *flags, "--iterations", "20", "--checkpoint", str(part)]) == 0
  assert solve_checkpoint.read_meta(part / solve_checkpoint.FILE)["iterations"] == 20
  capsys.readouterr()
  assert main(["solve", *flags, "--iterations", "40", "--checkpoint", str(part), "--resume",
               "--save", str(tmp_path / "part.npz"), "--json"]) == 0
  cap = capsys.readouterr()
  doc = json.loads(cap.out)
  assert "resuming from iteration 20" in cap.err
  assert doc["resumed_from"] == 20 and doc["iterations"] == 40
  assert [e["iteration"] for e in doc["evaluations"]] == [10, 20, 30, 40]
  for a, b in ((whole / solve_checkpoint.FILE, part / solve_checkpoint.FILE),
               (tmp_path / "whole.npz", tmp_path / "part.npz")):
    x, y = _arrays(a), _arrays(b)
    assert x.keys() == y.keys() and len(x) >= 2
    for k in x:
      np.testing.assert_array_equal(x[k], y[k])
  assert solve_checkpoint.read_meta(part / solve_checkpoint.FILE)["iterations"] == 40


def test_checkpoint_folder_refusals_come_before_any_work(tmp_path, no_work, capsys):
  afile = tmp_path / "a_file"
  afile.write_text("x")
  cases = [
      (["--checkpoint", str(afile / "ck")], "--checkpoint"),
      (["--checkpoint", str(tmp_path / "typo"), "--resume"], "holds no solve checkpoint"),
      (["--resume"], "--resume needs --checkpoint DIR"),
      (["--checkpoint-every", "5"], "--checkpoint-every needs --checkpoint DIR"),
      (["--checkpoint", str(tmp_path), "--checkpoint-every", "0"],
       "--checkpoint-every must be positive"),
  ]
  for extra, message in cases:
    assert main(["solve", "kuhn_poker", "--iterations", "10", *extra]) == 2
    assert message in _error_line(capsys), extra
  corrupt = tmp_path / "corrupt"
  corrupt.mkdir()
  (corrupt / solve_checkpoint.FILE).write_bytes(b"PK\x03\x04 truncated")
  assert main(["solve", "kuhn_poker", "--checkpoint", str(corrupt), "--resume"]) == 2
  assert "not a jaxgt solve checkpoint" in _error_line(capsys)
  assert main(["solve", "kuhn_poker", "--checkpoint", str(corrupt)]) == 2
  assert "already holds a solve checkpoint; pass --resume" in _error_line(capsys)
  assert not (tmp_path / "typo").exists()


def test_resume_refuses_another_solver_or_game(tmp_path, capsys):
  ck = tmp_path / "ck"
  assert main(["solve", "kuhn_poker", "--iterations", "10", "--checkpoint", str(ck)]) == 0
  capsys.readouterr()
  assert main(["solve", "kuhn_poker", "--solver", "cfr+", "--iterations", "20", "--checkpoint",
               str(ck), "--resume"]) == 2
  assert "solver 'dcfr' there, 'cfr+' here" in _error_line(capsys)
  assert main(["solve", "kuhn_poker", "--iterations", "10", "--checkpoint", str(ck),
               "--resume"]) == 2
  assert "pass --iterations above it" in _error_line(capsys)
  assert main(["solve", "liars_dice(numdice=1)", "--iterations", "20", "--checkpoint", str(ck),
               "--resume"]) == 2
  assert "holds a solve of kuhn_poker" in _error_line(capsys)
