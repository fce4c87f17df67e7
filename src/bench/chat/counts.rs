//! The calls a chat run made, kept with its result so that the work can be
//! checked against the original's: `chat_c` sends each message once and
//! `chat_s` relays it with one send per other member of the room, so the
//! original makes `users` write calls per message sent (20 for rooms of 20),
//! and one receive call per message read on either side.
//!
//! The client counts its own calls; the server's come from its answer to
//! STATS? at the end of each run (see [`super::proto`]). A server that does
//! not answer, or no longer has every connection of the run seated, leaves
//! the server's side unknown, and the result says so.

use super::client::ChatOutcome;
use super::Sampler;

/// The calls of every sample of one result.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    /// Messages sent by the clients, over all samples.
    pub(crate) sent: u64,
    pub(crate) client_sends: Vec<u64>,
    pub(crate) client_recvs: Vec<u64>,
    /// `None` for a sample whose server counts are unknown.
    pub(crate) server_sends: Vec<Option<u64>>,
    pub(crate) server_recvs: Vec<Option<u64>>,
}

impl Calls {
    /// Add one sample's run of `connections` connections.
    pub(crate) fn add(&mut self, out: &ChatOutcome, connections: u64) {
        self.sent += out.sent;
        self.client_sends.push(out.client_sends);
        self.client_recvs.push(out.client_recvs);
        let server = out.server.filter(|c| c.seats as u64 == connections);
        self.server_sends.push(server.map(|c| c.sends));
        self.server_recvs.push(server.map(|c| c.recvs));
    }

    /// Server sends over all samples, if known for every one.
    pub(crate) fn server_sends_total(&self) -> Option<u64> {
        self.server_sends.iter().copied().sum()
    }

    fn server_recvs_total(&self) -> Option<u64> {
        self.server_recvs.iter().copied().sum()
    }

    /// Write calls per message sent, client and server (the original: one
    /// plus one per other member of the room), if the server's are known.
    pub(crate) fn sends_per_message(&self) -> Option<f64> {
        let server = self.server_sends_total()?;
        let client: u64 = self.client_sends.iter().sum();
        (self.sent > 0).then(|| (client + server) as f64 / self.sent as f64)
    }

    /// Store the counts with the result.
    pub(crate) fn record(&self, s: &mut Sampler) {
        let per = |n: u64| if self.sent > 0 { n as f64 / self.sent as f64 } else { 0.0 };
        let client_sends: u64 = self.client_sends.iter().sum();
        let client_recvs: u64 = self.client_recvs.iter().sum();
        s.extra("messages_sent", self.sent);
        s.extra("client_sends", self.client_sends.clone());
        s.extra("client_recvs", self.client_recvs.clone());
        s.extra("client_sends_per_message", per(client_sends));
        s.extra("client_recvs_per_message", per(client_recvs));
        s.extra("server_sends", self.server_sends.clone());
        s.extra("server_recvs", self.server_recvs.clone());
        match (self.server_sends_total(), self.server_recvs_total(), self.sends_per_message()) {
            (Some(sends), Some(recvs), Some(all)) => {
                s.extra("server_sends_per_message", per(sends));
                s.extra("server_recvs_per_message", per(recvs));
                s.extra("sends_per_message", all);
            }
            _ => s.note(
                "the server's calls are unknown (it did not answer STATS?, or had already let go of the run's connections): \
                 sends_per_message is not recorded, only the client's calls",
            ),
        }
    }
}
