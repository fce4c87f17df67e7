//! The value parsers' bounds and the parser's refusals.

use super::parse::*;
use super::*;
use crate::error::BadInput;
use crate::harness::plan;
use std::time::Duration;

#[test]
fn ranges_take_their_bounds_as_documented() {
    assert_eq!(threshold("0").unwrap(), 0.0);
    assert_eq!(threshold("999.5").unwrap(), 999.5);
    for bad in ["1000", "-1", "NaN", "inf"] {
        let e = threshold(bad).unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some(), "{bad}: {e}");
    }
    // Not a number at all: clap's own words, not ours.
    assert!(threshold("abc").unwrap_err().downcast_ref::<BadInput>().is_none());
    assert_eq!(ci_target("100").unwrap(), 100.0);
    assert!(ci_target("0").is_err());
    assert_eq!(sample_time("100us").unwrap(), Duration::from_micros(100));
    assert_eq!(sample_time("60s").unwrap(), Duration::from_secs(60));
    assert_eq!(sample_time("50us").unwrap_err().0, "--sample-time 50us is out of range: allowed 100us .. 60s");
    assert_eq!(warmup("0s").unwrap(), Warmup::Time(Duration::ZERO));
    assert_eq!(warmup("3").unwrap(), Warmup::Runs(3));
    assert!(warmup("10001").unwrap_err().0.contains("0 .. 10000 runs"));
    assert!(warmup("99999999999999999999999").is_err());
    assert_eq!(timeout("1ms").unwrap(), Duration::from_millis(1));
    assert_eq!(timeout("0.5ms").unwrap_err().0, "--timeout 0.5ms is out of range: allowed 1ms and above");
    assert_eq!(runs("auto").unwrap(), plan::Runs::Auto);
    assert_eq!(runs("10000").unwrap(), plan::Runs::Fixed(10000));
    assert!(runs("0").is_err() && runs("10001").is_err());
}

#[test]
fn serve_limits_are_above_zero() {
    assert_eq!(serve_limit("1").unwrap(), 1);
    assert_eq!(serve_limit("0").unwrap_err().to_string(), SERVE_ZERO);
    assert_eq!(idle_timeout("0s").unwrap_err().0, SERVE_ZERO);
    assert_eq!(write_timeout("2s").unwrap(), Duration::from_secs(2));
}

#[test]
fn a_setting_is_split_at_its_first_equals_sign() {
    let s = param("bw.mem.*:size=1M,2M").unwrap();
    assert_eq!((s.name.as_str(), s.value.as_str()), ("bw.mem.*:size", "1M,2M"));
    assert_eq!(param("env=A=1").unwrap().value, "A=1");
    for bad in ["size", "=1", "size="] {
        assert!(param(bad).unwrap_err().0.starts_with("malformed --param"), "{bad}");
    }
}

#[test]
fn meta_is_checked_pair_by_pair_then_as_a_whole() {
    let cli = Cli::try_parse_from(["kdelta", "run", "lat", "--meta", "commit=abc", "--meta", "b=x=y"]).unwrap();
    let Command::Run(a) = cli.command else { panic!("not run") };
    let m = run_meta(&a.meta).unwrap();
    assert_eq!((m.get("commit"), m.get("b")), (Some("abc"), Some("x=y")));
    let twice = [("k".to_string(), "1".to_string()), ("k".to_string(), "2".to_string())];
    assert!(run_meta(&twice).unwrap_err().0.contains("given twice"));
    for bad in ["com/mit=x", "=x", "commit"] {
        let e = Cli::try_parse_from(["kdelta", "run", "lat", "--meta", bad]).unwrap_err();
        let why = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<BadInput>()).expect("ours");
        assert!(why.0.starts_with("--meta"), "{bad}: {why}");
    }
    let cli = Cli::try_parse_from(["kdelta", "runs", "--meta", "commit", "--meta", "b=x"]).unwrap();
    let Command::Runs(crate::cli::RunsArgs { select, .. }) = cli.command else { panic!("not runs") };
    assert_eq!(select.meta.len(), 2);
    assert_eq!(select.meta[0].value, None);
}

#[test]
fn history_values_are_checked() {
    assert_eq!(since("2024-05-01").unwrap(), "2024-05-01T00:00:00Z");
    assert_eq!(since("2024-05-01T10:20:30Z").unwrap(), "2024-05-01T10:20:30Z");
    for bad in ["yesterday", "2024-13-01", "2024-05-01T25:00:00Z", ""] {
        assert!(since(bad).unwrap_err().0.starts_with("--since"), "{bad}");
    }
    assert_eq!(alpha("0.01").unwrap(), 0.01);
    for bad in ["0", "1", "-0.1", "NaN"] {
        assert!(alpha(bad).unwrap_err().downcast_ref::<BadInput>().is_some(), "{bad}");
    }
    assert_eq!(min_segment("1").unwrap(), 1);
    assert!(min_segment("0").is_err() && min_segment("1001").is_err());
    assert_eq!(permutations("100000").unwrap(), 100_000);
    assert!(permutations("0").is_err());
}

/// The derive and the parsers agree: every default goes through its parser.
#[test]
fn the_command_line_is_well_formed() {
    <Cli as clap::CommandFactory>::command().debug_assert();
    let cli = Cli::try_parse_from(["kdelta", "run", "lat"]).unwrap();
    let Command::Run(a) = cli.command else { panic!("not run") };
    assert_eq!((a.sample_time, a.warmup, a.timeout), (Duration::from_millis(10), None, None));
    assert_eq!((a.threshold, a.ci_target, a.runs), (1.0, 1.0, None));
}

#[test]
fn each_style_says_what_colours_and_whether_the_bar_shows() {
    let got = |s: &str| {
        let s = style(s).unwrap();
        (s.color(), s.progress())
    };
    assert_eq!(got("auto"), (None, true));
    assert_eq!(got("full"), (Some(true), true));
    assert_eq!(got("basic"), (Some(false), true));
    assert_eq!(got("nocolor"), (Some(false), true));
    assert_eq!(got("color"), (Some(true), false));
    assert_eq!(got("none"), (Some(false), false));
    assert!(style("Full").unwrap_err().downcast_ref::<BadInput>().is_some());
    assert_eq!(Style::parse("auto").unwrap(), Style::Auto);
}
