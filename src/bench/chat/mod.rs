//! The `chat` family: the chat-room client/server workload of the 2003 study
//! (tables 3 and 4), and with `pacing=room` the VolanoMark workload of the
//! 2004 study. See [`proto`] for the wire protocol, [`client`] for how a run
//! starts and ends, [`server_threads`] and [`server_events`] for the two
//! server models.
//!
//! The server runs in its own process (a child forked before any thread
//! exists), or elsewhere with `server=HOST:PORT`; `kdelta serve chat` runs one
//! alone through [`serve`].

pub mod client;
pub mod counts;
pub mod limits;
pub mod proto;
pub mod runs;
pub mod server;
pub mod server_events;
pub mod server_threads;

use super::{BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, Sampler};
use anyhow::{Context, Result};
use client::{run_chat, ChatSpec, Pacing};
use server::{LocalServer, ServerModel};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub use server::ServerModel as Model;

pub const FAMILY: super::Family =
    super::Family { name: "chat", benchmarks, summary: None, server: Some(super::Server { name: "chat", params, serve }) };

pub fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![Box::new(Chat)]
}

/// The value of `server` that means "start one here".
pub const LOCAL: &str = "local";

/// Parameters of the chat benchmark (also what `kdelta serve chat` takes).
pub fn params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new("rooms", ParamKind::Int { min: 1, max: 1000 }, "20,30,40,50", "chat rooms").quick("2"),
        ParamSpec::new("users", ParamKind::Int { min: 2, max: 1000 }, "20", "users per room, one connection each").quick("20"),
        ParamSpec::new("messages", ParamKind::Int { min: 1, max: 1_000_000 }, "100", "messages each user sends").quick("100"),
        ParamSpec::new("size", ParamKind::Int { min: proto::MIN_MSG as u64, max: proto::MAX_MSG as u64 }, "100", "message size in bytes"),
        ParamSpec::new(
            "pacing",
            ParamKind::Choice(&["none", "room"]),
            "none",
            "none: everyone sends at once (chat); room: one message in flight per room (VolanoMark)",
        ),
        ParamSpec::new(
            "server_model",
            ParamKind::Choice(&["threads", "events"]),
            "threads",
            "threads: two threads per connection (2003); events: one epoll loop (mio)",
        ),
        ParamSpec::new(
            "relay",
            ParamKind::Choice(&["each", "batched"]),
            "each",
            "each: one write per receiver per message, as the original (2003); batched: many messages per write, not the original's workload",
        ),
        ParamSpec::new("server", ParamKind::Text, LOCAL, "local: start a server on loopback in its own process; or HOST:PORT of a running `kdelta serve chat`"),
    ]
}

/// The study's Table 3 figures for these parameters, on one line.
pub fn table3(rooms: u64, users: u64, messages: u64) -> String {
    let f = Table3::new(rooms, users, messages);
    format!(
        "Table 3 for {rooms} rooms x {users} users x {messages} messages: {} connections, {} threads ({} client + {} server in the threads model), {} messages sent, {} received, {} in total",
        group(f.connections),
        group(f.threads),
        group(f.connections * 2),
        group(f.connections * 2),
        group(f.sent),
        group(f.received),
        group(f.sent + f.received)
    )
}

/// The counts of Table 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Table3 {
    pub connections: u64,
    pub threads: u64,
    pub sent: u64,
    pub received: u64,
}

impl Table3 {
    pub fn new(rooms: u64, users: u64, messages: u64) -> Table3 {
        let connections = rooms * users;
        let sent = connections * messages;
        Table3 { connections, threads: 4 * connections, sent, received: sent * users.saturating_sub(1) }
    }
}

/// 1600000 -> "1,600,000".
fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Run a chat server on `listen` (`ADDR:PORT`, port 0 for any) until `stop`
/// is set; `params` gives `server_model` (default threads). Says on stderr
/// where it listens.
pub fn serve(listen: &str, params: &Params, stop: Arc<AtomicBool>) -> Result<()> {
    let model = match params.0.get("server_model") {
        Some(m) => ServerModel::parse(m)?,
        None => ServerModel::Threads,
    };
    let addr = resolve(listen)?;
    let l = TcpListener::bind(addr).with_context(|| format!("binding the chat server to {addr}"))?;
    // One connection per user per client: make room for as many as allowed.
    let nofile = limits::raise_nofile().unwrap_or(0);
    eprintln!("chat server ({}) listening on {} (open-file limit {nofile})", model.as_str(), l.local_addr()?);
    server::serve_on(l, model, stop)
}

fn resolve(s: &str) -> Result<SocketAddr> {
    let mut it = s.to_socket_addrs().map_err(|_| crate::error::bad_input(format!("address {s:?} is not HOST:PORT")))?;
    it.next().ok_or_else(|| crate::error::bad_input(format!("address {s:?} resolves to nothing")))
}

struct Chat;

struct Setup {
    spec: ChatSpec,
    model: ServerModel,
    remote: Option<SocketAddr>,
}

fn setup(p: &Params) -> Result<Setup> {
    let spec = ChatSpec {
        rooms: p.u64("rooms")? as u32,
        users: p.u64("users")? as u32,
        messages: p.u64("messages")? as u32,
        size: p.u64("size")? as u32,
        pacing: Pacing::parse(p.str("pacing")?)?,
        relay: proto::Relay::parse(p.str("relay")?).map_err(crate::error::bad_input)?,
        timeout: Duration::from_secs(30),
    };
    let model = ServerModel::parse(p.str("server_model")?)?;
    let server = p.str("server")?;
    let remote = if server == LOCAL { None } else { Some(resolve(server)?) };
    Ok(Setup { spec, model, remote })
}

impl Benchmark for Chat {
    fn preamble(&self, p: &Params) -> Option<String> {
        Some(table3(p.u64("rooms").ok()?, p.u64("users").ok()?, p.u64("messages").ok()?))
    }

    fn info(&self) -> BenchInfo {
        let mut i = BenchInfo::new(
            "chat",
            "chat rooms over TCP: every message relayed to the room's other users; (sent + received) / elapsed",
            "msg/s",
            Better::Higher,
        );
        for p in params() {
            i = i.param(p);
        }
        i.timeout(Duration::from_secs(900)).samples(5, 2)
    }

    fn check(&self, p: &Params) -> Result<()> {
        setup(p).map(|_| ())
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        let Setup { spec, model, remote } = setup(p)?;
        let t3 = Table3::new(spec.rooms as u64, spec.users as u64, spec.messages as u64);
        s.note(table3(spec.rooms as u64, spec.users as u64, spec.messages as u64));
        s.extra("connections", t3.connections);
        s.extra("threads", t3.threads);
        s.extra("sent", t3.sent);
        s.extra("received", t3.received);
        s.extra("total", t3.sent + t3.received);
        let conns = t3.connections;
        // Client: one descriptor and two threads per connection; a local
        // server as many descriptors and (threads model) threads again.
        let server_threads = if remote.is_none() && model == ServerModel::Threads { 2 * conns } else { 0 };
        for n in limits::ensure(conns + 256, 2 * conns + server_threads)? {
            s.note(n);
        }
        let mut local = match remote {
            Some(_) => None,
            None => Some(LocalServer::start(model)?),
        };
        if let Some(l) = &local {
            if l.in_process() {
                s.note("the chat server ran in a thread of the client process (the caller already had threads, so no fork)");
            }
        }
        let addr = remote.or(local.as_ref().map(|l| l.addr)).context("no server address")?;
        if remote.is_some() {
            s.note(format!("remote server at {addr}: server_model is whatever it was started with"));
        }
        let mut elapsed = Vec::new();
        let mut calls = counts::Calls::default();
        for _ in 0..s.samples_wanted() {
            s.begin_sample();
            let out = match run_chat(addr, &spec) {
                Ok(o) => o,
                Err(e) => {
                    // Say whether the server is gone, then fail the result.
                    std::thread::sleep(Duration::from_millis(20));
                    let why = local.as_mut().and_then(|l| l.died());
                    return Err(match why {
                        Some(w) => e.context(format!("the chat server died mid-run: {w}")),
                        None => e.context(format!("chat run against {addr} failed")),
                    });
                }
            };
            if out.elapsed.is_zero() {
                anyhow::bail!("the chat run took no measurable time");
            }
            elapsed.push(out.elapsed.as_secs_f64());
            calls.add(&out, t3.connections);
            s.push(out.rate(), out.elapsed);
        }
        s.extra("elapsed_s", elapsed);
        s.extra("relay", spec.relay.as_str());
        calls.record(s);
        s.extra("server_model", if remote.is_some() { "remote" } else { model.as_str() });
        if let Some(kb) = server::peak_kb("self") {
            s.extra("client_peak_kb", kb);
        }
        if let Some(l) = local.take() {
            if let Some(kb) = l.peak_kb() {
                s.extra("server_peak_kb", kb);
            }
            l.stop()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
