//! Live events by run, within this process: the drive of a run publishes, any number
//! of watchers subscribe; when the drive ends, its channel closes and watchers finish.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use crate::protocol::RunEvent;

/// Events a slow watcher may fall behind by before it misses some (it is told, and
/// reads the run object again).
const BACKLOG: usize = 1024;

type Channels = HashMap<String, broadcast::Sender<RunEvent>>;

/// The runs being driven here, by id.
#[derive(Clone, Default)]
pub struct Hub {
    channels: Arc<Mutex<Channels>>,
}

/// A drive's side of its run's channel; dropping it closes the channel.
pub struct Publisher {
    hub: Hub,
    run_id: String,
    tx: broadcast::Sender<RunEvent>,
}

impl Hub {
    /// Opens the channel of `run_id` for its drive.
    pub fn publisher(&self, run_id: &str) -> Publisher {
        let (tx, _) = broadcast::channel(BACKLOG);
        if let Ok(mut m) = self.channels.lock() {
            m.insert(run_id.to_string(), tx.clone());
        }
        Publisher {
            hub: self.clone(),
            run_id: run_id.to_string(),
            tx,
        }
    }

    /// The live events of `run_id`, when this process drives it now.
    pub fn subscribe(&self, run_id: &str) -> Option<broadcast::Receiver<RunEvent>> {
        self.channels
            .lock()
            .ok()
            .and_then(|m| m.get(run_id).map(broadcast::Sender::subscribe))
    }
}

impl Publisher {
    pub fn send(&self, event: &RunEvent) {
        let _ = self.tx.send(event.clone());
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        if let Ok(mut m) = self.hub.channels.lock()
            && m.get(&self.run_id)
                .is_some_and(|tx| tx.same_channel(&self.tx))
        {
            m.remove(&self.run_id);
        }
    }
}
