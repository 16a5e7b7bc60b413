//! The rendering contract: for each kind of job and each key, the exact objects upstream's jobs-api creates,
//! written out by hand from reference/toolforge.md §3 (labels §3.2, command §3.3, pod template §3.4, per kind
//! §3.6, probes and Service §3.7) and jobs-api.md §2.2 (memory and CPU texts), compared field by field with what
//! we render for the same jobs.yaml entry. Nothing expected here comes from our own code.
//!
//! Our own additions are taken out before comparing, and their presence is checked: the hash and fingerprint
//! annotations on every top-level object, and the inventory membership labels. Empty lists and maps count as
//! absent on both sides: upstream sends `env: []` for a pre-built image, which the API server stores as no `env`
//! at all, exactly like our object without one.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]
#![expect(
    clippy::needless_pass_by_value,
    reason = "the expected objects are composed from owned values; borrowing would only move the clones inside"
)]

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, SourceFile};
use toolforge_jobs::model::ToolName;
use toolforge_jobs::render::{self, Membership, RenderContext};

const TOOL: &str = "mytool";
const NAMESPACE: &str = "tool-mytool";
const HOME: &str = "/data/project/mytool";
const UID: i64 = 52503;
/// The `python3.11` entry of the image table (its web variant, reference §5), with the implied tag.
const PYTHON311: &str = "docker-registry.svc.toolforge.org/toolforge-python311-sssd-web:latest";
/// Production's Harbor host, which build-service images written without a host get.
const HARBOR: &str = "tools-harbor.wmcloud.org";

/// Our annotations, on every top-level object and nowhere upstream's objects have any of their own.
const OUR_ANNOTATIONS: [&str; 2] = [
    "jobs.toolforge.org/desired-hash",
    "jobs.toolforge.org/fingerprint",
];
/// Our labels, on every top-level object.
const OUR_LABELS: [&str; 2] = [
    "jobs.toolforge.org/inventory",
    "applyset.kubernetes.io/part-of",
];

// ---------------------------------------------------------------------------------------------------------------
// Upstream's objects, by the reference's rules.

/// What a job's labels depend on.
struct Labelled<'a> {
    name: &'a str,
    component: &'a str,
    filelog: bool,
    emails: &'a str,
    mount: &'a str,
}

impl Labelled<'_> {
    /// §3.2: the selector labels (get, delete) plus the format version, as on Services.
    fn service_labels(&self) -> Value {
        let mut labels = self.spread_selector();
        labels["app.kubernetes.io/component"] = json!(self.component);
        labels["app.kubernetes.io/version"] = json!("2");
        labels
    }

    /// §3.2: every label of a workload and its pod template.
    fn labels(&self) -> Value {
        let mut labels = self.service_labels();
        if self.filelog {
            labels["jobs.toolforge.org/filelog"] = json!("yes");
        }
        labels["jobs.toolforge.org/emails"] = json!(self.emails);
        labels["toolforge.org/mount-storage"] = json!(self.mount);
        labels
    }

    /// §3.2 and §3.4: the reduced selector (T409007), which the Deployment selects by and the pods spread over.
    fn spread_selector(&self) -> Value {
        json!({
            "toolforge": "tool",
            "app.kubernetes.io/managed-by": "toolforge-jobs-framework",
            "app.kubernetes.io/created-by": TOOL,
            "app.kubernetes.io/name": self.name,
        })
    }

    fn metadata(&self) -> Value {
        json!({"name": self.name, "namespace": NAMESPACE, "labels": self.labels()})
    }
}

/// §3.4: the pod template around `container`.
fn pod_template(labelled: &Labelled, container: Value, restart_policy: &str) -> Value {
    json!({
        "metadata": {"labels": labelled.labels()},
        "spec": {
            "containers": [container],
            "restartPolicy": restart_policy,
            "terminationGracePeriodSeconds": 15,
            "securityContext": {
                "fsGroup": UID,
                "runAsGroup": UID,
                "runAsNonRoot": true,
                "runAsUser": UID,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "topologySpreadConstraints": [{
                "labelSelector": {"matchLabels": labelled.spread_selector()},
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
            }],
        },
    })
}

/// §3.4: resources as upstream writes their texts (jobs-api.md §2.2).
fn resources(
    memory_limit: &str,
    memory_request: &str,
    cpu_limit: &str,
    cpu_request: &str,
) -> Value {
    json!({
        "limits": {"memory": memory_limit, "cpu": cpu_limit},
        "requests": {"memory": memory_request, "cpu": cpu_request},
    })
}

/// The defaults: 512Mi (`0.5Gi`, request the same in bytes), CPU request 100m (`0.1`), production limit 1000m.
fn default_resources() -> Value {
    resources("0.5Gi", "536870912.0", "1000m", "0.1")
}

/// §3.4: container `job` of a pre-built image: shell command, the home as working directory.
fn prebuilt_container(image: &str, shell_text: &str, resources: Value) -> Value {
    json!({
        "name": "job",
        "image": image,
        "command": ["/bin/sh", "-c", "--", shell_text],
        "workingDir": HOME,
        "env": [],
        "resources": resources,
        "securityContext": container_security_context(),
    })
}

/// §3.4: container `job` of a build-service image: no working directory, `NO_HOME` instead.
fn build_service_container(image: &str, command: Value, resources: Value) -> Value {
    json!({
        "name": "job",
        "image": image,
        "command": command,
        "env": [{"name": "NO_HOME", "value": "a buildservice pod does not need a home env"}],
        "resources": resources,
        "securityContext": container_security_context(),
    })
}

fn container_security_context() -> Value {
    json!({
        "allowPrivilegeEscalation": false,
        "capabilities": {"drop": ["ALL"]},
        "privileged": false,
        "readOnlyRootFilesystem": false,
        "runAsGroup": UID,
        "runAsNonRoot": true,
        "runAsUser": UID,
    })
}

/// §3.3: the file-logging wrapper of the default log paths.
fn logged(name: &str, command: &str) -> String {
    format!("exec 1>>{HOME}/{name}.out;exec 2>>{HOME}/{name}.err;{command}")
}

/// §3.7: startup and liveness probes around one check.
fn with_probes(mut container: Value, check: &Value) -> Value {
    let timed = |period: i64, failures: i64| {
        let mut probe = check.clone();
        probe["initialDelaySeconds"] = json!(0);
        probe["periodSeconds"] = json!(period);
        probe["failureThreshold"] = json!(failures);
        probe["timeoutSeconds"] = json!(5);
        probe
    };
    container["startupProbe"] = timed(1, 120);
    container["livenessProbe"] = timed(10, 3);
    container
}

/// §3.7: a container with a port: the port itself and env `PORT`.
fn with_port(mut container: Value, port: i64, protocol: &str) -> Value {
    container["ports"] = json!([{"containerPort": port, "protocol": protocol}]);
    container["env"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "PORT", "value": port.to_string()}));
    container
}

/// §3.6: a one-off's Job.
fn upstream_job(labelled: &Labelled, retry: i64, container: Value) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": labelled.metadata(),
        "spec": {
            "backoffLimit": retry,
            "ttlSecondsAfterFinished": 30,
            "template": pod_template(labelled, container, "Never"),
        },
    })
}

/// §3.6: a scheduled job's CronJob; its job template has no metadata.
fn upstream_cron_job(
    labelled: &Labelled,
    written: &str,
    actual: &str,
    job_spec: Value,
    container: Value,
) -> Value {
    let mut job_spec = job_spec;
    job_spec["ttlSecondsAfterFinished"] = json!(30);
    job_spec["template"] = pod_template(labelled, container, "Never");
    let mut metadata = labelled.metadata();
    metadata["annotations"] = json!({"jobs.toolforge.org/cron-expression": written});
    json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": metadata,
        "spec": {
            "schedule": actual,
            "concurrencyPolicy": "Forbid",
            "startingDeadlineSeconds": 30,
            "successfulJobsHistoryLimit": 1,
            "failedJobsHistoryLimit": 1,
            "jobTemplate": {"spec": job_spec},
        },
    })
}

/// §3.6: a continuous job's Deployment.
fn upstream_deployment(labelled: &Labelled, replicas: i64, container: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": labelled.metadata(),
        "spec": {
            "replicas": replicas,
            "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": labelled.spread_selector()},
            "strategy": {"type": if replicas == 1 { "Recreate" } else { "RollingUpdate" }},
            "template": pod_template(labelled, container, "Always"),
        },
    })
}

/// §3.7: the `ClusterIP` Service of a job with a port.
fn upstream_service(labelled: &Labelled, port: i64, protocol: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": labelled.name, "namespace": NAMESPACE, "labels": labelled.service_labels()},
        "spec": {
            "type": "ClusterIP",
            "selector": labelled.service_labels(),
            "ports": [{"port": port, "targetPort": port, "protocol": protocol}],
        },
    })
}

fn one_off(name: &str) -> Labelled<'_> {
    Labelled {
        name,
        component: "jobs",
        filelog: true,
        emails: "none",
        mount: "all",
    }
}

fn scheduled(name: &str) -> Labelled<'_> {
    Labelled {
        component: "cronjobs",
        ..one_off(name)
    }
}

fn continuous(name: &str) -> Labelled<'_> {
    Labelled {
        component: "deployments",
        ..one_off(name)
    }
}

/// A build-service job's labels: no file log, no mount by default.
fn build_service(labelled: Labelled<'_>) -> Labelled<'_> {
    Labelled {
        filelog: false,
        mount: "none",
        ..labelled
    }
}

// ---------------------------------------------------------------------------------------------------------------
// The cases: a jobs.yaml entry and upstream's objects for it.

struct Case {
    what: &'static str,
    entry: &'static str,
    objects: Vec<Value>,
}

#[expect(
    clippy::too_many_lines,
    reason = "one flat list of cases, each readable on its own"
)]
fn cases() -> Vec<Case> {
    vec![
        Case {
            what: "one-off with every default",
            entry: "name: bot\ncommand: ./bot.py --run\nimage: python3.11",
            objects: vec![upstream_job(
                &one_off("bot"),
                0,
                prebuilt_container(
                    PYTHON311,
                    &logged("bot", "./bot.py --run"),
                    default_resources(),
                ),
            )],
        },
        Case {
            what: "one-off with retry, emails, memory and CPU",
            entry: "name: bot\ncommand: ./bot.py\nimage: python3.11\nretry: 3\nemails: onfailure\nmem: 1Gi\ncpu: 500m",
            objects: vec![upstream_job(
                &Labelled {
                    emails: "onfailure",
                    ..one_off("bot")
                },
                3,
                // Above 512Mi the request is half the limit; a CPU that is set is both request and limit.
                prebuilt_container(
                    PYTHON311,
                    &logged("bot", "./bot.py"),
                    resources("1.0Gi", "536870912.0", "0.5", "0.5"),
                ),
            )],
        },
        Case {
            what: "one-off with memory in decimal units and a whole CPU",
            entry: "name: big\ncommand: ./big\nimage: python3.11\nmem: 3G\ncpu: 1",
            objects: vec![upstream_job(
                &one_off("big"),
                0,
                prebuilt_container(
                    PYTHON311,
                    &logged("big", "./big"),
                    resources("2.794Gi", "1500017328.128", "1.0", "1.0"),
                ),
            )],
        },
        Case {
            what: "one-off with memory below the default",
            entry: "name: small\ncommand: ./small\nimage: python3.11\nmem: 256Mi",
            objects: vec![upstream_job(
                &one_off("small"),
                0,
                prebuilt_container(
                    PYTHON311,
                    &logged("small", "./small"),
                    resources("0.25Gi", "268435456.0", "1000m", "0.1"),
                ),
            )],
        },
        Case {
            what: "one-off without file logging",
            entry: "name: quiet\ncommand: ./quiet && echo done\nimage: python3.11\nno-filelog: true",
            objects: vec![upstream_job(
                &Labelled {
                    filelog: false,
                    ..one_off("quiet")
                },
                0,
                prebuilt_container(PYTHON311, "./quiet && echo done", default_resources()),
            )],
        },
        Case {
            what: "one-off with log paths, relative and absolute",
            entry: "name: bot\ncommand: ./bot.py\nimage: python3.11\nfilelog-stdout: logs/bot.log\nfilelog-stderr: /data/project/mytool/errors.log",
            objects: vec![upstream_job(
                &one_off("bot"),
                0,
                prebuilt_container(
                    PYTHON311,
                    "exec 1>>/data/project/mytool/logs/bot.log;exec 2>>/data/project/mytool/errors.log;./bot.py",
                    default_resources(),
                ),
            )],
        },
        Case {
            what: "one-off with an alias of the image",
            entry: "name: bot\ncommand: ./bot.py\nimage: tf-python311",
            objects: vec![upstream_job(
                &one_off("bot"),
                0,
                prebuilt_container(PYTHON311, &logged("bot", "./bot.py"), default_resources()),
            )],
        },
        Case {
            what: "one-off with the table's full image reference",
            entry: "name: bot\ncommand: ./bot.py\nimage: docker-registry.svc.toolforge.org/toolforge-python311-sssd-web:latest",
            objects: vec![upstream_job(
                &one_off("bot"),
                0,
                prebuilt_container(PYTHON311, &logged("bot", "./bot.py"), default_resources()),
            )],
        },
        Case {
            what: "build-service one-off: launcher, split into words, no mount, no file log",
            entry: "name: worker\ncommand: worker --queue \"a b\"\nimage: tool-mytool/worker:latest",
            objects: vec![upstream_job(
                &build_service(one_off("worker")),
                0,
                build_service_container(
                    &format!("{HARBOR}/tool-mytool/worker:latest"),
                    json!(["launcher", "worker", "--queue", "a b"]),
                    default_resources(),
                ),
            )],
        },
        Case {
            what: "build-service one-off with a file log and mount all",
            entry: "name: worker\ncommand: launcher worker\nimage: tool-mytool/worker:latest\nfilelog: true\nmount: all",
            objects: vec![upstream_job(
                &Labelled {
                    filelog: true,
                    mount: "all",
                    ..one_off("worker")
                },
                0,
                build_service_container(
                    &format!("{HARBOR}/tool-mytool/worker:latest"),
                    json!(["/bin/sh", "-c", "--", logged("worker", "launcher worker")]),
                    default_resources(),
                ),
            )],
        },
        Case {
            what: "build-service one-off with mount all and no file log, image of another tool by digest",
            entry: "name: worker\ncommand: worker\nimage: tool-other/worker@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\nmount: all",
            objects: vec![upstream_job(
                &Labelled {
                    mount: "all",
                    ..build_service(one_off("worker"))
                },
                0,
                build_service_container(
                    &format!(
                        "{HARBOR}/tool-other/worker@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                    ),
                    json!(["launcher", "worker"]),
                    default_resources(),
                ),
            )],
        },
        Case {
            what: "scheduled with an @-macro (reference §1.5 test vector for mytool/myjob)",
            entry: "name: myjob\ncommand: ./daily.sh\nimage: python3.11\nschedule: '@daily'",
            objects: vec![upstream_cron_job(
                &scheduled("myjob"),
                "@daily",
                "55 7 * * *",
                json!({"backoffLimit": 0}),
                prebuilt_container(
                    PYTHON311,
                    &logged("myjob", "./daily.sh"),
                    default_resources(),
                ),
            )],
        },
        Case {
            what: "scheduled with an expression, timeout, retry and emails",
            entry: "name: nightly\ncommand: ./nightly.sh\nimage: python3.11\nschedule: '*/15  3 * * 1'\ntimeout: 600\nretry: 2\nemails: all",
            objects: vec![upstream_cron_job(
                &Labelled {
                    emails: "all",
                    ..scheduled("nightly")
                },
                "*/15  3 * * 1",
                "*/15 3 * * 1",
                json!({"backoffLimit": 2, "activeDeadlineSeconds": 600}),
                prebuilt_container(
                    PYTHON311,
                    &logged("nightly", "./nightly.sh"),
                    default_resources(),
                ),
            )],
        },
        Case {
            what: "scheduled build-service job",
            entry: "name: sweep\ncommand: sweep\nimage: tool-mytool/tools:v2\nschedule: '0 4 * * *'",
            objects: vec![upstream_cron_job(
                &build_service(scheduled("sweep")),
                "0 4 * * *",
                "0 4 * * *",
                json!({"backoffLimit": 0}),
                build_service_container(
                    &format!("{HARBOR}/tool-mytool/tools:v2"),
                    json!(["launcher", "sweep"]),
                    default_resources(),
                ),
            )],
        },
        Case {
            what: "continuous with every default",
            entry: "name: daemon\ncommand: ./daemon.py\nimage: python3.11\ncontinuous: true",
            objects: vec![upstream_deployment(
                &continuous("daemon"),
                1,
                prebuilt_container(
                    PYTHON311,
                    &logged("daemon", "./daemon.py"),
                    default_resources(),
                ),
            )],
        },
        Case {
            what: "continuous with replicas, emails, memory and no file log",
            entry: "name: pool\ncommand: ./pool.py\nimage: python3.11\ncontinuous: true\nreplicas: 3\nemails: onfinish\nmem: 2Gi\nno-filelog: true",
            objects: vec![upstream_deployment(
                &Labelled {
                    filelog: false,
                    emails: "onfinish",
                    ..continuous("pool")
                },
                3,
                prebuilt_container(
                    PYTHON311,
                    "./pool.py",
                    resources("2.0Gi", "1073741824.0", "1000m", "0.1"),
                ),
            )],
        },
        Case {
            what: "continuous with a TCP port: Service and automatic TCP probes",
            entry: "name: api\ncommand: ./serve.py\nimage: python3.11\ncontinuous: true\nport: 8000",
            objects: vec![
                upstream_deployment(
                    &continuous("api"),
                    1,
                    with_probes(
                        with_port(
                            prebuilt_container(
                                PYTHON311,
                                &logged("api", "./serve.py"),
                                default_resources(),
                            ),
                            8000,
                            "TCP",
                        ),
                        &json!({"tcpSocket": {"port": 8000}}),
                    ),
                ),
                upstream_service(&continuous("api"), 8000, "TCP"),
            ],
        },
        Case {
            what: "continuous with a UDP port: Service, no probes",
            entry: "name: dns\ncommand: ./dns.py\nimage: python3.11\ncontinuous: true\nport: 5353/udp",
            objects: vec![
                upstream_deployment(
                    &continuous("dns"),
                    1,
                    with_port(
                        prebuilt_container(
                            PYTHON311,
                            &logged("dns", "./dns.py"),
                            default_resources(),
                        ),
                        5353,
                        "UDP",
                    ),
                ),
                upstream_service(&continuous("dns"), 5353, "UDP"),
            ],
        },
        Case {
            what: "continuous with an HTTP health check",
            entry: "name: web\ncommand: ./web.py\nimage: python3.11\ncontinuous: true\nport: 8080\nhealth-check-http: /healthz",
            objects: vec![
                upstream_deployment(
                    &continuous("web"),
                    1,
                    with_probes(
                        with_port(
                            prebuilt_container(
                                PYTHON311,
                                &logged("web", "./web.py"),
                                default_resources(),
                            ),
                            8080,
                            "TCP",
                        ),
                        &json!({"httpGet": {"path": "/healthz", "port": 8080}}),
                    ),
                ),
                upstream_service(&continuous("web"), 8080, "TCP"),
            ],
        },
        Case {
            what: "continuous with a script health check",
            entry: "name: watcher\ncommand: ./watch.sh\nimage: python3.11\ncontinuous: true\nhealth-check-script: test -f /tmp/alive",
            objects: vec![upstream_deployment(
                &continuous("watcher"),
                1,
                with_probes(
                    prebuilt_container(
                        PYTHON311,
                        &logged("watcher", "./watch.sh"),
                        default_resources(),
                    ),
                    &json!({"exec": {"command": ["/bin/sh", "-c", "test -f /tmp/alive"]}}),
                ),
            )],
        },
        Case {
            what: "continuous build-service job with a port and a script health check",
            entry: "name: app\ncommand: web\nimage: tool-mytool/app:latest\ncontinuous: true\nport: 8000\nhealth-check-script: check --quick",
            objects: vec![
                upstream_deployment(
                    &build_service(continuous("app")),
                    1,
                    with_probes(
                        with_port(
                            build_service_container(
                                &format!("{HARBOR}/tool-mytool/app:latest"),
                                json!(["launcher", "web"]),
                                default_resources(),
                            ),
                            8000,
                            "TCP",
                        ),
                        &json!({"exec": {"command": ["launcher", "check", "--quick"]}}),
                    ),
                ),
                upstream_service(&build_service(continuous("app")), 8000, "TCP"),
            ],
        },
    ]
}

// ---------------------------------------------------------------------------------------------------------------
// Rendering and comparing.

fn context() -> RenderContext {
    RenderContext::toolforge(
        &ToolName::new(TOOL).unwrap(),
        u32::try_from(UID).unwrap(),
        ImageTable::bundled(),
        Membership {
            set_name: "toolforge-jobs".to_owned(),
            applyset_id: "applyset-contract".to_owned(),
        },
    )
}

/// Our objects for `entry`, without our own annotations and labels (whose presence is checked here).
fn ours(entry: &str, problems: &mut Vec<String>) -> Vec<Value> {
    let images = ImageTable::bundled();
    let loader = config::Context {
        tool: TOOL,
        images: &images,
        count_trigger_files: None,
    };
    let file = config::load(
        SourceFile::new(
            "jobs.yaml".to_owned(),
            format!("- {}\n", entry.replace('\n', "\n  ")),
        ),
        &loader,
    )
    .unwrap_or_else(|invalid| panic!("{entry}\nis invalid: {invalid:?}"));
    let job = &file.jobs[0].job;
    let rendered = render::objects(job, &context()).unwrap();
    let mut objects = vec![serde_json::to_value(&rendered.workload).unwrap()];
    objects.extend(
        rendered
            .service
            .iter()
            .map(|service| serde_json::to_value(service).unwrap()),
    );
    for object in &mut objects {
        let kind = object["kind"].as_str().unwrap_or("object").to_owned();
        let metadata = object["metadata"].as_object_mut().unwrap();
        for (field, keys) in [("annotations", &OUR_ANNOTATIONS), ("labels", &OUR_LABELS)] {
            let map = metadata.get_mut(field).and_then(Value::as_object_mut);
            for key in keys {
                if map.as_ref().is_none_or(|map| !map.contains_key(*key)) {
                    problems.push(format!(
                        "{kind}: our metadata.{field}[\"{key}\"] is missing"
                    ));
                }
            }
            if let Some(map) = map {
                for key in keys {
                    map.remove(*key);
                }
            }
        }
    }
    objects
}

/// Every leaf of `value` by its path (`spec.template.spec.containers[0].command[3]`, `metadata.labels["a/b"]`);
/// empty lists and maps are no leaves.
fn leaves(value: &Value, path: &str, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let step = if key.chars().all(|c| c.is_ascii_alphanumeric()) {
                    if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    }
                } else {
                    format!("{path}[{key:?}]")
                };
                leaves(child, &step, out);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                leaves(child, &format!("{path}[{index}]"), out);
            }
        }
        Value::Null => {}
        leaf => {
            out.insert(path.to_owned(), leaf.clone());
        }
    }
}

/// The field differences of our object from upstream's, one line each.
fn differences(upstream: &Value, ours: &Value) -> Vec<String> {
    let (mut expected, mut actual) = (BTreeMap::new(), BTreeMap::new());
    leaves(upstream, "", &mut expected);
    leaves(ours, "", &mut actual);
    let mut paths: Vec<&String> = expected.keys().chain(actual.keys()).collect();
    paths.sort();
    paths.dedup();
    paths
        .into_iter()
        .filter_map(|path| match (expected.get(path), actual.get(path)) {
            (Some(want), Some(got)) if want == got => None,
            (Some(want), Some(got)) => Some(format!("  {path}: upstream {want}, ours {got}")),
            (Some(want), None) => Some(format!("  {path}: upstream {want}, ours has none")),
            (None, Some(got)) => Some(format!("  {path}: upstream has none, ours {got}")),
            (None, None) => None,
        })
        .collect()
}

fn describe(object: &Value) -> String {
    format!(
        "{} {}",
        object["kind"].as_str().unwrap_or("?"),
        object["metadata"]["name"].as_str().unwrap_or("?")
    )
}

#[test]
fn every_kind_and_key_renders_exactly_upstreams_objects() {
    let mut failures = Vec::new();
    for case in cases() {
        let mut problems = Vec::new();
        let ours = ours(case.entry, &mut problems);
        let kinds = |objects: &[Value]| objects.iter().map(describe).collect::<Vec<_>>();
        if kinds(&ours) != kinds(&case.objects) {
            problems.push(format!(
                "  objects: upstream {:?}, ours {:?}",
                kinds(&case.objects),
                kinds(&ours)
            ));
        }
        for (upstream, ours) in case.objects.iter().zip(&ours) {
            let found = differences(upstream, ours);
            if !found.is_empty() {
                problems.push(format!("  {}:", describe(upstream)));
                problems.extend(found.into_iter().map(|line| format!("  {line}")));
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{} ({}):\n{}",
                case.what,
                case.entry.replace('\n', "; "),
                problems.join("\n")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from upstream's objects:\n\n{}",
        failures.len(),
        cases().len(),
        failures.join("\n\n")
    );
}

#[test]
fn a_difference_is_reported_by_field_path() {
    let upstream = json!({"metadata": {"labels": {"app.kubernetes.io/name": "a"}}, "spec": {"x": [1, 2], "env": []}});
    let ours = json!({"metadata": {"labels": {"app.kubernetes.io/name": "b"}}, "spec": {"x": [1], "y": true}});
    assert_eq!(
        differences(&upstream, &ours),
        [
            r#"  metadata.labels["app.kubernetes.io/name"]: upstream "a", ours "b""#,
            "  spec.x[1]: upstream 2, ours has none",
            "  spec.y: upstream has none, ours true",
        ]
    );
}
