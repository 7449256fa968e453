"""Drives fpc through the faults a careless or hostile user meets.

Usage: fpc_faults.py FPC MODEL WORKDIR

MODEL is a small model source (a library of it compiles in seconds). Each
scenario prints `ok: <what>` when fpc behaved, or raises, which fails the
test with the reason. Waits are bounded.
"""

import os
import resource
import shutil
import signal
import subprocess
import sys
import time

FPC, MODEL, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
TIMEOUT = 120  # seconds any one fpc call may take


def fpc(*args, env=None, preexec=None, expect=0):
    """Runs fpc; checks its exit status; returns its stderr."""
    result = subprocess.run([FPC, *args], capture_output=True, text=True,
                            env=env, preexec_fn=preexec, timeout=TIMEOUT)
    if result.returncode != expect:
        raise SystemExit(f"fpc {' '.join(args)}: exit {result.returncode}, "
                         f"expected {expect}\n{result.stderr}")
    return result.stderr


def expect_in(text, needle, what):
    if needle not in text:
        raise SystemExit(f"{what}: expected {needle!r} in:\n{text}")


def path(*parts):
    return os.path.join(WORK, *parts)


def read(name):
    with open(name, "rb") as f:
        return f.read()


os.makedirs(WORK, exist_ok=True)
source = path("model.fp")
shutil.copy(MODEL, source)
original = read(source)
cache = path("cache")

# 1. An output that is the input, directly or through a link, is refused
#    and the source stays as it was.
os.symlink("model.fp", path("link.fp"))
os.link(source, path("hard.fp"))
for output in (source, path("link.fp"), path("hard.fp")):
    for emit in ("--emit=mlir", "--emit=so"):
        err = fpc(source, emit, "-o", output, "--no-cache", expect=1)
        expect_in(err, "is the input", f"-o {output}")
if read(source) != original:
    raise SystemExit("the source changed")
print("ok: an output that is the input is refused; the source is intact")

# 2. The library replaces the output by a rename: a new file, while a
#    reader of the old one (a trainer with it loaded) keeps reading the old
#    bytes in full.
library = path("model.so")
fpc(source, "-o", library, "--cache-dir", cache)
first = read(library)
before = os.stat(library).st_ino
with open(library, "rb") as reader:
    fpc(source, "-o", library, "--cache-dir", cache)
    if reader.read() != first:
        raise SystemExit("a reader of the old library saw it change")
if os.stat(library).st_ino == before:
    raise SystemExit("the library was rewritten in place")
print("ok: a rebuilt library replaces the old one by a rename")

# 3. A write that fails (the file-size limit stands in for a full disk)
#    leaves the previous library intact and no temporary file behind.
def small_files():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


err = fpc(source, "-o", library, "--cache-dir", cache, preexec=small_files,
          expect=1)
expect_in(err, "cannot write", "a failing write")
if read(library) != first:
    raise SystemExit("a failed write changed the previous library")
leftovers = [n for n in os.listdir(WORK) if ".tmp-" in n]
if leftovers:
    raise SystemExit(f"temporary files left behind: {leftovers}")
print("ok: a failed write keeps the previous library; no temporary is left")

# 4. A signal stops fpc, the compiler it runs, and removes its temporaries.
compiler = path("slow-c++")
with open(compiler, "w") as f:
    f.write("#!/bin/sh\necho $$ > \"$FAULTS_PID\"\nexec sleep 600\n")
os.chmod(compiler, 0o755)
for sig in (signal.SIGTERM, signal.SIGINT):
    tmp = path(f"tmp-{sig.name}")
    os.makedirs(tmp)
    pid_file = path(f"compiler-{sig.name}.pid")
    env = dict(os.environ, CXX=compiler, TMPDIR=tmp, FAULTS_PID=pid_file)
    proc = subprocess.Popen([FPC, source, "-o", path("slow.so"), "--no-cache"],
                            env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT
    while not (os.path.exists(pid_file) and os.path.getsize(pid_file)):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the compiler did not start: {proc.stderr.read()}")
        time.sleep(0.05)
    child = int(read(pid_file))
    proc.send_signal(sig)
    try:
        status = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise SystemExit(f"fpc ran on 10 s after {sig.name}")
    if status == 0:
        raise SystemExit(f"fpc exited 0 after {sig.name}")
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        raise SystemExit(f"the compiler outlived fpc after {sig.name}")
    if os.listdir(tmp):
        raise SystemExit(f"temporaries left after {sig.name}: {os.listdir(tmp)}")
    if os.path.exists(path("slow.so")):
        raise SystemExit(f"a library was written after {sig.name}")
    print(f"ok: {sig.name} stops fpc and its compiler and removes its temporaries")

# 5. A cache entry is used only when it is what was stored: a truncated,
#    empty, garbage or unhashed entry, or another configuration's entry with
#    its own hash, is rebuilt with a warning.
entries = [n for n in os.listdir(cache) if n.endswith(".so")]
if len(entries) != 1 or not os.path.exists(os.path.join(cache, entries[0] + ".sha256")):
    raise SystemExit(f"expected one entry with its hash, found {os.listdir(cache)}")
entry = os.path.join(cache, entries[0])
good = read(entry)


def rebuilt(damage, reason):
    damage()
    out = path("rebuilt.so")
    err = fpc(source, "-o", out, "--cache-dir", cache)
    expect_in(err, "warning: ignoring the cached library", reason)
    expect_in(err, reason, reason)
    if b'"d_model":4,' not in read(out) or len(read(out)) != len(good):
        raise SystemExit(f"{reason}: the rebuilt library is not this model's")
    if read(entry) != read(out):
        raise SystemExit(f"{reason}: the entry was not rewritten")


def write_entry(data):
    with open(entry, "wb") as f:
        f.write(data)


rebuilt(lambda: write_entry(good[: len(good) // 2]), "does not match the hash")
rebuilt(lambda: write_entry(b""), "does not match the hash")
rebuilt(lambda: write_entry(b"\x7fELF garbage" * 100), "does not match the hash")
rebuilt(lambda: os.remove(entry + ".sha256"), "no content hash")
other_cache = path("other-cache")
fpc(source, "--set", "d_model=8", "-o", path("wide.so"), "--cache-dir",
    other_cache)
(other,) = [n for n in os.listdir(other_cache) if n.endswith(".so")]


def swap():
    shutil.copy(os.path.join(other_cache, other), entry)
    shutil.copy(os.path.join(other_cache, other + ".sha256"), entry + ".sha256")


rebuilt(swap, "not the library of this model and configuration")
print("ok: damaged or swapped cache entries are rebuilt with a warning")
