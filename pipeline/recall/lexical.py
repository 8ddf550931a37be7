"""The code-aware lexical channel: BM25 over four weighted fields, precomputed into postings.

Tokenizing and stemming use the DuckDB FTS extension (its Porter ``stem``), with a tokenizer
that keeps digits and underscores (``E501``, ``snake_case``, ``py311``) where the extension's
default drops them. Instead of the extension's ``match_bm25`` macro, which scores every
document per call (~3 s per query at 100k skills), the publisher computes each term's BM25
weight per document (fields weighted and added) and stores them as posting lists, best first,
in the serving snapshot: a query reads only the lists of its own terms and adds them up
(milliseconds at 100k skills).
"""

from __future__ import annotations

import heapq
import re
import unicodedata
from array import array
from itertools import repeat
from operator import add

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing on the hook path
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    import duckdb

    from pipeline.recall.serving import Snapshot

#: Indexed fields in order (the postings' ``field`` column is the position here).
FIELDS = ("name_text", "description", "body", "keywords")
#: Field weights (applied when the postings are built): a match in the name or description
#: says more than one in the body.
WEIGHTS = {"name_text": 2.0, "description": 2.0, "body": 1.0, "keywords": 1.0}
#: Each term's postings are stored best first; a query reads at most this many per term. Exact
#: below this many skills; above, a very common word (low IDF, small weights) stops counting for
#: the documents where it weighs least, and a query over 100k skills reads ~20x fewer postings.
MAX_POSTINGS = 4096
K1 = 1.2
B = 0.75
#: IDF is computed as if the index held at least this many skills (the extra ones holding none of
#: the words): in a library of five skills a word found in one of them is as telling as in a large
#: one, and recall's calibrated score (fitted on ~380 skills) reads BM25 scores on that scale.
MIN_DOCS = 400
#: Lowercase, strip accents, split on anything but letters, digits and underscores.
TOKENS_SQL = r"string_split_regex(regexp_replace(lower(strip_accents({0})), '(\.|[^a-z0-9_])+', ' ', 'g'), '\s+')"
#: English function words. Short on purpose: IDF already discounts frequent words, and words
#: like "test", "use" or "run" carry meaning in a coding task.
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
him his how i if in into is it its itself just me more most my no nor not now of off on once only or other our
ours out over own same she should so some such than that the their theirs them then there these they this those
through to too under until up very was we were what when where which while who whom why will with would you your
yours
""".split())  # noqa: SIM905 (a word list reads best as words)


def _tokens(expr: str) -> str:
    return TOKENS_SQL.format(expr)


def build(con: duckdb.DuckDBPyConnection) -> None:
    """Create the temporary tables ``surface``, ``vocab`` and ``weights`` from ``skills`` (FTS extension loaded).

    They live as long as the publishing connection: the publish copies them into the serving
    snapshot (``serving.write``, through :func:`postings`), the only place queries read them.
    """
    stop = ", ".join(f"'{w}'" for w in sorted(STOPWORDS))
    parts = " UNION ALL ".join(
        f"SELECT doc, {i}::TINYINT AS field, unnest({_tokens(name)}) AS t FROM skills"
        for i, name in enumerate(FIELDS))
    # Stem each distinct token once: a corpus has millions of tokens but tens of thousands of words.
    con.execute(f"CREATE TEMP TABLE raw AS SELECT * FROM ({parts}) WHERE t <> ''")
    con.execute(f"""
        CREATE TEMP TABLE stems AS SELECT t, stem(t, 'porter') AS term
        FROM (SELECT DISTINCT t FROM raw) WHERE t NOT IN ({stop})""")
    con.execute("CREATE TEMP TABLE occ AS SELECT doc, field, term FROM raw JOIN stems USING (t)")
    # Every word seen -> its stem: queries are stemmed by lookup, so the reader never loads the
    # FTS extension (~50 ms of CPU per hook call).
    con.execute("CREATE TEMP TABLE surface AS SELECT t, term FROM stems ORDER BY t")
    con.execute("CREATE TEMP TABLE tf AS SELECT term, doc, field, count(*)::INTEGER AS tf FROM occ GROUP BY ALL")
    con.execute("CREATE TEMP TABLE flen AS SELECT doc, field, count(*)::INTEGER AS len FROM occ GROUP BY ALL")
    con.execute("""
        CREATE TEMP TABLE favg AS
        SELECT field, sum(len)::DOUBLE / (SELECT count(*) FROM skills) AS avg FROM flen GROUP BY field""")
    con.execute("""
        CREATE TEMP TABLE vocab AS
        SELECT term, (row_number() OVER (ORDER BY term) - 1)::INTEGER AS termid, count(DISTINCT doc)::INTEGER AS df
        FROM tf GROUP BY term ORDER BY term""")
    # One weight per (term, document): the fields' BM25 weights, already multiplied by the field
    # weights and added up, so a query sums one number per matching term and document.
    weight = "CASE tf.field " + " ".join(f"WHEN {i} THEN {float(WEIGHTS[f])}" for i, f in enumerate(FIELDS)) + " END"
    con.execute(f"""
        CREATE TEMP TABLE weights AS
        WITH n AS (SELECT greatest(count(*), {MIN_DOCS})::DOUBLE AS n FROM skills)
        SELECT v.termid, tf.doc,
               sum({weight} * ln((n.n - v.df + 0.5) / (v.df + 0.5) + 1)
                   * tf.tf * ({K1} + 1) / (tf.tf + {K1} * (1 - {B} + {B} * l.len / a.avg)))::FLOAT AS w
        FROM tf JOIN vocab v USING (term) JOIN flen l USING (doc, field) JOIN favg a USING (field), n
        GROUP BY v.termid, tf.doc""")
    for table in ("raw", "stems", "occ", "tf", "flen", "favg"):
        con.execute(f"DROP TABLE {table}")


def fingerprint(rows: list[dict[str, Any]], salt: str = "") -> str:
    """A hash of all the lexical tables are computed from: every document's indexed fields in
    document order, this module's settings and ``salt`` (the DuckDB version, whose stemmer runs).

    Equal fingerprints mean equal tables, so a publish whose skills read the same as the last
    one's (a nightly run that found nothing new, feedback that only moved priors) copies them
    instead of computing them again.
    """
    import hashlib

    digest = hashlib.sha256(repr((salt, FIELDS, WEIGHTS, K1, B, MIN_DOCS, MAX_POSTINGS, TOKENS_SQL,
                                  sorted(STOPWORDS))).encode())
    for row in rows:
        for name in FIELDS:
            data = (row[name] or "").encode("utf-8", "surrogatepass")
            digest.update(len(data).to_bytes(8, "little"))
            digest.update(data)
    return digest.hexdigest()


def postings(con: duckdb.DuckDBPyConnection, top: int = MAX_POSTINGS) -> Iterator[tuple[int, Any, Any]]:
    """Each term's posting list from ``weights``: ``(termid, docs, ws)`` as numpy int32/float32
    arrays, best first (ties by document), at most ``top`` long.

    One sort of all the weights, cut into lists by term: ~3x faster than DuckDB's ordered
    ``list()`` aggregates, which sort every group on its own.
    """
    cols = con.execute("SELECT termid, doc, w FROM weights ORDER BY termid, w DESC, doc").fetchnumpy()
    termids, docs, ws = cols["termid"], cols["doc"], cols["w"]
    if not len(termids):
        return
    import numpy as np  # there with bm25s; only the publisher gets here

    starts = np.flatnonzero(np.diff(termids)) + 1
    for start, end in zip(np.concatenate(([0], starts)), np.concatenate((starts, [len(termids)])), strict=True):
        yield int(termids[start]), docs[start:min(end, start + top)], ws[start:min(end, start + top)]


_SPLIT = re.compile(r"(?:\.|[^a-z0-9_])+")


def tokenize(text: str) -> list[str]:
    """The index's tokenizer in Python (lowercase, strip accents, keep letters, digits and ``_``)."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))
    return [t for t in _SPLIT.split(plain) if t]


#: Suffixes tried, in order, for a query word the index has never seen ("hashes" -> "hash").
_SUFFIXES = (("ies", "y"), ("es", ""), ("s", ""), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("ly", ""),
             ("ers", ""), ("er", ""), ("ment", ""), ("ness", ""), ("ations", "e"), ("ation", "e"))


def query_terms(snap: Snapshot, text: str) -> list[str]:
    """The query's stemmed terms, through the same tokenizer as the index.

    Words are stemmed by looking them up among the words the index has seen (stemmed at build
    time by the FTS extension's Porter stemmer). An unseen word is tried without common
    suffixes; failing that it stays as it is (and matches nothing, as it would anyway).
    """
    tokens = list(dict.fromkeys(t for t in tokenize(text) if t not in STOPWORDS))
    if not tokens:
        return []
    found = snap.stems(tokens)
    variants = {t: [t[: -len(a)] + b for a, b in _SUFFIXES if t.endswith(a) and len(t) - len(a) >= 3]
                for t in tokens if t not in found}
    known = snap.stems([v for vs in variants.values() for v in vs])
    terms = [found[t] if t in found else next((known[v] for v in variants[t] if v in known), t) for t in tokens]
    return [t for t in dict.fromkeys(terms) if t]


def lookup(snap: Snapshot, terms: list[str]) -> dict[str, tuple[int, int]]:
    """term -> (termid, df) for the terms the index knows."""
    return snap.vocab(terms) if terms else {}


def score(snap: Snapshot, termids: list[int], limit: int) -> list[tuple[int, float]]:
    """Top documents as ``(doc, score)``, best first, ties by document number.

    The postings hold each term's BM25 weight per document (fields already weighted and
    added), so a document's score is the sum over the query's terms; a query reads at most
    ``MAX_POSTINGS`` per term. The sums run in C through ``map``/``dict.update`` (a term has
    one posting per document, so each update reads the sum before it writes it): ~15 terms x
    4096 postings take a few milliseconds, and the query path needs no numpy.
    """
    acc: dict[int, float] = {}
    for docs, ws in snap.postings(list(dict.fromkeys(termids))):
        acc.update(zip(docs, map(add, map(acc.get, docs, repeat(0.0)), ws), strict=True))
    if len(acc) > limit:
        floor = heapq.nlargest(limit, acc.values())[-1]
        top = [(doc, s) for doc, s in acc.items() if s >= floor]
    else:
        top = list(acc.items())
    top.sort(key=lambda x: (-x[1], x[0]))
    return top[:limit]


def accumulate(snap: Snapshot, terms: dict[int, float]) -> tuple[dict[int, float], dict[int, float]]:
    """Every document the query's terms reach: ``(scores, mass)``, where ``scores`` are the BM25
    sums (as :func:`score`) and ``mass`` the summed weight ``terms[termid]`` (the term's IDF) of the
    query terms each document holds, i.e. how much of the query it explains. Both sums run in C as
    in :func:`score`."""
    acc: dict[int, float] = {}
    mass: dict[int, float] = {}
    ids = list(terms)
    for termid, (docs, ws) in zip(ids, snap.postings(ids), strict=True):
        acc.update(zip(docs, map(add, map(acc.get, docs, repeat(0.0)), ws), strict=True))
        mass.update(zip(docs, map(add, map(mass.get, docs, repeat(0.0)), repeat(terms[termid])), strict=True))
    return acc, mass


def top(scores: dict[int, float], limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best ``(doc, score)``, best first, ties by document number."""
    if len(scores) > limit:
        floor = heapq.nlargest(limit, scores.values())[-1]
        best = [(doc, s) for doc, s in scores.items() if s >= floor]
    else:
        best = list(scores.items())
    best.sort(key=lambda x: (-x[1], x[0]))
    return best[:limit]


def matched(snap: Snapshot, termids: list[int], doc: int) -> list[int]:
    """The terms among ``termids`` whose postings (as a query reads them) hold ``doc``."""
    return [t for t, (docs, _ws) in zip(termids, snap.postings(termids), strict=True) if _holds(docs, doc)]


def _holds(docs: array[int], doc: int) -> bool:
    """``doc in docs`` as a byte search (C speed; ``in`` on an array boxes every item)."""
    data, needle = docs.tobytes(), array(docs.typecode, [doc]).tobytes()
    at = data.find(needle)
    while at != -1 and at % docs.itemsize:  # a match must start on an item
        at = data.find(needle, at + 1)
    return at != -1
