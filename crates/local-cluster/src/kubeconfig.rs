//! Kubeconfigs for the local cluster: its `https://127.0.0.1:<port>` address, its CA, and a user's client
//! certificate, either inline (the owner's, written by `--kubeconfig-out`) or as files beside the kubeconfig (a
//! tool's, laid out as Toolforge's `become` gives them: `client.crt` and `client.key`).

use std::path::Path;

use base64::Engine as _;
use serde_json::{Value, json};

use crate::auth::pki::ClientCredentials;

/// The kubeconfig's cluster and context name.
pub const CONTEXT: &str = "toolforge-local";

/// How a kubeconfig carries the user's certificate.
#[derive(Debug, Clone, Copy)]
pub enum UserCredentials<'a> {
    /// Certificate and key inside the kubeconfig.
    Inline(&'a ClientCredentials),
    /// Paths of the certificate and key files.
    Files {
        certificate: &'a Path,
        key: &'a Path,
    },
}

/// A kubeconfig with one context, [`CONTEXT`], for `user` in `namespace`.
pub fn render(
    server: &str,
    ca_certificate_pem: &str,
    namespace: &str,
    user: &str,
    credentials: UserCredentials<'_>,
) -> String {
    let base64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let user_entry = match credentials {
        UserCredentials::Inline(credentials) => json!({
            "client-certificate-data": base64(&credentials.certificate_pem),
            "client-key-data": base64(&credentials.key_pem),
        }),
        UserCredentials::Files { certificate, key } => json!({
            "client-certificate": certificate.display().to_string(),
            "client-key": key.display().to_string(),
        }),
    };
    let config: Value = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {
            "server": server,
            "certificate-authority-data": base64(ca_certificate_pem),
        }}],
        "contexts": [{"name": CONTEXT, "context": {
            "cluster": CONTEXT,
            "namespace": namespace,
            "user": user,
        }}],
        "current-context": CONTEXT,
        "users": [{"name": user, "user": user_entry}],
        "preferences": {},
    });
    // A tree of maps, lists and strings always serializes; JSON is valid YAML should it not.
    serde_saphyr::to_string(&config).unwrap_or_else(|_| config.to_string())
}
