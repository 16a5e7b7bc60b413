//! Retrying what may succeed a moment later (SPEC §7): 429, 5xx and connection errors, with exponential back-off
//! and jitter so that many writers do not retry in step. Everything else is returned at once.

use std::hash::{BuildHasher as _, Hasher as _};
use std::time::Duration;

/// Attempts in all, the first one included.
const ATTEMPTS: u32 = 6;
const FIRST_DELAY: Duration = Duration::from_millis(200);
const MAX_DELAY: Duration = Duration::from_secs(5);

/// Whether `error` is worth trying again.
pub fn is_transient(error: &kube::Error) -> bool {
    match error {
        kube::Error::Api(status) => status.code == 429 || status.code >= 500,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}

/// Runs `operation` until it succeeds, fails for good, or the attempts run out.
pub async fn transient<T, F, Fut>(what: &str, mut operation: F) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut attempt = 1;
    loop {
        match operation().await {
            Err(error) if attempt < ATTEMPTS && is_transient(&error) => {
                let delay = backoff(attempt);
                tracing::warn!(%error, what, ?delay, attempt, "transient API error; trying again");
                tokio::time::sleep(delay).await;
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// The delay before attempt `attempt + 1`: doubling from [`FIRST_DELAY`], capped, with ±50 % jitter.
fn backoff(attempt: u32) -> Duration {
    backoff_between(attempt, FIRST_DELAY, MAX_DELAY)
}

/// The delay after the `attempt`-th failure in a row (counting from 1): doubling from `first`, capped at `max`,
/// with ±50 % jitter. The `watch` daemon uses it with its own bounds.
pub(crate) fn backoff_between(attempt: u32, first: Duration, max: Duration) -> Duration {
    let base = first
        .saturating_mul(1 << attempt.saturating_sub(1).min(16))
        .min(max);
    // A fresh RandomState is randomly seeded: enough randomness for jitter without a crate.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let factor = 0.5 + f64::from(u32::try_from(random % 1000).unwrap_or(0)) / 1000.0;
    base.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        for attempt in 1..10 {
            let delay = backoff(attempt);
            let base = FIRST_DELAY
                .saturating_mul(1 << (attempt - 1))
                .min(MAX_DELAY);
            assert!(
                delay >= base / 2 && delay <= base.mul_f64(1.5),
                "{delay:?} for {attempt}"
            );
        }
    }
}
