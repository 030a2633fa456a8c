//! RFC 3339 times in UTC with milliseconds (SPEC §1), without a calendar crate.
//!
//! Times are held as milliseconds since the Unix epoch (`i64`); the typed API
//! hands them out as a [`Timestamp`].

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// Days since 1970-01-01 to a civil date (proleptic Gregorian).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn format(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        let (h, mi, s, milli) = (
            rem / 3_600_000,
            rem / 60_000 % 60,
            rem / 1000 % 60,
            rem % 1000,
        );
        return format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z");
    }
    // Every post renders several times; this avoids the formatting machinery.
    let mut out = [0u8; 24];
    let mut put = |at: usize, value: i64, width: usize| {
        let mut v = value;
        for i in (0..width).rev() {
            out[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, y, 4);
    put(5, i64::from(mo), 2);
    put(8, i64::from(d), 2);
    put(11, rem / 3_600_000, 2);
    put(14, rem / 60_000 % 60, 2);
    put(17, rem / 1000 % 60, 2);
    put(20, rem % 1000, 3);
    for (at, sep) in [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (23, b'Z'),
    ] {
        out[at] = sep;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses an RFC 3339 time (`Z` or a numeric offset, optional fraction) to
/// milliseconds since the epoch. Fractions beyond milliseconds are truncated.
pub fn parse(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || !text.is_ascii() {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = &text[range];
        if part.bytes().all(|c| c.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    if b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)? as u32, num(8..10)? as u32);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 3 {
                millis = millis * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..3 {
            millis *= 10;
        }
    }
    let offset_min = match &text[i..] {
        "Z" | "z" => 0,
        rest if rest.len() == 6
            && (rest.starts_with('+') || rest.starts_with('-'))
            && &rest[3..4] == ":" =>
        {
            let oh = num(i + 1..i + 3)?;
            let om = num(i + 4..i + 6)?;
            if oh > 23 || om > 59 {
                return None;
            }
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (oh * 60 + om)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset_min * 60;
    Some(secs * 1000 + millis)
}

/// A moment, to the millisecond, as the protocol's times are (SPEC §1).
///
/// It shows (`Display`, and serde) as the RFC 3339 text every transport writes,
/// in UTC with milliseconds (`2026-11-30T12:00:00.123Z`), and reads any RFC 3339
/// time (`FromStr`, and serde), an offset or a fraction of any length included:
/// a fraction beyond milliseconds is truncated. It orders by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    /// The moment `ms` milliseconds after the Unix epoch (before it if negative).
    pub const fn from_millis(ms: i64) -> Timestamp {
        Timestamp(ms)
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_millis(self) -> i64 {
        self.0
    }
}

/// Text that is no RFC 3339 time (SPEC §1), or names no day of the calendar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an RFC 3339 time (like 2026-11-30T12:00:00.000Z)")]
pub struct InvalidTime;

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format(self.0))
    }
}

impl std::str::FromStr for Timestamp {
    type Err = InvalidTime;

    fn from_str(text: &str) -> Result<Timestamp, InvalidTime> {
        parse(text).map(Timestamp).ok_or(InvalidTime)
    }
}

/// Compares with text as shown: a time equals the text `Display` writes for it,
/// and no other spelling of the same moment.
impl PartialEq<str> for Timestamp {
    fn eq(&self, text: &str) -> bool {
        format(self.0) == text
    }
}

impl PartialEq<&str> for Timestamp {
    fn eq(&self, text: &&str) -> bool {
        format(self.0) == *text
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format(self.0))
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        d.deserialize_str(TimeVisitor)
    }
}

struct TimeVisitor;

impl Visitor<'_> for TimeVisitor {
    type Value = Timestamp;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an RFC 3339 time (like 2026-11-30T12:00:00.000Z)")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Timestamp, E> {
        text.parse()
            .map_err(|_| E::invalid_value(de::Unexpected::Str(text), &self))
    }
}

/// The system clock, in milliseconds since the epoch.
pub(crate) fn system_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for ms in [0, 1_796_040_000_123, 951_782_400_000, -86_400_000] {
            assert_eq!(parse(&format(ms)), Some(ms));
        }
        assert_eq!(format(1_796_040_000_123), "2026-11-30T12:00:00.123Z");
    }

    #[test]
    fn offsets_and_fractions() {
        assert_eq!(
            parse("2026-11-30T13:00:00+01:00"),
            parse("2026-11-30T12:00:00Z")
        );
        assert_eq!(parse("2026-11-30T12:00:00.5Z"), Some(1_796_040_000_500));
        assert_eq!(
            parse("2026-11-30T12:00:00.123456Z"),
            Some(1_796_040_000_123)
        );
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "2026-11-30",
            "2026-02-30T00:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T12:00:00",
            "2026-11-30T12:00:00.Z",
            "２０２６-11-30T12:00:00Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn timestamps_show_the_wire_form_and_read_any_rfc_3339() {
        let t = Timestamp::from_millis(1_796_040_000_120);
        assert_eq!(t.to_string(), "2026-11-30T12:00:00.120Z");
        assert!(t == "2026-11-30T12:00:00.120Z" && t != "2026-11-30T12:00:00.12Z");
        assert_eq!("2026-11-30T13:00:00.12+01:00".parse(), Ok(t));
        assert_eq!(t.as_millis(), 1_796_040_000_120);
        assert!(Timestamp::from_millis(-1) < Timestamp::from_millis(0));
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, r#""2026-11-30T12:00:00.120Z""#);
        assert_eq!(serde_json::from_str::<Timestamp>(&json).unwrap(), t);
    }

    #[test]
    fn timestamps_refuse_what_is_not_rfc_3339() {
        for bad in ["2026-11-30", "2026-02-30T00:00:00Z", "1796040000120", ""] {
            assert_eq!(bad.parse::<Timestamp>(), Err(InvalidTime), "{bad}");
            let json = serde_json::to_string(bad).unwrap();
            let err = serde_json::from_str::<Timestamp>(&json).unwrap_err();
            assert!(err.to_string().contains("an RFC 3339 time"), "{bad}: {err}");
        }
        let number = serde_json::from_str::<Timestamp>("1796040000120").unwrap_err();
        assert!(number.to_string().contains("an RFC 3339 time"), "{number}");
        assert!(InvalidTime.to_string().contains("RFC 3339"));
    }
}
