//! Every renderer on every fixture, through the same helper as the snapshots.

use super::*;
use crate::report::{renderer, Format};
use clap::ValueEnum;

/// Every fixture report: one run of two configurations (in full, verbose
/// and short), one of a single configuration, a sweep, and two runs compared.
fn fixtures() -> Vec<(&'static str, Report)> {
    let mut verbose = comparison();
    verbose.verbose = true;
    vec![
        ("comparison", comparison()),
        ("verbose comparison", verbose),
        ("single configuration", single_config()),
        ("sweep", sweep()),
        ("short run", short_run()),
        ("two runs", Report::for_two_runs((run_record(), results()), patched_run(), &opt())),
    ]
}

#[test]
fn every_renderer_draws_every_fixture_the_same_way_twice() {
    for (fixture, rep) in fixtures() {
        for (name, r) in renderers() {
            let reports = std::slice::from_ref(&rep);
            if name == "SVG chart" && fixture == "single configuration" {
                let e = r.render(reports).expect_err("a single configuration without a sweep has no chart");
                assert!(e.is::<NothingToChart>(), "{e:#}");
                continue;
            }
            let out = rendered(r.as_ref(), reports);
            assert!(out.ends_with('\n'), "{name} of {fixture} ends its last line");
            assert_eq!(out, rendered(r.as_ref(), reports), "{name} of {fixture} is deterministic");
        }
    }
}

#[test]
fn the_format_choice_picks_the_renderer_of_that_format() {
    let reports = [comparison()];
    for f in Format::value_variants() {
        let named = match f {
            Format::Text => rendered(&Text { color: false }, &reports),
            Format::Markdown => rendered(&Markdown, &reports),
            Format::Csv => rendered(&Csv, &reports),
            Format::Json => rendered(&Json, &reports),
            Format::Asciidoc => rendered(&Asciidoc, &reports),
            Format::Orgmode => rendered(&Orgmode, &reports),
        };
        assert_eq!(rendered(renderer(*f, false).as_ref(), &reports), named, "{f:?}");
    }
    assert_eq!(rendered(renderer(Format::Text, true).as_ref(), &reports), rendered(&Text { color: true }, &reports));
}

#[test]
fn formats_of_one_report_refuse_none_or_several() {
    let two = [comparison(), single_config()];
    for (name, r) in renderers().into_iter().filter(|(n, _)| *n != "HTML") {
        for reports in [&two[..], &[]] {
            let e = r.render(reports).expect_err(name);
            assert!(e.to_string().contains("format draws one report"), "{name}: {e}");
        }
    }
}

#[test]
fn the_page_shows_runs_first_and_then_the_runs_compared() {
    let (a, b) = ((run_record(), results()), patched_run());
    let runs = [Report::for_run(a.0.clone(), a.1.clone(), &opt()), Report::for_run(b.0.clone(), b.1.clone(), &opt())];
    let two = Report::for_two_runs(a, b, &opt());
    let page = html::Page { title: "t".into(), extra: &[] };
    let in_order = rendered(&page, &[runs[0].clone(), runs[1].clone(), two.clone()]);
    assert_eq!(rendered(&page, &[two, runs[0].clone(), runs[1].clone()]), in_order);
    assert!(
        in_order.contains(": 2 run(s)") && in_order.contains("<h3>run 12 (baseline) against run 13 (patched)</h3>")
    );
}
