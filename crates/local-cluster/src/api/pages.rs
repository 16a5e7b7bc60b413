//! Paginated lists (`limit` and `continue`): the first request takes a snapshot of the whole result, and later
//! pages are served from it, so every page is consistent with the first one's resourceVersion, as etcd-backed
//! lists are. Snapshots are few and short-lived; an unknown or expired token is 410 Expired.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use crate::registry::api_error::ApiError;

const KEPT: usize = 64;
const LIFETIME: Duration = Duration::from_secs(5 * 60);

#[derive(Debug)]
struct Snapshot {
    id: u64,
    taken: Instant,
    /// The list as first returned, with the items not yet served.
    rest: Value,
}

/// Snapshots of lists being paged through.
#[derive(Debug, Default)]
pub(crate) struct Pages {
    snapshots: Mutex<(u64, VecDeque<Snapshot>)>,
}

fn expired() -> ApiError {
    ApiError::expired(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
    )
}

impl Pages {
    /// The first page of `list` (a complete `{Kind}List`), at most `limit` items.
    pub(crate) fn first(&self, list: Value, limit: Option<usize>) -> Value {
        match limit {
            Some(limit) if limit > 0 => self.cut(list, limit),
            _ => list,
        }
    }

    /// The page after the one whose `continue` token is given.
    pub(crate) fn next(&self, token: &str, limit: Option<usize>) -> Result<Value, ApiError> {
        let id = base64::engine::general_purpose::STANDARD
            .decode(token)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
            .and_then(|value| value.get("id").and_then(Value::as_u64))
            .ok_or_else(|| ApiError::bad_request(format!("continue key is not valid: {token}")))?;
        let rest = {
            let mut guard = self
                .snapshots
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let position = guard
                .1
                .iter()
                .position(|s| s.id == id && s.taken.elapsed() < LIFETIME)
                .ok_or_else(expired)?;
            guard
                .1
                .remove(position)
                .map(|s| s.rest)
                .ok_or_else(expired)?
        };
        Ok(self.cut(rest, limit.filter(|l| *l > 0).unwrap_or(usize::MAX)))
    }

    fn cut(&self, mut list: Value, limit: usize) -> Value {
        let items = list["items"]
            .as_array_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        if items.len() <= limit {
            list["items"] = Value::Array(items);
            if let Some(metadata) = list["metadata"].as_object_mut() {
                metadata.remove("continue");
                metadata.remove("remainingItemCount");
            }
            return list;
        }
        let mut items = items;
        let rest_items = items.split_off(limit);
        let remaining = rest_items.len();
        let mut rest = list.clone();
        rest["items"] = Value::Array(rest_items);
        let id = {
            let mut guard = self
                .snapshots
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            guard.0 += 1;
            let id = guard.0;
            guard.1.push_back(Snapshot {
                id,
                taken: Instant::now(),
                rest,
            });
            while guard.1.len() > KEPT {
                guard.1.pop_front();
            }
            id
        };
        let token = base64::engine::general_purpose::STANDARD.encode(json!({"id": id}).to_string());
        list["items"] = Value::Array(items);
        list["metadata"]["continue"] = json!(token);
        list["metadata"]["remainingItemCount"] = json!(remaining);
        list
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_consistent_and_tokens_single_use() {
        let pages = Pages::default();
        let list = json!({"kind": "JobList", "metadata": {"resourceVersion": "9"}, "items": [1, 2, 3, 4, 5]});
        let opening = pages.first(list, Some(2));
        assert_eq!(opening["items"], json!([1, 2]));
        assert_eq!(opening["metadata"]["remainingItemCount"], 3);
        let token = opening["metadata"]["continue"]
            .as_str()
            .expect("token")
            .to_owned();
        let second = pages.next(&token, Some(2)).expect("next page");
        assert_eq!(second["items"], json!([3, 4]));
        assert_eq!(second["metadata"]["resourceVersion"], "9");
        let final_page = pages
            .next(
                second["metadata"]["continue"].as_str().expect("token"),
                Some(2),
            )
            .expect("last page");
        assert_eq!(final_page["items"], json!([5]));
        assert!(final_page["metadata"].get("continue").is_none());
        assert_eq!(pages.next(&token, Some(2)).expect_err("used").code, 410);
        assert_eq!(pages.next("garbage", None).expect_err("invalid").code, 400);
    }

    #[test]
    fn short_lists_are_not_paged() {
        let pages = Pages::default();
        let list = json!({"metadata": {"resourceVersion": "1"}, "items": [1]});
        assert!(
            pages.first(list, Some(500))["metadata"]
                .get("continue")
                .is_none()
        );
    }
}
