//! `autoscaling/v1` `HorizontalPodAutoscaler`s are a view of the `autoscaling/v2` ones, Kubernetes' storage version,
//! so an object written through one version is read through the other. v1 knows one metric, the target CPU
//! utilization, which maps to v2's `Resource` metric for `cpu` with a `Utilization` target; v2's other metrics and
//! its `behavior` are not visible through v1 (Kubernetes keeps them in annotations there; the local cluster
//! does not, as no autoscaler acts on them).

use serde_json::{Map, Value, json};

use crate::registry::events_view::View;

pub(crate) static HPA_V1: View = View {
    storage_group: "autoscaling",
    to_storage: to_v2,
    from_storage: to_v1,
};

fn cpu_utilization(metric: &Value, value: &str) -> Option<Value> {
    let resource = metric.get("resource")?;
    (metric.get("type")? == "Resource" && resource.get("name")? == "cpu")
        .then(|| resource.get(value)?.get("averageUtilization").cloned())
        .flatten()
}

fn section(object: &mut Value, key: &str) -> Option<Map<String, Value>> {
    object.get_mut(key)?.as_object_mut().map(std::mem::take)
}

fn to_v2(mut object: Value) -> Value {
    if let Some(mut spec) = section(&mut object, "spec") {
        if let Some(target) = spec.remove("targetCPUUtilizationPercentage") {
            spec.insert(
                "metrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": target}}}]),
            );
        }
        object["spec"] = Value::Object(spec);
    }
    if let Some(mut status) = section(&mut object, "status") {
        if let Some(current) = status.remove("currentCPUUtilizationPercentage") {
            status.insert(
                "currentMetrics".into(),
                json!([{"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": current}}}]),
            );
        }
        object["status"] = Value::Object(status);
    }
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!("autoscaling/v2"));
    }
    object
}

fn to_v1(mut object: Value) -> Value {
    if let Some(mut spec) = section(&mut object, "spec") {
        let target = spec.remove("metrics").and_then(|m| {
            m.as_array()?
                .iter()
                .find_map(|m| cpu_utilization(m, "target"))
        });
        spec.remove("behavior");
        if let Some(target) = target {
            spec.insert("targetCPUUtilizationPercentage".into(), target);
        }
        object["spec"] = Value::Object(spec);
    }
    if let Some(mut status) = section(&mut object, "status") {
        let current = status.remove("currentMetrics").and_then(|m| {
            m.as_array()?
                .iter()
                .find_map(|m| cpu_utilization(m, "current"))
        });
        status.remove("conditions");
        if let Some(current) = current {
            status.insert("currentCPUUtilizationPercentage".into(), current);
        }
        object["status"] = Value::Object(status);
    }
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!("autoscaling/v1"));
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_target_converts_both_ways() {
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "minReplicas": 1, "maxReplicas": 3,
                "targetCPUUtilizationPercentage": 70}});
        let v2 = to_v2(v1.clone());
        assert_eq!(v2["apiVersion"], "autoscaling/v2");
        assert_eq!(
            v2["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            70
        );
        assert!(v2["spec"].get("targetCPUUtilizationPercentage").is_none());
        assert_eq!(to_v1(v2), v1);
    }

    #[test]
    fn other_metrics_are_not_visible_through_v1() {
        let v2 = json!({"apiVersion": "autoscaling/v2", "spec": {"maxReplicas": 2, "metrics": [
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "Utilization", "averageUtilization": 50}}}]}});
        assert_eq!(
            to_v1(v2),
            json!({"apiVersion": "autoscaling/v1", "spec": {"maxReplicas": 2}})
        );
    }
}
