//! Segment names: `{base_filename}{stamp}_{id:05}`, the stamp being the
//! rotation period's UTC date (and hour).

use super::RotatePeriod;

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian (Howard
/// Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + (m <= 2) as i64, m, d)
}

/// The segment-name stamp of `period` at `ms` (UTC).
pub(crate) fn stamp(period: RotatePeriod, ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    match period {
        RotatePeriod::Never => String::new(),
        RotatePeriod::Daily => format!("-{y:04}-{m:02}-{d:02}"),
        RotatePeriod::Hourly => {
            let h = secs.rem_euclid(86_400) / 3600;
            format!("-{y:04}-{m:02}-{d:02}-{h:02}")
        }
    }
}

/// `(id, stamp)` of a segment file name, `None` for anything else.
pub(super) fn parse_segment_name(base: &str, name: &str) -> Option<(u64, String)> {
    let rest = name.strip_prefix(base)?;
    let (stamp, id) = rest.rsplit_once('_')?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let stamp_ok = stamp.is_empty()
        || (stamp.starts_with('-') && stamp.bytes().all(|b| b == b'-' || b.is_ascii_digit()));
    stamp_ok.then(|| Some((id.parse().ok()?, stamp.to_owned())))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_utc_dates_and_hours() {
        // 2024-02-29T13:45:00Z
        let ms = 1_709_214_300_000;
        assert_eq!(stamp(RotatePeriod::Daily, ms), "-2024-02-29");
        assert_eq!(stamp(RotatePeriod::Hourly, ms), "-2024-02-29-13");
        assert_eq!(stamp(RotatePeriod::Never, ms), "");
        assert_eq!(stamp(RotatePeriod::Hourly, 0), "-1970-01-01-00");
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
    }

    #[test]
    fn segment_names_parse_and_others_are_ignored() {
        assert_eq!(
            parse_segment_name("log", "log-2024-02-29-13_00007"),
            Some((7, "-2024-02-29-13".into()))
        );
        assert_eq!(
            parse_segment_name("log", "log_123456"),
            Some((123456, "".into()))
        );
        assert_eq!(parse_segment_name("log", "log_current"), None);
        assert_eq!(parse_segment_name("log", "logx_00001"), None);
        assert_eq!(parse_segment_name("log", "other_00001"), None);
    }
}
