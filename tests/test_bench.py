"""jaxgt bench: the benchmark protocol, results.json/md, plots, --only, --compare."""

import argparse
import ast
import json
import os
import pathlib
import textwrap

import pytest

from jaxgt import bench_report, cli
from jaxgt.cli import bench

ROOT = pathlib.Path(__file__).resolve().parents[1]

GOOD = textwrap.dedent('''
    import argparse
    from jaxgt.bench_report import figure, missing_peer
    BENCH_QUICK = ["--n", "3"]

    def main(argv=None):
      ap = argparse.ArgumentParser()
      ap.add_argument("--n", type=int, default=100)
      args = ap.parse_args(argv)
      print("n", args.n)
      with open("table.md", "w") as f:  # a relative path: lands in --out/good/
        f.write("| n |")
      figure("rate", 50.0 * args.n, "it/s", game="g", peer="Peer", peer_value=25.0)
      figure("time", 2.0, "ms", higher_is_better=False, game="g", peer="Peer", peer_value=8.0)
      figure("alone", 7.0, "s", higher_is_better=False)
      missing_peer("OtherLib", "not installed", game="g")

    if __name__ == "__main__":
      main()
''')
BAD = "import sys\nBENCH_QUICK = ['-q']\nprint('about to fail')\nsys.exit(3)\n"
NO_PROTOCOL = "print('a benchmark that has not adopted the protocol')\n"


@pytest.fixture
def suite(tmp_path, monkeypatch):
  folder = tmp_path / "repo" / "benchmarks"
  folder.mkdir(parents=True)
  (folder / "good.py").write_text(GOOD)
  (folder / "bad.py").write_text(BAD)
  (folder / "old.py").write_text(NO_PROTOCOL)
  (folder / "_helper.py").write_text("raise SystemExit('helpers are not benchmarks')\n")
  monkeypatch.setenv("PYTHONPATH", str(ROOT))
  return folder


def test_quick_run_collects_figures_ratios_and_failures(suite, tmp_path, capsys):
  out = tmp_path / "out"
  assert cli.main(["bench", "--quick", "--dir", str(suite), "--out", str(out)]) == 1  # bad fails
  res = json.loads((out / "results.json").read_text())
  env = res["environment"]
  for k in ("backend", "device", "device_count", "jax", "jaxlib", "git", "peers"):
    assert k in env
  assert env["device_count"] >= 1 and res["quick"] is True
  by_name = {b["name"]: b for b in res["benchmarks"]}
  assert set(by_name) == {"good", "bad", "old"}  # _helper.py is not a benchmark
  good, bad = by_name["good"], by_name["bad"]
  assert by_name["old"]["skipped"] == "no BENCH_QUICK"  # not run with full settings
  assert good["returncode"] == 0 and good["args"] == ["--n", "3"]
  figs = {f["name"]: f for f in good["figures"]}
  assert figs["rate"]["value"] == 150.0 and figs["rate"]["ratio"] == pytest.approx(6.0)
  assert figs["time"]["ratio"] == pytest.approx(4.0)  # lower is better: peer / ours
  assert figs["alone"]["ratio"] is None and figs["rate"]["params"] == {"game": "g"}
  assert good["missing_peers"][0]["missing_peer"] == "OtherLib"
  assert bad["returncode"] == 3 and "about to fail" in "\n".join(bad["log_tail"])
  md = (out / "results.md").read_text()
  assert "| rate | game=g | 150 | it/s | Peer | 25 | 6.00x |" in md
  assert "missing peer **OtherLib**" in md and "FAILED (exit 3)" in md
  assert "old (0 s, skipped: no BENCH_QUICK)" in md
  assert (out / "ratios.png").stat().st_size > 0
  assert "\nn 3\n" in (out / "logs" / "good.log").read_text()  # the benchmark's own output
  assert (out / "good" / "table.md").read_text() == "| n |"  # its files under --out


def test_only_and_compare(suite, tmp_path, capsys):
  a, b = tmp_path / "a", tmp_path / "b"
  assert cli.main(["bench", "--dir", str(suite), "--only", "good", "--out", str(a)]) == 0
  res = json.loads((a / "results.json").read_text())
  assert [x["name"] for x in res["benchmarks"]] == ["good"]
  assert res["benchmarks"][0]["figures"][0]["value"] == 5000.0  # full settings: n=100
  assert cli.main(["bench", "--quick", "--dir", str(suite), "--only", "good",
                   "--out", str(b)]) == 0
  cmp = tmp_path / "cmp"
  assert cli.main(["bench", "--compare", str(a / "results.json"), str(b / "results.json"),
                   "--out", str(cmp)]) == 0
  md = (cmp / "compare.md").read_text()
  row = next(l for l in md.splitlines() if "| rate |" in l)
  assert "5,000" in row and "150" in row and "0.03x" in row  # B/A for a higher-is-better rate
  row = next(l for l in md.splitlines() if "| time |" in l)
  assert row.rstrip().endswith("1.00x |")
  assert (cmp / "compare.png").stat().st_size > 0


def test_bad_arguments_are_refused_before_running(suite, tmp_path, capsys):
  assert cli.main(["bench", "--dir", str(suite), "--only", "nope"]) == 2
  assert "unknown benchmarks ['nope']" in capsys.readouterr().err
  (tmp_path / "file").write_text("x")
  assert cli.main(["bench", "--dir", str(suite), "--out", str(tmp_path / "file")]) == 2
  assert "not a folder" in capsys.readouterr().err
  assert cli.main(["bench", "--compare", str(tmp_path / "file"), "--out", str(tmp_path)]) == 2
  assert "cannot read a results.json" in capsys.readouterr().err


def test_every_shipped_benchmark_follows_the_protocol():
  found = bench.find_benchmarks(ROOT / "benchmarks")
  assert {"cfr_speed", "sampling_speed", "search_speed", "subgame_speed", "scaling"} <= set(found)
  for name, path in found.items():
    assert bench.quick_args(path), f"{name} has no BENCH_QUICK"
    tree = ast.parse(path.read_text())
    main = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main")
    assert [a.arg for a in main.args.args] == ["argv"], name
    assert "figure(" in path.read_text(), name


def test_figure_records_in_memory_without_the_runner(monkeypatch):
  monkeypatch.delenv(bench_report.FIGURES_ENV, raising=False)
  n = len(bench_report.RECORDED)
  r = bench_report.figure("x", 3.0, "s", higher_is_better=False, peer="p", peer_value=6.0)
  assert r["ratio"] == 2.0 and len(bench_report.RECORDED) == n + 1


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux's")
def test_pin_to_core_checks_the_core_and_pins_the_calling_thread():
  assert bench_report.pin_to_core(None) is None
  before = os.sched_getaffinity(0)
  with pytest.raises(ValueError, match="not available"):
    bench_report.pin_to_core(max(before) + 1000)
  assert os.sched_getaffinity(0) == before  # a refused core changes nothing
  core = min(before)
  try:
    assert bench_report.pin_to_core(core) == core
    assert os.sched_getaffinity(0) == {core}
  finally:
    os.sched_setaffinity(0, before)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux's")
def test_pin_option_is_unpinned_by_default_and_refuses_a_core_it_cannot_use():
  ap = argparse.ArgumentParser()
  bench_report.add_pin_option(ap)
  assert bench_report.pin_from_args(ap, ap.parse_args([])) == {}
  bad = str(max(os.sched_getaffinity(0)) + 1000)
  with pytest.raises(SystemExit):
    bench_report.pin_from_args(ap, ap.parse_args(["--pin", bad]))
