import datetime as dt
import random

from data import dates


def test_same_seed_same_data():
    assert dates.dataset(50, seed=4) == dates.dataset(50, seed=4)
    assert dates.dataset(50, seed=4) != dates.dataset(50, seed=5)


def test_rule_based_reader_agrees_with_every_generated_pair():
    for split in ("train", "test"):
        for text, iso in dates.dataset(3000, seed=11, split=split):
            assert dates.parse(text) == iso, text


def test_held_out_days_never_appear_in_training():
    train = {iso for _, iso in dates.dataset(3000, seed=1)}
    test = {iso for _, iso in dates.dataset(500, seed=1, split="test")}
    assert not train & test
    assert all(dt.date.fromisoformat(iso).toordinal() % 10 == 0 for iso in test)


def test_every_format_the_issue_lists_is_generated():
    texts = [t for t, _ in dates.dataset(3000, seed=2)]
    lower = [t.lower() for t in texts]
    assert any(" of " in t for t in lower)                                  # 3rd of march 2021
    assert any(t.split()[0].rstrip(",") in dates.WEEKDAYS for t in lower)    # tuesday, march 3, 2021
    assert any("sept " in t or "sept." in t for t in lower)                  # sept
    assert any(t[0].isalpha() and "," in t and t.split()[0] in dates.MONTHS for t in lower)  # march 3, 2021
    assert any(t[0].isdigit() for t in lower)                                # 3 march 2021
    assert any(t.isupper() for t in texts) and any(t.islower() for t in texts)
    years = {int(iso[:4]) for _, iso in dates.dataset(3000, seed=2)}
    assert min(years) < 1910 and max(years) > 2090
    assert max(len(t) for t in texts) <= dates.MAX_LEN
    assert set("".join(lower)) <= set(dates.CHARS)


def test_ordinal_suffixes():
    assert [dates.ordinal(d) for d in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 31)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "31st"]


def test_reader_examples_and_rejections():
    assert dates.parse("Tuesday, March 3, 2026") == "2026-03-03"
    assert dates.parse("the 1st of Sept. 1999") == "1999-09-01"
    assert dates.parse("29 february 2021") is None                          # not a calendar day
    assert dates.parse("the river bank was dirty") is None
    assert dates.parse("3 march 1899") is None                              # outside 1900-2099


def test_write_spells_the_day_it_is_given():
    rng = random.Random(0)
    day = dt.date(2021, 3, 3)
    assert all(dates.parse(dates.write(rng, day)) == "2021-03-03" for _ in range(200))
