# The Python half of preflight.sh, run on the far host by whatever interpreter the user named
# or preflight found. The daemon sends it inside preflight.sh as one single-quoted sh word
# (daemon/remote/__init__.py), so it holds no single quote. It must parse under Python 2 too,
# so an old `python` still says which version it is: types in comments, no f-strings, no
# trailing comma after *args. It answers in `pyprobe_KEY<TAB>FIELD...` lines.
import os
import sys

# typing.TYPE_CHECKING, which Python 2 and a bare interpreter may lack: mypy takes it as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Dict, Optional, Tuple
try:
    import signal

    signal.alarm(int(os.environ.get("RTRAIN_PROBE_ALARM", "40")))
except Exception:
    pass
os.environ.pop("RTRAIN_PROBE", None)


def out(*fields):
    # type: (*object) -> None
    text = "\t".join(
        str(f).replace("\t", " ").replace("\r", " ").replace("\n", " ") for f in fields
    )
    sys.stdout.write("pyprobe_" + text + "\n")
    sys.stdout.flush()


out("version", "%d.%d.%d" % tuple(sys.version_info[:3]))
out("executable", sys.executable or "")
# One interpreter with one set of packages, however it was reached (a symlink, a pyenv shim);
# a venv shares its base interpreter but not its packages.
out("identity", "%s|%s" % (os.path.realpath(sys.executable or ""), sys.prefix))
if sys.version_info < (3, 6):
    out("done")
    sys.exit(0)
mode = os.environ.pop("RTRAIN_PROBE_MODE", "python")
names = [name for name in os.environ.pop("RTRAIN_PROBE_NAMES", "").split("\n") if name]
import platform

try:
    marker_env = {
        "implementation_name": sys.implementation.name,
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_python_implementation": platform.python_implementation(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "python_full_version": platform.python_version(),
        "python_version": "%d.%d" % tuple(sys.version_info[:2]),
        "sys_platform": sys.platform,
    }
    out("env", *sorted("%s=%s" % item for item in marker_env.items()))
except Exception:
    pass


def torch_build(spec):
    # type: (Any) -> Optional[Tuple[str, Optional[str]]]
    """torch/version.py read without importing torch (seconds): its version and CUDA build."""
    for folder in spec.submodule_search_locations or []:
        try:
            with open(os.path.join(folder, "version.py")) as f:
                names = {}  # type: Dict[str, Any]
                exec(compile(f.read(), "torch/version.py", "exec"), names)
            return str(names["__version__"]), names.get("cuda")
        except Exception:
            pass
    return None


def torch_probe(light):
    # type: (bool) -> None
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except Exception:
        spec = None
    if spec is None:
        out("torch_missing")
        return
    build = torch_build(spec) if light else None
    # A candidate with a CPU build needs no import to be judged; one with CUDA is imported to
    # learn whether it sees the GPUs.
    if build is not None and not build[1]:
        out("torch", build[0])
        out("torch_cuda", "none")
        out("torch_gpus", 0, 0)
        return
    try:
        import torch
    except Exception as error:
        out("torch_error", "%s: %s" % (type(error).__name__, error))
        return
    out("torch", getattr(torch, "__version__", "?"))
    out("torch_cuda", getattr(getattr(torch, "version", None), "cuda", None) or "none")
    try:
        available = bool(torch.cuda.is_available())
        out("torch_gpus", 1 if available else 0, torch.cuda.device_count() if available else 0)
    except Exception as error:
        out("torch_gpus", 0, 0, "%s: %s" % (type(error).__name__, error))


def dist_probe():
    # type: () -> None
    if not names:
        return  # importlib.metadata alone takes a third of a second to import
    try:
        from importlib import metadata
    except ImportError:
        try:
            import importlib_metadata as metadata  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            for name in names:
                out("dist", name, "?")
            return
    for name in names:
        try:
            out("dist", name, metadata.version(name))
        except metadata.PackageNotFoundError:
            out("dist", name, "-")
        except Exception:
            out("dist", name, "?")


def token():
    # type: () -> Tuple[str, str]
    given = sys.stdin.readline().strip()
    if given:
        return given, "secret"
    for variable in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        if os.environ.get(variable, "").strip():
            return os.environ[variable].strip(), "host environment"
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    try:
        with open(os.environ.get("HF_TOKEN_PATH") or os.path.join(home, "token")) as f:
            saved = f.read().strip()
    except OSError:
        saved = ""
    return (saved, "host token file") if saved else ("", "none")


def hub_probe():
    # type: () -> None
    import urllib.error
    import urllib.parse
    import urllib.request

    secret, source = token()
    endpoint = (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
    out("hf_endpoint", endpoint)
    out("hf_token", source)
    home = urllib.parse.urlsplit(endpoint)[:2]

    class Stay(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            # type: (*Any, **Any) -> None
            return None

    opener = urllib.request.build_opener(Stay)
    for model in names:
        url = "%s/api/models/%s/auth-check" % (endpoint, model)
        for hop in range(5):
            request = urllib.request.Request(url, headers={"User-Agent": "rtrain-preflight"})
            # The token goes to the Hub itself, never to wherever a redirect points.
            if secret and urllib.parse.urlsplit(url)[:2] == home:
                request.add_header("Authorization", "Bearer " + secret)
            try:
                answer = opener.open(request, timeout=15)
                status, headers = answer.status, answer.headers
            except urllib.error.HTTPError as error:
                status, headers = error.code, error.headers
                if status in (301, 302, 303, 307, 308) and headers.get("Location") and hop < 4:
                    url = urllib.parse.urljoin(url, headers["Location"])
                    continue
            except Exception as error:
                reason = getattr(error, "reason", None) or error
                out("hf", model, "unreachable", "", str(reason))
                break
            out(
                "hf",
                model,
                status,
                headers.get("X-Error-Code", ""),
                headers.get("X-Error-Message", ""),
            )
            break


if mode == "hub":
    hub_probe()
elif mode == "quick":
    import importlib.util

    try:
        out("torch_found", 1 if importlib.util.find_spec("torch") is not None else 0)
    except Exception:
        out("torch_found", 0)
else:
    torch_probe(mode == "candidate")
    dist_probe()
out("done")
