//! The shift time zone of `TIMESTAMP_LTZ` windows: Flink's `TimeWindowUtil`
//! (`toUtcTimestampMills`, `toEpochMillsForTimer`, `isWindowFired`).
//!
//! Windows of a `TIMESTAMP_LTZ` time attribute are computed on local wall-clock time read as
//! UTC ("local millis"): `local = epoch + offset(epoch)`. A window ending at local `end`
//! fires when the watermark (epoch millis) reaches `timer_time(end - 1)`:
//!
//! - UTC (and TIMESTAMP time attributes): `end - 1`.
//! - A zone without daylight saving (a fixed offset, or an IANA zone whose current rules
//!   have no DST, e.g. `Asia/Shanghai`): the instant of local `end - 1` (Java's
//!   `LocalDateTime.atZone(zone).toInstant()`).
//! - A zone with daylight saving (`TimeZone.useDaylightTime()`), as Flink computes it:
//!   `t1` = the instant of local `end - 1`, `t2` = the instant of local `end - 1 + 1 h`;
//!   `t1 == t2` (local time inside the spring-forward gap) → `t1 - t1 % 1 h` (the first
//!   instant after the gap); `t2 - t1 > 1 h` (local time inside the fall-back fold) →
//!   `t1 + 1 h` (so both occurrences of the repeated hour are collected first); else `t1`.
//!
//! Java's `atZone` resolves a local time in a gap by moving it later by the gap's length
//! and one in a fold to the earlier offset: both are `local - offset_before_transition`.
//!
//! "Uses daylight saving" is decided on the zone's rules for 2026 (its offsets on 15 January
//! and 15 July differ), where Java asks whether the zone's current rules have DST.

use std::fmt;

use jiff::tz::{AmbiguousOffset, TimeZone};

use crate::error::{Error, Result};

const MILLIS_PER_HOUR: i64 = 3_600_000;

/// The time zone windows of a `TIMESTAMP_LTZ` time attribute are shifted to
/// (`table.local-time-zone`).
#[derive(Clone)]
pub struct ShiftZone {
    id: String,
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    Utc,
    Fixed(i64),
    Rules { tz: TimeZone, daylight: bool },
}

impl fmt::Debug for ShiftZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ShiftZone").field(&self.id).finish()
    }
}

impl PartialEq for ShiftZone {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl ShiftZone {
    /// UTC: no shift (every TIMESTAMP time attribute).
    pub fn utc() -> Self {
        Self {
            id: "UTC".to_owned(),
            repr: Repr::Utc,
        }
    }

    /// A zone by its Java `ZoneId` text: `UTC`, `Z`, a fixed offset (`+05:30`, `-08:00`,
    /// `GMT+8`, `UTC+05:30`), or an IANA name (`Asia/Shanghai`, `America/Los_Angeles`;
    /// rules from the tz database bundled with `jiff`).
    ///
    /// # Errors
    /// [`Error::InvalidSpec`] for an unknown zone.
    pub fn parse(id: &str) -> Result<Self> {
        let trimmed = id.trim();
        if trimmed == "UTC" || trimmed == "Z" {
            return Ok(Self::utc());
        }
        let offset_text = ["UTC", "GMT", "UT"]
            .iter()
            .find_map(|p| trimmed.strip_prefix(p))
            .filter(|rest| rest.starts_with(['+', '-']))
            .or_else(|| Some(trimmed).filter(|t| t.starts_with(['+', '-'])));
        if let Some(text) = offset_text {
            let millis = parse_offset(text)
                .ok_or_else(|| Error::spec(format!("time zone offset {id:?}")))?;
            return Ok(Self {
                id: trimmed.to_owned(),
                repr: Repr::Fixed(millis),
            });
        }
        let tz =
            TimeZone::get(trimmed).map_err(|e| Error::spec(format!("time zone {id:?}: {e}")))?;
        let probe = |ms: i64| offset_at(&tz, ms);
        // 2026-01-15T00:00Z and 2026-07-15T00:00Z.
        let daylight = probe(1_768_435_200_000) != probe(1_784_073_600_000);
        Ok(Self {
            id: trimmed.to_owned(),
            repr: Repr::Rules { tz, daylight },
        })
    }

    /// The zone id as given.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether this zone shifts nothing (Flink's `UTC_ZONE_ID` check).
    pub fn is_utc(&self) -> bool {
        matches!(self.repr, Repr::Utc)
    }

    /// `toUtcTimestampMills`: the local date-time of instant `epoch`, read as UTC.
    pub fn to_local(&self, epoch: i64) -> i64 {
        if epoch == i64::MAX {
            return epoch;
        }
        match &self.repr {
            Repr::Utc => epoch,
            Repr::Fixed(o) => epoch.saturating_add(*o),
            Repr::Rules { tz, .. } => epoch.saturating_add(offset_at(tz, epoch)),
        }
    }

    /// `toEpochMillsForTimer`: the watermark at which local time `local` counts as passed.
    pub fn timer_time(&self, local: i64) -> i64 {
        if local == i64::MAX {
            return local;
        }
        match &self.repr {
            Repr::Utc => local,
            Repr::Fixed(o) => local.saturating_sub(*o),
            Repr::Rules { tz, daylight } => {
                let t1 = instant_of(tz, local);
                if !daylight {
                    return t1;
                }
                let t2 = instant_of(tz, local.saturating_add(MILLIS_PER_HOUR));
                if t1 == t2 {
                    t1 - t1 % MILLIS_PER_HOUR
                } else if t2 - t1 > MILLIS_PER_HOUR {
                    t1.saturating_add(MILLIS_PER_HOUR)
                } else {
                    t1
                }
            }
        }
    }

    /// `isWindowFired`: whether the window ending at local `end` has fired at `watermark`.
    pub fn is_fired(&self, end: i64, watermark: i64) -> bool {
        end != i64::MAX && watermark >= self.timer_time(end.saturating_sub(1))
    }
}

fn parse_offset(text: &str) -> Option<i64> {
    let (sign, rest) = match text.as_bytes().first()? {
        b'+' => (1, text.get(1..)?),
        b'-' => (-1, text.get(1..)?),
        _ => return None,
    };
    let parts: Vec<&str> = rest.split(':').collect();
    let num = |s: &str| -> Option<i64> {
        (!s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (h, m, s) = match parts.as_slice() {
        [h] if h.len() == 4 => (num(h.get(..2)?)?, num(h.get(2..)?)?, 0),
        [h] => (num(h)?, 0, 0),
        [h, m] => (num(h)?, num(m)?, 0),
        [h, m, s] => (num(h)?, num(m)?, num(s)?),
        _ => return None,
    };
    if h > 18 || m > 59 || s > 59 {
        return None;
    }
    Some(sign * ((h * 60 + m) * 60 + s) * 1000)
}

/// Clamps `ms` into the range `jiff` timestamps cover.
fn timestamp(ms: i64) -> jiff::Timestamp {
    let lo = jiff::Timestamp::MIN.as_millisecond();
    let hi = jiff::Timestamp::MAX.as_millisecond();
    jiff::Timestamp::from_millisecond(ms.clamp(lo, hi)).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// The zone's offset at instant `epoch`, in millis.
fn offset_at(tz: &TimeZone, epoch: i64) -> i64 {
    i64::from(tz.to_offset(timestamp(epoch)).seconds()) * 1000
}

/// Java's `LocalDateTime.atZone(zone).toInstant()` for local millis `local`.
fn instant_of(tz: &TimeZone, local: i64) -> i64 {
    let dt = jiff::tz::Offset::UTC.to_datetime(timestamp(local));
    let offset = match tz.to_ambiguous_timestamp(dt).offset() {
        AmbiguousOffset::Unambiguous { offset } => offset,
        AmbiguousOffset::Gap { before, .. } | AmbiguousOffset::Fold { before, .. } => before,
    };
    local.saturating_sub(i64::from(offset.seconds()) * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = MILLIS_PER_HOUR;

    #[test]
    fn shanghai_is_a_fixed_eight_hours() {
        let z = ShiftZone::parse("Asia/Shanghai").unwrap();
        // Flink's TimeWindowUtilTest: local 1970-01-01T00:00:01 -> -28799000.
        assert_eq!(z.timer_time(1000), -28_799_000);
        assert_eq!(z.timer_time(8 * H - 1), -1);
        assert_eq!(z.to_local(0), 8 * H);
        assert!(!matches!(z.repr, Repr::Rules { daylight: true, .. }));
    }

    #[test]
    fn fixed_offsets_parse() {
        assert_eq!(
            ShiftZone::parse("+05:30").unwrap().to_local(0),
            5 * H + 30 * 60_000
        );
        assert_eq!(ShiftZone::parse("GMT-08:00").unwrap().to_local(0), -8 * H);
        assert_eq!(ShiftZone::parse("UTC+8").unwrap().to_local(0), 8 * H);
        assert!(ShiftZone::parse("UTC").unwrap().is_utc());
        assert!(ShiftZone::parse("Mars/Olympus").is_err());
        assert!(ShiftZone::parse("+25:00").is_err());
    }

    #[test]
    fn los_angeles_transitions_as_flink() {
        let z = ShiftZone::parse("America/Los_Angeles").unwrap();
        // Flink's comments in toEpochMillsForTimer (2021-03-14 and 2021-11-07).
        let local = |ms: i64| ms; // local millis are given directly
        // 2021-03-14 02:00 local lies in the gap: timer at 03:00 PDT = 1615716000000.
        let l_0200 = 1_615_687_200_000; // 2021-03-14T02:00 read as UTC
        assert_eq!(z.timer_time(local(l_0200)), 1_615_716_000_000);
        assert_eq!(
            z.timer_time(l_0200 + 59 * 60_000 + 59_000),
            1_615_716_000_000
        );
        // 2021-11-07 01:00 local is repeated: timer at the second 01:00 = 1636275600000.
        let l_0100 = 1_636_246_800_000; // 2021-11-07T01:00 read as UTC
        assert_eq!(z.timer_time(l_0100), 1_636_275_600_000);
        // 2021-11-07 00:00 local: plain.
        assert_eq!(z.timer_time(l_0100 - H), 1_636_268_400_000);
        // 2021-11-07 02:00 local: plain (PST).
        assert_eq!(z.timer_time(l_0100 + H), 1_636_279_200_000);
    }
}
