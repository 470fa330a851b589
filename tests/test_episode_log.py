"""The episode log format: round trip and line-numbered errors."""

import pytest

from jaxgt.evaluation.episode_log import Episode, read_episodes, write_episodes


def test_round_trip_keeps_unobserved_chance(tmp_path):
  path = tmp_path / "log.jsonl"
  n = write_episodes(path, "kuhn_poker", [[0, 1, 0, 0], [None, 2, 1]], [[-1, 1], [1.5, -1.5]])
  assert n == 2
  assert read_episodes(path) == [Episode("kuhn_poker", (0, 1, 0, 0), (-1.0, 1.0)),
                                 Episode("kuhn_poker", (None, 2, 1), (1.5, -1.5))]


@pytest.mark.parametrize("line, message", [
    ('{"game": "kuhn_poker", "history": [0, 1', "truncated"),
    ('{"game": "kuhn_poker", "history": [0, -1], "returns": [1, -1]}', "action ids"),
    ('{"game": "kuhn_poker", "history": [0], "returns": [1]}', "two finite numbers"),
    ('{"game": "leduc_poker", "history": [0], "returns": [1, -1]}', "differs"),
    ('{"history": [0], "returns": [1, -1]}', "missing"),
])
def test_malformed_line_is_named(tmp_path, line, message):
  path = tmp_path / "log.jsonl"
  path.write_text('{"game": "kuhn_poker", "history": [0, 1, 0, 0], "returns": [-1, 1]}\n' + line + "\n")
  with pytest.raises(ValueError, match=message):
    read_episodes(path)
  with pytest.raises(ValueError, match=":2:"):
    read_episodes(path)
