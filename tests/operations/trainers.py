"""Small trainers the tests start with `["{python}", "-c", CODE]`: each shows one behaviour."""

from __future__ import annotations

# Prints numbered steps, then exits 0.
STEPS = """
import time
for step in range(5):
    print("step %d loss %.3f" % (step, 1.0 / (step + 1)))
    time.sleep(0.05)
print("done")
"""

# Says something, then fails.
EXIT_3 = """
import sys
print("about to fail")
sys.exit(3)
"""

# Kills itself: an exit by signal (as the OOM killer would).
KILLED_BY_SIGNAL = """
import os, signal
print("goodbye")
os.kill(os.getpid(), signal.SIGKILL)
"""

# Records what the launch gave it (session, cwd, stdin, environment), then waits to be stopped.
PROBE = """
import hashlib, json, os, sys, time
probe = {
    "pid": os.getpid(),
    "sid": os.getsid(0),
    "pgid": os.getpgrp(),
    "cwd": os.getcwd(),
    "stdin": os.readlink("/proc/self/fd/0"),
    "marker": os.environ.get("RTRAIN_RUN_ID"),
    "unbuffered": os.environ.get("PYTHONUNBUFFERED"),
    "argv": sys.argv[1:],
    # Only a digest: the secret itself must not land in any file of the run.
    "secret_sha": hashlib.sha256(os.environ.get("TRAIN_TEST_SECRET", "").encode()).hexdigest(),
}
with open("probe.json.tmp", "w") as f:
    json.dump(probe, f)
os.rename("probe.json.tmp", "probe.json")
print("probed", flush=True)
time.sleep(60)
"""

# Runs until stopped; prints a heartbeat.
SLEEPER = """
import time
print("sleeping", flush=True)
while True:
    time.sleep(0.1)
"""

# A child that ignores SIGTERM; its pid lands in child.pid once the handler is in place.
STUBBORN_CHILD = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", '''
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open("child.pid.tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename("child.pid.tmp", "child.pid")
while True:
    time.sleep(0.1)
'''])
print("parent waiting", flush=True)
child.wait()
"""

# A child that leaves the run's session and process group (setsid) and lives on.
ESCAPING_CHILD = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", '''
import os, time
os.setsid()
with open("child.pid.tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename("child.pid.tmp", "child.pid")
while True:
    time.sleep(0.1)
'''])
print("parent sleeping", flush=True)
while True:
    time.sleep(0.1)
"""

# Writes ~20 MB of numbered lines as fast as it can, then exits 0.
FLOOD = """
import sys
out = sys.stdout.buffer
line = b"x" * 90
for i in range(220000):
    out.write(b"%08d %s\\n" % (i, line))
out.flush()
"""

# Writes numbered lines until the file `finish` appears: a log to tail across breaks.
TRICKLE = """
import os, sys, time
i = 0
while not os.path.exists("finish"):
    print("line %06d %s" % (i, "y" * 40), flush=True)
    i += 1
    time.sleep(0.005)
print("the end", flush=True)
"""

# Writes, then replaces train.log by a fresh file (like logrotate with create), writes on.
ROTATING = """
import os, time
print("before rotation 1", flush=True)
print("before rotation 2", flush=True)
while not os.path.exists("rotate"):
    time.sleep(0.02)
os.rename("train.log", "train.log.1")
fd = os.open("train.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
os.dup2(fd, 1)
os.dup2(fd, 2)
print("after rotation", flush=True)
"""

# Leaves outputs to fetch: a nested tree, an empty directory, and links.
OUTPUTS = """
import os
os.makedirs("model/shards", exist_ok=True)
os.makedirs("model/empty", exist_ok=True)
with open("model/weights.bin", "wb") as f:
    f.write(os.urandom(3 * 1024 * 1024 + 17))
with open("model/shards/part-0", "wb") as f:
    f.write(b"shard zero\\n")
with open("model/config.json", "w") as f:
    f.write('{"layers": 2}\\n')
os.symlink("weights.bin", "model/inner-link")
os.symlink("/etc/hostname", "leak")
os.makedirs("leaky", exist_ok=True)
with open("leaky/ok.txt", "w") as f:
    f.write("fine\\n")
os.symlink("/", "leaky/up")
print("wrote outputs")
"""


def slow_to_stop(cleanup_s: float, mark_term: bool = False) -> str:
    """Runs until stopped; on SIGTERM it takes `cleanup_s` to clean up, then exits 0: a stop
    still waiting when something goes wrong. `mark_term`: it first says so in a file `term`."""
    mark = '    open("term", "w").close()\n' if mark_term else ""
    return f"""
import signal, sys, time
def leave(*_):
{mark}    time.sleep({cleanup_s})
    sys.exit(0)
signal.signal(signal.SIGTERM, leave)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


def big_output(mib: int) -> str:
    """Writes `big.bin`, `mib` MiB of random bytes (large enough for a fault to land in the
    middle of fetching it), then exits 0."""
    return f"""
import os
with open("big.bin", "wb") as f:
    for _ in range({mib}):
        f.write(os.urandom(1024 * 1024))
print("wrote big.bin", flush=True)
"""


# A progress bar drawn with carriage returns that stops at 3/10, with no newline, until the
# file `finish` exists in its run dir.
HELD_BAR = r"""
import os, sys, time
for n in (1, 2, 3):
    sys.stdout.write("\r %d/10" % n)
    sys.stdout.flush()
while not os.path.exists("finish"):
    time.sleep(0.05)
sys.stdout.write("\r10/10\n")
"""
