//! Paginated lists (`limit` and `continue`): the first request takes a snapshot of the whole result, and later
//! pages are served from it, so every page is consistent with the first one's resourceVersion, as etcd-backed
//! lists are. A token names a snapshot and a position in it, so the same token may be used again (a client
//! retrying a page gets the same page), as Kubernetes accepts it until etcd compacts that version. Snapshots are
//! few and short-lived; an unknown or expired one is 410 Expired, Kubernetes' answer for a compacted token.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
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
    /// The whole list as first computed.
    list: Arc<Value>,
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

/// Where a continue token points: a snapshot and the index of the first item of the next page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Position {
    id: u64,
    start: usize,
}

impl Position {
    fn token(self) -> String {
        base64::engine::general_purpose::STANDARD
            .encode(json!({"id": self.id, "start": self.start}).to_string())
    }

    fn parse(token: &str) -> Result<Position, ApiError> {
        let value = base64::engine::general_purpose::STANDARD
            .decode(token)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
        let number = |key: &str| value.as_ref()?.get(key)?.as_u64();
        match (
            number("id"),
            number("start").and_then(|s| usize::try_from(s).ok()),
        ) {
            (Some(id), Some(start)) => Ok(Position { id, start }),
            _ => Err(ApiError::bad_request(format!(
                "continue key is not valid: {token}"
            ))),
        }
    }
}

impl Pages {
    /// The first page of `list` (a complete `{Kind}List`), at most `limit` items.
    pub(crate) fn first(&self, list: Value, limit: Option<usize>) -> Value {
        let count = list["items"].as_array().map_or(0, Vec::len);
        match limit {
            Some(limit) if limit > 0 && count > limit => {
                let list = Arc::new(list);
                let id = self.keep(Arc::clone(&list));
                page(&list, Position { id, start: 0 }, limit)
            }
            _ => list,
        }
    }

    /// The page a `continue` token points to; the same token gives the same page while its snapshot is kept.
    pub(crate) fn next(&self, token: &str, limit: Option<usize>) -> Result<Value, ApiError> {
        let position = Position::parse(token)?;
        let list = {
            let guard = self
                .snapshots
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            guard
                .1
                .iter()
                .find(|s| s.id == position.id && s.taken.elapsed() < LIFETIME)
                .map(|s| Arc::clone(&s.list))
                .ok_or_else(expired)?
        };
        Ok(page(
            &list,
            position,
            limit.filter(|l| *l > 0).unwrap_or(usize::MAX),
        ))
    }

    /// Keeps a snapshot, forgetting the oldest beyond [`KEPT`]; returns its id.
    fn keep(&self, list: Arc<Value>) -> u64 {
        let mut guard = self
            .snapshots
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        guard.0 += 1;
        let id = guard.0;
        guard.1.push_back(Snapshot {
            id,
            taken: Instant::now(),
            list,
        });
        while guard.1.len() > KEPT {
            guard.1.pop_front();
        }
        id
    }
}

/// The page of `list` starting at `position`, with a token for the rest if there is more.
fn page(list: &Value, position: Position, limit: usize) -> Value {
    let items: &[Value] = list["items"].as_array().map_or(&[], Vec::as_slice);
    let start = position.start.min(items.len());
    let end = start.saturating_add(limit).min(items.len());
    let mut metadata = list["metadata"].clone();
    if let Some(map) = metadata.as_object_mut() {
        map.remove("continue");
        map.remove("remainingItemCount");
        if end < items.len() {
            let rest = Position {
                id: position.id,
                start: end,
            };
            map.insert("continue".into(), json!(rest.token()));
            map.insert("remainingItemCount".into(), json!(items.len() - end));
        }
    }
    let mut out = serde_json::Map::new();
    if let Some(fields) = list.as_object() {
        for (key, value) in fields {
            if key != "items" && key != "metadata" {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    out.insert("metadata".into(), metadata);
    out.insert("items".into(), Value::Array(items[start..end].to_vec()));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_consistent_and_tokens_reusable() {
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
        let again = pages
            .next(&token, Some(2))
            .expect("a token can be used again");
        assert_eq!(again["items"], json!([3, 4]));
        assert_eq!(
            again["metadata"]["continue"],
            second["metadata"]["continue"]
        );
        assert_eq!(pages.next("garbage", None).expect_err("invalid").code, 400);
    }

    #[test]
    fn forgotten_snapshots_are_expired() {
        let pages = Pages::default();
        let list = json!({"metadata": {"resourceVersion": "1"}, "items": [1, 2]});
        let opening = pages.first(list.clone(), Some(1));
        let token = opening["metadata"]["continue"]
            .as_str()
            .expect("token")
            .to_owned();
        for _ in 0..KEPT {
            pages.first(list.clone(), Some(1));
        }
        assert_eq!(pages.next(&token, None).expect_err("forgotten").code, 410);
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
