"""Issue 44 item 8: what the guides call unsupported agrees with the feature table. Every
sentence of docs/ saying something is not supported, not yet done or not written is checked: an option it names (in backticks) must be one the feature table refuses (for reads
or writes, or for the value the sentence gives it), never one tarn acts on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tarn.options import ACTED, CARRIED, match_key

DOCS = Path(__file__).resolve().parents[1] / "docs"
# blanket claims ("X is not supported yet"); "refused" mostly comes with a condition
# ("in this mode", "with ..."), which the refusal tests check where the rule lives
CLAIM = re.compile(r"not supported|not yet|unsupported(?!Feature)|not written|does not write|tarn lacks",
                   re.IGNORECASE)
GENERATED = {"guide-options.md"}  # rendered from the feature table itself


def sentences(text: str):
    text = re.sub(r"```.*?```", " ", text, flags=re.DOTALL)  # examples are run by test_docs.py
    for paragraph in re.split(r"\n\s*\n", text):
        yield from re.split(r"(?<=[.!?])\s+(?=[A-Z`(])", " ".join(paragraph.split()))


def claims():
    for path in sorted(DOCS.glob("*.md")):
        if path.name in GENERATED:
            continue
        for sentence in sentences(path.read_text()):
            if CLAIM.search(sentence):
                yield path.name, sentence


def test_there_are_claims_to_check():
    assert len(list(claims())) >= 3


@pytest.mark.parametrize("where, sentence", list(claims()))
def test_a_refusal_names_no_option_tarn_acts_on(where, sentence):
    for name in re.findall(r"`([a-z][a-z0-9.\-]+)`(\s*=\s*`?[^`\s,;]+)?", sentence):
        option, value = name
        opt = match_key(option)
        if opt is None or value:  # not an option, or a refusal of one value of it
            continue
        assert opt.effect not in (ACTED, CARRIED) or not _refuses(sentence, option), (
            f"{where}: {sentence!r} calls '{option}' unsupported, but the feature table acts on it ({opt.effect})")


def _refuses(sentence: str, option: str) -> bool:
    """Does the sentence's claim bear on the option (not just mention it beside a refusal)?"""
    at = sentence.find(f"`{option}`")
    claim = CLAIM.search(sentence)
    return claim is not None and abs(claim.start() - at) < 120
