"""What a fresh clone must not carry: paths of one machine, links to documents that are
not in the repository, a licence the code does not ship."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Absolute paths that name somebody's machine: a home, a workspace, a scratch folder
# written into the code instead of asked of tempfile (which honours TMPDIR).
MACHINE_PATH = re.compile(r"""/work/|/root/|/home/[a-z]|/Users/[A-Za-z]|["']/tmp["'/]""")
# Documented defaults, each in the place that documents it (and this file's patterns).
ALLOWED = {
    "scripts/citus-cluster.sh": {"/tmp/mem01-citus"},
    "tests/test_repo_hygiene.py": {"MACHINE_PATH", "/tmp/mem01-citus"},
}


def tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [ROOT / line for line in out.splitlines() if line]


@pytest.mark.slow
def test_no_path_of_one_machine_is_written_into_the_repository() -> None:
    found = []
    for path in tracked():
        if path.suffix not in {".py", ".md", ".sh", ".toml", ".cfg", ".ini", ".yml", ".txt"}:
            continue
        if not path.is_file():  # deleted in the work tree
            continue
        rel = path.relative_to(ROOT).as_posix()
        if rel == "tests/test_repo_hygiene.py":  # this file spells the patterns it looks for
            continue
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            for match in MACHINE_PATH.finditer(line):
                if any(allowed in line for allowed in ALLOWED.get(rel, ())):
                    continue
                found.append(f"{rel}:{number}: {line.strip()[:100]}")
                del match
    assert found == []


def test_every_local_link_of_the_docs_names_a_file_of_the_repository() -> None:
    broken = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
            if target.startswith(("http://", "https://", "#", "mailto:")):
                continue
            file = (doc.parent / target.split("#", 1)[0]).resolve()
            if not file.exists():
                broken.append(f"{doc.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_the_licence_the_project_declares_is_shipped() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert "MIT License" in (ROOT / "LICENSE").read_text()


@pytest.mark.slow
def test_no_binary_is_committed() -> None:
    # Wheels, archives, built libraries and model files come from the registries, never
    # from the repo. The one data file kept: all-MiniLM-L6-v2's fp32 vectors of LoCoMo's
    # conversation 26, made with torch (which CI never installs), against which
    # bench/embedders.py measures the int8 model this library runs.
    binaries = {".whl", ".zip", ".gz", ".tgz", ".so", ".dylib", ".dll", ".exe", ".bin",
                ".npz", ".npy", ".pkl", ".pt", ".onnx", ".parquet"}  # fmt: skip
    kept = {"bench/data/minilm-fp32-conv-26.npz"}
    committed = [p.relative_to(ROOT).as_posix() for p in tracked() if p.suffix in binaries]
    assert sorted(set(committed) - kept) == []
