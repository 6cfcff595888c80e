"""Malformed input: every bad file is rejected with one line naming the file and the JSON path.

Each case goes through the Python loader (:func:`laissez_opt.io.load_instance`)
and through the command line (``laissez-opt validate`` and ``laissez-opt solve``,
each in its own process): exit code 2, one line on stderr with the file name and
the JSON path, and no traceback.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from laissez_opt.cli.main import cli
from laissez_opt.errors import InputError
from laissez_opt.io import load_instance, parse_json

from conftest import R4, Run, base_instance_dict, run_cli_many

# ----------------------------------------------------------------------------- the cases


def _mutate(fn):
    data = base_instance_dict()
    fn(data)
    return json.dumps(data)


def _set(path, value):
    """Set ``data[path...] = value``."""

    def fn(data):
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return fn


def _delete(path):
    def fn(data):
        node = data
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return fn


def _raw(replace_from: str, replace_to: str) -> str:
    """The base file's JSON text with one literal substring replaced (for non-JSON tokens)."""
    text = json.dumps(base_instance_dict())
    assert replace_from in text, replace_from
    return text.replace(replace_from, replace_to, 1)


BASE_TEXT = json.dumps(base_instance_dict())

# (case id, file content (str, bytes) or a special marker, expected JSON path, words the message must contain)
CASES = [
    ("invalid-json-syntax", '{"format": "laissez-opt/instance", "version": 1,', "$", ["not valid json"]),
    ("trailing-comma", BASE_TEXT[:-1] + ",}", "$", ["not valid json"]),
    ("unterminated-string", '{"format": "laissez-opt/instance", "name": "abc', "$",
     ["unterminated string starting at line 1 column"]),
    ("empty-file", "", "$", ["empty"]),
    ("whitespace-only", "  \n\t\n", "$", ["empty"]),
    ("non-utf8", b'{"format": "laissez-opt/instance", "name": "\xff\xfe"}', "$", ["utf-8"]),
    ("missing-file", None, "$", ["not found"]),
    ("directory", "DIRECTORY", "$", ["directory"]),
    ("top-level-array", "[]", "$", ["object"]),
    ("top-level-string", '"instance"', "$", ["object"]),
    ("wrong-format", _mutate(_set(["format"], "laissez-opt/result")), "$.format", ["laissez-opt/instance"]),
    ("wrong-version", _mutate(_set(["version"], 2)), "$.version", ["1"]),
    ("version-as-string", _mutate(_set(["version"], "1")), "$.version", []),
    ("missing-pools", _mutate(_delete(["pools"])), "$", ["pools"]),
    ("missing-agents", _mutate(_delete(["agents"])), "$", ["agents"]),
    ("missing-edges", _mutate(_delete(["edges"])), "$", ["edges"]),
    ("empty-pools", _mutate(_set(["pools"], [])), "$.pools", ["empty"]),
    ("empty-agents", _mutate(_set(["agents"], [])), "$.agents", ["empty"]),
    ("edges-not-a-list", _mutate(_set(["edges"], {"agent": "A"})), "$.edges", ["array"]),
    ("unknown-top-level-field", _mutate(_set(["colour"], "red")), "$.colour", ["unknown field", "colour"]),
    ("unknown-agent-field-typo", _mutate(_set(["agents", 1, "wieght"], 2.0)), "$.agents[1].wieght", ["unknown field"]),
    ("unknown-edge-field", _mutate(_set(["edges", 0, "utilty"], 1.0)), "$.edges[0].utilty", ["unknown field"]),
    ("agent-not-an-object", _mutate(_set(["agents", 1], "B")), "$.agents[1]", ["object"]),
    ("duplicate-pool-id", _mutate(_set(["pools", 1, "id"], "P0")), "$.pools[1].id", ["duplicate", "P0"]),
    ("duplicate-agent-id", _mutate(_set(["agents", 1, "id"], "A")), "$.agents[1].id", ["duplicate", "A"]),
    ("edge-to-unknown-agent", _mutate(_set(["edges", 1, "agent"], "Z")), "$.edges[1].agent", ["unknown agent", "Z"]),
    ("edge-to-unknown-pool", _mutate(_set(["edges", 1, "pool"], "P9")), "$.edges[1].pool", ["unknown pool", "P9"]),
    ("duplicate-edge-pair", _mutate(_set(["edges", 2, "pool"], "P1")), "$.edges[2]", ["second edge", "$.edges[1]"]),
    ("nan-utility", _raw('"utility": 1.0', '"utility": NaN'), "$.edges[0].utility", ["nan", "finite"]),
    ("infinity-weight", _raw('"weight": 1.0', '"weight": Infinity'), "$.agents[0].weight", ["infinity", "finite"]),
    ("minus-infinity-base-price", _raw('"base_price": 0.5', '"base_price": -Infinity'), "$.pools[0].base_price", ["-infinity"]),
    ("overflow-1e999", _raw('[1.0, 2.0]', '[1.0, 1e999]'), "$.edges[1].utility[1]", ["1e999", "overflows"]),
    ("huge-integer", _raw('"count": 2', '"count": ' + "9" * 40), "$.pools[1].count", ["overflows"]),
    ("duplicate-json-key", _raw('{"id": "A", ', '{"id": "A", "id": "A2", '), "$.agents[0]", ["duplicate key", "id"]),
    ("duplicate-top-level-key", _raw('"name": "base"', '"name": "base", "name": "again"'), "$", ["duplicate key", "name"]),
    ("negative-utility", _mutate(_set(["edges", 0, "utility"], -1.0)), "$.edges[0].utility", [">= 0"]),
    ("string-utility", _mutate(_set(["edges", 0, "utility"], "1.0")), "$.edges[0].utility", []),
    ("empty-utility-list", _mutate(_set(["edges", 1, "utility"], [])), "$.edges[1].utility", []),
    ("negative-count", _mutate(_set(["pools", 0, "count"], -1)), "$.pools[0].count", [">= 1"]),
    ("count-zero", _mutate(_set(["pools", 0, "count"], 0)), "$.pools[0].count", [">= 1"]),
    ("count-fraction", _mutate(_set(["pools", 0, "count"], 1.5)), "$.pools[0].count", ["integer"]),
    ("count-boolean", _mutate(_set(["pools", 0, "count"], True)), "$.pools[0].count", ["integer", "boolean"]),
    ("weight-zero", _mutate(_set(["agents", 0, "weight"], 0)), "$.agents[0].weight", ["> 0"]),
    ("weight-negative", _mutate(_set(["agents", 0, "weight"], -2.5)), "$.agents[0].weight", ["> 0"]),
    ("weight-string", _mutate(_set(["agents", 0, "weight"], "1")), "$.agents[0].weight", ["number"]),
    ("demand-negative", _mutate(_set(["agents", 0, "demand"], -1)), "$.agents[0].demand", [">= 0"]),
    ("demand-fraction", _mutate(_set(["agents", 0, "demand"], 1.5)), "$.agents[0].demand", ["integer"]),
    ("round-utility-wrong-length", _mutate(_set(["edges", 1, "utility"], [1.0, 2.0, 3.0])), "$.edges[1].utility", ["3 entries", "2 rounds"]),
    ("round-utility-negative-entry", _mutate(_set(["edges", 1, "utility"], [1.0, -2.0])), "$.edges[1].utility[1]", [">= 0"]),
    ("round-utility-nan-entry", _raw("[1.0, 2.0]", "[NaN, 2.0]"), "$.edges[1].utility[0]", ["nan"]),
    ("arrivals-wrong-length", _mutate(_set(["agents", 0, "arrivals"], [1.0])), "$.agents[0].arrivals", ["1 entries", "2 rounds"]),
    ("arrivals-negative-entry", _mutate(_set(["agents", 0, "arrivals"], [1.0, -1.0])), "$.agents[0].arrivals[1]", [">= 0"]),
    ("arrival-outside-horizon", _mutate(_set(["agents", 1, "arrival"], 2)), "$.agents[1].arrival", ["outside"]),
    ("arrival-negative", _mutate(_set(["agents", 1, "arrival"], -1)), "$.agents[1].arrival", [">= 0"]),
    ("arrival-fraction", _mutate(_set(["agents", 1, "arrival"], 0.5)), "$.agents[1].arrival", ["integer"]),
    ("arrival-float-integral", _mutate(_set(["agents", 1, "arrival"], 1.0)), "$.agents[1].arrival", ["integer"]),
    ("deadline-before-arrival", _mutate(lambda d: d["agents"][1].update(arrival=1, deadline=0)), "$.agents[1].deadline", ["before"]),
    ("rounds-zero", _mutate(_set(["rounds"], 0)), "$.rounds", [">= 1"]),
    ("rounds-fraction", _mutate(_set(["rounds"], 1.5)), "$.rounds", ["integer"]),
    ("round-hours-zero", _mutate(_set(["round_hours"], 0)), "$.round_hours", ["> 0"]),
    ("id-leading-space", _mutate(_set(["agents", 0, "id"], " A")), "$.agents[0].id", ["whitespace"]),
    ("id-trailing-space", _mutate(_set(["pools", 1, "id"], "P1 ")), "$.pools[1].id", ["whitespace"]),
    ("id-empty", _mutate(_set(["pools", 0, "id"], "")), "$.pools[0].id", ["empty"]),
    ("id-not-a-string", _mutate(_set(["agents", 0, "id"], 7)), "$.agents[0].id", ["string"]),
    ("base-price-negative", _mutate(_set(["pools", 0, "base_price"], -0.1)), "$.pools[0].base_price", [">= 0"]),
    ("cost-negative", _mutate(_set(["edges", 0, "cost"], -1.0)), "$.edges[0].cost", [">= 0"]),
    ("bid-negative", _mutate(_set(["edges", 2, "bid"], -0.5)), "$.edges[2].bid", [">= 0"]),
    ("work-negative", _mutate(_set(["agents", 0, "work"], -3)), "$.agents[0].work", [">= 0"]),
    ("name-empty", _mutate(_set(["name"], "")), "$.name", ["empty"]),
    ("required-not-boolean", _mutate(_set(["agents", 0, "required"], "yes")), "$.agents[0].required", ["boolean"]),
]

assert len({c[0] for c in CASES}) == len(CASES)
# No two cases share a file content (each is a distinct malformed input).
assert len({c[1] if isinstance(c[1], (str, bytes)) else c[0] for c in CASES}) == len(CASES)

IDS = [c[0] for c in CASES]


def _materialise(tmp_dir, case_id, content):
    """Write one case's file; returns its path (a directory or a missing path for those cases)."""
    path = tmp_dir / f"case-{case_id}.json"
    if content is None:
        return path  # never created
    if content == "DIRECTORY":
        path.mkdir()
        return path
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def case_files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("malformed")
    return {case_id: _materialise(tmp, case_id, content) for case_id, content, _, _ in CASES}


def _expect_message(text: str, file_name: str, json_path: str, words):
    assert "\n" not in text.strip(), text
    assert file_name in text, (file_name, text)
    # The exact JSON path, as a whole token: ": <path>: ".
    assert f": {json_path}: " in text, (json_path, text)
    for word in words:
        assert word.lower() in text.lower(), (word, text)


# ----------------------------------------------------------------------------- Python loader


def test_the_base_file_is_valid(tmp_path):
    path = tmp_path / "base.json"
    path.write_text(BASE_TEXT)
    inst = load_instance(path)
    assert inst.n_agents == 2 and inst.n_pools == 2 and inst.n_edges == 3 and inst.rounds == 2


def test_at_least_thirty_cases():
    assert len(CASES) >= 30


@pytest.mark.parametrize("case_id,content,json_path,words", CASES, ids=IDS)
def test_loader_rejects(case_files, case_id, content, json_path, words):
    path = case_files[case_id]
    with pytest.raises(InputError) as info:
        load_instance(path)
    err = info.value
    text = str(err)
    _expect_message(text, path.name, json_path, words)
    assert err.path == json_path
    assert err.source == str(path)
    assert err.exit_code == 2


# ----------------------------------------------------------------------------- command line


@pytest.fixture(scope="module")
def cli_runs(case_files):
    """Both subcommands on every case, keyed by (command, case).

    ``validate`` runs the installed console script in concurrent subprocesses (the
    real entry point, exit code and streams); ``solve`` runs the same command group
    in this process.  A subprocess per ``solve`` case cost about 1.4 CPU s, most of
    it importing jsonschema, which loads the optional ``rfc3987_syntax`` (it builds
    its IRI grammars at import, about 1.2 s) when another package installed it.
    """
    ids = list(case_files)
    runs = dict(zip((("validate", c) for c in ids), run_cli_many([("validate", case_files[c]) for c in ids])))
    for case_id in ids:
        out = CliRunner().invoke(cli, ["solve", str(case_files[case_id])])
        runs[("solve", case_id)] = Run(("solve", str(case_files[case_id])), out.exit_code, out.stdout, out.stderr)
    return runs


@pytest.mark.parametrize("command", ["validate", "solve"])
@pytest.mark.parametrize("case_id,content,json_path,words", CASES, ids=IDS)
def test_cli_rejects(cli_runs, case_files, command, case_id, content, json_path, words):
    run = cli_runs[(command, case_id)]
    assert run.returncode == 2, run
    assert run.stdout == "", run
    assert "Traceback" not in run.stderr
    assert len(run.stderr_lines) == 1, run.stderr
    _expect_message(run.stderr_lines[0], case_files[case_id].name, json_path, words)


# ----------------------------------------------------------------------------- usage errors

USAGE = [
    ("unknown-method", ["solve", str(R4), "--method", "nosuch"], ["--method", "nosuch"]),
    ("unknown-solver", ["solve", str(R4), "--solver", "nosuch"], ["nosuch"]),
    ("unknown-backend", ["solve", str(R4), "--solver", "ortools", "--backend", "nosuch"], ["nosuch"]),
    ("time-limit-zero", ["solve", str(R4), "--time-limit", "0"], ["--time-limit"]),
    ("time-limit-negative", ["solve", str(R4), "--time-limit", "-1"], ["--time-limit"]),
    ("time-limit-nan", ["solve", str(R4), "--time-limit", "nan"], ["--time-limit"]),
    ("time-limit-not-a-number", ["solve", str(R4), "--time-limit", "soon"], ["--time-limit"]),
    ("fractional-heuristic", ["solve", str(R4), "--method", "greedy", "--fractional"], ["--fractional"]),
    ("unknown-via", ["solve", str(R4), "--via", "nosuch"], ["--via"]),
    ("unknown-family", ["generate", "--family", "nosuch", "--agents", "3", "--pools", "2"], ["nosuch"]),
    ("agents-zero", ["generate", "--family", "uniform", "--agents", "0", "--pools", "2"], ["agents"]),
    ("pools-zero", ["generate", "--family", "uniform", "--agents", "2", "--pools", "0"], ["pools"]),
    ("param-without-equals", ["generate", "--family", "uniform", "--agents", "3", "--pools", "2", "--param", "density"], ["--param"]),
    ("param-empty-key", ["generate", "--family", "uniform", "--agents", "3", "--pools", "2", "--param", "=0.5"], ["--param"]),
    ("param-unknown", ["generate", "--family", "uniform", "--agents", "3", "--pools", "2", "--param", "colour=1"], ["colour"]),
    ("missing-family", ["generate", "--agents", "3", "--pools", "2"], ["--family"]),
    ("unknown-command", ["frobnicate"], ["frobnicate"]),
]


@pytest.mark.parametrize("case_id,args,words", USAGE, ids=[u[0] for u in USAGE])
def test_usage_errors_exit_2(case_id, args, words):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.stdout == ""
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.stderr, (word, result.stderr)


def test_usage_errors_in_a_subprocess():
    runs = run_cli_many(
        [
            ("solve", R4, "--method", "nosuch"),
            ("solve", R4, "--solver", "nosuch"),
            ("solve", R4, "--time-limit", "0"),
            ("solve", R4, "--time-limit", "-3"),
            ("generate", "--family", "nosuch", "--agents", "2", "--pools", "2"),
            ("generate", "--family", "uniform", "--agents", "0", "--pools", "2"),
            ("generate", "--family", "uniform", "--agents", "2", "--pools", "2", "--param", "oops"),
        ]
    )
    for run in runs:
        assert run.returncode == 2, run
        assert "Traceback" not in run.stderr
        assert len(run.stderr_lines) == 1, run.stderr
        assert run.stdout == ""


# ----------------------------------------------------------------------------- parse_json details


def test_parse_json_names_the_source_and_nested_path():
    with pytest.raises(InputError) as info:
        parse_json('{"a": [1, {"b c": NaN}]}', "mem.json")
    assert str(info.value).startswith('mem.json: $.a[1]["b c"]: ')


def test_largest_int64_is_accepted_one_more_is_not():
    assert parse_json(str(2**63), "x") == 2**63
    with pytest.raises(InputError):
        parse_json(str(2**63 + 1), "x")


def test_error_message_is_one_line_even_for_multiline_problems():
    err = InputError("first line\nsecond line", source="f.json", path="$.x")
    assert str(err) == "f.json: $.x: first line second line"


def test_error_located_keeps_an_existing_source():
    err = InputError("bad", path="$.x").located("a.json")
    assert err.source == "a.json"
    assert err.located("b.json").source == "a.json"


def test_missing_file_error_regex():
    with pytest.raises(InputError, match=r"^nowhere/none\.json: \$: file not found$"):
        load_instance("nowhere/none.json")
