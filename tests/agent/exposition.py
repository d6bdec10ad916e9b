"""A strict reader of the Prometheus text exposition format (version 0.0.4), for the tests that scrape
/metrics, and `promtool check metrics` when promtool is installed.

parse(text) returns {family: Family}; it raises AssertionError, naming the line, for anything a Prometheus
server would refuse or that breaks the naming conventions ftl follows: a sample outside a family declared
by HELP and TYPE above it, a family declared twice or interleaved, bad names or label syntax, duplicate
series, counters not ending in _total, histograms whose buckets are not cumulative, do not end at +Inf, or
whose _count differs from the +Inf bucket."""

import math
import re
import shutil
import subprocess
import urllib.request

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"'
SAMPLE = re.compile(rf"^({NAME})(?:\{{((?:{LABEL})(?:,{LABEL})*)?,?\}})? (?P<value>\S+)(?: -?\d+)?$")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class Family:
    def __init__(self, name):
        self.name, self.help, self.type, self.samples = name, None, None, []

    def value(self, **labels):
        """The value of the series with exactly these labels (the family's own name, no suffix)."""
        for name, ls, v in self.samples:
            if name == self.name and ls == labels:
                return v
        raise AssertionError(f"{self.name}: no series with labels {labels}")

    def series(self, suffix=""):
        return [(ls, v) for name, ls, v in self.samples if name == self.name + suffix]


def _value(text, line):
    try:
        return float(text)  # accepts +Inf, -Inf, NaN
    except ValueError:
        raise AssertionError(f"bad value in: {line!r}")


def _labels(text):
    return {m.group(1): re.sub(r'\\(.)', lambda e: {"n": "\n"}.get(e.group(1), e.group(1)), m.group(2))
            for m in re.finditer(LABEL, text or "")}


def _check_histogram(f):
    groups = {}
    for name, ls, v in f.samples:
        key = tuple(sorted((k, x) for k, x in ls.items() if k != "le"))
        groups.setdefault(key, {"buckets": [], "count": None, "sum": None})
        g = groups[key]
        if name == f.name + "_bucket":
            assert "le" in ls, f"{f.name}: bucket without le"
            g["buckets"].append((_value(ls["le"], ls), v))
        elif name == f.name + "_count":
            g["count"] = v
        elif name == f.name + "_sum":
            g["sum"] = v
        else:
            raise AssertionError(f"{f.name}: histogram sample {name} is not _bucket, _sum or _count")
    for key, g in groups.items():
        les = [le for le, _ in g["buckets"]]
        counts = [c for _, c in g["buckets"]]
        assert les and les[-1] == math.inf, f"{f.name}{dict(key)}: buckets do not end with le=\"+Inf\""
        assert les == sorted(les) and len(set(les)) == len(les), f"{f.name}: le not ascending: {les}"
        assert counts == sorted(counts), f"{f.name}: buckets not cumulative: {counts}"
        assert g["count"] == counts[-1], f"{f.name}: _count {g['count']} != +Inf bucket {counts[-1]}"
        assert g["sum"] is not None, f"{f.name}: no _sum"


def parse(text):
    assert text.endswith("\n"), "the exposition does not end with a newline"
    families, current, seen = {}, None, set()
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                assert re.fullmatch(NAME, name), f"bad family name: {line!r}"
                if current is None or current.name != name:
                    assert name not in families, f"family {name} declared twice or interleaved"
                    current = families[name] = Family(name)
                if parts[1] == "HELP":
                    assert current.help is None, f"two HELP lines for {name}"
                    current.help = parts[3] if len(parts) > 3 else ""
                else:
                    assert current.type is None and not current.samples, f"TYPE of {name} late or twice"
                    current.type = parts[3] if len(parts) > 3 else ""
                    assert current.type in TYPES, f"unknown type: {line!r}"
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        name, labels = m.group(1), _labels(m.group(2))
        assert current and current.type and current.help is not None, f"sample without HELP and TYPE: {line!r}"
        suffixes = ("_bucket", "_sum", "_count") if current.type == "histogram" else ("",)
        assert name in [current.name + s for s in suffixes], f"sample {name} outside its family {current.name}"
        key = (name, tuple(sorted(labels.items())))
        assert key not in seen, f"duplicate series: {line!r}"
        seen.add(key)
        current.samples.append((name, labels, _value(m.group("value"), line)))
    for f in families.values():
        assert f.type, f"{f.name}: no TYPE"
        if f.type == "counter":
            assert f.name.endswith("_total"), f"counter {f.name} does not end in _total"
        if f.type == "histogram":
            _check_histogram(f)
    return families


def promtool_check(text):
    """`promtool check metrics` on text when promtool is installed: None if it is not, else its complaints
    ("" when it has none). Lint findings are returned, not raised: the caller decides what matters."""
    promtool = shutil.which("promtool")
    if not promtool:
        return None
    r = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    if r.returncode not in (0, 3):  # 3: lint findings; anything else: the text did not parse
        raise AssertionError(f"promtool check metrics failed ({r.returncode}): {r.stderr or r.stdout}")
    return (r.stdout + r.stderr).strip()


def scrape(addr, path="/metrics", timeout=5):
    """GET http://addr/path without any proxy: (status, headers, body text)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://{addr}{path}", timeout=timeout) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()
