//! The cluster's clock: the time every component stamps and compares (creation and deletion timestamps,
//! conditions, Job and CronJob times, TTL expiry, progress deadlines, Events, log lines), and the conversion of
//! cluster durations (back-off, requeues, grace periods, probe periods) into the real time to wait for them.
//!
//! A clock runs `speed` times faster than real time from the moment it is made: [`Clock::now`] is the start plus
//! the real time elapsed times `speed`, and [`Clock::real`] is a cluster duration divided by `speed`. Speed 1 is
//! real time (production); tests speed it up so a 30-second TTL or a one-minute cron schedule passes in
//! milliseconds. Each cluster has its own clock, held by its [`crate::registry::store::Store`], so clusters with
//! different speeds run side by side in one process.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use tokio::time::Instant;

/// A cluster's clock; cheap to copy.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// The cluster time when the clock was made.
    start: Timestamp,
    /// The real instant when the clock was made.
    started: Instant,
    /// How many cluster seconds pass per real second (finite, positive).
    speed: f64,
}

impl Clock {
    /// A clock starting at the current real time and running `speed` times faster than real time; a speed that
    /// is not finite and positive counts as 1.
    #[must_use]
    pub fn new(speed: f64) -> Self {
        Clock {
            start: Timestamp::now(),
            started: Instant::now(),
            speed: if speed.is_finite() && speed > 0.0 {
                speed
            } else {
                1.0
            },
        }
    }

    /// How many cluster seconds pass per real second.
    #[must_use]
    pub fn speed(&self) -> f64 {
        self.speed
    }

    /// The cluster time now.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        let elapsed = self.started.elapsed().mul_f64(self.speed);
        // A clock that ran past the year 9999 stays there (only an absurd speed gets there).
        SignedDuration::try_from(elapsed)
            .ok()
            .and_then(|d| self.start.checked_add(d).ok())
            .unwrap_or(Timestamp::MAX)
    }

    /// The real time a cluster duration takes.
    #[must_use]
    pub fn real(&self, cluster: Duration) -> Duration {
        cluster.div_f64(self.speed)
    }

    /// The cluster duration that passes during a real one.
    #[must_use]
    pub fn cluster(&self, real: Duration) -> Duration {
        real.mul_f64(self.speed)
    }

    /// The real instant when a cluster duration from now has passed, for timers.
    #[must_use]
    pub fn deadline(&self, cluster: Duration) -> Instant {
        let now = Instant::now();
        now.checked_add(self.real(cluster))
            // Far enough to never fire in practice (a year), for durations too large for an instant.
            .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600))
    }
}

impl Default for Clock {
    /// Real time.
    fn default() -> Self {
        Clock::new(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_time_passes_at_speed_one() {
        let clock = Clock::new(1.0);
        let before = Timestamp::now();
        let now = clock.now();
        let after = Timestamp::now();
        assert!(now >= before - SignedDuration::from_millis(50) && now <= after);
        assert_eq!(clock.real(Duration::from_secs(3)), Duration::from_secs(3));
    }

    #[test]
    fn a_fast_clock_runs_ahead_and_shortens_waits() {
        let clock = Clock::new(1000.0);
        std::thread::sleep(Duration::from_millis(20));
        let ahead = clock.now().duration_since(Timestamp::now());
        assert!(ahead >= SignedDuration::from_secs(15), "{ahead:?}");
        assert_eq!(
            clock.real(Duration::from_secs(30)),
            Duration::from_millis(30)
        );
    }

    #[test]
    fn a_nonsensical_speed_is_real_time() {
        assert!((Clock::new(0.0).speed() - 1.0).abs() < f64::EPSILON);
        assert!((Clock::new(f64::NAN).speed() - 1.0).abs() < f64::EPSILON);
        assert!((Clock::new(-3.0).speed() - 1.0).abs() < f64::EPSILON);
    }
}
