"""benchmarks/convergence.py: how peers stop, so that no cap hides the fastest peer."""


import pytest

from script_modules import load_script


@pytest.fixture(scope="module")
def conv():
  return load_script("benchmarks/convergence.py", "convergence_bench")


class FakePeer:
  """A peer taking ``ms`` milliseconds per iteration on a fake clock, with exploitability
  ``1 / iterations`` (1e-4 at 10000 iterations)."""

  def __init__(self, ms):
    self.ms, self.now, self.done = ms, 0.0, 0

  def clock(self):
    return self.now

  def step(self, n):
    self.now += n * self.ms / 1e3
    self.done += n

  def evaluate(self):
    return 1.0 / self.done

  def run(self, conv, name, budget, beat=None, cap=10**6, stop_eps=1e-4):
    return conv.run_peer(name, self.step, self.evaluate, cap, budget, stop_eps, 1.1, beat,
                         clock=self.clock)


def test_a_peer_stops_once_slower_than_the_fastest(conv):
  fast = FakePeer(1.0).run(conv, "fast", budget=1000)  # 1e-4 at ~10 s
  assert fast.cut == "target" and fast.reach(1e-4)[1] >= 10000
  t_fast = fast.reach(1e-4)[0]
  slow = FakePeer(3.0).run(conv, "slow", budget=1000, beat=t_fast)
  assert slow.cut == "slower" and slow.reach(1e-4) is None
  assert t_fast < slow.seconds[-1] <= 1.1 * t_fast + 3e-3  # stopped at the first checkpoint past it
  best = conv.best_peer([fast, slow])
  assert best[:2] == (t_fast, "fast") and best[2]  # proven: the other one was slower


def test_a_faster_peer_is_not_stopped_by_the_earlier_best(conv):
  slow = FakePeer(3.0).run(conv, "slow", budget=1000)
  fast = FakePeer(1.0).run(conv, "fast", budget=1000, beat=slow.reach(1e-4)[0])
  assert fast.cut == "target"
  assert conv.best_peer([slow, fast])[:2] == (fast.reach(1e-4)[0], "fast")


def test_a_budget_cut_before_the_best_time_leaves_the_best_unproven(conv):
  # the old quick mode's failure: a 3000-iteration cap stopped solvers that might have been
  # faster than the one reported as the best
  slow = FakePeer(3.0).run(conv, "slow", budget=1000)
  capped = FakePeer(1.0).run(conv, "capped", budget=1000, cap=3000)
  assert capped.cut == "cap" and capped.seconds[-1] < slow.reach(1e-4)[0]
  best = conv.best_peer([slow, capped])
  assert best[1] == "slow" and not best[2]
  # cut after passing the best's time, it could not have been faster: proven
  late = FakePeer(1.0).run(conv, "late", budget=1000, cap=9000)
  fastest = FakePeer(0.1).run(conv, "fastest", budget=1000)
  assert late.seconds[-1] > fastest.reach(1e-4)[0]
  assert conv.best_peer([fastest, late])[1:] == ("fastest", True)


def test_quick_settings_have_no_iteration_cap_on_peers(conv):
  quick = conv.BENCH_QUICK
  assert "--peer-cap" not in quick
  assert float(quick[quick.index("--peer-target") + 1]) == conv.HEADLINE


def test_lifted_leduc_line_compares_with_openspiel_on_both_games(conv):
  # fake clocks: OpenSpiel 9 ms/iteration on Leduc, 2 ms on the quotient, 1e-4 at 10000
  full = FakePeer(9.0).run(conv, "OpenSpiel C++ CFR+", budget=1000)
  quotient = FakePeer(2.0).run(conv, "OpenSpiel C++ CFR+", budget=1000)
  results = {"leduc_poker": ((0.02, "dcfr"), [full]),
             conv.ISO_LEDUC: ((0.005, "dcfr"), [quotient])}
  line = conv.lifted_leduc_line(results)
  t_full, t_quot = full.reach(1e-4)[0], quotient.reach(1e-4)[0]
  assert f"{t_full / 0.005:.0f}x" in line and f"{t_quot / 0.005:.0f}x" in line
  assert conv.lifted_leduc_line({"leduc_poker": results["leduc_poker"]}) is None
  assert conv.GAMES[conv.ISO_LEDUC][1] == conv.ISO_LEDUC  # the peers run the same quotient


def test_short_calls_are_timed_more_often(conv):
  assert [conv.repeats(s) for s in (2.0, 0.5, 0.02, 0.0003)] == [1, 5, 5, 25]
