//! Prometheus metrics of the server (`GET /metrics`): requests by route, method and status code, and how long
//! the writes took that requests carried out. Kept in memory, per process: each replica reports its own.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the write duration histogram, in seconds.
const BUCKETS: [f64; 8] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// (route, method, code) → requests.
    requests: BTreeMap<(String, String, u16), u64>,
    /// outcome → (per-bucket counts, sum of seconds, count).
    applies: BTreeMap<&'static str, ([u64; BUCKETS.len()], f64, u64)>,
}

impl Metrics {
    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        // A poisoned lock means a panic while counting: the counts are still usable.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn request(&self, route: &str, method: &str, code: u16) {
        *self
            .counts()
            .requests
            .entry((route.to_owned(), method.to_owned(), code))
            .or_default() += 1;
    }

    pub fn apply_finished(&self, took: Duration, ok: bool) {
        let seconds = took.as_secs_f64();
        let mut counts = self.counts();
        let (buckets, sum, count) = counts
            .applies
            .entry(if ok { "ok" } else { "error" })
            .or_default();
        for (bucket, bound) in buckets.iter_mut().zip(BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        *sum += seconds;
        *count += 1;
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let counts = self.counts();
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(
            text,
            "# HELP toolforge_jobs_requests_total Requests answered, by route, method and status code.\n\
             # TYPE toolforge_jobs_requests_total counter"
        );
        for ((route, method, code), count) in &counts.requests {
            let _ = writeln!(
                text,
                "toolforge_jobs_requests_total{{route=\"{route}\",method=\"{method}\",code=\"{code}\"}} {count}"
            );
        }
        let _ = writeln!(
            text,
            "# HELP toolforge_jobs_apply_duration_seconds How long the writes of a request took, by outcome.\n\
             # TYPE toolforge_jobs_apply_duration_seconds histogram"
        );
        for (outcome, (buckets, sum, count)) in &counts.applies {
            for (bucket, bound) in buckets.iter().zip(BUCKETS) {
                let _ = writeln!(
                    text,
                    "toolforge_jobs_apply_duration_seconds_bucket{{outcome=\"{outcome}\",le=\"{bound}\"}} {bucket}"
                );
            }
            let _ = writeln!(
                text,
                "toolforge_jobs_apply_duration_seconds_bucket{{outcome=\"{outcome}\",le=\"+Inf\"}} {count}\n\
                 toolforge_jobs_apply_duration_seconds_sum{{outcome=\"{outcome}\"}} {sum}\n\
                 toolforge_jobs_apply_duration_seconds_count{{outcome=\"{outcome}\"}} {count}"
            );
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_histograms_in_the_text_format() {
        let metrics = Metrics::default();
        metrics.request("/jobs/v1/tool/{tool}/jobs/", "GET", 200);
        metrics.request("/jobs/v1/tool/{tool}/jobs/", "GET", 200);
        metrics.apply_finished(Duration::from_millis(300), true);
        let text = metrics.render();
        assert!(text.contains(
            "toolforge_jobs_requests_total{route=\"/jobs/v1/tool/{tool}/jobs/\",method=\"GET\",code=\"200\"} 2"
        ));
        assert!(text.contains(
            "toolforge_jobs_apply_duration_seconds_bucket{outcome=\"ok\",le=\"0.25\"} 0"
        ));
        assert!(
            text.contains(
                "toolforge_jobs_apply_duration_seconds_bucket{outcome=\"ok\",le=\"0.5\"} 1"
            )
        );
        assert!(text.contains("toolforge_jobs_apply_duration_seconds_count{outcome=\"ok\"} 1"));
    }
}
