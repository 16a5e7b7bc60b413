#!/bin/sh
# Run by the `setup` job of examples/jobs.yaml. Editing this file changes the job's fingerprint, so the next
# apply runs the job again (see `trigger-files`).
echo "preparing the tool's environment"
mkdir -p logs
date
