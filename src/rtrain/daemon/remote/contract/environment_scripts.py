"""The environments' scripts: envs.sh (the environments a work directory caches, and their
removal) and env_check.sh (preflight's build ahead), docs/environments.md."""

from __future__ import annotations

import msgspec

from .answers import Answer, Exit, Lines, Runner, as_float, as_int


class CachedEnvironment(msgspec.Struct, frozen=True, kw_only=True):
    """One `env` line: sizes in KiB, times in epoch seconds (None: not said)."""

    key: str
    kib: int
    last_used: float | None
    built_at: float | None
    build_seconds: float | None
    tool: str | None
    python: str | None
    runs: list[str]


class EnvironmentListing(Answer, frozen=True, kw_only=True):
    environments: list[CachedEnvironment]
    building: list[str]

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK


class EnvironmentsCollected(Answer, frozen=True, kw_only=True):
    """`freed KIB ENVIRONMENTS`; None values when the script did not say."""

    freed_kib: int | None
    removed: int | None

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and None not in (self.freed_kib, self.removed)


def _word(value: str) -> str | None:
    return None if value in ("", "-") else value


async def list_environments(transport: Runner, workdir: str) -> EnvironmentListing:
    done = await transport.run("envs", [workdir, "list"], timeout=120)
    lines = Lines(done.stdout)
    found = []
    for row in lines.rows("env"):
        if len(row) < 8:
            continue
        key, kib, used, built, seconds, tool, python, runs = row[:8]
        found.append(
            CachedEnvironment(
                key=key,
                kib=as_int(kib) or 0,
                last_used=as_float(_word(used)),
                built_at=as_float(_word(built)),
                build_seconds=as_float(_word(seconds)),
                tool=_word(tool),
                python=_word(python),
                runs=[] if runs == "-" else runs.split(","),
            )
        )
    return EnvironmentListing(
        environments=found,
        building=[row[0] for row in lines.rows("building") if row],
        exit=done.returncode,
        error_text=done.error_text,
    )


async def collect_environments(transport: Runner, workdir: str) -> EnvironmentsCollected:
    done = await transport.run("envs", [workdir, "gc"], timeout=600)
    freed = (Lines(done.stdout).last("freed") or []) + [""] * 2
    return EnvironmentsCollected(
        freed_kib=as_int(freed[0]),
        removed=as_int(freed[1]),
        exit=done.returncode,
        error_text=done.error_text,
    )


class EnvironmentFiles(msgspec.Struct, frozen=True, kw_only=True):
    """A lock as env_check.sh writes it: its name in the scratch folder, its bytes, and a uv
    project's pyproject.toml."""

    name: str
    content: bytes
    pyproject: bytes | None = None


class EnvironmentChecked(Answer, frozen=True, kw_only=True):
    """env_check.sh: `built KEY SECONDS TOOL`, `ready KEY` or `failed WHY`."""

    key: str | None = None
    built_seconds: float | None = None
    tool: str | None = None
    failed: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit == Exit.OK and self.key is not None


async def check_environment(
    transport: Runner, workdir: str, python: str, builder: bytes, lock: EnvironmentFiles
) -> EnvironmentChecked:
    project = lock.pyproject or b""
    stdin = f"{len(builder)} {len(project)}\n".encode() + builder + project + lock.content
    args = [workdir, python, lock.name]
    done = await transport.run("env_check", args, stdin=stdin, timeout=3600)
    lines = Lines(done.stdout)
    answer = EnvironmentChecked(exit=done.returncode, error_text=done.error_text)
    built = lines.last("built")
    if built is not None and len(built) >= 3:
        return msgspec.structs.replace(
            answer, key=built[0], built_seconds=as_float(built[1]), tool=built[2]
        )
    ready = lines.value("ready")
    if ready:
        return msgspec.structs.replace(answer, key=ready)
    return msgspec.structs.replace(answer, failed=lines.value("failed"))
