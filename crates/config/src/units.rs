//! Value syntaxes shared by many fields: durations, byte sizes, listen addresses.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// Parses a duration: a humantime string (`"250ms"`, `"1s"`, `"30m"`,
/// `"1h 30m"`, `"0s"`) or a bare number of seconds (`"90"`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if let Ok(secs) = t.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    humantime::parse_duration(t).map_err(|e| {
        format!("invalid duration {s:?} ({e}); expected e.g. \"250ms\", \"1s\", \"30m\" or seconds")
    })
}

/// Parses a byte size: a number with an optional unit, `B`, `KB` (1000),
/// `KiB` (1024), `MB`, `MiB`, `GB`, `GiB`, `TB`, `TiB` (case-insensitive;
/// `"1.5GiB"` is allowed and rounded down to whole bytes).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "invalid size {s:?}; expected bytes or a number with a unit \
             (B, KB, KiB, MB, MiB, GB, GiB, TB, TiB), e.g. \"256MiB\""
        )
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: String = num.chars().filter(|c| *c != '_').collect();
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "kib" => 1 << 10,
        "mb" => 1_000_000,
        "mib" => 1 << 20,
        "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        "tb" => 1_000_000_000_000,
        "tib" => 1 << 40,
        _ => return Err(bad()),
    };
    if num.is_empty() {
        return Err(bad());
    }
    if num.contains('.') {
        let f: f64 = num.parse().map_err(|_| bad())?;
        let bytes = f * mult as f64;
        if !bytes.is_finite() || bytes >= u64::MAX as f64 {
            return Err(format!("size {s:?} is too large"));
        }
        return Ok(bytes as u64);
    }
    let n: u64 = num.parse().map_err(|_| bad())?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size {s:?} is too large"))
}

struct DurationVisitor;

impl Visitor<'_> for DurationVisitor {
    type Value = Duration;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a duration (\"1s\", \"250ms\", \"30m\") or a number of seconds")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
        u64::try_from(v)
            .map(Duration::from_secs)
            .map_err(|_| E::custom(format!("invalid duration {v}: must not be negative")))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
        Ok(Duration::from_secs(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
        parse_duration(v).map_err(E::custom)
    }
}

struct SizeVisitor;

impl Visitor<'_> for SizeVisitor {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a size (\"256MiB\", \"64KB\") or a number of bytes")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::custom(format!("invalid size {v}: must not be negative")))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        parse_size(v).map_err(E::custom)
    }
}

pub(crate) fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    d.deserialize_any(DurationVisitor)
}

/// `[server] busy_poll`: `"auto"`, `"off"` or a duration.
pub(crate) fn de_busy_poll<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<crate::model::BusyPollSetting, D::Error> {
    use crate::model::BusyPollSetting;
    struct BusyPollVisitor;
    impl Visitor<'_> for BusyPollVisitor {
        type Value = BusyPollSetting;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("\"auto\", \"off\" or a duration (\"10us\", \"50us\")")
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<BusyPollSetting, E> {
            DurationVisitor.visit_i64(v).map(BusyPollSetting::Window)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<BusyPollSetting, E> {
            DurationVisitor.visit_u64(v).map(BusyPollSetting::Window)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<BusyPollSetting, E> {
            match v {
                "auto" => Ok(BusyPollSetting::Auto),
                "off" => Ok(BusyPollSetting::Window(Duration::ZERO)),
                _ => parse_duration(v)
                    .map(BusyPollSetting::Window)
                    .map_err(|e| E::custom(format!("{e} (or \"auto\", or \"off\")"))),
            }
        }
    }
    d.deserialize_any(BusyPollVisitor)
}

pub(crate) fn de_size<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    d.deserialize_any(SizeVisitor)
}

/// Where a listener listens: `"host:port"`, `"unix:/abs/path"` or `"off"`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ListenAddr {
    /// TCP `host:port` as written (`"127.0.0.1:6380"`, `"localhost:6380"`,
    /// `"[::1]:6380"`, `"0.0.0.0:0"`); resolve it when binding.
    Tcp(String),
    /// A unix socket at this absolute path (`"unix:/run/tiercache.sock"`).
    Unix(PathBuf),
    /// The listener is disabled (`"off"`).
    Off,
}

impl ListenAddr {
    /// `true` for [`ListenAddr::Off`].
    pub fn is_off(&self) -> bool {
        matches!(self, ListenAddr::Off)
    }

    /// `true` when the TCP host is a loopback name or address (`localhost`,
    /// `127.x.x.x`, `::1`); unix sockets count as local too, `Off` as well.
    pub fn is_local(&self) -> bool {
        match self {
            ListenAddr::Tcp(hp) => {
                let host = hp.rsplit_once(':').map_or(hp.as_str(), |(h, _)| h);
                let host = host.trim_start_matches('[').trim_end_matches(']');
                host.eq_ignore_ascii_case("localhost")
                    || host
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback())
            }
            ListenAddr::Unix(_) | ListenAddr::Off => true,
        }
    }
}

impl FromStr for ListenAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "off" {
            return Ok(ListenAddr::Off);
        }
        if let Some(path) = s.strip_prefix("unix:") {
            if !path.starts_with('/') {
                return Err(format!(
                    "invalid address {s:?}: a unix socket needs an absolute path (\"unix:/path\")"
                ));
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        let bad = |why: &str| {
            format!(
                "invalid address {s:?}: {why}; expected \"host:port\", \"unix:/path\" or \"off\""
            )
        };
        let (host, port) = s.rsplit_once(':').ok_or_else(|| bad("no port"))?;
        port.parse::<u16>().map_err(|_| bad("bad port"))?;
        let ok_host = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            v6.parse::<std::net::Ipv6Addr>().is_ok()
        } else {
            !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_')
        };
        if !ok_host {
            return Err(bad("bad host"));
        }
        Ok(ListenAddr::Tcp(s.to_owned()))
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(hp) => f.write_str(hp),
            ListenAddr::Unix(p) => write!(f, "unix:{}", p.display()),
            ListenAddr::Off => f.write_str("off"),
        }
    }
}

impl<'de> Deserialize<'de> for ListenAddr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

/// Deserializes a string-valued enum (`write = "back"`), so that a value
/// of another type says "invalid type: integer `3`, expected a string"
/// rather than the TOML parser's "wanted string or table".
pub(crate) fn de_enum<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct V<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
        type Value = T;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
            T::deserialize(de::value::StrDeserializer::<E>::new(v))
        }
    }
    d.deserialize_any(V(std::marker::PhantomData))
}

/// A value read with [`de_enum`].
pub(crate) struct EnumStr<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for EnumStr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        de_enum(d).map(EnumStr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("64KB"), Ok(64_000));
        assert_eq!(parse_size("64 kib"), Ok(65_536));
        assert_eq!(parse_size("10"), Ok(10));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("99999999999TiB").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn addrs() {
        assert_eq!("off".parse(), Ok(ListenAddr::Off));
        assert_eq!(
            "unix:/run/x.sock".parse(),
            Ok(ListenAddr::Unix("/run/x.sock".into()))
        );
        assert_eq!(
            "localhost:6380".parse(),
            Ok(ListenAddr::Tcp("localhost:6380".into()))
        );
        assert_eq!("[::1]:0".parse(), Ok(ListenAddr::Tcp("[::1]:0".into())));
        for bad in [
            "unix:rel",
            "6380",
            "host:99999",
            ":80",
            "a b:1",
            "::1:80",
            "host:",
        ] {
            assert!(bad.parse::<ListenAddr>().is_err(), "{bad}");
        }
        assert!(ListenAddr::Tcp("127.0.0.1:1".into()).is_local());
        assert!(!ListenAddr::Tcp("0.0.0.0:1".into()).is_local());
    }
}
