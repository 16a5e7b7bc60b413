//! The domain model every stage shares: the tool and its namespace ([`ToolName`]), the kinds of job ([`Kind`]),
//! the label and annotation keys ([`labels`]), and the inventory with its run records and the content hashes
//! that name things ([`inventory`], [`digest`]).
//!
//! Values and pure functions only, like the rest of the core (`config`, `render`, `plan`): `tests/pure_core.rs`
//! fails the build's tests when any of them does I/O or imports a stage above it.

pub mod digest;
pub mod inventory;
mod kind;
pub mod labels;
pub mod tool;

pub use kind::Kind;
pub use tool::ToolName;
