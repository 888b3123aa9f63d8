"""docs/architecture.md's import-layer diagram is drawn from the import-linter contracts in pyproject.toml, and its
package table names every package of the tree: the documentation of the design cannot drift from the code."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
START, END = "<!-- import-layers: drawn from pyproject.toml's import-linter contracts -->", "<!-- /import-layers -->"


def contracts() -> dict[str, dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    return {contract["id"]: contract for contract in config["contracts"]}


def diagram() -> str:
    """The layers, top (may import everything below) to bottom; ' · ' joins modules of one layer."""
    found = contracts()
    lines = ["```text"]
    for container in [layer.strip() for layer in found["layers"]["layers"]]:
        layered = found.get(f"{container}-layers")
        if layered is None:
            lines.append(f"{container}")
        else:
            for index, layer in enumerate(layered["layers"]):
                names = " · ".join(name.strip() for name in layer.split(":"))
                lines.append(f"{container if index == 0 else '':<12}{names}")
        lines.append(f"{'':<12}↓ imports point down only")
    lines[-1:] = ["```"]
    return "\n".join(lines)


def test_architecture_page_draws_the_import_layers_of_the_contracts():
    readme = (ROOT / "docs" / "architecture.md").read_text()
    assert START in readme and END in readme, f"docs/architecture.md lacks the markers {START} ... {END}"
    drawn = readme.split(START, 1)[1].split(END, 1)[0].strip()
    assert drawn == diagram(), "docs/architecture.md's import layers differ from pyproject.toml's contracts; paste:\n" + diagram()


def test_every_package_is_in_the_architecture_table():
    readme = (ROOT / "docs" / "architecture.md").read_text()
    packages = sorted(
        str(init.parent.relative_to(ROOT))
        for root in ("annotate", "evaluation", "models_runtime")
        for init in (ROOT / root).rglob("__init__.py")
        if "migrations" not in init.parts and "management" not in init.parts
    )
    missing = [package for package in packages if f"`{package}/`" not in readme]
    assert not missing, f"packages not described in docs/architecture.md's package table: {missing}"


def layered(container: str) -> set[str]:
    return {name.strip() for layer in contracts()[f"{container}-layers"]["layers"] for name in layer.split(":")}


def test_every_layered_module_exists():
    for container in ("annotate", "evaluation"):
        for name in layered(container):
            path = ROOT / container / name
            assert path.is_dir() or path.with_suffix(".py").exists(), f"{container}.{name} is in a contract only"


def test_every_module_is_in_a_layer():
    """A module or package of annotate/ or evaluation/ outside every layer is outside the contract's checks."""
    for container in ("annotate", "evaluation"):
        children = {path.stem for path in (ROOT / container).glob("*.py") if path.stem != "__init__"}
        children |= {path.name for path in (ROOT / container).iterdir() if (path / "__init__.py").exists()}
        missing = sorted(children - layered(container))
        assert not missing, f"{container}: {missing} in no layer of pyproject.toml's {container}-layers contract"


def test_evaluation_root_holds_at_most_eight_modules():
    """evaluation/ is grouped by kind of work: its root keeps the app's entry points and the plain data they share."""
    modules = sorted(path.name for path in (ROOT / "evaluation").glob("*.py"))
    assert len(modules) <= 8, modules
