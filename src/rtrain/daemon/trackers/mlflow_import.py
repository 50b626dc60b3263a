"""`python -m rtrain.daemon.trackers.mlflow_import MLRUNS STATE SOURCE`: import what is new in
a copy of a run's MLflow file store into this machine's tracking URI (MLFLOW_TRACKING_URI),
with this machine's credentials (sync.py runs it; docs/trackers.md).

MLflow's file store keeps each metric's points in a file that only grows, so what was
imported is a count per metric; params are written once; a run's end is imported once. The
state file (JSON, replaced whole) maps each far run to the run made for it here, so a sync
never makes a second copy. Run as a subprocess: mlflow is heavy, and it is this machine's
package, not the daemon's. Exit 0 with one summary line; otherwise the reason on stderr.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

# The far store is a file store; MLflow 3 reads one only when allowed.
os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")

BATCH = 1000  # MLflow's log_batch takes at most 1000 metrics per call
PARAMS_BATCH = 100  # and 100 params


def main(argv: list[str]) -> int:
    mlruns, state_path, source = Path(argv[0]), Path(argv[1]), argv[2]
    try:
        # Imported by name: mlflow is untyped, and the checks must not need it installed.
        entities: Any = importlib.import_module("mlflow.entities")
        file_store: Any = importlib.import_module("mlflow.store.tracking.file_store")
        tracking: Any = importlib.import_module("mlflow.tracking")
    except ImportError as error:
        print(f"mlflow is not installed here ({error}): pip install mlflow", file=sys.stderr)
        return 3
    state: dict[str, Any] = {"experiments": {}, "runs": {}}
    if state_path.exists():
        state = json.loads(state_path.read_text())
    far = file_store.FileStore(root_directory=str(mlruns.resolve()))
    importer = _Importer(entities, far, tracking.MlflowClient(), state, source)
    try:
        for experiment in far.search_experiments(view_type=entities.ViewType.ALL):
            importer.experiment(experiment)
    finally:
        partial = state_path.with_name(state_path.name + ".tmp")
        partial.write_text(json.dumps(state))
        os.replace(partial, state_path)
    print(f"{importer.made} new runs, {importer.points} metric points, {importer.params} params")
    return 0


class _Importer:
    """Brings what is new of the far store's runs into `here`, noting in `state` what it
    sent right after sending it (`main` saves `state` even when a step fails, so nothing
    sent goes again next time)."""

    def __init__(self, entities: Any, far: Any, here: Any, state: dict[str, Any], source: str):
        self.entities, self.far, self.here = entities, far, here
        self.state, self.source = state, source
        self.made = self.points = self.params = 0

    def experiment(self, experiment: Any) -> None:
        experiment_id = self.state["experiments"].get(experiment.experiment_id)
        if experiment_id is None:
            found = self.here.get_experiment_by_name(experiment.name)
            experiment_id = (
                found.experiment_id if found else self.here.create_experiment(experiment.name)
            )
            self.state["experiments"][experiment.experiment_id] = experiment_id
        view = self.entities.ViewType.ALL
        for run in self.far.search_runs([experiment.experiment_id], "", view, max_results=50000):
            seen = self._run_here(experiment_id, run)
            self._params(run, seen)
            self._metrics(run, seen)
            self._tags_and_end(run, seen)

    def _run_here(self, experiment_id: str, run: Any) -> dict[str, Any]:
        """The record of the run made here for the far `run`, made now if none is."""
        far_id = run.info.run_id
        seen: dict[str, Any] | None = self.state["runs"].get(far_id)
        if seen is None:
            tags = _user_tags(run)
            tags["rtrain.source"] = f"{self.source}:{far_id}"
            created = self.here.create_run(
                experiment_id,
                start_time=run.info.start_time,
                tags=tags,
                run_name=run.info.run_name,
            )
            seen = {"id": created.info.run_id, "params": [], "metrics": {}, "ended": False}
            self.state["runs"][far_id] = seen
            self.made += 1
        return seen

    def _params(self, run: Any, seen: dict[str, Any]) -> None:
        Param = self.entities.Param
        new = [Param(k, v) for k, v in run.data.params.items() if k not in seen["params"]]
        for start in range(0, len(new), PARAMS_BATCH):
            self.here.log_batch(seen["id"], params=new[start : start + PARAMS_BATCH])
        seen["params"] += [param.key for param in new]
        self.params += len(new)

    def _metrics(self, run: Any, seen: dict[str, Any]) -> None:
        """Each metric's points past those sent: its file in the store only grows."""
        Metric = self.entities.Metric
        for key in run.data.metrics:
            history = self.far.get_metric_history(run.info.run_id, key)
            sent = seen["metrics"].get(key, 0)
            new = [Metric(m.key, m.value, m.timestamp, m.step) for m in history[sent:]]
            for start in range(0, len(new), BATCH):
                self.here.log_batch(seen["id"], metrics=new[start : start + BATCH])
            seen["metrics"][key] = sent + len(new)
            self.points += len(new)

    def _tags_and_end(self, run: Any, seen: dict[str, Any]) -> None:
        RunTag = self.entities.RunTag
        tags = [RunTag(k, v) for k, v in _user_tags(run).items()]
        if tags:
            self.here.log_batch(seen["id"], tags=tags)
        if run.info.status in ("FINISHED", "FAILED", "KILLED") and not seen["ended"]:
            self.here.set_terminated(seen["id"], run.info.status, run.info.end_time)
            seen["ended"] = True


def _user_tags(run: Any) -> dict[str, str]:
    """The run's own tags: MLflow's (`mlflow.*`) are made again by the store here."""
    return {k: v for k, v in run.data.tags.items() if not k.startswith("mlflow.")}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
