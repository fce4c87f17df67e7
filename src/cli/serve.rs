//! The arguments of `kdelta serve`: which server, where it listens and the
//! limits that bound what a hostile peer can cost.

use super::parse::{idle_timeout, param, serve_limit, write_timeout, Setting};
use clap::Args;
use std::time::Duration;

/// `kdelta serve`.
#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Which server: chat, tbench or lat.tcp.
    #[arg(value_name = "SERVER")]
    pub(crate) name: String,
    /// Address to listen on; one that is not loopback (0.0.0.0:P, [::]:P,
    /// a LAN address) needs --public.
    #[arg(long, default_value = "127.0.0.1:0", value_name = "ADDR:PORT")]
    pub(crate) listen: String,
    /// Allow a --listen address other machines can reach (anyone who can
    /// connect can use the server: there is no authentication).
    #[arg(long)]
    pub(crate) public: bool,
    /// Connections open at once.
    #[arg(long, default_value_t = 4096, value_name = "N", value_parser = serve_limit)]
    pub(crate) max_conns: usize,
    /// Chat runs being seated or served at once.
    #[arg(long, default_value_t = 64, value_name = "N", value_parser = serve_limit)]
    pub(crate) max_runs: usize,
    /// Close a connection that sends nothing for this long (e.g. 300s, 5m).
    #[arg(long, default_value = "300s", value_name = "DURATION", value_parser = idle_timeout)]
    pub(crate) idle_timeout: Duration,
    /// Drop a receiver that takes no byte of its output for this long.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = write_timeout)]
    pub(crate) write_timeout: Duration,
    /// Server parameters (e.g. server_model=events). Repeatable.
    #[arg(long, short = 'p', value_name = "NAME=VALUE", value_parser = param)]
    pub(crate) param: Vec<Setting>,
}
