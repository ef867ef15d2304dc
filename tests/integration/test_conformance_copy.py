"""The repository's copy of the documents' examples (tests/conformance) must
equal the shared conformance folder next to the repository, when that folder
is present (a clean clone in CI has only the copy)."""
import filecmp
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
COPY = ROOT / "tests" / "conformance"
SHARED = ROOT.parent / "shared" / "conformance"


def files(d):
    return sorted(p.relative_to(d) for p in d.rglob("*") if p.is_file())


@pytest.mark.skipif(not SHARED.is_dir(), reason="no shared conformance folder next to the repository")
def test_copy_equals_shared():
    shared = files(SHARED)
    copy = [p for p in files(COPY) if p.name != "SOURCE.md"]
    assert copy == shared, "tests/conformance lists other files than the shared folder"
    for rel in shared:
        assert filecmp.cmp(SHARED / rel, COPY / rel, shallow=False), f"{rel} differs"


def test_copy_is_complete():
    for kind in ("http", "cli", "python", "typescript", "data"):
        assert any((COPY / kind).iterdir()), f"tests/conformance/{kind} is empty"
