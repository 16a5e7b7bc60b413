//! The root CA publisher (kube-controller-manager's `root-ca-cert-publisher`): every namespace that is not being
//! deleted has a ConfigMap `kube-root-ca.crt` whose `ca.crt` is the CA bundle that verifies the API server, so
//! pods can trust it. It is created with the namespace, created again when deleted, and its data (and the
//! description annotation, when emptied) put back when edited; anything else on it (labels, other annotations,
//! `binaryData`) is left as the user wrote it, as Kubernetes does.

use serde_json::{Value, json};

use crate::controllers::framework::{Action, Effect, Key, Reconciler};
use crate::registry::meta;
use crate::registry::ops::{Part, namespaces};
use crate::registry::resources::configmaps;
use crate::registry::store::{Change, EventType, Store};

/// The ConfigMap's name, the same in every namespace.
pub(crate) const NAME: &str = "kube-root-ca.crt";
/// The key of the CA bundle in its data.
const KEY: &str = "ca.crt";
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Kubernetes' text, word for word.
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal \
     endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across \
     distributions of Kubernetes clusters.";

/// The publisher; its keys are namespaces (`Key::namespace`, with [`NAME`] as the name).
#[derive(Debug)]
pub(crate) struct RootCaPublisher {
    /// The CA certificate (PEM) that signed the API server's serving certificate.
    pub(crate) ca_pem: String,
}

fn key(namespace: &str) -> Key {
    Key {
        namespace: namespace.to_owned(),
        name: NAME.to_owned(),
    }
}

impl Reconciler for RootCaPublisher {
    fn keys(&self, change: &Change) -> Vec<Key> {
        if change.resource.is(namespaces()) && change.event != EventType::Deleted {
            return vec![key(meta::name(&change.object))];
        }
        // Kubernetes reacts to updates and deletions of the ConfigMap, not to its creation.
        if change.resource.is(configmaps())
            && change.event != EventType::Added
            && meta::name(&change.object) == NAME
        {
            return vec![key(meta::namespace(&change.object))];
        }
        Vec::new()
    }

    fn all(&self, store: &Store) -> Vec<Key> {
        store
            .list(namespaces())
            .iter()
            .map(|namespace| key(meta::name(namespace)))
            .collect()
    }

    fn reconcile(&mut self, key: &Key, store: &Store) -> Action {
        let Some(namespace) = store.get(namespaces(), "", &key.namespace) else {
            return Action::default();
        };
        let current = store.get(configmaps(), &key.namespace, NAME);
        Action {
            effects: decide(&namespace, current, &self.ca_pem)
                .into_iter()
                .collect(),
            requeue_after: None,
        }
    }
}

/// What the ConfigMap in `namespace` needs, given its current state: nothing, a creation or a replacement.
fn decide(namespace: &Value, current: Option<Value>, ca_pem: &str) -> Option<Effect> {
    // A terminating namespace refuses new content; Kubernetes' create fails there and is not retried.
    if meta::is_deleting(namespace) {
        return None;
    }
    let data = json!({KEY: ca_pem});
    let Some(mut config_map) = current else {
        let created = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": meta::name(namespace),
                "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
            "data": data,
        });
        return Some(Effect::Create(configmaps(), created, None));
    };
    let described = meta::str_at(
        &config_map,
        &["metadata", "annotations", DESCRIPTION_ANNOTATION],
    )
    .is_some_and(|text| !text.is_empty());
    if config_map.get("data") == Some(&data) && described {
        return None;
    }
    config_map["data"] = data;
    let annotations = meta::map_at(&mut config_map, &["metadata", "annotations"]);
    annotations.insert(DESCRIPTION_ANNOTATION.into(), Value::from(DESCRIPTION));
    Some(Effect::Replace(configmaps(), Part::Main, config_map))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    fn namespace() -> Value {
        json!({"metadata": {"name": "tool-a", "uid": "nu"}})
    }

    fn published() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": NAME, "namespace": "tool-a", "resourceVersion": "7",
                "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}, "labels": {"mine": "yes"}},
            "data": {"ca.crt": PEM}})
    }

    #[test]
    fn a_namespace_without_the_config_map_gets_it_with_the_ca_and_kubernetes_description() {
        let Some(Effect::Create(resource, created, None)) = decide(&namespace(), None, PEM) else {
            panic!("a creation");
        };
        assert!(resource.is(configmaps()));
        assert_eq!(created["metadata"]["namespace"], "tool-a");
        assert_eq!(created["metadata"]["name"], "kube-root-ca.crt");
        assert_eq!(created["data"], json!({"ca.crt": PEM}));
        assert!(
            created["metadata"]["annotations"]["kubernetes.io/description"]
                .as_str()
                .is_some_and(|text| text.starts_with("Contains a CA bundle"))
        );
    }

    #[test]
    fn edited_data_or_an_emptied_description_is_put_back_and_the_rest_kept() {
        assert_eq!(decide(&namespace(), Some(published()), PEM), None);
        let mut edited = published();
        edited["data"] = json!({"ca.crt": "mine", "extra": "x"});
        edited["metadata"]["annotations"]["kubernetes.io/description"] = json!("");
        let Some(Effect::Replace(_, Part::Main, replaced)) =
            decide(&namespace(), Some(edited), PEM)
        else {
            panic!("a replacement");
        };
        assert_eq!(replaced, published(), "the labels and resourceVersion stay");
        let mut reworded = published();
        reworded["metadata"]["annotations"]["kubernetes.io/description"] = json!("ours");
        assert_eq!(
            decide(&namespace(), Some(reworded), PEM),
            None,
            "Kubernetes only checks that a description is there"
        );
    }

    #[test]
    fn a_terminating_namespace_gets_nothing() {
        let mut terminating = namespace();
        terminating["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(decide(&terminating, None, PEM), None);
    }
}
