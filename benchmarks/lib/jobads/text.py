"""Text helpers of the job ads: filling templates, titles, articles and lists, slugs, dates, phone numbers and
organisation names in a site's house style, distances between places, and the messiness of scraped ads (typos,
lost punctuation, HTML remnants, rewording by synonyms)."""
from __future__ import annotations

import datetime as dt
import math
import random
import re
import string

from benchmarks.lib.jobads.world import COUNTRY_CODE, LEGAL, MONTHS, SECTORS

def slots(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def fill_template(template: str, values: dict) -> str:
    text = template.format_map(values)
    return text[:1].upper() + text[1:]


def km(a: tuple[float, float], b: tuple[float, float]) -> float:
    """Great-circle distance in km between two (lat, lon) points."""
    lat1, lon1, lat2, lon2 = map(math.radians, (*a, *b))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * 6371.0 * math.asin(math.sqrt(min(1.0, h)))


def with_article(phrase: str) -> str:
    """'a' or 'an' before an English phrase."""
    word = phrase.split()[0]
    if word.isupper() and len(word) > 1:
        return ("an " if word[0] in "AEFHILMNORSX" else "a ") + phrase
    return ("an " if word[0].lower() in "aeiou" and not word.lower().startswith(("uni", "eu")) else "a ") + phrase


def display_title(title: str, lang: str) -> str:
    """Title as a heading: English words capitalised (acronyms kept), Dutch only its first letter."""
    if lang == "nl" and not _is_english(title):
        return title[:1].upper() + title[1:]
    small = {"and", "of", "de", "in", "for"}
    out = []
    for i, word in enumerate(title.split()):
        if any(c.isupper() for c in word) or (i and word in small):
            out.append(word)
        else:
            out.append("-".join(p[:1].upper() + p[1:] for p in word.split("-")))
    return " ".join(out)


_ENGLISH_TITLES = {t for s in SECTORS for t in s.titles["en"]}


def _is_english(title: str) -> bool:
    return title.split(" ", 1)[-1] in _ENGLISH_TITLES or title in _ENGLISH_TITLES


def join_words(items: list[str], lang: str) -> str:
    conj = " and " if lang == "en" else " en "
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + conj + items[-1]


def slug(text: str) -> str:
    text = text.lower().replace("'", "")
    table = str.maketrans("éèëêïöüóáàç", "eeeeiouoaac")
    return re.sub(r"[^a-z0-9]+", "-", text.translate(table)).strip("-")


def format_date(day: dt.date, lang: str, style: str = "long") -> str:
    if style == "slash":
        return f"{day.day:02d}/{day.month:02d}/{day.year}"
    if style == "dash":
        return f"{day.day:02d}-{day.month:02d}-{day.year}"
    if style == "iso":
        return day.isoformat()
    return f"{day.day} {MONTHS[lang][day.month - 1]} {day.year}"


def _phone_groups(digits: str) -> str:
    if len(digits) <= 4:
        return digits
    if len(digits) == 6:
        return f"{digits[:3]} {digits[3:]}"
    if len(digits) == 7:
        return f"{digits[:3]} {digits[3:]}"
    return f"{digits[:4]} {digits[4:]}"


def format_phone(area: str, number: str, country: str, style: str) -> str:
    """One phone number in a site's house style: area code national form ('0113'), subscriber digits."""
    cc = COUNTRY_CODE[country]
    trunk = area[1:]
    grouped = _phone_groups(number)
    if style == "intl":
        return f"+{cc} {trunk} {grouped}"
    if style == "intl_zero":
        return f"+{cc} (0){trunk} {grouped}"
    if style == "intl_compact":
        return f"+{cc}{trunk}{number}"
    if style == "intl_spaced":
        return f"+{cc} {trunk} " + " ".join(number[i:i + 2] for i in range(0, len(number), 2))
    if style == "compact":
        return area + number
    if style == "dashed":
        return f"{area}-{number}"
    if style == "paren":
        return f"({area}) {number}"
    return f"{area} {grouped}"  # national


def format_organisation(name: str, legal: str, country: str, style: str) -> str:
    if style == "short":
        return name
    if style == "upper":
        return f"{name} {legal}".upper()
    if style == "legal_long":
        other = [s for s in LEGAL[country] if s != legal]
        return f"{name} {other[0] if other else legal}"
    return f"{name} {legal}"



# --- messiness -------------------------------------------------------------------------------------------

def swap_synonyms(sentence: str, swaps: list[tuple[str, str]]) -> str:
    for a, b in swaps:
        if re.search(rf"\b{re.escape(a)}\b", sentence):
            sentence = re.sub(rf"\b{re.escape(a)}\b", b, sentence)
        elif re.search(rf"\b{re.escape(b)}\b", sentence):
            sentence = re.sub(rf"\b{re.escape(b)}\b", a, sentence)
    return sentence


def with_typos(text: str, count: int, rng: random.Random) -> str:
    """A few typing errors in longer words: two letters swapped, one dropped or doubled."""
    words = [m for m in re.finditer(r"[^\W\d_]{5,}", text)]
    if not words:
        return text
    chosen = sorted(rng.sample(words, min(count, len(words))), key=lambda m: m.start(), reverse=True)
    for match in chosen:
        word = match.group()
        i = rng.randrange(1, len(word) - 1)
        kind = rng.randrange(3)
        new = (word[:i] + word[i + 1] + word[i] + word[i + 2:] if kind == 0 else
               word[:i] + word[i + 1:] if kind == 1 else word[:i] + word[i] + word[i:])
        text = text[:match.start()] + new + text[match.end():]
    return text


def unpunctuated(text: str) -> str:
    """Sentence stops and commas gone, as in ads typed in a hurry."""
    return re.sub(r"[.,;!](?=\s|$)", "", text)


def with_html(text: str, rng: random.Random) -> str:
    """Remnants of the HTML the ad was scraped from."""
    text = text.replace("&", "&amp;").replace("€", "&euro;" if rng.random() < 0.5 else "€")
    text = text.replace("'", "&#39;") if rng.random() < 0.5 else text
    lines = text.split("\n")
    out = []
    for line in lines:
        if line.startswith(("• ", "- ", "* ")):
            line = "<li>" + line[2:] + "</li>"
        elif line and rng.random() < 0.3:
            line += "<br>"
        if rng.random() < 0.1:
            line = line.replace(" ", "&nbsp;", 1)
        out.append(line)
    return "\n".join(out).replace("\n\n", "\n</p><p>\n", rng.randint(1, 3))


def case_variant(email: str, domain: str) -> str:
    box, _, host = email.partition("@")
    parts = host.split(".")
    return box.capitalize() + "@" + ".".join([parts[0].capitalize(), *parts[1:]])

