//! The four kinds of job, in upstream's words: what every stage calls a job's kind.

use serde::{Deserialize, Serialize};

/// The kind of a canonical job, in upstream's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    OneOff,
    Scheduled,
    Continuous,
    Webservice,
}

impl Kind {
    /// The kind's name as the JSON forms and tables write it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::OneOff => "one-off",
            Kind::Scheduled => "scheduled",
            Kind::Continuous => "continuous",
            Kind::Webservice => "webservice",
        }
    }
}
