"""Two more clients this project did not write: kr8s (httpx, asyncio underneath) and lightkube (its own models and
an HTTP/2-capable httpx). Each connects with the owner's kubeconfig, lists, creates, gets, watches and deletes."""

import os

from common import NAMESPACE


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
    applied = lk.apply(
        ConfigMap(metadata=ObjectMeta(name="from-lightkube"), data={"a": "2"}), field_manager="lightkube"
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
