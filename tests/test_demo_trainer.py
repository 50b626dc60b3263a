"""The built-in demo trainer, run as rtrain runs it: one shipped file, in its run directory.

Each test writes the zip application rtrain ships (`demo_trainer.py`, built from the
package daemon/remote/demo_trainer/) into a temp run dir and starts it with the interpreter
running the tests. The pure-Python backend is always tested; the torch tests need
torch (skipped without it, but failing under CI=true, where it must be installed).
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import math
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from rtrain.daemon.remote.demo_trainer import config as trainer_config
from rtrain.daemon.remote.demo_trainer import yaml_subset
from rtrain.daemon.remote.trainer_bundle import demo_trainer_bundle, trainer_modules

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_CONFIG = REPO / "examples" / "config.yaml"
EXAMPLE_DATASET = REPO / "examples" / "dataset.jsonl"

STEP_LINE = re.compile(r"^step (\d+) \| loss (\d+\.\d{4})(?: \| .+)?$")
DONE_LINE = re.compile(r"^done: (\d+) steps, final loss (\d+\.\d{4}), saved lora_model/$")
# Small enough that a pure-Python step takes a few milliseconds.
SMALL_CONFIG = """\
learning_rate: 0.02
batch_size: 16
context: 3
hidden: 16
log_every: 10
checkpoint_every: 10
"""
RUN_TIMEOUT_S = 60  # only against hangs


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A run directory as rtrain lays it out: the trainer, config.yaml, the dataset."""
    directory = tmp_path / "run"
    directory.mkdir()
    (directory / "demo_trainer.py").write_bytes(demo_trainer_bundle())
    shutil.copy(EXAMPLE_DATASET, directory / "dataset.jsonl")
    (directory / "config.yaml").write_text(SMALL_CONFIG)
    return directory


@pytest.fixture
def torch_required() -> None:
    if importlib.util.find_spec("torch") is not None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(
            "torch is not installed; CI must install it (pip install torch) to test "
            "the demo trainer's torch backend"
        )
    pytest.skip("torch is not installed")


def trainer_env(**overrides: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("RTRAIN_DEVICE", "RTRAIN_DEMO_BACKEND")
    }
    env.update({"PYTHONUNBUFFERED": "1", "RTRAIN_RUN_ID": "test-run"})
    env.update(overrides)
    return env


def python_env(**overrides: str) -> dict[str, str]:
    return trainer_env(RTRAIN_DEMO_BACKEND="python", **overrides)


def run_trainer(
    run_dir: Path, *args: str, env: dict[str, str] | None = None, python_flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            *python_flags,
            "demo_trainer.py",
            "--config",
            "config.yaml",
            "--dataset",
            "dataset.jsonl",
            *args,
        ],
        cwd=run_dir,
        env=python_env() if env is None else env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def step_losses(stdout: str) -> list[tuple[int, float]]:
    found = []
    for line in stdout.splitlines():
        match = STEP_LINE.match(line)
        if match:
            found.append((int(match.group(1)), float(match.group(2))))
    return found


def assert_clean_exit(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert "Traceback" not in result.stderr


def saved_model_loss(model_dir: Path, records: list[str]) -> float:
    """Mean next-character loss of the saved weights, computed from the documented format
    alone (lora_model/README.md), without the trainer's code."""
    config = json.loads((model_dir / "adapter_config.json").read_text())
    weights = json.loads((model_dir / "adapter_model.json").read_text())
    vocab, context = config["vocab"], config["context"]
    ids = {char: index for index, char in enumerate(vocab)}
    total, count = 0.0, 0
    for record in records:
        window = [0] * context
        for target in [ids[char] for char in record] + [0]:
            pre = list(weights["b1"])
            for position, char_id in enumerate(window):
                row = weights["W1"][position * len(vocab) + char_id]
                pre = [a + b for a, b in zip(pre, row, strict=True)]
            hidden = [math.tanh(x) for x in pre]
            logits = [
                b + sum(w * h for w, h in zip(row, hidden, strict=True))
                for b, row in zip(weights["b2"], weights["W2"], strict=True)
            ]
            top = max(logits)
            log_norm = top + math.log(sum(math.exp(z - top) for z in logits))
            total += log_norm - logits[target]
            count += 1
            window = window[1:] + [target]
    return total / count


def example_records(limit: int) -> list[str]:
    records = []
    for line in EXAMPLE_DATASET.read_text().splitlines()[:limit]:
        obj = json.loads(line)
        records.append(obj["text"] if "text" in obj else obj["prompt"] + obj["completion"])
    return records


def checkpoint_files(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "checkpoints").iterdir())


def assert_only_complete_checkpoints(run_dir: Path) -> list[int]:
    """Every file under a final name parses and holds the step its name says; no temp files
    survive a later start. Returns the steps found."""
    steps = []
    for path in checkpoint_files(run_dir):
        match = re.fullmatch(r"step-(\d+)\.json", path.name)
        if match is None:
            assert path.name.startswith(".") and ".tmp-" in path.name, path.name
            continue
        payload = json.loads(path.read_text())
        assert payload["step"] == int(match.group(1))
        assert set(payload["params"]) == {"W1", "b1", "W2", "b2"}
        steps.append(payload["step"])
    return sorted(steps)


# --- training and outputs ------------------------------------------------------------------


def test_pure_python_loss_falls_and_lines_have_the_documented_format(run_dir: Path) -> None:
    result = run_trainer(run_dir, "--steps", "150")
    assert_clean_exit(result)
    lines = result.stdout.splitlines()
    assert "backend python" in lines[0] and "device cpu" in lines[0]
    assert "272 records" in lines[0] and "run test-run" in lines[0]
    losses = step_losses(result.stdout)
    assert [step for step, _ in losses] == list(range(10, 151, 10))
    assert all(STEP_LINE.match(line) for line in lines if line.startswith("step "))
    first, last = losses[0][1], losses[-1][1]
    assert last < first * 0.7, losses
    done = DONE_LINE.match(lines[-1])
    assert done is not None, lines[-1]
    assert int(done.group(1)) == 150 and float(done.group(2)) == last

    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [(row["step"], round(row["loss"], 4)) for row in metrics] == losses


def test_lora_model_holds_the_trained_weights_as_loadable_json(run_dir: Path) -> None:
    assert_clean_exit(run_trainer(run_dir, "--steps", "150"))
    model_dir = run_dir / "lora_model"
    assert sorted(path.name for path in model_dir.iterdir()) == [
        "README.md",
        "adapter_config.json",
        "adapter_model.json",
    ]
    config = json.loads((model_dir / "adapter_config.json").read_text())
    assert config["steps"] == 150 and config["context"] == 3 and config["hidden"] == 16
    assert config["vocab"][0] == "" and len(config["vocab"]) == config["vocab_size"]
    assert "not a LoRA adapter" in (model_dir / "README.md").read_text()
    # The saved weights predict the data far better than guessing uniformly.
    loss = saved_model_loss(model_dir, example_records(40))
    assert loss < 0.75 * math.log(config["vocab_size"]), loss


def test_without_torch_importable_auto_picks_pure_python(run_dir: Path) -> None:
    # -I -S: no site-packages, as on a bare host with nothing but the standard library.
    result = run_trainer(run_dir, "--steps", "10", env=trainer_env(), python_flags=("-I", "-S"))
    assert_clean_exit(result)
    assert "backend python" in result.stdout.splitlines()[0]


def test_every_trainer_module_stands_alone_and_parses_as_python_3_8() -> None:
    modules = dict(trainer_modules())
    siblings = {name.removesuffix(".py") for name in modules}
    assert {"main", "training", "yaml_subset"} <= siblings
    for name, source in modules.items():
        tree = ast.parse(source, filename=name, feature_version=(3, 8))
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        }
        absolute = {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level == 0
        }
        relative = {
            node.module or ""
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level > 0
        }
        assert "rtrain" not in imported | absolute, name
        assert (imported | absolute) - {"__future__", "torch"} <= set(sys.stdlib_module_names)
        # only siblings, never a parent package (there is none inside the shipped zip)
        assert relative <= siblings, (name, relative - siblings)
        assert all(
            node.level == 1
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.level > 0
        ), name


def test_the_shipped_file_is_one_zip_holding_the_whole_package() -> None:
    bundle = demo_trainer_bundle()
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        names = archive.namelist()
    assert names[0] == "__main__.py"
    assert sorted(names[1:]) == [f"demo_trainer/{name}" for name, _ in trainer_modules()]


# --- resume and stop -----------------------------------------------------------------------


def test_restart_resumes_from_the_last_checkpoint_and_continues_the_count(
    run_dir: Path, tmp_path: Path
) -> None:
    first = run_trainer(run_dir, "--steps", "20")
    assert_clean_exit(first)
    second = run_trainer(run_dir, "--steps", "40")
    assert_clean_exit(second)
    assert "resuming from step 20" in second.stdout.splitlines()
    assert [step for step, _ in step_losses(second.stdout)] == [30, 40]
    assert second.stdout.splitlines()[-1].startswith("done: 40 steps, final loss ")
    metrics = (run_dir / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in metrics] == [10, 20, 30, 40]

    # Resuming restores weights, optimizer and data order: same result as one unbroken run.
    straight = tmp_path / "straight"
    shutil.copytree(
        run_dir,
        straight,
        ignore=shutil.ignore_patterns("checkpoints", "lora_model", "metrics.jsonl"),
    )
    assert_clean_exit(run_trainer(straight, "--steps", "40"))
    assert (straight / "lora_model" / "adapter_model.json").read_text() == (
        run_dir / "lora_model" / "adapter_model.json"
    ).read_text()


def test_keeps_only_the_last_two_checkpoints(run_dir: Path) -> None:
    assert_clean_exit(run_trainer(run_dir, "--steps", "50"))
    assert [path.name for path in checkpoint_files(run_dir)] == [
        "step-000040.json",
        "step-000050.json",
    ]


class BackgroundTrainer:
    """The trainer started in the background. A thread reads its stdout, so that waiting for
    a line can time out; leaving the `with` block kills it if it still runs."""

    def __init__(self, run_dir: Path) -> None:
        self.stderr_path = run_dir.parent / "trainer.stderr"
        with self.stderr_path.open("w") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, "demo_trainer.py", "--config", "config.yaml"]
                + ["--dataset", "dataset.jsonl"],
                cwd=run_dir,
                env=python_env(),
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read_stdout, daemon=True)
        self.reader.start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, pattern: str) -> str:
        while True:
            line = self.lines.get(timeout=RUN_TIMEOUT_S)
            if line is None:
                raise AssertionError(f"stdout ended before {pattern!r}: {self.seen}")
            self.seen.append(line)
            if re.search(pattern, line):
                return line

    def finish(self) -> tuple[int, str]:
        """Wait for the exit; (exit code, stderr)."""
        returncode = self.process.wait(timeout=RUN_TIMEOUT_S)
        self.reader.join(timeout=RUN_TIMEOUT_S)
        assert self.process.stdout is not None
        self.process.stdout.close()
        return returncode, self.stderr_path.read_text()

    def __enter__(self) -> BackgroundTrainer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.finish()


def test_sigterm_stops_between_steps_and_a_restart_resumes(run_dir: Path) -> None:
    (run_dir / "config.yaml").write_text(
        SMALL_CONFIG.replace("checkpoint_every: 10", "checkpoint_every: 7")
        + "sleep_per_step: 0.02\nsteps: 100000\n"
    )
    with BackgroundTrainer(run_dir) as background:
        background.wait_for(r"^step 20 \|")
        background.process.send_signal(signal.SIGTERM)
        returncode, stderr = background.finish()
    assert returncode == 128 + signal.SIGTERM, stderr
    assert "stopped by SIGTERM" in stderr and "Traceback" not in stderr
    steps = assert_only_complete_checkpoints(run_dir)
    assert len(steps) <= 2 and steps[-1] >= 20
    assert not [path for path in checkpoint_files(run_dir) if path.name.startswith(".")]

    resumed = run_trainer(run_dir, "--steps", str(steps[-1] + 10))
    assert_clean_exit(resumed)
    assert f"resuming from step {steps[-1]}" in resumed.stdout.splitlines()
    assert resumed.stdout.splitlines()[-1].startswith(f"done: {steps[-1] + 10} steps")


def test_a_kill_at_any_moment_leaves_only_complete_checkpoints(run_dir: Path) -> None:
    # checkpoint_every 1: the process is nearly always writing one when SIGKILL lands.
    (run_dir / "config.yaml").write_text(
        SMALL_CONFIG.replace("checkpoint_every: 10", "checkpoint_every: 1").replace(
            "hidden: 16", "hidden: 64"
        )
        + "steps: 100000\n"
    )
    for _ in range(3):
        with BackgroundTrainer(run_dir) as background:
            background.wait_for(r"^step \d+ \|")
            background.process.kill()
            background.finish()
        steps = assert_only_complete_checkpoints(run_dir)
        assert steps, "no checkpoint written before the kill"
    resumed = run_trainer(run_dir, "--steps", str(steps[-1] + 1))
    assert_clean_exit(resumed)
    assert f"resuming from step {steps[-1]}" in resumed.stdout.splitlines()
    assert not [path for path in checkpoint_files(run_dir) if path.name.startswith(".")]


def test_a_checkpoint_from_another_model_shape_is_refused_with_advice(run_dir: Path) -> None:
    assert_clean_exit(run_trainer(run_dir, "--steps", "10"))
    (run_dir / "config.yaml").write_text(SMALL_CONFIG.replace("hidden: 16", "hidden: 20"))
    result = run_trainer(run_dir, "--steps", "20")
    assert result.returncode == 2
    assert "different hidden" in result.stderr and "delete checkpoints/" in result.stderr
    assert "Traceback" not in result.stderr


# --- dataset -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ('{"text": "unterminated', "not valid JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"prompt": "only a prompt"}', 'needs a "text" field'),
        ('{"text": 42}', '"text" must be a string'),
    ],
)
def test_a_malformed_dataset_line_is_named(run_dir: Path, bad_line: str, message: str) -> None:
    (run_dir / "dataset.jsonl").write_text(
        '{"text": "a fine line"}\n\n' + bad_line + '\n{"text": "another"}\n'
    )
    result = run_trainer(run_dir, "--steps", "5")
    assert result.returncode == 2
    assert "dataset.jsonl line 3:" in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (run_dir / "checkpoints").exists()


def test_prompt_completion_records_and_blank_lines_train(run_dir: Path) -> None:
    (run_dir / "dataset.jsonl").write_text(
        '{"prompt": "Q: hi\\nA:", "completion": " hello"}\n\n   \n{"text": "plain text"}\n'
    )
    result = run_trainer(run_dir, "--steps", "10")
    assert_clean_exit(result)
    assert "2 records" in result.stdout.splitlines()[0]


# --- config and its YAML subset ------------------------------------------------------------


def test_parses_the_example_config() -> None:
    doc = yaml_subset.parse_yaml_subset(EXAMPLE_CONFIG.read_text(), "config.yaml")
    assert doc.values["learning_rate"] == 0.01 and isinstance(doc.values["learning_rate"], float)
    assert doc.values["device"] == "auto" and doc.values["model_name"] == "rtrain-demo-char-mlp"
    assert doc.values["sleep_per_step"] == 0
    config = trainer_config.config_from_document(doc, "config.yaml")
    assert (config.steps, config.context, config.hidden) == (300, 5, 48)


def test_parses_every_supported_construct() -> None:
    text = """\
---
# a comment line
steps: 12   # a trailing comment
rate: -1.5e-3
half: .5
on: true
off: False
nothing: null
tilde: ~
plain: hello world # comment
hash: "a # inside quotes"
single: 'it''s'
escaped: "tab\\tnew\\nline \\u00e9"
list: [1, two, "three, four", 5.0, null]
tags: ["a # b", 'c'] # trailing
empty_list: []
section:
  inner: 3
  other: "x"
empty_section:
last: 1
"""
    values = yaml_subset.parse_yaml_subset(text).values
    assert values == {
        "steps": 12,
        "rate": -0.0015,
        "half": 0.5,
        "on": True,
        "off": False,
        "nothing": None,
        "tilde": None,
        "plain": "hello world",
        "hash": "a # inside quotes",
        "single": "it's",
        "escaped": "tab\tnew\nline \u00e9",
        "list": [1, "two", "three, four", 5.0, None],
        "tags": ["a # b", "c"],
        "empty_list": [],
        "section": {"inner": 3, "other": "x"},
        "empty_section": None,
        "last": 1,
    }


@pytest.mark.parametrize(
    ("text", "line", "phrase"),
    [
        ("steps: 1\nitems:\n  - a\n", 3, "block lists"),
        ("steps: 1\nopts: {a: 1}\n", 2, "inline mappings"),
        ("text: |\n  hello\n", 1, "block scalars"),
        ("base: &b 1\n", 1, "anchors"),
        ("a: !!str 1\n", 1, "tags"),
        ("a:\n  b:\n    c: 1\n", 3, "one level of nesting"),
        ("a:\n    b: 1\n  c: 2\n", 3, "inconsistent indentation"),
        ("steps: 1\n  extra: 2\n", 2, "unexpected indentation"),
        ("steps: 1\nsteps: 2\n", 2, "duplicate key 'steps'"),
        ("a:\n\tb: 1\n", 2, "tabs"),
        ('name: "open\n', 1, "unterminated"),
        ("steps:10\n", 1, "space must follow the colon"),
        ("just words\n", 1, "expected 'key: value'"),
        ("a: b: c\n", 1, "unless quoted"),
        ("a: [1, [2]]\n", 1, "nested lists"),
        ("a: [1, 2\n", 1, "must end with ']'"),
        ("a: 1\n---\nb: 2\n", 2, "only one YAML document"),
        ('"quoted": 1\n', 1, "expected 'key: value'"),
    ],
)
def test_rejects_constructs_outside_the_subset_naming_the_line(
    text: str, line: int, phrase: str
) -> None:
    with pytest.raises(yaml_subset.YamlSubsetError) as caught:
        yaml_subset.parse_yaml_subset(text, "config.yaml")
    assert f"config.yaml line {line}:" in str(caught.value)
    assert phrase in str(caught.value)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("steps: many", "line 7: steps must be a whole number"),
        ("sleep_per_step: -1", "line 7: sleep_per_step must be >= 0"),
        ("device: tpu", "line 7: device must be one of auto, cuda"),
        ("items:\n  - a", "line 8: block lists"),
    ],
)
def test_a_bad_config_fails_with_the_line_and_no_traceback(
    run_dir: Path, line: str, message: str
) -> None:
    (run_dir / "config.yaml").write_text(SMALL_CONFIG + line + "\n")
    result = run_trainer(run_dir)
    assert result.returncode == 2
    assert f"config.yaml {message}" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_key_warns_and_the_run_goes_on(run_dir: Path) -> None:
    (run_dir / "config.yaml").write_text(SMALL_CONFIG + "optimizer: adamw\nlora:\n  r: 8\n")
    result = run_trainer(run_dir, "--steps", "10")
    assert_clean_exit(result)
    assert "config.yaml line 7: unknown key 'optimizer'" in result.stderr
    assert "config.yaml line 8: unknown key 'lora'" in result.stderr


# --- torch backend and device choice -------------------------------------------------------


@pytest.mark.usefixtures("torch_required")
@pytest.mark.parametrize(
    ("env_device", "config_device", "wanted"),
    [("cuda", "cpu", "cuda"), ("", "mps", "mps")],
    ids=["env-RTRAIN_DEVICE-cuda", "config-device-mps"],
)
@pytest.mark.slow
def test_torch_falls_back_to_cpu_with_a_warning_and_trains(
    run_dir: Path, env_device: str, config_device: str, wanted: str
) -> None:
    (run_dir / "config.yaml").write_text(SMALL_CONFIG + f"device: {config_device}\n")
    # CUDA_VISIBLE_DEVICES="": no CUDA device, even where the tests run on a GPU machine.
    env = trainer_env(
        CUDA_VISIBLE_DEVICES="", **({"RTRAIN_DEVICE": env_device} if env_device else {})
    )
    result = run_trainer(run_dir, "--steps", "100", env=env)
    assert_clean_exit(result)
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and wanted in warnings[0] and "falling back to cpu" in warnings[0]
    header = result.stdout.splitlines()[0]
    assert "backend torch" in header and "device cpu" in header
    losses = step_losses(result.stdout)
    assert [step for step, _ in losses] == list(range(10, 101, 10))
    assert losses[-1][1] < losses[0][1] * 0.8, losses
    assert DONE_LINE.match(result.stdout.splitlines()[-1])
    config = json.loads((run_dir / "lora_model" / "adapter_config.json").read_text())
    assert config["backend"] == "torch" and config["device"] == "cpu"
    loss = saved_model_loss(run_dir / "lora_model", example_records(40))
    assert loss < 0.85 * math.log(config["vocab_size"]), loss


@pytest.mark.slow
@pytest.mark.usefixtures("torch_required")
def test_a_torch_checkpoint_resumes_in_pure_python(run_dir: Path) -> None:
    # Checkpoints are plain JSON, so a run that moves to a host without torch carries on.
    first = run_trainer(run_dir, "--steps", "20", env=trainer_env(RTRAIN_DEVICE="cpu"))
    assert_clean_exit(first)
    assert "backend torch" in first.stdout.splitlines()[0]
    second = run_trainer(run_dir, "--steps", "30")
    assert_clean_exit(second)
    assert "resuming from step 20" in second.stdout.splitlines()
    assert "backend python" in second.stdout.splitlines()[0]
