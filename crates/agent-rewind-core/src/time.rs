//! Time, on jiff: [`Timestamp`], the validated instant every record carries (parsed from
//! RFC 3339, ordered as instants, written as UTC with milliseconds), and [`parse_age`] for
//! `--older-than`. Also the writer id. Pure values over the system clock; nothing here
//! touches git.

use crate::error::{Error, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// An instant, as written into notes: `2026-11-29T14:44:47.123Z`. Any RFC 3339 text with
/// an offset is accepted on reading (a foreign writer's); a malformed one is an error, never
/// a panic and never a silently wrong order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(jiff::Timestamp);

impl Timestamp {
    /// 1970-01-01T00:00:00Z.
    pub const EPOCH: Timestamp = Timestamp(jiff::Timestamp::UNIX_EPOCH);

    /// Now, to the millisecond (what the notes keep).
    pub fn now() -> Self {
        let now = jiff::Timestamp::now();
        Timestamp(jiff::Timestamp::from_millisecond(now.as_millisecond()).unwrap_or(now))
    }

    /// Parse RFC 3339 (`Z` or a numeric offset).
    pub fn parse(s: &str) -> Result<Self> {
        s.parse()
    }

    /// Seconds since the Unix epoch.
    pub fn as_second(self) -> i64 {
        self.0.as_second()
    }

    /// Milliseconds since the Unix epoch.
    pub fn as_millisecond(self) -> i64 {
        self.0.as_millisecond()
    }

    /// Nanoseconds since the Unix epoch (orders exactly as the instants).
    pub fn as_nanosecond(self) -> i128 {
        self.0.as_nanosecond()
    }

    /// The UTC date of this instant: `2026-11-29`.
    pub fn utc_date(self) -> String {
        self.0.to_zoned(jiff::tz::TimeZone::UTC).date().to_string()
    }

    /// This instant less `seconds` (saturating at the earliest instant jiff knows).
    pub fn minus_seconds(self, seconds: i64) -> Self {
        Timestamp(
            self.0
                .checked_sub(jiff::SignedDuration::from_secs(seconds))
                .unwrap_or(jiff::Timestamp::MIN),
        )
    }

    /// This instant plus `ms` milliseconds (saturating at the latest instant jiff knows).
    pub fn add_millis(self, ms: i64) -> Self {
        Timestamp(
            self.0
                .checked_add(jiff::SignedDuration::from_millis(ms))
                .unwrap_or(jiff::Timestamp::MAX),
        )
    }
}

impl FromStr for Timestamp {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        s.parse::<jiff::Timestamp>().map(Timestamp).map_err(|e| {
            Error::corrupt(format!("{s:?} is not an RFC 3339 time: {e}")).with_source(e)
        })
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.strftime("%Y-%m-%dT%H:%M:%S%.3fZ"))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse()
            .map_err(|e: Error| serde::de::Error::custom(e.message))
    }
}

/// Parse an age like `30d`, `12h`, `90m`, `45s`, `2w` (jiff's friendly duration format,
/// days and weeks counted as 24 h and 7 × 24 h) into seconds.
pub fn parse_age(s: &str) -> Result<i64> {
    let bad = || {
        Error::usage(format!("{s:?} is not an age"))
            .with_hint("use a number and a unit: 45s, 90m, 12h, 30d, 2w")
    };
    let span: jiff::Span = s.trim().parse().map_err(|_| bad())?;
    let d = span
        .to_duration(jiff::SpanRelativeTo::days_are_24_hours())
        .map_err(|_| bad())?;
    if d.is_negative() {
        return Err(bad());
    }
    Ok(d.as_secs())
}

/// This machine's name (`localhost` when it cannot be read).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// A stable id of who writes: `$USER@hostname`.
pub fn writer_id() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("USERNAME"))
        .unwrap_or_else(|_| "unknown".into());
    let host = host_name();
    format!("{user}@{host}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_orders_as_instants() {
        let t = Timestamp::parse("2000-02-29T00:00:00.000Z").unwrap();
        assert_eq!(t.to_string(), "2000-02-29T00:00:00.000Z");
        assert_eq!(t.as_second(), 951_782_400);
        // The same instant with an offset; ordering is by instant, not by text.
        let offset = Timestamp::parse("2000-02-29T01:00:00+01:00").unwrap();
        assert_eq!(offset, t);
        let later_text_smaller = Timestamp::parse("2000-02-29T00:30:00+01:00").unwrap();
        assert!(later_text_smaller < t);
        let now = Timestamp::now();
        assert_eq!(Timestamp::parse(&now.to_string()).unwrap(), now);
    }

    #[test]
    fn malformed_times_are_errors() {
        for bad in [
            "garbage",
            "",
            "2026-12-01T10:00:00é1:00",
            "2026-13-01T10:00:00Z",
            "2026-12-01T10:00:00",
            "2026-12-01",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad:?}");
        }
        let json: std::result::Result<Timestamp, _> = serde_json::from_str("\"1é\"");
        assert!(json.is_err());
    }

    #[test]
    fn ages() {
        assert_eq!(parse_age("30d").unwrap(), 30 * 86_400);
        assert_eq!(parse_age("2w").unwrap(), 14 * 86_400);
        assert_eq!(parse_age("90m").unwrap(), 5400);
        assert_eq!(parse_age("45s").unwrap(), 45);
        assert!(parse_age("5").is_err());
        assert!(parse_age("5y").is_err());
        assert!(parse_age("-3d").is_err());
    }
}
