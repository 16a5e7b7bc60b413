"""What the scenarios share: clients for the owner and the tool, typed object builders, waiting, and checking the
Status body of an API error."""

import json
import os
import time

from kubernetes import client, config
from kubernetes.client.rest import ApiException

NAMESPACE = "default"


def owner() -> client.ApiClient:
    """An API client from the owner's kubeconfig (every permission, namespace `default`), unchanged."""
    return config.new_client_from_config(config_file=os.environ["CONFORMANCE_KUBECONFIG"])


def tool() -> client.ApiClient:
    """An API client from the tool's kubeconfig (its own namespace only)."""
    return config.new_client_from_config(config_file=os.environ["CONFORMANCE_TOOL_KUBECONFIG"])


def tool_name() -> str:
    return os.environ["CONFORMANCE_TOOL"]


def eventually(what, check, timeout=30.0, interval=0.05):
    """Calls `check` until it returns something truthy, which it returns; fails naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def api_error(call, *args, **kwargs):
    """The ApiException `call` raises (it must raise one) and its body parsed as JSON."""
    try:
        call(*args, **kwargs)
    except ApiException as error:
        return error, json.loads(error.body)
    raise AssertionError(f"{call.__name__} succeeded; an API error was expected")


def assert_status(body, code, reason, message=None, details=None):
    """`body` is a Failure Status with this code, reason, message (exact when given) and details (a subset)."""
    assert body["kind"] == "Status" and body["apiVersion"] == "v1", body
    assert body["status"] == "Failure", body
    assert body["code"] == code, body
    assert body["reason"] == reason, body
    if message is not None:
        assert body["message"] == message, body
    for key, value in (details or {}).items():
        assert body.get("details", {}).get(key) == value, (key, body)


def meta(name, labels=None, **more) -> client.V1ObjectMeta:
    return client.V1ObjectMeta(name=name, labels=labels, **more)


def configmap(name, data=None, labels=None) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=meta(name, labels), data=data)


def container(command, name="main", image="busybox", **more) -> client.V1Container:
    return client.V1Container(name=name, image=image, command=command, **more)


def shell(script) -> list:
    return ["sh", "-c", script]


def pod(name, script, restart_policy="Never", labels=None) -> client.V1Pod:
    return client.V1Pod(
        metadata=meta(name, labels),
        spec=client.V1PodSpec(restart_policy=restart_policy, containers=[container(shell(script))]),
    )


def pod_template(script, restart_policy, labels=None) -> client.V1PodTemplateSpec:
    return client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels=labels),
        spec=client.V1PodSpec(restart_policy=restart_policy, containers=[container(shell(script))]),
    )


def job(name, script, backoff_limit=None, restart_policy="Never") -> client.V1Job:
    return client.V1Job(
        metadata=meta(name),
        spec=client.V1JobSpec(backoff_limit=backoff_limit, template=pod_template(script, restart_policy)),
    )


def deployment(name, script, replicas) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        metadata=meta(name),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=pod_template(script, "Always", labels),
        ),
    )


def condition(obj, kind):
    """The status condition of type `kind`, or None."""
    for found in (obj.status.conditions or []) if obj.status else []:
        if found.type == kind:
            return found
    return None
