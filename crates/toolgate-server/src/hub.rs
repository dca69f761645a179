//! Live events by run, within this process: the drive of a run publishes, any number
//! of watchers subscribe; when the drive ends, its channel closes and watchers finish.
//! Every event also goes to one feed of all runs, and each drive's end (the run object
//! as saved) to another: what the inbox and the notifications follow. Runs changed by
//! other processes come in through the store's change feed (`follow.rs`): their ends
//! settle here too (once each, whoever reports them first), and their other changes go
//! to a third feed, for the inbox.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::broadcast;

use toolgate_protocol::{RunEvent, RunObject};

/// Events a slow watcher may fall behind by before it misses some (it is told, and
/// reads the run object again).
const BACKLOG: usize = 1024;

/// A run's channel, made when its first watcher subscribes: most drives have none, and
/// a channel of [`BACKLOG`] slots is a large allocation to make and free per drive.
type Lane = Arc<OnceLock<broadcast::Sender<RunEvent>>>;

type Channels = HashMap<String, Lane>;

/// The runs being driven here, by id, and the feeds of all of them.
#[derive(Clone)]
pub struct Hub {
    channels: Arc<Mutex<Channels>>,
    all: broadcast::Sender<RunEvent>,
    settled: broadcast::Sender<RunObject>,
    changed: broadcast::Sender<RunObject>,
    /// The status and save time each run was last settled with, so that an end told
    /// twice (by its drive here and by the change feed) is settled once.
    last_settled: Arc<Mutex<HashMap<String, (toolgate_protocol::RunStatus, i64)>>>,
}

/// Settled runs remembered for [`Hub::settle`]'s check; past this the memory starts over.
const REMEMBERED: usize = 10_000;

impl Default for Hub {
    fn default() -> Hub {
        Hub {
            channels: Arc::default(),
            all: broadcast::channel(BACKLOG).0,
            settled: broadcast::channel(BACKLOG).0,
            changed: broadcast::channel(BACKLOG).0,
            last_settled: Arc::default(),
        }
    }
}

/// A drive's side of its run's channel; dropping it closes the channel.
pub struct Publisher {
    hub: Hub,
    run_id: String,
    lane: Lane,
}

impl Hub {
    /// Opens the channel of `run_id` for its drive.
    pub fn publisher(&self, run_id: &str) -> Publisher {
        let lane = Lane::default();
        if let Ok(mut m) = self.channels.lock() {
            m.insert(run_id.to_string(), lane.clone());
        }
        Publisher {
            hub: self.clone(),
            run_id: run_id.to_string(),
            lane,
        }
    }

    /// The live events of `run_id`, when this process drives it now.
    pub fn subscribe(&self, run_id: &str) -> Option<broadcast::Receiver<RunEvent>> {
        self.channels.lock().ok().and_then(|m| {
            m.get(run_id).map(|lane| {
                lane.get_or_init(|| broadcast::channel(BACKLOG).0)
                    .subscribe()
            })
        })
    }

    /// Every run's events from now on.
    pub fn subscribe_all(&self) -> broadcast::Receiver<RunEvent> {
        self.all.subscribe()
    }

    /// Each drive's end from now on: the run object once saved (paused, ended, failed).
    pub fn subscribe_settled(&self) -> broadcast::Receiver<RunObject> {
        self.settled.subscribe()
    }

    /// A drive ended with its run saved as `run` (here or in another process). The
    /// same end told again is dropped.
    pub fn settle(&self, run: RunObject) {
        if let Ok(mut m) = self.last_settled.lock() {
            let now = (run.status, run.updated_at);
            if m.get(&run.id) == Some(&now) {
                return;
            }
            if m.len() >= REMEMBERED {
                m.clear();
            }
            m.insert(run.id.clone(), now);
        }
        let _ = self.settled.send(run);
    }

    /// Runs changed by another process without ending a drive (an item added or
    /// decided) from now on.
    pub fn subscribe_changed(&self) -> broadcast::Receiver<RunObject> {
        self.changed.subscribe()
    }

    /// Whether anyone follows runs' ends (the feed of every event, settled runs): when
    /// no one does, a run that ended elsewhere need not be read.
    pub fn ends_followed(&self) -> bool {
        self.all.receiver_count() > 0 || self.settled.receiver_count() > 0
    }

    /// Whether anyone follows runs changed elsewhere.
    pub fn changes_followed(&self) -> bool {
        self.changed.receiver_count() > 0
    }

    /// `run` changed elsewhere (see [`Hub::subscribe_changed`]).
    pub fn changed(&self, run: RunObject) {
        let _ = self.changed.send(run);
    }

    /// An event no drive carries (a deadline's), to the run's watchers here (when a
    /// drive here has them) and the feed of all runs.
    pub fn publish(&self, event: &RunEvent) {
        let lane = self
            .channels
            .lock()
            .ok()
            .and_then(|m| m.get(event.run_id()).cloned());
        send(lane.as_ref(), &self.all, event);
    }

    /// An event no drive here carries (a run driven elsewhere), to the feed of all runs.
    pub fn announce(&self, event: RunEvent) {
        let _ = self.all.send(event);
    }
}

impl Publisher {
    /// Sends `event` to the run's watchers and the feed of all runs.
    pub fn send(&self, event: &RunEvent) {
        send(Some(&self.lane), &self.hub.all, event);
    }

    pub fn run_id(&self) -> &str {
        &self.run_id
    }
}

/// `event` to a run's channel and the feed of all runs, copied only for a channel
/// someone receives from.
fn send(lane: Option<&Lane>, all: &broadcast::Sender<RunEvent>, event: &RunEvent) {
    if let Some(tx) = lane
        .and_then(|l| l.get())
        .filter(|tx| tx.receiver_count() > 0)
    {
        let _ = tx.send(event.clone());
    }
    if all.receiver_count() > 0 {
        let _ = all.send(event.clone());
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        if let Ok(mut m) = self.hub.channels.lock()
            && m.get(&self.run_id)
                .is_some_and(|lane| Arc::ptr_eq(lane, &self.lane))
        {
            m.remove(&self.run_id);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use toolgate_protocol::events::RunCompleted;

    fn done(run: &str) -> RunEvent {
        RunEvent::from(RunCompleted { run_id: run.into() })
    }

    #[test]
    fn a_run_gets_a_channel_only_when_watched_and_it_closes_with_the_drive() {
        let hub = Hub::default();
        let publisher = hub.publisher("run_1");
        publisher.send(&done("run_1"));
        assert!(publisher.lane.get().is_none(), "no watcher, no channel");
        let mut watcher = hub.subscribe("run_1").unwrap();
        let mut everything = hub.subscribe_all();
        publisher.send(&done("run_1"));
        hub.publish(&done("run_1"));
        for _ in 0..2 {
            assert_eq!(watcher.try_recv().unwrap().run_id(), "run_1");
            assert_eq!(everything.try_recv().unwrap().run_id(), "run_1");
        }
        assert!(hub.subscribe("run_2").is_none(), "not driven here");
        drop(publisher);
        assert!(matches!(
            watcher.try_recv(),
            Err(broadcast::error::TryRecvError::Closed)
        ));
        assert!(hub.subscribe("run_1").is_none());
    }
}
