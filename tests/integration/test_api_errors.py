"""The API's error table (src/daemon/api_errors.def) against docs/api.md
"Errors", the error responses of docs/openapi.yaml, the daemon's compiled
table (`pandastackd --print-errors`) and the SDKs' generated tables
(scripts/api_errors.py).  No VM, no daemon process."""
import copy
import importlib.util
import re
import subprocess

import yaml

from conftest import DAEMON, ROOT

_spec = importlib.util.spec_from_file_location("api_errors", ROOT / "scripts" / "api_errors.py")
api_errors = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api_errors)

DOC_ROW = re.compile(r"^\| (\d{3}) \| `([a-z_]+)` \| (.*) \|$")


def doc_rows(text):
    """(status, code, meaning) of every row of the table under "## Errors"."""
    section = text.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        m = DOC_ROW.match(line)
        if m:
            rows.append((int(m.group(1)), m.group(2), m.group(3)))
        else:
            assert not re.match(r"^\| \d", line), f"a row docs/api.md's test cannot read: {line}"
    return rows


def differences(documented, table):
    """Rows only one side has, and rows both have in another order."""
    out = [("only in docs/api.md", r) for r in documented if r not in table]
    out += [("only in the table", r) for r in table if r not in documented]
    if not out and documented != table:
        out.append(("order differs", None))
    return out


def table_rows():
    return [(status, code, meaning) for _, status, code, meaning in api_errors.read_table()]


def test_docs_list_exactly_the_table():
    doc = doc_rows((ROOT / "docs" / "api.md").read_text())
    table = table_rows()
    assert len(table) >= 30
    # positive controls: the comparison sees a missing row, a wrong status, a new code
    assert differences(doc[1:], table)
    assert differences([(418,) + doc[0][1:]] + doc[1:], table)
    assert differences(doc + [(400, "made_up", "x")], table)
    assert differences(doc[::-1], table)
    assert differences(doc, table) == []


def test_daemon_compiles_the_same_table():
    out = subprocess.check_output([str(DAEMON), "--print-errors"], text=True)
    printed = [tuple(line.split(" ")) for line in out.splitlines()]
    assert printed == [(str(s), c) for s, c, _ in table_rows()]


def test_a_row_the_generator_cannot_read_is_an_error():
    good = 'API_ERROR(A, 400, a_code,\n\t  "meaning")\n'
    assert api_errors.read_table(good) == [("A", 400, "a_code", "meaning")]
    for bad in ('API_ERROR(A, 400, "a_code", "meaning")\n',   # quoted code
                "API_ERROR(A, 400, a_code, meaning)\n",       # bare meaning
                'API_ERROR(A, 40, a_code, "meaning")\n'):    # two-digit status
        try:
            api_errors.read_table(good + bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad!r}")


def test_sdk_tables_are_fresh():
    r = subprocess.run(["/usr/bin/python3", str(ROOT / "scripts" / "api_errors.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    py = (ROOT / "sdk" / "python" / "src" / "pandastack" / "_api_errors.py").read_text()
    ts = (ROOT / "sdk" / "typescript" / "src" / "api_errors.ts").read_text()
    for _, code, _ in table_rows():
        assert f'"{code}": ' in py and f"  {code}: " in ts, code
    # a code's first row gives its status
    assert '"sandbox_not_found": 404,' in py and "  sandbox_not_found: 404," in ts
    assert '"vm_start_failed": 500,' in py and "  vm_start_failed: 500," in ts


def openapi_mismatches(spec, rows):
    """Error responses of spec whose code enum is not the table's codes of
    their status, and statuses of the table no operation lists (405 is
    answered on any path, and 408 before any path is known, so none lists
    them)."""
    want = {}
    for status, code, _ in rows:
        want.setdefault(status, set()).add(code)
    out, seen = [], set()
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            if method in ("parameters", "summary", "description"):
                continue
            for st, resp in op["responses"].items():
                if int(st) < 400 or "$ref" not in resp:
                    continue
                name = resp["$ref"].rsplit("/", 1)[1]
                schema = spec["components"]["responses"][name]["content"]["application/json"]["schema"]
                enum = schema["allOf"][1]["properties"]["error"]["properties"]["code"]["enum"]
                seen.add(int(st))
                if set(enum) != want.get(int(st)):
                    out.append((method, path, st, name, sorted(set(enum) ^ want.get(int(st), set()))))
    out += [("no operation lists", st) for st in sorted(set(want) - seen - {405, 408})]
    return out


def test_openapi_error_responses_list_the_table():
    spec = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
    rows = table_rows()
    # positive controls: a code missing from a response, a response under the wrong status
    bad = copy.deepcopy(spec)
    enum = (bad["components"]["responses"]["Conflict"]["content"]["application/json"]["schema"]
            ["allOf"][1]["properties"]["error"]["properties"]["code"]["enum"])
    enum.remove("admin_key")
    assert openapi_mismatches(bad, rows)
    bad = copy.deepcopy(spec)
    bad["paths"]["/v1/sandboxes/{id}/exec"]["post"]["responses"]["504"] = \
        {"$ref": "#/components/responses/BadGateway"}
    assert openapi_mismatches(bad, rows)
    assert openapi_mismatches(spec, rows) == []
