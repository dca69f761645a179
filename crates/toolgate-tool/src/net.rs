//! Where HTTP tools may connect. By default only to public addresses: loopback,
//! private, link-local (cloud metadata at 169.254.169.254), unspecified, broadcast,
//! multicast, shared (CGNAT) and reserved ranges are refused, in IPv4 and IPv6, and
//! in IPv6 forms that carry an IPv4 address (mapped, compatible, NAT64, 6to4). A host
//! name is resolved once, here; the request then connects only to the addresses that
//! passed (see [`Pinned`]), so a second DNS answer cannot send it elsewhere.
//!
//! For local development an allow-list opens what the default refuses: `allow_hosts`
//! in an `http` tool file, and `TOOLGATE_HTTP_ALLOW` (comma-separated) for every HTTP
//! tool. Entries are a host name (`localhost`, `api.internal:8443`), an address
//! (`127.0.0.1`, `127.0.0.1:8080`, `::1`, `[::1]:8080`) or a network (`10.0.0.0/8`,
//! `fc00::/7`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use async_trait::async_trait;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolving};
use url::Host;

use super::output::ToolError;

/// The environment variable with allow-list entries for every HTTP tool.
pub const ALLOW_ENV: &str = "TOOLGATE_HTTP_ALLOW";

/// The range `ip` belongs to when HTTP tools may not reach it by default, e.g.
/// `"loopback"`; `None` for a public address.
///
/// ```
/// use std::net::IpAddr;
/// use toolgate_tool::net::blocked_range;
///
/// let ip = |s: &str| s.parse::<IpAddr>().unwrap();
/// assert_eq!(blocked_range(ip("169.254.169.254")), Some("link-local"));
/// assert_eq!(blocked_range(ip("::ffff:127.0.0.1")), Some("loopback"));
/// assert_eq!(blocked_range(ip("93.184.216.34")), None);
/// ```
pub fn blocked_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match () {
        _ if ip.is_unspecified() => "unspecified",
        _ if a == 0 => "this-network (0.0.0.0/8)",
        _ if ip.is_loopback() => "loopback",
        _ if ip.is_private() => "private",
        _ if ip.is_link_local() => "link-local",
        _ if a == 100 && (b & 0xc0) == 64 => "shared address space (CGNAT, 100.64.0.0/10)",
        _ if ip.is_broadcast() => "broadcast",
        _ if ip.is_multicast() => "multicast",
        _ if a >= 240 => "reserved (240.0.0.0/4)",
        _ if a == 192 && b == 0 && c == 0 => "reserved (192.0.0.0/24)",
        _ if a == 198 && (b & 0xfe) == 18 => "benchmarking (198.18.0.0/15)",
        _ if ip.is_documentation() => "documentation",
        _ => return None,
    })
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    // IPv6 forms that carry an IPv4 address are judged by that address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return blocked_v4(v4);
    }
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    Some(match () {
        _ if ip.is_unspecified() => "unspecified",
        _ if ip.is_loopback() => "loopback",
        // ::a.b.c.d, IPv4-compatible (deprecated): never a real destination.
        _ if s[..6] == [0; 6] => "reserved (IPv4-compatible ::/96)",
        // 64:ff9b::/96, NAT64: the IPv4 address in the last 32 bits.
        _ if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] => return blocked_v4(embedded(s[6], s[7])),
        _ if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 => "local-use NAT64 (64:ff9b:1::/48)",
        // ::ffff:0:a.b.c.d, IPv4-translated.
        _ if s[..6] == [0, 0, 0, 0, 0xffff, 0] => return blocked_v4(embedded(s[6], s[7])),
        // 2002::/16, 6to4: the IPv4 address in bits 16..48.
        _ if s[0] == 0x2002 => return blocked_v4(embedded(s[1], s[2])),
        _ if ip.is_unique_local() => "private (unique local, fc00::/7)",
        _ if ip.is_unicast_link_local() => "link-local",
        _ if (s[0] & 0xffc0) == 0xfec0 => "site-local (fec0::/10)",
        _ if ip.is_multicast() => "multicast",
        _ if s[..4] == [0x100, 0, 0, 0] => "discard-only (100::/64)",
        _ if s[0] == 0x2001 && s[1] == 0xdb8 => "documentation",
        _ => return None,
    })
}

/// One allow-list entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Rule {
    /// A host name as written in URLs (lower case), on any port or one.
    Host { name: String, port: Option<u16> },
    /// An address or a network, on any port or one.
    Net {
        net: IpAddr,
        prefix: u8,
        port: Option<u16>,
    },
}

/// What HTTP tools may reach although the default refuses it.
///
/// ```
/// use toolgate_tool::net::AllowList;
///
/// let allow = AllowList::parse(["localhost:8080", "10.0.0.0/8", "[::1]"]).unwrap();
/// assert!(AllowList::parse(["10.0.0.0/33"]).is_err());
/// # let _ = allow;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    rules: Vec<Rule>,
}

impl AllowList {
    /// Reads entries; the error names the first one that is not an address, network
    /// or host name.
    pub fn parse<S: AsRef<str>>(
        entries: impl IntoIterator<Item = S>,
    ) -> Result<Self, AllowListError> {
        let rules = entries
            .into_iter()
            .map(|e| e.as_ref().trim().to_string())
            .filter(|e| !e.is_empty())
            .map(|e| parse_rule(&e))
            .collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    /// The entries in `TOOLGATE_HTTP_ALLOW` (none when it is not set).
    pub fn from_env() -> Result<Self, AllowListError> {
        match std::env::var(ALLOW_ENV) {
            Ok(v) => Self::parse(v.split(',')).map_err(|e| AllowListError::Env(Box::new(e))),
            Err(_) => Ok(Self::default()),
        }
    }

    /// This list and `other`'s entries.
    pub fn and(mut self, other: AllowList) -> Self {
        self.rules.extend(other.rules);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether a connection to `addr` for a URL naming `host` on `port` is allowed
    /// although `addr` is in a refused range.
    fn allows(&self, host: &Host<&str>, port: u16, addr: IpAddr) -> bool {
        let addr = addr.to_canonical();
        self.rules.iter().any(|rule| match rule {
            Rule::Host { name, port: p } => {
                matches!(host, Host::Domain(d) if d.trim_end_matches('.') == name)
                    && p.is_none_or(|p| p == port)
            }
            Rule::Net {
                net,
                prefix,
                port: p,
            } => contains(*net, *prefix, addr) && p.is_none_or(|p| p == port),
        })
    }
}

/// Why an allow list cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AllowListError {
    /// An entry that is not an address, network or host name, and why.
    #[error("'{entry}' is not an allow-list entry: {why}")]
    Entry { entry: String, why: String },
    /// The same, in `TOOLGATE_HTTP_ALLOW`.
    #[error("{ALLOW_ENV}: {0}")]
    Env(Box<AllowListError>),
}

impl From<AllowListError> for String {
    fn from(e: AllowListError) -> String {
        e.to_string()
    }
}

fn parse_rule(entry: &str) -> Result<Rule, AllowListError> {
    let bad = |why: &str| AllowListError::Entry {
        entry: entry.to_string(),
        why: why.to_string(),
    };
    let net = |ip: IpAddr, port| Rule::Net {
        net: ip.to_canonical(),
        prefix: if ip.to_canonical().is_ipv4() { 32 } else { 128 },
        port,
    };
    if let Some((addr, prefix)) = entry.split_once('/') {
        let ip: IpAddr = addr
            .parse()
            .map_err(|_| bad("a network is an address, '/' and a prefix length"))?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= max)
            .ok_or_else(|| bad(&format!("the prefix length must be 0 to {max}")))?;
        return Ok(Rule::Net {
            net: ip,
            prefix,
            port: None,
        });
    }
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Ok(net(ip, None));
    }
    if let Ok(sock) = entry.parse::<SocketAddr>() {
        return Ok(net(sock.ip(), Some(sock.port())));
    }
    if let Some(inner) = entry.strip_prefix('[').and_then(|e| e.strip_suffix(']')) {
        return inner
            .parse::<Ipv6Addr>()
            .map(|ip| net(IpAddr::V6(ip), None))
            .map_err(|_| bad("not an IPv6 address in brackets"));
    }
    let (name, port) = match entry.rsplit_once(':') {
        Some((name, port)) => (
            name,
            Some(
                port.parse::<u16>()
                    .map_err(|_| bad("the port must be a number up to 65535"))?,
            ),
        ),
        None => (entry, None),
    };
    // A name the URL parser reads as an address (`127.1`, `2130706433`) would never
    // match the address it stands for: ask for the address itself.
    let parsed = Url::parse(&format!("http://{name}/")).map_err(|e| bad(&e.to_string()))?;
    match parsed.host() {
        Some(Host::Domain(d)) => Ok(Rule::Host {
            name: d.trim_end_matches('.').to_string(),
            port,
        }),
        Some(Host::Ipv4(ip)) => Err(bad(&format!("write the address as {ip}"))),
        _ => Err(bad("not a host name, address or network")),
    }
}

/// Whether `addr` is in `net`/`prefix` (both canonical).
fn contains(net: IpAddr, prefix: u8, addr: IpAddr) -> bool {
    match (net, addr) {
        (IpAddr::V4(n), IpAddr::V4(a)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
            u32::from(n) & mask == u32::from(a) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(a)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
            u128::from(n) & mask == u128::from(a) & mask
        }
        _ => false,
    }
}

/// Looks up a host name's addresses.
#[async_trait]
pub trait Resolve: Send + Sync {
    async fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>>;
}

/// The system's resolver (`getaddrinfo`).
pub struct SystemResolver;

#[async_trait]
impl Resolve for SystemResolver {
    async fn lookup(&self, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.collect())
    }
}

/// The addresses a request to `url` may connect to: the URL's own address, or what
/// its host name resolves to, minus what the policy refuses and `allow` does not
/// open. None left is a [`ToolError::BlockedAddress`] naming the host, the address
/// and how to allow it.
pub async fn check(
    url: &Url,
    allow: &AllowList,
    resolver: &dyn Resolve,
) -> Result<Vec<SocketAddr>, ToolError> {
    let host = url
        .host()
        .ok_or_else(|| ToolError::Execution(format!("'{url}' has no host")))?;
    let port = url
        .port_or_known_default()
        .ok_or_else(|| ToolError::Execution(format!("'{url}' has no port")))?;
    let candidates: Vec<SocketAddr> = match host {
        Host::Ipv4(ip) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
        Host::Ipv6(ip) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
        Host::Domain(name) => resolver
            .lookup(name, port)
            .await
            .map_err(|e| ToolError::Execution(format!("cannot resolve the host '{name}': {e}")))?,
    };
    let mut refused = None;
    let mut passed = Vec::new();
    for addr in candidates {
        match blocked_range(addr.ip()) {
            Some(range) if !allow.allows(&host, port, addr.ip()) => {
                refused.get_or_insert((addr.ip(), range));
            }
            _ => passed.push(addr),
        }
    }
    match (passed.is_empty(), refused) {
        (false, _) => Ok(passed),
        (true, Some((address, range))) => Err(ToolError::BlockedAddress {
            host: match url.port() {
                Some(p) => format!("{host}:{p}"),
                None => host.to_string(),
            },
            address: address.to_string(),
            range: range.to_string(),
        }),
        (true, None) => Err(ToolError::Execution(format!(
            "the host '{host}' has no address"
        ))),
    }
}

/// A resolver for one request: it answers with the addresses [`check`] passed for the
/// request's host, and nothing else, so reqwest never looks a name up by itself.
pub struct Pinned {
    host: String,
    addrs: Arc<Vec<SocketAddr>>,
}

impl Pinned {
    pub fn new(host: &str, addrs: Vec<SocketAddr>) -> Self {
        Self {
            host: host.trim_end_matches('.').to_ascii_lowercase(),
            addrs: Arc::new(addrs),
        }
    }
}

impl reqwest::dns::Resolve for Pinned {
    fn resolve(&self, name: Name) -> Resolving {
        let addrs = self.addrs.clone();
        let ours = name
            .as_str()
            .trim_end_matches('.')
            .eq_ignore_ascii_case(&self.host);
        let asked = name.as_str().to_string();
        Box::pin(async move {
            if ours {
                let list: Addrs = Box::new(addrs.as_ref().clone().into_iter());
                Ok(list)
            } else {
                Err(format!("'{asked}' was not checked for this request").into())
            }
        })
    }
}
