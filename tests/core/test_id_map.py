"""The request path's id map (core/_id_map.c) must answer what a dict answers, whatever was added and removed:
random operations are run on both and compared after each, on ids that collide in their home slots (a small
map), that outgrow the characters kept in an entry, and of every str kind."""
from __future__ import annotations

import random

import pytest

from neardup.core._id_map import IdMap

UNKNOWN = object()


def ids_of_every_shape(count: int) -> list[str]:
    """Short ASCII ids, ids longer than an entry keeps, and ids of two- and four-byte characters."""
    shapes = ("tu{:06d}", "https://example.org/articles/{}/a-long-enough-slug", "é€{}é€", "\U0001F600{}",
              "{}")
    return [shapes[i % len(shapes)].format(i) for i in range(count)]


def assert_same(id_map: IdMap, expected: dict, asked: list[str]) -> None:
    values, unknown = id_map.get_many(asked, UNKNOWN)
    assert values == [expected.get(doc_id, UNKNOWN) for doc_id in asked]
    assert unknown == sum(doc_id not in expected for doc_id in asked)
    assert len(id_map) == len(expected)


@pytest.mark.parametrize("seed", range(5))
def test_an_id_map_answers_as_a_dict_through_updates_and_removals(seed):
    rng = random.Random(seed)
    ids = ids_of_every_shape(3000)
    id_map, expected = IdMap(), {}
    for _ in range(40):
        added = rng.sample(ids, rng.randrange(1, 400))
        values = [rng.choice([None, b"", b"sketch", rng.randrange(-1, 9)]) for _ in added]
        id_map.update(added, values)
        expected.update(zip(added, values))
        removed = set(rng.sample(ids, rng.randrange(0, 300)))
        id_map.discard_many(removed)
        for doc_id in removed:
            expected.pop(doc_id, None)
        assert_same(id_map, expected, rng.sample(ids, 500) + ["", "tu", "nowhere"])
    id_map.clear()
    assert_same(id_map, {}, ids[:10])


def test_equal_strings_are_one_key_whatever_object_or_type_holds_them():
    class Id(str):
        def __hash__(self):
            return 1

    id_map = IdMap()
    id_map.update([Id("a-b"), "".join(["a", "-", "b"])], [1, 2])
    assert id_map.get_many(["a-b"], None) == ([2], 0) and len(id_map) == 1


def test_a_key_that_is_not_a_str_is_a_type_error():
    id_map = IdMap()
    with pytest.raises(TypeError, match="must be a str"):
        id_map.get_many(["a", 1], None)
    with pytest.raises(TypeError, match="must be a str"):
        id_map.update([b"a"], [1])
    with pytest.raises(ValueError):
        id_map.update(["a", "b"], [1])
