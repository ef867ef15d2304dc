"""Checks of the guest images that `make images` built (images/README.md).

Reads the manifests in $PANDASTACK_CACHE/images (default
/var/cache/pandastack/images) and checks what they name without booting:
hashes, the initramfs contents and module order, the ext4 images (through
debugfs, read-only: nothing is mounted).  Then runs images/build.sh against
a scratch cache made of links to the real artifacts to check the cache
behaviour: an unchanged recipe builds nothing, a changed one rebuilds only
what it feeds, an interrupted build leaves nothing that looks valid, and a
second build waits for the lock.  Needs root and built images; skips
(saying why) without them.
"""
import fcntl
import hashlib
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
IMAGES = ROOT / "images"
CACHE = pathlib.Path(os.environ.get("PANDASTACK_CACHE", "/var/cache/pandastack")) / "images"
TEMPLATES = sorted(p.stem for p in (IMAGES / "templates").glob("*.conf"))
FIELDS = {
    "format": int, "name": str, "description": str, "kernel": str, "kernel_sha256": str,
    "kernel_release": str, "initramfs": str, "initramfs_sha256": str, "rootfs": str,
    "rootfs_key": str, "cmdline": str, "memory_mib": int, "vcpus": int, "warm": str,
    "warm_kernels": int, "key": str,
}

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="image builds need root"),
    pytest.mark.skipif(not all((CACHE / f"{t}.json").is_file() for t in TEMPLATES),
                       reason=f"no manifests in {CACHE}: run `make images` first"),
]


def manifest(name):
    return json.loads((CACHE / f"{name}.json").read_text())


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_cpio(path):
    """newc archive -> {name: (mode, rdevmajor, rdevminor, data)}."""
    entries = {}
    data = pathlib.Path(path).read_bytes()
    off = 0
    while True:
        hdr = data[off:off + 110]
        assert hdr[:6] == b"070701", f"bad newc magic at {off}"
        fields = [int(hdr[6 + 8 * i:14 + 8 * i], 16) for i in range(13)]
        mode, filesize, rmaj, rmin, namesize = fields[1], fields[6], fields[9], fields[10], fields[11]
        name = data[off + 110:off + 110 + namesize - 1].decode()
        off = (off + 110 + namesize + 3) & ~3
        if name == "TRAILER!!!":
            return entries
        entries[name] = (mode, rmaj, rmin, data[off:off + filesize])
        off = (off + filesize + 3) & ~3


def debugfs(image, request):
    r = subprocess.run(["debugfs", "-R", request, str(image)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.parametrize("name", TEMPLATES)
def test_manifest_fields_and_hashes(name):
    m = manifest(name)
    assert set(m) == set(FIELDS)
    for field, kind in FIELDS.items():
        assert isinstance(m[field], kind), field
    assert m["name"] == name
    for path in ("kernel", "initramfs", "rootfs"):
        assert os.path.isabs(m[path]) and os.path.isfile(m[path]), m[path]
    assert sha256(m["kernel"]) == m["kernel_sha256"]
    assert sha256(m["initramfs"]) == m["initramfs_sha256"]
    assert re.fullmatch(r"[0-9a-f]{64}", m["rootfs_key"])
    assert m["rootfs_key"][:16] in m["rootfs"]
    assert "console=ttyS0" in m["cmdline"] and "panic=-1" in m["cmdline"]
    assert m["memory_mib"] >= 256 and m["vcpus"] >= 1
    body = {k: v for k, v in m.items() if k != "key"}
    canon = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert hashlib.sha256(canon.encode()).hexdigest() == m["key"]
    # The kernel is an ELF with QEMU's PVH entry note (Xen note type 18).
    notes = subprocess.run(["readelf", "-n", m["kernel"]], capture_output=True, text=True).stdout
    assert re.search(r"^\s+Xen\s+\S+\s+Unknown note type: \(0x00000012\)", notes, re.M)


def test_warm_fields():
    if "code-interpreter" in TEMPLATES:
        warm = manifest("code-interpreter")["warm"]
        assert "pandas" in warm and "matplotlib.pyplot" in warm
        assert manifest("code-interpreter")["warm_kernels"] == 2    # the recipe's
    if "base" in TEMPLATES:
        assert manifest("base")["warm"] == ""
        assert manifest("base")["warm_kernels"] == 1                # the default


def test_initramfs_contents_and_module_order():
    m = manifest(TEMPLATES[0])
    files = read_cpio(m["initramfs"])
    mode, _, _, init = files["init"]
    assert mode & 0o170000 == 0o100000 and mode & 0o111
    assert init[:4] == b"\x7fELF"
    console = files["dev/console"]
    assert console[0] & 0o170000 == 0o020000 and console[1:3] == (5, 1)
    order = files["etc/pandastack/modules"][3].decode().split()
    names = [pathlib.Path(p).name[:-3] for p in order]
    for want in ("virtio_ring", "virtio", "virtio_mmio", "virtio_blk", "virtio_console",
                 "virtio-rng", "failover", "net_failover", "virtio_net"):
        assert want in names, want
    for path in order:
        assert path.lstrip("/") in files, path
        assert path.startswith(f"/lib/modules/{m['kernel_release']}/")
    # Every module's dependencies (depmod's modules.dep) come before it.
    dep_text = files[f"lib/modules/{m['kernel_release']}/modules.dep"][3].decode()
    pos = {p.split(f"/lib/modules/{m['kernel_release']}/")[1]: i for i, p in enumerate(order)}
    for line in dep_text.splitlines():
        mod, _, deps = line.partition(":")
        for d in deps.split():
            assert pos[d] < pos[mod], f"{d} must load before {mod}"


@pytest.mark.parametrize("name", TEMPLATES)
def test_rootfs_image(name):
    m = manifest(name)
    img = m["rootfs"]
    r = subprocess.run(["e2fsck", "-f", "-n", img], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    head = subprocess.run(["dumpe2fs", "-h", img], capture_output=True, text=True).stdout
    fields = dict(l.split(":", 1) for l in head.splitlines() if ":" in l)
    free = int(fields["Free blocks"]) * int(fields["Block size"])
    assert free >= 1 << 30, f"only {free >> 20} MiB free"
    assert fields["Filesystem volume name"].strip() == "pandastack"
    assert debugfs(img, "cat /etc/hostname").strip()
    assert "Type: directory" in debugfs(img, "stat /workspace")
    info = json.loads(debugfs(img, "cat /etc/pandastack/image.json"))
    assert info == {"name": name, "rootfs_key": m["rootfs_key"]}
    assert "Type: regular" in debugfs(img, "stat /usr/bin/python3.11")
    assert debugfs(img, "cat /etc/resolv.conf") == "nameserver 10.0.2.3\n"
    # pip for Debian's externally managed Python, in every image
    pip_conf = debugfs(img, "cat /etc/pip.conf")
    assert re.search(r"(?m)^\[global\]$", pip_conf), pip_conf
    assert re.search(r"(?m)^break-system-packages = true$", pip_conf), pip_conf
    assert "Type: regular" in debugfs(img, "stat /usr/lib/python3.11/EXTERNALLY-MANAGED")
    for path in ("/usr/bin/pip", "/usr/bin/pip3", "/usr/lib/python3.11/venv/__init__.py",
                 "/usr/lib/python3.11/ensurepip/__init__.py"):
        assert "Type: regular" in debugfs(img, f"stat {path}"), path
    dist = debugfs(img, "ls -l /usr/lib/python3/dist-packages")
    assert re.search(r"\spip\s*$", dist, re.M)
    if name == "base":
        assert "IPython" not in dist
    if name == "code-interpreter":
        for pkg in ("IPython", "ipykernel", "numpy", "pandas", "matplotlib", "plotly"):
            assert re.search(rf"\s{pkg}\s*$", dist, re.M), pkg
        assert "Type: symlink" in debugfs(img, "stat /usr/bin/python")
        assert "fontlist-v" in debugfs(img, "ls -l /root/.cache/matplotlib")
        assert "Type: regular" in debugfs(img, "stat /usr/share/jupyter/kernels/python3/kernel.json")
        # the tools agents reach for (images/README.md), and what pip needs
        # to build packages that compile
        for tool in ("ps", "top", "curl", "wget", "git", "unzip", "file", "less", "gcc", "g++",
                     "make"):
            # a file or a link (gcc -> gcc-12)
            assert re.search(r"Type: (regular|symlink)", debugfs(img, f"stat /usr/bin/{tool}")), tool
        assert "Type: regular" in debugfs(img, "stat /usr/include/python3.11/Python.h")


# --- cache behaviour, on a scratch cache of links to the real artifacts -------

@pytest.fixture
def scratch(tmp_path):
    """(images folder copy, scratch cache, agent) for build.sh runs."""
    images = tmp_path / "images"
    shutil.copytree(IMAGES, images)
    cache = tmp_path / "cache" / "images"
    cache.mkdir(parents=True)
    for a in CACHE.iterdir():
        if a.name.startswith(("kernel-", "initramfs-", "rootfs-")):
            (cache / a.name).symlink_to(a)
        elif a.name.endswith(".json"):
            shutil.copy(a, cache / a.name)
    if (CACHE / ".apt").is_dir():
        shutil.copytree(CACHE / ".apt", cache / ".apt")
    # The agent the manifests were built with: the initramfs's /init.
    agent = tmp_path / "agent"
    agent.write_bytes(read_cpio(manifest(TEMPLATES[0])["initramfs"])["init"][3])
    agent.chmod(0o755)
    return images, cache, agent


def build(images, cache, agent, *args, timeout=120):
    r = subprocess.run([str(images / "build.sh"), "--cache", str(cache), "--agent", str(agent), *args],
                       capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def test_unchanged_recipe_builds_nothing(scratch):
    images, cache, agent = scratch
    # The first run finds every artifact (through the links) and rewrites
    # the manifests only because their paths name the scratch cache.
    rc, out = build(images, cache, agent)
    assert rc == 0, out
    assert "building" not in out and "packing" not in out, out
    before = {t: (cache / f"{t}.json").read_bytes() for t in TEMPLATES}
    mtimes = {t: (cache / f"{t}.json").stat().st_mtime_ns for t in TEMPLATES}
    rc, out = build(images, cache, agent)
    assert rc == 0, out
    assert "building" not in out and "packing" not in out and "wrote" not in out, out
    assert out.count("up to date") == len(TEMPLATES), out
    for t in TEMPLATES:
        assert (cache / f"{t}.json").read_bytes() == before[t]
        assert (cache / f"{t}.json").stat().st_mtime_ns == mtimes[t]


def test_machine_change_rewrites_only_the_manifest(scratch):
    images, cache, agent = scratch
    name = TEMPLATES[0]
    conf = images / "templates" / f"{name}.conf"
    old = manifest(name)
    conf.write_text(re.sub(r"(?m)^memory_mib = \d+", "memory_mib = 777", conf.read_text()))
    rc, out = build(images, cache, agent, name)
    assert rc == 0, out
    assert "building" not in out and "packing" not in out, out
    new = json.loads((cache / f"{name}.json").read_text())
    assert new["memory_mib"] == 777
    assert new["rootfs_key"] == old["rootfs_key"] and new["kernel_sha256"] == old["kernel_sha256"]
    assert new["key"] != old["key"]


def test_package_change_plans_only_that_rootfs(scratch):
    images, cache, agent = scratch
    name = TEMPLATES[0]
    conf = images / "templates" / f"{name}.conf"
    conf.write_text(conf.read_text() + "\npackages = less\n")
    rc, out = build(images, cache, agent, "--plan")
    assert rc == 0, out
    assert re.search(r"kernel: cached", out) and re.search(r"initramfs: cached", out), out
    assert re.search(rf"would build rootfs-{name}-", out), out
    assert len(re.findall(r"would build", out)) == 1, out
    for other in TEMPLATES[1:]:
        assert re.search(rf"rootfs {other}: cached", out), out
    # A new agent repacks the initramfs, and nothing else.
    other_agent = agent.parent / "agent2"
    other_agent.write_bytes(agent.read_bytes() + b"\0")
    conf.write_text(conf.read_text().replace("\npackages = less\n", "\n"))
    rc, out = build(images, cache, other_agent, "--plan")
    assert rc == 0, out
    assert re.findall(r"would build (\S+)", out) == [re.search(r"would build (initramfs-\S+)", out).group(1)]


def test_interrupted_build_leaves_nothing_valid(scratch):
    images, cache, agent = scratch
    name = TEMPLATES[0]
    conf = images / "templates" / f"{name}.conf"
    conf.write_text(conf.read_text() + "\npackages = less\n")
    before = sorted(p.name for p in cache.glob(f"rootfs-{name}-*"))
    manifest_before = (cache / f"{name}.json").read_bytes()
    p = subprocess.Popen([str(images / "build.sh"), "--cache", str(cache), "--agent", str(agent), name],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # Wait until mmdebstrap runs, then interrupt the build script.
    deadline = time.time() + 120
    while time.time() < deadline and not list((cache / ".tmp").glob(f"*/rootfs-{name}/tree")):
        time.sleep(0.2)
    assert list((cache / ".tmp").glob(f"*/rootfs-{name}/tree")), "the rootfs build never started"
    time.sleep(3)
    p.send_signal(signal.SIGTERM)
    # mmdebstrap finishes its own cleanup (unmounts, removes the tree) before
    # the build exits: generous on a loaded 2-core machine.
    out, _ = p.communicate(timeout=600)
    assert p.returncode != 0, out
    assert sorted(p.name for p in cache.glob(f"rootfs-{name}-*")) == before
    assert (cache / f"{name}.json").read_bytes() == manifest_before
    mounts = pathlib.Path("/proc/self/mounts").read_text()
    assert str(cache) not in mounts
    # No step (mmdebstrap, apt, dpkg) outlived the build.
    left = []
    for proc in pathlib.Path("/proc").glob("[0-9]*"):
        try:
            if str(cache).encode() in (proc / "cmdline").read_bytes():
                left.append(proc.name)
        except OSError:
            pass
    assert left == [], f"processes still using the scratch cache: {left}"
    # The original recipe is still fully cached, and the next build leaves
    # .tmp empty whatever the interrupted one left there.
    conf.write_text(conf.read_text().replace("\npackages = less\n", "\n"))
    rc, out = build(images, cache, agent, name)
    assert rc == 0 and "building" not in out, out
    assert list((cache / ".tmp").iterdir()) == []


def test_second_build_waits_for_the_lock(scratch):
    images, cache, agent = scratch
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        p = subprocess.Popen([str(images / "build.sh"), "--cache", str(cache), "--agent", str(agent)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(3)
        assert p.poll() is None, "build ran while another held the lock"
        fcntl.flock(lock, fcntl.LOCK_UN)
    out, _ = p.communicate(timeout=120)
    assert p.returncode == 0, out
    assert "waiting" in out, out
