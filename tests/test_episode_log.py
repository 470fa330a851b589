"""The episode log format: round trip and line-numbered errors."""

import pytest

from jaxgt.evaluation.episode_log import Episode, read_episodes, write_episodes


def test_round_trip_keeps_unobserved_chance(tmp_path):
  path = tmp_path / "log.jsonl"
  n = write_episodes(path, "kuhn_poker", [[0, 1, 0, 0], [None, 2, 1]], [[-1, 1], [1.5, -1.5]])
  assert n == 2
  assert read_episodes(path) == [Episode("kuhn_poker", (0, 1, 0, 0), (-1.0, 1.0)),
                                 Episode("kuhn_poker", (None, 2, 1), (1.5, -1.5))]


def test_seats_field_is_optional_and_round_trips(tmp_path):
  path = tmp_path / "log.jsonl"
  write_episodes(path, "kuhn_poker", [[0, 1, 0, 0], [1, 0, 0, 0]], [[-1, 1], [1, -1]],
                 seats=[(0, 1), (1, 0)])
  assert '"seats": [1, 0]' in path.read_text().splitlines()[1]
  eps = read_episodes(path)
  assert [e.seats for e in eps] == [(0, 1), (1, 0)]
  # a line without the field (anyone's OpenSpiel log) reads with seats None
  path.write_text('{"game": "kuhn_poker", "history": [0, 1, 0, 0], "returns": [-1, 1]}\n')
  assert read_episodes(path)[0].seats is None
  with pytest.raises(ValueError, match="seats must be"):
    write_episodes(path, "kuhn_poker", [[0, 1, 0, 0]], [[-1, 1]], seats=[(0, 0)])


@pytest.mark.parametrize("line, message", [
    ('{"game": "kuhn_poker", "history": [0], "returns": [1, -1], "seats": [0, 0]}', "'seats'"),
    ('{"game": "kuhn_poker", "history": [0], "returns": [1, -1], "seats": [true, false]}', "'seats'"),
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


def test_agents_field_is_optional_and_round_trips(tmp_path):
  path = tmp_path / "log.jsonl"
  write_episodes(path, "kuhn_poker", [[0, 1, 0, 0]], [[-1, 1]], seats=[(0, 1)],
                 agents=("policy(path=a.npz)", "random"))
  assert '"agents": ["policy(path=a.npz)", "random"]' in path.read_text()
  assert read_episodes(path)[0].agents == ("policy(path=a.npz)", "random")
  path.write_text('{"game": "kuhn_poker", "history": [0, 1, 0, 0], "returns": [-1, 1]}\n')
  assert read_episodes(path)[0].agents is None  # an older log
  with pytest.raises(ValueError, match="'agents'"):
    write_episodes(path, "kuhn_poker", [[0, 1, 0, 0]], [[-1, 1]], agents=("random",))
  path.write_text('{"game": "kuhn_poker", "history": [0], "returns": [1, -1], "agents": ["", 3]}\n')
  with pytest.raises(ValueError, match=":1: 'agents'"):
    read_episodes(path)
