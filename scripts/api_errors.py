#!/usr/bin/env python3
"""The REST API's error table (src/daemon/api_errors.def) written into the SDKs.

The daemon compiles api_errors.def itself (an X-macro, src/daemon/api_errors.c).
This script reads the same file and writes the SDKs' code -> status tables,
which they use to type an error that arrives without an HTTP status (an error
event inside a stream):

  sdk/python/src/pandastack/_api_errors.py
  sdk/typescript/src/api_errors.ts

Usage:
  scripts/api_errors.py           write the generated files
  scripts/api_errors.py --check   exit 1 if a generated file is missing or stale
                                  (make check-api-errors; CI runs it)

tests/integration/test_api_errors.py imports read_table() to compare the table
with docs/api.md and with `pandastackd --print-errors`.  Python 3 standard
library only.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEF = ROOT / "src" / "daemon" / "api_errors.def"

# API_ERROR(NAME, STATUS, code, "meaning" "continued")
_ROW = re.compile(r'^API_ERROR\(\s*([A-Z][A-Z0-9_]*),\s*(\d{3}),\s*([a-z][a-z0-9_]*),\s*'
                  r'((?:"(?:[^"\\\n]|\\.)*"\s*)+)\)\s*$', re.M)
_STR = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def read_table(text=None):
    """The rows of api_errors.def as (name, status, code, meaning) tuples, in
    order.  Raises ValueError when a line that starts a row does not parse
    (so a row the generator cannot read is never silently left out)."""
    if text is None:
        text = DEF.read_text()
    rows = []
    for m in _ROW.finditer(text):
        meaning = "".join(s.replace('\\"', '"').replace("\\\\", "\\")
                          for s in _STR.findall(m.group(4)))
        rows.append((m.group(1), int(m.group(2)), m.group(3), meaning))
    starts = len(re.findall(r"^API_ERROR\(", text, re.M))
    if starts != len(rows) or not rows:
        raise ValueError(f"{DEF.name}: {starts} rows start, {len(rows)} parse")
    return rows


def code_status(rows):
    """code -> status of the code's first row (its main status)."""
    out = {}
    for _, status, code, _ in rows:
        out.setdefault(code, status)
    return out


HEADER = "Generated from src/daemon/api_errors.def by scripts/api_errors.py: do not edit."


def python_table(rows):
    lines = ['"""The REST API\'s error codes and the HTTP status each is sent with',
             '(docs/api.md, "Errors"; a code with two statuses has its first here).',
             "",
             HEADER,
             '"""',
             "from typing import Dict",
             "",
             "API_ERROR_STATUS: Dict[str, int] = {"]
    lines += [f'    "{code}": {status},' for code, status in code_status(rows).items()]
    lines += ["}", ""]
    return "\n".join(lines)


def typescript_table(rows):
    lines = ["/**",
             ' * The REST API\'s error codes and the HTTP status each is sent with',
             ' * (docs/api.md, "Errors"; a code with two statuses has its first here).',
             " *",
             f" * {HEADER}",
             " */",
             "export const API_ERROR_STATUS: Readonly<Record<string, number>> = Object.freeze({"]
    lines += [f"  {code}: {status}," for code, status in code_status(rows).items()]
    lines += ["});", ""]
    return "\n".join(lines)


OUTPUTS = {
    ROOT / "sdk" / "python" / "src" / "pandastack" / "_api_errors.py": python_table,
    ROOT / "sdk" / "typescript" / "src" / "api_errors.ts": typescript_table,
}


def main(argv):
    check = argv[1:] == ["--check"]
    if argv[1:] and not check:
        print(__doc__, file=sys.stderr)
        return 2
    rows = read_table()
    stale = []
    for path, render in OUTPUTS.items():
        want = render(rows)
        have = path.read_text() if path.exists() else None
        if have == want:
            continue
        if check:
            stale.append(path.relative_to(ROOT))
        else:
            path.write_text(want)
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale generated files (run `make api-errors` and commit them): "
              + ", ".join(map(str, stale)), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
