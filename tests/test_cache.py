"""tarn.store.cache.ByteCache: the LRU bounded by the bytes its values are charged."""

from tarn.store.cache import ByteCache


def test_least_recently_used_values_go_first():
    evicted = []
    cache = ByteCache(10, on_evict=lambda key, value, size: evicted.append(key))
    cache.put("a", 1, 4)
    cache.put("b", 2, 4)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3, 4)
    assert evicted == ["b"] and "a" in cache and "c" in cache and cache.used == 8


def test_a_value_larger_than_the_capacity_is_not_kept_and_evicts_nothing():
    evicted = []
    cache = ByteCache(10, on_evict=lambda key, value, size: evicted.append(key))
    cache.put("a", 1, 4)
    cache.put("big", 2, 11)
    assert evicted == ["big"] and cache.get("big") is None and cache.get("a") == 1


def test_replacing_charging_resizing_and_clearing():
    cache = ByteCache(100)
    cache.put("a", 1, 10)
    cache.put("a", 2, 30)
    assert cache.used == 30 and len(cache) == 1 and cache.get("a") == 2
    cache.charge("a", 5)
    cache.charge("gone", 99)  # no entry: nothing charged
    assert cache.used == 35
    assert cache.setdefault("a", 3, 1) == 2 and cache.setdefault("b", 4, 10) == 4
    cache.resize(20)
    assert "a" not in cache and cache.get("b") == 4 and cache.used == 10
    assert cache.pop("b") == 4 and cache.used == 0
    cache.put("c", 5, 1)
    cache.clear()
    assert len(cache) == 0 and cache.used == 0
