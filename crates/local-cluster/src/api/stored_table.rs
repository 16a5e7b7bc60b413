//! Table columns and cells for the kinds the local cluster only stores (`Secret`, `Endpoints`,
//! `PersistentVolume` and `PersistentVolumeClaim`, `ReplicationController`, `DaemonSet`, `StatefulSet`, `Ingress`,
//! `HorizontalPodAutoscaler`), as Kubernetes' printers give them. With no controller acting on them, their status columns show what was written.

use serde_json::{Value, json};

use super::table::{Column, int, selector_column, template_columns, text};
use crate::registry::meta;

/// The columns of stored-only kind `plural`, or `None` for another kind.
pub(super) fn columns(plural: &str) -> Option<Vec<Column>> {
    let wide: [Column; 3] = [
        ("Containers", "string", 1),
        ("Images", "string", 1),
        ("Selector", "string", 1),
    ];
    let mut out: Vec<Column> = match plural {
        "secrets" => vec![
            ("Name", "string", 0),
            ("Type", "string", 0),
            ("Data", "string", 0),
            ("Age", "string", 0),
        ],
        "endpoints" => vec![
            ("Name", "string", 0),
            ("Endpoints", "string", 0),
            ("Age", "string", 0),
        ],
        "persistentvolumeclaims" => vec![
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Volume", "string", 0),
            ("Capacity", "string", 0),
            ("Access Modes", "string", 0),
            ("StorageClass", "string", 0),
            ("VolumeAttributesClass", "string", 0),
            ("Age", "string", 0),
            ("VolumeMode", "string", 1),
        ],
        "persistentvolumes" => vec![
            ("Name", "string", 0),
            ("Capacity", "string", 0),
            ("Access Modes", "string", 0),
            ("Reclaim Policy", "string", 0),
            ("Status", "string", 0),
            ("Claim", "string", 0),
            ("StorageClass", "string", 0),
            ("VolumeAttributesClass", "string", 0),
            ("Reason", "string", 0),
            ("Age", "string", 0),
            ("VolumeMode", "string", 1),
        ],
        "replicationcontrollers" => vec![
            ("Name", "string", 0),
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Age", "string", 0),
        ],
        "daemonsets" => vec![
            ("Name", "string", 0),
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            ("Node Selector", "string", 0),
            ("Age", "string", 0),
        ],
        "statefulsets" => vec![
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Age", "string", 0),
        ],
        "ingresses" => vec![
            ("Name", "string", 0),
            ("Class", "string", 0),
            ("Hosts", "string", 0),
            ("Address", "string", 0),
            ("Ports", "string", 0),
            ("Age", "string", 0),
        ],
        "horizontalpodautoscalers" => vec![
            ("Name", "string", 0),
            ("Reference", "string", 0),
            ("Targets", "string", 0),
            ("MinPods", "string", 0),
            ("MaxPods", "integer", 0),
            ("Replicas", "integer", 0),
            ("Age", "string", 0),
        ],
        _ => return None,
    };
    match plural {
        "replicationcontrollers" | "daemonsets" => out.extend(wide),
        "statefulsets" => out.extend(&wide[..2]),
        _ => {}
    }
    Some(out)
}

fn or_none(text: &str) -> Value {
    if text.is_empty() {
        json!("<none>")
    } else {
        json!(text)
    }
}

fn access_modes(spec: &Value) -> String {
    spec.get("accessModes")
        .and_then(Value::as_array)
        .map(|modes| {
            modes
                .iter()
                .filter_map(Value::as_str)
                .map(|mode| match mode {
                    "ReadWriteOnce" => "RWO",
                    "ReadOnlyMany" => "ROX",
                    "ReadWriteMany" => "RWX",
                    "ReadWriteOncePod" => "RWOP",
                    other => other,
                })
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

/// The cells of `object`, a stored-only kind `plural`, in the order of [`columns`]; `None` for another kind.
#[expect(
    clippy::too_many_lines,
    reason = "one short arm per stored kind; splitting by kind would scatter one table"
)]
pub(super) fn cells(
    plural: &str,
    object: &Value,
    name: Value,
    created: &str,
) -> Option<Vec<Value>> {
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let storage_class = |o: &Value| or_none(&text(o, &["spec", "storageClassName"]));
    let attributes_class = |o: &Value| or_none(&text(o, &["spec", "volumeAttributesClassName"]));
    Some(match plural {
        "secrets" => {
            let data = object
                .get("data")
                .and_then(Value::as_object)
                .map_or(0, serde_json::Map::len);
            vec![
                name,
                json!(text(object, &["type"])),
                json!(data),
                json!(created),
            ]
        }
        "endpoints" => vec![name, or_none(&endpoints(object)), json!(created)],
        "persistentvolumeclaims" => vec![
            name,
            json!(text(object, &["status", "phase"])),
            json!(text(object, &["spec", "volumeName"])),
            json!(text(object, &["status", "capacity", "storage"])),
            json!(access_modes(object.get("status").unwrap_or(&Value::Null))),
            storage_class(object),
            attributes_class(object),
            json!(created),
            json!(text(object, &["spec", "volumeMode"])),
        ],
        "persistentvolumes" => {
            let claim = match (
                meta::str_at(spec, &["claimRef", "namespace"]),
                meta::str_at(spec, &["claimRef", "name"]),
            ) {
                (Some(namespace), Some(claim)) => format!("{namespace}/{claim}"),
                _ => String::new(),
            };
            vec![
                name,
                json!(text(object, &["spec", "capacity", "storage"])),
                json!(access_modes(spec)),
                json!(text(object, &["spec", "persistentVolumeReclaimPolicy"])),
                json!(text(object, &["status", "phase"])),
                json!(claim),
                storage_class(object),
                attributes_class(object),
                json!(text(object, &["status", "reason"])),
                json!(created),
                json!(text(object, &["spec", "volumeMode"])),
            ]
        }
        "replicationcontrollers" => {
            let [containers, images] = template_columns(object, &["spec"]);
            let selector = spec
                .get("selector")
                .and_then(Value::as_object)
                .map(|labels| {
                    labels
                        .iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            vec![
                name,
                json!(int(object, &["spec", "replicas"])),
                json!(int(object, &["status", "replicas"])),
                json!(int(object, &["status", "readyReplicas"])),
                json!(created),
                containers,
                images,
                json!(selector),
            ]
        }
        "daemonsets" => {
            let [containers, images] = template_columns(object, &["spec"]);
            let node_selector = meta::at(spec, &["template", "spec", "nodeSelector"])
                .and_then(Value::as_object)
                .map(|labels| {
                    labels
                        .iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            let status = |field: &str| json!(int(object, &["status", field]));
            vec![
                name,
                status("desiredNumberScheduled"),
                status("currentNumberScheduled"),
                status("numberReady"),
                status("updatedNumberScheduled"),
                status("numberAvailable"),
                or_none(&node_selector),
                json!(created),
                containers,
                images,
                selector_column(object, &["spec", "selector"]),
            ]
        }
        "statefulsets" => {
            let [containers, images] = template_columns(object, &["spec"]);
            let ready = format!(
                "{}/{}",
                int(object, &["status", "readyReplicas"]),
                int(object, &["spec", "replicas"])
            );
            vec![name, json!(ready), json!(created), containers, images]
        }
        "ingresses" => ingress_cells(object, name, created),
        "horizontalpodautoscalers" => hpa_cells(object, name, created),
        _ => return None,
    })
}

fn endpoints(object: &Value) -> String {
    let mut out = Vec::new();
    for subset in object
        .get("subsets")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        let addresses = subset.get("addresses").and_then(Value::as_array);
        let ports = subset.get("ports").and_then(Value::as_array);
        for address in addresses.map_or(&[][..], Vec::as_slice) {
            let ip = address
                .get("ip")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match ports.filter(|p| !p.is_empty()) {
                Some(ports) => out.extend(ports.iter().map(|p| {
                    format!(
                        "{ip}:{}",
                        p.get("port").and_then(Value::as_i64).unwrap_or(0)
                    )
                })),
                None => out.push(ip.to_owned()),
            }
        }
    }
    if out.len() > 3 {
        let more = out.len() - 3;
        out.truncate(3);
        return format!("{} + {more} more...", out.join(","));
    }
    out.join(",")
}

fn ingress_cells(object: &Value, name: Value, created: &str) -> Vec<Value> {
    let rules = meta::at(object, &["spec", "rules"])
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let hosts: Vec<&str> = rules
        .iter()
        .map(|r| r.get("host").and_then(Value::as_str).unwrap_or("*"))
        .collect();
    let addresses: Vec<&str> = meta::at(object, &["status", "loadBalancer", "ingress"])
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|i| {
            i.get("ip")
                .or_else(|| i.get("hostname"))
                .and_then(Value::as_str)
        })
        .collect();
    let ports = if meta::at(object, &["spec", "tls"])
        .and_then(Value::as_array)
        .is_some_and(|tls| !tls.is_empty())
    {
        "80, 443"
    } else {
        "80"
    };
    let hosts = if hosts.is_empty() {
        "*".to_owned()
    } else {
        hosts.join(",")
    };
    vec![
        name,
        or_none(&text(object, &["spec", "ingressClassName"])),
        json!(hosts),
        json!(addresses.join(",")),
        json!(ports),
        json!(created),
    ]
}

fn hpa_cells(object: &Value, name: Value, created: &str) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        text(object, &["spec", "scaleTargetRef", "kind"]),
        text(object, &["spec", "scaleTargetRef", "name"])
    );
    // The stored (autoscaling/v2) form: `<current>/<target>` per metric, current unknown until an autoscaler runs.
    let targets: Vec<String> = meta::at(object, &["spec", "metrics"])
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .map(|metric| {
            let target = meta::at(metric, &["resource", "target", "averageUtilization"])
                .and_then(Value::as_i64)
                .map_or_else(|| "<unset>".to_owned(), |t| format!("{t}%"));
            let resource = meta::str_at(metric, &["resource", "name"]).unwrap_or("metric");
            format!("{resource}: <unknown>/{target}")
        })
        .collect();
    let min = meta::at(object, &["spec", "minReplicas"])
        .and_then(Value::as_i64)
        .map_or_else(|| "<unset>".to_owned(), |m| m.to_string());
    vec![
        name,
        json!(reference),
        json!(if targets.is_empty() {
            "<none>".to_owned()
        } else {
            targets.join(", ")
        }),
        json!(min),
        json!(int(object, &["spec", "maxReplicas"])),
        json!(int(object, &["status", "currentReplicas"])),
        json!(created),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_one_cell_per_column() {
        let object = json!({"metadata": {"name": "x"}, "spec": {"accessModes": ["ReadWriteOnce"]}});
        for plural in [
            "secrets",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumes",
            "replicationcontrollers",
            "daemonsets",
            "statefulsets",
            "ingresses",
            "horizontalpodautoscalers",
        ] {
            let columns = columns(plural).expect("a stored kind");
            let cells = cells(plural, &object, json!("x"), "1s").expect("a stored kind");
            assert_eq!(columns.len(), cells.len(), "{plural}");
        }
        assert!(columns("pods").is_none());
        let pv = cells("persistentvolumes", &object, json!("x"), "1s").expect("kind");
        assert_eq!(pv[2], "RWO");
    }
}
