"""The user documentation in ``docs/`` is executed and kept in step with the code.

* Every ``python`` block of a tested page is a doctest and runs (repository root as
  working directory); every ``console`` block runs command by command in a scratch
  directory holding a copy of ``instances/`` and its output is compared with the
  page (``...`` matches anything, whitespace is normalised); every ``sh`` block
  (installation) is checked without installing anything.
* ``docs/instance-format.md`` lists exactly the fields of the shipped instance
  schema, with the schema's defaults.
* ``docs/commands.md`` mentions every command, argument and option of the click
  command line, and every exit code the code can produce.
* ``docs/index.md`` reaches every page, and relative links resolve.
"""

from __future__ import annotations

import copy
import doctest
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest

import laissez_opt
from laissez_opt.errors import LaissezOptError
from laissez_opt.io import instance_from_dict, load_schema

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MODELS = ROOT / "models"
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# The module, not the ``main`` function that ``laissez_opt.cli`` re-exports under that name.
cli_main = importlib.import_module("laissez_opt.cli.main")

#: Pages whose snippets are executed.
TESTED_PAGES = ("getting-started.md", "instance-format.md", "commands.md", "modelling.md", "proofs.md", "import.md",
                "market.md")
#: Pages whose relative links are checked (paths relative to the repository root).
LINKED_PAGES = tuple(f"docs/{p}" for p in TESTED_PAGES + ("index.md",)) + ("models/README.md", "models/welfare.md")


# --------------------------------------------------------------- markdown helpers
def fenced_blocks(text: str) -> list[tuple[str, int, list[str]]]:
    """``(language, first body line number (1-based), body lines)`` of every fenced block."""
    blocks = []
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        match = re.match(r"^```(\S*)\s*$", lines[k])
        if match:
            lang, start = match.group(1), k + 1
            k += 1
            while k < len(lines) and lines[k].rstrip() != "```":
                k += 1
            if k == len(lines):
                raise AssertionError(f"unclosed code fence opened at line {start}")
            blocks.append((lang, start + 1, lines[start:k]))
        k += 1
    return blocks


def sections(text: str, level: int = 2) -> dict[str, str]:
    """Heading text (backticks removed) -> the section's text, for headings of ``level``."""
    marker = "#" * level + " "
    out: dict[str, str] = {}
    current, body = None, []
    in_fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and re.match(r"^#{1,%d} " % level, line):
            if current is not None:
                out[current] = "\n".join(body)
            current = line[len(marker):].replace("`", "").strip() if line.startswith(marker) else None
            body = []
        elif current is not None:
            body.append(line)
    if current is not None:
        out[current] = "\n".join(body)
    return out


def tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every pipe table of ``text`` as ``(header cells, rows of cells)``."""
    found = []
    lines = text.splitlines()
    k = 0
    while k < len(lines) - 1:
        if lines[k].startswith("|") and re.match(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$", lines[k + 1]):
            header = _cells(lines[k])
            rows = []
            k += 2
            while k < len(lines) and lines[k].startswith("|"):
                rows.append(_cells(lines[k]))
                k += 1
            found.append((header, rows))
        else:
            k += 1
    return found


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = heading.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def read(page: str) -> str:
    return (DOCS / page).read_text(encoding="utf-8")


# ----------------------------------------------------------------- python snippets
@pytest.mark.parametrize("page", TESTED_PAGES)
def test_python_snippets_run(page, monkeypatch):
    text = read(page)
    blocks = [b for b in fenced_blocks(text) if b[0] in ("python", "pycon")]
    for _, line, body in blocks:
        assert any(l.lstrip().startswith(">>>") for l in body), (
            f"{page}:{line}: a python block without '>>>' would not be tested; write it doctest-style"
        )
    if page == "getting-started.md":
        assert blocks, "getting-started.md must show Python examples"
    # Keep every line where it is (blank elsewhere) so failures name the real line.
    keep = [""] * len(text.splitlines())
    for _, line, body in blocks:
        for offset, content in enumerate(body):
            keep[line - 1 + offset] = content
    source = "\n".join(keep) + "\n"
    monkeypatch.chdir(ROOT)
    test = doctest.DocTestParser().get_doctest(source, {"__name__": "__docs__"}, page, str(DOCS / page), 0)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
    if blocks:
        assert runner.tries > 0


# ---------------------------------------------------------------- console snippets
def console_commands(page: str) -> list[tuple[int, str, str]]:
    """``(line, command, expected output)`` of every ``$ command`` in the page's console blocks."""
    out = []
    for lang, line, body in fenced_blocks(read(page)):
        if lang != "console":
            continue
        assert body and body[0].startswith("$ "), f"{page}:{line}: a console block starts with '$ command'"
        for offset, content in enumerate(body):
            if content.startswith("$ "):
                out.append([line + offset, content[2:], []])
            else:
                out[-1][2].append(content)
    return [(n, cmd, "\n".join(want) + "\n" if want else "") for n, cmd, want in out]


@pytest.fixture()
def sandbox(tmp_path):
    """A scratch working directory with a copy of the shipped instances."""
    shutil.copytree(ROOT / "instances", tmp_path / "instances")
    return tmp_path


def _env() -> dict:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(COLUMNS="100", LINES="50", PYTHONUNBUFFERED="1", NO_COLOR="1", TERM="dumb")
    env.pop("FORCE_COLOR", None)
    return env


@pytest.mark.parametrize("page", TESTED_PAGES)
def test_console_snippets_run(page, sandbox):
    commands = console_commands(page)
    if page in ("getting-started.md", "commands.md"):
        assert commands, f"{page} must show command-line examples"
    checker = doctest.OutputChecker()
    env = _env()
    for line, command, want in commands:
        proc = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command], cwd=sandbox, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
        )
        got = proc.stdout
        assert checker.check_output(want, got, FLAGS), (
            f"{page}:{line}: $ {command}\n--- expected ---\n{want}--- got (exit {proc.returncode}) ---\n{got}"
        )
        if "$?" not in command:
            assert proc.returncode == 0, f"{page}:{line}: $ {command} exited {proc.returncode}:\n{got}"


def test_install_snippets_are_valid():
    """``sh`` blocks install things, so they are checked rather than run."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(pyproject["project"].get("optional-dependencies", {}))
    seen = 0
    for page in TESTED_PAGES:
        for lang, line, body in fenced_blocks(read(page)):
            if lang not in ("sh", "bash", "shell"):
                continue
            for offset, content in enumerate(body):
                where = f"{page}:{line + offset}"
                command = content.split("#", 1)[0].strip()
                if not command:
                    continue
                seen += 1
                if match := re.fullmatch(r"make (\w+)", command):
                    proc = subprocess.run(
                        ["make", "-n", match.group(1)], cwd=ROOT, capture_output=True, text=True, timeout=60
                    )
                    assert proc.returncode == 0, f"{where}: make -n {match.group(1)} failed: {proc.stderr}"
                elif match := re.fullmatch(r"pip install -e (?:\.|'\.\[([\w,]+)\]')", command):
                    wanted = set(filter(None, (match.group(1) or "").split(",")))
                    assert wanted <= extras, f"{where}: unknown extras {sorted(wanted - extras)}"
                elif command in ("python3.11 -m venv .venv", ". .venv/bin/activate"):
                    pass
                else:
                    pytest.fail(f"{where}: shell line {command!r} is neither run by a test nor checked here")
    assert seen, "no installation commands found"


def test_json_examples_are_valid_instances():
    for page in TESTED_PAGES:
        for lang, line, body in fenced_blocks(read(page)):
            if lang == "json":
                data = json.loads("\n".join(body))
                instance_from_dict(data, f"{page}:{line}")


def test_instance_example_matches_its_file():
    """The example of instance-format.md is the shipped file (description shortened)."""
    blocks = [b for b in fenced_blocks(read("instance-format.md")) if b[0] == "json"]
    shown = json.loads("\n".join(blocks[0][2]))
    actual = json.loads((ROOT / "instances" / f"{shown['name']}.json").read_text(encoding="utf-8"))
    shown.pop("description", None)
    actual.pop("description", None)
    assert shown == actual


# ------------------------------------------------------------- the instance schema
ROOT_SECTION = "Top level"


def schema_objects(schema: dict) -> dict[str, dict]:
    """Section heading -> object schema: the top level and every nested object (``pools[]`` ...)."""
    found = {ROOT_SECTION: schema}

    def walk(node: dict, prefix: str) -> None:
        for name, prop in node.get("properties", {}).items():
            items = prop.get("items")
            if isinstance(items, dict) and "properties" in items:
                path = f"{prefix}{name}[]"
                found[path] = items
                walk(items, path + ".")
            elif "properties" in prop:
                path = f"{prefix}{name}"
                found[path] = prop
                walk(prop, path + ".")

    walk(schema, "")
    return found


def field_table(section_text: str) -> list[list[str]] | None:
    for header, rows in tables(section_text):
        if [h.lower() for h in header] == ["field", "type", "default", "meaning"]:
            return rows
    return None


def _default_problem(where: str, cell: str, prop: dict, required: bool) -> str | None:
    cell = cell.strip()
    if cell == "required":
        return None if required else f"{where}: documented as required, the schema does not require it"
    if required:
        return f"{where}: the schema requires it; the default column must say 'required'"
    if cell in ("—", "-", ""):
        if "default" in prop:
            return f"{where}: the schema default {json.dumps(prop['default'])} is not documented"
        return None
    literal = cell.strip("`")
    try:
        value = json.loads(literal)
    except json.JSONDecodeError:
        return f"{where}: default {cell!r} is neither a JSON value, 'required' nor '—'"
    if "default" not in prop:
        return f"{where}: documents default {literal} but the schema has none"
    if json.dumps(value) != json.dumps(prop["default"]):
        return f"{where}: documented default {literal}, schema default {json.dumps(prop['default'])}"
    return None


def instance_format_problems(schema: dict, text: str) -> list[str]:
    """Every disagreement between the schema and the field tables of ``text``."""
    problems = []
    documented = sections(text)
    objects = schema_objects(schema)
    for heading, obj in objects.items():
        if heading not in documented:
            problems.append(f"no section '## {heading}'")
            continue
        rows = field_table(documented[heading])
        if rows is None:
            problems.append(f"section '{heading}' has no '| field | type | default | meaning |' table")
            continue
        props = obj.get("properties", {})
        required = set(obj.get("required", []))
        listed = {}
        for row in rows:
            if len(row) != 4:
                problems.append(f"{heading}: malformed row {row}")
                continue
            name = row[0].strip("`")
            if name in listed:
                problems.append(f"{heading}: field {name!r} listed twice")
            listed[name] = row
        for name in props:
            if name not in listed:
                problems.append(f"{heading}: schema field {name!r} is not documented")
        for name, row in listed.items():
            if name not in props:
                problems.append(f"{heading}: documented field {name!r} is not in the schema")
                continue
            problem = _default_problem(f"{heading}.{name}", row[2], props[name], name in required)
            if problem:
                problems.append(problem)
    return problems


def test_instance_format_lists_every_schema_field():
    problems = instance_format_problems(load_schema("instance"), read("instance-format.md"))
    assert not problems, "docs/instance-format.md disagrees with the schema:\n" + "\n".join(problems)


def test_instance_format_check_detects_drift():
    """The comparison itself notices an added field, a dropped field and a changed default."""
    text = read("instance-format.md")
    schema = copy.deepcopy(load_schema("instance"))
    agent = schema["properties"]["agents"]["items"]["properties"]
    agent["colour"] = {"type": "string", "default": "blue"}
    schema["properties"]["pools"]["items"]["properties"]["count"]["default"] = 2
    del schema["properties"]["edges"]["items"]["properties"]["cost"]
    schema["properties"]["round_hours"].pop("default")
    problems = "\n".join(instance_format_problems(schema, text))
    assert "'colour' is not documented" in problems
    assert "pools[].count: documented default 1, schema default 2" in problems
    assert "'cost' is not in the schema" in problems
    assert "round_hours: documents default 1.0 but the schema has none" in problems


# ------------------------------------------------------------------- command line
def walk_commands(command: click.Command, path: tuple[str, ...] = ()):
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from walk_commands(sub, path + (name,))


def mentioned(name: str, text: str) -> bool:
    return re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text) is not None


def command_doc_problems(cli: click.Command, text: str) -> list[str]:
    problems = []
    documented = sections(text)
    for path, command in walk_commands(cli):
        heading = "Global options" if not path else "laissez-opt " + " ".join(path)
        if heading not in documented:
            problems.append(f"no section '## {heading}'")
            continue
        body = documented[heading]
        ctx = click.Context(command, info_name="laissez-opt")
        help_option = command.get_help_option(ctx)
        for param in command.get_params(ctx):
            if path and param is help_option:
                continue  # -h/--help is documented once, with the global options
            if isinstance(param, click.Argument):
                names = [param.human_readable_name]
            else:
                names = list(param.opts) + list(param.secondary_opts)
            for name in names:
                if not mentioned(name, body):
                    problems.append(f"{heading}: {name} is not mentioned")
    return problems


def test_commands_doc_covers_the_cli():
    problems = command_doc_problems(cli_main.cli, read("commands.md"))
    assert not problems, "docs/commands.md misses parts of the command line:\n" + "\n".join(problems)


def test_commands_doc_check_detects_drift():
    @click.group()
    def fake():
        pass

    @fake.command("solve")
    @click.argument("instance")
    @click.option("--method")
    @click.option("--colour")
    def _solve(instance, method, colour):
        pass

    @fake.command("paint")
    def _paint():
        pass

    problems = command_doc_problems(fake, read("commands.md"))
    assert "laissez-opt solve: --colour is not mentioned" in problems
    assert "no section '## laissez-opt paint'" in problems
    assert not any("--method" in p or "INSTANCE" in p for p in problems)


def test_commands_named_as_missing_do_not_exist():
    body = sections(read("commands.md")).get("Commands of the contract not yet available", "")
    missing = re.findall(r"^- `([\w-]+)`", body, flags=re.M)
    present = sorted(set(missing) & set(cli_main.cli.commands))
    assert not present, f"docs/commands.md still lists {present} as not available"


def _exit_codes_in_code() -> set[int]:
    codes = {0, 2}  # success; click's own usage errors
    pending = [LaissezOptError]
    while pending:
        cls = pending.pop()
        codes.add(cls.exit_code)
        pending.extend(cls.__subclasses__())
    source = inspect.getsource(cli_main)
    codes |= {int(n) for n in re.findall(r"_fail\([^\n]*,\s*(\d+)\)", source)}
    codes |= {int(n) for n in re.findall(r"sys\.exit\((\d+)\)", source)}
    return codes


def test_commands_doc_lists_every_exit_code():
    body = sections(read("commands.md"))["Exit codes"]
    rows = next(rows for header, rows in tables(body) if header[0] == "code")
    documented = {int(row[0]) for row in rows}
    assert documented == _exit_codes_in_code()


# ------------------------------------------------------------------ index, links
def test_index_reaches_every_page():
    """docs/index.md names every page of docs/; models/README.md every formulation document."""
    index = read("index.md")
    for page in DOCS.glob("*.md"):
        if page.name != "index.md":
            assert page.name in index, f"docs/index.md does not mention docs/{page.name}"
    assert "models/README.md" in index
    models_index = (MODELS / "README.md").read_text(encoding="utf-8")
    for page in MODELS.glob("*.md"):
        if page.name != "README.md":
            assert f"]({page.name})" in models_index, f"models/README.md does not link models/{page.name}"


@pytest.mark.parametrize("page", LINKED_PAGES)
def test_relative_links_resolve(page):
    here = ROOT / page
    text = here.read_text(encoding="utf-8")
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        path = (here.parent / file_part).resolve() if file_part else here
        assert path.exists(), f"{page}: link to missing {target}"
        if anchor and path.suffix == ".md":
            anchors = {slug(h) for h in re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), flags=re.M)}
            assert anchor in anchors, f"{page}: link {target}: no heading with anchor #{anchor}"


def test_package_version_matches_docs_example():
    """``laissez-opt --version`` in commands.md prints the package version (kept generic there)."""
    proc = subprocess.run(
        [sys.executable, "-m", "laissez_opt", "--version"], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert proc.returncode == 0
    assert laissez_opt.__version__ in proc.stdout
