"""The code-aware lexical channel: BM25 over four weighted fields, precomputed into postings.

Tokenizing and stemming use the DuckDB FTS extension (its Porter ``stem``), with a tokenizer
that keeps digits and underscores (``E501``, ``snake_case``, ``py311``) where the extension's
default drops them. Instead of the extension's ``match_bm25`` macro, which scores every
document per call (~3 s per query at 100k skills), the index stores each term's BM25 weight per
document and field as a posting list behind an ART index: a query reads only the lists of
its own terms and adds them up (p50 in tens of milliseconds at 100k skills).
"""

from __future__ import annotations

import re
import unicodedata

import duckdb

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
    """Create ``vocab`` and ``postings`` from the ``skills`` table (FTS extension loaded)."""
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
    con.execute("CREATE TABLE surface AS SELECT t, term FROM stems ORDER BY t")
    con.execute("CREATE UNIQUE INDEX surface_t ON surface (t)")
    con.execute("CREATE TEMP TABLE tf AS SELECT term, doc, field, count(*)::INTEGER AS tf FROM occ GROUP BY ALL")
    con.execute("CREATE TEMP TABLE flen AS SELECT doc, field, count(*)::INTEGER AS len FROM occ GROUP BY ALL")
    con.execute("""
        CREATE TEMP TABLE favg AS
        SELECT field, sum(len)::DOUBLE / (SELECT count(*) FROM skills) AS avg FROM flen GROUP BY field""")
    con.execute("""
        CREATE TABLE vocab AS
        SELECT term, (row_number() OVER (ORDER BY term) - 1)::INTEGER AS termid, count(DISTINCT doc)::INTEGER AS df
        FROM tf GROUP BY term ORDER BY term""")
    con.execute("CREATE UNIQUE INDEX vocab_term ON vocab (term)")
    # One posting per (term, document): the fields' BM25 weights, already multiplied by the field
    # weights and added up, so a query sums one number per matching term and document.
    weight = "CASE tf.field " + " ".join(f"WHEN {i} THEN {float(WEIGHTS[f])}" for i, f in enumerate(FIELDS)) + " END"
    con.execute(f"""
        CREATE TABLE postings AS
        WITH n AS (SELECT count(*)::DOUBLE AS n FROM skills),
        w AS (
            SELECT v.termid, tf.doc,
                   sum({weight} * ln((n.n - v.df + 0.5) / (v.df + 0.5) + 1)
                       * tf.tf * ({K1} + 1) / (tf.tf + {K1} * (1 - {B} + {B} * l.len / a.avg)))::FLOAT AS w
            FROM tf JOIN vocab v USING (term) JOIN flen l USING (doc, field) JOIN favg a USING (field), n
            GROUP BY v.termid, tf.doc)
        SELECT termid, list(doc ORDER BY w DESC, doc) AS docs, list(w ORDER BY w DESC, doc) AS ws
        FROM w GROUP BY termid ORDER BY termid""")
    con.execute("CREATE INDEX postings_term ON postings (termid)")
    for table in ("raw", "stems", "occ", "tf", "flen", "favg"):  # surface stays
        con.execute(f"DROP TABLE {table}")


_SPLIT = re.compile(r"(?:\.|[^a-z0-9_])+")
_SAFE = re.compile(r"[a-z0-9_]+")


def tokenize(text: str) -> list[str]:
    """The index's tokenizer in Python (lowercase, strip accents, keep letters, digits and ``_``)."""
    plain = "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))
    return [t for t in _SPLIT.split(plain) if t]


#: Suffixes tried, in order, for a query word the index has never seen ("hashes" -> "hash").
_SUFFIXES = (("ies", "y"), ("es", ""), ("s", ""), ("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("ly", ""),
             ("ers", ""), ("er", ""), ("ment", ""), ("ness", ""), ("ations", "e"), ("ation", "e"))


def query_terms(con: duckdb.DuckDBPyConnection, text: str) -> list[str]:
    """The query's stemmed terms, through the same tokenizer as the index.

    Words are stemmed by looking them up among the words the index has seen (stemmed at build
    time by the FTS extension's Porter stemmer). An unseen word is tried without common
    suffixes; failing that it stays as it is (and matches nothing, as it would anyway).
    """
    tokens = list(dict.fromkeys(t for t in tokenize(text) if t not in STOPWORDS))
    if not tokens:
        return []
    found = _surface(con, tokens)
    variants = {t: [t[: -len(a)] + b for a, b in _SUFFIXES if t.endswith(a) and len(t) - len(a) >= 3]
                for t in tokens if t not in found}
    known = _surface(con, [v for vs in variants.values() for v in vs])
    terms = [found[t] if t in found else next((known[v] for v in variants[t] if v in known), t) for t in tokens]
    return [t for t in dict.fromkeys(terms) if t]


def _surface(con: duckdb.DuckDBPyConnection, words: list[str]) -> dict[str, str]:
    # Tokens hold only [a-z0-9_], so they are safe as literals; binding a list parameter costs
    # tens of milliseconds in the Python client, literals cost nothing.
    safe = [w for w in dict.fromkeys(words) if _SAFE.fullmatch(w)]
    if not safe:
        return {}
    literals = ", ".join(f"'{w}'" for w in safe)
    return dict(con.execute(f"SELECT t, term FROM surface WHERE t IN ({literals})").fetchall())


def lookup(con: duckdb.DuckDBPyConnection, terms: list[str]) -> dict[str, tuple[int, int]]:
    """term -> (termid, df) for the terms the index knows."""
    safe = [t for t in terms if _SAFE.fullmatch(t)]
    if not safe:
        return {}
    literals = ", ".join(f"'{t}'" for t in safe)
    rows = con.execute(f"SELECT term, termid, df FROM vocab WHERE term IN ({literals})").fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


def score(con: duckdb.DuckDBPyConnection, termids: list[int], limit: int) -> list[tuple[int, float, list[int]]]:
    """Top documents as ``(doc, score, matched termids)``, best first."""
    if not termids:
        return []
    ids = ", ".join(str(int(t)) for t in termids)  # literal ints: the ART index serves IN (...) lookups
    top = int(MAX_POSTINGS)
    sql = f"""
        SELECT doc, sum(w) AS score, list(termid) AS matched
        FROM (SELECT termid, unnest(docs[1:{top}]) AS doc, unnest(ws[1:{top}]) AS w
              FROM postings WHERE termid IN ({ids}))
        GROUP BY doc ORDER BY score DESC, doc LIMIT {int(limit)}"""
    return [(r[0], float(r[1]), list(r[2])) for r in con.execute(sql).fetchall()]
