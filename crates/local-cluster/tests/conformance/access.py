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


ROOT_CA = "kube-root-ca.crt"
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the "
    "internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes "
    "clusters."
)


def root_ca_config_map_in_every_namespace():
    """kube-controller-manager's root-ca-cert-publisher: every namespace holds `kube-root-ca.crt` with the CA that
    verifies the API server; it is created with a namespace, created again when deleted, and restored when edited."""
    api = owner()
    core = client.CoreV1Api(api)
    with open(api.configuration.ssl_ca_cert) as kubeconfig_ca:
        ca = kubeconfig_ca.read()

    def published(namespace):
        found = [c for c in core.list_namespaced_config_map(namespace).items if c.metadata.name == ROOT_CA]
        return found[0] if found else None

    for namespace in ["default", "kube-system", "kube-public", "kube-node-lease"]:
        made = eventually(f"{ROOT_CA} in {namespace}", lambda: published(namespace))
        assert made.data == {"ca.crt": ca}, (namespace, made.data)
        assert made.metadata.annotations == {"kubernetes.io/description": ROOT_CA_DESCRIPTION}, made.metadata
        assert made.metadata.managed_fields[0].manager == "kube-controller-manager", made.metadata.managed_fields

    # The bundle verifies the API server: a client trusting only it connects.
    trusting = client.Configuration()
    trusting.host = api.configuration.host
    trusting.cert_file, trusting.key_file = api.configuration.cert_file, api.configuration.key_file
    with open("published-ca.crt", "w") as bundle:
        bundle.write(made.data["ca.crt"])
    trusting.ssl_ca_cert = "published-ca.crt"
    assert client.VersionApi(client.ApiClient(trusting)).get_code().major == "1"

    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="fresh")))
    first = eventually("the new namespace's CA bundle", lambda: published("fresh"))
    assert first.data == {"ca.crt": ca}, first.data
    core.delete_namespaced_config_map(ROOT_CA, "fresh")
    again = eventually(
        "the deleted CA bundle created again",
        lambda: (found := published("fresh")) and found.metadata.uid != first.metadata.uid and found,
    )
    assert again.data == {"ca.crt": ca}, again.data

    core.patch_namespaced_config_map(
        ROOT_CA,
        "fresh",
        {"metadata": {"labels": {"kept": "yes"}, "annotations": {"kubernetes.io/description": ""}},
         "data": {"ca.crt": "not a certificate", "extra": "x"}},
    )
    restored = eventually(
        "the edited CA bundle restored",
        lambda: (found := published("fresh")) and found.data == {"ca.crt": ca} and found,
    )
    assert restored.metadata.annotations["kubernetes.io/description"] == ROOT_CA_DESCRIPTION, restored.metadata
    assert restored.metadata.labels == {"kept": "yes"}, "Kubernetes leaves the labels alone"

    # A tool reads the bundle in its own namespace, as its pods would.
    own = f"tool-{tool_name()}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=own)))
    mine = eventually(
        "the tool's CA bundle",
        lambda: any(c.metadata.name == ROOT_CA for c in client.CoreV1Api(tool()).list_namespaced_config_map(own).items),
    )
    assert mine

    # A terminating namespace loses it and does not get it back.
    core.delete_namespace("fresh")
    eventually("the namespace gone", lambda: api_error(core.read_namespace, "fresh")[0].status == 404)
    assert published("fresh") is None
