"""Runs one conformance scenario, `MODULE.FUNCTION` (e.g. `api_machinery.error_bodies`), against the cluster the
kubeconfigs in $CONFORMANCE_KUBECONFIG (the owner) and $CONFORMANCE_TOOL_KUBECONFIG (tool $CONFORMANCE_TOOL) name.
Exits 0 when the scenario's expectations (Kubernetes 1.33's behaviour) hold; a failed one prints its traceback."""

import importlib
import os
import sys

import kubernetes

EXPECTED_CLIENT = "37.0.2"


def main() -> None:
    if len(sys.argv) != 2 or "." not in sys.argv[1]:
        sys.exit("usage: run.py MODULE.FUNCTION")
    if kubernetes.__version__ != EXPECTED_CLIENT:
        sys.exit(
            f"this is kubernetes {kubernetes.__version__}, not {EXPECTED_CLIENT}: "
            "use the venv built from tests/conformance/requirements.txt"
        )
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    module, function = sys.argv[1].split(".", 1)
    getattr(importlib.import_module(module), function)()


if __name__ == "__main__":
    main()
