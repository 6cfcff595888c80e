"""The preference rule of the executors' feeds (``pick_preferred``), without processes."""

from __future__ import annotations

from collections import deque

from hypothesis import given, strategies as st

from laissez_opt.harness.executors import PREFERENCE_WINDOW, ListFeed, pick_preferred


def test_least_rank_first_ties_to_the_earliest():
    queue = deque(["a1", "b1", "a2", "b2"])
    assert pick_preferred(queue, lambda t: 0 if t.startswith("b") else 1) == "b1"
    assert list(queue) == ["a1", "a2", "b2"]
    assert pick_preferred(queue, lambda t: 1) == "a1"
    assert pick_preferred(queue, None) == "a2"
    assert pick_preferred(deque(), lambda t: 0) is None


def test_only_the_window_is_searched():
    queue = deque(range(PREFERENCE_WINDOW + 10))
    # The preferred task lies past the window: the best inside it is taken instead.
    picked = pick_preferred(queue, lambda t: 0 if t == PREFERENCE_WINDOW + 5 else 1 + (t != 3))
    assert picked == 3


def test_list_feed_takes_a_rank():
    feed = ListFeed([{"k": 1}, {"k": 2}, {"k": 1}])
    assert feed.take(lambda t: 0 if t["k"] == 2 else 1) == {"k": 2}
    assert feed.take() == {"k": 1}
    assert len(feed) == 1


@given(st.lists(st.integers(0, 5), max_size=80), st.integers(0, 5))
def test_every_task_is_handed_out_once(items, favourite):
    queue = deque(enumerate(items))
    seen = []
    while (task := pick_preferred(queue, lambda t: abs(t[1] - favourite))) is not None:
        seen.append(task)
    assert sorted(seen) == list(enumerate(items))
