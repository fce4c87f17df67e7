//! CSV: with comparison tables, one line per row and column pair; otherwise one
//! line per result. Figures at full precision. `n` and the summary are of the
//! clean samples; `taken` counts every sample, `disturbed` the ones left out.
//! A net figure below resolution has no median, only its bound.

use super::model::Report;

fn q(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: Option<f64>) -> String {
    v.map(|x| format!("{x}")).unwrap_or_default()
}

pub fn render(rep: &Report) -> String {
    let mut out = String::new();
    if rep.tables.is_empty() {
        out.push_str(
            "run,benchmark,family,params,config,cpus,unit,better,status,reason,n,median,mean,min,max,stddev,cv,samples,taken,disturbed,noisy,below_resolution\n",
        );
        let run = rep.runs.first().map(|r| r.id).unwrap_or(0);
        for r in &rep.results {
            let s = r.summary.as_ref();
            let samples = r.samples.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(";");
            out.push_str(&format!(
                "{run},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                q(&r.benchmark),
                q(&r.family),
                q(&r.params.display()),
                q(&r.config),
                q(&r.cpus),
                q(&r.unit),
                r.better.as_str(),
                r.status.as_str(),
                q(r.reason.as_deref().unwrap_or("")),
                s.map(|s| s.n).unwrap_or(0),
                num(s.map(|s| s.median).filter(|_| r.below_resolution.is_none())),
                num(s.map(|s| s.mean)),
                num(s.map(|s| s.min)),
                num(s.map(|s| s.max)),
                num(s.map(|s| s.stddev)),
                num(s.map(|s| s.cv)),
                q(&samples),
                r.samples.len(),
                r.quality.as_ref().map(|q| q.disturbed).unwrap_or(0),
                r.is_noisy(),
                num(r.below_resolution)
            ));
        }
        return out;
    }
    out.push_str(
        "benchmark,params,unit,better,a,a_cpus,a_median,a_cv,b,b_cpus,b_median,b_cv,change_pct,p_welch,ci_low,ci_high,significant,\
         a_noisy,a_below_resolution,b_noisy,b_below_resolution,withheld,p_mann_whitney,rounds,rounds_held,p_rounds\n",
    );
    let median =
        |c: Option<&super::model::Cell>| num(c.filter(|c| c.below_resolution.is_none()).and_then(|c| c.median));
    for t in &rep.tables {
        let a = &t.columns[0];
        for r in &t.rows {
            for (i, b) in t.columns.iter().enumerate().skip(1) {
                let ca = r.cells[0].as_ref();
                let cb = r.cells[i].as_ref();
                let cmp = r.changes[i - 1].as_ref();
                out.push_str(&format!(
                    "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                    q(&r.benchmark),
                    q(&r.params.display()),
                    q(&r.unit),
                    r.better.as_str(),
                    q(&a.name),
                    q(&a.cpus),
                    median(ca),
                    num(ca.and_then(|c| c.cv)),
                    q(&b.name),
                    q(&b.cpus),
                    median(cb),
                    num(cb.and_then(|c| c.cv)),
                    num(cmp.map(|c| c.change_pct)),
                    num(cmp.and_then(|c| c.p_welch)),
                    num(cmp.and_then(|c| c.ci_low)),
                    num(cmp.and_then(|c| c.ci_high)),
                    cmp.map(|c| c.significant.to_string()).unwrap_or_default(),
                    ca.is_some_and(|c| c.noisy),
                    num(ca.and_then(|c| c.below_resolution)),
                    cb.is_some_and(|c| c.noisy),
                    num(cb.and_then(|c| c.below_resolution)),
                    cmp.and_then(|c| c.withheld).map(|w| w.describe()).unwrap_or(""),
                    num(cmp.and_then(|c| c.p_mann_whitney)),
                    cmp.and_then(|c| c.rounds.as_ref()).map(|r| r.rounds.to_string()).unwrap_or_default(),
                    cmp.and_then(|c| c.rounds.as_ref()).map(|r| r.held.to_string()).unwrap_or_default(),
                    num(cmp.and_then(|c| c.rounds.as_ref()).map(|r| r.p)),
                ));
            }
        }
        for g in &t.geomeans {
            for (i, b) in t.columns.iter().enumerate().skip(1) {
                out.push_str(&format!(
                    "{},,{},,{},{},{},,{},{},{},,{},,,,,,,,,,,,\n",
                    q(&format!("geomean {}", g.family)),
                    q(g.unit.as_deref().unwrap_or("")),
                    q(&a.name),
                    q(&a.cpus),
                    num(g.values[0]),
                    q(&b.name),
                    q(&b.cpus),
                    num(g.values[i]),
                    num(g.change_pct[i - 1])
                ));
            }
        }
    }
    out
}
