//! The progress of an apply, rendered three ways from one event stream (SPEC §7): a table refreshed in place on a
//! terminal (one line per job: phase, elapsed time, last message), plain lines with a heartbeat every 10 s when
//! stderr is not a terminal, and NDJSON on stdout with `-o json`; and as log lines ([`LogProgress`]) for the
//! daemon and the imperative commands.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::apply::{Event, EventKind, Progress};
use crate::output::Printer;

/// How long plain output may stay silent while something is still running.
const HEARTBEAT: Duration = Duration::from_secs(10);

/// The renderer for this terminal and output format. Call [`Reporter::finish`] when the apply is done.
pub fn reporter(json: bool, printer: Printer) -> Arc<Reporter> {
    let mode = if json {
        Mode::Json
    } else if std::io::stderr().is_terminal() {
        Mode::Table(
            MultiProgress::with_draw_target(ProgressDrawTarget::stderr()),
            QuietInterrupt::set(),
        )
    } else {
        Mode::Lines
    };
    let reporter = Arc::new(Reporter {
        printer,
        mode,
        state: Mutex::new(State {
            last_output: Instant::now(),
            running: BTreeMap::new(),
            bars: BTreeMap::new(),
        }),
    });
    if matches!(reporter.mode, Mode::Lines) {
        let weak = Arc::downgrade(&reporter);
        tokio::spawn(async move {
            // Look every second, so that the heartbeat comes 10 s after the last line, not on a fixed beat.
            let mut ticks = tokio::time::interval(Duration::from_secs(1));
            loop {
                ticks.tick().await;
                let Some(reporter) = weak.upgrade() else {
                    return;
                };
                reporter.heartbeat();
            }
        });
    }
    reporter
}

/// Renders apply events.
pub struct Reporter {
    printer: Printer,
    mode: Mode,
    state: Mutex<State>,
}

enum Mode {
    Json,
    Lines,
    Table(MultiProgress, QuietInterrupt),
}

struct State {
    last_output: Instant,
    /// Jobs whose action or wait has not ended, with when they started and their last message.
    running: BTreeMap<String, (Instant, String)>,
    bars: BTreeMap<String, ProgressBar>,
}

impl Reporter {
    fn state(&self) -> MutexGuard<'_, State> {
        // Only whole values are written under the lock: a panic cannot leave it half-updated.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the table's lines (their last state stays on screen) and gives the terminal its settings back.
    pub fn finish(&self) {
        for bar in self.state().bars.values() {
            if !bar.is_finished() {
                bar.abandon();
            }
        }
        if let Mode::Table(_, quiet) = &self.mode {
            quiet.restore();
        }
    }

    /// Plain lines: says what is still running when nothing was printed for [`HEARTBEAT`].
    fn heartbeat(&self) {
        let mut state = self.state();
        if state.running.is_empty() || state.last_output.elapsed() < HEARTBEAT {
            return;
        }
        let now = Instant::now();
        let jobs: Vec<String> = state
            .running
            .iter()
            .map(|(job, (since, message))| {
                format!(
                    "{job} ({}s: {message})",
                    now.duration_since(*since).as_secs()
                )
            })
            .collect();
        state.last_output = now;
        drop(state);
        self.write(&format!("still working on {}\n", jobs.join(", ")));
    }

    fn write(&self, text: &str) {
        if let Err(error) = self.printer.message(text) {
            tracing::debug!(%error, "cannot write progress");
        }
    }

    fn line(&self, event: &Event) {
        // The plan table already said what starts; people want the steps and the failures.
        if matches!(event.kind, EventKind::Started | EventKind::Applied) {
            return;
        }
        let mut state = self.state();
        state.last_output = Instant::now();
        // A line stays as written: it says how long the job has been at it (the table has a column for that).
        let elapsed = match (event.kind, state.running.get(&event.job)) {
            (EventKind::Waiting, Some((since, _))) => format!(" ({}s)", since.elapsed().as_secs()),
            _ => String::new(),
        };
        drop(state);
        self.write(&format!("{}: {}{elapsed}\n", event.job, event.message));
    }

    fn table(&self, multi: &MultiProgress, event: &Event) {
        let mut state = self.state();
        let bar = state
            .bars
            .entry(event.job.clone())
            .or_insert_with(|| {
                let bar = multi.add(ProgressBar::new_spinner());
                // A constant template: it always parses.
                if let Ok(style) =
                    ProgressStyle::with_template("{spinner} {prefix:<24} {elapsed:>4} {wide_msg}")
                {
                    bar.set_style(style);
                }
                bar.set_prefix(event.job.clone());
                bar.enable_steady_tick(Duration::from_millis(120));
                bar
            })
            .clone();
        drop(state);
        let (first, rest) = event
            .message
            .split_once('\n')
            .unwrap_or((event.message.as_str(), ""));
        match event.kind {
            EventKind::Failed => {
                bar.abandon_with_message(first.to_owned());
                if !rest.is_empty() {
                    let _ = multi.println(rest);
                }
            }
            EventKind::Succeeded => bar.finish_with_message(first.to_owned()),
            EventKind::Interrupted | EventKind::Held => bar.abandon_with_message(first.to_owned()),
            EventKind::Applied => bar.set_message(format!("{first}: done")),
            EventKind::Started | EventKind::Step | EventKind::Waiting => {
                bar.set_message(first.to_owned());
            }
        }
    }
}

impl Progress for Reporter {
    fn event(&self, event: Event) {
        {
            let mut state = self.state();
            match event.kind {
                EventKind::Applied
                | EventKind::Succeeded
                | EventKind::Failed
                | EventKind::Interrupted
                | EventKind::Held => {
                    state.running.remove(&event.job);
                }
                EventKind::Started | EventKind::Step | EventKind::Waiting => {
                    let since = state
                        .running
                        .get(&event.job)
                        .map_or_else(Instant::now, |(since, _)| *since);
                    state
                        .running
                        .insert(event.job.clone(), (since, event.message.clone()));
                }
            }
        }
        match &self.mode {
            Mode::Json => {
                let line = serde_json::json!({"event": "progress", "job": event.job, "kind": event.kind, "message": event.message});
                if let Err(error) = self.printer.data(&format!("{line}\n")) {
                    tracing::debug!(%error, "cannot write progress");
                }
            }
            Mode::Lines => self.line(&event),
            Mode::Table(multi, _) => self.table(multi, &event),
        }
    }
}

/// While the table is drawn, Ctrl-C echoes no `^C` (`-echoctl`) and discards no output (`noflsh`). The table
/// pads every row to the last column and lets the terminal wrap to the next: a `^C` echoed there would start a
/// line the table does not know of, and its next redraw would leave a stale copy of the first row above; a
/// flush would cut a redraw short. The settings are given back by [`Reporter::finish`] or on drop.
struct QuietInterrupt {
    saved: Mutex<Option<rustix::termios::Termios>>,
}

impl QuietInterrupt {
    fn set() -> Self {
        let stderr = std::io::stderr();
        let saved = rustix::termios::tcgetattr(&stderr).ok();
        if let Some(saved) = &saved {
            let mut quiet = saved.clone();
            quiet
                .local_modes
                .remove(rustix::termios::LocalModes::ECHOCTL);
            quiet
                .local_modes
                .insert(rustix::termios::LocalModes::NOFLSH);
            if let Err(error) =
                rustix::termios::tcsetattr(&stderr, rustix::termios::OptionalActions::Now, &quiet)
            {
                tracing::debug!(%error, "cannot quieten Ctrl-C on the terminal");
            }
        }
        Self {
            saved: Mutex::new(saved),
        }
    }

    fn restore(&self) {
        let saved = self
            .saved
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(saved) = saved
            && let Err(error) = rustix::termios::tcsetattr(
                std::io::stderr(),
                rustix::termios::OptionalActions::Now,
                &saved,
            )
        {
            tracing::debug!(%error, "cannot restore the terminal's settings");
        }
    }
}

impl Drop for QuietInterrupt {
    fn drop(&mut self) {
        self.restore();
    }
}

/// The executor's progress as log lines: what each action does and why (`-v`), and how it went.
pub struct LogProgress {
    /// Whether a failure is logged as an error; `false` where the command reports the error itself.
    pub failures_as_errors: bool,
}

impl Progress for LogProgress {
    fn event(&self, event: Event) {
        let Event { job, kind, message } = event;
        match kind {
            EventKind::Started | EventKind::Step | EventKind::Succeeded => {
                tracing::info!(job, "{message}");
            }
            EventKind::Failed if self.failures_as_errors => tracing::error!(job, "{message}"),
            EventKind::Applied
            | EventKind::Waiting
            | EventKind::Interrupted
            | EventKind::Held
            | EventKind::Failed => {
                tracing::debug!(job, "{message}");
            }
        }
    }
}
