"""The run's environment, built once per lock on the host: shipped into the run dir as
`rtrain-env` and run by the host python as the step after the GPU gate, before the setup.

    PYTHON rtrain-env WORKDIR LOCK CMD...

LOCK is a pip requirements file, or a uv project's `uv.lock` with its `pyproject.toml` beside
it under the name PYPROJECT (a uv project is built with `uv sync --frozen`). It keys a virtual
environment by the lock's bytes, this python and the platform, and finds it
in `WORKDIR/.cache/envs/KEY`, or builds it: in `.build-KEY-PID` beside it, under an flock of
`.KEY.lock` (a second run needing the same key waits and says so; the kernel frees the lock of
a builder that died), then renamed to KEY only once complete, so a failed or interrupted build
leaves nothing under the key. The venv sees the packages of this python (a multi-gigabyte
torch is never installed twice) unless the lock pins its own. The run dir's `rtrain-venv`
links to it, which is what `{python}` names and what `rtrain envs` counts as a run using it.
Then it execs CMD with the venv first on PATH. A failed build leaves `env_failed` in the run
dir: the requirement that failed, for the run's state. uv builds where the host has it on
PATH, or where it installs into `WORKDIR/.cache/uv` from the host's package index (once); pip
otherwise. While it builds, the run's `queued` file says which step and for how long so far.

Standard library only, and Python 3.8 and later: it runs on the far host.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time

LINK = "rtrain-venv"
FAILED = "env_failed"
QUEUED = "queued"
LAST_USED = ".rtrain-last-used"
ABOUT = ".rtrain-env"
# What the key is made of, besides the lock: another value here is another environment.
KEY_VERSION = b"rtrain-env 1\n"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
# A uv project's lock ships as `rtrain-uv.lock` with its pyproject.toml beside it.
UV_LOCK_SUFFIX = "uv.lock"
PYPROJECT = "rtrain-pyproject.toml"
# How often the state's "s so far" is brought up to date, and a line goes to the log.
TICK_S = 5.0
LOG_EVERY_S = 30.0
# After an index that had no uv, pip builds without asking it again for this long.
NO_UV_RETRY_S = 24 * 3600.0


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        sys.stderr.write("usage: rtrain-env WORKDIR LOCK CMD...\n")
        return 2
    workdir, lock_name, command = argv[0], argv[1], argv[2:]
    lock = _lock_bytes(lock_name)
    key = environment_key(lock)
    envs = os.path.join(workdir, ".cache", "envs")
    os.makedirs(envs, mode=0o700, exist_ok=True)
    final = os.path.join(envs, key)
    if not os.path.isdir(final):
        code = _build_once(envs, key, lock_name, lock)
        if code:
            return code
    else:
        say(f"environment {key} is ready (built before): nothing to install")
    _use(final)
    venv = os.path.join(os.getcwd(), LINK)
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = os.path.join(venv, "bin") + (os.pathsep + path if path else "")
    os.environ["VIRTUAL_ENV"] = venv
    os.environ.pop("PYTHONHOME", None)
    sys.stdout.flush()
    os.execvp(command[0], command)
    return 127  # not reached: execvp raises when it cannot run the program


def is_uv_project(lock_name: str) -> bool:
    return lock_name.endswith(UV_LOCK_SUFFIX)


def _lock_bytes(lock_name: str) -> bytes:
    """What the key hashes: the requirements file, or a uv project's pyproject.toml and lock
    (the pyproject says which groups and python the lock serves)."""
    with open(lock_name, "rb") as lock_file:
        lock = lock_file.read()
    if not is_uv_project(lock_name):
        return lock
    with open(os.path.join(os.path.dirname(lock_name) or ".", PYPROJECT), "rb") as project:
        return identity_of(lock, project.read())


def identity_of(lock: bytes, pyproject: bytes | None) -> bytes:
    """The bytes `environment_key` hashes for a lock: a requirements file as it is, a uv
    project's lock with its pyproject.toml (the daemon asks for keys with it too)."""
    if pyproject is None:
        return lock
    return b"uv.lock\0" + pyproject + b"\0" + lock


def environment_key(lock: bytes) -> str:
    """The lock, this python (its version and where it lives) and the platform, hashed."""
    identity = "\n".join(
        [
            sys.version,
            os.path.realpath(sys.executable),
            sys.prefix,
            sysconfig.get_platform(),
            platform.machine(),
        ]
    )
    digest = hashlib.sha256(KEY_VERSION + lock + b"\0" + identity.encode())
    return digest.hexdigest()[:20]


def say(line: str) -> None:
    sys.stdout.write(f"rtrain: {line}\n")
    sys.stdout.flush()


class Progress:
    """The step under way, in the run's `queued` file (its state: `queued (building
    environment KEY: installing 3 requirement(s) with uv, 12 s so far)`), brought up to date
    every few seconds by a thread, with a line in the log now and then for a follower."""

    def __init__(self) -> None:
        import threading

        self._lock = threading.Lock()
        self._step: str | None = None
        self._since = time.time()
        self._logged = self._since
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)
        self._thread.start()

    def step(self, words: str) -> None:
        with self._lock:
            self._step = words
            self._since = self._logged = time.time()
            _queued(words)
        say(words)

    def done(self) -> None:
        with self._lock:
            self._step = None
        self._stop.set()
        _unqueued()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            with self._lock:
                if self._step is None:
                    return
                now = time.time()
                so_far = f"{self._step}, {now - self._since:.0f} s so far"
                _queued(so_far)
                if now - self._logged >= LOG_EVERY_S:
                    self._logged = now
                    say(so_far)


def _build_once(envs: str, key: str, lock_name: str, lock: bytes) -> int:
    progress = Progress()
    try:
        return _build_when_free(envs, key, lock_name, lock, progress)
    finally:
        progress.done()


def _build_when_free(envs: str, key: str, lock_name: str, lock: bytes, progress: Progress) -> int:
    import fcntl

    with open(os.path.join(envs, f".{key}.lock"), "w") as held:
        try:
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            progress.step(f"waiting for environment {key}: another run is building it")
            fcntl.flock(held, fcntl.LOCK_EX)
        final = os.path.join(envs, key)
        if os.path.isdir(final):
            say(f"environment {key} is ready (another run built it): nothing to install")
            return 0
        return _build(envs, key, lock_name, lock, progress)


def _build(envs: str, key: str, lock_name: str, lock: bytes, progress: Progress) -> int:
    # Whatever an earlier builder of this key left is stale: the lock is ours.
    for name in os.listdir(envs):
        if name.startswith(f".build-{key}-"):
            shutil.rmtree(os.path.join(envs, name), ignore_errors=True)
    building = os.path.join(envs, f".build-{key}-{os.getpid()}")
    began = time.time()
    uv = find_uv(os.path.dirname(envs), progress)
    tool = "uv" if uv else "pip"
    uv_project = is_uv_project(lock_name)
    if uv_project and not uv:
        return _failed_before(
            "a uv.lock is built with uv, and this host has none (not on PATH, and its package "
            "index has none to install); add uv to the host, or ship a requirements.txt "
            "(uv export --no-hashes > requirements.txt)"
        )
    what = "uv.lock" if uv_project else f"{len(_requirement_lines(lock))} requirement(s)"
    progress.step(f"building environment {key} ({tool}, {what})")

    def interrupted(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        signal.signal(getattr(signal, name), interrupted)
    done = False
    try:
        output: list[str] = []
        code = _make_venv(building, uv, output)
        if not code:
            verb = "syncing uv.lock" if uv_project else f"installing {what}"
            progress.step(f"building environment {key}: {verb} with {tool}")
            if uv_project:
                assert uv is not None
                code = _sync(building, uv, os.path.abspath(lock_name), output)
            else:
                code = _install(building, uv, os.path.abspath(lock_name), output)
        if code:
            _failed(b"" if uv_project else lock, output, code)
            return code
        _relocate(building, os.path.join(envs, key))
        seconds = time.time() - began
        _about(building, key, tool, seconds)
        os.rename(building, os.path.join(envs, key))
        done = True
        say(f"environment {key} built in {seconds:.1f} s with {tool}")
        return 0
    finally:
        if not done:
            shutil.rmtree(building, ignore_errors=True)


def _make_venv(building: str, uv: str | None, output: list[str]) -> int:
    if uv:
        argv = [uv, "venv", "--quiet", "--system-site-packages", "--python", sys.executable]
        code = _run([*argv, building], output)
    else:
        argv = [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip"]
        code = _run([*argv, building], output)
    if code:
        return code
    _layer_on_this_python(building)
    return 0


def _layer_on_this_python(building: str) -> None:
    """A python that is itself a venv (where torch often lives) hands `--system-site-packages`
    its own base's packages, not its own: a .pth file adds its own, behind the venv's."""
    if sys.prefix == getattr(sys, "base_prefix", sys.prefix):
        return
    mine = []
    for name in ("purelib", "platlib"):
        path = sysconfig.get_paths()[name]
        if path not in mine:
            mine.append(path)
    version = "python{}.{}".format(*sys.version_info[:2])
    site = os.path.join(building, "lib", version, "site-packages")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "rtrain-base-python.pth"), "w") as pth:
        pth.write("".join(path + "\n" for path in mine))


def _install(building: str, uv: str | None, lock_path: str, output: list[str]) -> int:
    python = os.path.join(building, "bin", "python")
    if uv:
        return _run([uv, "pip", "install", "--python", python, "-r", lock_path], output, _uv_env())
    return _pip_install(python, ["-r", lock_path], output)


def _pip_install(python: str, what: list[str], output: list[str]) -> int:
    """pip of `python` (the base python's, seen through the system site; ensurepip where
    there is none) installs `what`."""
    if _run([python, "-m", "pip", "--version"], []):
        code = _run([python, "-m", "ensurepip", "--default-pip"], output)
        if code:
            return code
    argv = [python, "-m", "pip", "install", "--disable-pip-version-check", "--progress-bar"]
    return _run([*argv, "off", *what], output)


def _sync(building: str, uv: str, lock_path: str, output: list[str]) -> int:
    """`uv sync --frozen` of the project's lock into the venv, without the project itself
    (the run's code changes run by run; it runs from the run directory)."""
    project = os.path.join(building, ".rtrain-project")
    os.makedirs(project)
    shutil.copyfile(lock_path, os.path.join(project, "uv.lock"))
    shutil.copyfile(
        os.path.join(os.path.dirname(lock_path), PYPROJECT), os.path.join(project, "pyproject.toml")
    )
    env = dict(_uv_env(), UV_PROJECT_ENVIRONMENT=building)
    env.pop("VIRTUAL_ENV", None)
    argv = [uv, "sync", "--frozen", "--no-install-project", "--project", project]
    code = _run([*argv, "--python", os.path.join(building, "bin", "python")], output, env)
    shutil.rmtree(project, ignore_errors=True)
    return code


def _uv_env() -> dict[str, str]:
    """uv trusting the certificates pip trusts (the system's, where a proxy of the site signs
    the index's), unless the host's settings say otherwise: by default uv has its own."""
    env = dict(os.environ)
    if "UV_SYSTEM_CERTS" not in env and "UV_NATIVE_TLS" not in env:
        env["UV_SYSTEM_CERTS"] = "1"  # uv 0.9 and later
        env["UV_NATIVE_TLS"] = "1"  # its name before
    return env


def find_uv(cache: str, progress: Progress) -> str | None:
    """The host's uv, else the one rtrain installed into the cache, else one installed there
    now from the host's package index (pip install uv into a venv of its own); None when the
    index has none (pip builds then; asked again a day later)."""
    found = shutil.which("uv")
    if found:
        return found
    import fcntl

    place = os.path.join(cache, "uv")
    uv = os.path.join(place, "bin", "uv")
    none = os.path.join(cache, ".uv-none")
    with open(os.path.join(cache, ".uv.lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if os.access(uv, os.X_OK):
            return uv
        try:
            if time.time() - os.path.getmtime(none) < NO_UV_RETRY_S:
                return None
        except OSError:
            pass
        progress.step("installing uv into the host's cache (pip install uv)")
        # What an earlier installer left (killed midway) is stale: the lock is ours.
        for name in os.listdir(cache):
            if name.startswith(".uv-build-"):
                shutil.rmtree(os.path.join(cache, name), ignore_errors=True)
        building = os.path.join(cache, f".uv-build-{os.getpid()}")
        output: list[str] = []
        try:
            code = _make_venv(building, None, output)
            if not code:
                code = _pip_install(os.path.join(building, "bin", "python"), ["uv"], output)
            if code or not os.access(os.path.join(building, "bin", "uv"), os.X_OK):
                last = next((x.strip() for x in reversed(output) if x.strip()), "")
                say(
                    f"uv could not be installed from the host's package index ({last}): "
                    "building with pip"
                )
                with open(none, "w") as mark:
                    mark.write(last + "\n")
                return None
            os.rename(building, place)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    say(f"uv installed into {place}")
    return uv


def _run(argv: list[str], output: list[str], env: dict[str, str] | None = None) -> int:
    """Runs argv with its lines copied to the log (the run's train.log) and kept in `output`
    (the last 400), so a failure can name its requirement."""
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
    except OSError as error:
        output.append(f"cannot run {argv[0]}: {error.strerror}")
        say(output[-1])
        return 127
    assert process.stdout is not None
    for raw in process.stdout:
        line = raw.decode(errors="replace")
        sys.stdout.write(line)
        sys.stdout.flush()
        output.append(line.rstrip("\n"))
        del output[:-400]
    return process.wait() or 0


def _requirement_lines(lock: bytes) -> list[tuple[int, str]]:
    """(line number, text) of each requirement of a pip requirements file."""
    found = []
    for number, raw in enumerate(lock.decode(errors="replace").splitlines(), 1):
        text = raw.split(" #", 1)[0].strip()
        if text and not text.startswith(("#", "-")):
            found.append((number, text))
    return found


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def failing_requirement(lock: bytes, output: list[str]) -> str:
    """The requirement the tool's error names (`line 3: nosuch==1.0: <the error>`), else the
    tool's last error line."""
    errors = [
        line.strip()
        for line in output
        if re.search(r"\berror\b|×|╰─▶|not found|No matching", line, re.IGNORECASE)
    ]
    said = errors[-1] if errors else next((x.strip() for x in reversed(output) if x.strip()), "")
    text = _normal(" ".join(errors or output[-20:]))
    for number, requirement in _requirement_lines(lock):
        match = _NAME.match(requirement)
        name = re.escape(_normal(match[1])) if match else None
        if name and re.search(rf"(?<![a-z0-9-]){name}(?![a-z0-9])", text):
            return f"line {number}: {requirement}: {said}"
    return said or "the install failed"


def _failed_before(why: str) -> int:
    """A build that cannot begin: said, and kept for the run's state."""
    say(f"the environment could not be built: {why}")
    _write_failed(why)
    return 1


def _own(name: str) -> str:
    """Where the run keeps its file `name`: its .rtrain/ (lib/own_files.sh's own_dir), which
    no file of the trainer's reaches; here where there is none (env_check.sh's scratch dir,
    or a run of the layout before .rtrain/meta.json)."""
    return os.path.join(".rtrain", name) if os.path.isfile(".rtrain/meta.json") else name


def _write_failed(why: str) -> None:
    path = _own(FAILED)
    with open(path + ".tmp", "w") as failed:
        failed.write(" ".join(why.split())[:280] + "\n")
    os.rename(path + ".tmp", path)


def _failed(lock: bytes, output: list[str], code: int) -> None:
    why = failing_requirement(lock, output)
    say(f"the environment could not be built (exit {code}): {why}")
    _write_failed(why)


def _relocate(building: str, final: str) -> None:
    """The venv's scripts name the place it was built in; they name its final place."""
    old, new = building.encode(), final.encode()
    bin_dir = os.path.join(building, "bin")
    for name in os.listdir(bin_dir):
        path = os.path.join(bin_dir, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "rb") as script:
            text = script.read()
        if old in text:
            with open(path + ".tmp", "wb") as script:
                script.write(text.replace(old, new))
            shutil.copymode(path, path + ".tmp")
            os.rename(path + ".tmp", path)
    cfg = os.path.join(building, "pyvenv.cfg")
    with open(cfg, "rb") as read:
        text = read.read()
    with open(cfg, "wb") as write:
        write.write(text.replace(old, new))


def _about(building: str, key: str, tool: str, seconds: float) -> None:
    """What `rtrain envs` shows of it: one `name value` line each."""
    with open(os.path.join(building, ABOUT), "w") as about:
        about.write(f"key {key}\n")
        about.write(f"python {sys.executable}\n")
        about.write(f"tool {tool}\n")
        about.write(f"built_at {int(time.time())}\n")
        about.write(f"build_seconds {seconds:.1f}\n")


def _use(final: str) -> None:
    """The run dir's link to the environment, and its last use (epoch seconds)."""
    used = os.path.join(final, LAST_USED)
    fresh = f"{used}.{os.getpid()}"
    with open(fresh, "w") as stamp:
        stamp.write(f"{int(time.time())}\n")
    os.rename(fresh, used)
    if os.path.lexists(LINK):
        os.remove(LINK)
    os.symlink(final, LINK)


def _queued(why: str) -> None:
    """The run's state says what it waits for (`queued (building environment ...)`)."""
    path = _own(QUEUED)
    with open(path + ".env", "w") as queued:
        queued.write(why + "\n")
    os.rename(path + ".env", path)


def _unqueued() -> None:
    try:
        os.remove(_own(QUEUED))
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
