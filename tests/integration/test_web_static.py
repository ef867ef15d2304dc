"""The dashboard's files served by pandastackd (src/daemon/http/web_static.c):
no key needed, content types, caching, the security headers of every answer,
and names that could reach outside the web directory."""
import http.client
import re

import pytest

from conftest import Daemon

SECRET = b"the secret outside the web directory\n"
INDEX = (b'<!doctype html><title>t</title><script src="/ui/app.K3V2X7QZ.js" defer></script>'
         b'<p>no &lt;script here</p>')


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """A daemon without VMs whose --web-dir holds a small dashboard, with a
    secret file beside it and ways to try to reach it."""
    root = tmp_path_factory.mktemp("web")
    (root / "cache").mkdir()
    site = root / "site"
    site.mkdir()
    (site / "index.html").write_bytes(INDEX)
    (site / "app.K3V2X7QZ.js").write_bytes(b"console.log(1)")
    (site / "frame.html").write_bytes(b'<!doctype html><title>f</title><script src="/ui/f.js">'
                                      b'</script>')
    (site / "style.css").write_bytes(b"body{}")
    (site / "notes.secret").write_bytes(b"unknown extension")
    (site / ".hidden.js").write_bytes(b"hidden")
    (site / "dir.js").mkdir()
    (root / "outside.js").write_bytes(SECRET)
    (site / "link.js").symlink_to(root / "outside.js")
    d = Daemon(root / "data", ["--pool-size", "0", "--web-dir", str(site)],
               cache=str(root / "cache")).start()
    d.root = root
    yield d
    d.stop()


def raw_get(d, path):
    """GET path as written (no client-side normalisation), without a key."""
    c = d.conn(timeout=30)
    c.putrequest("GET", path, skip_accept_encoding=True)
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    headers = {k.lower(): v for k, v in r.getheaders()}
    c.close()
    return r.status, headers, body


def nonce_of(h, body):
    """The nonce the page's policy names, after checking that each of its
    script tags carries it; and the body without it."""
    csp = [p.strip() for p in h["content-security-policy"].split(";")]
    scripts = [p for p in csp if p.startswith("script-src")]
    assert len(scripts) == 1 and re.fullmatch(r"script-src 'nonce-[A-Za-z0-9+/]{24}'", scripts[0]), csp
    nonce = scripts[0][len("script-src 'nonce-"):-1]
    tags = re.findall(rb"<script[^>]*>", body)
    assert tags and all(f' nonce="{nonce}"'.encode() in t for t in tags), tags
    return nonce, body.replace(f' nonce="{nonce}"'.encode(), b"")


def test_index_needs_no_key_and_has_the_app_policy(web):
    status, h, body = raw_get(web, "/")
    assert status == 200
    assert h["content-type"] == "text/html; charset=utf-8"
    assert h["x-content-type-options"] == "nosniff"
    assert h["referrer-policy"] == "no-referrer"
    assert h["cache-control"] == "no-cache"
    csp = [p.strip() for p in h["content-security-policy"].split(";")]
    assert "default-src 'self'" in csp
    assert "style-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "img-src 'self' data:" in csp and "object-src 'none'" in csp
    assert "worker-src 'none'" in csp
    assert "unsafe-inline" not in h["content-security-policy"]
    assert "unsafe-eval" not in h["content-security-policy"]
    # Scripts: only those with this answer's nonce.  'self' would also take
    # what a sandbox serves on the path form (/v1/sandboxes/{id}/ports/...),
    # which shares this origin.
    assert "'self'" not in next(p for p in csp if p.startswith("script-src"))
    nonce, page = nonce_of(h, body)
    assert page == INDEX  # the file, with nothing but the nonce added
    # a new nonce for each answer
    _, h2, body2 = raw_get(web, "/")
    assert nonce_of(h2, body2)[0] != nonce


def test_hashed_assets_are_immutable(web):
    status, h, body = raw_get(web, "/ui/app.K3V2X7QZ.js")
    assert status == 200 and body == b"console.log(1)"
    assert h["content-type"] == "text/javascript; charset=utf-8"
    assert h["cache-control"] == "public, max-age=31536000, immutable"
    status, h, _ = raw_get(web, "/ui/style.css")
    assert status == 200 and h["content-type"] == "text/css; charset=utf-8"
    assert h["cache-control"] == "no-cache"


def test_frame_page_is_always_sandboxed(web):
    status, h, body = raw_get(web, "/ui/frame.html")
    assert status == 200
    csp = [p.strip() for p in h["content-security-policy"].split(";")]
    assert csp[0] == "sandbox allow-scripts"          # no allow-same-origin
    assert "default-src 'none'" in csp
    assert "img-src data:" in csp and "frame-ancestors 'self'" in csp
    nonce_of(h, body)
    assert h["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("path", [
    "/ui/..", "/ui/%2e%2e", "/ui/..%2foutside.js", "/ui/%2e%2e%2foutside.js",
    "/ui/x%2f..%2f..%2foutside.js", "/ui/../outside.js", "/ui//outside.js",
    "/ui/link.js",            # a symbolic link to the secret
    "/ui/.hidden.js",         # a leading dot
    "/ui/notes.secret",       # an extension that is not served
    "/ui/dir.js",             # not a regular file
    "/ui/missing.js", "/ui/", "/ui", "/outside.js",
])
def test_names_outside_the_rules_are_404(web, path):
    status, h, body = raw_get(web, path)
    assert status == 404, (path, status, body)
    assert SECRET not in body
    assert h["x-content-type-options"] == "nosniff"
    assert "content-security-policy" in h


def test_the_probe_can_see_the_secret(web):
    """Positive control: the secret file and the link to it exist and are
    readable, so the 404s above are the server's refusal."""
    assert (web.root / "site" / "link.js").read_bytes() == SECRET
    assert (web.root / "site" / ".hidden.js").read_bytes() == b"hidden"


def test_dashboard_routes_refuse_other_methods(web):
    r = web.request("POST", "/", b"", key=None)
    assert r.status == 405 and r.error_code() == "method_not_allowed"


def test_missing_web_dir_says_how_to_build_it(daemon_factory, tmp_root):
    (tmp_root / "cache").mkdir()
    d = daemon_factory("nodash", ["--pool-size", "0", "--web-dir", str(tmp_root / "none")],
                       cache=str(tmp_root / "cache"))
    status, _, body = raw_get(d, "/")
    assert status == 404 and b"make web" in body
