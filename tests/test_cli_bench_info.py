"""``jaxgt bench --json`` and ``jaxgt info``: one object each, naming the JAX backend and the
device they ran on."""

import json

import jax
import pytest

from jaxgt.cli import main
from test_bench import GOOD, ROOT


def test_bench_json_is_one_object_naming_the_device(tmp_path, monkeypatch, capsys):
  folder = tmp_path / "repo" / "benchmarks"
  folder.mkdir(parents=True)
  (folder / "good.py").write_text(GOOD)
  (folder / "bad.py").write_text("import sys\nBENCH_QUICK = ['-q']\nsys.exit(3)\n")
  monkeypatch.setenv("PYTHONPATH", str(ROOT))
  out = tmp_path / "out"
  assert main(["bench", "--quick", "--dir", str(folder), "--out", str(out), "--json"]) == 1
  cap = capsys.readouterr()
  assert len(cap.out.strip().splitlines()) == 1
  doc = json.loads(cap.out)
  assert "benchmark(s) on" in cap.err and "[1/2]" in cap.err  # the progress lines
  results = json.loads((out / "results.json").read_text())
  assert doc["results"] == str(out / "results.json") and doc["quick"] is True
  assert (doc["backend"], doc["device"], doc["device_count"]) == (
      jax.default_backend(), jax.devices()[0].device_kind, len(jax.devices()))
  assert doc["backend"] == results["environment"]["backend"]
  by_name = {b["name"]: b for b in doc["benchmarks"]}
  assert by_name["good"]["figures"] == 3 and by_name["good"]["returncode"] == 0
  assert doc["failed"] == ["bad"] and doc["units"]["seconds"] == "seconds"
  assert doc["seconds"] == pytest.approx(results["seconds"])


def test_info_names_the_backend_and_device(capsys):
  assert main(["info", "kuhn_poker", "--json"]) == 0
  doc = json.loads(capsys.readouterr().out)
  assert doc["backend"] == jax.default_backend() and doc["device_count"] == len(jax.devices())
  assert doc["device"] == jax.devices()[0].device_kind
  assert main(["info", "kuhn_poker"]) == 0
  out = capsys.readouterr().out
  assert (f"device          {jax.devices()[0].device_kind} ({jax.default_backend()} "
          f"x{len(jax.devices())})") in out
