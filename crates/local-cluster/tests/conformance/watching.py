"""Watches through the official client's `watch.Watch` (reference §1.12): event order and types, selector
transitions, bookmarks, and a too-old resourceVersion, which the client turns into an ApiException 410."""

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from common import NAMESPACE, api_error, assert_status, configmap, owner


def _events(stream, count):
    """The first `count` events of `stream` as (type, object)."""
    seen = []
    for event in stream:
        seen.append((event["type"], event["object"]))
        if len(seen) == count:
            break
    return seen


def events_in_order():
    core = client.CoreV1Api(owner())
    start = core.list_namespaced_config_map(NAMESPACE).metadata.resource_version
    core.create_namespaced_config_map(NAMESPACE, configmap("watched", {"n": "1"}))
    core.patch_namespaced_config_map("watched", NAMESPACE, {"data": {"n": "2"}})
    core.delete_namespaced_config_map("watched", NAMESPACE)
    watcher = watch.Watch()
    seen = _events(
        watcher.stream(core.list_namespaced_config_map, NAMESPACE, resource_version=start, timeout_seconds=10), 3
    )
    watcher.stop()
    assert [kind for kind, _ in seen] == ["ADDED", "MODIFIED", "DELETED"], seen
    assert all(isinstance(obj, client.V1ConfigMap) for _, obj in seen), seen
    assert [obj.data["n"] for _, obj in seen] == ["1", "2", "2"]
    versions = [int(obj.metadata.resource_version) for _, obj in seen]
    assert versions == sorted(versions) and len(set(versions)) == 3, "the deletion has a version of its own"
    assert watcher.resource_version == str(versions[-1])


def current_state_first():
    """Without a resourceVersion a watch starts with the current state as ADDED events, then changes."""
    core = client.CoreV1Api(owner())
    for name in ["x", "y"]:
        core.create_namespaced_config_map(NAMESPACE, configmap(name, labels={"set": "one"}))
    watcher = watch.Watch()
    stream = watcher.stream(core.list_namespaced_config_map, NAMESPACE, label_selector="set=one", timeout_seconds=10)
    initial = _events(stream, 2)
    assert sorted((kind, obj.metadata.name) for kind, obj in initial) == [("ADDED", "x"), ("ADDED", "y")]
    core.patch_namespaced_config_map("x", NAMESPACE, {"metadata": {"labels": {"set": "two"}}})
    core.patch_namespaced_config_map("y", NAMESPACE, {"data": {"k": "v"}})
    core.create_namespaced_config_map(NAMESPACE, configmap("z", labels={"set": "two"}))
    core.patch_namespaced_config_map("z", NAMESPACE, {"metadata": {"labels": {"set": "one"}}})
    changes = _events(stream, 3)
    watcher.stop()
    assert [(kind, obj.metadata.name) for kind, obj in changes] == [
        ("DELETED", "x"),
        ("MODIFIED", "y"),
        ("ADDED", "z"),
    ], changes
    assert changes[0][1].metadata.labels == {"set": "two"}, "a selector transition carries the new state"


def bookmarks():
    core = client.CoreV1Api(owner())
    core.create_namespaced_config_map(NAMESPACE, configmap("marked"))
    start = core.list_namespaced_config_map(NAMESPACE).metadata.resource_version
    watcher = watch.Watch()
    for event in watcher.stream(
        core.list_namespaced_config_map,
        NAMESPACE,
        resource_version=start,
        allow_watch_bookmarks=True,
        timeout_seconds=10,
    ):
        assert event["type"] == "BOOKMARK", event
        raw = event["raw_object"]
        assert raw["kind"] == "ConfigMap" and raw["apiVersion"] == "v1", raw
        assert int(raw["metadata"]["resourceVersion"]) >= int(start), raw
        assert watcher.resource_version == raw["metadata"]["resourceVersion"]
        watcher.stop()
        break
    else:
        raise AssertionError("no bookmark within 10 s although the watch allowed them")


def _compacted(core):
    """A resourceVersion older than the cluster's (shrunken) watch history."""
    old = core.list_namespaced_config_map(NAMESPACE).metadata.resource_version
    core.create_namespaced_config_map(NAMESPACE, configmap("churn"))
    for n in range(30):
        core.patch_namespaced_config_map("churn", NAMESPACE, {"data": {"n": str(n)}})
    return old


def expired_version():
    """A too-old version is a 410 ERROR event; the client retries once, then raises ApiException(410)."""
    core = client.CoreV1Api(owner())
    old = _compacted(core)
    for arguments in [{"timeout_seconds": 5}, {}]:
        watcher = watch.Watch()
        try:
            for event in watcher.stream(core.list_namespaced_config_map, NAMESPACE, resource_version=old, **arguments):
                raise AssertionError(f"an event from a compacted version: {event['type']}")
        except ApiException as error:
            assert error.status == 410, error
            assert error.reason.startswith(f"Expired: too old resource version: {old} ("), error.reason
        else:
            raise AssertionError("the watch ended without the 410")
    _, body = api_error(
        core.list_namespaced_config_map, NAMESPACE, resource_version=old, resource_version_match="Exact"
    )
    assert_status(body, 410, "Expired")
    assert body["message"].startswith(f"too old resource version: {old} ("), body


def list_options_validation():
    core = client.CoreV1Api(owner())
    _, body = api_error(core.list_namespaced_config_map, NAMESPACE, resource_version_match="NotOlderThan")
    assert_status(body, 422, "Invalid")
    assert body["message"].startswith('ListOptions.meta.k8s.io "" is invalid'), body
    assert "resourceVersionMatch is forbidden unless resourceVersion is provided" in body["message"], body
