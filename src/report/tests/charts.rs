//! What the SVG charts say, and the number formatting they share.

use super::*;

#[test]
fn svg_chart_of_speedups_names_every_benchmark_and_configuration() {
    let svg = rendered(&Chart, &[comparison()]);
    assert!(svg.starts_with("<svg width=\"900\" height=\"252\" "), "{}", &svg[..80]);
    assert!(svg.ends_with("</svg>\n"));
    let texts = svg_texts(&svg);
    assert_eq!(texts[0], "speedup against up (above 1 = better)");
    assert!(texts.contains(&"speedup"), "the axis is named");
    // One label per row, from the bottom up; the failed row keeps its label.
    let labels: Vec<&str> = texts.iter().copied().filter(|t| t.starts_with("lat.") || t.starts_with("bw.")).collect();
    assert_eq!(
        labels,
        [
            "lat.syscall",
            "lat.pipe",
            "lat.ctx procs=2 size=16",
            "lat.proc.exec",
            "bw.mem.rd size=64m",
            "bw.mem.wr size=64m"
        ]
    );
    // The legend names the configuration compared; the reference is in the caption.
    assert_eq!(texts.last(), Some(&"noht"));
    assert!(!texts.contains(&"up"));
}

#[test]
fn svg_chart_of_a_sweep_draws_one_line_per_configuration() {
    let svg = rendered(&Chart, &[sweep()]);
    assert!(svg.starts_with("<svg width=\"900\" height=\"380\" "), "{}", &svg[..80]);
    assert!(svg.ends_with("</svg>\n"));
    let texts = svg_texts(&svg);
    assert_eq!(texts[..3], ["lat.ctx", "us (lower is better)", "size"], "title and axes");
    assert_eq!(texts[texts.len() - 2..], ["up", "noht"], "the legend");
    assert!(!texts.iter().any(|t| t.starts_with("speedup")), "no bar panel: every result is part of the sweep");
    // Two lines of three points, each point with its min and max whiskers.
    assert_eq!(svg.matches("<circle ").count(), 12);
    assert_eq!(svg.matches("stroke-width=\"2\" points=").count(), 4, "two lines and their two legend marks");
}

#[test]
fn numbers() {
    assert_eq!(fmt_num(164071.2), "164,071");
    assert_eq!(fmt_num(3051.28), "3051");
    assert_eq!(fmt_num(190.75), "190.8");
    assert_eq!(fmt_num(11.16), "11.16");
    assert_eq!(fmt_num(1.1), "1.100");
    assert_eq!(fmt_num(0.042134), "0.04213");
    assert_eq!(fmt_num(f64::NAN), "-");
    assert_eq!(fmt_pct(-1.3333), "-1.3%");
    assert_eq!(fmt_pct(250.0), "+250%");
}
