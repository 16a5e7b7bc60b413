"""Two more clients this project did not write: kr8s (httpx, asyncio underneath) and lightkube (its own models and
an HTTP/2-capable httpx). Each connects with the owner's kubeconfig, lists, creates, gets, watches and deletes."""

import os

from common import NAMESPACE, eventually


def kr8s_basics():
    import kr8s
    from kr8s.objects import ConfigMap, Job

    api = kr8s.api(kubeconfig=os.environ["CONFORMANCE_KUBECONFIG"])
    assert api.version()["gitVersion"].startswith("v1.33."), api.version()
    made = ConfigMap(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-kr8s", "namespace": NAMESPACE}, "data": {"a": "1"}},
        api=api,
    )
    made.create()
    fetched = ConfigMap.get("from-kr8s", namespace=NAMESPACE, api=api)
    assert fetched.raw["data"] == {"a": "1"} and fetched.metadata.uid == made.metadata.uid
    names = [cm.name for cm in api.get("configmaps", namespace=NAMESPACE)]
    assert "from-kr8s" in names, names
    fetched.patch({"data": {"a": "2"}})
    fetched.refresh()
    assert fetched.raw["data"] == {"a": "2"}
    labelled = api.get("configmaps", namespace=NAMESPACE, label_selector={"nothing": "here"})
    assert list(labelled) == []
    fetched.delete()
    assert not ConfigMap("from-kr8s", namespace=NAMESPACE, api=api).exists()
    job = Job(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "kr8s-job", "namespace": NAMESPACE},
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
                    }
                }
            },
        },
        api=api,
    )
    job.create()
    job.wait("condition=Complete", timeout=40)
    assert job.raw["status"]["succeeded"] == 1, job.raw["status"]
    job.delete(propagation_policy="Background")


def lightkube_basics():
    from lightkube import ApiError, Client, KubeConfig
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.batch_v1 import Job
    from lightkube.resources.core_v1 import ConfigMap

    lk = Client(config=KubeConfig.from_file(os.environ["CONFORMANCE_KUBECONFIG"]), namespace=NAMESPACE)
    made = lk.create(ConfigMap(metadata=ObjectMeta(name="from-lightkube"), data={"a": "1"}))
    assert made.metadata.uid and made.metadata.resourceVersion
    fetched = lk.get(ConfigMap, "from-lightkube")
    assert fetched.data == {"a": "1"}
    assert "from-lightkube" in [cm.metadata.name for cm in lk.list(ConfigMap, chunk_size=1)]
    # The create made lightkube's user agent manager of `.data.a`: a plain apply by another manager conflicts.
    try:
        lk.apply(ConfigMap(metadata=ObjectMeta(name="from-lightkube"), data={"a": "2"}), field_manager="lightkube")
    except ApiError as error:
        assert error.status.code == 409 and "conflict" in error.status.message, error.status
    else:
        raise AssertionError("an apply took another manager's field without force")
    applied = lk.apply(
        ConfigMap(metadata=ObjectMeta(name="from-lightkube"), data={"a": "2"}), field_manager="lightkube", force=True
    )
    assert applied.data["a"] == "2"
    for kind, obj in lk.watch(ConfigMap, resource_version=made.metadata.resourceVersion):
        assert kind == "MODIFIED" and obj.data["a"] == "2", (kind, obj)
        break
    lk.delete(ConfigMap, "from-lightkube")
    try:
        lk.get(ConfigMap, "from-lightkube")
    except ApiError as error:
        assert error.status.code == 404 and error.status.reason == "NotFound", error.status
    else:
        raise AssertionError("a deleted ConfigMap was still there")
    assert list(lk.list(Job)) == []


def lightkube_runs_a_job_and_reads_its_log():
    """lightkube's typed models for Jobs and Pods, its patch types, wait, log, deletecollection and errors."""
    from lightkube import ApiError, Client, KubeConfig
    from lightkube.models.batch_v1 import JobSpec
    from lightkube.models.core_v1 import Container, PodSpec, PodTemplateSpec
    from lightkube.models.meta_v1 import ObjectMeta
    from lightkube.resources.batch_v1 import Job
    from lightkube.resources.core_v1 import ConfigMap, Pod
    from lightkube.types import CascadeType, PatchType

    lk = Client(config=KubeConfig.from_file(os.environ["CONFORMANCE_KUBECONFIG"]), namespace=NAMESPACE)
    template = PodTemplateSpec(
        spec=PodSpec(
            restartPolicy="Never",
            containers=[Container(name="main", image="busybox", command=["sh", "-c", "echo one; echo two"])],
        )
    )
    lk.create(Job(metadata=ObjectMeta(name="lk-job"), spec=JobSpec(backoffLimit=0, template=template)))
    done = lk.wait(Job, "lk-job", for_conditions=["Complete"], raise_for_conditions=["Failed"])
    assert done.status.succeeded == 1, done.status
    pods = list(lk.list(Pod, labels={"job-name": "lk-job"}))
    assert len(pods) == 1 and pods[0].status.phase == "Succeeded", pods
    assert list(lk.log(pods[0].metadata.name)) == ["one\n", "two\n"]
    assert list(lk.log(pods[0].metadata.name, tail_lines=1)) == ["two\n"]
    try:
        lk.create(Job(metadata=ObjectMeta(name="lk-job"), spec=JobSpec(template=template)))
    except ApiError as error:
        assert (error.status.code, error.status.reason) == (409, "AlreadyExists"), error.status
    else:
        raise AssertionError("a second Job of the same name was created")
    try:
        lk.patch(Job, "lk-job", {"spec": {"template": {"spec": {"restartPolicy": "Always"}}}})
    except ApiError as error:
        assert (error.status.code, error.status.reason) == (422, "Invalid"), error.status
        assert error.status.details.kind == "Job", error.status.details
    else:
        raise AssertionError("a Job's template changed")
    for n in range(3):
        lk.create(ConfigMap(metadata=ObjectMeta(name=f"lk-{n}", labels={"lk": "yes"}), data={"n": str(n)}))
    lk.patch(ConfigMap, "lk-0", {"data": {"n": "zero"}}, patch_type=PatchType.MERGE)
    lk.patch(ConfigMap, "lk-1", [{"op": "add", "path": "/data/m", "value": "x"}], patch_type=PatchType.JSON)
    current = lk.get(ConfigMap, "lk-2")
    current.data = {"n": "two"}
    replaced = lk.replace(current)
    assert int(replaced.metadata.resourceVersion) > int(current.metadata.resourceVersion)
    data = {cm.metadata.name: cm.data for cm in lk.list(ConfigMap, labels={"lk": "yes"})}
    assert data == {"lk-0": {"n": "zero"}, "lk-1": {"n": "1", "m": "x"}, "lk-2": {"n": "two"}}, data
    lk.deletecollection(ConfigMap)
    assert list(lk.list(ConfigMap, labels={"lk": "yes"})) == []
    lk.delete(Job, "lk-job", cascade=CascadeType.FOREGROUND)
    eventually("the Job and its pod gone", lambda: not list(lk.list(Job)) and not list(lk.list(Pod)))


def kr8s_scales_a_deployment_and_reads_logs():
    """kr8s' object helpers: a Deployment waited for and scaled, its pods found by selector and labelled, a pod's
    log read, and a NotFound turned into its exception."""
    import kr8s
    from kr8s.objects import Deployment, Pod

    api = kr8s.api(kubeconfig=os.environ["CONFORMANCE_KUBECONFIG"])
    web = Deployment(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "kr8s-web", "namespace": NAMESPACE},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "kr8s-web"}},
                "template": {
                    "metadata": {"labels": {"app": "kr8s-web"}},
                    "spec": {
                        "containers": [
                            {"name": "main", "image": "busybox", "command": ["sh", "-c", "echo serving; exec sleep 300"]}
                        ]
                    },
                },
            },
        },
        api=api,
    )
    web.create()
    web.wait("condition=Available", timeout=40)
    web.scale(2)
    assert web.replicas == 2
    eventually("two pods", lambda: len(list(api.get("pods", namespace=NAMESPACE, label_selector={"app": "kr8s-web"}))) == 2)
    pods = list(api.get("pods", namespace=NAMESPACE, label_selector={"app": "kr8s-web"}))
    first = pods[0]
    first.label({"checked": "yes"})
    assert Pod.get(first.name, namespace=NAMESPACE, api=api).labels["checked"] == "yes"
    eventually("the pod's output", lambda: Pod.get(first.name, namespace=NAMESPACE, api=api).ready())
    eventually("the pod's log", lambda: list(first.logs()) == ["serving"])
    try:
        Pod.get("missing", namespace=NAMESPACE, api=api)
    except kr8s.NotFoundError:
        pass
    else:
        raise AssertionError("a missing pod was found")
    web.delete()
