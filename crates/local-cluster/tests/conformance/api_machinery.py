"""The API machinery through the official client's typed APIs (reference §1): discovery, CRUD for every served
type, Status bodies, optimistic concurrency, paging, selectors, dry-run, server-side apply, server-set fields."""

import datetime
import json
import re

from kubernetes import client, dynamic

from common import (
    NAMESPACE,
    api_error,
    assert_status,
    configmap,
    deployment,
    job,
    meta,
    owner,
    pod,
    pod_template,
)


def discovery():
    api = owner()
    version = client.VersionApi(api).get_code()
    assert (version.major, version.minor, version.git_version[:6]) == ("1", "33", "v1.33."), version
    assert "v1" in client.CoreApi(api).get_api_versions().versions
    groups = {group.name: group for group in client.ApisApi(api).get_api_versions().groups}
    for name, version in [
        ("batch", "batch/v1"),
        ("apps", "apps/v1"),
        ("coordination.k8s.io", "coordination.k8s.io/v1"),
        ("events.k8s.io", "events.k8s.io/v1"),
        ("apiextensions.k8s.io", "apiextensions.k8s.io/v1"),
    ]:
        assert groups[name].preferred_version.group_version == version, groups.get(name)
    core = {resource.name: resource for resource in client.CoreV1Api(api).get_api_resources().resources}
    assert core["pods"].namespaced and core["pods"].kind == "Pod", core["pods"]
    assert {"create", "delete", "get", "list", "patch", "update", "watch"} <= set(core["pods"].verbs)
    assert "pods/log" in core and "pods/status" in core, sorted(core)
    assert not core["namespaces"].namespaced
    batch = {resource.name: resource for resource in client.BatchV1Api(api).get_api_resources().resources}
    assert batch["jobs"].kind == "Job" and batch["cronjobs"].kind == "CronJob", batch
    apps = {resource.name: resource for resource in client.AppsV1Api(api).get_api_resources().resources}
    assert "deployments/scale" in apps, sorted(apps)


def bodies_without_a_content_type():
    """The client sends create, replace and delete bodies without a Content-Type; Kubernetes reads them as JSON."""
    core = client.CoreV1Api(owner())
    made = core.create_namespaced_config_map(NAMESPACE, configmap("untyped", {"a": "1"}))
    assert made.data == {"a": "1"}
    made.data = {"a": "2"}
    assert core.replace_namespaced_config_map("untyped", NAMESPACE, made).data == {"a": "2"}
    gone = core.delete_namespaced_config_map("untyped", NAMESPACE, body=client.V1DeleteOptions(grace_period_seconds=0))
    assert gone["status"] == "Success", gone


def dynamic_client():
    """The dynamic client discovers every group itself, then works by kind."""
    dyn = dynamic.DynamicClient(owner())
    jobs = dyn.resources.get(api_version="batch/v1", kind="Job")
    assert jobs.namespaced and jobs.name == "jobs"
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    made = configmaps.create(
        body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dyn"}, "data": {"a": "1"}},
        namespace=NAMESPACE,
    )
    assert made.metadata.name == "dyn" and made.data.a == "1"
    listed = configmaps.get(namespace=NAMESPACE, label_selector="")
    assert "dyn" in [item.metadata.name for item in listed.items], listed
    assert listed.kind == "ConfigMapList"
    configmaps.delete(name="dyn", namespace=NAMESPACE)
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert deployments.get(namespace=NAMESPACE).items == []


def _round_trip(kind, create, read, listing, patch, delete, body, name, **delete_options):
    """Create, read, list, label-patch and delete one object of `kind` through the typed API."""
    created = create(body)
    assert created.metadata.name == name, (kind, created.metadata)
    assert created.metadata.uid and created.metadata.resource_version, (kind, created.metadata)
    assert created.metadata.creation_timestamp is not None, kind
    read_back = read(name)
    assert read_back.metadata.uid == created.metadata.uid, kind
    assert name in [item.metadata.name for item in listing().items], kind
    patched = patch(name, {"metadata": {"labels": {"conformance": "patched"}}})
    assert patched.metadata.labels.get("conformance") == "patched", (kind, patched.metadata)
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version), kind
    delete(name, **delete_options)
    if kind == "Namespace":
        return
    error, body = api_error(read, name)
    assert error.status == 404, (kind, body)


def crud_every_served_type():
    api = owner()
    core = client.CoreV1Api(api)
    batch = client.BatchV1Api(api)
    apps = client.AppsV1Api(api)
    coordination = client.CoordinationV1Api(api)
    events = client.EventsV1Api(api)
    ns = NAMESPACE

    def namespaced(create, read, listing, patch, delete):
        return (
            lambda body: create(ns, body),
            lambda name: read(name, ns),
            lambda: listing(ns),
            lambda name, body: patch(name, ns, body),
            lambda name, **options: delete(name, ns, **options),
        )

    regarding = client.V1ObjectReference(kind="ConfigMap", name="anything", namespace=ns, api_version="v1")
    cases = [
        (
            "ConfigMap",
            namespaced(
                core.create_namespaced_config_map,
                core.read_namespaced_config_map,
                core.list_namespaced_config_map,
                core.patch_namespaced_config_map,
                core.delete_namespaced_config_map,
            ),
            configmap("crud", {"a": "1"}),
            {},
        ),
        (
            "Pod",
            namespaced(
                core.create_namespaced_pod,
                core.read_namespaced_pod,
                core.list_namespaced_pod,
                core.patch_namespaced_pod,
                core.delete_namespaced_pod,
            ),
            pod("crud", "sleep 60"),
            {"grace_period_seconds": 0},
        ),
        (
            "Service",
            namespaced(
                core.create_namespaced_service,
                core.read_namespaced_service,
                core.list_namespaced_service,
                core.patch_namespaced_service,
                core.delete_namespaced_service,
            ),
            client.V1Service(
                metadata=meta("crud"),
                spec=client.V1ServiceSpec(
                    selector={"app": "crud"}, ports=[client.V1ServicePort(port=80, target_port=8080)]
                ),
            ),
            {},
        ),
        (
            "LimitRange",
            namespaced(
                core.create_namespaced_limit_range,
                core.read_namespaced_limit_range,
                core.list_namespaced_limit_range,
                core.patch_namespaced_limit_range,
                core.delete_namespaced_limit_range,
            ),
            client.V1LimitRange(
                metadata=meta("crud"),
                spec=client.V1LimitRangeSpec(
                    limits=[client.V1LimitRangeItem(type="Container", max={"memory": "1Gi"})]
                ),
            ),
            {},
        ),
        (
            "ResourceQuota",
            namespaced(
                core.create_namespaced_resource_quota,
                core.read_namespaced_resource_quota,
                core.list_namespaced_resource_quota,
                core.patch_namespaced_resource_quota,
                core.delete_namespaced_resource_quota,
            ),
            client.V1ResourceQuota(metadata=meta("crud"), spec=client.V1ResourceQuotaSpec(hard={"pods": "100"})),
            {},
        ),
        (
            "Event",
            namespaced(
                core.create_namespaced_event,
                core.read_namespaced_event,
                core.list_namespaced_event,
                core.patch_namespaced_event,
                core.delete_namespaced_event,
            ),
            client.CoreV1Event(
                metadata=meta("crud"), involved_object=regarding, reason="Testing", message="hello", type="Normal"
            ),
            {},
        ),
        (
            "events.k8s.io Event",
            namespaced(
                events.create_namespaced_event,
                events.read_namespaced_event,
                # Only this one: the kubelet's core Events have no eventTime, which converts to null, which this
                # client's model refuses (so it would on Kubernetes too).
                lambda namespace: events.list_namespaced_event(namespace, field_selector="metadata.name=crud2"),
                events.patch_namespaced_event,
                events.delete_namespaced_event,
            ),
            client.EventsV1Event(
                metadata=meta("crud2"),
                regarding=regarding,
                reason="Testing",
                note="hello",
                type="Normal",
                action="Test",
                reporting_controller="example.com/conformance",
                reporting_instance="conformance-1",
                event_time=datetime.datetime.now(datetime.timezone.utc),
            ),
            {},
        ),
        (
            "Lease",
            namespaced(
                coordination.create_namespaced_lease,
                coordination.read_namespaced_lease,
                coordination.list_namespaced_lease,
                coordination.patch_namespaced_lease,
                coordination.delete_namespaced_lease,
            ),
            client.V1Lease(metadata=meta("crud"), spec=client.V1LeaseSpec(holder_identity="me")),
            {},
        ),
        (
            "Job",
            namespaced(
                batch.create_namespaced_job,
                batch.read_namespaced_job,
                batch.list_namespaced_job,
                batch.patch_namespaced_job,
                batch.delete_namespaced_job,
            ),
            job("crud", "true"),
            {"propagation_policy": "Background"},
        ),
        (
            "CronJob",
            namespaced(
                batch.create_namespaced_cron_job,
                batch.read_namespaced_cron_job,
                batch.list_namespaced_cron_job,
                batch.patch_namespaced_cron_job,
                batch.delete_namespaced_cron_job,
            ),
            client.V1CronJob(
                metadata=meta("crud"),
                spec=client.V1CronJobSpec(
                    schedule="0 3 * * *",
                    job_template=client.V1JobTemplateSpec(spec=client.V1JobSpec(template=pod_template("true", "Never"))),
                ),
            ),
            {},
        ),
        (
            "Deployment",
            namespaced(
                apps.create_namespaced_deployment,
                apps.read_namespaced_deployment,
                apps.list_namespaced_deployment,
                apps.patch_namespaced_deployment,
                apps.delete_namespaced_deployment,
            ),
            deployment("crud", "sleep 60", 0),
            {},
        ),
        (
            "ReplicaSet",
            namespaced(
                apps.create_namespaced_replica_set,
                apps.read_namespaced_replica_set,
                apps.list_namespaced_replica_set,
                apps.patch_namespaced_replica_set,
                apps.delete_namespaced_replica_set,
            ),
            client.V1ReplicaSet(
                metadata=meta("crud"),
                spec=client.V1ReplicaSetSpec(
                    replicas=0,
                    selector=client.V1LabelSelector(match_labels={"rs": "crud"}),
                    template=pod_template("sleep 60", "Always", {"rs": "crud"}),
                ),
            ),
            {},
        ),
        (
            "Namespace",
            (
                core.create_namespace,
                core.read_namespace,
                core.list_namespace,
                core.patch_namespace,
                core.delete_namespace,
            ),
            client.V1Namespace(metadata=meta("crud")),
            {},
        ),
    ]
    for kind, (create, read, listing, patch, delete), body, delete_options in cases:
        _round_trip(kind, create, read, listing, patch, delete, body, body.metadata.name, **delete_options)
    assert [node.metadata.name for node in core.list_node().items] == ["local"]


def patch_types():
    """JSON patch, merge patch and strategic merge patch, chosen by the client's content type."""
    core = client.CoreV1Api(owner())
    core.create_namespaced_config_map(NAMESPACE, configmap("patched", {"a": "1", "b": "2"}))
    merged = core.patch_namespaced_config_map(
        "patched", NAMESPACE, {"data": {"a": None, "c": "3"}}, _content_type="application/merge-patch+json"
    )
    assert merged.data == {"b": "2", "c": "3"}, merged.data
    json_patched = core.patch_namespaced_config_map(
        "patched", NAMESPACE, [{"op": "replace", "path": "/data/b", "value": "20"}]
    )
    assert json_patched.data == {"b": "20", "c": "3"}, json_patched.data
    error, body = api_error(
        core.patch_namespaced_config_map,
        "patched",
        NAMESPACE,
        [{"op": "test", "path": "/data/b", "value": "wrong"}],
    )
    assert error.status == 422, body
    core.create_namespaced_pod(NAMESPACE, pod("smp", "sleep 60"))
    strategic = core.patch_namespaced_pod(
        "smp",
        NAMESPACE,
        {"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}},
    )
    assert [c.image for c in strategic.spec.containers] == ["busybox:2"], strategic.spec.containers
    assert strategic.spec.containers[0].command == ["sh", "-c", "sleep 60"], "the merge kept the command"
    core.delete_namespaced_pod("smp", NAMESPACE, grace_period_seconds=0)


def error_bodies():
    api = owner()
    core = client.CoreV1Api(api)
    batch = client.BatchV1Api(api)
    error, body = api_error(core.read_namespaced_config_map, "missing", NAMESPACE)
    assert error.status == 404 and error.reason == "Not Found", (error.status, error.reason)
    assert_status(body, 404, "NotFound", 'configmaps "missing" not found', {"name": "missing", "kind": "configmaps"})
    assert "group" not in body["details"], body
    _, body = api_error(batch.read_namespaced_job, "missing", NAMESPACE)
    assert_status(
        body, 404, "NotFound", 'jobs.batch "missing" not found', {"name": "missing", "group": "batch", "kind": "jobs"}
    )
    core.create_namespaced_config_map(NAMESPACE, configmap("twice"))
    error, body = api_error(core.create_namespaced_config_map, NAMESPACE, configmap("twice"))
    assert error.status == 409
    assert_status(body, 409, "AlreadyExists", 'configmaps "twice" already exists', {"name": "twice"})
    _, body = api_error(core.create_namespaced_config_map, "nowhere", configmap("x"))
    assert_status(body, 404, "NotFound", 'namespaces "nowhere" not found', {"name": "nowhere", "kind": "namespaces"})
    _, body = api_error(batch.create_namespaced_job, NAMESPACE, job("bad", "true", restart_policy="Always"))
    assert_status(
        body,
        422,
        "Invalid",
        'Job.batch "bad" is invalid: spec.template.spec.restartPolicy: Required value: '
        'valid values: "OnFailure", "Never"',
        {"name": "bad", "group": "batch", "kind": "Job"},
    )
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": 'Required value: valid values: "OnFailure", "Never"',
            "field": "spec.template.spec.restartPolicy",
        }
    ], body
    _, body = api_error(
        client.AppsV1Api(api).create_namespaced_deployment,
        NAMESPACE,
        _with_restart_policy(deployment("bad", "true", 1), "Never"),
    )
    assert_status(
        body,
        422,
        "Invalid",
        'Deployment.apps "bad" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Never": '
        'supported values: "Always"',
        {"kind": "Deployment", "group": "apps"},
    )
    assert body["details"]["causes"][0]["reason"] == "FieldValueNotSupported", body
    _, body = api_error(core.list_namespaced_config_map, NAMESPACE, field_selector="spec.nothing=1")
    assert_status(body, 400, "BadRequest")
    assert "field label not supported: spec.nothing" in body["message"], body
    _, body = api_error(core.list_namespaced_config_map, NAMESPACE, label_selector="a in (b")
    assert_status(body, 400, "BadRequest")
    body = configmap("x")
    body.metadata.namespace = "elsewhere"
    _, body = api_error(core.create_namespaced_config_map, NAMESPACE, body)
    assert_status(
        body,
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
    )
    _, body = api_error(core.replace_namespaced_config_map, "other-name", NAMESPACE, configmap("twice"))
    assert_status(body, 400, "BadRequest")
    assert "does not match the name on the URL" in body["message"], body


def _with_restart_policy(deployment_body, restart_policy):
    deployment_body.spec.template.spec.restart_policy = restart_policy
    return deployment_body


def optimistic_concurrency():
    core = client.CoreV1Api(owner())
    first = core.create_namespaced_config_map(NAMESPACE, configmap("occ", {"n": "1"}))
    first.data = {"n": "2"}
    second = core.replace_namespaced_config_map("occ", NAMESPACE, first)
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    first.data = {"n": "3"}
    error, body = api_error(core.replace_namespaced_config_map, "occ", NAMESPACE, first)
    assert error.status == 409
    assert_status(
        body,
        409,
        "Conflict",
        'Operation cannot be fulfilled on configmaps "occ": the object has been modified; '
        "please apply your changes to the latest version and try again",
        {"name": "occ", "kind": "configmaps"},
    )
    _, body = api_error(
        core.patch_namespaced_config_map,
        "occ",
        NAMESPACE,
        {"metadata": {"resourceVersion": first.metadata.resource_version}, "data": {"n": "4"}},
    )
    assert_status(body, 409, "Conflict")
    unchanged = core.replace_namespaced_config_map("occ", NAMESPACE, second)
    assert unchanged.metadata.resource_version == second.metadata.resource_version, "a no-op keeps the version"
    unconditional = configmap("occ", {"n": "5"})
    assert core.replace_namespaced_config_map("occ", NAMESPACE, unconditional).data == {"n": "5"}
    _, body = api_error(
        core.delete_namespaced_config_map,
        "occ",
        NAMESPACE,
        body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="00000000-0000-0000-0000-000000000000")),
    )
    assert_status(body, 409, "Conflict")
    status = core.delete_namespaced_config_map(
        "occ",
        NAMESPACE,
        body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=first.metadata.uid)),
    )
    assert status["status"] == "Success" and status["details"]["uid"] == first.metadata.uid, status


def list_paging():
    core = client.CoreV1Api(owner())
    names = [f"page-{n}" for n in range(7)]
    for name in reversed(names):
        core.create_namespaced_config_map(NAMESPACE, configmap(name, labels={"paged": "yes"}))
    first = core.list_namespaced_config_map(NAMESPACE, label_selector="paged", limit=3)
    assert len(first.items) == 3 and first.metadata._continue, first.metadata
    core.create_namespaced_config_map(NAMESPACE, configmap("page-9", labels={"paged": "yes"}))
    second = core.list_namespaced_config_map(NAMESPACE, label_selector="paged", limit=3, _continue=first.metadata._continue)
    assert len(second.items) == 3 and second.metadata._continue, second.metadata
    assert second.metadata.resource_version == first.metadata.resource_version, "one snapshot for every page"
    third = core.list_namespaced_config_map(NAMESPACE, label_selector="paged", limit=3, _continue=second.metadata._continue)
    assert not third.metadata._continue, third.metadata
    seen = [item.metadata.name for page in (first, second, third) for item in page.items]
    assert seen == names, seen
    everything = core.list_namespaced_config_map(NAMESPACE, label_selector="paged")
    assert [item.metadata.name for item in everything.items] == names + ["page-9"]
    assert int(everything.metadata.resource_version) > int(first.metadata.resource_version)
    across = core.list_config_map_for_all_namespaces(label_selector="paged", limit=100)
    assert len(across.items) == 8 and not across.metadata._continue


def selectors():
    core = client.CoreV1Api(owner())
    for name, labels in [
        ("a", {"env": "prod", "tier": "web"}),
        ("b", {"env": "dev", "tier": "db"}),
        ("c", {"env": "test"}),
        ("d", {}),
    ]:
        core.create_namespaced_config_map(NAMESPACE, configmap(name, labels=labels))

    def names(**selector):
        return sorted(
            item.metadata.name
            for item in core.list_namespaced_config_map(NAMESPACE, **selector).items
            if item.metadata.name in "abcd"
        )

    assert names(label_selector="env=prod") == ["a"]
    assert names(label_selector="env==dev") == ["b"]
    assert names(label_selector="env!=prod") == ["b", "c", "d"], "!= matches objects without the key"
    assert names(label_selector="env in (prod, dev)") == ["a", "b"]
    assert names(label_selector="env notin (prod,dev)") == ["c", "d"]
    assert names(label_selector="tier") == ["a", "b"]
    assert names(label_selector="!tier") == ["c", "d"]
    assert names(label_selector="env,!tier") == ["c"]
    assert names(field_selector="metadata.name=b") == ["b"]
    assert names(field_selector="metadata.name!=b") == ["a", "c", "d"]
    assert names(field_selector=f"metadata.namespace={NAMESPACE},metadata.name==c") == ["c"]
    assert names(label_selector="env", field_selector="metadata.name!=a") == ["b", "c"]
    core.delete_collection_namespaced_config_map(NAMESPACE, label_selector="env in (dev,test)")
    assert names() == ["a", "d"]


def dry_run():
    api = owner()
    core = client.CoreV1Api(api)
    made = core.create_namespaced_config_map(NAMESPACE, configmap("dry", {"a": "1"}), dry_run="All")
    assert made.metadata.uid and made.metadata.creation_timestamp, made.metadata
    assert not made.metadata.resource_version, made.metadata
    error, _ = api_error(core.read_namespaced_config_map, "dry", NAMESPACE)
    assert error.status == 404, "a dry run stores nothing"
    core.create_namespaced_config_map(NAMESPACE, configmap("dry", {"a": "1"}))
    _, body = api_error(core.create_namespaced_config_map, NAMESPACE, configmap("dry"), dry_run="All")
    assert_status(body, 409, "AlreadyExists")
    patched = core.patch_namespaced_config_map("dry", NAMESPACE, {"data": {"a": "2"}}, dry_run="All")
    assert patched.data == {"a": "2"}
    assert core.read_namespaced_config_map("dry", NAMESPACE).data == {"a": "1"}
    core.delete_namespaced_config_map("dry", NAMESPACE, dry_run="All")
    assert core.read_namespaced_config_map("dry", NAMESPACE).data == {"a": "1"}
    _, body = api_error(core.create_namespaced_config_map, NAMESPACE, configmap("dry2"), dry_run="Yes")
    assert_status(body, 422, "Invalid")
    defaulted = client.BatchV1Api(api).create_namespaced_job(NAMESPACE, job("dry", "true"), dry_run="All")
    assert defaulted.spec.backoff_limit == 6 and defaulted.metadata.generation == 1, defaulted.spec
    assert defaulted.spec.template.spec.containers[0].termination_message_path == "/dev/termination-log"


def server_side_apply():
    core = client.CoreV1Api(owner())
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "1", "b": "2"}}
    made, code, _ = core.patch_namespaced_config_map_with_http_info(
        "ssa", NAMESPACE, applied, field_manager="conformance", _content_type="application/apply-patch+yaml"
    )
    assert code == 201 and made.data == {"a": "1", "b": "2"}, (code, made.data)
    applied["data"] = {"a": "10"}
    changed, code, _ = core.patch_namespaced_config_map_with_http_info(
        "ssa", NAMESPACE, applied, field_manager="conformance", _content_type="application/apply-patch+yaml"
    )
    assert code == 200 and changed.data == {"a": "10"}, (code, changed.data)
    _, body = api_error(
        core.patch_namespaced_config_map, "ssa", NAMESPACE, applied, _content_type="application/apply-patch+yaml"
    )
    assert_status(
        body,
        422,
        "Invalid",
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
    )
    _, body = api_error(core.patch_namespaced_config_map, "ssa", NAMESPACE, {"data": {"a": "1"}}, force=True)
    assert_status(body, 422, "Invalid")
    assert "force: Forbidden: may not be specified for non-apply patch" in body["message"], body


def server_side_apply_field_managers():
    """managedFields name who applied what; another manager changing an owned field conflicts until forced."""
    core = client.CoreV1Api(owner())
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": {"a": "1"}}
    made = core.patch_namespaced_config_map(
        "owned", NAMESPACE, applied, field_manager="first", _content_type="application/apply-patch+yaml"
    )
    managers = {(entry.manager, entry.operation) for entry in made.metadata.managed_fields or []}
    assert ("first", "Apply") in managers, made.metadata.managed_fields
    entry = next(entry for entry in made.metadata.managed_fields if entry.manager == "first")
    assert entry.fields_type == "FieldsV1" and "f:data" in entry.fields_v1, entry
    taking = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"}, "data": {"a": "2"}}
    error, body = api_error(
        core.patch_namespaced_config_map,
        "owned",
        NAMESPACE,
        taking,
        field_manager="second",
        _content_type="application/apply-patch+yaml",
    )
    assert_status(body, 409, "Conflict")
    causes = body["details"]["causes"]
    # Kubernetes names the field in the cause's `field` only (the message of the Status lists both).
    assert causes == [{"reason": "FieldManagerConflict", "message": 'conflict with "first"', "field": ".data.a"}], causes
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "first": .data.a', body
    forced = core.patch_namespaced_config_map(
        "owned",
        NAMESPACE,
        taking,
        field_manager="second",
        force=True,
        _content_type="application/apply-patch+yaml",
    )
    assert forced.data == {"a": "2"}
    updated = core.patch_namespaced_config_map("owned", NAMESPACE, {"data": {"b": "3"}}, field_manager="editor")
    assert ("editor", "Update") in {(e.manager, e.operation) for e in updated.metadata.managed_fields}


def server_set_fields():
    """What the server sets on create, whatever the client sent (reference §1.2, §2.2)."""
    api = owner()
    apps = client.AppsV1Api(api)
    core = client.CoreV1Api(api)
    sent = deployment("status-reset", "sleep 60", 0)
    sent.status = client.V1DeploymentStatus(replicas=5, ready_replicas=5)
    made = apps.create_namespaced_deployment(NAMESPACE, sent)
    assert made.metadata.generation == 1
    assert not (made.status and made.status.ready_replicas), made.status
    assert made.spec.strategy.type == "RollingUpdate", made.spec.strategy
    assert made.spec.revision_history_limit == 10 and made.spec.progress_deadline_seconds == 600
    generated = core.create_namespaced_config_map(
        NAMESPACE, client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="gen-"))
    )
    assert re.fullmatch(r"gen-[bcdfghjklmnpqrstvwxz2456789]{5}", generated.metadata.name), generated.metadata.name
    quantities = pod("quantities", "sleep 60")
    quantities.spec.containers[0].resources = client.V1ResourceRequirements(limits={"memory": "0.5Gi", "cpu": "0.5"})
    stored = core.create_namespaced_pod(NAMESPACE, quantities)
    resources = stored.spec.containers[0].resources
    assert resources.limits == {"memory": "512Mi", "cpu": "500m"}, resources
    assert resources.requests == {"memory": "512Mi", "cpu": "500m"}, "requests default to the limits"
    assert stored.status.phase == "Pending" and stored.status.qos_class == "Guaranteed", stored.status
    core.delete_namespaced_pod("quantities", NAMESPACE, grace_period_seconds=0)


def deletes_return_the_object_where_kubernetes_does():
    """Services and ResourceQuotas, like pods, answer a delete with the deleted object (their stores return it), and
    the client's typed calls expect exactly that."""
    core = client.CoreV1Api(owner())
    core.create_namespaced_service(
        NAMESPACE,
        client.V1Service(
            metadata=meta("deleted"),
            spec=client.V1ServiceSpec(selector={"app": "x"}, ports=[client.V1ServicePort(port=80)]),
        ),
    )
    deleted = core.delete_namespaced_service("deleted", NAMESPACE)
    assert isinstance(deleted, client.V1Service) and deleted.metadata.name == "deleted", deleted
    core.create_namespaced_resource_quota(
        NAMESPACE, client.V1ResourceQuota(metadata=meta("deleted"), spec=client.V1ResourceQuotaSpec(hard={"pods": "9"}))
    )
    deleted = core.delete_namespaced_resource_quota("deleted", NAMESPACE)
    assert isinstance(deleted, client.V1ResourceQuota) and deleted.spec.hard == {"pods": "9"}, deleted


def decoding_and_field_validation():
    """Bodies the typed models cannot express, sent through the client's own transport: unknown fields under each
    fieldValidation, malformed JSON, wrong-typed fields, a replace of a missing object, a read from the future
    (reference §1.4–1.7)."""
    api = owner()
    core = client.CoreV1Api(api)
    path = f"{api.configuration.host}/api/v1/namespaces/{NAMESPACE}/configmaps"
    headers = {"Content-Type": "application/json", "Accept": "application/json"}

    def request(method, url, body=None):
        response = api.call_api(method, url, dict(headers), body)
        response.read()
        return response.status, json.loads(response.data), response.getheaders()

    def post(query, body):
        return request("POST", path + query, body)

    extra = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "strict"}, "spec": {"x": 1}}
    code, body, _ = post("?fieldValidation=Strict", extra)
    assert code == 400, (code, body)
    assert_status(
        body,
        400,
        "BadRequest",
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "spec"',
    )
    code, body, response_headers = post("", extra)
    assert code == 201 and body["metadata"]["name"] == "strict" and "spec" not in body, (code, body)
    assert response_headers.get("Warning") == '299 - "unknown field \\"spec\\""', response_headers
    extra["metadata"]["name"] = "ignored"
    code, body, response_headers = post("?fieldValidation=Ignore", extra)
    assert code == 201 and "Warning" not in response_headers, response_headers
    code, body, _ = post("", '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ')
    assert_status(body, 400, "BadRequest")
    _, body = api_error(core.replace_namespaced_config_map, "never-made", NAMESPACE, configmap("never-made"))
    assert_status(body, 404, "NotFound", 'configmaps "never-made" not found')
    current = int(core.list_namespaced_config_map(NAMESPACE).metadata.resource_version)
    code, body, _ = request("GET", f"{path}/strict?resourceVersion={current + 1000}")
    assert_status(body, 504, "Timeout")
    assert body["message"].startswith(f"Too large resource version: {current + 1000}, current: "), body
    assert body["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge", body

    # A value of the wrong type names the field, as Go's decoder does (int-or-string decodes a non-string as int32).
    jobs = f"{api.configuration.host}/apis/batch/v1/namespaces/{NAMESPACE}/jobs"
    wrong = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "wrong"}, "spec": {"parallelism": "two"}}
    code, body, _ = request("POST", jobs, wrong)
    assert_status(
        body,
        400,
        "BadRequest",
        'Job in version "v1" cannot be handled as a Job: json: cannot unmarshal string into Go struct field '
        "JobSpec.spec.parallelism of type int32",
    )
    services = f"{api.configuration.host}/api/v1/namespaces/{NAMESPACE}/services"
    port = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "wrong"},
            "spec": {"ports": [{"port": 80, "targetPort": True}]}}
    code, body, _ = request("POST", services, port)
    assert_status(
        body,
        400,
        "BadRequest",
        'Service in version "v1" cannot be handled as a Service: json: cannot unmarshal bool into Go struct field '
        "ServicePort.spec.ports.targetPort of type int32",
    )
