//! Socket addresses: the one place a `HOST:PORT` given on the command line or
//! in a parameter becomes addresses (getaddrinfo(3), through std).

use anyhow::Result;
use std::net::{SocketAddr, ToSocketAddrs};

/// Every address `value` (`HOST:PORT`; a name or a literal address) names, in
/// getaddrinfo(3)'s order. Not `HOST:PORT`, or naming nothing, is a bad-input
/// error of one line naming `what` (the parameter or option) and the value.
pub(crate) fn resolve_all(what: &str, value: &str) -> Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = value
        .to_socket_addrs()
        .map_err(|e| crate::error::bad_input(format!("{what}={value:?} is not a usable HOST:PORT: {e}")))?
        .collect();
    if addrs.is_empty() {
        return Err(crate::error::bad_input(format!("{what}={value:?} resolves to no address")));
    }
    Ok(addrs)
}

/// The first address of [`resolve_all`].
pub(crate) fn resolve(what: &str, value: &str) -> Result<SocketAddr> {
    Ok(resolve_all(what, value)?[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_or_says_what_is_wrong() {
        assert_eq!(resolve("server", "127.0.0.1:80").unwrap(), "127.0.0.1:80".parse().unwrap());
        assert!(resolve_all("listen", "[::1]:0").unwrap()[0].is_ipv6());
        let e = resolve("server", "nonsense").unwrap_err();
        assert!(crate::error::is_bad_input(&e));
        let msg = e.to_string();
        assert!(msg.contains("server=\"nonsense\"") && !msg.contains('\n'), "{msg}");
    }
}
