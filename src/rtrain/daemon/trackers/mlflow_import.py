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

BATCH = 1000  # MLflow's log_batch takes at most 1000 metrics (and 100 params) per call


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
    Metric, Param, RunTag, ViewType = (
        entities.Metric,
        entities.Param,
        entities.RunTag,
        entities.ViewType,
    )
    state: dict[str, Any] = {"experiments": {}, "runs": {}}
    if state_path.exists():
        state = json.loads(state_path.read_text())
    far = file_store.FileStore(root_directory=str(mlruns.resolve()))
    here = tracking.MlflowClient()
    made = points = params = 0
    try:
        for experiment in far.search_experiments(view_type=ViewType.ALL):
            experiment_id = state["experiments"].get(experiment.experiment_id)
            if experiment_id is None:
                found = here.get_experiment_by_name(experiment.name)
                experiment_id = (
                    found.experiment_id if found else here.create_experiment(experiment.name)
                )
                state["experiments"][experiment.experiment_id] = experiment_id
            for run in far.search_runs(
                [experiment.experiment_id], "", ViewType.ALL, max_results=50000
            ):
                far_id = run.info.run_id
                seen = state["runs"].get(far_id)
                if seen is None:
                    tags = {k: v for k, v in run.data.tags.items() if not k.startswith("mlflow.")}
                    tags["rtrain.source"] = f"{source}:{far_id}"
                    created = here.create_run(
                        experiment_id,
                        start_time=run.info.start_time,
                        tags=tags,
                        run_name=run.info.run_name,
                    )
                    seen = {"id": created.info.run_id, "params": [], "metrics": {}, "ended": False}
                    state["runs"][far_id] = seen
                    made += 1
                new_params = [
                    Param(k, v) for k, v in run.data.params.items() if k not in seen["params"]
                ]
                for start in range(0, len(new_params), 100):
                    here.log_batch(seen["id"], params=new_params[start : start + 100])
                seen["params"] += [param.key for param in new_params]
                params += len(new_params)
                for key in run.data.metrics:
                    history = far.get_metric_history(far_id, key)
                    sent = seen["metrics"].get(key, 0)
                    new = [Metric(m.key, m.value, m.timestamp, m.step) for m in history[sent:]]
                    for start in range(0, len(new), BATCH):
                        here.log_batch(seen["id"], metrics=new[start : start + BATCH])
                    seen["metrics"][key] = sent + len(new)
                    points += len(new)
                user_tags = [
                    RunTag(k, v) for k, v in run.data.tags.items() if not k.startswith("mlflow.")
                ]
                if user_tags:
                    here.log_batch(seen["id"], tags=user_tags)
                if run.info.status in ("FINISHED", "FAILED", "KILLED") and not seen["ended"]:
                    here.set_terminated(seen["id"], run.info.status, run.info.end_time)
                    seen["ended"] = True
    finally:
        partial = state_path.with_name(state_path.name + ".tmp")
        partial.write_text(json.dumps(state))
        os.replace(partial, state_path)
    print(f"{made} new runs, {points} metric points, {params} params")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
