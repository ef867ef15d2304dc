"""Live answers of every route against docs/openapi.yaml.

Each route is called for its success and its main error answers on a real
daemon (VM routes on a real sandbox), and every answer is checked against the
document: its status is one the operation lists, its content type one that
status lists, and a JSON body validates against the schema (JSON Schema Draft
2020-12, $refs resolved into the document's components) and has no field the
schema does not name.  Streams (exec_stream, run_code_stream) are checked
event by event, their error event included.  The last test requires that
every route of `pandastackd --print-routes` was checked for a 2xx and a 4xx.
"""
import json
import subprocess

import jsonschema
import pytest
import yaml

from conftest import (DAEMON, ROOT, Daemon, PortServer, Response, create_sandbox, read_sse,
                      reap_vms, wait_for)

SPEC = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text())
FAKE_SBX = "sbx_0123456789abcdef0123"
FAKE_CTX = "ctx_0123456789abcdef0123"
FAKE_CMD = "cmd_0123456789abcdef0123"

# (method, pattern, status) of every answer checked, for the last test
CHECKED = set()


def documented_routes():
    """(METHOD, pattern) of every operation of the document."""
    return sorted((m.upper(), p) for p, ops in SPEC["paths"].items() for m in ops
                  if m in ("get", "put", "post", "delete", "patch", "head", "options"))


# ---- the document as a validator ---------------------------------------------

def resolve(node):
    """node with its $ref (a JSON pointer into the document) followed."""
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        assert ref.startswith("#/"), ref
        node = SPEC
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def schema_errors(instance, schema):
    """JSON Schema errors of instance against schema (a schema of the document)."""
    root = dict(schema, components=SPEC["components"])  # "#/components/..." resolves here
    v = jsonschema.Draft202012Validator(root)
    return [f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message}"
            for e in v.iter_errors(instance)]


def branches(schema, instance):
    """schema and the allOf branches, and the oneOf/anyOf branches instance
    matches, resolved and flattened."""
    schema = resolve(schema)
    out = [schema]
    for b in schema.get("allOf", []):
        out += branches(b, instance)
    for key in ("oneOf", "anyOf"):
        for b in schema.get(key, []):
            if not schema_errors(instance, b):
                out += branches(b, instance)
    return out


def undocumented(instance, schemas, where="$"):
    """Paths of the object fields in instance that none of schemas (all of
    which apply to it) names.  An object schema without "properties", or
    with additionalProperties, is open (a map); one with "properties" names
    every field."""
    bs = [b for s in schemas for b in branches(s, instance)]
    found = []
    if isinstance(instance, dict):
        props = {}
        for b in bs:
            for name, sub in b.get("properties", {}).items():
                props.setdefault(name, []).append(sub)
        maps = [b["additionalProperties"] for b in bs
                if isinstance(b.get("additionalProperties"), dict)]
        closed = any("properties" in b for b in bs) and not maps
        for k, v in instance.items():
            if k in props:
                found += undocumented(v, props[k], f"{where}.{k}")
            elif closed:
                found.append(f"{where}.{k}")
            elif maps:
                found += undocumented(v, maps, f"{where}.{k}")
    elif isinstance(instance, list):
        items = [b["items"] for b in bs if "items" in b]
        for i, v in enumerate(instance if items else []):
            found += undocumented(v, items, f"{where}[{i}]")
    return found


def problems(instance, schema):
    """Everything wrong with instance against schema: schema errors, then
    undocumented fields."""
    errs = schema_errors(instance, schema)
    return errs + [f"{p}: not in the document" for p in undocumented(instance, [schema])]


def media_of(method, pattern, status, ctype):
    """The document's media type object for an answer, or an AssertionError
    saying what the document lacks."""
    op = SPEC["paths"][pattern][method.lower()]
    resp = op["responses"].get(str(status))
    assert resp is not None, f"{method} {pattern}: status {status} is not documented"
    content = resolve(resp).get("content")
    if content is None:
        return None
    base = ctype.split(";")[0].strip()
    media = content.get(base) or content.get("*/*")
    assert media is not None, f"{method} {pattern} {status}: content type {base!r} not documented"
    return media


def check(r, method, pattern, want=None):
    """Check a conftest Response r to method pattern against the document;
    want: the status the test expects.  Returns r."""
    if want is not None:
        assert r.status == want, (method, pattern, r)
    ctype = next((v for k, v in r.headers.items() if k.lower() == "content-type"), "")
    media = media_of(method, pattern, r.status, ctype)
    if method == "HEAD":
        assert r.body == b"", (method, pattern, r)  # an answer to HEAD has no body
    elif media is None:
        assert r.body == b"", (method, pattern, r)
    elif ctype.split(";")[0].strip() == "application/json":
        p = problems(json.loads(r.body), media["schema"])
        assert not p, (method, pattern, r.status, p, r)
    CHECKED.add((method, pattern, r.status))
    return r


def announce_too_large(d, method, path, size):
    """A request that announces a body of size bytes and sends none: the
    daemon answers 413 before reading it.  A conftest Response."""
    c = d.conn()
    c.putrequest(method, path)
    c.putheader("Authorization", f"Bearer {d.admin_key}")
    c.putheader("Content-Length", str(size))
    c.putheader("Expect", "100-continue")
    c.endheaders()
    resp = c.getresponse()
    r = Response(resp.status, dict(resp.getheaders()), resp.read())
    c.close()
    return r


def check_stream(d, method, path, pattern, body, until=None):
    """POST a streamed route; check the 200 and each event against the
    document's event schema.  until(event, data) may act on an event (and
    return True to stop reading).  Returns the events as (event, data)."""
    c = d.conn()
    c.request(method, path, json.dumps(body), {"Authorization": f"Bearer {d.admin_key}",
                                               "Content-Type": "application/json"})
    resp = c.getresponse()
    assert resp.status == 200, (path, resp.status, resp.read())
    media = media_of(method, pattern, 200, resp.getheader("Content-Type"))
    events = []
    for event, data in read_sse(resp):
        events.append((event, data))
        p = problems({"event": event, "data": data}, media["schema"])
        assert not p, (pattern, event, data, p)
        if until and until(event, data):
            break
    c.close()
    CHECKED.add((method, pattern, 200))
    return events


# ---- the probe can see a failure -------------------------------------------------

def test_the_checks_see_wrong_answers():
    sandbox = {"id": FAKE_SBX, "template": "base", "status": "running", "reason": None,
               "created_at": "2026-11-30T02:18:52.123Z", "expires_at": "2026-11-30T03:18:52.123Z",
               "ended_at": None, "vcpus": 1, "memory_mib": 512, "metadata": {"a": "b"}}
    s = {"$ref": "#/components/schemas/Sandbox"}
    assert problems(sandbox, s) == []
    assert problems(dict(sandbox, status="sleeping"), s)              # not in the enum
    assert problems({k: v for k, v in sandbox.items() if k != "id"}, s)  # required
    assert problems(dict(sandbox, vcpus="1"), s)                      # type
    assert problems(dict(sandbox, secret="x"), s) == ["$.secret: not in the document"]
    assert problems(dict(sandbox, metadata={"any": "key"}), s) == []  # a map is open
    # composed schemas: allOf (NewKey), oneOf (stream events), error codes per status
    key = {"id": "key_0123456789abcdef", "name": "n", "team": "t", "admin": False,
           "created_at": "2026-11-30T02:18:52.123Z", "last_used_at": None}
    assert problems(dict(key, key="pds_" + "0" * 48), {"$ref": "#/components/schemas/NewKey"}) == []
    assert problems(dict(key, key="pds_x"), {"$ref": "#/components/schemas/NewKey"})
    ev = {"$ref": "#/components/schemas/ExecStreamEvent"}
    assert problems({"event": "started", "data": {"pid": 3}}, ev) == []
    assert problems({"event": "started", "data": {"pid": "3"}}, ev)
    assert problems({"event": "exited", "data": {}}, ev)
    assert problems({"event": "stdout", "data": {"data": "x", "extra": 1}}, ev)
    nf = resolve(SPEC["components"]["responses"]["NotFound"])["content"]["application/json"]
    assert problems({"error": {"code": "sandbox_not_found", "message": "m"}}, nf["schema"]) == []
    assert problems({"error": {"code": "agent_busy", "message": "m"}}, nf["schema"])
    # a status or a content type the operation does not list
    with pytest.raises(AssertionError, match="not documented"):
        media_of("GET", "/v1/sandboxes/{id}", 418, "application/json")
    with pytest.raises(AssertionError, match="not documented"):
        media_of("GET", "/v1/sandboxes/{id}", 200, "text/plain")


# ---- routes without a VM ----------------------------------------------------------

@pytest.fixture(scope="module")
def no_vm(tmp_path_factory):
    """A daemon without VMs, with a small dashboard and a template recipe
    whose images do not exist (a build starts, then fails)."""
    root = tmp_path_factory.mktemp("openapi")
    (root / "cache" / "images").mkdir(parents=True)
    (root / "cache" / "images" / "nothing.json").write_text("{}")
    site = root / "site"
    site.mkdir()
    (site / "index.html").write_bytes(b"<!doctype html><title>t</title>")
    (site / "style.css").write_bytes(b"body{}")
    d = Daemon(root / "data", ["--pool-size", "0", "--web-dir", str(site)],
               cache=str(root / "cache")).start()
    yield d
    d.stop()
    reap_vms(d.data_dir)


def test_system_keys_templates_dashboard(no_vm, daemon_factory, tmp_path):
    (tmp_path / "cache").mkdir()
    (tmp_path / "empty").mkdir()
    unbuilt = daemon_factory("unbuilt", ["--pool-size", "0", "--web-dir", str(tmp_path / "empty")],
                             cache=str(tmp_path / "cache"))
    check(unbuilt.request("GET", "/", key=None), "GET", "/", 404)
    d = no_vm
    check(d.request("GET", "/", key=None), "GET", "/", 200)
    check(d.request("GET", "/ui/style.css", key=None), "GET", "/ui/{file}", 200)
    check(d.request("GET", "/ui/missing.css", key=None), "GET", "/ui/{file}", 404)
    check(d.request("GET", "/healthz"), "GET", "/healthz", 200)
    check(d.request("GET", "/healthz", key=None), "GET", "/healthz", 401)
    check(d.request("GET", "/metrics"), "GET", "/metrics", 200)
    team = d.new_key("openapi")
    check(d.request("GET", "/metrics", key=team), "GET", "/metrics", 403)

    r = check(d.request("POST", "/v1/keys", {"name": "k", "team": "t2"}), "POST", "/v1/keys", 201)
    kid = r.json()["id"]
    check(d.request("POST", "/v1/keys", {"name": ""}), "POST", "/v1/keys", 400)
    check(d.request("POST", "/v1/keys", {"name": "k", "team": "other"}, key=team),
          "POST", "/v1/keys", 403)
    check(announce_too_large(d, "POST", "/v1/keys", 70 * 1024), "POST", "/v1/keys", 413)
    check(d.request("GET", "/v1/keys"), "GET", "/v1/keys", 200)
    check(d.request("GET", "/v1/keys", key="pds_" + "0" * 48), "GET", "/v1/keys", 401)
    check(d.request("DELETE", f"/v1/keys/{kid}"), "DELETE", "/v1/keys/{id}", 204)
    check(d.request("DELETE", f"/v1/keys/{kid}"), "DELETE", "/v1/keys/{id}", 404)
    admin_id = next(k["id"] for k in d.request("GET", "/v1/keys").json()["keys"] if k["admin"])
    check(d.request("DELETE", f"/v1/keys/{admin_id}"), "DELETE", "/v1/keys/{id}", 409)

    check(d.request("GET", "/v1/templates"), "GET", "/v1/templates", 200)
    check(d.request("GET", "/v1/templates", key=None), "GET", "/v1/templates", 401)
    build = "/v1/templates/{name}/build"
    check(d.request("POST", "/v1/templates/nothing/build", {}), "POST", build, 202)
    check(d.request("POST", "/v1/templates/no-recipe/build", {}), "POST", build, 404)
    check(d.request("POST", "/v1/templates/nothing/build", {"force": 1}), "POST", build, 400)
    check(d.request("POST", "/v1/templates/nothing/build", {}, key=team), "POST", build, 403)
    # the build fails (no images); its state is a Template too
    ts = wait_for(lambda: [t for t in d.request("GET", "/v1/templates").json()["templates"]
                           if t["name"] == "nothing" and t.get("build")
                           and t["build"]["status"] != "running"], 60, what="the build to end")
    assert ts[0]["build"]["status"] == "failed"
    check(d.request("GET", "/v1/templates"), "GET", "/v1/templates", 200)

    sb = "/v1/sandboxes"
    check(d.request("POST", sb, {"template": "nothing"}), "POST", sb, 404)
    check(d.request("POST", sb, {"template": "Bad Name"}), "POST", sb, 400)
    check(d.request("GET", sb), "GET", sb, 200)
    check(d.request("GET", sb + "?colour=red"), "GET", sb, 400)
    for method, pattern in (("GET", "/v1/sandboxes/{id}"), ("DELETE", "/v1/sandboxes/{id}")):
        check(d.request(method, f"{sb}/{FAKE_SBX}"), method, pattern, 404)
    check(d.request("POST", f"{sb}/{FAKE_SBX}/ttl", {"ttl_seconds": 60}),
          "POST", "/v1/sandboxes/{id}/ttl", 404)


def test_error_answers_of_sandbox_routes_without_a_sandbox(no_vm):
    """Every sandbox route: 404 for an unknown sandbox, 400 for a bad body or
    query (checked before the sandbox is looked up), 401 without a key."""
    d = no_vm
    bodies = {"exec": {"cmd": "true"}, "exec_stream": {"cmd": "true"}, "run_code": {"code": "1"},
              "contexts": {}, "run_code_stream": {"code": "1"}, "mkdir": {"path": "/x"},
              "ttl": {"ttl_seconds": 60}, "stdin": {"data": "x"}}
    for method, pattern in documented_routes():
        if not pattern.startswith("/v1/sandboxes/{id}"):
            continue
        path = (pattern.replace("{id}", FAKE_SBX).replace("{ctx}", FAKE_CTX)
                .replace("{cid}", FAKE_CMD).replace("{port}", "8000").replace("{path}", "x"))
        last = pattern.rsplit("/", 1)[1]
        query = "?path=/x" if "/fs" in pattern and last != "mkdir" else ""
        body = bodies.get(last) if method == "POST" else (b"data" if method == "PUT" else None)
        check(d.request(method, path + query, body), method, pattern, 404)
        check(d.request(method, path + query, body, key=None), method, pattern, 401)
        if query:
            check(d.request(method, path + "?path=relative", body), method, pattern, 400)
        elif method == "POST" and "/ports/" not in pattern:
            check(d.request(method, path, {"unknown_field": 1}), method, pattern, 400)


def test_mcp_endpoint(no_vm):
    """POST and DELETE /mcp (docs/mcp.md): JSON-RPC answers, 202 for a
    notification, and the HTTP-level refusals."""
    d = no_vm
    accept = {"Accept": "application/json, text/event-stream"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "openapi", "version": "1"}}}
    r = check(d.request("POST", "/mcp", init, headers=accept), "POST", "/mcp", 200)
    sid = next(v for k, v in r.headers.items() if k.lower() == "mcp-session-id")
    session = dict(accept, **{"Mcp-Session-Id": sid})
    check(d.request("POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers=session), "POST", "/mcp", 202)
    r = check(d.request("POST", "/mcp", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                        headers=session), "POST", "/mcp", 200)
    assert len(r.json()["result"]["tools"]) == 7
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    check(d.request("POST", "/mcp", "{oops", headers=session), "POST", "/mcp", 400)
    check(d.request("POST", "/mcp", ping, headers=accept), "POST", "/mcp", 400)
    check(d.request("POST", "/mcp", ping, headers=session, key=None), "POST", "/mcp", 401)
    check(d.request("POST", "/mcp", ping, headers=dict(session, Origin="http://evil.example")),
          "POST", "/mcp", 403)
    check(d.request("POST", "/mcp", ping, headers=dict(accept, **{"Mcp-Session-Id": "mcp_x"})),
          "POST", "/mcp", 404)
    check(d.request("POST", "/mcp", ping, headers=dict(session, Accept="text/html")),
          "POST", "/mcp", 406)
    check(d.request("DELETE", "/mcp"), "DELETE", "/mcp", 400)
    check(d.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid}), "DELETE", "/mcp", 204)
    check(d.request("DELETE", "/mcp", headers={"Mcp-Session-Id": sid}), "DELETE", "/mcp", 404)


# ---- routes on a real sandbox -----------------------------------------------------

@pytest.fixture(scope="module")
def sbx(vm_daemon, template):
    s = check(vm_daemon.request("POST", "/v1/sandboxes", {"template": template, "ttl_seconds": 1800,
                                                          "metadata": {"test": "openapi"}}),
              "POST", "/v1/sandboxes", 201).json()
    yield s
    vm_daemon.request("DELETE", f"/v1/sandboxes/{s['id']}")


def test_sandbox_exec_and_run_code(vm_daemon, sbx, template):
    d, base = vm_daemon, f"/v1/sandboxes/{sbx['id']}"
    check(d.request("GET", base), "GET", "/v1/sandboxes/{id}", 200)
    check(d.request("GET", "/v1/sandboxes?status=running"), "GET", "/v1/sandboxes", 200)
    check(d.request("POST", f"{base}/ttl", {"ttl_seconds": 1800}), "POST", "/v1/sandboxes/{id}/ttl", 200)
    check(d.request("POST", f"{base}/ttl", {"ttl_seconds": 0}), "POST", "/v1/sandboxes/{id}/ttl", 400)
    net = "/v1/sandboxes/{id}/network"
    check(d.request("GET", f"{base}/network"), "GET", net, 200)
    check(d.request("PUT", f"{base}/network", {"egress": "deny", "allow_out": ["pypi.org"]}),
          "PUT", net, 200)
    check(d.request("PUT", f"{base}/network", {"egress": "allow", "allow_out": []}), "PUT", net, 200)
    check(d.request("PUT", f"{base}/network", {"egress": "sometimes"}), "PUT", net, 400)

    ex = "/v1/sandboxes/{id}/exec"
    r = check(d.request("POST", f"{base}/exec", {"cmd": "echo out; echo err >&2; exit 3"}),
              "POST", ex, 200)
    assert r.json()["exit_code"] == 3 and r.json()["stdout"] == "out\n"
    check(d.request("POST", f"{base}/exec", {"cmd": ""}), "POST", ex, 400)
    check(d.request("POST", f"{base}/exec", {"cmd": "true", "cwd": "/no/such/dir"}), "POST", ex, 404)
    check(announce_too_large(d, "POST", f"{base}/exec", 3 << 20), "POST", ex, 413)

    rc = "/v1/sandboxes/{id}/run_code"
    check(d.request("POST", f"{base}/run_code", {"code": "print(6 * 7)"}), "POST", rc, 200)
    check(d.request("POST", f"{base}/run_code", {"code": "echo hi", "language": "shell"}), "POST", rc, 200)
    check(d.request("POST", f"{base}/run_code", {"code": "1", "language": "ruby"}), "POST", rc, 400)

    es = "/v1/sandboxes/{id}/exec_stream"
    events = check_stream(d, "POST", f"{base}/exec_stream", es,
                          {"cmd": "echo one; echo two >&2; exit 4"})
    names = [e for e, _ in events]
    assert names[0] == "started" and names[-1] == "exit" and {"stdout", "stderr"} <= set(names)
    check(d.request("POST", f"{base}/exec_stream", {"cmd": "true", "cwd": "/no/such/dir"}),
          "POST", es, 404)


def test_background_commands(vm_daemon, sbx):
    d, base = vm_daemon, f"/v1/sandboxes/{sbx['id']}"
    P = "/v1/sandboxes/{id}/commands"
    r = check(d.request("POST", f"{base}/exec", {"cmd": "cat; echo bye", "background": True}),
              "POST", "/v1/sandboxes/{id}/exec", 201)
    cid = r.json()["id"]
    check(d.request("GET", f"{base}/commands"), "GET", P, 200)
    r = check(d.request("POST", f"{base}/commands/{cid}/stdin", {"data": "hi\n", "eof": True}),
              "POST", P + "/{cid}/stdin", 200)
    assert r.json()["written"] == 3
    check(d.request("POST", f"{base}/commands/{cid}/stdin", {"eof": 1}), "POST", P + "/{cid}/stdin", 400)
    r = check(d.request("GET", f"{base}/commands/{cid}/output?wait_seconds=10"),
              "GET", P + "/{cid}/output", 200)
    check(d.request("GET", f"{base}/commands/{cid}/output?colour=red"), "GET", P + "/{cid}/output", 400)
    check(d.request("POST", f"{base}/commands/{cid}/kill", {}), "POST", P + "/{cid}/kill", 200)
    check(d.request("POST", f"{base}/commands/{FAKE_CMD}/kill", {}), "POST", P + "/{cid}/kill", 404)


def test_files(vm_daemon, sbx):
    d, base = vm_daemon, f"/v1/sandboxes/{sbx['id']}"
    fs, mk = "/v1/sandboxes/{id}/fs", "/v1/sandboxes/{id}/fs/mkdir"
    st, ls = "/v1/sandboxes/{id}/fs/stat", "/v1/sandboxes/{id}/fs/list"
    check(d.request("POST", f"{base}/fs/mkdir", {"path": "/tmp/oa/sub"}), "POST", mk, 201)
    check(d.request("POST", f"{base}/fs/mkdir", {"path": "/tmp/oa/sub", "parents": False}),
          "POST", mk, 409)
    check(d.request("POST", f"{base}/fs/mkdir", {"path": "tmp"}), "POST", mk, 400)
    check(d.request("PUT", f"{base}/fs?path=/tmp/oa/f.txt", b"hello\n"), "PUT", fs, 200)
    check(d.request("PUT", f"{base}/fs?path=/tmp/oa/sub", b"x"), "PUT", fs, 409)
    r = check(d.request("GET", f"{base}/fs?path=/tmp/oa/f.txt"), "GET", fs, 200)
    assert r.body == b"hello\n"
    check(d.request("GET", f"{base}/fs?path=/tmp/oa/none"), "GET", fs, 404)
    check(d.request("GET", f"{base}/fs?path=/tmp/oa"), "GET", fs, 409)
    check(d.request("GET", f"{base}/fs/stat?path=/tmp/oa/f.txt"), "GET", st, 200)
    check(d.request("GET", f"{base}/fs/stat?path=/tmp/oa/none"), "GET", st, 404)
    check(d.request("GET", f"{base}/fs/list?path=/tmp/oa"), "GET", ls, 200)
    check(d.request("GET", f"{base}/fs/list?path=/tmp/oa/f.txt"), "GET", ls, 409)
    check(d.request("DELETE", f"{base}/fs?path=/tmp/oa"), "DELETE", fs, 409)
    check(d.request("DELETE", f"{base}/fs?path=/tmp/oa&recursive=true"), "DELETE", fs, 204)
    check(d.request("DELETE", f"{base}/fs?path=/tmp/oa"), "DELETE", fs, 404)


def test_contexts(vm_daemon, sbx):
    d, base = vm_daemon, f"/v1/sandboxes/{sbx['id']}"
    P = "/v1/sandboxes/{id}/contexts"
    r = check(d.request("POST", f"{base}/contexts", {}), "POST", P, 201)
    cid = r.json()["id"]
    check(d.request("POST", f"{base}/contexts", {"language": "r"}), "POST", P, 400)
    check(d.request("GET", f"{base}/contexts"), "GET", P, 200)
    run = P + "/{ctx}/run_code"
    r = check(d.request("POST", f"{base}/contexts/{cid}/run_code",
                        {"code": "print('x'); {'a': 1}"}), "POST", run, 200)
    assert r.json()["stdout"] == "x\n"
    r = check(d.request("POST", f"{base}/contexts/{cid}/run_code", {"code": "1/0"}), "POST", run, 200)
    assert r.json()["error"]["name"] == "ZeroDivisionError"
    check(d.request("POST", f"{base}/contexts/{cid}/run_code", {"code": 5}), "POST", run, 400)
    stream = P + "/{ctx}/run_code_stream"
    events = check_stream(d, "POST", f"{base}/contexts/{cid}/run_code_stream", stream,
                          {"code": "print('a')\n7"})
    names = [e for e, _ in events]
    assert names[0] == "stdout" and "result" in names and names[-1] == "done"
    for op in ("interrupt", "restart"):
        check(d.request("POST", f"{base}/contexts/{cid}/{op}", {}), "POST", f"{P}/{{ctx}}/{op}", 204)
        check(d.request("POST", f"{base}/contexts/{cid}/{op}", {"x": 1}),
              "POST", f"{P}/{{ctx}}/{op}", 400)

    # the stream's error event: the context is deleted while its cell runs
    def delete_on_first_output(event, data):
        if event == "stdout":
            check(d.request("DELETE", f"{base}/contexts/{cid}"), "DELETE", P + "/{ctx}", 204)
        return False

    events = check_stream(d, "POST", f"{base}/contexts/{cid}/run_code_stream", stream,
                          {"code": "import time\nprint('go', flush=True)\ntime.sleep(120)"},
                          until=delete_on_first_output)
    assert events[-1][0] == "error", events
    assert events[-1][1]["error"]["code"] == "context_not_found"
    check(d.request("DELETE", f"{base}/contexts/{cid}"), "DELETE", P + "/{ctx}", 404)


def test_exec_stream_error_event_and_delete(vm_daemon, template):
    """A sandbox deleted while a command streams: the stream ends with an
    error event; then the sandbox answers 404."""
    d = vm_daemon
    s = create_sandbox(d, template, ttl_seconds=600)
    base, P = f"/v1/sandboxes/{s['id']}", "/v1/sandboxes/{id}"
    try:
        def delete_on_first_output(event, data):
            if event == "stdout":
                check(d.request("DELETE", base), "DELETE", P, 204)
            return False

        events = check_stream(d, "POST", f"{base}/exec_stream", P + "/exec_stream",
                              {"cmd": "echo go; sleep 120", "timeout_seconds": 0},
                              until=delete_on_first_output)
        assert events[-1][0] == "error", events
        assert events[-1][1]["error"]["code"] in ("sandbox_not_running", "agent_unavailable")
        r = check(d.request("GET", base), "GET", P, None)
        assert r.status in (200, 404)   # a stopped row may stay listed for --retention
        if r.status == 200:
            assert r.json()["status"] == "stopped"
            check(d.request("POST", f"{base}/exec", {"cmd": "true"}), "POST", P + "/exec", 409)
    finally:
        d.request("DELETE", base)


def test_snapshots_forks_pause_resume(vm_daemon, template):
    d = vm_daemon
    s = create_sandbox(d, template, ttl_seconds=900)
    base, P = f"/v1/sandboxes/{s['id']}", "/v1/sandboxes/{id}"
    made = [s["id"]]
    try:
        r = check(d.request("POST", f"{base}/snapshots", {"name": "openapi"}),
                  "POST", P + "/snapshots", 201)
        snap = r.json()["id"]
        check(d.request("POST", f"{base}/snapshots", {"name": ""}), "POST", P + "/snapshots", 400)
        check(d.request("GET", "/v1/snapshots"), "GET", "/v1/snapshots", 200)
        check(d.request("GET", "/v1/snapshots?nope=1"), "GET", "/v1/snapshots", 400)
        S = "/v1/snapshots/{id}"
        check(d.request("GET", f"/v1/snapshots/{snap}"), "GET", S, 200)
        check(d.request("GET", "/v1/snapshots/snap_00000000000000000000"), "GET", S, 404)
        r = check(d.request("POST", f"{base}/fork", {"count": 1}), "POST", P + "/fork", 201)
        made += [x["id"] for x in r.json()["sandboxes"]]
        check(d.request("POST", f"{base}/fork", {"count": 0}), "POST", P + "/fork", 400)
        check(d.request("POST", f"{base}/pause"), "POST", P + "/pause", 200)
        check(d.request("POST", f"{base}/pause"), "POST", P + "/pause", 409)
        check(d.request("DELETE", f"/v1/snapshots/{snap}"), "DELETE", S, 409)
        check(d.request("POST", f"{base}/resume"), "POST", P + "/resume", 200)
        check(d.request("POST", f"{base}/resume"), "POST", P + "/resume", 409)
        check(d.request("DELETE", f"/v1/snapshots/{snap}"), "DELETE", S, 204)
        check(d.request("DELETE", f"/v1/snapshots/{snap}"), "DELETE", S, 404)
    finally:
        for sid in made:
            d.request("DELETE", f"/v1/sandboxes/{sid}")


# ---- every route was checked ------------------------------------------------------

def test_exposed_ports(vm_daemon, sbx):
    """Every method on a port of the sandbox: the server's answer (a JSON
    echo, or a HEAD's head), and the proxy's own errors."""
    srv = PortServer(vm_daemon, sbx["id"], 8000)
    try:
        pattern = "/v1/sandboxes/{id}/ports/{port}/{path}"
        path = f"/v1/sandboxes/{sbx['id']}/ports/8000/echo"
        for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
            body = b"data" if method in ("POST", "PUT", "PATCH") else None
            check(vm_daemon.request(method, path, body), method, pattern, 200)
            check(vm_daemon.request(method, path, body, key=None), method, pattern, 401)
        check(vm_daemon.request("GET", f"/v1/sandboxes/{sbx['id']}/ports/8999/"), "GET",
              pattern, 502)
    finally:
        srv.stop()


def test_every_route_was_checked_for_success_and_an_error(template):
    out = subprocess.check_output([str(DAEMON), "--print-routes"], text=True)
    missing = []
    for line in out.splitlines():
        method, pattern = line.split(" ", 1)
        statuses = {s for m, p, s in CHECKED if (m, p) == (method, pattern)}
        if not any(200 <= s < 300 for s in statuses) or not any(400 <= s < 500 for s in statuses):
            missing.append((method, pattern, sorted(statuses)))
    assert not missing, missing
