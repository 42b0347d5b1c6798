"""List every declared condition: the run configuration, the declared runs (``EXPERIMENT`` beside each
result type) with each notebook's parameters, and the parameters of each mechanism.

    python -m rag_lib.runner --list
"""

from __future__ import annotations

import argparse
import dataclasses
import json


def conditions() -> list[dict[str, object]]:
    """One row per planned run: its name, notebook, parameters (its declaration's), the notebook's
    parameters with those applied, and for a mechanism run the declared mechanism's description and
    parameters (as resolved from ``config.yaml``)."""
    from rag_lib.experiments.mechanisms import get_mechanism
    from rag_lib.results.runs import planned_runs, reads_of
    from rag_lib.runner.notebooks import notebook_parameters

    rows: list[dict[str, object]] = []
    for run in planned_runs():
        row: dict[str, object] = {"run": run.name, "notebook": run.notebook, "parameters": run.parameters,
                                  "notebook_parameters": notebook_parameters(run),
                                  "reads": [other.name for other in reads_of(run)]}
        if "mechanism" in run.parameters:
            spec = get_mechanism(str(run.parameters["mechanism"]))
            row["mechanism"] = {"description": spec.description, "parameters": spec.resolved_parameters()}
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    from rag_lib.core.config import RunConfig

    parser = argparse.ArgumentParser(prog="python -m rag_lib.runner", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="print every declared condition and its parameters")
    parser.add_argument("--json", action="store_true", help="as JSON")
    args = parser.parse_args(argv)
    if not args.list:
        parser.print_help()
        return 0
    config = dataclasses.asdict(RunConfig.from_settings())
    rows = conditions()
    if args.json:
        print(json.dumps({"run_config": config, "runs": rows}, indent=1, ensure_ascii=False))
        return 0
    print("run configuration (config.yaml; a notebook parameter left at None takes its value):")
    for name, value in config.items():
        print(f"    {name} = {value}")
    print("runs, in the order make reproduce executes them (each after the runs it reads):")
    for row in rows:
        reads = row["reads"]
        print(f"{row['run']}  ({row['notebook']})" + (f"  reads: {', '.join(reads)}" if isinstance(reads, list)
                                                        and reads else ""))
        shown = row["notebook_parameters"]
        if isinstance(shown, dict) and shown:
            print("    " + ", ".join(f"{name}={value}" for name, value in shown.items()))
        mech = row.get("mechanism")
        if isinstance(mech, dict):
            print(f"    {mech['description']}")
            for name, value in mech["parameters"].items():
                print(f"    {name} = {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
