#!/usr/bin/env python3
"""Generates src/api/protobuf/schema.rs: the protobuf field numbers of the kinds whose protobuf bodies are decoded (the
served kinds, and the review kinds that `kubectl auth can-i` and `auth whoami` send) and of every message they reach,
with their JSON names.

Field numbers come from the prost bindings of the `k8s-pb` crate, JSON names from the `k8s-openapi` crate (both
from the cargo registry; `cargo fetch` them first, e.g. with `cargo info k8s-pb`). k8s-pb 0.9 is prost's output for
the upstream generated.proto files of k8s.io/api and apimachinery (a release newer than 1.33: protobuf field numbers
are never reused or renumbered, so a later release is a superset). k8s-openapi has no JSON names for beta and alpha
versions (authentication.k8s.io/v1beta1, v1alpha1); their fields take the camelCase of the Rust name, which is what
the Go JSON tags are. Run from the crate directory:
    python3 tools/gen_protobuf_schema.py > src/api/protobuf/schema.rs
"""
import glob
import os
import re
import sys

REGISTRY = glob.glob(os.path.expanduser("~/.cargo/registry/src/*/"))[0]
PB = glob.glob(REGISTRY + "k8s-pb-0.9.*/src")[0]
OPENAPI = glob.glob(REGISTRY + "k8s-openapi-0.29.*/src/v1_33")[0]

MODULES = ["api/core/v1", "api/batch/v1", "api/apps/v1", "api/coordination/v1", "api/events/v1",
           "api/networking/v1", "api/autoscaling/v1", "api/autoscaling/v2",
           "apimachinery/pkg/apis/meta/v1", "apimachinery/pkg/api/resource", "apimachinery/pkg/util/intstr",
           "apimachinery/pkg/runtime", "api/authorization/v1", "api/authentication/v1", "api/authentication/v1beta1",
           "api/authentication/v1alpha1"]
ROOTS = [("v1", "Pod", "api/core/v1"), ("v1", "ConfigMap", "api/core/v1"), ("v1", "Namespace", "api/core/v1"),
         ("v1", "Service", "api/core/v1"), ("v1", "Event", "api/core/v1"), ("v1", "LimitRange", "api/core/v1"),
         ("v1", "ResourceQuota", "api/core/v1"), ("batch/v1", "Job", "api/batch/v1"),
         ("batch/v1", "CronJob", "api/batch/v1"), ("apps/v1", "Deployment", "api/apps/v1"),
         ("apps/v1", "ReplicaSet", "api/apps/v1"), ("coordination.k8s.io/v1", "Lease", "api/coordination/v1"),
         ("events.k8s.io/v1", "Event", "api/events/v1"),
         ("v1", "Secret", "api/core/v1"), ("v1", "Endpoints", "api/core/v1"),
         ("v1", "PersistentVolumeClaim", "api/core/v1"), ("v1", "PersistentVolume", "api/core/v1"),
         ("v1", "ReplicationController", "api/core/v1"), ("apps/v1", "DaemonSet", "api/apps/v1"),
         ("apps/v1", "StatefulSet", "api/apps/v1"), ("networking.k8s.io/v1", "Ingress", "api/networking/v1"),
         ("autoscaling/v1", "HorizontalPodAutoscaler", "api/autoscaling/v1"),
         ("autoscaling/v2", "HorizontalPodAutoscaler", "api/autoscaling/v2"),
         # `kubectl auth can-i` (and `--list`) and `kubectl auth whoami` (v1, then v1beta1 and v1alpha1 on a 404).
         ("authorization.k8s.io/v1", "SelfSubjectAccessReview", "api/authorization/v1"),
         ("authorization.k8s.io/v1", "SelfSubjectRulesReview", "api/authorization/v1"),
         ("authentication.k8s.io/v1", "SelfSubjectReview", "api/authentication/v1"),
         ("authentication.k8s.io/v1beta1", "SelfSubjectReview", "api/authentication/v1beta1"),
         ("authentication.k8s.io/v1alpha1", "SelfSubjectReview", "api/authentication/v1alpha1")]
SPECIAL = {("apimachinery/pkg/apis/meta/v1", "Time"): "Time", ("apimachinery/pkg/apis/meta/v1", "MicroTime"): "MicroTime",
           ("apimachinery/pkg/api/resource", "Quantity"): "Quantity",
           ("apimachinery/pkg/util/intstr", "IntOrString"): "IntOrString",
           ("apimachinery/pkg/runtime", "RawExtension"): "RawJson", ("apimachinery/pkg/apis/meta/v1", "FieldsV1"): "RawJson",
           # `UserInfo.extra`, `SubjectAccessReviewSpec.extra`: a message of one repeated string, an array in JSON.
           ("api/authentication/v1", "ExtraValue"): "StringList", ("api/authentication/v1beta1", "ExtraValue"): "StringList",
           ("api/authorization/v1", "ExtraValue"): "StringList"}
MAPS = {"Quantity": "Kind::MapQuantity", "StringList": "Kind::MapStringList"}
SCALARS = {"string": "String", "bool": "Bool", "int32": "Int", "int64": "Int", "uint32": "Int", "uint64": "Int",
           "bytes": "Bytes"}

# `r#type` is the field `type` (a Rust keyword).
FIELD = re.compile(r'#\[prost\(([^\]]*)\)\]\s*pub (?:r#)?(\w+):(.*?)(?=\n\s*(?:///|#\[prost|\}))', re.S)


def structs(module):
    text = open(f"{PB}/{module}/mod.rs").read()
    out = {}
    for match in re.finditer(r'pub struct (\w+) \{(.*?)\n\}', text, re.S):
        fields = []
        for attr, name, rust_type in FIELD.findall(match.group(2) + "\n}"):
            tag = int(re.search(r'tag = "(\d+)"', attr).group(1))
            fields.append((tag, name, attr, rust_type.strip().rstrip(",")))
        out[match.group(1)] = fields
    return out


def json_names(module):
    names = {}
    for path in glob.glob(f"{OPENAPI}/{module}/*.rs"):
        text = open(path).read()
        struct = re.search(r'pub struct (\w+)', text)
        if struct:
            names[struct.group(1)] = dict((snake, key) for key, snake in re.findall(r'"(\w+)" => Field::Key_(\w+),', text))
    return names


def camel(snake):
    head, *rest = snake.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def resolve(module, rust_type):
    inner = re.findall(r'[\w:]+', rust_type.replace("::core::option::Option", "").replace("::prost::alloc::vec::Vec", "")
                       .replace("::prost::alloc::collections::BTreeMap", "").replace("::prost::alloc::string::String", ""))
    path = inner[-1].split("::")
    parts = module.split("/")
    while path[0] == "super":
        path.pop(0)
        parts.pop()
    return ("/".join(parts + path[:-1]) if len(path) > 1 else module), path[-1]


def const_name(module, name):
    return "M_" + re.sub(r'\W', "_", module.replace("apimachinery/pkg/", "").replace("api/", "")).upper() + "_" + name.upper()


def main():
    pb = {m: structs(m) for m in MODULES}
    openapi = {m: json_names(m) for m in MODULES}
    todo = [(module, kind) for _, kind, module in ROOTS]
    done = {}
    while todo:
        module, name = todo.pop()
        if (module, name) in done or (module, name) in SPECIAL:
            continue
        entries = []
        for tag, snake, attr, rust_type in pb[module][name]:
            json = openapi[module].get(name, {}).get(snake) or camel(snake)
            repeated = "repeated" in attr
            kind_word = attr.split(",")[0].split("=")[0].strip()
            if kind_word == "btree_map":
                value = re.search(r'btree_map = "string, (\w+)"', attr).group(1)
                if value == "message":
                    target = resolve(module, rust_type)
                    if SPECIAL.get(target) not in MAPS:
                        sys.exit(f"map of {target} in {module}.{name}: add a Kind for it")
                    kind = MAPS[SPECIAL[target]]
                else:
                    kind = {"string": "Kind::MapString", "bytes": "Kind::MapBytes"}[value]
            elif kind_word == "message":
                target = resolve(module, rust_type)
                if target in SPECIAL:
                    kind = "Kind::" + SPECIAL[target]
                else:
                    todo.append(target)
                    kind = f"Kind::Message(&{const_name(*target)})"
            else:
                kind = "Kind::" + SCALARS[kind_word]
            entries.append(f'    Field {{ tag: {tag}, name: "{json}", kind: {kind}, repeated: {str(repeated).lower()} }},')
        done[(module, name)] = entries
    out = ["//! Generated by `tools/gen_protobuf_schema.py` from k8s-pb (field numbers) and k8s-openapi (JSON names);",
           "//! do not edit. The protobuf fields of every message the decoded kinds reach.", "",
           "use super::{Field, Kind};", ""]
    for (module, name), entries in sorted(done.items()):
        out.append(f"static {const_name(module, name)}: [Field; {len(entries)}] = [")
        out.extend(entries)
        out.append("];")
        out.append("")
    out.append("/// The message of a decoded kind, by `apiVersion` and `kind`.")
    out.append("pub(super) fn root(api_version: &str, kind: &str) -> Option<&'static [Field]> {")
    out.append("    match (api_version, kind) {")
    for api_version, kind, module in ROOTS:
        out.append(f'        ("{api_version}", "{kind}") => Some(&{const_name(module, kind)}),')
    out.append("        _ => None,")
    out.append("    }")
    out.append("}")
    sys.stdout.write("\n".join(out) + "\n")


main()
