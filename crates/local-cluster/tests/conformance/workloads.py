"""Controllers and the process kubelet through the official client (reference §3): Jobs that complete and fail,
CronJobs making Jobs, Deployment rollouts and scaling, garbage collection by propagation policy, pod logs and
events. Pods run real processes (`sh -c ...`)."""

import datetime
import json
import re
import time

from kubernetes import client, watch

from common import (
    NAMESPACE,
    condition,
    deployment,
    eventually,
    job,
    owner,
    pod,
    pod_template,
)


def _watch_until(list_call, name, done, timeout=40):
    """Watches the object `name` until `done(object)`; returns that object."""
    watcher = watch.Watch()
    last = None
    for event in watcher.stream(
        list_call, NAMESPACE, field_selector=f"metadata.name={name}", timeout_seconds=timeout
    ):
        if event["type"] == "BOOKMARK":
            continue
        last = event["object"]
        if done(last):
            watcher.stop()
            return last
    raise AssertionError(f"{name} did not get there within {timeout}s; last seen: {last}")


def _event_reasons(core, kind, name):
    selector = f"involvedObject.kind={kind},involvedObject.name={name},involvedObject.namespace={NAMESPACE}"
    return [event.reason for event in core.list_namespaced_event(NAMESPACE, field_selector=selector).items]


def job_runs_to_completion():
    api = owner()
    batch = client.BatchV1Api(api)
    core = client.CoreV1Api(api)
    batch.create_namespaced_job(NAMESPACE, job("hello", "echo hello from the job"))
    done = _watch_until(batch.list_namespaced_job, "hello", lambda j: condition(j, "Complete"))
    assert condition(done, "Complete").status == "True"
    assert done.status.succeeded == 1 and not done.status.active, done.status
    assert done.status.start_time and done.status.completion_time, done.status
    pods = core.list_namespaced_pod(NAMESPACE, label_selector="batch.kubernetes.io/job-name=hello").items
    assert len(pods) == 1 and pods[0].status.phase == "Succeeded", [p.status.phase for p in pods]
    assert pods[0].metadata.labels["job-name"] == "hello"
    assert pods[0].metadata.owner_references[0].kind == "Job" and pods[0].metadata.owner_references[0].controller
    terminated = pods[0].status.container_statuses[0].state.terminated
    assert terminated.exit_code == 0 and terminated.reason == "Completed", terminated
    assert core.read_namespaced_pod_log(pods[0].metadata.name, NAMESPACE) == "hello from the job\n"
    succeeded = batch.list_namespaced_job(NAMESPACE, field_selector="status.successful=1").items
    assert [j.metadata.name for j in succeeded] == ["hello"]
    reasons = eventually("the Job's events", lambda: (r := _event_reasons(core, "Job", "hello")) and "Completed" in r and r)
    assert "SuccessfulCreate" in reasons, reasons


def job_fails_after_backoff_limit():
    api = owner()
    batch = client.BatchV1Api(api)
    core = client.CoreV1Api(api)
    batch.create_namespaced_job(NAMESPACE, job("doomed", "echo trying; exit 3", backoff_limit=1))
    failed = _watch_until(batch.list_namespaced_job, "doomed", lambda j: condition(j, "Failed"))
    failure = condition(failed, "Failed")
    assert failure.status == "True" and failure.reason == "BackoffLimitExceeded", failure
    assert failure.message == "Job has reached the specified backoff limit", failure
    assert failed.status.failed == 2 and not failed.status.succeeded, failed.status
    pods = core.list_namespaced_pod(NAMESPACE, label_selector="job-name=doomed").items
    assert len(pods) == 2 and {p.status.phase for p in pods} == {"Failed"}, [p.status.phase for p in pods]
    for failed_pod in pods:
        terminated = failed_pod.status.container_statuses[0].state.terminated
        assert terminated.exit_code == 3 and terminated.reason == "Error", terminated
    reasons = eventually(
        "the BackoffLimitExceeded event",
        lambda: (r := _event_reasons(core, "Job", "doomed")) and "BackoffLimitExceeded" in r and r,
    )
    assert reasons.count("SuccessfulCreate") == 2, reasons


def cronjob_creates_jobs():
    """Runs with the cluster's clock 60 times faster, so an every-minute schedule fires each second."""
    api = owner()
    batch = client.BatchV1Api(api)
    core = client.CoreV1Api(api)
    made = batch.create_namespaced_cron_job(
        NAMESPACE,
        client.V1CronJob(
            metadata=client.V1ObjectMeta(name="every-minute"),
            spec=client.V1CronJobSpec(
                schedule="* * * * *",
                job_template=client.V1JobTemplateSpec(
                    spec=client.V1JobSpec(template=pod_template("echo tick", "Never"))
                ),
            ),
        ),
    )
    assert made.spec.concurrency_policy == "Allow" and made.spec.successful_jobs_history_limit == 3, made.spec

    def owned_jobs():
        return [
            j
            for j in batch.list_namespaced_job(NAMESPACE).items
            if j.metadata.owner_references and j.metadata.owner_references[0].uid == made.metadata.uid
        ]

    jobs = eventually("a Job of the CronJob", owned_jobs)
    first = jobs[0]
    reference = first.metadata.owner_references[0]
    assert (reference.kind, reference.name, reference.controller) == ("CronJob", "every-minute", True), reference
    assert re.fullmatch(r"every-minute-\d+", first.metadata.name), first.metadata.name
    minutes = int(first.metadata.name.rsplit("-", 1)[1])
    assert 28_000_000 < minutes < 100_000_000, "named by the scheduled time in minutes since the epoch"
    assert first.metadata.annotations["batch.kubernetes.io/cronjob-scheduled-timestamp"], first.metadata
    eventually(
        "a Job to complete", lambda: any(condition(j, "Complete") for j in owned_jobs()), timeout=40
    )
    cron = eventually(
        "the CronJob's status",
        lambda: (c := batch.read_namespaced_cron_job("every-minute", NAMESPACE)).status.last_schedule_time and c,
    )
    assert cron.status.last_schedule_time is not None
    reasons = eventually(
        "the CronJob's events", lambda: (r := _event_reasons(core, "CronJob", "every-minute")) and r
    )
    assert "SuccessfulCreate" in reasons, reasons


def deployment_rollout_and_scale():
    api = owner()
    apps = client.AppsV1Api(api)
    core = client.CoreV1Api(api)
    apps.create_namespaced_deployment(NAMESPACE, deployment("web", "exec sleep 300", 2))

    def rolled_out(d):
        status = d.status
        return (
            status is not None
            and status.observed_generation == d.metadata.generation
            and status.updated_replicas == d.spec.replicas
            and status.available_replicas == d.spec.replicas
            and status.replicas == d.spec.replicas
        )

    ready = _watch_until(apps.list_namespaced_deployment, "web", rolled_out)
    assert condition(ready, "Available").status == "True", ready.status.conditions
    progressing = condition(ready, "Progressing")
    assert progressing.status == "True" and progressing.reason == "NewReplicaSetAvailable", progressing
    assert ready.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
    scale = apps.read_namespaced_deployment_scale("web", NAMESPACE)
    assert scale.spec.replicas == 2 and scale.status.replicas == 2, scale
    assert scale.status.selector == "app=web", scale.status
    apps.patch_namespaced_deployment_scale("web", NAMESPACE, {"spec": {"replicas": 3}})
    _watch_until(apps.list_namespaced_deployment, "web", lambda d: d.spec.replicas == 3 and rolled_out(d))
    assert len(core.list_namespaced_pod(NAMESPACE, label_selector="app=web,pod-template-hash").items) == 3
    patched = apps.patch_namespaced_deployment(
        "web",
        NAMESPACE,
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "command": ["sh", "-c", "exec sleep 301"]}]}}}},
    )
    updated = _watch_until(
        apps.list_namespaced_deployment,
        "web",
        lambda d: d.metadata.generation == patched.metadata.generation
        and rolled_out(d)
        and d.status.unavailable_replicas in (None, 0),
    )
    assert updated.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
    replica_sets = apps.list_namespaced_replica_set(NAMESPACE, label_selector="app=web").items
    assert len(replica_sets) == 2, [rs.metadata.name for rs in replica_sets]
    by_revision = {rs.metadata.annotations["deployment.kubernetes.io/revision"]: rs for rs in replica_sets}
    old = eventually(
        "the old ReplicaSet scaled to 0",
        lambda: (rs := apps.read_namespaced_replica_set(by_revision["1"].metadata.name, NAMESPACE)).spec.replicas == 0
        and rs,
    )
    assert old.metadata.owner_references[0].kind == "Deployment"
    assert by_revision["2"].spec.replicas == 3
    reasons = _event_reasons(core, "Deployment", "web")
    assert "ScalingReplicaSet" in reasons, reasons


def garbage_collection():
    api = owner()
    apps = client.AppsV1Api(api)
    batch = client.BatchV1Api(api)
    core = client.CoreV1Api(api)

    def replica_sets(app):
        return apps.list_namespaced_replica_set(NAMESPACE, label_selector=f"app={app}").items

    for name in ["orphaned", "foreground", "background"]:
        apps.create_namespaced_deployment(NAMESPACE, deployment(name, "exec sleep 300", 1))
        eventually(f"{name}'s ReplicaSet", lambda: replica_sets(name))

    # A deletion that waits for finalizers answers with the object, which the typed call cannot hold (it
    # expects a Status): read the raw body.
    kept = json.loads(
        apps.delete_namespaced_deployment("orphaned", NAMESPACE, propagation_policy="Orphan", _preload_content=False).data
    )
    assert kept["kind"] == "Deployment" and "orphan" in kept["metadata"]["finalizers"], kept["metadata"]
    eventually("the Deployment gone", lambda: not [d for d in apps.list_namespaced_deployment(NAMESPACE).items if d.metadata.name == "orphaned"])
    orphans = eventually(
        "the ReplicaSet without its owner",
        lambda: (rs := replica_sets("orphaned")) and not rs[0].metadata.owner_references and rs,
    )
    assert len(orphans) == 1

    pending = json.loads(
        apps.delete_namespaced_deployment(
            "foreground",
            NAMESPACE,
            body=client.V1DeleteOptions(propagation_policy="Foreground"),
            _preload_content=False,
        ).data
    )
    assert pending["kind"] == "Deployment" and pending["metadata"]["deletionTimestamp"], pending["metadata"]
    assert "foregroundDeletion" in pending["metadata"]["finalizers"], pending["metadata"]
    eventually(
        "the foreground deletion to finish",
        lambda: not replica_sets("foreground")
        and "foreground" not in [d.metadata.name for d in apps.list_namespaced_deployment(NAMESPACE).items],
    )

    gone = apps.delete_namespaced_deployment("background", NAMESPACE, propagation_policy="Background")
    assert gone["kind"] == "Status" and gone["status"] == "Success", gone
    assert gone["details"]["name"] == "background" and gone["details"]["group"] == "apps", gone
    assert gone["details"]["kind"] == "deployments", gone
    eventually("the background deletion to reach the pods", lambda: not core.list_namespaced_pod(
        NAMESPACE, label_selector="app=background").items)

    batch.create_namespaced_job(NAMESPACE, job("left", "exec sleep 300"))
    eventually("the Job's pod", lambda: core.list_namespaced_pod(NAMESPACE, label_selector="job-name=left").items)
    batch.delete_namespaced_job("left", NAMESPACE)
    left = eventually(
        "the Job's pod without its owner (a Job's default propagation is Orphan)",
        lambda: (p := core.list_namespaced_pod(NAMESPACE, label_selector="job-name=left").items)
        and not p[0].metadata.owner_references
        and p,
    )
    assert left[0].metadata.deletion_timestamp is None


def pod_logs():
    core = client.CoreV1Api(owner())
    core.create_namespaced_pod(NAMESPACE, pod("lines", "echo one; echo two; echo three"))
    eventually(
        "the pod to succeed", lambda: core.read_namespaced_pod("lines", NAMESPACE).status.phase == "Succeeded"
    )
    assert core.read_namespaced_pod_log("lines", NAMESPACE) == "one\ntwo\nthree\n"
    assert core.read_namespaced_pod_log("lines", NAMESPACE, tail_lines=2) == "two\nthree\n"
    assert core.read_namespaced_pod_log("lines", NAMESPACE, limit_bytes=5) == "one\nt"
    assert core.read_namespaced_pod_log("lines", NAMESPACE, since_seconds=3600) == "one\ntwo\nthree\n"
    stamped = core.read_namespaced_pod_log("lines", NAMESPACE, timestamps=True).splitlines()
    assert len(stamped) == 3, stamped
    for line, text in zip(stamped, ["one", "two", "three"]):
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z " + text, line), line

    core.create_namespaced_pod(NAMESPACE, pod("later", "echo early; sleep 4; echo late; exec sleep 300"))
    eventually("the pod to run", lambda: core.read_namespaced_pod("later", NAMESPACE).status.phase == "Running")
    eventually("the late line", lambda: "late" in core.read_namespaced_pod_log("later", NAMESPACE))
    assert core.read_namespaced_pod_log("later", NAMESPACE, since_seconds=3) == "late\n"

    core.create_namespaced_pod(NAMESPACE, pod("follow", "echo first; sleep 1; echo second; sleep 1; echo third"))
    eventually("the pod to run", lambda: core.read_namespaced_pod("follow", NAMESPACE).status.phase != "Pending")
    started = time.monotonic()
    lines = list(watch.Watch().stream(core.read_namespaced_pod_log, name="follow", namespace=NAMESPACE, follow=True))
    assert [line for line in lines if line] == ["first", "second", "third"], lines
    assert time.monotonic() - started < 30, "the followed log ends when the container stops"


def events():
    api = owner()
    core = client.CoreV1Api(api)
    events_api = client.EventsV1Api(api)
    regarding = client.V1ObjectReference(kind="ConfigMap", name="noted", namespace=NAMESPACE, api_version="v1")
    core.create_namespaced_event(
        NAMESPACE,
        client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="noted.1"),
            involved_object=regarding,
            reason="Checked",
            message="looked at it",
            type="Warning",
            source=client.V1EventSource(component="conformance"),
            # Without one, events.k8s.io/v1 shows `eventTime: null`, which this client's model refuses; with one,
            # Kubernetes requires the reporting fields and an action even through core/v1.
            event_time=datetime.datetime.now(datetime.timezone.utc),
            reporting_component="conformance",
            reporting_instance="conformance-1",
            action="Check",
        ),
    )
    found = core.list_namespaced_event(
        NAMESPACE, field_selector="involvedObject.name=noted,reason=Checked,type=Warning"
    ).items
    assert [e.message for e in found] == ["looked at it"], found
    assert core.list_namespaced_event(NAMESPACE, field_selector="involvedObject.name=noted,type=Normal").items == []
    converted = events_api.read_namespaced_event("noted.1", NAMESPACE)
    assert (converted.regarding.name, converted.note, converted.reason, converted.type) == (
        "noted",
        "looked at it",
        "Checked",
        "Warning",
    ), converted
    assert [e.metadata.name for e in core.list_event_for_all_namespaces(field_selector="involvedObject.kind=ConfigMap").items] == [
        "noted.1"
    ]


def pod_lifecycle():
    """A running pod's status as the kubelet reports it, then graceful deletion: SIGTERM, the pod's own exit, and
    the DELETED event (reference §3.6, §1.9)."""
    core = client.CoreV1Api(owner())
    core.create_namespaced_pod(
        NAMESPACE, pod("graceful", "trap 'echo terminating; exit 0' TERM; echo up; while true; do sleep 0.1; done")
    )
    running = eventually(
        "the pod to be ready",
        lambda: (p := core.read_namespaced_pod("graceful", NAMESPACE)).status.phase == "Running"
        and condition(p, "Ready")
        and condition(p, "Ready").status == "True"
        and p,
    )
    status = running.status
    for kind in ["PodScheduled", "Initialized", "ContainersReady", "Ready"]:
        assert condition(running, kind).status == "True", (kind, status.conditions)
    assert running.spec.node_name == "local" and status.start_time is not None, status
    assert status.host_ip and status.pod_ip, status
    assert status.qos_class == "BestEffort", status.qos_class
    container_status = status.container_statuses[0]
    assert container_status.ready and container_status.started and container_status.restart_count == 0
    assert container_status.state.running.started_at is not None, container_status.state
    eventually("the first line", lambda: core.read_namespaced_pod_log("graceful", NAMESPACE) == "up\n")

    start = core.list_namespaced_pod(NAMESPACE).metadata.resource_version
    deleting = core.delete_namespaced_pod("graceful", NAMESPACE)
    assert isinstance(deleting, client.V1Pod), deleting
    assert deleting.metadata.deletion_timestamp is not None, deleting.metadata
    assert deleting.metadata.deletion_grace_period_seconds == 30, deleting.metadata
    watcher = watch.Watch()
    kinds = []
    for event in watcher.stream(
        core.list_namespaced_pod,
        NAMESPACE,
        field_selector="metadata.name=graceful",
        resource_version=start,
        timeout_seconds=40,
    ):
        kinds.append(event["type"])
        if event["type"] == "DELETED":
            watcher.stop()
            final = event["object"].status.container_statuses[0].state.terminated
            assert final is not None and final.exit_code == 0, event["object"].status
            break
    assert kinds[0] == "MODIFIED" and kinds[-1] == "DELETED", kinds


def crash_loop():
    """A container that keeps exiting 1 under restartPolicy Always: restarts, CrashLoopBackOff between them, never
    ready, the previous run's log and state kept (reference §3.6)."""
    core = client.CoreV1Api(owner())
    core.create_namespaced_pod(NAMESPACE, pod("crasher", "echo attempt; exit 1", restart_policy="Always"))

    def backing_off():
        found = core.read_namespaced_pod("crasher", NAMESPACE)
        statuses = found.status.container_statuses or []
        waiting = statuses and statuses[0].state.waiting
        return waiting and waiting.reason == "CrashLoopBackOff" and statuses[0].restart_count >= 2 and found

    crashed = eventually("CrashLoopBackOff after two restarts", backing_off)
    container_status = crashed.status.container_statuses[0]
    assert crashed.status.phase == "Running", crashed.status.phase
    assert not container_status.ready and condition(crashed, "Ready").status == "False"
    assert condition(crashed, "Ready").reason == "ContainersNotReady", condition(crashed, "Ready")
    assert container_status.state.waiting.message.startswith("back-off "), container_status.state.waiting
    previous = container_status.last_state.terminated
    assert previous.exit_code == 1 and previous.reason == "Error", previous
    assert core.read_namespaced_pod_log("crasher", NAMESPACE, previous=True) == "attempt\n"
