#!/usr/bin/env python3
"""Generates data/openapi-schemas-v1.33.json.zlib: the OpenAPI v3 component schemas of the built-in kinds the local
cluster serves (with their field descriptions, which `kubectl explain` prints), and of every schema they reference.

The source is Kubernetes 1.33's own OpenAPI definitions as shipped by the PyPI package `kubernetes-validate`
(`kubernetes_validate/kubernetes-json-schema/v1.33.0-local/_definitions.json`, produced from the upstream
`api/openapi-spec` documents). That package turned them into JSON Schema; this script undoes its changes, so the
result is again what the API server publishes under `components.schemas`:
  - `"type": [T, "null"]` becomes `"type": T`;
  - `$ref`s point at `#/components/schemas/NAME` again, and a `$ref` with siblings (a description) is wrapped in
    `allOf`, as the API server's v3 documents do;
  - the `enum` it added to `apiVersion` and `kind` of each kind is removed.
Quantity and IntOrString keep the `oneOf` types of the v3 documents; the package dropped their descriptions.

Output: zlib-compressed compact JSON `{"NAME": schema, ...}`. Run from the crate directory:
    pip download --no-deps -d /tmp/kv kubernetes-validate==1.37.0
    python3 tools/gen_openapi_schemas.py /tmp/kv/kubernetes_validate-1.37.0-py3-none-any.whl
"""
import json
import sys
import zipfile
import zlib

SOURCE = "kubernetes_validate/kubernetes-json-schema/v1.33.0-local/_definitions.json"
OUTPUT = "data/openapi-schemas-v1.33.json.zlib"
JSON_SCHEMA_REF = "#/$defs/"
OPENAPI_REF = "#/components/schemas/"

# (group, version, kind) of every built-in kind in registry/resources.rs, and autoscaling/v1 Scale (the `/scale`
# subresource). A unit test in api/openapi_schemas.rs fails when a served kind is missing here.
KINDS = [
    ("", "v1", kind) for kind in ["Namespace", "Node", "Pod", "Service", "ConfigMap", "LimitRange", "ResourceQuota",
                                  "ServiceAccount", "Event", "Secret", "Endpoints", "PersistentVolumeClaim",
                                  "PersistentVolume", "ReplicationController"]
] + [
    ("batch", "v1", "Job"), ("batch", "v1", "CronJob"),
    ("apps", "v1", "Deployment"), ("apps", "v1", "ReplicaSet"), ("apps", "v1", "DaemonSet"),
    ("apps", "v1", "StatefulSet"),
    ("coordination.k8s.io", "v1", "Lease"),
    ("rbac.authorization.k8s.io", "v1", "ClusterRole"), ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding"),
    ("events.k8s.io", "v1", "Event"),
    ("networking.k8s.io", "v1", "Ingress"),
    ("autoscaling", "v2", "HorizontalPodAutoscaler"), ("autoscaling", "v1", "HorizontalPodAutoscaler"),
    ("autoscaling", "v1", "Scale"),
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
]


def restore(schema):
    """The API server's form of one JSON Schema node (recursively)."""
    if isinstance(schema, list):
        return [restore(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        elif key == "$ref":
            out[key] = OPENAPI_REF + value.removeprefix(JSON_SCHEMA_REF)
        elif key in ("properties", "patternProperties", "definitions"):
            out[key] = {name: restore(child) for name, child in value.items()}
        else:
            out[key] = restore(value)
    if "$ref" in out and len(out) > 1:
        out["allOf"] = [{"$ref": out.pop("$ref")}]
    return out


def references(schema, found):
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value.removeprefix(OPENAPI_REF))
            else:
                references(value, found)
    elif isinstance(schema, list):
        for item in schema:
            references(item, found)


def main():
    with zipfile.ZipFile(sys.argv[1]) as wheel:
        definitions = json.loads(wheel.read(SOURCE))["$defs"]
    schemas = {name: restore(schema) for name, schema in definitions.items()}
    roots = []
    for group, version, kind in KINDS:
        matches = [name for name, schema in schemas.items()
                   if {"group": group, "version": version, "kind": kind}
                   in schema.get("x-kubernetes-group-version-kind", [])]
        if len(matches) != 1:
            sys.exit(f"{group}/{version} {kind}: {len(matches)} definitions")
        roots.append(matches[0])
        for field in ("apiVersion", "kind"):
            schemas[matches[0]].get("properties", {}).get(field, {}).pop("enum", None)
    wanted, pending = set(), list(roots)
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        wanted.add(name)
        found = set()
        references(schemas[name], found)
        pending.extend(found - wanted)
    subset = {name: schemas[name] for name in sorted(wanted)}
    data = json.dumps(subset, separators=(",", ":"), sort_keys=True).encode()
    with open(OUTPUT, "wb") as out:
        out.write(zlib.compress(data, 9))
    print(f"{len(subset)} schemas, {len(data)} bytes of JSON, {len(zlib.compress(data, 9))} compressed",
          file=sys.stderr)


if __name__ == "__main__":
    main()
