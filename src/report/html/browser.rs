//! The report in a real browser: headless Chromium opens the full fixture
//! page from disk, with a test-only script put around it that records any
//! error event, `console.error` and every resource the page asked for, and
//! measures each chart as laid out; `--dump-dom` hands that back. Chromium's
//! own console log (stderr) must hold no console line either. Without
//! Chromium (`KDELTA_CHROMIUM`, else `chromium` or `chromium-browser` on
//! the PATH) the test says SKIPPED and passes; `.ci/run` installs it.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KDELTA_CHROMIUM") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs before the page: catch errors and console errors from the start.
const HEAD_PROBE: &str = "<script>window.__kdErr=[];window.addEventListener('error',function(e){__kdErr.push('error: '+(e.message||(e.target&&e.target.outerHTML)||e.type))},true);\
(function(){var o=console.error;console.error=function(){__kdErr.push('console.error: '+Array.prototype.join.call(arguments,' '));o.apply(console,arguments)}})();</script>";

/// Runs after the page: what was laid out, what went wrong, what was fetched.
const TAIL_PROBE: &str = "<script>function __kdCheck(){var c=[].map.call(document.querySelectorAll('svg.chart'),function(s){var r=s.getBoundingClientRect();var b=s.getBBox();\
return {kind:s.getAttribute('data-kind'),w:r.width,h:r.height,bw:b.width,bh:b.height,drawn:s.querySelectorAll('rect.bar,polyline.series,circle.speedup').length}});\
var f=[].map.call(document.querySelectorAll('svg.flame'),function(s){var r=s.getBoundingClientRect();return {w:r.width,h:r.height,frames:s.querySelectorAll('.fg-frames > g').length}});\
var p=document.getElementById('kd-check')||document.body.appendChild(document.createElement('pre'));p.id='kd-check';\
p.textContent='KD'+'CHECK'+JSON.stringify({charts:c,flames:f,errors:__kdErr,resources:performance.getEntriesByType('resource').map(function(e){return e.name})})+'KD'+'END'}\
__kdCheck();window.addEventListener('load',function(){setTimeout(__kdCheck,0)});</script>";

/// Chromium's `--dump-dom` of `page` and its stderr; killed (its whole
/// process group) after 120 s.
fn run_chromium(bin: &Path, page: &Path, profile: &Path) -> (String, String) {
    use std::os::unix::process::CommandExt;
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args([
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            "--window-size=1200,900",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start chromium");
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let to = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let te = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let t = Instant::now();
    loop {
        if child.try_wait().expect("wait for chromium").is_some() {
            break;
        }
        if t.elapsed() > Duration::from_secs(120) {
            let _ = Command::new("kill").arg("-KILL").arg(format!("-{}", child.id())).status();
            let _ = child.wait();
            panic!("chromium did not finish in 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (to.join().unwrap(), te.join().unwrap())
}

/// [`chromium`], or `None` after saying the test is skipped.
fn chromium_or_skipped() -> Option<PathBuf> {
    let found = chromium();
    if found.is_none() {
        println!(
            "SKIPPED: chromium not found (install Debian's chromium package, as .ci/run does, or set KDELTA_CHROMIUM)"
        );
    }
    found
}

/// `html` opened in headless Chromium with the probes: what was laid out
/// (`charts`, `flames`), after asserting that there was no console message,
/// no error and nothing fetched.
fn probe_in_chromium(bin: &Path, html: &str) -> serde_json::Value {
    let probed = html.replacen("<head>", &format!("<head>{HEAD_PROBE}"), 1).replacen(
        "</body>",
        &format!("{TAIL_PROBE}</body>"),
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, probed).unwrap();
    let profile = dir.path().join("profile");
    let (dom, stderr) = run_chromium(bin, &page, &profile);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let json = dom
        .split("KDCHECK")
        .nth(1)
        .and_then(|s| s.split("KDEND").next())
        .unwrap_or_else(|| panic!("no probe output; stderr:\n{stderr}"));
    let json = json.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    let v: serde_json::Value = serde_json::from_str(&json).expect("probe JSON");
    assert_eq!(v["errors"].as_array().unwrap().len(), 0, "errors: {}", v["errors"]);
    assert_eq!(v["resources"].as_array().unwrap().len(), 0, "the page fetched: {}", v["resources"]);
    v
}

#[test]
fn report_renders_in_headless_chromium_without_errors() {
    let Some(bin) = chromium_or_skipped() else { return };
    let html = super::tests::full_page();
    let want = html.matches("<svg ").count();
    assert!(want >= 6, "the fixture page has every kind of chart");
    let v = probe_in_chromium(&bin, &html);
    let charts = v["charts"].as_array().unwrap();
    assert_eq!(charts.len(), want, "every chart is in the laid-out page");
    for c in charts {
        let f = |k: &str| c[k].as_f64().unwrap_or(0.0);
        assert!(f("w") > 300.0 && f("h") > 100.0, "chart laid out too small: {c}");
        assert!(f("bw") > 300.0 && f("bh") > 100.0, "chart drew too little: {c}");
        assert!(f("drawn") >= 1.0, "chart without data marks: {c}");
    }
}

#[test]
fn flame_graphs_render_in_headless_chromium_without_script_or_errors() {
    let Some(bin) = chromium_or_skipped() else { return };
    let html = super::tests::profiled_page();
    assert!(!html.contains("<script"), "the page has no script");
    let v = probe_in_chromium(&bin, &html);
    let flames = v["flames"].as_array().unwrap();
    // Two configurations: a graph each and the differential one.
    assert_eq!(flames.len(), 3, "{flames:?}");
    for f in flames {
        let g = |k: &str| f[k].as_f64().unwrap_or(0.0);
        assert!(g("w") > 300.0 && g("h") > 50.0, "flame graph laid out too small: {f}");
        assert!(g("frames") >= 4.0, "flame graph without frames: {f}");
    }
}
