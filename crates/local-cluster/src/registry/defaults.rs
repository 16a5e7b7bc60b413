//! Defaulting: the fields a real API server fills in when it decodes an object (reference §2.2), and the
//! create-time preparation that needs the new object's identity (Job selector generation and labels).
//!
//! Reconcilers compare desired and live specs, so these defaults must appear exactly as a real cluster adds them.

use serde_json::{Map, Value, json};

use crate::registry::meta::{self, map_at};
use crate::registry::resources::ResourceType;

/// Applies the decode-time defaults of the type.
pub(crate) fn apply(resource: &ResourceType, object: &mut Value) {
    if resource.is_custom() {
        // A custom resource's defaults come from its schema, applied when it is decoded.
        return;
    }
    match resource.plural {
        "customresourcedefinitions" => crate::registry::crd::apply_defaults(object),
        "pods" => {
            let spec = map_at(object, &["spec"]);
            pod_spec(spec);
            requests_from_limits(spec);
        }
        "limitranges" => limit_range(object),
        "jobs" => job(object),
        "cronjobs" => cronjob(object),
        "deployments" => deployment(object),
        "replicasets" => {
            let spec = map_at(object, &["spec"]);
            default(spec, "replicas", json!(1));
            pod_template(spec);
        }
        "services" => service(map_at(object, &["spec"])),
        "namespaces" => {
            let name = meta::name(object).to_owned();
            map_at(object, &["metadata", "labels"])
                .insert("kubernetes.io/metadata.name".into(), Value::from(name));
        }
        other => crate::registry::stored_kinds::apply_defaults(other, object),
    }
}

/// Create-time preparation after uid and name are known: Job selectors and labels, initial status.
///
/// Every type with a status subresource starts with the status its strategy's `PrepareForCreate` sets, whatever
/// the client sent (a Job exported with its status and created again must not look finished); Nodes are the
/// one exception Kubernetes makes, as their status is theirs to report.
pub(crate) fn prepare_create(resource: &ResourceType, object: &mut Value) {
    if resource.is_custom() {
        // With a status subresource, status is written through it only; without one it is ordinary content.
        if resource.has_status {
            meta::remove_at(object, &["status"]);
        }
        return;
    }
    if resource.has_status && !resource.builtin("nodes") {
        // Go serialises a zero status struct as `{}`, so a fresh object shows `status: {}`.
        meta::set_at(object, &["status"], json!({}));
    }
    match resource.plural {
        "customresourcedefinitions" => crate::registry::crd::prepare_create(object),
        "jobs" => job_selector(object),
        "pods" => {
            admit_pod(map_at(object, &["spec"]));
            let qos = qos_class(object.get("spec").unwrap_or(&Value::Null));
            let status = map_at(object, &["status"]);
            status.clear();
            status.insert("phase".into(), json!("Pending"));
            status.insert("qosClass".into(), json!(qos));
        }
        "services" => {
            let spec = map_at(object, &["spec"]);
            if spec.get("type") != Some(&json!("ExternalName")) {
                let ip = match spec.get("clusterIP").and_then(Value::as_str) {
                    Some(ip) if !ip.is_empty() => ip.to_owned(),
                    _ => allocate_cluster_ip(),
                };
                spec.insert("clusterIP".into(), json!(ip));
                spec.insert("clusterIPs".into(), json!([ip]));
                default(spec, "ipFamilies", json!(["IPv4"]));
                default(spec, "ipFamilyPolicy", json!("SingleStack"));
                default(spec, "internalTrafficPolicy", json!("Cluster"));
            }
            meta::set_at(object, &["status"], json!({"loadBalancer": {}}));
        }
        "namespaces" => {
            map_at(object, &["spec"]).insert("finalizers".into(), json!(["kubernetes"]));
            let status = map_at(object, &["status"]);
            status.clear();
            status.insert("phase".into(), json!("Active"));
        }
        // `replicas` is the one status field Go always writes.
        "replicasets" => {
            meta::set_at(object, &["status"], json!({"replicas": 0}));
        }
        _ => {}
    }
}

/// What the admission plugins of a real cluster add to every pod (`ServiceAccount`, `Priority`,
/// `DefaultTolerationSeconds`); the service-account token volume is left out.
fn admit_pod(spec: &mut Map<String, Value>) {
    default(spec, "serviceAccountName", json!("default"));
    let account = spec
        .get("serviceAccountName")
        .cloned()
        .unwrap_or(json!("default"));
    default(spec, "serviceAccount", account);
    default(spec, "enableServiceLinks", json!(true));
    default(spec, "priority", json!(0));
    default(spec, "preemptionPolicy", json!("PreemptLowerPriority"));
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if let Some(list) = tolerations.as_array_mut() {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            if !list.iter().any(|t| t.get("key") == Some(&json!(key))) {
                list.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
            }
        }
    }
}

/// A random address in the default service range 10.96.0.0/12 (10.96.0.1 is the `kubernetes` service's).
fn allocate_cluster_ip() -> String {
    let bytes = *uuid::Uuid::new_v4().as_bytes();
    format!(
        "10.{}.{}.{}",
        96 + bytes[0] % 16,
        bytes[1],
        2 + bytes[2] % 250
    )
}

/// The quality-of-service class of a pod: `Guaranteed` when every container's cpu and memory limits equal its requests, `BestEffort`
/// when no container requests or limits either, `Burstable` otherwise.
fn qos_class(spec: &Value) -> &'static str {
    let containers: Vec<&Value> = ["containers", "initContainers"]
        .iter()
        .filter_map(|list| spec.get(list).and_then(Value::as_array))
        .flatten()
        .collect();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for container in containers {
        for name in ["cpu", "memory"] {
            let limit = meta::at(container, &["resources", "limits", name]);
            let request = meta::at(container, &["resources", "requests", name]).or(limit);
            any |= limit.is_some() || request.is_some();
            guaranteed &= limit.is_some() && request == limit;
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

fn default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_owned(), value);
    }
}

fn pod_template(spec: &mut Map<String, Value>) {
    let template = spec.entry("template").or_insert_with(|| json!({}));
    pod_spec(map_at(template, &["spec"]));
}

fn pod_spec(spec: &mut Map<String, Value>) {
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "schedulerName", json!("default-scheduler"));
    default(spec, "securityContext", json!({}));
    for list in ["containers", "initContainers"] {
        for container in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(container) = container.as_object_mut() {
                self::container(container);
            }
        }
    }
}

fn container(container: &mut Map<String, Value>) {
    default(
        container,
        "terminationMessagePath",
        json!("/dev/termination-log"),
    );
    default(container, "terminationMessagePolicy", json!("File"));
    default(container, "resources", json!({}));
    let image = container
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let policy = if pulls_always(image) {
        "Always"
    } else {
        "IfNotPresent"
    };
    default(container, "imagePullPolicy", json!(policy));
    for field in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = container.get_mut(field).and_then(Value::as_object_mut) {
            self::probe(probe);
        }
    }
    for port in container
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(port) = port.as_object_mut() {
            default(port, "protocol", json!("TCP"));
        }
    }
}

/// A Pod's container (not a template's) that sets a limit and no request for a resource requests its limit
/// (`SetDefaults_Pod`).
fn requests_from_limits(spec: &mut Map<String, Value>) {
    for list in ["containers", "initContainers"] {
        for container in spec
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            let Some(limits) = meta::at(container, &["resources", "limits"])
                .and_then(Value::as_object)
                .filter(|limits| !limits.is_empty())
                .cloned()
            else {
                continue;
            };
            let requests = map_at(container, &["resources", "requests"]);
            for (name, limit) in limits {
                requests.entry(name).or_insert(limit);
            }
        }
    }
}

/// A `Container` item's `default` falls back to `max`, its `defaultRequest` to `default`, then to `min`
/// (`SetDefaults_LimitRangeItem`).
fn limit_range(object: &mut Value) {
    for item in object
        .pointer_mut("/spec/limits")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if meta::str_at(item, &["type"]) != Some("Container") {
            continue;
        }
        let item = map_at(item, &[]);
        let field = |item: &Map<String, Value>, key: &str| {
            item.get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let mut limit = field(item, "default");
        for (name, value) in field(item, "max") {
            limit.entry(name).or_insert(value);
        }
        let mut request = field(item, "defaultRequest");
        for (name, value) in limit.iter().chain(&field(item, "min")) {
            request.entry(name.clone()).or_insert_with(|| value.clone());
        }
        for (key, values) in [("default", limit), ("defaultRequest", request)] {
            if !values.is_empty() {
                item.insert(key.to_owned(), Value::Object(values));
            }
        }
    }
}

/// `SetDefaults_Probe` and `SetDefaults_HTTPGetAction`.
fn probe(probe: &mut Map<String, Value>) {
    default(probe, "timeoutSeconds", json!(1));
    default(probe, "periodSeconds", json!(10));
    default(probe, "successThreshold", json!(1));
    default(probe, "failureThreshold", json!(3));
    if let Some(http) = probe.get_mut("httpGet").and_then(Value::as_object_mut) {
        default(http, "path", json!("/"));
        default(http, "scheme", json!("HTTP"));
    }
}

/// No tag, or `latest`, and no digest means the kubelet always pulls.
fn pulls_always(image: &str) -> bool {
    if image.contains('@') {
        return false;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.split_once(':') {
        None => true,
        Some((_, tag)) => tag == "latest",
    }
}

fn job(object: &mut Value) {
    let spec = map_at(object, &["spec"]);
    job_spec(spec);
    pod_template(spec);
}

fn job_spec(spec: &mut Map<String, Value>) {
    let unset = |spec: &Map<String, Value>, key: &str| spec.get(key).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    default(spec, "parallelism", json!(1));
    let backoff = if unset(spec, "backoffLimitPerIndex") {
        6
    } else {
        2_147_483_647
    };
    default(spec, "backoffLimit", json!(backoff));
    default(spec, "completionMode", json!("NonIndexed"));
    default(spec, "suspend", json!(false));
    default(spec, "manualSelector", json!(false));
    let replacement = if unset(spec, "podFailurePolicy") {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    default(spec, "podReplacementPolicy", json!(replacement));
}

fn job_selector(object: &mut Value) {
    if meta::at(object, &["spec", "manualSelector"]) == Some(&json!(true)) {
        return;
    }
    let uid = meta::uid(object).to_owned();
    let name = meta::name(object).to_owned();
    let labels = map_at(object, &["spec", "template", "metadata", "labels"]);
    for (key, value) in [
        ("batch.kubernetes.io/controller-uid", &uid),
        ("batch.kubernetes.io/job-name", &name),
        ("controller-uid", &uid),
        ("job-name", &name),
    ] {
        labels
            .entry(key)
            .or_insert_with(|| Value::from(value.as_str()));
    }
    let template_labels = Value::Object(labels.clone());
    // A selector the client set is kept, so that validation can refuse it as not auto-generated.
    if meta::at(object, &["spec", "selector"]).is_none_or(Value::is_null) {
        meta::set_at(
            object,
            &["spec", "selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        );
    }
    // The Job labels quirk: a Job without labels takes its pod template's labels.
    if meta::labels(object).is_none_or(Map::is_empty) {
        meta::set_at(object, &["metadata", "labels"], template_labels);
    }
}

fn cronjob(object: &mut Value) {
    let spec = map_at(object, &["spec"]);
    default(spec, "concurrencyPolicy", json!("Allow"));
    default(spec, "suspend", json!(false));
    default(spec, "successfulJobsHistoryLimit", json!(3));
    default(spec, "failedJobsHistoryLimit", json!(1));
    let job_template = spec.entry("jobTemplate").or_insert_with(|| json!({}));
    pod_template(map_at(job_template, &["spec"]));
}

fn deployment(object: &mut Value) {
    let spec = map_at(object, &["spec"]);
    default(spec, "replicas", json!(1));
    default(spec, "revisionHistoryLimit", json!(10));
    default(spec, "progressDeadlineSeconds", json!(600));
    let strategy = spec.entry("strategy").or_insert_with(|| json!({}));
    let strategy = map_at(strategy, &[]);
    default(strategy, "type", json!("RollingUpdate"));
    if strategy.get("type") == Some(&json!("RollingUpdate")) {
        let rolling = map_at(
            strategy.entry("rollingUpdate").or_insert_with(|| json!({})),
            &[],
        );
        default(rolling, "maxUnavailable", json!("25%"));
        default(rolling, "maxSurge", json!("25%"));
    }
    pod_template(spec);
}

fn service(spec: &mut Map<String, Value>) {
    default(spec, "type", json!("ClusterIP"));
    default(spec, "sessionAffinity", json!("None"));
    for port in spec
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(port) = port.as_object_mut() {
            default(port, "protocol", json!("TCP"));
            if let Some(number) = port.get("port").cloned() {
                default(port, "targetPort", number);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::resources::find;

    #[test]
    fn job_defaults_match_a_real_cluster() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let mut job = json!({"metadata": {"name": "j", "uid": "u1"}, "spec": {"completions": 6, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
        apply(jobs, &mut job);
        prepare_create(jobs, &mut job);
        let spec = &job["spec"];
        assert_eq!(spec["parallelism"], 1);
        assert_eq!(spec["completions"], 6);
        assert_eq!(spec["backoffLimit"], 6);
        assert_eq!(spec["completionMode"], "NonIndexed");
        assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
        assert_eq!(
            spec["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}})
        );
        let container = &spec["template"]["spec"]["containers"][0];
        assert_eq!(container["imagePullPolicy"], "Always");
        assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(spec["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(job["metadata"]["labels"]["job-name"], "j");
        assert_eq!(
            spec["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"],
            "u1"
        );
    }

    #[test]
    fn jobs_with_labels_keep_only_their_own() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let mut job = json!({"metadata": {"name": "j", "uid": "u", "labels": {"a": "b"}}, "spec": {"template": {}}});
        prepare_create(jobs, &mut job);
        assert_eq!(job["metadata"]["labels"], json!({"a": "b"}));
    }

    #[test]
    fn pods_get_their_qos_class_and_services_an_address() {
        let pods = find("", "v1", "pods").expect("served");
        let qos = |resources: Value| {
            let mut pod = json!({"spec": {"containers": [{"name": "c", "resources": resources}]}});
            prepare_create(pods, &mut pod);
            pod["status"]["qosClass"].clone()
        };
        assert_eq!(qos(json!({})), "BestEffort");
        assert_eq!(qos(json!({"requests": {"cpu": "1"}})), "Burstable");
        assert_eq!(
            qos(json!({"limits": {"cpu": "1", "memory": "1Gi"}})),
            "Guaranteed"
        );
        let mut service = json!({"spec": {"ports": [{"port": 80}]}});
        prepare_create(find("", "v1", "services").expect("served"), &mut service);
        assert!(
            service["spec"]["clusterIP"]
                .as_str()
                .is_some_and(|ip| ip.starts_with("10."))
        );
        assert_eq!(service["status"], json!({"loadBalancer": {}}));
    }

    #[test]
    fn probes_get_their_timing_and_http_defaults() {
        let mut job = json!({"spec": {"template": {"spec": {"containers": [{"name": "c",
            "readinessProbe": {"httpGet": {"port": 8080}, "periodSeconds": 2}}]}}}});
        apply(find("batch", "v1", "jobs").expect("served"), &mut job);
        assert_eq!(
            job["spec"]["template"]["spec"]["containers"][0]["readinessProbe"],
            json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "periodSeconds": 2,
                "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3})
        );
    }

    #[test]
    fn pod_containers_request_their_limits_but_templates_do_not() {
        let resources = json!({"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}});
        let mut pod = json!({"spec": {"containers": [{"name": "c", "resources": resources}]}});
        apply(find("", "v1", "pods").expect("served"), &mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "1", "memory": "1Gi"})
        );
        let mut job = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "resources": resources}]}}}});
        apply(find("batch", "v1", "jobs").expect("served"), &mut job);
        assert_eq!(
            job["spec"]["template"]["spec"]["containers"][0]["resources"],
            resources
        );
    }

    #[test]
    fn deployment_and_cronjob_defaults() {
        let mut deployment = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.2"}]}}}});
        apply(
            find("apps", "v1", "deployments").expect("served"),
            &mut deployment,
        );
        assert_eq!(
            deployment["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(
            deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        let mut recreate = json!({"spec": {"strategy": {"type": "Recreate"}}});
        apply(
            find("apps", "v1", "deployments").expect("served"),
            &mut recreate,
        );
        assert!(recreate["spec"]["strategy"].get("rollingUpdate").is_none());
        let mut cronjob = json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {}}}}}});
        apply(
            find("batch", "v1", "cronjobs").expect("served"),
            &mut cronjob,
        );
        assert_eq!(cronjob["spec"]["successfulJobsHistoryLimit"], 3);
        assert!(
            cronjob["spec"]["jobTemplate"]["spec"]
                .get("backoffLimit")
                .is_none()
        );
        assert_eq!(
            cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"],
            "Always"
        );
    }
}
