"""`--require`: the installed versions the far python reported, judged here with `packaging`.

The far side only reads versions (importlib.metadata, standard library), so a host python
without `packaging` is checked by the same rules pip uses, evaluated in the daemon.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from rtrain.daemon.remote.contract.preflight_scripts import PreflightReport
from rtrain.protocol.messages import Finding, PackageCheck


@dataclass
class PackageVerdict:
    checks: list[PackageCheck] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


# Asked about on every preflight: what `rtrain tensorboard` and `rtrain kernel` run on the host.
TRACKER_DISTS = {"tensorboard": "rtrain tensorboard", "ipykernel": "rtrain kernel"}


def probe_names(requires: list[str]) -> list[str]:
    """The distribution names to ask the far python about, each once."""
    names: list[str] = []
    for text in [*requires, *TRACKER_DISTS]:
        name = canonicalize_name(Requirement(text).name)
        if name not in names:
            names.append(name)
    return names


def _pip(python: str, requirement: str) -> str:
    # The python is validated to safe characters, and a leading ~/ must stay unquoted.
    return f"{python} -m pip install {shlex.quote(requirement)}"


def judge_packages(python: str, requires: list[str], report: PreflightReport) -> PackageVerdict:
    verdict = PackageVerdict()
    if not requires:
        return verdict
    if not report.python_ok or report.dists_unchecked:
        why = f"{python} is not usable" if not report.python_ok else "the probe did not finish"
        for text in requires:
            verdict.checks.append(
                PackageCheck(
                    requirement=text,
                    name=Requirement(text).name,
                    ok=False,
                    problem=f"not checked: {why}",
                )
            )
        return verdict
    fixes: list[str] = []
    for text in requires:
        check = _check(python, text, report)
        if not check.ok:
            check.fix = _pip(python, text)
            fixes.append(text)
            verdict.reasons.append(f"{check.problem}; fix: {check.fix}")
        elif check.problem:
            verdict.findings.append(Finding("packages", check.problem, "warning"))
        verdict.checks.append(check)
    met = [c for c in verdict.checks if c.ok and c.installed]
    if met:
        verdict.findings.append(
            Finding("packages", ", ".join(f"{c.name} {c.installed}" for c in met))
        )
    if len(fixes) > 1:
        verdict.findings.append(
            Finding(
                "packages",
                f"to install them all: {python} -m pip install "
                + " ".join(shlex.quote(f) for f in fixes),
                "info",
            )
        )
    return verdict


def _check(python: str, text: str, report: PreflightReport) -> PackageCheck:
    """One requirement against what the far python has installed."""
    requirement = Requirement(text)
    name = requirement.name
    if requirement.marker is not None and report.python_env:
        if not requirement.marker.evaluate(dict(report.python_env)):
            return PackageCheck(requirement=text, name=name, ok=True, problem=None)
    installed = report.dists.get(canonicalize_name(name))
    check = PackageCheck(requirement=text, name=name, ok=True, installed=installed)
    if installed is None:
        check.ok = False
        check.problem = f"{name} is not installed in {python}"
    elif installed == "?":
        check.installed = None
        check.problem = f"the version of {name} in {python} cannot be read"
    else:
        try:
            if not requirement.specifier.contains(Version(installed), prereleases=True):
                check.ok = False
                check.problem = (
                    f"{name} {installed} is installed in {python}, "
                    f"{requirement.specifier} is needed"
                )
        except InvalidVersion:
            check.problem = f"{name} {installed} has a version pip cannot compare"
    return check


def tracker_findings(python: str, report: PreflightReport) -> list[Finding]:
    """Whether the python has what `rtrain tensorboard` and `rtrain kernel` run: one line."""
    if not report.python_ok or report.dists_unchecked:
        return []
    have = [f"{name} {report.dists[name]}" for name in TRACKER_DISTS if report.dists.get(name)]
    lacking = [name for name in TRACKER_DISTS if not report.dists.get(name)]
    words = ", ".join(have)
    if lacking:
        needs = "; ".join(f"{TRACKER_DISTS[name]} needs {name}" for name in lacking)
        fix = f"{python} -m pip install {' '.join(lacking)}"
        words = f"{words}; " if words else ""
        return [Finding("trackers", f"{words}{needs} ({fix})", "info")]
    return [Finding("trackers", words)]
