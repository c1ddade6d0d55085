"""ClinCite as a package: every library it imports is declared, and a wheel built from the repository installs in a
clean virtual environment and answers offline from there — not from the source checkout.

The clean venv gets the project venv's libraries through a .pth line (no second torch is installed; the .pth files in
that folder, the editable install of clincite among them, are not processed through it) and the wheel itself with
`pip install --no-deps`; it runs outside the checkout, so `import clincite` can only find the installed wheel.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE_KB
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PROGRAMS = [ROOT / "app.py", ROOT / "query.py", ROOT / "ingest.py"]
TEST_CODE = [ROOT / "tests", ROOT / "bench"]
OUR_MODULES = {"clincite", "app", "query", "ingest", "tests", "conftest", "baselines"}


def imported_top_level(paths: list[Path]) -> set[str]:
    names: set[str] = set()
    for path in paths:
        for file in [path] if path.is_file() else path.rglob("*.py"):
            for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names.add(node.module.split(".")[0])
    local = {file.stem for path in [*TEST_CODE, ROOT / "deploy"] for file in path.glob("*.py")}  # (deploy/serve.py)
    return names - set(sys.stdlib_module_names) - OUR_MODULES - local


def declared(*extras: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def undeclared(modules: set[str], allowed: set[str]) -> dict[str, list[str]]:
    providers = packages_distributions()
    missing = {}
    for module in sorted(modules):
        distributions = {canonicalize_name(d) for d in providers.get(module, [module])}
        if not distributions & allowed:
            missing[module] = sorted(distributions)
    return missing


def test_every_library_clincite_imports_is_declared_in_pyproject():
    """A library that only arrives as another's dependency can vanish with that one's next release."""
    assert undeclared(imported_top_level([ROOT / "clincite", *PROGRAMS]), declared()) == {}


def test_every_library_the_tests_and_benchmarks_import_is_declared():
    assert undeclared(imported_top_level(TEST_CODE), declared("test")) == {}


# --- the wheel ----------------------------------------------------------------------------------------------------


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command[:3]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: the project venv's setuptools builds it, without fetching one from the network.
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)],
        ROOT,
        {**os.environ},
    )
    (built,) = out.glob("clincite-*.whl")
    return built


@pytest.fixture(scope="module")
def clean_venv(wheel, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", str(venv)], venv, {**os.environ})
    python = venv / "bin" / "python"
    site = Path(
        run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], venv, {}).stdout.strip()
    )
    (site / "project-libraries.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], venv, {**os.environ})
    return venv


@pytest.mark.slow
def test_the_wheel_holds_the_package_and_its_data_but_not_the_programs(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert not {"app.py", "query.py", "ingest.py"} & set(names), "the programs are not installed as top-level modules"
    assert {name.split("/")[0] for name in names} <= {
        "clincite",
        f"{wheel.name.split('-')[0]}-{wheel.name.split('-')[1]}.dist-info",
    }
    assert any(name.startswith("clincite/llm/prompts/") and name.endswith(".txt") for name in names)
    assert "clincite/text/lexicon/aspects.json" in names


@pytest.mark.slow
def test_every_module_imports_from_the_installed_wheel(clean_venv, tmp_path):
    check = (
        "import importlib, pkgutil, sys, clincite\n"
        "assert clincite.__file__.startswith(sys.argv[1]), clincite.__file__\n"
        "names = [m.name for m in pkgutil.walk_packages(clincite.__path__, 'clincite.')]\n"
        "names = [name for name in names if not name.endswith('.__main__')]  # (running one is its command line)\n"
        "for name in names:\n"
        "    module = importlib.import_module(name)\n"
        "    assert module.__file__.startswith(sys.argv[1]), (name, module.__file__)\n"
        "from clincite.llm.prompts import PROMPT_FILES, load_prompt\n"
        "assert all(load_prompt(name) for name in PROMPT_FILES)\n"
        "print(len(names))\n"
    )
    python = clean_venv / "bin" / "python"
    done = run([str(python), "-c", check, str(clean_venv)], tmp_path, clean_env(tmp_path))
    assert int(done.stdout.split()[-1]) >= 50, done.stdout


@pytest.mark.slow
def test_the_installed_console_scripts_ingest_and_answer_offline(clean_venv, tmp_path):
    """As a clinic would run it from the wheel: `clincite-ingest` the sample documents, then `clincite-query --json`."""
    env = clean_env(tmp_path)
    kb = tmp_path / "kb"
    ingested = run([str(clean_venv / "bin" / "clincite-ingest"), str(SAMPLE_KB), "--kb", str(kb)], tmp_path, env)
    assert "10" in ingested.stdout, ingested.stdout
    question = "低浓度阿托品的副作用有哪些？"
    answered = run([str(clean_venv / "bin" / "clincite-query"), question, "--kb", str(kb), "--json"], tmp_path, env)
    payload = json.loads(answered.stdout)
    assert payload["mode"] == "offline" and payload["coverage"]["status"] == "answered"
    assert payload["citations"] and all(c["verified"] for c in payload["citations"])
    assert any("低浓度阿托品" in c["source"] for c in payload["citations"])
    module = run(
        [str(clean_venv / "bin" / "python"), "-m", "clincite.cli.query", question, "--kb", str(kb), "--json"],
        tmp_path,
        env,
    )
    assert json.loads(module.stdout)["answer"] == payload["answer"]


def clean_env(tmp_path: Path) -> dict[str, str]:
    """No checkout on the path, nothing of a developer's .env, no key (offline), the hashing embedder (no model)."""
    keep = (
        "PATH",
        "HOME",
        "LANG",
        "LC_ALL",
        "TMPDIR",
        *(key for key in os.environ if key.startswith(("HF_", "TRANSFORMERS_"))),
    )
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(
        {
            "CLINCITE_ENV_FILE": os.devnull,
            "DATA_DIR": str(tmp_path / "data"),
            "EMBEDDING_MODEL": "hashing-char-ngrams",
            "SEMANTIC_THRESHOLD": "0",
        }
    )
    return env
