"""Start-up without the heavy paths: `--version` answered before typer loads, and command-line values
converted without pydantic (typer would build a pydantic TypeAdapter for every parameter)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import ctxsim
from ctxsim._support.cli_params import light_converter

PROBE = """
import json, sys
from ctxsim.__main__ import main
try:
    main()
except SystemExit:
    pass
sys.stdout.flush()
print("\\n" + json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def _run(*args: str) -> tuple[str, str, set[str]]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=False)
    *err, modules = done.stderr.strip().splitlines()
    return done.stdout, "\n".join(err).strip(), set(json.loads(modules))


def _roots(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


def test_version_is_answered_before_typer_loads() -> None:
    out, _, loaded = _run("--version")
    assert out == f"ctxsim {ctxsim.__version__}\n"
    assert not {"typer", "click", "rich", "pydantic"} & _roots(loaded)


@pytest.mark.parametrize("args", [("inspect", "--help"), ("formats", "show", "claude-code", "--json")])
def test_commands_parse_their_values_without_pydantic(args: tuple[str, ...]) -> None:
    out, _, loaded = _run(*args)
    assert out.strip()
    assert "typer" in _roots(loaded)
    assert "pydantic" not in _roots(loaded)


def test_a_bad_number_is_one_line_naming_the_option() -> None:
    _, err, _ = _run("inspect", "--largest", "3.5", "--json")
    assert err == ("ctxsim: error: Invalid value for '--largest': '3.5' is not a valid integer. "
                   "(see 'ctxsim inspect --help')")


@pytest.mark.parametrize(("annotation", "text", "value"), [
    (int, "3", 3), (int, " 3 ", 3), (int, "3.0", 3), (int, "-2", -2), (float, "0.5", 0.5), (float, "1e3", 1000.0),
    (str, "x y", "x y"), (bool, "yes", True), (bool, "0", False), (list[str], ("a", "b"), ["a", "b"]),
    (list[int], ["1", "2"], [1, 2]),
])
def test_plain_values_convert_as_typer_converts_them(annotation: object, text: object, value: object) -> None:
    found = light_converter(annotation, object())
    assert found is not None
    assert found[0](text) == value


@pytest.mark.parametrize(("annotation", "text"), [(int, "3.5"), (int, "1e3"), (int, "abc"), (float, "x"),
                                                  (bool, "maybe")])
def test_values_that_are_not_of_the_type_are_refused(annotation: object, text: str) -> None:
    found = light_converter(annotation, object())
    assert found is not None
    with pytest.raises(ValueError):  # noqa: PT011 (int() and float() say it in their own words)
        found[0](text)


def test_anything_but_a_plain_type_is_left_to_typer() -> None:
    class Bounded:
        min = 1
        max = None

    assert light_converter(int, Bounded()) is None
    assert light_converter(dict[str, int], object()) is None


def test_a_command_line_builds_only_the_command_it_names() -> None:
    import typer

    from ctxsim._support.lazy_cli import command_for
    from ctxsim.cli import app

    everything = typer.main.get_command(app)
    assert set(command_for(app, ["inspect", "x.jsonl"]).commands) == {"inspect"}
    assert set(command_for(app, ["--debug", "policies", "list"]).commands) == {"policies"}
    assert set(command_for(app, ["nosuch"]).commands) == set(everything.commands)  # the group's own error
    listed = command_for(app, ["--help"])
    assert list(listed.commands) == list(everything.commands)
    for name, command in listed.commands.items():
        assert command.get_short_help_str() == everything.commands[name].get_short_help_str()
        assert command.params == [] or name in ("formats", "policies")  # the list needs no parameters
