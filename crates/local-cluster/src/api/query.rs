//! Query strings: decoding (kube-rs sends `?&a=b`, so empty pairs are skipped) and the typed readers the
//! handlers need.

use crate::registry::api_error::{ApiError, FieldError};
use crate::registry::decode::FieldValidation;
use crate::registry::ops::{Filter, WriteOptions};
use crate::registry::resources::ResourceType;
use crate::registry::selector::{FieldSelector, LabelSelector};

/// The decoded query pairs, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query(pub(crate) Vec<(String, String)>);

impl Query {
    pub(crate) fn parse(raw: Option<&str>) -> Self {
        Query(
            form_urlencoded::parse(raw.unwrap_or_default().as_bytes())
                .filter(|(k, _)| !k.is_empty())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1"))
    }

    pub(crate) fn filter(&self, resource: &ResourceType) -> Result<Filter, ApiError> {
        Ok(Filter {
            labels: LabelSelector::parse(self.get("labelSelector").unwrap_or_default())?,
            fields: FieldSelector::parse(self.get("fieldSelector").unwrap_or_default(), resource)?,
        })
    }

    pub(crate) fn write_options(&self) -> Result<WriteOptions, ApiError> {
        let mut dry_run = false;
        for (key, value) in &self.0 {
            if key == "dryRun" {
                if value == "All" {
                    dry_run = true;
                } else {
                    return Err(ApiError::invalid_options(
                        "CreateOptions",
                        &[FieldError::not_supported(
                            "dryRun",
                            &serde_json::json!(value),
                            &["All"],
                        )],
                    ));
                }
            }
        }
        let force = self
            .get("force")
            .map(|value| value == "true" || value == "1");
        let field_manager = self.get("fieldManager").map(str::to_owned);
        if let Some(manager) = &field_manager
            && (manager.len() > 128 || manager.chars().any(char::is_control))
        {
            let detail = if manager.len() > 128 {
                "must be shorter than 128 characters"
            } else {
                "may only contain printable characters"
            };
            return Err(ApiError::invalid_options(
                "CreateOptions",
                &[FieldError::invalid(
                    "fieldManager",
                    &serde_json::json!(manager),
                    detail,
                )],
            ));
        }
        Ok(WriteOptions {
            dry_run,
            field_validation: FieldValidation::parse(self.get("fieldValidation"))?,
            field_manager,
            force,
            ..WriteOptions::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_empty_pairs_and_decodes_values() {
        let q = Query::parse(Some("&labelSelector=app%3Ddemo&&limit=10&watch=1"));
        assert_eq!(q.get("labelSelector"), Some("app=demo"));
        assert_eq!(q.get("limit"), Some("10"));
        assert!(q.flag("watch"));
        assert!(!q.flag("missing"));
    }

    #[test]
    fn write_options_validate_dry_run_and_field_validation() {
        let ok = Query::parse(Some("dryRun=All&fieldValidation=Strict&fieldManager=me"))
            .write_options()
            .expect("valid");
        assert!(ok.dry_run);
        assert_eq!(ok.field_validation, FieldValidation::Strict);
        assert_eq!(
            Query::parse(Some("dryRun=Some"))
                .write_options()
                .expect_err("invalid")
                .code,
            422
        );
        assert_eq!(
            Query::parse(Some("fieldValidation=Loose"))
                .write_options()
                .expect_err("invalid")
                .code,
            400
        );
        let long = format!("fieldManager={}", "m".repeat(129));
        assert_eq!(
            Query::parse(Some(&long))
                .write_options()
                .expect_err("too long")
                .code,
            422
        );
    }
}
