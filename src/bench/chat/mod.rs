//! The `chat` family, `chat.rooms` (named `chat` until every benchmark was
//! `family.name`; the old name is an alias): the chat-room client/server workload of the 2003 study
//! (tables 3 and 4), and with `pacing=room` the VolanoMark workload of the
//! 2004 study. See [`proto`] for the wire protocol, [`client`] for how a run
//! starts and ends, [`server_threads`] and [`server_events`] for the two
//! server models.
//!
//! The server runs in its own process (a child forked before any thread
//! exists), or elsewhere with `server=HOST:PORT`; `kdelta serve chat` runs one
//! alone through [`serve`].

pub(crate) mod client;
pub(crate) mod counts;
pub(crate) mod limits;
pub mod proto;
pub(crate) mod runs;
pub(crate) mod server;
pub(crate) mod server_events;
pub(crate) mod server_threads;

use super::{bad_param, BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, Sampler};
use crate::model::params::Choice;
use anyhow::{Context, Result};
use client::{run_chat, ChatSpec, Pacing};
use server::{LocalServer, ServerModel};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

pub(crate) const FAMILY: super::Family = super::Family {
    benchmarks,
    summary: None,
    server: Some(super::Server { name: "chat", params, serve }),
    command: None,
    run_flags: &[],
};

pub(crate) fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![Box::new(Chat)]
}

/// Parameters of the chat benchmark (also what `kdelta serve chat` takes).
pub(crate) fn params() -> Vec<ParamSpec> {
    vec![
        ParamSpec::new("rooms", ParamKind::Int { min: 1, max: 1000 }, "20,30,40,50", "chat rooms").quick("2"),
        ParamSpec::new("users", ParamKind::Int { min: 2, max: 1000 }, "20", "users per room, one connection each").quick("20"),
        ParamSpec::new("messages", ParamKind::Int { min: 1, max: 1_000_000 }, "100", "messages each user sends").quick("100"),
        ParamSpec::new("size", ParamKind::Int { min: proto::MIN_MSG as u64, max: proto::MAX_MSG as u64 }, "100", "message size in bytes"),
        ParamSpec::new(
            "pacing",
            ParamKind::choice::<Pacing>(),
            "none",
            "none: everyone sends at once (chat); room: one message in flight per room (VolanoMark)",
        ),
        ParamSpec::new(
            "server_model",
            ParamKind::choice::<ServerModel>(),
            "threads",
            "threads: two threads per connection (2003); events: one epoll loop (mio)",
        ),
        ParamSpec::new(
            "relay",
            ParamKind::choice::<proto::Relay>(),
            "each",
            "each: one write per receiver per message, as the original (2003); batched: many messages per write, not the original's workload",
        ),
        ParamSpec::new(
            "nodelay",
            ParamKind::Bool,
            "false",
            "TCP_NODELAY on both sides of every connection; false: Nagle's algorithm on, as the original (2003)",
        ),
        super::server_param("local: start a server on loopback in its own process; or HOST:PORT of a running `kdelta serve chat`"),
    ]
}

/// The study's Table 3 figures for these parameters, on one line.
pub(crate) fn table3(rooms: u64, users: u64, messages: u64) -> String {
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
pub(crate) struct Table3 {
    pub(crate) connections: u64,
    pub(crate) threads: u64,
    pub(crate) sent: u64,
    pub(crate) received: u64,
}

impl Table3 {
    pub(crate) fn new(rooms: u64, users: u64, messages: u64) -> Table3 {
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
/// where it listens, its limits, and what they counted when it stops.
pub(crate) fn serve(
    listen: &str,
    params: &Params,
    limits: crate::child::ServerLimits,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let model = if params.0.contains_key("server_model") {
        params.choice("server_model").map_err(bad_param)?
    } else {
        ServerModel::Threads
    };
    let addr = crate::sys::net::resolve("listen", listen)?;
    let l = TcpListener::bind(addr).with_context(|| format!("binding the chat server to {addr}"))?;
    // One connection per user per client: make room for as many as allowed.
    let nofile = limits::raise_nofile().unwrap_or(0);
    eprintln!(
        "chat server ({}) listening on {} (open-file limit {nofile}; {})",
        model.name(),
        l.local_addr()?,
        limits.describe()
    );
    let guard = crate::child::ServerGuard::new("chat server", limits);
    let r = server::serve_on(l, model, guard.clone(), stop);
    eprintln!("chat server stopped: {}", guard.tally.summary());
    r
}

struct Chat;

/// `chat.rooms`'s parameters, read once by [`ChatParams::from`] for both
/// `check` and `run`.
struct ChatParams {
    spec: ChatSpec,
    model: ServerModel,
    /// `None`: start a server here (`server=local`).
    remote: Option<SocketAddr>,
}

impl ChatParams {
    fn from(p: &Params) -> Result<Self> {
        let spec = ChatSpec {
            rooms: p.u64("rooms")? as u32,
            users: p.u64("users")? as u32,
            messages: p.u64("messages")? as u32,
            size: p.u64("size")? as u32,
            pacing: p.choice("pacing").map_err(bad_param)?,
            relay: p.choice("relay").map_err(bad_param)?,
            nodelay: p.bool("nodelay").map_err(bad_param)?,
            timeout: Duration::from_secs(30),
        };
        let model = p.choice("server_model").map_err(bad_param)?;
        let remote = super::remote_server(p)?.map(|s| crate::sys::net::resolve("server", s)).transpose()?;
        Ok(ChatParams { spec, model, remote })
    }
}

impl Benchmark for Chat {
    fn preamble(&self, p: &Params) -> Option<String> {
        let c = ChatParams::from(p).ok()?.spec;
        Some(table3(c.rooms as u64, c.users as u64, c.messages as u64))
    }

    fn info(&self) -> BenchInfo {
        let mut i = BenchInfo::new(
            "chat.rooms",
            "chat rooms over TCP: every message relayed to the room's other users; (sent + received) / elapsed",
            "msg/s",
            Better::Higher,
        );
        for p in params() {
            i = i.param(p);
        }
        // Named `chat` before every benchmark was `family.name`.
        i.alias("chat").timeout(Duration::from_secs(900)).samples(5, 2)
    }

    fn check(&self, p: &Params) -> Result<()> {
        ChatParams::from(p).map(drop)
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        let ChatParams { spec, model, remote } = ChatParams::from(p)?;
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
            s.profile_local_only(&format!("the chat server at {addr}"));
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
        s.extra("relay", spec.relay.name());
        s.extra("nodelay", spec.nodelay);
        calls.record(s);
        s.extra("server_model", if remote.is_some() { "remote" } else { model.name() });
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
