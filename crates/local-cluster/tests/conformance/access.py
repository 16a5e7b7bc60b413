"""Namespaces and what a tool's identity may do (reference §1.4 and the cluster's policy): namespace lifecycle, and
a tool confined to its namespace, as the official client sees it (ApiException 403 with RBAC's message,
SelfSubjectAccessReview, SelfSubjectReview)."""

from kubernetes import client

from common import NAMESPACE, api_error, assert_status, configmap, eventually, job, owner, tool, tool_name


def namespace_lifecycle():
    core = client.CoreV1Api(owner())
    made = core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="short-lived")))
    assert made.status.phase == "Active", made.status
    assert made.metadata.labels["kubernetes.io/metadata.name"] == "short-lived", made.metadata.labels
    assert made.spec.finalizers == ["kubernetes"], made.spec
    core.create_namespaced_config_map("short-lived", configmap("inside"))
    core.create_namespaced_config_map("short-lived", configmap("held"))
    core.patch_namespaced_config_map("held", "short-lived", {"metadata": {"finalizers": ["example.com/hold"]}})
    core.delete_namespace("short-lived")
    terminating = core.read_namespace("short-lived")
    assert terminating.status.phase == "Terminating", terminating.status
    assert terminating.metadata.deletion_timestamp is not None
    _, body = api_error(core.create_namespaced_config_map, "short-lived", configmap("late"))
    assert_status(
        body,
        403,
        "Forbidden",
        'configmaps "late" is forbidden: unable to create new content in namespace short-lived because it is '
        "being terminated",
    )
    assert body["details"]["causes"][0]["reason"] == "NamespaceTerminating", body
    eventually(
        "the namespace's ConfigMap deleted",
        lambda: [c.metadata.name for c in core.list_namespaced_config_map("short-lived").items] == ["held"],
    )
    core.patch_namespaced_config_map("held", "short-lived", {"metadata": {"finalizers": None}})
    eventually("the namespace gone", lambda: api_error(core.read_namespace, "short-lived")[0].status == 404)
    names = {ns.metadata.name for ns in core.list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names, names


def tool_is_confined_to_its_namespace():
    name = tool_name()
    own = f"tool-{name}"
    core_owner = client.CoreV1Api(owner())
    if own not in {ns.metadata.name for ns in core_owner.list_namespace().items}:
        core_owner.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=own)))
    api = tool()
    core = client.CoreV1Api(api)
    batch = client.BatchV1Api(api)
    batch.create_namespaced_job(own, job("mine", "true"))
    assert [j.metadata.name for j in batch.list_namespaced_job(own).items] == ["mine"]
    core.create_namespaced_config_map(own, configmap("mine"))
    error, body = api_error(core.list_namespaced_config_map, NAMESPACE)
    assert error.status == 403 and error.reason == "Forbidden", (error.status, error.reason)
    assert_status(
        body,
        403,
        "Forbidden",
        f'configmaps is forbidden: User "{name}" cannot list resource "configmaps" in API group "" in the '
        f'namespace "{NAMESPACE}"',
        {"kind": "configmaps"},
    )
    _, body = api_error(batch.create_namespaced_job, NAMESPACE, job("theirs", "true"))
    assert_status(
        body,
        403,
        "Forbidden",
        f'jobs.batch is forbidden: User "{name}" cannot create resource "jobs" in API group "batch" in the '
        f'namespace "{NAMESPACE}"',
        {"group": "batch", "kind": "jobs"},
    )
    _, body = api_error(core.list_node)
    assert_status(
        body,
        403,
        "Forbidden",
        f'nodes is forbidden: User "{name}" cannot list resource "nodes" in API group "" at the cluster scope',
    )
    authorization = client.AuthorizationV1Api(api)

    def allowed(verb, resource, namespace, group=""):
        review = client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                resource_attributes=client.V1ResourceAttributes(
                    verb=verb, resource=resource, namespace=namespace, group=group
                )
            )
        )
        return authorization.create_self_subject_access_review(review).status.allowed

    assert allowed("create", "jobs", own, "batch")
    assert allowed("delete", "deployments", own, "apps")
    assert not allowed("create", "jobs", NAMESPACE, "batch")
    assert not allowed("list", "nodes", None)
    review = client.AuthenticationV1Api(api).create_self_subject_review(client.V1SelfSubjectReview())
    user = review.status.user_info
    assert user.username == name and "system:authenticated" in user.groups, user
    owner_review = client.AuthenticationV1Api(owner()).create_self_subject_review(client.V1SelfSubjectReview())
    assert "system:masters" in owner_review.status.user_info.groups, owner_review.status
