//! Wall-clock helpers without a date crate.

use web_time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch (0 if the clock is before it).
pub fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `YYYY-MM-DD` (UTC) of a Unix time, by the days-to-civil algorithm of H. Hinnant.
pub fn civil_date(unix_s: u64) -> String {
    let z = (unix_s / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DDTHH:MM:SSZ` (UTC) of a Unix time: the XML Schema dateTime the Open Badges data
/// model asks for (`validFrom`).
pub fn date_time(unix_s: u64) -> String {
    let s = unix_s % 86_400;
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        civil_date(unix_s),
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// The Unix time of a UTC date-time written exactly as [`date_time`] writes it.
pub fn parse_date_time(s: &str) -> Result<u64, String> {
    let b = s.as_bytes();
    let shape = b.len() == 20
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'Z'
        && [11, 12, 14, 15, 17, 18]
            .iter()
            .all(|&i| b[i].is_ascii_digit());
    let bad = || {
        format!(
            "'{}' is not a UTC date-time written YYYY-MM-DDTHH:MM:SSZ",
            s.escape_debug()
        )
    };
    if !shape || !s.is_ascii() {
        return Err(bad());
    }
    let day = parse_date(&s[..10])?;
    let num = |r: std::ops::Range<usize>| s[r].parse::<u64>().unwrap_or(99);
    let (h, m, sec) = (num(11..13), num(14..16), num(17..19));
    if h > 23 || m > 59 || sec > 59 || day < 0 {
        return Err(bad());
    }
    Ok(day as u64 * 86_400 + h * 3600 + m * 60 + sec)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days-from-civil).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// Checks that `s` is a real calendar date written `YYYY-MM-DD` (month 1–12, a day that month
/// has, 29 February only in leap years) and returns its day number since 1970-01-01.
pub fn parse_date(s: &str) -> Result<i64, String> {
    let b = s.as_bytes();
    let shape = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shape {
        return Err(format!("'{s}' is not a date written YYYY-MM-DD"));
    }
    let num = |r: std::ops::Range<usize>| s[r].parse::<u32>().unwrap_or(0);
    let (y, m, d) = (num(0..4), num(5..7), num(8..10));
    if !(1..=12).contains(&m) {
        return Err(format!("'{s}' has no month {m} (months are 01 to 12)"));
    }
    let days_in_month = match m {
        2 if is_leap(i64::from(y)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1..=days_in_month).contains(&d) {
        return Err(format!(
            "'{s}' has no day {d} (that month has {days_in_month} days)"
        ));
    }
    Ok(days_from_civil(i64::from(y), m, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(951_782_400), "2000-02-29");
        assert_eq!(civil_date(1_798_675_200), "2026-12-31");
    }

    #[test]
    fn dates_are_checked_against_the_calendar() {
        assert_eq!(parse_date("1970-01-01"), Ok(0));
        assert_eq!(parse_date("2000-02-29"), Ok(951_782_400 / 86_400));
        assert_eq!(parse_date("2026-12-31"), Ok(1_798_675_200 / 86_400));
        for bad in [
            "1999-99-99",
            "2026-02-29",
            "1900-02-29",
            "2026-04-31",
            "2026-00-10",
            "2026-1-1",
            "",
            "２０２６-01-01",
            "2026-01-01\n",
        ] {
            assert!(parse_date(bad).is_err(), "{bad:?}");
        }
        // Every day of four years round-trips through civil_date.
        for day in 20_000..21_461_i64 {
            let s = civil_date(day as u64 * 86_400);
            assert_eq!(parse_date(&s), Ok(day), "{s}");
        }
    }
}
