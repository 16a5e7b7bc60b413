//! The registry: the object [`store::Store`] and everything a write goes through on its way in — decoding,
//! defaulting, admission (LimitRanger, ResourceQuota), validation, patches and server-side apply, deletion with
//! finalizers and propagation, and the garbage collector — plus the resource table and the custom types that
//! custom resource definitions add to it (`crd`, `custom`, `structural`), selectors, the API error type and the
//! optional state file. The API, the controllers and the kubelet all write through [`ops`] and
//! [`delete`], so every client sees the same resourceVersions, generations and watch events.
//!
//! The registry is the bottom layer: it imports only its own modules and the crate's foundations (`clock`,
//! `private_files`, `schedule`), never the HTTP layer (`api`), the controllers or the kubelet. Modules only the
//! write path itself needs are private to this folder.

mod admission;
pub(crate) mod api_error;
mod crd;
pub(crate) mod custom;
pub(crate) mod decode;
mod defaults;
pub(crate) mod delete;
mod event_validation;
mod events_view;
mod gc;
mod hpa_view;
pub(crate) mod logs;
mod managed_fields;
pub(crate) mod meta;
pub(crate) mod ops;
mod owners;
pub(crate) mod patch;
pub(crate) mod persist;
mod quantity;
pub(crate) mod resources;
pub(crate) mod selector;
mod server_side_apply;
mod size_limits;
pub(crate) mod store;
pub(crate) mod stored;
mod stored_kinds;
mod structural;
mod typed_json;
mod validation;
