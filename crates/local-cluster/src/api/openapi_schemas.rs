//! Kubernetes 1.33's own OpenAPI v3 schemas of the built-in kinds, with their field descriptions, for the
//! `components.schemas` of the group-version documents (what `kubectl explain` reads). The data file is generated
//! by `tools/gen_openapi_schemas.py` from the upstream definitions and embedded compressed (about 100 KB instead
//! of 500 KB); it is inflated on first use.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::{Map, Value};

const COMPRESSED: &[u8] = include_bytes!("../../data/openapi-schemas-v1.33.json.zlib");
const REFERENCE_PREFIX: &str = "#/components/schemas/";

type Schemas = Map<String, Value>;

/// Every embedded schema by its definition name (`io.k8s.api.batch.v1.Job`). Empty, with the reason logged, if the
/// embedded data cannot be read, so that the documents lose their schemas but keep working for validation.
fn all() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| match inflate() {
        Ok(schemas) => schemas,
        Err(error) => {
            tracing::error!(%error, "the embedded OpenAPI schemas are unreadable; kubectl explain will find no built-in kinds");
            Schemas::new()
        }
    })
}

fn inflate() -> Result<Schemas, String> {
    let json = miniz_oxide::inflate::decompress_to_vec_zlib(COMPRESSED)
        .map_err(|error| format!("inflating: {error}"))?;
    serde_json::from_slice(&json).map_err(|error| format!("parsing: {error}"))
}

/// The schemas of these `(group, version, kind)`s and of every schema they reference, by definition name, as the
/// API server puts them in a group-version document. Kinds without an embedded schema (custom ones) add nothing.
pub(crate) fn for_kinds<'a>(
    kinds: impl IntoIterator<Item = (&'a str, &'a str, &'a str)>,
) -> Schemas {
    let schemas = all();
    let mut pending: Vec<&str> = Vec::new();
    for (group, version, kind) in kinds {
        pending.extend(
            schemas
                .iter()
                .filter(|(_, schema)| declares_kind(schema, group, version, kind))
                .map(|(name, _)| name.as_str()),
        );
    }
    let mut wanted = BTreeSet::new();
    while let Some(name) = pending.pop() {
        if let Some(schema) = schemas.get(name)
            && wanted.insert(name)
        {
            references(schema, &mut pending);
        }
    }
    wanted
        .into_iter()
        .filter_map(|name| Some((name.to_owned(), schemas.get(name)?.clone())))
        .collect()
}

fn declares_kind(schema: &Value, group: &str, version: &str, kind: &str) -> bool {
    schema["x-kubernetes-group-version-kind"]
        .as_array()
        .is_some_and(|gvks| {
            gvks.iter().any(|gvk| {
                gvk["group"] == group && gvk["version"] == version && gvk["kind"] == kind
            })
        })
}

fn references<'a>(schema: &'a Value, out: &mut Vec<&'a str>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", Value::String(target)) => {
                        out.extend(target.strip_prefix(REFERENCE_PREFIX));
                    }
                    _ => references(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| references(item, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::resources::RESOURCES;

    #[test]
    fn every_built_in_kind_has_its_upstream_schema() {
        for resource in RESOURCES {
            let schemas = for_kinds([(resource.group, resource.version, resource.kind)]);
            assert!(
                schemas.values().any(|s| declares_kind(
                    s,
                    resource.group,
                    resource.version,
                    resource.kind
                )),
                "{} {}: add it to KINDS in tools/gen_openapi_schemas.py and regenerate",
                resource.api_version(),
                resource.kind
            );
        }
    }

    #[test]
    fn a_kind_brings_the_schemas_it_references_and_no_others() {
        let schemas = for_kinds([("batch", "v1", "Job")]);
        let spec = &schemas["io.k8s.api.batch.v1.JobSpec"];
        assert_eq!(
            spec["properties"]["backoffLimit"]["description"],
            "Specifies the number of retries before marking this job failed. Defaults to 6"
        );
        assert_eq!(
            spec["properties"]["template"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec"
        );
        assert!(schemas.contains_key("io.k8s.api.core.v1.Container"));
        assert!(schemas.contains_key("io.k8s.apimachinery.pkg.api.resource.Quantity"));
        assert!(!schemas.contains_key("io.k8s.api.batch.v1.CronJob"));
        let mut dangling = Vec::new();
        schemas
            .values()
            .for_each(|schema| references(schema, &mut dangling));
        dangling.retain(|name| !schemas.contains_key(*name));
        assert!(dangling.is_empty(), "{dangling:?}");
        assert!(for_kinds([("example.org", "v1", "Widget")]).is_empty());
    }
}
