//! Who may reach the local cluster (SPEC §10): identities, their groups, and the cluster's own CA.
//!
//! The server speaks TLS only, with a certificate of the cluster's own CA ([`pki`]). A client is authenticated
//! by a client certificate of that CA — the common name is the user, each organisation a group, as Kubernetes
//! reads certificates — or by the owner's bearer token; everything else gets 401, except `/version` and the
//! health endpoints. What each identity may do is decided in the HTTP layer, where requests are known
//! (`api::policy`: the owner (`system:masters`) everything, a tool (`O=toolforge, CN=<tool>`, the subject
//! Toolforge's issuer gives) its own namespace `tool-<tool>` and the public ConfigMaps), and enforced by its
//! middleware (`api::guard`).
//!
//! This module imports no other part of the crate except `private_files`: the API layer, the TLS server and
//! kubeconfigs build on it.

pub mod pki;

/// The group of the cluster's owner, who may do everything (as on Kubernetes).
pub const ADMIN_GROUP: &str = "system:masters";
/// The owner's user name.
pub const ADMIN_USER: &str = "toolforge-local-admin";
/// The group of tool identities, as Toolforge's certificates carry it.
pub const TOOL_GROUP: &str = "toolforge";
/// The group Kubernetes adds to every authenticated identity.
const AUTHENTICATED_GROUP: &str = "system:authenticated";

/// An authenticated user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub(crate) user: String,
    pub(crate) groups: Vec<String>,
}

impl Identity {
    /// The owner, as the bearer token authenticates it.
    pub(crate) fn admin() -> Identity {
        Identity {
            user: ADMIN_USER.to_owned(),
            groups: vec![ADMIN_GROUP.to_owned()],
        }
    }

    /// The identity a verified client certificate names: its common name and organisations; `None` without a
    /// common name.
    pub(crate) fn from_certificate(der: &[u8]) -> Option<Identity> {
        let (_, certificate) = x509_parser::parse_x509_certificate(der).ok()?;
        let subject = certificate.subject();
        let user = subject.iter_common_name().next()?.as_str().ok()?.to_owned();
        let groups = subject
            .iter_organization()
            .filter_map(|group| group.as_str().ok().map(str::to_owned))
            .collect();
        Some(Identity { user, groups })
    }

    pub(crate) fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The tool this identity is, when it is one.
    pub(crate) fn tool(&self) -> Option<&str> {
        self.in_group(TOOL_GROUP).then_some(self.user.as_str())
    }

    /// The groups as `auth whoami` shows them: the identity's own, then `system:authenticated`.
    pub(crate) fn groups_with_authenticated(&self) -> Vec<String> {
        let mut groups = self.groups.clone();
        groups.push(AUTHENTICATED_GROUP.to_owned());
        groups
    }
}

/// The verified client certificate's identity, attached to each request of a TLS connection.
#[derive(Debug, Clone)]
pub(crate) struct PeerIdentity(pub(crate) Option<Identity>);
